"""Approximate Gibbs for binary choices with many factors (paper 004 §5).

For a binary choice X_i whose conditional is a product of N factors f_n, Gibbs sets X_i to the
other value a with probability σ(Δ), Δ = G + Σ_n l_n, where G is the global log-ratio (the
prior of X_i, anything outside the sections) and l_n = log f_n(X_i = a) − log f_n(X_i = c) for
the current value c.  Drawing u ~ U(0, 1) and flipping iff  log(u / (1 − u)) < Δ  is the same
decision, and it is a sequential test on the mean of the l_n with

    μ0 = (log(u / (1 − u)) − G) / N                                       (004 §5)

— subsampled MH's machinery with the flip as the proposal and the logit of u in place of log u.
The factors are the choice's local sections: the readers of a memoized variable (the dense MRF
of 004 §6.3), plate elements or markov steps.
"""

from __future__ import annotations

import math

import numpy as np

from thrifty._args import checked_keywords
from thrifty.core.address import fmt
from thrifty.core.engine import (
    locate,
)
from thrifty.errors import SelectionError
from thrifty.inference.proposals.base import Proposal
from thrifty.inference.subsampling.subsampled import SubsampledMH


class _Flip(Proposal):
    def propose(self, addr, value, discrete, rng):
        return 1 - value

    def __repr__(self) -> str:
        return "flip"


class AusterityGibbs(SubsampledMH):
    """Approximate Gibbs with the sequential test; see :func:`thrifty.austerity_gibbs`."""

    name = "austerity_gibbs"

    def __init__(
        self, selection, batch_size: int = 500, epsilon: float = 0.01, k0: int = 1,
        max_fraction: float = 1.0,
    ):
        super().__init__(selection, batch_size, epsilon, _Flip(), k0, max_fraction=max_fraction)

    def label(self) -> str:
        return (
            f"austerity_gibbs({self.selection!r}, batch_size={self.batch_size}, "
            f"epsilon={self.epsilon})"
        )

    def _step(self, trace, rng):
        cs = self.global_choices(trace, rng)
        if cs is None:
            return trace
        for addr in cs.scalars:  # a Gibbs sweep over the selected binary choices
            loc = locate(trace, addr)
            _check_binary(loc)
            u = rng.random()
            logit_u = math.log(u) - math.log1p(-u)
            self.info.proposed += 1
            if self.decide(trace, rng, [loc], {addr: 1 - int(loc.value)}, 0.0, logit_u):
                self.info.accepted += 1
        return trace


def _check_binary(loc) -> None:
    d = loc.dist
    ok = d is not None and getattr(d, "has_enumerate_support", False)
    if ok:
        support = np.asarray(d.enumerate_support())
        ok = support.shape == (2,) and set(support.tolist()) == {0, 1}
    if not ok or loc.value not in (0, 1):
        name = type(d).__name__ if d is not None else "an unknown distribution"
        raise SelectionError(
            f"austerity_gibbs: {fmt(loc.addr)} must be a binary (0/1) choice, it is {name}"
        )


@checked_keywords
def austerity_gibbs(
    selection, batch_size: int = 500, epsilon: float = 0.01, k0: int = 1,
    max_fraction: float = 1.0,
):
    """Approximate Gibbs on binary choices whose conditional is a product of many factors.

    Each selected choice is updated in turn: it takes the other value with probability
    σ(Δ), decided by the sequential test on minibatches of its factors (paper 004 §5).
    ``epsilon = 0`` is exact Gibbs (every factor evaluated).  ``max_fraction < 1``: past that
    fraction of a choice's factors, decide exactly from one execution of all of them (as in
    :func:`thrifty.subsampled_mh`; the default 1 is 004 Alg. 1 as written).

    >>> import thrifty as th
    >>> from thrifty.models.mrf import dense_mrf, random_potentials
    >>> triples, log_psi = random_potentials(12, seed=0)
    >>> k = th.austerity_gibbs("x", batch_size=20, epsilon=0.05)
    >>> r = th.infer(dense_mrf(12, triples, log_psi), k, num_samples=50, seed=0, progress=False)
    >>> r["x.0"].shape
    (1, 50)
    """
    return AusterityGibbs(selection, batch_size, epsilon, k0, max_fraction)
