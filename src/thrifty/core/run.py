"""One execution of a program against a trace: replay, rescoring, and the MH bookkeeping.

A :class:`Run` re-executes the model body.  Choices present in the trace are replayed (and
rescored under their possibly changed parents); *targets* get proposed values or are resampled
from their prior; choices the trace lacks are drawn fresh.  Structured nodes execute only what
is needed (see ``Plan``): a plate runs the element indices it is asked for, a markov chain the
steps it is asked for plus the steps their changed states reach; both run in full when a value
that precedes them in the enclosing body changed (``frame.dirty``).  Program order is the
dependency graph: a plate or chain depends on what ran before it in its block.

The run never touches the trace; it writes a journal that :meth:`Run.commit` applies.  It keeps
the quantities of paper 001 Eq. 4:

* ``lp_new`` — log-density of the re-executed part of the new trace, fresh choices excluded;
* ``lp_old`` — log-density of the same part of the old trace, stale choices excluded;
* ``n_fresh`` / ``n_stale`` — choices created / dropped (so |x'| = |x| + n_fresh − n_stale);
* ``q_fwd`` / ``q_rev`` — prior densities of resampled targets at the new / old value.

The MH log-acceptance of a proposal that resamples or sets targets is then
``lp_new − lp_old + q_rev − q_fwd`` (+ the proposal's own correction and |x|/|x'| for LMH).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from thrifty import _context
from thrifty.core.address import as_name, fmt
from thrifty.core.trace import (
    DETERMINISTIC,
    EMPTY_BLOCK,
    FACTOR,
    LATENT,
    OBSERVED,
    Block,
    Site,
)
from thrifty.errors import DistributionError, ModelError, NumericalError, SelectionError

NEG_INF = -math.inf


class _Resample:
    """Target marker: draw this choice afresh from its prior (LMH, prior proposals)."""

    def __repr__(self) -> str:
        return "RESAMPLE"


RESAMPLE = _Resample()


class ZeroProbability(Exception):
    """A proposed value outside its support: the proposal has probability zero, so the run
    stops there (executing on would feed an impossible value to what depends on it)."""

    def __init__(self, addr, d, value):
        super().__init__(f"{value!r} at {fmt(addr)} is outside the support of {d!r}")
        self.addr, self.dist, self.value = addr, d, value


class StructureChange(Exception):
    """Raised in strict runs when a choice would have to be created (Gibbs, PGAS rescoring)."""

    def __init__(self, addr):
        super().__init__(f"re-execution would create the new choice {fmt(addr)}")
        self.addr = addr


@dataclass
class Plan:
    """Which parts of the structured nodes a run executes when nothing before them changed.

    ``plates``: plate address → sorted element indices; ``steps``: chain address → steps.
    ``lazy``: when something before a plate did change, run only the planned elements and leave
    the others stale (subsampling) instead of running them all (exact kernels).
    """

    plates: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)
    lazy: bool = False

    def add_elements(self, plate_addr, elems) -> None:
        old = self.plates.get(plate_addr)
        elems = np.asarray(elems, dtype=np.int64).reshape(-1)
        self.plates[plate_addr] = sorted_unique(
            elems if old is None else np.concatenate([old, elems])
        )

    def add_step(self, chain_addr, t) -> None:
        self.steps.setdefault(chain_addr, set()).add(int(t))


EMPTY_PLAN = Plan()


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` for small integer arrays, by sorting (NumPy's hash path is slower here)."""
    if len(a) < 2:
        return a.copy()
    if bool(np.all(a[1:] > a[:-1])):  # already sorted and distinct (the usual case)
        return a
    a = np.sort(a)
    if a[-1] == a[0] + len(a) - 1 and (len(a) < 3 or bool(np.all(a[1:] != a[:-1]))):
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


@dataclass
class VecTarget:
    """Targets at plate elements: ``elems`` (sorted) and their new ``values`` (or RESAMPLE)."""

    elems: np.ndarray
    values: object


def total(lp) -> float:
    """A log-density (scalar or array over value dimensions) as a Python float."""
    return lp if type(lp) is float else float(np.sum(lp))


def check_dist(d, addr) -> None:
    if d._error is not None:
        raise DistributionError(f"{type(d).__name__} at address {fmt(addr)}: {d._error}")


def nan_error(addr, d, value) -> NumericalError:
    return NumericalError(
        f"log-density is NaN at address {fmt(addr)}: {d!r} evaluated at {value!r}"
    )


def outside_support(addr, d, value) -> DistributionError:
    v = value if np.ndim(value) == 0 else f"array of shape {np.shape(value)}"
    return DistributionError(
        f"observed value {v} at address {fmt(addr)} is outside the support of "
        f"{type(d).__name__} ({d.domain!r})"
    )


class BlockFrame:
    """Executes one block (the model body or one markov step) site by site."""

    __slots__ = (
        "dirty",
        "matched",
        "n_stale",
        "new",
        "old",
        "prefix",
        "run",
        "scope",
        "stale_lp",
        "step_of",
    )

    def __init__(self, run: Run, prefix: tuple, old: Block | None, dirty: bool, step_of=None):
        self.run = run
        self.step_of = step_of  # (chain address, t) for a markov step
        self.prefix = prefix
        self.scope = ()
        self.old = old if old is not None else EMPTY_BLOCK
        self.new = Block()
        self.dirty = dirty
        self.matched = 0  # old latent sites met again
        self.stale_lp = 0.0  # old latent sites replaced because out of support
        self.n_stale = 0

    # -- names ----------------------------------------------------------------------------------
    def _local(self, name) -> tuple:
        local = self.scope + as_name(name) if self.scope else as_name(name)
        new = self.new
        if local in new.sites or local in new.plates or local in new.chains:
            raise ModelError(f"address {fmt(self.prefix + local)} is used twice in one execution")
        return local

    # -- primitives -----------------------------------------------------------------------------
    def sample(self, name, d):
        local = self._local(name)
        if d._error is not None:
            check_dist(d, self.prefix + local)
        run = self.run
        old = self.old.sites.get(local)
        if old is not None and old.kind != LATENT:
            old = None
        targets = run.targets
        target = targets.get(self.prefix + local, targets) if targets else targets
        if target is not targets:  # a proposed value or a resample
            run.n_seen += 1
            self.dirty = True
            if target is RESAMPLE:
                if old is None:
                    raise SelectionError(f"cannot resample {fmt(self.prefix + local)}: no value")
                value = d.sample(run.rng)
                lp = total(d.log_prob(value))
                run.q_fwd += lp
                run.q_rev += total(d.log_prob(old.value))
            else:
                value = target
                lp = total(d.log_prob(value))
                if not lp > NEG_INF:
                    raise ZeroProbability(self.prefix + local, d, value)
            if old is not None:
                self.matched += 1
            run.lp_new += lp
        elif old is not None:
            self.matched += 1
            value = old.value
            lp = d.log_prob(value)
            if type(lp) is not float:
                lp = total(lp)
            if lp == NEG_INF and not run.strict:  # out of support: stale old value, fresh new one
                self.stale_lp += old.lp
                self.n_stale += 1
                value = d.sample(run.rng)
                lp = total(d.log_prob(value))
                run.n_fresh += 1
                run.lp_fresh += lp
                self.dirty = True
            else:
                run.lp_new += lp
        else:
            if run.strict:
                raise StructureChange(self.prefix + local)
            value = d.sample(run.rng)
            lp = total(d.log_prob(value))
            run.n_fresh += 1
            run.lp_fresh += lp
            self.dirty = True
        if lp != lp:
            raise nan_error(self.prefix + local, d, value)
        new = self.new
        new.sites[local] = Site(value, lp, LATENT, d.is_discrete, d)
        new.lp += lp
        new.n_latent += 1
        return value

    def observe(self, name, d, value):
        local = self._local(name)
        if d._error is not None:
            check_dist(d, self.prefix + local)
        run = self.run
        if run.new_obs is not None:
            value = d.sample(run.rng, np.shape(value)[: np.ndim(value) - len(d.shape)])
            run.new_obs[self.prefix + local] = value
        elif run.obs_values is not None:
            value = run.obs_values.get(self.prefix + local, value)
        lp = d.log_prob(value)
        if type(lp) is not float:
            lp = total(lp)
        if not lp > NEG_INF:
            if lp != lp:
                raise nan_error(self.prefix + local, d, value)
            if not d.in_domain(value):
                raise outside_support(self.prefix + local, d, value)
            run.note_impossible(self.prefix + local, d, value)
        new = self.new
        new.sites[local] = Site(value, lp, OBSERVED)
        new.lp += lp
        run.lp_new += lp
        if run.captured is not None:
            run.captured.append((self.prefix + local, d, value, None))
        return value

    def factor(self, name, log_weight):
        local = self._local(name)
        lp = total(log_weight)
        if lp != lp:
            raise NumericalError(f"factor at address {fmt(self.prefix + local)} is NaN")
        if lp == NEG_INF:
            self.run.note_impossible(self.prefix + local, None, None)
        self.new.sites[local] = Site(None, lp, FACTOR)
        self.new.lp += lp
        self.run.lp_new += lp

    def deterministic(self, name, value):
        local = self._local(name)
        self.new.sites[local] = Site(value, 0.0, DETERMINISTIC)
        return value

    def mem_read(self, mem, key):
        from thrifty.core.mem import read_scalar

        return read_scalar(self, mem, key)

    def plate(self, name, size):
        from thrifty.core.plate import PlateContext

        return PlateContext(self, self._local(name), size)

    def markov(self, name, step, length, init, args):
        from thrifty.core.markov import run_chain

        return run_chain(self, self._local(name), step, length, init, args)

    # -- end of the block -----------------------------------------------------------------------
    def finalize(self) -> None:
        """Account for the old block: its kept part goes to ``lp_old``, the rest is stale."""
        old, new, run = self.old, self.new, self.run
        stale_lp, n_stale = self.stale_lp, self.n_stale
        if self.matched < old.n_latent:
            for k in old.latent_names():
                s = new.sites.get(k)
                if s is None or s.kind != LATENT:
                    stale_lp += old.sites[k].lp
                    n_stale += 1
        run.lp_old += old.lp - stale_lp
        run.n_stale += n_stale
        run.lp_stale += stale_lp
        for k, node in old.plates.items():
            if k not in new.plates:
                run.drop_node(node, self.prefix + k)
        for k, node in old.chains.items():
            if k not in new.chains:
                run.drop_node(node, self.prefix + k)
        if old.mem_reads or new.mem_reads:
            from thrifty.core.mem import account_block_reads

            chain, t = self.step_of if self.step_of is not None else (None, None)
            account_block_reads(run, old, new, chain, t)


class Run:
    """One execution of ``trace.program`` against ``trace`` (see the module docstring).

    Parameters
    ----------
    trace : the trace to replay (an empty trace simulates the program from its prior).
    rng : a ``numpy.random.Generator``.
    targets : address → proposed value or ``RESAMPLE``, for choices outside plates and mem keys.
    vec : (plate address, address within the element) → :class:`VecTarget`.
    plan : the :class:`Plan` of plate elements and markov steps to execute.
    strict : never create or resample a choice: a missing one raises :class:`StructureChange`
        and an out-of-support one scores ``-inf`` (enumerative Gibbs, PGAS rescoring).
    everything : re-execute every plate element and markov step (rescoring from scratch; this
        is how stale elements are refreshed).
    capture : record every observation executed in ``run.captured`` as (address, distribution,
        value, element indices) — how kernels that need the likelihood's structure (SMH's GLM
        families) find it; plate observations have ``"*"`` for the element in the address.
    simulate_observations : draw every observed value afresh from its distribution (given the
        replayed latent choices) and keep it in ``trace.obs_values`` on commit — the
        "y ~ p(y | x)" half of a Geweke successive-conditional simulator.
    """

    def __init__(
        self,
        trace,
        rng,
        targets: dict | None = None,
        vec: dict | None = None,
        plan: Plan | None = None,
        strict: bool = False,
        everything: bool = False,
        simulate_observations: bool = False,
        capture: bool = False,
    ):
        self.trace = trace
        # (address, distribution, value) of every observation executed (plates: the plate
        # address with ``"*"`` in place of the element and the executed index array appended)
        self.captured: list | None = [] if capture else None
        self.everything = everything or simulate_observations
        self.new_obs: dict | None = {} if simulate_observations else None
        self.rng = rng
        self.targets = targets or None
        self.vec = vec or None
        self.plan = plan or EMPTY_PLAN
        self.strict = strict
        self.obs_values = trace.obs_values
        self.lp_new = 0.0
        self.lp_old = 0.0
        self.lp_fresh = 0.0
        self.lp_stale = 0.0
        self.n_fresh = 0
        self.n_stale = 0
        self.q_fwd = 0.0
        self.q_rev = 0.0
        self.n_seen = 0  # targets met
        self.work_elements = 0  # plate elements executed
        self.work_steps = 0  # markov steps executed
        self.vec_seen: set = set()
        self.plate_updates: list = []
        self.plate_frames: dict = {}
        self.chain_frames: dict = {}  # chain address → {t: new step block} (executed steps)
        self.mem_fns: dict = {}  # mem address → its function, as defined in this execution
        # the local sections a lazy run met: ("plate" | "chain", address, number of sections)
        self.sections: list = []
        self.chain_updates: list = []
        self.mem_journals: dict = {}
        self.impossible: list = []
        self.root: Block | None = None
        self.frame = None
        self.output = None
        self.full = True  # every plate ran all its elements (the output is the program's)
        self.aborted: ZeroProbability | None = None

    # -- execution ------------------------------------------------------------------------------
    def execute(self) -> Run:
        program = self.trace.program
        frame = BlockFrame(self, (), self.trace.root, dirty=self.everything)
        self.frame = frame
        _context.RUNS.append(self)
        try:
            self.output = program.fn(*program.args, **program.kwargs)
        except ZeroProbability as e:  # a proposal outside the support: weight 0, never committed
            self.aborted = e
            self.lp_new = NEG_INF
            return self
        finally:
            _context.RUNS.pop()
            self.frame = None
        frame.finalize()
        self.root = frame.new
        if self.targets and self.n_seen < len(self.targets):
            self._resolve_unread_mem_targets()
        for journal in self.mem_journals.values():
            journal.finish(self)
        return self

    def _resolve_unread_mem_targets(self) -> None:
        """A proposed mem value whose readers were not executed (a lazy run): score it anyway."""
        from thrifty.core.mem import Mem, journal

        for addr in self.targets:
            maddr, key = addr[:-1], addr[-1]
            fn = self.mem_fns.get(maddr)
            table = self.trace.mems.get(maddr)
            if fn is None or table is None or key not in table.values:
                continue
            j = journal(self, maddr)
            if key not in j.entries:
                j.resolve(self, Mem(maddr, fn), key)

    @property
    def log_weight(self) -> float:
        """``lp_new − lp_old + q_rev − q_fwd``: the MH log-ratio before proposal corrections."""
        return self.lp_new - self.lp_old + self.q_rev - self.q_fwd

    # -- bookkeeping used by the frames ---------------------------------------------------------
    def note_impossible(self, addr, d, value) -> None:
        self.impossible.append((addr, d, value))

    def drop_node(self, node, addr) -> None:
        """A plate, chain or step of the old trace that this execution did not create again."""
        from thrifty.core.mem import account_dropped

        latent_lp = node.latent_lp()
        self.lp_old += node.total_lp() - latent_lp
        self.lp_stale += latent_lp
        self.n_stale += node.n_latent
        account_dropped(self, node, addr)

    def check_targets(self, n_scalar: int, vec_keys=()) -> None:
        """Raise if some targets were not met (an address the program did not reach)."""
        if self.aborted is not None:  # stopped at an impossible proposal: nothing to check
            return
        missing = []
        if self.n_seen < n_scalar:
            seen = self._seen_addresses()
            missing += [a for a in self.targets if a not in seen]
        missing += [k for k in vec_keys if k not in self.vec_seen]
        if missing:
            names = ", ".join(
                fmt(a[0] + ("*",) + a[1])
                if len(a) == 2 and isinstance(a[0], tuple) and isinstance(a[1], tuple)
                else fmt(a)
                for a in missing[:5]
            )
            raise SelectionError(f"the program did not reach the address(es) {names}")

    def _seen_addresses(self) -> set:
        from thrifty.core.locate import iter_block_addresses

        seen = set(iter_block_addresses(self.root, ()))
        for addr, journal in self.mem_journals.items():
            seen.update(addr + (k,) for k in journal.entries)
        return seen

    def _mark_mem_readers_stale(self, trace) -> None:
        """A lazy run changed mem keys: plates that read them may now have stale elements."""
        from thrifty.core.locate import find_plate

        for addr, journal in self.mem_journals.items():
            table = trace.mems.get(addr)
            if table is None or not any(e.changed for e in journal.entries.values()):
                continue
            for plate in table.plate_readers:
                try:
                    find_plate(trace, plate).maybe_stale = True
                except KeyError:
                    pass

    # -- commit ---------------------------------------------------------------------------------
    def commit(self) -> None:
        """Make this execution the trace's current state."""
        if self.aborted is not None:
            raise RuntimeError(f"cannot commit a run with probability zero: {self.aborted}")
        trace = self.trace
        trace.clock += 1
        clock = trace.clock
        if self.n_fresh or self.n_stale:
            trace.structure += 1
            if trace._n_latent is not None:
                trace._n_latent += self.n_fresh - self.n_stale
        for upd in self.plate_updates:
            upd.apply(clock)
        for upd in self.chain_updates:
            upd.apply(clock)
        for journal in self.mem_journals.values():
            journal.apply(trace, clock)
        if self.new_obs is not None:
            trace.obs_values = self.new_obs
        trace.root = self.root
        trace.output = self.output
        trace.output_full = self.full
        if self.plan.lazy:
            trace.maybe_stale = True
            self._mark_mem_readers_stale(trace)
        elif self.everything:
            trace.maybe_stale = False
