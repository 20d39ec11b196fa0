"""Chains in worker processes: one process per chain, at most ``workers`` at a time.

Processes start with the ``fork`` method where it exists (Linux; not macOS), unless JAX's
runtime has started in this process, whatever the kernel (its threads make the process
multi-threaded, and a forked child may deadlock; see :func:`start_method`): the program, kernel
and any closures they hold are inherited, nothing is pickled on the way in.  Otherwise ``spawn``
is used; the program and kernel are then pickled (a ``@th.model`` function defined at the top
level of a module pickles by reference to its module), and an unpicklable program raises a
clear error.  Spawned workers are started only when ``workers`` is given (see
:func:`unspawnable`); a spawned worker imports thrifty and the model's module afresh (about 2 s
of CPU), a forked one starts at once.

Workers ignore SIGINT and, at each tick (about ten times per second), send their new draws,
iteration and kernel statistics to the main process through a pipe of its own (see
:class:`_Channel`) and poll a shared stop flag (:class:`_StopFlag`); every
``checkpoint_every`` seconds they also send a snapshot.  When the flag is set (Ctrl-C in the
main process) they stop after their current step and send what is left.

Each worker limits the thread pools of the BLAS / OpenMP libraries it has loaded
(``threadpoolctl``) to its share of the CPUs, ``cpu_count // chains`` (at least 1; chains run in
the main process get the same limit, so the draws do not depend on ``workers``): otherwise
every chain starts one BLAS thread per core, and on a machine with as many workers as cores the
spinning threads make a NumPy-heavy step several times slower (``benchmarks/parallel_chains.py``:
9.2× the sequential step per exact MH step on a 10⁵-row logistic regression, d = 5, 2 workers on
2 cores; 1.18× with the limit).
"""

from __future__ import annotations

import importlib
import io
import math
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
import traceback
import types
import warnings
from multiprocessing import connection as mp_connection
from time import perf_counter

from thrifty.core.model import Model
from thrifty.runtime.chain import ChainRun

#: Limit each worker's BLAS threads to its share of the cores (off: benchmarks/parallel_chains.py
#: measures what the limit saves).
LIMIT_BLAS_THREADS = True
#: Seconds the workers get to stop after a stop request (Ctrl-C) before they are terminated (a
#: worker stuck inside a step never reaches its next report).
STOP_GRACE = 2.0
#: Start method override (tests); None = "fork" where available, else "spawn".
START_METHOD: str | None = None


def blas_threads(chains: int) -> int:
    """BLAS threads per chain: the cores shared among the chains, ``cpu_count // chains`` (at
    least 1) — a function of the number of chains, not of ``workers``, so that a chain's
    floating-point sums (and hence its draws) do not depend on how many run at once."""
    cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, min(chains, cpus)))


def start_method() -> str:
    """``fork`` where it exists (not on macOS, whose system libraries it breaks) unless this
    process has started JAX's runtime (``spawn`` then), whatever the kernel: JAX's threads make
    the process multi-threaded, and a child forked from it inherits the locks those threads
    held at the fork (in JAX, the allocator, any library) with no thread to release them — a
    child that takes one (the model calling jax.numpy, say) waits for ever."""
    if START_METHOD is not None:
        return START_METHOD
    if "fork" in mp.get_all_start_methods() and sys.platform != "darwin" and not _jax_started():
        return "fork"
    return "spawn"


def unspawnable(program, kernel, asked: bool = False) -> str | None:
    """Why the chains run in this process rather than in worker processes, or None.

    * Unless ``workers`` was ``asked`` for, the chains of a kernel that computes with JAX run
      here: they share one compilation of its density, which each worker process would
      repeat.
    * Once JAX's runtime has started here, workers would be spawned (see
      :func:`start_method`), which re-imports the main module: a script without an ``if
      __name__ == "__main__":`` guard would run again in every worker.  So workers are spawned
      only when ``asked`` for, and then only for a program a spawned process can import (not
      one defined in a notebook, in ``python -`` or inside a function)."""
    if START_METHOD is not None:
        return None
    if not asked and uses_jax(kernel):
        return ("the kernel computes with JAX, and the chains share its compiled code in this "
                "process (each worker process would compile its own). Give workers=k to run "
                "them in processes")
    if not _jax_started():
        return None
    spawned = ("JAX's runtime has started in this process, so worker processes must be "
               "spawned (a fork of its threads may deadlock)")
    if not asked:
        return (f"{spawned}, which re-imports the main module. Give workers=k (and guard the "
                "script with if __name__ == '__main__':) to run them in processes")
    fn = getattr(program, "fn", None)
    main = sys.modules.get("__main__")
    if getattr(fn, "__module__", None) == "__main__" and not getattr(main, "__file__", None):
        return (f"the model is defined interactively (a notebook or python -), and {spawned}, "
                "which re-imports the model")
    try:  # (a model pickles by reference: loading it here finds a local one missing)
        pickle.loads(dumps_job((program, kernel)))
    except Exception as e:
        cause = e.__cause__ or e
        return (f"{spawned}, and the program or kernel cannot be handed to them "
                f"({type(cause).__name__}: {cause}; define the model at the top level of a "
                "module to run chains in parallel)")
    return None


def uses_jax(kernel) -> bool:
    """Whether ``kernel`` or one it is composed of computes with JAX (a gradient kernel)."""
    return kernel is not None and any(getattr(k, "uses_jax", False) for _, k in kernel.kernels())


def _jax_started() -> bool:
    """Whether this process has started JAX's runtime (whose threads a fork would break)."""
    xb = sys.modules.get("jax._src.xla_bridge")
    return xb is not None and xb.backends_are_initialized()


# -- pickling jobs for "spawn" --------------------------------------------------------------------
def _model_function(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj.fn if isinstance(obj, Model) else obj


class _JobPickler(pickle.Pickler):
    """Pickles the function of a ``@th.model`` by reference to the Model that replaced it in
    its module (plain pickle fails: the module attribute is the Model, not the function)."""

    def reducer_override(self, obj):
        if isinstance(obj, types.FunctionType):
            mod = sys.modules.get(obj.__module__)
            target = mod
            for part in obj.__qualname__.split("."):
                target = getattr(target, part, None)
            if isinstance(target, Model) and target.fn is obj:
                return _model_function, (obj.__module__, obj.__qualname__)
        return NotImplemented


def dumps_job(job) -> bytes:
    f = io.BytesIO()
    try:
        _JobPickler(f, protocol=pickle.HIGHEST_PROTOCOL).dump(job)
    except Exception as e:
        raise TypeError(
            "workers > 1 uses the 'spawn' start method here, which pickles the program and the "
            f"kernel, and they cannot be pickled ({type(e).__name__}: {e}); define the model "
            "and the functions it uses at the top level of a module, or use workers=1"
        ) from e
    return f.getvalue()


# -- the worker process ---------------------------------------------------------------------------
def _send(q, msg, dumps=pickle.dumps) -> None:
    """Pickle here (errors name the value that cannot be sent)."""
    try:
        data = dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise TypeError(
            f"a worker process cannot send its draws to the main process: {type(e).__name__}: "
            f"{e} (the values and the output of the program must be picklable; or use workers=1)"
        ) from e
    q.put(data)


def _exit_with_parent(parent: int) -> None:
    """Make this worker exit when the main process dies (``kill -9`` included): on Linux the
    kernel sends SIGKILL (``prctl(PR_SET_PDEATHSIG)``); elsewhere, and in case the parent died
    before that call, a watcher thread notices the re-parenting within a second."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="thrifty-parent-watch", daemon=True).start()


def _worker(chain, job, q, stop, checkpoint_every, threads, parent, dumps=pickle.dumps):
    """Run one chain, reporting to ``q`` (``put``) and polling ``stop`` (``is_set``); a local
    worker process also ignores SIGINT and exits with its ``parent``.  ``dumps`` pickles the
    messages (a Ray worker: cloudpickle, for values of classes defined in the driver's
    ``__main__``)."""
    if parent is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _exit_with_parent(parent)
    try:
        if threads is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=threads)  # this process's share of the cores
        if isinstance(job, bytes):
            job = pickle.loads(job)
        program, kernel, seed, init, cfg, snapshot = job
        run = ChainRun(chain, program, kernel, seed, init, cfg, snapshot)
        _send(q, ("started", chain, run.iteration, run.init_seconds, run.stats()), dumps)
        last = -math.inf  # the first snapshot at the first tick: problems show at once

        def tick(r):
            nonlocal last
            _send(q, ("tick", chain, r.iteration, r.take(), r.stats()), dumps)
            if checkpoint_every is not None and perf_counter() - last >= checkpoint_every:
                _send(q, ("snapshot", chain, r.snapshot()), dumps)
                last = perf_counter()
            return stop.is_set()

        done = run.run(tick) if not stop.is_set() else run.iteration >= cfg.total
        payload = run.take()
        snap = run.snapshot() if checkpoint_every is not None else None
        _send(q, ("final", chain, done, run.iteration, payload, run.stats(), snap, run.seconds),
              dumps)
    except BaseException as e:
        tb = traceback.format_exc()
        try:
            exc = pickle.dumps(e)
            pickle.loads(exc)
        except Exception:
            exc = None
        q.put(pickle.dumps(("error", chain, exc, tb)))


class _StopFlag:
    """The stop request the workers poll (``is_set``) and the main process raises (``set``):
    one byte of shared memory, read and written without a lock.  A ``multiprocessing.Event``
    takes a lock shared by every process at each poll, and a worker killed while holding it
    would leave every other worker blocked at its next poll."""

    def __init__(self, ctx):
        self._flag = ctx.RawValue("b", 0)

    def set(self) -> None:
        self._flag.value = 1

    def is_set(self) -> bool:
        return bool(self._flag.value)


class _Channel:
    """A worker's end of its own pipe to the main process (``put``: one message).  Each worker
    has a pipe of its own, not a share of one queue: a queue's writers share a lock, which a
    worker that dies while its feeder thread holds it (``os._exit``, a kill, out of memory)
    never releases — and every other worker then blocks at its next message, for ever.  A
    message is written by the worker's main thread, so a worker that exits has sent its last
    message whole or not at all (a broken message on a dead worker's pipe is its end)."""

    def __init__(self, conn):
        self.conn = conn

    def put(self, data: bytes) -> None:
        self.conn.send_bytes(data)


def _receive(data):
    msg = pickle.loads(data)
    if msg[0] == "error" and msg[2] is not None:
        msg = (*msg[:2], pickle.loads(msg[2]), msg[3])
    return msg


class RemoteTraceback(Exception):
    def __init__(self, tb: str):
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return "\n" + self.tb


# -- the main process -----------------------------------------------------------------------------
class Collector:
    """What the main process does with the workers' messages (shared by the executors): draws
    and statistics into the chain records, snapshots into the checkpoint, progress."""

    def __init__(self, records, progress, checkpoint, cfg, stop=None):
        self.records, self.progress, self.checkpoint, self.cfg = records, progress, checkpoint, cfg
        self.errors: list = []  # (chain, exception or None, traceback text)
        self.stop = stop  # requested when a chain cannot start: the run raises its error
        self.started: set = set()  # chains whose worker initialised them
        self.unstarted = None  # (chain, exception, traceback) of a chain that raised before

    def handle(self, msg) -> bool:
        """Take one message; True when it was the chain's last (final or error)."""
        kind, c = msg[0], msg[1]
        rec = self.records[c]
        last = False
        if kind == "started":
            self.started.add(c)
            _, _, it, init_seconds, stats = msg
            rec.init_seconds = init_seconds
            rec.set_stats(stats)
            rec.iteration = it
        elif kind == "tick":
            _, _, it, payload, stats = msg
            rec.extend(payload)
            rec.set_stats(stats)
            rec.iteration = it
        elif kind == "snapshot":
            rec.snapshot = msg[2]
            if self.checkpoint.due():
                self.checkpoint.write(self.records, self.cfg.total)
        elif kind == "final":
            _, _, done, it, payload, stats, snap, seconds = msg
            rec.extend(payload)
            rec.set_stats(stats)
            rec.iteration = it
            rec.seconds = seconds
            rec.status = "done" if done else "stopped"
            if snap is not None:
                rec.snapshot = snap
            last = True
        elif kind == "error":
            _, _, exc, tb = msg
            self.fail(c, exc, tb)
            last = True  # the other chains run on: their draws are returned
            if c not in self.started and exc is not None and self.unstarted is None:
                # its initialisation raised (an init= value outside the support, a model
                # with no valid trace): an error of the call, as with workers=1
                self.unstarted = (c, exc, tb)
                if self.stop is not None:
                    self.stop.request()
        self.progress.update(c, rec.iteration, rec.accepted, rec.proposed, rec.num_draws,
                             rec.status)
        return last

    def fail(self, c: int, exc, tb: str) -> None:
        self.records[c].status = "failed"
        self.errors.append((c, exc, tb))

    def finish(self) -> None:
        """After the run: raise the error of a chain that raised before it started (its
        initialisation: the call's error, as in this process) or the first error if no chain
        has draws to return; otherwise name each failure on its record (the other chains'
        draws come back)."""
        if not self.errors:
            return
        survivors = [r for r in self.records if r.status != "failed" and r.num_draws > 0]
        if not survivors or self.unstarted is not None:
            c, exc, tb = self.unstarted or self.errors[0]
            if self.checkpoint is not None:
                self.checkpoint.write(self.records, self.cfg.total)
            if exc is None:
                raise RuntimeError(f"chain {c} failed in its worker: {tb}")
            raise exc from RemoteTraceback(tb)
        for c, exc, tb in self.errors:
            self.records[c].error = tb if exc is None else f"{type(exc).__name__}: {exc}"


def run_parallel(
    program, kernel, seeds, inits, cfg, records, workers, stop, progress, checkpoint
) -> bool:
    """Run the chains of ``records`` that are not done; returns False if the run was aborted
    (second Ctrl-C: the workers are terminated; draws sent before are kept)."""
    method = start_method()
    ctx = mp.get_context(method)
    pipes: dict = {}  # chain → the main process's end of its worker's pipe
    event = _StopFlag(ctx)
    stop.event = event
    if stop.requested:
        event.set()
    every = checkpoint.every if checkpoint is not None else None
    pending = [c for c, r in enumerate(records) if r.status != "done"]
    jobs = {}
    for c in pending:
        job = (program, kernel, seeds[c], inits[c], cfg, records[c].snapshot)
        jobs[c] = dumps_job(job) if method != "fork" else job
    active: dict = {}
    collect = Collector(records, progress, checkpoint, cfg, stop)

    def handle(msg):
        if collect.handle(msg):
            active.pop(msg[1]).join()

    def receive(c) -> bool:
        """Take one message of chain ``c``'s worker; False at the end of its pipe (its worker
        exited: closed, or a message it was writing cut short)."""
        try:
            data = pipes[c].recv_bytes()
        except (EOFError, OSError):
            return False
        handle(_receive(data))
        return True

    def lost(c) -> None:
        """Chain ``c``'s worker exited without its final message (killed, out of memory)."""
        p = active.pop(c)
        p.join(1.0)
        collect.fail(c, None, f"the worker process of chain {c} exited with code "
                     f"{p.exitcode} without returning its draws (killed? out of memory?)")

    def check_dead():
        for c, p in list(active.items()):
            if p.is_alive() or c not in active:
                continue
            while c in active and pipes[c].poll() and receive(c):
                pass  # (its last messages, still in the pipe)
            if c in active:
                lost(c)

    threads = blas_threads(len(records)) if LIMIT_BLAS_THREADS else None
    last_check = perf_counter()
    stop_seen = None  # when the stop request was first seen
    hung = False
    try:
        while True:
            if stop.requested and active:
                stop_seen = stop_seen or perf_counter()
                if perf_counter() - stop_seen > STOP_GRACE:  # a worker stuck inside a step
                    for c, p in list(active.items()):
                        p.terminate()
                        p.join(1.0)
                        records[c].status = "interrupted"
                        active.pop(c)
                    hung = True
            while pending and len(active) < workers and not stop.requested:
                c = pending.pop(0)
                pipes[c], end = ctx.Pipe(duplex=False)
                p = ctx.Process(
                    target=_worker,
                    args=(c, jobs.pop(c), _Channel(end), event, every, threads, os.getpid()),
                    name=f"thrifty-chain-{c}",
                    daemon=True,
                )
                with warnings.catch_warnings():  # (JAX warns at a fork once it started:
                    # only with START_METHOD forced, see start_method)
                    warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
                    p.start()
                end.close()  # (the worker's: its pipe ends when the worker does)
                active[c] = p
                records[c].status = "running"
            if not active:
                break
            chain_of = {pipes[c]: c for c in active}
            ready = mp_connection.wait(list(chain_of), timeout=0.1)
            if not ready:
                check_dead()
                last_check = perf_counter()
                continue
            for conn in ready:
                c = chain_of[conn]
                if c in active and not receive(c):  # its pipe ended before its last message
                    lost(c)
            if perf_counter() - last_check > 1.0:
                check_dead()
                last_check = perf_counter()
    except KeyboardInterrupt:
        for p in active.values():
            p.terminate()
        for c, p in active.items():
            p.join(1.0)
            records[c].status = "interrupted"
        return False
    finally:
        stop.event = None
        for conn in pipes.values():
            conn.close()
    collect.finish()
    return not hung
