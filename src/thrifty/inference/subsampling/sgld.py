"""Stochastic-gradient Langevin proposals, corrected by MH or by the sequential test (004 §6.2).

    θ' = θ + (α/2) · ĝ(θ) + η,   η ~ N(0, α I),
    ĝ(θ) = ∇ log p(θ) + (N/n) Σ_{i ∈ B} ∇ log p(y_i | θ)                         (004 Eq. 10)

with B a minibatch of n of the N observations, drawn afresh for each proposal.  Uncorrected, SGLD
is biased; as a *proposal* it is a mixture over B of kernels, each made reversible by the MH ratio
with q(θ' | θ, B) and q(θ | θ', B) conditioned on the same minibatch B (004 §6.2) — which is what
:meth:`SGLD.propose_block` returns.  Use it with ``th.mh`` (exact, O(N) per step) or with
``th.subsampled_mh`` (the sequential test decides from minibatches of sections).

The gradients come from the GLM observations (:mod:`thrifty.distributions.glm`) whose weights are θ,
found once by the same O(N) set-up as ``th.smh``; the prior's gradient is exact for Normal /
MvNormal priors and a central difference otherwise. """

from __future__ import annotations

import math

import numpy as np

from thrifty._args import checked_keywords, int_arg, positive_finite
from thrifty.core.address import fmt
from thrifty.errors import SelectionError
from thrifty.inference.proposals.base import Proposal
from thrifty.inference.subsampling.glm_sections import derivs


class SGLD(Proposal):
    """See the module docstring and :func:`thrifty.sgld`."""

    def __init__(self, step_size: float, batch_size: int = 100):
        self.step_size = float(positive_finite("sgld", "step_size", step_size))
        self.batch_size = int_arg("sgld", "batch_size", batch_size)
        self._helper = None  # an SMH kernel used only to find the GLM sections

    def __repr__(self) -> str:
        return f"sgld({self.step_size}, batch_size={self.batch_size})"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_helper"] = None  # rebuilt on first use (the set-up holds the data)
        return state

    def propose(self, addr, value, discrete, rng):
        raise SelectionError("sgld proposes a whole vector choice; use it with th.mh or "
                             "th.subsampled_mh on the GLM weights")

    def _sections(self, trace, loc):
        from thrifty.inference.subsampling.smh import SMH

        h = self._helper
        st = None if h is None else h.sections
        if st is None or st.trace is not trace or st.structure != trace.structure or (
            st.obs is not trace.obs_values
        ):
            if h is None or h.selection.pattern != loc.addr:
                h = self._helper = SMH(loc.addr)
                h.global_split = False  # the gradient steers; the MH ratio is the full one
            st = h.setup(trace, precompute=False)
        return st

    def gradient(self, st, theta, batch) -> np.ndarray:
        """ĝ(θ) on the minibatch ``batch`` (004 Eq. 10)."""
        eta = st.X[batch] @ theta
        u1 = derivs(st, eta, 1, idx=batch)  # ∂U/∂η = −∂ log p / ∂η
        _, g_prior, _ = st.prior(theta)
        return g_prior - (st.N / len(batch)) * (st.X[batch].T @ u1)

    def propose_block(self, trace, locs, rng):
        if len(locs) != 1 or locs[0].kind != "site":
            raise SelectionError("sgld: select exactly one top-level vector choice (GLM weights)")
        loc = locs[0]
        st = self._sections(trace, loc)
        theta = np.asarray(loc.value, dtype=float)
        a = self.step_size
        batch = rng.choice(st.N, size=min(self.batch_size, st.N), replace=False)
        g = self.gradient(st, theta, batch)
        new = theta + 0.5 * a * g + math.sqrt(a) * rng.standard_normal(theta.shape)
        g_new = self.gradient(st, new, batch)
        fwd = new - theta - 0.5 * a * g
        rev = theta - new - 0.5 * a * g_new
        log_q = (float(fwd @ fwd) - float(rev @ rev)) / (2.0 * a)  # log q(θ|θ') − log q(θ'|θ)
        if not np.all(np.isfinite(new)):
            raise SelectionError(
                f"sgld: the proposal for {fmt(loc.addr)} is not finite; lower the step size"
            )
        return {loc.addr: new}, log_q


@checked_keywords
def sgld(step_size: float, batch_size: int = 100) -> SGLD:
    """SGLD proposal (004 §6.2) for GLM weights, with the minibatch-conditioned MH correction.

    >>> import thrifty as th
    >>> from thrifty.datasets import synthetic_logistic
    >>> from thrifty.models import logistic_regression
    >>> X, y, _ = synthetic_logistic(5000, 3, seed=0)
    >>> k = th.mh("w", th.sgld(1e-4, batch_size=100))
    >>> r = th.infer(logistic_regression(X, y), k, num_samples=200, seed=0, progress=False)
    >>> 0.0 < r.stats[k.label()]["acceptance_rate"] <= 1.0
    True
    """
    return SGLD(step_size, batch_size)
