"""Subsampled MH: approximate MH whose cost is sublinear in the data (paper 000 §3, 004 §4).

For a global choice θ the change θ → θ' splits into a *global* part — everything outside the
plates and chains it reaches: its prior, the proposal ratio, other top-level sites — and N
*local sections*, each one element of a plate, one step of a markov chain (states held fixed),
or one reader of a memoized value.  The MH decision  log u < G + Σ_i l_i  is the test
μ = mean(l_i) > μ0 = (log u − G)/N of
:func:`~thrifty.inference.numerics.sequential.sequential_test`, decided from minibatches of sections
(000 Alg. 2, 3):

1. propose θ'; one *lazy* execution with no section planned gives G exactly and the section
   containers (000 §3.1: the plates / chains that θ reaches, or θ's mem readers);
2. draw u, set μ0 = (log u − G)/N;
3. each minibatch: execute its sections under θ' (lazily: nothing else runs), and under θ where
   the stored log-density is stale (000 §3.5: sections are rescored when next read, never by a
   sweep); l_i = new − old;
4. accept iff the test says μ > μ0; the sections evaluated under the chosen value are stored, the
   others are left stale.

When no section exists the kernel is exact MH (with a one-time warning).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections import deque
from dataclasses import dataclass

import numpy as np

from thrifty._args import checked_keywords, int_arg
from thrifty._warn import user_stacklevel
from thrifty.core.address import fmt
from thrifty.core.engine import (
    LAZY,
    LAZY_CAPTURE,
    Plan,
    locate,
    memo_density_changes,
    plan_elements,
    plan_for,
    plan_steps,
    run_lp,
    stored_lp,
)
from thrifty.core.engine import (
    stale as stale_sections,
)
from thrifty.errors import ArgumentError, SelectionError
from thrifty.inference.numerics.sequential import TestOutcome, sequential_test
from thrifty.inference.proposals.base import Proposal, drift
from thrifty.inference.selecting import Selecting
from thrifty.inference.selection import One
from thrifty.inference.subsampling.proxy import TaylorProxy

# The sequential test draws at most this fraction of the N sections; past it exact MH's decision
# from one full execution is cheaper (see ``max_fraction`` of :func:`subsampled_mh`).
MAX_FRACTION = 1 / 32
# Each execution of the test reads this many times the minibatches of the one before (1, 2, 4,
# ... minibatches).
GROWTH = 2.0


class Budget:
    """How many sections the sequential test may read before exact MH decides: all of
    ``max_fraction``·N while the test settles enough decisions within it, else ``k0``
    minibatches.  A rule of cost, not of the answer.

    A section read in a random minibatch costs tens of times an element of one vectorised pass
    over the plate, and each minibatch execution has a fixed cost.  With the budget at
    ``max_fraction``·N, a share f of the decisions settle and each decision reads R sections
    on average; one that does not settle then costs a full pass P as well.  The reads pay when
    f·P > R, and R/P depends on the model, which the chain cannot see without timing it (and
    a budget that depended on timings would make the draws depend on them).  Measured at
    N = 10⁶, ``max_fraction`` = 1/32: a normal mean with a proposal scaled to the posterior,
    f ≈ 0.16 and R ≈ 1.3 P (``benchmarks/budget_economics.py``: the reads cost more than they
    save); the large fixed steps of 000 Fig. 5 on the logistic model, f ≈ 0.65 and
    R ≈ 0.5–0.65 P (``benchmarks/sublinearity.py``: they pay, and the median decision is the
    test's).  The rule keeps ``max_fraction``·N
    while more than ``SHARE`` of the last ``MEMORY`` decisions that were allowed all of it
    settled (fewer pay for the reads only where R < ``SHARE``·P), else falls to ``k0``
    minibatches, with which the test still settles the proposals that one minibatch rejects.
    It starts at ``max_fraction``·N, decides first after two windows of ``WINDOW`` decisions
    and again after each window.  While the budget is ``k0`` minibatches, every ``PROBE``-th
    decision is a probe: its test is still allowed ``max_fraction``·N, so the memory follows
    the chain and the budget can come back, but its decision is exact MH's (one full pass
    after the reads), so probes add none of the test's errors to the chain (a normal mean at
    N = 2·10⁵ and ε = 0.01, 20 chains: posterior sd 1.03× the exact one, as before probes;
    6% with the probes' decisions left to the test).

    The rule reads only the chain's own decisions, so the same seed gives the same budgets and
    draws.  Whatever the budget, a decision the test settles within it is the test's (000
    Alg. 2 on the same minibatches) and one it does not settle is exact MH's: no step errs
    where the test alone would not, and 004 §3's bound on the test's error holds."""

    WINDOW = 8
    PROBE = 16
    MEMORY = 32
    SHARE = 0.4

    def __init__(self, top: float):
        self.top = top  # the largest fraction (max_fraction)
        self.full = True  # the budget is top·N (else the first minibatches)
        self.decisions = 0
        self.probing = False  # whether the coming decision is allowed top·N
        self.measuring = False  # ... as a probe: the test only measured, exact MH decides
        self.settled: deque = deque(maxlen=self.MEMORY)  # of the decisions allowed top·N

    def max_n(self, N: int, floor: int) -> int:
        """Sections the coming decision may read of ``N``: ``max_fraction``·N or ``floor``
        (its first minibatches; the caller takes exact MH's decision when ``max_fraction``·N
        is fewer)."""
        self.probing = self.full or self.decisions % self.PROBE == 0
        self.measuring = self.probing and not self.full
        return math.ceil(self.top * N) if self.probing else floor

    def record(self, settled: bool) -> None:
        """The coming decision (see :meth:`max_n`) settled within its budget or not."""
        self.decisions += 1
        if self.probing:
            self.settled.append(settled)
        if self.decisions % self.WINDOW == 0 and self.decisions >= 2 * self.WINDOW:
            self.full = sum(self.settled) > self.SHARE * len(self.settled)


@dataclass
class Container:
    """Local sections of one kind: elements of a plate or steps of a chain (``index`` lists
    them when only some are sections — a mem key's readers — else all ``size``)."""

    kind: str
    addr: tuple
    size: int
    index: np.ndarray | None = None


class Sections:
    """The N local sections of a proposal, numbered 0..N-1 across containers."""

    def __init__(self, containers: list[Container]):
        self.containers = containers
        self.bounds = np.cumsum([0] + [c.size for c in containers])
        self.N = int(self.bounds[-1])

    def split(self, idx: np.ndarray) -> list[tuple[Container, np.ndarray, np.ndarray]]:
        """(container, its elements / steps, positions in ``idx``) for each container met by
        the *sorted* section numbers ``idx`` (each container's part is a contiguous slice)."""
        cut = np.searchsorted(idx, self.bounds)
        out = []
        for k, c in enumerate(self.containers):
            a, b = int(cut[k]), int(cut[k + 1])
            if a < b:
                local = idx[a:b] - self.bounds[k]
                elems = local if c.index is None else c.index[local]
                out.append((c, elems, np.arange(a, b)))
        return out


def _plan_of(trace, parts) -> Plan:
    """The plan that executes the given sections: ``(container, elements or steps)`` pairs."""
    plan = Plan()
    for c, items in parts:
        if c.kind == "plate":
            plan_elements(trace, plan, c.addr, items)
        else:
            plan_steps(trace, plan, c.addr, items)
    return plan


class ProgramSections:
    """The sections of one proposal scored by executing the program on them (any plate,
    markov chain or mem reader): l_i = log-density under θ' − under θ."""

    offset = 0.0  # Σ_i l_i = offset + Σ_i evaluate(i)
    full_pass = True  # past a budget, exact MH's decision from one full execution is cheaper

    def __init__(self, kernel, trace, rng, targets, sections: Sections):
        self.kernel, self.trace, self.rng = kernel, trace, rng
        self.targets, self.sections = targets, sections
        self.N = sections.N
        self.used: list = []

    def evaluate(self, idx: np.ndarray) -> np.ndarray:
        self.used.append(idx)
        return self.kernel._log_ratios(self.trace, self.rng, self.targets, self.sections, idx)

    def commit(self, skeleton) -> None:
        """Keep the sections evaluated under θ', the rest stale (000 §3.5)."""
        k, trace = self.kernel, self.trace
        plan = k._plan(trace, self.sections, np.concatenate(self.used))
        k.execute(trace, self.rng, targets=self.targets, plan=plan, mode=LAZY).commit()


class _Sorter:
    """Sorts distinct section numbers 0 ≤ i < N: ``sort(idx)`` → (sorted, back) with
    ``sorted[back] == idx`` (``back`` None when ``idx`` is sorted already, as the chunks of
    large populations are).  Large minibatches go through a membership mask (O(N) scan, no
    comparison sort: an argsort of 3·10⁴ random numbers costs ten times as much)."""

    def __init__(self, N: int):
        self.N = N
        self.mask = np.zeros(N, dtype=bool)
        self.rank = np.empty(N, dtype=np.int64)

    def sort(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        if len(idx) < 2 or bool(np.all(idx[1:] > idx[:-1])):  # sorted chunks of large N
            return idx, None
        if 32 * len(idx) < self.N:
            order = np.argsort(idx)
            back = np.empty_like(order)
            back[order] = np.arange(len(order))
            return idx[order], back
        self.mask[idx] = True
        ordered = np.flatnonzero(self.mask)
        self.mask[ordered] = False
        self.rank[ordered] = np.arange(len(ordered))
        return ordered, self.rank[idx]


class SubsampledMH(Selecting):
    """Approximate MH with the sequential test; see :func:`thrifty.subsampled_mh`."""

    name = "subsampled_mh"

    def __init__(
        self, selection, batch_size=100, epsilon=0.01, proposal=None, k0=1, proxy=None,
        theta_hat=None, max_fraction=MAX_FRACTION,
    ):
        super().__init__(selection)
        self.batch_size = int_arg(self.name, "batch_size", batch_size)
        if isinstance(epsilon, bool) or not 0 <= epsilon < 1:
            raise ArgumentError(f"{self.name}: epsilon must be in [0, 1), got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.k0 = int_arg(self.name, "k0", k0)
        if (isinstance(max_fraction, bool) or not isinstance(max_fraction, numbers.Real)
                or not 0 < max_fraction <= 1):
            raise ArgumentError(
                f"{self.name}: max_fraction must be a number in (0, 1] (the share of the "
                f"sections the test may read), got {max_fraction!r}"
            )
        self.max_fraction = float(max_fraction)
        self.budget = Budget(self.max_fraction)
        self.proposal = proposal if proposal is not None else drift()
        if not isinstance(self.proposal, Proposal):
            raise ArgumentError(f"subsampled_mh: proposal must be a proposal, got {proposal!r}")
        if proxy not in (None, "taylor"):
            raise ArgumentError(f"{self.name}: proxy must be None or 'taylor', got {proxy!r}")
        if theta_hat is not None and proxy is None:
            raise ArgumentError(f"{self.name}: theta_hat is the centre of proxy='taylor'")
        self.proxy = None if proxy is None else TaylorProxy(theta_hat)
        if self.proxy is not None:
            self.info.count("setups", 0)  # reported as setups_per_step
        self._warned = False
        self._mask = None  # reused membership mask of the sequential test
        self._sorter = None  # scratch arrays to sort minibatches of section numbers

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_mask"] = state["_sorter"] = None  # O(N) scratch arrays, rebuilt on use
        return state

    def label(self) -> str:
        proxy = "" if self.proxy is None else ", proxy='taylor'"
        return (
            f"subsampled_mh({self.selection!r}, batch_size={self.batch_size}, "
            f"epsilon={self.epsilon}, {self.proposal!r}{proxy})"
        )

    def start(self, trace, rng, init: dict) -> None:
        """With ``th.drift()`` (adapted) or ``proxy="taylor"``, start a fresh chain at a draw
        from the Laplace approximation at the mode θ̂, and an adapted proposal at its
        covariance (:mod:`thrifty.inference.proposals.laplace_start`), unless ``init`` gives the
        choice: the Taylor remainders are small, and most decisions settle from one minibatch, only
        near θ̂.  The proxy keeps the set-up that found θ̂.  (Not for ``th.one``: its blocks are
        updated one at a time.)"""
        if (self.proxy is not None or self._adapts) and not isinstance(self.selection, One):
            from thrifty.inference.proposals.laplace_start import laplace_start

            laplace_start(self, trace, rng, init, proxy=self.proxy)

    # -- one step ---------------------------------------------------------------------------
    def global_choices(self, trace, rng):
        """The selected choices (one block for ``th.one``); ``None`` when there are none now.
        They must be global: choices local to plate elements have no sections."""
        cs = self.choices(trace)
        if cs is None:
            return None
        if isinstance(self.selection, One):
            cs = cs.pick_block(rng)
        if cs.groups:
            g = cs.groups[0]
            raise SelectionError(
                f"{self.name} updates global choices; {fmt(g.plate_addr + ('*',) + g.rel)} "
                "is local to plate elements (use th.mh or th.gibbs for those)"
            )
        return cs

    def _step(self, trace, rng):
        cs = self.global_choices(trace, rng)
        if cs is None:
            return trace
        locs = [locate(trace, a) for a in cs.scalars]
        targets, log_q = self._propose(trace, locs, rng)
        self.info.proposed += 1
        accepted = self.decide(trace, rng, locs, targets, log_q, math.log(rng.random()))
        self.info.accepted += int(accepted)
        if self.tuning and self._adapts:  # burn-in: Robbins–Monro on the 0/1 outcome
            self.proposal.learn_block(float(accepted), accepted)
        return trace

    def decide(self, trace, rng, locs, targets, log_q, log_u) -> bool:
        """The MH decision for the proposal ``targets`` and uniform ``exp(log_u)``; commits the
        proposal when it is accepted.  (Separate from ``_step`` so tests can fix u.)"""
        # 1. the global part, and which sections the change reaches (000 §3.1)
        skeleton = self.execute(
            trace, rng, targets=targets, mode=LAZY_CAPTURE if self.proxy is not None else LAZY
        )
        if skeleton.aborted is not None:  # a proposal outside the support
            return False
        global_lr = skeleton.log_weight + log_q
        scorer = self.scorer(trace, rng, skeleton, locs, targets)
        if scorer.N == 0:
            self._warn_exact()
            if scorer.full_pass:  # (a step without the test: its budget counts 0)
                self.info.count("budget", 0)
            if log_u < global_lr:
                skeleton.commit()
                return True
            return False

        # 2.–3. the sequential test on minibatches of sections (000 Alg. 2, 3)
        mu0 = (log_u - global_lr - scorer.offset) / scorer.N
        max_n, measuring = None, False
        floor = self.batch_size * self.k0  # (the minibatches before the first test)
        if scorer.full_pass:  # past the budget, one full pass is cheaper (Budget)
            if math.ceil(self.max_fraction * scorer.N) < floor:  # too few for the test: exact
                self._warn_too_few(scorer.N, floor)
                self.info.count("budget", 0)
                return self._exact_decision(trace, rng, locs, targets, log_q, log_u, scorer.N)
            max_n = self.budget.max_n(scorer.N, floor)
            measuring = self.budget.measuring
            self.info.count("budget", max_n)
        if self._mask is None or len(self._mask) != scorer.N:
            self._mask = np.zeros(scorer.N, dtype=bool)
        out = sequential_test(
            mu0,
            scorer.evaluate,
            scorer.N,
            self.batch_size,
            self.epsilon,
            rng,
            self.k0,
            growth=GROWTH,
            mask=self._mask,
            max_n=max_n,
        )
        if max_n is not None:
            self.budget.record(out.decided)
        if not out.decided or measuring:  # (a probe's decision is exact MH's: Budget)
            return self._exact_decision(trace, rng, locs, targets, log_q, log_u, scorer.N, out)
        self.info.count("full_passes", 0)
        self.info.count("sections", out.n)
        self.info.count("sections_evaluated", out.evaluated)
        self.info.count("ran_to_N", int(out.exact))

        # 4. keep the sections evaluated under the chosen value, the rest stale (000 §3.5)
        if out.accept:
            scorer.commit(skeleton)
        self.last_outcome = out
        return out.accept

    def _exact_decision(self, trace, rng, locs, targets, log_q, log_u, N, out=None) -> bool:
        """Exact MH's decision for the same proposal and u: one full execution of what the
        change reaches (as ``th.mh``), every section scored and, on acceptance, kept.  ``out``:
        the undecided test that came first (its sections are counted as evaluated)."""
        run = self.execute(trace, rng, targets=targets, plan=plan_for(trace, locs))
        if run.aborted is None:
            self._refuse_memoized_dependents(run)  # as when the test reads sections
        accept = run.aborted is None and log_u < run.log_weight + log_q
        if accept:
            run.commit()
        evaluated = N + (0 if out is None else out.evaluated)
        self.info.count("full_passes", 1)
        self.info.count("sections", N)
        self.info.count("sections_evaluated", evaluated)
        self.info.count("ran_to_N", 1)
        self.last_outcome = TestOutcome(
            accept, N, 0 if out is None else out.batches, True, math.nan, 0.0, evaluated,
            1 if out is None else out.calls + 1,
        )
        return accept

    def scorer(self, trace, rng, skeleton, locs, targets):
        """What the test reads for this proposal: ``N`` sections, ``evaluate(idx)`` and an
        ``offset`` with Σ_i l_i = offset + Σ_i evaluate(i), and ``commit(skeleton)`` for an
        accepted proposal — the l_i themselves
        (:class:`ProgramSections`), or their Taylor remainders (:mod:`.proxy`)."""
        if skeleton.n_fresh or skeleton.n_stale:
            raise SelectionError(
                f"{self.name} on {self.selection!r}: the proposal changes which choices exist; "
                "subsampling needs a fixed structure (use th.lmh or th.mh)"
            )
        if self.proxy is not None:
            scorer, fresh = self.proxy.sections(self, trace, skeleton, locs, targets)
            self.info.count("setups", int(fresh))
            return scorer
        return ProgramSections(self, trace, rng, targets, self._sections(trace, skeleton, locs))

    def _propose(self, trace, locs, rng):
        for loc in locs:
            if loc.kind == "element":
                raise SelectionError(f"subsampled_mh: {fmt(loc.addr)} is local to a plate")
        return self.proposal.propose_block(trace, locs, rng)  # (targets, log q-ratio)

    def _sections(self, trace, skeleton, locs) -> Sections:
        containers = [Container(kind, addr, size) for kind, addr, size in skeleton.sections]
        whole = {c.addr for c in containers}  # containers all of whose elements are sections
        for loc in locs:
            if loc.kind != "mem":
                continue
            for plate, elems in trace.mems[loc.mem_addr].readers(loc.addr[-1]).items():
                if plate not in whole:  # else its readers are counted already
                    containers.append(Container("plate", plate, len(elems), np.sort(elems)))
        return Sections(containers)

    def _plan(self, trace, sections, idx) -> Plan:
        return _plan_of(trace, [(c, elems) for c, elems, _ in sections.split(np.sort(idx))])

    def _log_ratios(self, trace, rng, targets, sections, idx) -> np.ndarray:
        """l_i = log-density of section i under θ' minus under θ (stale ones rescored)."""
        if self._sorter is None or self._sorter.N != sections.N:
            self._sorter = _Sorter(sections.N)
        ordered, back = self._sorter.sort(idx)
        l = self._log_ratios_sorted(trace, rng, targets, sections, ordered)
        return l if back is None else l[back]

    def _log_ratios_sorted(self, trace, rng, targets, sections, idx) -> np.ndarray:
        """``_log_ratios`` for sorted ``idx``: each container's elements come out sorted, so a
        run planned on exactly them executes them in that order (positions = identity)."""
        parts = sections.split(idx)
        old = np.empty(len(idx))
        stale: list = []
        for c, elems, pos in parts:
            old[pos] = stored_lp(trace, c.kind, c.addr, elems)
            bad = stale_sections(trace, c.kind, c.addr, elems)
            if len(bad):
                stale.append((c, bad, pos[np.searchsorted(elems, bad)]))
        if stale:  # rescore under θ what is out of date, and keep it (a refresh)
            refresh = self.rescore(trace, rng, _plan_of(trace, [(c, bad) for c, bad, _ in stale]))
            for c, bad, pos in stale:
                old[pos] = run_lp(refresh, c.kind, c.addr, bad)
        plan = _plan_of(trace, [(c, elems) for c, elems, _ in parts])
        run = self.execute(trace, rng, targets=targets, plan=plan, mode=LAZY)
        self._refuse_memoized_dependents(run)
        new = np.empty(len(idx))
        for c, elems, pos in parts:
            new[pos] = run_lp(run, c.kind, c.addr, elems)
        return new - old

    def _refuse_memoized_dependents(self, run) -> None:
        """A memoized value whose density the proposal changes (``w = th.mem(lambda k:
        dist.Normal(0, tau))`` with ``tau`` selected) is neither global (it is read, and
        rescored, only by the sections that read it) nor a section: refused."""
        changes = memo_density_changes(run)
        if changes:
            addr, key = changes[0]
            raise SelectionError(
                f"{self.name} on {self.selection!r}: the proposal changes the density of "
                f"the memoized value {fmt(addr + (key,))}, which is not a local "
                "section (a hyperparameter of memoized values); use th.mh"
            )

    def _warn_too_few(self, N: int, floor: int) -> None:
        """The choice's N sections hold fewer than the test's first minibatches within
        ``max_fraction`` (not under ``th.one``, whose blocks differ in N: a memoized key read
        by few sections is one block among many)."""
        if not isinstance(self.selection, One):
            self._warn_once(
                f"{N} sections, of which max_fraction ({self.max_fraction:g}) is "
                f"{math.ceil(self.max_fraction * N)}, fewer than the {floor} of the test's first "
                f"minibatches (k0={self.k0}, batch_size={self.batch_size}): every step is an "
                "exact MH step; lower batch_size or raise max_fraction to subsample, or use th.mh"
            )

    def _warn_exact(self) -> None:
        self._warn_once(
            "what depends on it does not split into plate elements, markov steps or mem "
            "readers; every step is an exact MH step"
        )

    def _warn_once(self, what: str) -> None:
        """Once per kernel: why its steps are exact MH steps."""
        if not self._warned:
            self._warned = True
            warnings.warn(f"subsampled_mh on {self.selection!r}: {what}",
                          stacklevel=user_stacklevel())


@checked_keywords
def subsampled_mh(
    selection,
    batch_size: int = 100,
    epsilon: float = 0.01,
    proposal=None,
    k0: int = 1,
    proxy: str | None = None,
    theta_hat=None,
    max_fraction: float = MAX_FRACTION,
) -> SubsampledMH:
    """Approximate MH on a global choice, deciding from minibatches of its local sections.

    ``batch_size`` sections per minibatch, ``epsilon`` the tolerance of the sequential test
    (0: exact MH at full cost), ``proposal``, ``k0`` minibatches before the first test.

    The default proposal is ``th.drift()``, the random walk that adapts during the burn-in as
    in ``th.mh`` (:mod:`thrifty.inference.proposals.adapt`; Robbins–Monro on each decision's 0/1
    outcome, towards acceptance 0.234 for a block, 0.44 for one coordinate) and is fixed
    after it.  A top-level block (not under ``th.one``) starts at a draw from the Laplace
    approximation at the mode, and the walk at its covariance — found by Newton on the full
    data in a few passes for GLM weights (:mod:`thrifty.inference.proposals.laplace_start`) — so the
    walk's scale is the posterior's from the first step: on a tall logistic regression a
    fixed ``th.drift(0.1)`` is 13 posterior sds and never accepts.  Give ``burn_in`` to
    ``th.infer`` as usual.

    Sections are plate elements, markov steps (with the states held
    fixed) or the readers of a memoized value; ``result.stats`` reports ``sections_per_step``
    (sections the test used; a decision handed to exact MH counts all N),
    ``sections_evaluated_per_step`` (≥ the former: minibatches are
    evaluated in chunks) and ``ran_to_N_per_step`` (decisions that read every section — all of
    a small cluster's points when it holds fewer than ``batch_size``).

    ``max_fraction``: the test draws at most this fraction of the sections (in random
    minibatches, chunks doubling); a decision still open then is exact MH's, from one
    execution of everything the change reaches, like a ``th.mh`` step (``full_passes_per_step``
    counts them).  Random minibatches cost several times more per section than a full pass
    (gathers, bookkeeping, rescoring stale sections), so when the log-ratios are as noisy as the
    decision is close — an efficient proposal — reading on would cost more than exact MH; and a
    decision on all the data has no error, so the test's error bound holds.  Within that
    fraction the budget adapts to the chain's decisions (:class:`Budget`): it is the whole
    fraction while more than 40% of the recent decisions allowed it settle, else ``k0``
    minibatches, every 16th decision a probe of the whole fraction (decided by exact MH) so that
    it can come back (``budget_per_step``: its sum over the steps divided by their number, a
    step that skips the test counting 0).  With fewer than ``k0·batch_size``
    sections within ``max_fraction`` a step is exact MH's at once, without the test (under
    ``th.one`` over memoized keys, a key read by few sections; otherwise a warning says so
    once, since every step is then exact).
    ``max_fraction=1``: the test alone, up to all N (000 Alg. 2).  Not used with
    ``proxy="taylor"``, whose remainders settle in a few minibatches.

    ``proxy="taylor"``: for GLM weights (:mod:`thrifty.distributions.glm` observations in plates),
    test the remainders of a second-order Taylor expansion at the posterior mode ``theta_hat``
    (found by Newton at set-up, O(N) once, when not given) instead of the l_i — control variates
    that let a few minibatches settle most decisions of an efficient proposal
    (:mod:`thrifty.inference.subsampling.proxy`).  ``result.stats`` then also reports
    ``setups_per_step``. On one key of a memoized function (``th.one("w")`` with ``w = th.mem(...)``
    read as ``glm.logistic(X[i], w(z))``: one cluster's weights) the sums are kept per key and
    follow the readers as labels move, each key centred at its own conditional mode
    (:mod:`thrifty.inference.subsampling.mem_proxy`; ``cluster_builds_per_step`` counts the O(N_k)
    builds).

    >>> import numpy as np, thrifty as th
    >>> from thrifty.datasets import synthetic_logistic
    >>> from thrifty.models.logistic import logistic_regression
    >>> X, y, _ = synthetic_logistic(20_000, 2, seed=0)
    >>> k = th.subsampled_mh("w", batch_size=100, epsilon=0.05, proposal=th.drift(0.02))
    >>> r = th.infer(logistic_regression(X, y), k, num_samples=200, seed=0, progress=False)
    >>> r.stats[k.label()]["sections_per_step"] < 20_000
    True
    >>> k = th.subsampled_mh("w", 100, 0.01, th.drift(0.02), proxy="taylor")
    >>> r = th.infer(logistic_regression(X, y), k, num_samples=200, seed=0, progress=False)
    >>> r.stats[k.label()]["sections_per_step"] < 1_000
    True
    >>> k = th.subsampled_mh("w", proxy="taylor")          # the adapted default proposal
    >>> r = th.infer(logistic_regression(X, y), k, num_samples=200, burn_in=300, seed=0,
    ...              progress=False)
    >>> bool(r.stats[k.label()]["acceptance_rate"] > 0.1)
    True
    """
    return SubsampledMH(
        selection, batch_size, epsilon, proposal, k0, proxy, theta_hat, max_fraction
    )
