"""Particle marginal Metropolis–Hastings (Andrieu, Doucet & Holenstein 2010): ``th.pmmh``.

MH on global parameters θ (latent choices outside the program's markov chains) whose likelihood
p(y | θ) is replaced by the unbiased estimate Ẑ(θ) of :func:`thrifty.smc` with the chains'
states as particles:

    α = min(1, Ẑ(θ') p(θ') q(θ | θ') / (Ẑ(θ) p(θ) q(θ' | θ))).

The estimate of the current state is kept until the state changes (re-estimating it by a new
SMC sweep would be a different, "Monte Carlo within Metropolis", algorithm that is not exact).  On
acceptance the chains are set to one particle's trajectory drawn from the final weights, so the
kernel leaves the joint posterior of θ and the chains invariant.  When another kernel has changed
the trace since (a ``th.cycle`` with ``th.pgibbs`` or MH on other choices), the particles behind
the kept estimate are no longer those of the current state: the estimate is refreshed by
conditional SMC with the chain's current trajectory as the reference — the particles' law given
θ and that trajectory under PMMH's extended target (Andrieu, Doucet & Holenstein 2010, §4) — and,
conditional SMC being implemented for multinomial resampling, the kernel resamples multinomially
from then on.  Cost per step: one SMC sweep, O(N·T) (two after another kernel's change).
"""

from __future__ import annotations

import numpy as np

from thrifty._args import checked_keywords, int_arg
from thrifty.core.address import as_name, as_pattern, dotted, fmt
from thrifty.core.engine import (
    ZeroProbability,
    chain_references,
    chains,
    locate,
    plate_sizes,
    run_particles,
    top_choice,
)
from thrifty.errors import ArgumentError, ModelError, SelectionError
from thrifty.inference.kernel import Kernel
from thrifty.inference.particles.generations import Generations, NoParticleLeft
from thrifty.inference.particles.pgibbs import Conditional, write_trajectories
from thrifty.inference.proposals.base import Drift, Prior, Proposal, require_scale


class PMMH(Kernel):
    """Particle marginal MH; see :func:`pmmh`."""

    name = "pmmh"

    def __init__(self, selection, particles: int, proposal: Proposal, resample: str):
        Kernel.__init__(self)
        names = [selection] if isinstance(selection, (str, tuple)) else list(selection)
        self.addrs = [as_pattern(s) if isinstance(s, str) else as_name(s) for s in names]
        if not isinstance(proposal, (Drift, Prior)):
            raise ArgumentError(
                f"pmmh: proposal must be th.drift(...) or th.prior(), got {proposal!r}"
            )
        self.particles = int_arg("pmmh", "particles", particles)
        self.proposal = proposal
        require_scale("pmmh", self.proposal)
        self.resample = resample
        self._refreshed = False  # a refresh ran: multinomial resampling from then on
        # the current state's (trace, clock, log p(choices outside the chains), log p(those
        # the kernel does not update), log Ẑ) — the trace itself, not its uid: a checkpoint
        # pickles the kernel with its trace, which comes back a new object of a new uid but
        # the same object as this reference, and the resumed chain keeps the estimate
        self._current = None

    def label(self) -> str:
        sel = ", ".join(".".join(map(str, a)) for a in self.addrs)
        return f"pmmh({sel}, {self.particles}, {self.proposal!r})"

    def prepare(self, trace) -> None:
        for a in self.addrs:
            if top_choice(trace, a) is not None:
                continue
            name = dotted(a)
            head = a[:1]
            top_chains = {c for p, c in chains(trace) if p is None}
            if head in top_chains or head in plate_sizes(trace):
                kind = "chain" if head in top_chains else "plate"
                raise SelectionError(
                    f"pmmh: {name!r} is a site of the {kind} {fmt(head)}; PMMH updates global "
                    "choices at the top level of the program (the chains' states are its "
                    "particles, e.g. th.pmmh(['omega', 'q'])); to update a chain's states, "
                    f"use th.pgibbs({dotted(head)!r}) (in a th.cycle with th.pmmh)"
                )
            raise SelectionError(
                f"pmmh: {name!r} is not a latent choice at the top level of the program (PMMH "
                "updates global parameters outside the chains)"
            )
        if not chains(trace):
            raise SelectionError("pmmh: the program has no th.markov chain to filter")

    def _smc(self, trace, rng, values: dict):
        """One SMC sweep with the selected choices at ``values`` (or RESAMPLE), the other
        choices outside the chains at their trace values.  Returns (log p(θ) of the choices
        outside the chains, minus those drawn from their priors; log Ẑ; driver; the run)."""
        scheme = "multinomial" if self._refreshed else self.resample
        driver = Generations(self.particles, scheme, 0.5, rng)
        driver.records = []  # (an accepted proposal's trajectory is written back from them)

        def given(local):
            if local in values:
                return values[local]
            vl = top_choice(trace, local)
            if vl is None:
                raise ModelError(f"pmmh: the trace has no value at {fmt(local)}")
            return vl[0]

        pr = run_particles(trace, rng, self.particles, given, driver, proposing=True)
        return pr.shared_lp - pr.prior_drawn_lp, driver.log_z, driver, pr

    def _refresh(self, trace, rng):
        """(log p(θ) of the choices outside the chains, log Ẑ(θ)) of the current state by
        conditional SMC with the trace's trajectory as the reference (the module docstring)."""
        found = chains(trace)
        if len(found) != 1:
            names = ", ".join(repr(dotted((p or ()) + c)) for p, c in found)
            raise ModelError(
                f"pmmh: another kernel changed the trace, and refreshing the estimate of the "
                f"current state takes conditional SMC on one chain; the program has {names}")
        plate, chain = found[0]
        _, _, _, refs = chain_references(trace, (plate or ()) + chain, "pmmh")
        driver = _Refresh(self.particles, rng, refs, (plate, chain))

        def given(local):
            return top_choice(trace, local)[0]

        pr = run_particles(trace, rng, self.particles, given, driver)
        self.info.count("refreshes", 1)
        return pr.shared_lp, self._rest(pr), driver.log_z

    def _rest(self, pr) -> float:
        """log p of the choices outside the chains that the kernel does not update (given
        its choices: a prior proposal's ratio keeps them, 000 Eq. 2–4's absorbing nodes)."""
        return sum(lp for a, lp in pr.lps.items() if a not in self.addrs)

    def _step(self, trace, rng):
        key = (trace, trace.clock)
        if self._current is None or self._current[0] is not trace:
            cur = {a: top_choice(trace, a)[0] for a in self.addrs}
            prior, log_z, _, pr = self._smc(trace, rng, cur)
            self._current = (*key, prior, self._rest(pr), log_z)
        elif self._current[1] != trace.clock:  # another kernel changed the trace
            self._refreshed = True
            self._current = (*key, *self._refresh(trace, rng))
        _, _, prior, rest, log_z = self._current
        # (a drift on a simplex walks in its unconstrained coordinates: log_q, its Jacobians)
        new, log_q = self.proposal.propose_block(trace, [locate(trace, a) for a in self.addrs],
                                                 rng)
        self.info.proposed += 1
        try:
            prior2, log_z2, driver, pr = self._smc(trace, rng, new)
        except (ZeroProbability, NoParticleLeft):
            return trace  # a proposal outside the support, or Ẑ(θ') = 0: rejected
        self.info.count("particles", self.particles)
        self.info.count("generations", len(driver.ess))
        self.info.count("resampling_events", sum(driver.resampled))
        self.info.count("mean_ess", float(np.mean(driver.ess)) if driver.ess else 0.0)
        rest2 = self._rest(pr)
        if isinstance(self.proposal, Prior):  # q(θ | θ') = p(θ | parents): those terms cancel
            log_alpha = log_z2 - log_z + (rest2 - rest)
        else:  # symmetric drift
            log_alpha = prior2 + log_z2 - prior - log_z + log_q
        if not (log_alpha >= 0 or np.log(rng.random()) < log_alpha):
            return trace
        self.info.accepted += 1
        targets = {a: pr.values[a] for a in self.addrs}  # (drawn, for th.prior())
        write_trajectories(self, trace, rng, driver, targets)
        self._current = (trace, trace.clock, prior2 + pr.prior_drawn_lp, rest2, log_z2)
        return trace


class _Refresh(Conditional):
    """Conditional SMC with the kernel's SMC's resampling (multinomial, when the ESS falls below
    half the particles), keeping its evidence estimate; one chain."""

    evidence = True

    def __init__(self, n, rng, refs, target):
        super().__init__(n, rng, refs, False)
        self.threshold = 0.5
        self.target = target

    def chain(self, frame, local, step, length, init, args):
        if (getattr(frame, "plate_addr", None), local) != self.target:
            raise ModelError("pmmh: the program runs another markov chain than the one its "
                             "trace holds")
        return super().chain(frame, local, step, length, init, args)


@checked_keywords
def pmmh(selection, particles: int = 100, proposal: Proposal | None = None,
         resample: str = "systematic") -> PMMH:
    """Particle marginal MH on the global choices ``selection`` (a name or a list of names)
    with the likelihood estimated by SMC over the program's markov chains (``particles``
    particles).  ``proposal``: ``th.drift(scale)`` (default scale 0.1) or ``th.prior()``.

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models.lds import lds, generate_lds
    >>> y, C, _ = generate_lds(T=10, D=2, r=0.5, seed=0)
    >>> r = th.infer(lds(y, C, 0.5, omega=4 * np.pi / 10), th.pmmh("q", 50, th.drift(0.03)),
    ...              num_samples=30, seed=0, progress=False)
    >>> r["q"].shape
    (1, 30)
    """
    return PMMH(selection, particles, proposal if proposal is not None else Drift(0.1), resample)


__all__ = ["PMMH", "pmmh"]
