"""Chains as Ray tasks: ``th.infer(..., executor="ray")`` or ``executor=th.RayExecutor(...)``.

Each chain runs the same worker loop as a local worker process (:func:`parallel._worker`), as a
Ray task on whatever cluster ``ray.init`` connected to — an existing one
(``ray.init(address="auto")`` on a cluster node; ``ray.init("ray://head:10001")`` from outside,
through Ray Client, needs ``pip install "ray[client]"``; or ``RAY_ADDRESS``), else a local
instance started here.  Messages (draws, statistics, snapshots) come back through one small
actor, a mailbox, which also holds the stop flag that Ctrl-C sets: each message a chain sends
(about ten a second) is answered with the flag, and the driver takes all the messages waiting at
each call.  The mailbox's class is sent to Ray by value, so its process imports Ray alone, not
thrifty (about a second of start-up rather than three).  The program and kernel are pickled once
with Ray's cloudpickle — a model or kernel class defined in the script or notebook
(``__main__``) by value — and shared by the chains through the object store.

Same seeds, same draws: each chain gets the seed it gets locally and limits its BLAS threads to
``cpu_count // chains`` of its own node, as a local worker does (on nodes with other core counts
or BLAS builds the last bits of floating-point sums may differ).  A chain whose worker dies (node
lost, process killed) is reported in ``result.failed_chains`` with the draws it had sent; a chain
that stops answering after a stop request is cancelled after ``STOP_GRACE`` seconds.
"""

from __future__ import annotations

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


def _mailbox_class():
    """The class of the mailbox actor: the chains' messages (``put``, answered with the stop
    flag) and the stop flag (``set_stop``); ``take(timeout)`` returns every message waiting,
    after waiting up to ``timeout`` seconds for one.  Defined inside a function so that Ray's
    cloudpickle sends it by value: by reference, the actor's process would import thrifty."""
    import asyncio

    class Mailbox:
        def __init__(self):
            self.items: list = []
            self.ready = asyncio.Event()
            self.stop = False

        async def put(self, item) -> bool:  # (every method async: all run on the event loop)
            self.items.append(item)
            self.ready.set()
            return self.stop

        async def take(self, timeout: float) -> list:
            if not self.items:
                try:
                    await asyncio.wait_for(self.ready.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
            items, self.items = self.items, []
            self.ready.clear()
            return items

        async def set_stop(self) -> None:
            self.stop = True

    return Mailbox


class _Post:
    """A chain's end of the mailbox, for the worker loop: ``put`` sends a message and keeps the
    stop flag of the answer, which ``is_set`` returns (the loop asks right after a message)."""

    def __init__(self, mailbox):
        self.mailbox = mailbox
        self.stop = False

    def put(self, data: bytes) -> None:
        import ray

        self.stop = ray.get(self.mailbox.put.remote(data))

    def is_set(self) -> bool:
        return self.stop


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


def _chain_task(chain, shared, rest, mailbox, every, threads):
    """One chain in a Ray worker; ``shared`` (program, kernel pickled by :func:`_dumps_shared`)
    comes from the object store."""
    from ray import cloudpickle

    from thrifty.runtime import chain as chain_mod

    chain_mod.STATE_PICKLER = chain_mod._cloud_state_pickler()  # this process runs chains only
    program, kernel = cloudpickle.loads(shared)
    seed, init, cfg, snapshot = rest
    job = (program, kernel, seed, init, cfg, snapshot)
    post = _Post(mailbox)
    parallel._worker(chain, job, post, post, every, threads, None, cloudpickle.dumps)


def run_ray(executor: RayExecutor, program, kernel, seeds, inits, cfg, records, workers, stop,
            progress, checkpoint) -> bool:
    """Like :func:`parallel.run_parallel`, with the chains as Ray tasks."""
    ray = executor.connect()
    mailbox = ray.remote(num_cpus=0)(_mailbox_class()).remote()
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

    def receive(timeout: float) -> int:
        """Handle the messages waiting (after waiting up to ``timeout`` s for one): how many."""
        items = ray.get(mailbox.take.remote(timeout))
        for data in items:
            handle(parallel._receive(data))
        return len(items)

    def drain(deadline: float) -> None:
        while perf_counter() < deadline and receive(0.05):
            pass

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
                    mailbox.set_stop.remote()
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
                active[c] = task.remote(c, shared, jobs.pop(c), mailbox, every, threads)
                records[c].status = "running"
            if not active:
                break
            if not receive(0.1) or perf_counter() - last_check > 1.0:
                check_dead()
                last_check = perf_counter()
    except KeyboardInterrupt:  # a second Ctrl-C: cancel what runs
        for c, ref in active.items():
            ray.cancel(ref, force=True)
            records[c].status = "interrupted"
        return False
    finally:
        ray.kill(mailbox)
    collect.finish()
    return not hung
