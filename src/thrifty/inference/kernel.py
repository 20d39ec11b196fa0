"""The kernel protocol and per-kernel statistics.

A kernel is a Python object with ``update(trace, rng) -> (trace, info)`` that leaves the
posterior invariant (or approximately, for the subsampling kernels) and says what the step did
in ``info`` (an :class:`Info`: proposals, acceptances, program runs, plate elements and markov
steps executed, seconds, kernel-specific counters — as BlackJAX's ``(state, info)``);
``step(trace, rng)`` is the same without the info.  The kernel's ``stats`` are the sum of its
steps' infos since the burn-in ended (the burn-in's: ``stats.burn_in``), from which
``result.stats`` is built.  ``th.infer`` deep-copies the kernel for each chain, so statistics
are per chain.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np

from thrifty._warn import user_stacklevel
from thrifty.core.engine import (
    DEFAULT,
    RESCORE,
    Plan,
    Run,
    propose,
    stale_parts,
    stale_plan,
)
from thrifty.inference.configured import Configured


@dataclass(slots=True)  # (one is made and summed at every step: slots halve that)
class Info:
    """What one kernel step did (see the module docstring)."""

    proposed: int = 0
    accepted: int = 0
    elements: int = 0  # plate elements executed
    chain_steps: int = 0  # markov steps executed
    runs: int = 0  # program executions
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)  # kernel-specific counters

    def add_run(self, run: Run) -> None:
        self.runs += 1
        self.elements += run.work_elements
        self.chain_steps += run.work_steps

    def count(self, name: str, amount: float = 1) -> None:
        """Add to a kernel-specific counter (reported as ``<name>_per_step``)."""
        self.extra[name] = self.extra.get(name, 0) + amount

    def absorb(self, part: Info) -> None:
        """Add what a part of a composite kernel's step did (its counters stay its own)."""
        self.proposed += part.proposed
        self.accepted += part.accepted
        self.elements += part.elements
        self.chain_steps += part.chain_steps
        self.runs += part.runs


@dataclass
class Stats(Info):
    """What a kernel did: the sum of its steps' :class:`Info` records, and their number, with
    what the adaptive kernels and the start report.  The burn-in's steps and the sampling steps
    are summed apart (Stan's and PyMC's sampler statistics are those of the sampling
    iterations: during the burn-in the kernels adapt): a kernel's ``stats`` sums the steps of
    the phase under way, and when the burn-in ends (:meth:`Kernel.set_tuning`) its sum becomes
    ``burn_in`` of a new one (:meth:`end_burn_in`)."""

    steps: int = 0
    # per site name: [selected, accepted, Σ reward, Σ count] (adaptive kernels)
    sites: dict = field(default_factory=dict)
    proposal: list = field(default_factory=list)  # per chain: the adapted proposal (drift())
    start: list = field(default_factory=list)  # per chain: what moving to the start cost
    burn_in: Stats | None = None  # the burn-in's sum, once it ended (None: no burn-in yet)
    site_names: list = field(default_factory=list)  # a burn-in's: the sites (for messages)
    composite: bool = False  # a composite kernel's: the sum of its parts' (not counted again)

    _LISTS = ("extra", "sites", "proposal", "start", "burn_in", "site_names", "composite")

    def __post_init__(self):
        self.extra = dict(self.extra)  # copies (dataclasses.replace) must not share counters
        self.sites = {k: list(v) for k, v in self.sites.items()}
        self.proposal = list(self.proposal)
        self.start = list(self.start)
        self.site_names = list(self.site_names)

    def as_dict(self) -> dict:
        """The sampling steps' aggregates, and under ``"burn_in"`` the burn-in's with the same
        keys (zero steps without a burn-in)."""
        burn = Stats() if self.burn_in is None else self.burn_in
        extra = [*self.extra, *(k for k in burn.extra if k not in self.extra)]
        return {
            **self._aggregates(extra),
            **({"proposal": self.proposal} if self.proposal else {}),  # one per chain
            **({"start": self.start} if self.start else {}),  # one per chain
            "burn_in": burn._aggregates(extra),
        }

    def _aggregates(self, extra: list) -> dict:
        steps = max(self.steps, 1)
        return {
            "steps": self.steps,
            "proposed": self.proposed,
            "accepted": self.accepted,
            "acceptance_rate": self.accepted / self.proposed if self.proposed else float("nan"),
            "elements_per_step": self.elements / steps,
            "chain_steps_per_step": self.chain_steps / steps,
            "runs_per_step": self.runs / steps,
            "seconds": self.seconds,
            "seconds_per_step": self.seconds / steps,
            **{f"{k}_per_step": self.extra.get(k, 0) / steps for k in extra},
            **({"sites": self._sites(steps)} if self.sites else {}),
        }

    def _sites(self, steps: int) -> dict:
        """Per site name: the fraction of steps that selected it (its mean selection
        probability), its acceptance rate and its unit reward Σr/Σc."""
        return {
            name: {
                "selection_probability": sel / steps,
                "acceptance_rate": acc / sel if sel else float("nan"),
                "unit_reward": r / c if c else float("nan"),
            }
            for name, (sel, acc, r, c) in self.sites.items()
        }

    def add(self, info: Info) -> None:
        """One more step, and what it did."""
        self.steps += 1
        self.proposed += info.proposed
        self.accepted += info.accepted
        self.elements += info.elements
        self.chain_steps += info.chain_steps
        self.runs += info.runs
        self.seconds += info.seconds
        if info.extra:  # (kernel-specific counters: most kernels have none)
            for k, v in info.extra.items():
                self.extra[k] = self.extra.get(k, 0) + v

    def as_burn_in(self, site_names: list) -> Stats:
        """These statistics, a burn-in's so far, as ``burn_in`` of a sampling phase of no
        steps yet (copies: what a chain reports while in its burn-in)."""
        burn = dataclasses.replace(self, proposal=[], start=[], burn_in=None,
                                   site_names=site_names)
        return Stats(sites={k: [0, 0, 0.0, 0.0] for k in self.sites}, proposal=self.proposal,
                     start=self.start, burn_in=burn, composite=self.composite)

    def end_burn_in(self, site_names: list) -> Stats:
        """The burn-in ends: the accumulator of the sampling steps, whose ``burn_in`` is this
        one's sum.  The per-site tallies of adaptive LMH are shared with its arms
        (:class:`~thrifty.inference.mcmc.arms.Arms`), so they are copied into ``burn_in`` and
        restart at zero in place."""
        after = self.as_burn_in(site_names)
        for tally in self.sites.values():
            tally[:] = [0, 0, 0.0, 0.0]
        after.sites = self.sites
        return after

    def merge(self, other: Stats) -> Stats:
        extra = dict(self.extra)
        for k, v in other.extra.items():
            extra[k] = extra.get(k, 0) + v
        values = {f: getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__
                  if f not in self._LISTS}
        sites = {k: list(v) for k, v in self.sites.items()}
        for k, v in other.sites.items():
            sites[k] = [a + b for a, b in zip(sites.get(k, [0, 0, 0.0, 0.0]), v)]
        a, b = self.burn_in, other.burn_in
        burn = a if b is None else b if a is None else a.merge(b)
        return Stats(**values, extra=extra, sites=sites, proposal=self.proposal + other.proposal,
                     start=self.start + other.start, burn_in=burn,
                     site_names=self.site_names or other.site_names, composite=self.composite)


class Kernel(Configured):
    """Base class of the MCMC kernels: ``update(trace, rng) -> (trace, info)``, ``step``, and
    ``stats`` (the sum of the steps' infos: in the burn-in, its steps'; after it, the sampling
    steps', with the burn-in's as ``stats.burn_in``).  A subclass defines ``_step`` and counts
    its work in ``self.info`` (``self.info.proposed += 1``, ``self.info.count("name")``; its
    runs through :meth:`execute` are counted there already).  A kernel built from other
    kernels lists them in :meth:`kernels`, so that they are started, adapted in the burn-in
    and reported in ``result.stats`` like kernels of ``th.cycle``.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> class Twice(th.Kernel):                      # a kernel of your own: two MH steps per step
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.inner = th.mh("mu", th.drift(1.0))
    ...     def _step(self, trace, rng):
    ...         return self.inner.step(self.inner.step(trace, rng), rng)
    ...     def kernels(self):                       # started, tuned and reported too
    ...         return [(self.label(), self), *self.inner.kernels()]
    >>> @th.model
    ... def m():
    ...     th.observe("y", dist.Normal(th.sample("mu", dist.Normal(0.0, 1.0)), 1.0), 0.5)
    >>> r = th.infer(m(), Twice(), num_samples=10, seed=0, progress=False)
    >>> r["mu"].shape, r.stats["mh('mu', drift(1.0))"]["steps"]
    ((1, 10), 20)
    """

    name = "kernel"
    tuning = False  # True during burn-in (set by the chain): kernels may adapt their proposals
    _info: Info | None = None  # (a class default: subclasses that skip __init__ have it too)

    def __init__(self):
        self.stats = Stats()
        self._info: Info | None = None  # the record of the step under way

    @property
    def info(self) -> Info | Stats:
        """Where the kernel's code counts its work: the :class:`Info` of the step under way
        — outside a step (a chain's start, a diagnostic's trial) the totals in ``stats``."""
        info = self._info
        return self.stats if info is None else info

    def update(self, trace, rng) -> tuple:
        """One step: ``(trace, info)``, with ``info`` (an :class:`Info`) what it did."""
        info = self._info = Info()
        t0 = perf_counter()
        try:
            trace = self._step(trace, rng)
        finally:
            self._info = None
            info.seconds = perf_counter() - t0
            self.stats.add(info)
        return trace, info

    def step(self, trace, rng):
        """One step (:meth:`update` without the info)."""
        return self.update(trace, rng)[0]

    def _step(self, trace, rng):
        raise NotImplementedError

    def kernels(self) -> list[tuple[str, Kernel]]:
        """(label, kernel) for this kernel and those it is composed of (for ``Result.stats``)."""
        return [(self.label(), self)]

    def label(self) -> str:
        return repr(self)

    def prepare_all(self, trace) -> None:
        """Check this kernel and those it is composed of against the initial trace, before
        sampling (e.g. that their selections name choices of the program)."""
        for _, k in self.kernels():
            prepare = getattr(k, "prepare", None)
            if prepare is not None:
                prepare(trace)

    def plan_burn_in_all(self, n: int) -> None:
        """Tell this kernel and those it is composed of that the burn-in has ``n`` steps (for
        adaptations scheduled over the whole burn-in, as NUTS's windows)."""
        for _, k in self.kernels():
            plan = getattr(k, "plan_burn_in", None)
            if plan is not None:
                plan(n)

    def set_tuning(self, on: bool) -> None:
        """Burn-in (``on``) or sampling: this kernel and those it is composed of may adapt
        only while tuning; the chain turns it off when the burn-in ends, and each kernel's
        statistics of the burn-in then become ``stats.burn_in``, its ``stats`` summing the
        sampling steps from there (:meth:`Stats.end_burn_in`; ``th.infer`` warns about a kernel
        that accepted none of its proposals in the burn-in)."""
        for _, k in self.kernels():
            if k.tuning and not on:
                k.stats = k.stats.end_burn_in(k.site_names())
            k._tune(on)
        self._tune(on)

    def _tune(self, on: bool) -> None:
        self.tuning = on

    def site_names(self) -> list[str]:
        """The sites this kernel updates, for messages (empty when it does not say)."""
        return []

    def start_all(self, trace, rng, init) -> None:
        """Before sampling a fresh chain: let this kernel and those it is composed of move the
        initial trace where they work (``th.smh`` starts at its expansion point θ̂ unless
        ``init`` gives the choice)."""
        for _, k in self.kernels():
            start = getattr(k, "start", None)
            if start is not None:
                start(trace, rng, init or {})

    def __repr__(self) -> str:
        return self.name

    # -- helpers for subclasses ------------------------------------------------------------------
    def execute(self, trace, rng, **kw) -> Run:
        """One run (:func:`~thrifty.core.engine.propose`), its work counted in ``stats``.

        Plate elements and markov steps left stale by a subsampling kernel are rescored when a
        run reads them (paper 000 §3.5), never by a sweep: a run that compares against the
        stored log-densities (any kind but lazy and rescore) is of the kind's ``reading_fresh`` and
        stops at the first plate or chain where it would execute stale elements or steps;
        exactly those are rescored (:meth:`rescore`: a run planned on them, committed) and the
        run starts again with the generator where it was, so its draws are those of a run
        made after the rescoring.  A one-element run costs O(1) however much is stale; a run
        that executes a whole plate rescores the plate's stale elements, O(stale); a run
        that reaches no stale plate or chain rescores nothing.
        """
        mode = kw.get("mode", DEFAULT)
        if not trace.stale_nodes or mode.lazy or mode.rescore:  # (trace.maybe_stale)
            run = Run(trace, rng, **kw).execute()  # (propose, one call less)
            info = self._info or self.stats  # (``self.info``, without the property's call)
            info.runs += 1  # (``info.add_run(run)``, inline)
            info.elements += run.work_elements
            info.chain_steps += run.work_steps
            return run
        kw["mode"] = mode.reading_fresh
        state = _rng_state(rng)
        seen: set = set()
        while True:
            run = Run(trace, rng, **kw).execute()
            self.info.add_run(run)
            if run.stale_read is None:
                return run
            parts = run.stale_read.parts
            key = tuple((kind, addr, *_fingerprint(items)) for kind, addr, items in parts)
            _set_rng_state(rng, state)  # the rescoring first, then the run as it would be
            if key not in seen:
                seen.add(key)
                self.rescore(trace, rng, stale_plan(trace, parts))
            elif ("full",) not in seen:  # not expected: rescore everything, once
                seen.add(("full",))
                self.execute(trace, rng, mode=RESCORE).commit()
            else:
                raise RuntimeError(f"rescoring did not make these fresh: {run.stale_read}")
            state = _rng_state(rng)

    def rescore(self, trace, rng, plan: Plan) -> Run:
        """Rescore the plate elements and markov steps of ``plan`` under the current values of
        everything else (what :class:`~thrifty.core.run.Plan` runs when nothing changes), and
        commit: how stale ones are made fresh, O(their number).  Returns the committed run."""
        run = propose(trace, rng, plan=plan)
        self.info.add_run(run)
        run.commit()
        return run

    def accept(self, run: Run, log_alpha: float, rng) -> bool:
        """Metropolis–Hastings: commit ``run`` with probability min(1, exp(log_alpha))."""
        info = self.info
        info.proposed += 1
        if log_alpha >= 0 or (log_alpha > -math.inf and math.log(rng.random()) < log_alpha):
            run.commit()
            info.accepted += 1
            return True
        return False

    def accept_fork(self, trace, fork, log_alpha: float, rng) -> bool:
        """Metropolis–Hastings on a proposal already committed into ``fork``
        (:func:`~thrifty.core.engine.provisional_commit`): ``trace`` becomes it with
        probability min(1, exp(log_alpha)), else the fork is dropped."""
        self.info.proposed += 1
        if log_alpha >= 0 or math.log(rng.random()) < log_alpha:
            self.info.accepted += 1
            trace.become(fork)
            return True
        trace.revert(fork)
        return False

    def refresh(self, trace, rng) -> None:
        """Rescore every stale plate element and markov step (left by subsampling kernels): one
        run planned on exactly them (found by a vectorized scan of each node that may hold
        some), O(number stale); afterwards ``trace.log_joint()`` is known.  Exact kernels need
        not call it: their runs rescore what they read (:meth:`execute`)."""
        if trace.maybe_stale:
            parts = stale_parts(trace)
            if parts:
                self.rescore(trace, rng, stale_plan(trace, parts))
            trace.has_stale()  # drops the nodes left with nothing stale


class ZeroAcceptanceWarning(UserWarning):
    """A kernel accepted none of its proposals during the burn-in: the chain has not moved
    (see :func:`warn_zero_acceptance`).

    >>> import thrifty as th
    >>> issubclass(th.ZeroAcceptanceWarning, UserWarning)
    True
    """


#: fewer proposals than this in a burn-in say too little to warn about
ZERO_ACCEPTANCE_MIN_PROPOSALS = 50


def warn_zero_acceptance(per_chain: dict) -> None:
    """Warn once per kernel label (``per_chain``: label → {chain: :class:`Stats`}) that
    accepted none of at least ``ZERO_ACCEPTANCE_MIN_PROPOSALS`` proposals in the burn-in of
    some chain, naming the kernel, its sites and those chains."""
    for label, by_chain in per_chain.items():
        stuck, sites, n = [], [], 0
        for c, s in sorted(by_chain.items()):
            b = s.burn_in
            if s.composite or b is None:  # (a composite's parts report)
                continue
            if b.accepted == 0 and b.proposed >= ZERO_ACCEPTANCE_MIN_PROPOSALS:
                stuck.append(c)
                n = max(n, b.proposed)
                sites = sites or list(b.site_names)
        if not stuck:
            continue
        what = ", ".join(sites) if sites else "its choices"
        chains = "chain " + str(stuck[0]) if len(stuck) == 1 else (
            "chains " + ", ".join(map(str, stuck)))
        warnings.warn(
            f"{label} accepted none of its {n} proposals during the burn-in of {chains}: "
            f"{what} did not move from where the chain started, and the draws are not from the "
            "posterior.  Proposals far wider than the posterior do this (a random walk with "
            "too large a scale, or a prior much wider than the posterior): give th.drift() "
            "without a scale (it adapts during the burn-in), or a smaller scale",
            ZeroAcceptanceWarning,
            stacklevel=user_stacklevel(),
        )


def _fingerprint(items) -> tuple:
    """What tells one stale read's elements or steps from the next one's: their number, ends and
    sum, in O(1) memory (a plate left stale after a subsampled step holds nearly all of its
    elements, whose bytes would be a copy of N numbers at every rescoring).  Two different sets
    taken for the same cost one full rescoring (:meth:`Kernel.execute`), never a wrong value."""
    items = np.asarray(items)
    if not len(items):
        return (0,)
    return len(items), int(items[0]), int(items[-1]), int(items.sum())


def _rng_state(rng):
    bit = getattr(rng, "bit_generator", None)
    return bit.state if bit is not None else rng.get_state()


def _set_rng_state(rng, state) -> None:
    bit = getattr(rng, "bit_generator", None)
    if bit is not None:
        bit.state = state
    else:
        rng.set_state(state)
