"""One MCMC chain: initialisation, the sampling loop, what it records, and its resumable state.

The same :class:`ChainRun` runs in the main process (``workers=1``) and in worker processes.
It calls back ``tick(run)`` about every :data:`TICK` seconds — never per step — to hand over its
new draws (:meth:`ChainRun.take`), report progress and ask whether to stop; between ticks the
loop does one kernel step, one counter increment and one comparison per step.

A *snapshot* (:meth:`ChainRun.snapshot`) is the state of the chain between two steps: the trace
and the kernel (pickled together, the program replaced by a reference), the generator's
``bit_generator.state``, the iteration and the number of draws recorded.  Restoring it and
continuing produces exactly the draws the uninterrupted chain would have produced.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import math
import pickle
from dataclasses import dataclass
from time import perf_counter, process_time

import numpy as np

from thrifty._context import EXECUTIONS, float64
from thrifty.core.check import raise_if_inconsistent
from thrifty.core.engine import RESCORE, Run
from thrifty.core.layout import layout_key
from thrifty.core.output import probe
from thrifty.core.simulate import initialize, simulate
from thrifty.errors import ModelError
from thrifty.inference.configured import restore_state
from thrifty.runtime.arguments import argument_digests, note_written, raise_if_written
from thrifty.runtime.draws import DrawStore
from thrifty.runtime.recorder import Recorder, Selector

TICK = 0.1  # seconds between two calls of ``tick`` (progress, stop requests, checkpoints)
AUTO_CHECK_SHARE = 0.03  # check="auto": the share of a chain's time its checks may take
RECENT_CHECKS = 5  # ... measured by the cheapest of this many last checks
# check="auto": the checks after the first and the last step are made when this chain's checks
# then cost at most this many seconds, or AUTO_CHECK_SHARE of the whole chain's time (a check
# is a full execution: on a large model in a short run, two would be most of the run)
AUTO_CHECK_FLOOR = 0.01
CHECK_PER_EXECUTION = 2.0  # a check's cost, in full executions, before one is measured


@dataclass(frozen=True)
class RunConfig:
    """The sampling schedule of every chain."""

    num_samples: int
    burn_in: int
    thin: int
    keep: Selector | None = None  # which variables are recorded (None: all)
    check_every: int = 0  # check mode: compare with a full execution every k steps (0: never)
    check_decades: bool = False  # check mode: after step 1, by time share, decades (and the last)

    @property
    def total(self) -> int:
        """Kernel steps per chain."""
        return self.burn_in + self.num_samples * self.thin

    def next_check(self, it: int, check_seconds: float = math.inf,
                   step_seconds: float = 0.0, confirm: bool = False) -> int:
        """The step after which the chain next checks its trace against a full execution
        (:mod:`thrifty.core.check`), given that ``it`` steps are done; 0: never.  With check
        mode on, the last step of the chain is due.  ``check_decades`` (the ``"auto"``
        schedule) checks after step 1 and, given what the last check and a step took, once the
        steps since took 1/AUTO_CHECK_SHARE times that check (unless the last step's check is
        less than that further on), and after steps 10, 100, 1000, ... whose steps so far took
        that much (so that checks keep to their share of the chain's time); the chain loop
        leaves out its checks after the first and the last step when they are not
        :func:`_affordable`.  With ``confirm`` (the chain loop's, when a single check is timed
        and another would be :func:`_affordable`) the next decade is due whatever that check
        took: one timing may hold a pause of the process (a garbage collection) or first calls,
        and must not alone push the decades away."""
        if not (self.check_every or self.check_decades):
            return 0
        due = [self.total]
        if self.check_every:
            due.append((it // self.check_every + 1) * self.check_every)
        if self.check_decades:
            if it == 0:
                due.append(1)
            elif step_seconds > 0 and check_seconds < math.inf:
                affordable = check_seconds / (AUTO_CHECK_SHARE * step_seconds)  # steps per check
                d = 10
                while d <= it or d < affordable:  # a decade no dearer than its share
                    d *= 10
                due.append(d)
                if confirm:  # (one timing decides no decade alone)
                    due.append(10 ** len(str(it)))
                nxt = it + max(1, int(affordable))
                if self.total - nxt >= affordable:  # (else the last step's check is near)
                    due.append(nxt)
        due = [s for s in due if it < s <= self.total]
        return min(due) if due else 0


def _step_cost(wall: float, cpu: float, checking: float, cpu_checking: float,
               steps: int) -> float:
    """A step's seconds in a chunk of ``steps`` that took ``wall`` and ``cpu`` seconds, its
    checks' excluded: the lesser of wall and CPU seconds (see ``ChainRun._run``)."""
    return min(wall - checking, max(cpu - cpu_checking, 0.0)) / steps


def _affordable(spent: float, est: float, chain_seconds: float) -> bool:
    """check="auto": whether the check after the first or the last step keeps this chain's
    checks within max(AUTO_CHECK_FLOOR, AUTO_CHECK_SHARE of the chain's time), ``spent``
    seconds of checks so far, ``est`` this one, ``chain_seconds`` the chain's expected time."""
    return spent + est <= max(AUTO_CHECK_FLOOR, AUTO_CHECK_SHARE * chain_seconds)


PRIOR_NAMES = 20  # prior simulations that may show variables the initial trace lacks


def _names(trace, sources) -> set:
    """The dotted names of the variables of ``trace`` (what ``record=`` patterns match)."""
    found, _, generic, _ = sources(trace, lambda name: True)
    return {*found, *(n for _, _, values in generic for n in values)}


def _prior_names(program, sources) -> set:
    """The variables of a few prior simulations (fixed seeds; ones that fail are skipped)."""
    out: set = set()
    for seed in range(PRIOR_NAMES):
        try:
            out |= _names(simulate(program, seed=seed), sources)
        except Exception:  # (a prior draw the model refuses: no names from it)
            continue
    return out


# -- pickling a chain's state without its program -------------------------------------------------
class _StatePickler(pickle.Pickler):
    """Pickles with ``program`` replaced by a reference (programs hold closures and data)."""

    def __init__(self, file, program):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._program = program

    def persistent_id(self, obj):
        return "program" if obj is self._program else None


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, program):
        super().__init__(file)
        self._program = program

    def persistent_load(self, pid):
        if pid == "program":
            return self._program
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r} in a thrifty chain state")


def _cloud_state_pickler():
    """:class:`_StatePickler` on Ray's cloudpickle: classes and functions defined in the
    driver's ``__main__`` (a kernel class in a script) pickle by value."""
    from ray import cloudpickle

    class CloudStatePickler(cloudpickle.CloudPickler):
        def __init__(self, file, program):
            super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
            self._program = program

        def persistent_id(self, obj):
            return "program" if obj is self._program else None

    return CloudStatePickler


#: The pickler of chain states: :class:`_StatePickler`; in a Ray worker, the cloudpickle one.
STATE_PICKLER = _StatePickler


def dumps_state(obj, program) -> bytes:
    """Pickle ``obj`` (a trace, a kernel, ...) with ``program`` left out."""
    f = io.BytesIO()
    try:
        STATE_PICKLER(f, program).dump(obj)
    except Exception as e:
        raise TypeError(
            f"cannot pickle the state of the chain (trace and kernel) for the checkpoint: "
            f"{type(e).__name__}: {e}"
        ) from e
    return f.getvalue()


def loads_state(data: bytes, program):
    """Inverse of :func:`dumps_state`: the pickled objects with ``program`` reattached."""
    return _StateUnpickler(io.BytesIO(data), program).load()


# -- one chain ------------------------------------------------------------------------------------
class ChainRun:
    """A chain being run: its trace, generator, kernel and the draws not yet handed over.

    With ``snapshot=None`` the chain starts afresh: ``rng = default_rng(seed)``, the kernel is
    deep-copied, the trace initialised and probed.  Otherwise it continues from the snapshot:
    its trace, generator state and iteration, and a copy of ``kernel`` (the one passed to
    ``th.infer``, whose configuration the checkpoint matched) given the state the saved kernel
    had reached (:func:`~thrifty.inference.configured.restore_state`).
    """

    def __init__(self, chain, program, kernel, seed, init, cfg: RunConfig, snapshot=None):
        with float64():  # (model code written with jax.numpy: float64, as thrifty's own)
            self._init(chain, program, kernel, seed, init, cfg, snapshot)

    def _init(self, chain, program, kernel, seed, init, cfg: RunConfig, snapshot) -> None:
        self.chain = chain
        self.program = program
        self.cfg = cfg
        t0 = perf_counter()
        self.execution_seconds = None  # one full execution of the program (initialize's)
        if snapshot is None:
            self.rng = np.random.default_rng(seed)
            self.kernel = copy.deepcopy(kernel)
            before = argument_digests(program)
            try:
                self.trace = initialize(program, self.rng, init)
                self.execution_seconds = perf_counter() - t0
                self.needs_plates = probe(self.trace, self.rng)
            except Exception as e:  # (an argument the program wrote into: the likely cause)
                noted = note_written(program, before, e)
                if noted is e:
                    raise
                raise noted from e
            raise_if_written(program, before, self.trace)
            self.iteration = 0
            self.n_recorded = 0
        else:
            self.trace, saved = loads_state(snapshot["state"], program)
            self.kernel = copy.deepcopy(kernel)
            restore_state(self.kernel, saved)
            self.rng = np.random.default_rng(seed)
            self.rng.bit_generator.state = snapshot["rng_state"]
            self.needs_plates = snapshot["needs_plates"]
            self.iteration = snapshot["iteration"]
            self.n_recorded = snapshot["n_recorded"]
        # the layouts probed (a snapshot's trace is of a layout its run probed: each layout
        # is probed before a draw is recorded in it, a kernel's start's too)
        self._layouts = {layout_key(self.trace)}
        self.init_seconds = perf_counter() - t0
        self.seconds = 0.0  # wall time in the sampling loop
        self.consistent = True  # False after an exception inside a step
        self._kernels = self.kernel.kernels()
        alone = getattr(self.kernel, "run_alone", None)
        if alone is not None:  # (a gradient kernel alone: many transitions per compiled call)
            alone()
        plan = getattr(self.kernel, "plan_burn_in_all", None)
        if plan is not None:  # (kernels whose adaptation spans the burn-in)
            plan(cfg.burn_in)
        prepare = getattr(self.kernel, "prepare_all", None)
        if prepare is not None and snapshot is None:
            prepare(self.trace)
            start = getattr(self.kernel, "start_all", None)
            if start is not None:
                t1 = perf_counter()
                start(self.trace, self.rng, init)
                self.init_seconds += perf_counter() - t1
                self._new_layout(self.trace, lambda trace: None, 0)  # (a start may move it)
        keep = cfg.keep or Selector()
        if snapshot is None and not keep.everything:
            from thrifty.runtime.recorder import sources

            names = _names(self.trace, sources)
            if keep.missing(names):  # (a variable of some traces only: a branch, a size)
                names |= _prior_names(self.trace.program, sources)
                keep.check(names, f" (in the initial trace and {PRIOR_NAMES} prior simulations)")
        self.recorder = Recorder(keep, self.needs_plates, start=self.n_recorded,
                                 live=() if snapshot is None else snapshot.get("recorded", ()))

    # -- the loop ----------------------------------------------------------------------------------
    def run(self, tick) -> bool:
        """Step until the schedule is complete (returns True) or ``tick(self)`` returns True
        (a stop request; returns whether the chain happens to be complete).

        An exception inside a step (e.g. ``KeyboardInterrupt``) propagates; the draws recorded
        before it are still available through :meth:`take`, but the state is no longer a
        snapshot point (``consistent`` becomes False).
        """
        with float64():
            return self._run(tick)

    def _run(self, tick) -> bool:
        cfg = self.cfg
        total, thin = cfg.total, cfg.thin
        step = self.kernel.step
        rng = self.rng
        record = self.recorder.record
        # a kernel alone may record draws before it writes them into the trace; it writes the
        # last one (flush) before anything but the recorder reads the trace
        pending = getattr(self.kernel, "pending_draw", None)
        flush = getattr(self.kernel, "flush", None) or (lambda trace: None)
        draw_stats = self._draw_stats if any(
            hasattr(k, "draw_stats") for _, k in self._kernels) else None
        trace = self.trace
        it = self.iteration
        rec_next = cfg.burn_in + (self.n_recorded + 1) * thin
        burn_in = cfg.burn_in
        tune = getattr(self.kernel, "set_tuning", None) or (lambda on: None)
        tune(it < burn_in)  # kernels adapt during the burn-in only
        check_at = cfg.next_check(it)
        planned = it  # the step after which the next check was planned (a check's, or the start)
        check_cost, step_cost = math.inf, 0.0  # seconds of a check, of a step
        # (a cost is the lesser of wall and CPU seconds: a step's wall seconds on a loaded machine
        # hold its waits for a core — the cheapest check's do not —, and CPU seconds count every
        # thread of the process, those of a multi-threaded step's XLA or BLAS)
        recent: list = []  # the last checks' seconds: the cost is their minimum (one check
        # slowed by a pause of the process must not push the next checks and decades away)
        chunk_costs: list = []  # a step's seconds in the last chunks: the cost is their minimum
        # (a chunk holding a one-off — a full garbage collection, first calls — must not plan
        # the next check at that chunk's cost, too near)
        spent = 0.0  # seconds of this run's checks

        def confirm() -> bool:  # a single check timed, and another affordable
            return len(recent) == 1 and _affordable(spent, check_cost, step_cost * total)

        chunk = 1
        layout = (trace.uid, trace.layout)  # (the layout of the trace last probed)
        t_start = perf_counter()
        watching = EXECUTIONS.layout_watch  # (a chain run inside another's step: restored)
        # a composite kernel's parts may run in a layout that its later parts leave: checked
        # when a part reaches it, as the chain checks what a step leaves
        EXECUTIONS.layout_watch = lambda tr: self._new_layout(tr, flush, it + 1)
        try:
            while it < total:
                t0, it0, checking = perf_counter(), it, 0.0
                p0, cpu_checking = process_time(), 0.0
                end = min(total, it + chunk)
                while it < end:
                    trace = step(trace, rng)
                    it += 1
                    if trace.layout != layout[1] or trace.uid != layout[0]:
                        layout = (trace.uid, trace.layout)
                        self._new_layout(trace, flush, it)
                    if it == burn_in:
                        flush(trace)
                        tune(False)
                    if it == rec_next:
                        record(trace, draw_stats() if draw_stats else None,
                               pending() if pending else None)
                        self.n_recorded += 1
                        rec_next += thin
                    if it == check_at:  # check mode: never touches the trace or the generator
                        if cfg.check_decades and (it == 1 or it == total):
                            steps = (perf_counter() - t0 - checking) / (it - it0)
                            est = self._check_estimate(check_cost)
                            if not _affordable(spent, est, steps * total):
                                check_cost = min(check_cost, est)  # (for the next ones)
                                check_at = cfg.next_check(it, check_cost, step_cost or steps)
                                planned = it
                                continue
                        flush(trace)  # (after the record: its timing changes no recorded value)
                        c0, pc0 = perf_counter(), process_time()
                        raise_if_inconsistent(trace, f"(chain {self.chain}, after step {it})")
                        took, took_cpu = perf_counter() - c0, process_time() - pc0
                        checking += took
                        cpu_checking += took_cpu
                        spent += took
                        recent = [*recent[-(RECENT_CHECKS - 1):], min(took, took_cpu)]
                        check_cost = min(recent)
                        if cfg.check_decades and it > it0:  # a step's cost in this chunk so far
                            step_cost = min([*chunk_costs, _step_cost(
                                perf_counter() - t0, process_time() - p0, checking,
                                cpu_checking, it - it0)])
                        check_at = cfg.next_check(it, check_cost, step_cost, confirm())
                        planned = it
                flush(trace)
                self.trace, self.iteration = trace, it
                # aim at one tick per TICK seconds whatever the cost of a step
                dt, cpu = perf_counter() - t0, process_time() - p0
                if cfg.check_decades and check_at and dt > checking:  # (the next check, by time)
                    # planned again from the last check with what a step now costs: a first
                    # step slowed by first calls (a chunk of one step) must not keep a check
                    # planned at a few steps' cost too near
                    chunk_costs = [*chunk_costs[-(RECENT_CHECKS - 1):],
                                   _step_cost(dt, cpu, checking, cpu_checking, it - it0)]
                    step_cost = min(chunk_costs)
                    nxt = cfg.next_check(planned, check_cost, step_cost, confirm())
                    check_at = max(nxt, it + 1) if nxt else 0
                ratio = TICK / dt if dt > 0 else 4.0
                chunk = max(1, int(chunk * min(max(ratio, 0.5), 4.0)))
                if tick(self):
                    return it >= total
            return True
        except BaseException:
            self.consistent = False
            raise
        finally:
            EXECUTIONS.layout_watch = watching
            self.trace, self.iteration = trace, it
            self.seconds += perf_counter() - t_start

    def _new_layout(self, trace, flush, it: int) -> None:
        """A commit changed the layout of the trace (sites, nodes or columns that exist): a
        layout not probed before is probed now (:func:`probe_layout`),
        whose error names the step that reached it; the output may need the plates' values
        from now on."""
        key = layout_key(trace)
        if key in self._layouts:
            return
        flush(trace)
        try:
            needs = probe_layout(trace)
        except ModelError as e:
            where = f"step {it}" if it else "the kernels' start"
            raise ModelError(f"{e} (seen at {where} of chain {self.chain}, the first trace of "
                             "its layout: thrifty checks each layout of the program — which "
                             "sites, plates and chains exist — when a chain first reaches "
                             "it)") from e
        self._layouts.add(key)
        if needs and not self.needs_plates:
            self.needs_plates = self.recorder.needs_plates = True

    def _check_estimate(self, check_cost: float) -> float:
        """What a check costs: the cheapest of the last ones, else CHECK_PER_EXECUTION full
        executions (timed by ``initialize``), else 0 (unknown: a resumed chain)."""
        if check_cost < math.inf:
            return check_cost
        if self.execution_seconds is None:
            return 0.0
        return CHECK_PER_EXECUTION * self.execution_seconds

    def _draw_stats(self) -> dict:
        """The per-draw statistics of the kernels that keep them (a gradient kernel's last
        transition), under ArviZ's names; a second such kernel's with its label in front."""
        out: dict = {}
        for label, k in self._kernels:
            f = getattr(k, "draw_stats", None)
            if f is None:
                continue
            for name, v in f().items():
                out[name if name not in out else f"{label}.{name}"] = v
        return out

    # -- handing over ------------------------------------------------------------------------------
    def take(self) -> dict:
        """The draws recorded since the last call (and forget them)."""
        return self.recorder.take()

    def stats(self) -> list:
        """``[(label, Stats)]`` of the chain's kernels (copies): the sampling steps', with the
        burn-in's as ``burn_in`` — in the burn-in, what it did so far and no sampling step."""
        return [(label, k.stats.as_burn_in(k.site_names()) if k.tuning
                 else dataclasses.replace(k.stats)) for label, k in self._kernels]

    def snapshot(self) -> dict:
        """The chain's state between two steps; call :meth:`take` first."""
        if not self.consistent:
            raise RuntimeError("the chain was interrupted inside a step; no snapshot possible")
        if self.recorder.count:
            raise RuntimeError("snapshot() with draws not taken")
        return {
            "state": dumps_state((self.trace, self.kernel), self.program),
            "rng_state": self.rng.bit_generator.state,
            "needs_plates": self.needs_plates,
            "iteration": self.iteration,
            "n_recorded": self.n_recorded,
            "recorded": sorted(self.recorder.live_names()),  # (what a resume must see go)
            "stats": self.stats(),
        }


def probe_layout(trace) -> bool:
    """:func:`~thrifty.core.output.probe` of a trace a chain reached (not its initial one): on
    a fork of it executed in full — every element and step rescored, the output the
    program's — with a generator of its own, so that the chain's trace and generator are
    untouched (the model's own buffers hold what the probe's executions left, as after any
    run)."""
    fork = trace.fork()
    try:
        rng = np.random.default_rng(0)
        Run(fork, rng, mode=RESCORE).execute().commit()
        return probe(fork, rng)
    finally:
        trace.revert(fork)


class ChainRecord:
    """What the main process knows of a chain: its draws so far, progress, stats, snapshot."""

    def __init__(self):
        self.store = DrawStore()
        self.iteration = 0
        self.status = "pending"  # pending | running | done | stopped | interrupted | failed
        self.error: str | None = None  # a failed chain's error (its worker crashed or raised)
        self.stats: list | None = None
        self.snapshot: dict | None = None  # last consistent state (for checkpoints)
        self.init_seconds = 0.0
        self.seconds = 0.0
        self.new_draws = 0  # draws recorded by this call of th.infer
        self.new_steps = 0
        self.accepted = 0
        self.proposed = 0

    def extend(self, payload: dict) -> None:
        self.store.extend(payload)
        self.new_draws += payload["n"]

    def set_stats(self, stats: list) -> None:
        """The chain's ``[(label, Stats)]``; ``accepted`` and ``proposed`` (for the progress
        bar) sum the burn-in and the sampling steps of its kernels (a composite's are its
        parts')."""
        self.stats = stats
        whole = [(s, s.burn_in) for _, s in stats if not s.composite]
        self.accepted = sum(s.accepted + (b.accepted if b else 0) for s, b in whole)
        self.proposed = sum(s.proposed + (b.proposed if b else 0) for s, b in whole)

    @property
    def num_draws(self) -> int:
        return self.store.n
