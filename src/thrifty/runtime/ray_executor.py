"""Chains as Ray tasks: ``th.infer(..., executor="ray")`` or ``executor=th.RayExecutor(...)``.

Each chain runs the same worker loop as a local worker process (:func:`parallel._worker`), as a
Ray task on whatever cluster ``ray.init`` connected to — an existing one
(``ray.init(address="auto")`` on a cluster node; ``ray.init("ray://head:10001")`` from outside,
through Ray Client, needs ``pip install "ray[client]"``; or ``RAY_ADDRESS``), else a local
instance started here.  Messages (draws, statistics, snapshots) come back through a
``ray.util.queue.Queue``; Ctrl-C sets a stop flag held by a small actor, which the chains poll
at each report (about ten times a second).  The program and kernel are pickled once with Ray's
cloudpickle — a model or kernel class defined in the script or notebook (``__main__``) by value
— and shared by the chains through the object store.

Same seeds, same draws: each chain gets the seed it gets locally and limits its BLAS threads to
``cpu_count // chains`` of its own node, as a local worker does (on nodes with other core counts
or BLAS builds the last bits of floating-point sums may differ).  A chain whose worker dies (node
lost, process killed) is reported in ``result.failed_chains`` with the draws it had sent; a chain
that stops answering after a stop request is cancelled after ``STOP_GRACE`` seconds.
"""

from __future__ import annotations

import queue as queue_mod
from dataclasses import dataclass, field
from time import perf_counter

from thrifty.runtime import parallel


def _ray():
    try:
        import ray
    except ImportError:
        raise ImportError(
            "executor='ray' needs Ray: pip install 'thrifty[ray]' (or pip install ray)"
        ) from None
    return ray


@dataclass
class RayExecutor:
    """Run chains as Ray tasks (see the module docstring).

    ``address``: the cluster for ``ray.init`` when Ray is not initialised yet (``None``: Ray's
    default — ``RAY_ADDRESS`` or a new local instance; ``"auto"``: the cluster of this node);
    ``num_cpus``: CPUs reserved per chain; ``init_kwargs``: more arguments of ``ray.init``.

    >>> import thrifty as th
    >>> th.RayExecutor(address="auto")
    RayExecutor(address='auto', num_cpus=1, init_kwargs={})
    """

    address: str | None = None
    num_cpus: float = 1
    init_kwargs: dict = field(default_factory=dict)

    def connect(self):
        ray = _ray()
        if not ray.is_initialized():
            kw = {"include_dashboard": False, "log_to_driver": True, **self.init_kwargs}
            ray.init(address=self.address, **kw)
        return ray


class _StopFlag:
    """The stop request, readable by every chain (a Ray actor)."""

    def __init__(self):
        self.value = False

    def set(self):
        self.value = True

    def is_set(self) -> bool:
        return self.value


class _RemoteStop:
    """``is_set()`` of the stop actor, for the worker loop."""

    def __init__(self, actor):
        self.actor = actor

    def is_set(self) -> bool:
        import ray

        return ray.get(self.actor.is_set.remote())


def _dumps_shared(obj) -> bytes:
    """Pickle (program, kernel) for the workers with Ray's cloudpickle, and a ``@th.model``
    defined in ``__main__`` (a script, a notebook) by value: by reference (how a Model pickles
    itself) it would name ``__main__.<model>``, which a Ray worker does not have."""
    import io

    from ray import cloudpickle

    from thrifty.core.model import Model

    class Pickler(cloudpickle.CloudPickler):
        def reducer_override(self, obj):
            if isinstance(obj, Model) and obj.__module__ == "__main__":
                return Model, (obj.fn,)
            return super().reducer_override(obj)

    f = io.BytesIO()
    try:
        Pickler(f, protocol=5).dump(obj)
    except Exception as e:
        raise TypeError(
            "executor='ray' pickles the program and the kernel for the Ray workers, and they "
            f"cannot be pickled ({type(e).__name__}: {e})"
        ) from e
    return f.getvalue()


def _chain_task(chain, shared, rest, q, stop_actor, every, threads):
    """One chain in a Ray worker; ``shared`` (program, kernel pickled by :func:`_dumps_shared`)
    comes from the object store."""
    from ray import cloudpickle

    from thrifty.runtime import chain as chain_mod

    chain_mod.STATE_PICKLER = chain_mod._cloud_state_pickler()  # this process runs chains only
    program, kernel = cloudpickle.loads(shared)
    seed, init, cfg, snapshot = rest
    job = (program, kernel, seed, init, cfg, snapshot)
    parallel._worker(chain, job, q, _RemoteStop(stop_actor), every, threads, None,
                     cloudpickle.dumps)


def run_ray(executor: RayExecutor, program, kernel, seeds, inits, cfg, records, workers, stop,
            progress, checkpoint) -> bool:
    """Like :func:`parallel.run_parallel`, with the chains as Ray tasks."""
    ray = executor.connect()
    from ray.util.queue import Queue

    q = Queue()
    flag = ray.remote(num_cpus=0)(_StopFlag).remote()
    task = ray.remote(num_cpus=executor.num_cpus, max_retries=0)(_chain_task)
    every = checkpoint.every if checkpoint is not None else None
    threads = parallel.blas_threads(len(records)) if parallel.LIMIT_BLAS_THREADS else None
    pending = [c for c, r in enumerate(records) if r.status != "done"]
    shared = ray.put(_dumps_shared((program, kernel)))
    jobs = {c: (seeds[c], inits[c], cfg, records[c].snapshot) for c in pending}
    collect = parallel.Collector(records, progress, checkpoint, cfg, stop)
    active: dict = {}  # chain → task reference
    started: set = set()  # chains whose task has begun running (sent "started")
    stop_seen = None
    hung = False

    def handle(msg) -> None:
        if msg[0] == "started":
            started.add(msg[1])
        if collect.handle(msg):
            active.pop(msg[1], None)

    def drain(deadline: float) -> None:
        while perf_counter() < deadline:
            try:
                msg = parallel._receive(q.get(timeout=0.05))
            except queue_mod.Empty:
                return
            handle(msg)

    def check_dead() -> None:
        """A task that ended without its final message: its worker died."""
        tasks = list(active.items())
        done, _ = ray.wait([r for _, r in tasks], num_returns=len(tasks), timeout=0)
        # (the chains matched before draining: a drain may finish other chains of ``done``)
        for c, ref in [(c, r) for c, r in tasks if r in done]:
            drain(perf_counter() + 1.0)  # its last messages may still be queued
            if c not in active:
                continue
            active.pop(c)
            try:
                ray.get(ref)
                why = "ended without returning its draws"
            except Exception as e:
                why = f"failed: {type(e).__name__}: {str(e).splitlines()[0]}"
            collect.fail(c, None, f"the Ray task of chain {c} {why}")

    last_check = perf_counter()
    try:
        while True:
            if stop.requested and active:
                if stop_seen is None:
                    flag.set.remote()
                    stop_seen = perf_counter()
                    drain(perf_counter() + 0.2)
                    # tasks still waiting for a worker (Ray's worker start-up takes seconds, a
                    # busy cluster longer) have no draws: cancel them rather than wait
                    for c in [c for c in active if c not in started]:
                        ray.cancel(active.pop(c), force=True)
                        records[c].status = "pending"
                        collect.progress.update(c, records[c].iteration, records[c].accepted,
                                                records[c].proposed, records[c].num_draws,
                                                "pending")
                elif perf_counter() - stop_seen > parallel.STOP_GRACE:
                    for c, ref in list(active.items()):
                        ray.cancel(ref, force=True)
                        records[c].status = "interrupted"
                        active.pop(c)
                    hung = True
            while pending and len(active) < workers and not stop.requested:
                c = pending.pop(0)
                active[c] = task.remote(c, shared, jobs.pop(c), q, flag, every, threads)
                records[c].status = "running"
            if not active:
                break
            try:
                msg = parallel._receive(q.get(timeout=0.1))
            except queue_mod.Empty:
                msg = None
            if msg is not None:
                handle(msg)
            if msg is None or perf_counter() - last_check > 1.0:
                check_dead()
                last_check = perf_counter()
    except KeyboardInterrupt:  # a second Ctrl-C: cancel what runs
        for c, ref in active.items():
            ray.cancel(ref, force=True)
            records[c].status = "interrupted"
        return False
    finally:
        ray.kill(flag)
        q.shutdown()
    collect.finish()
    return not hung
