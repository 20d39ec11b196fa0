r"""Taylor proxies for the sequential test: control variates that make most decisions easy.

Subsampled MH (000 Alg. 2) decides  log u < G + Σ_i l_i  from minibatches of the l_i.  How many
it needs depends on the spread of the l_i: for GLM observations, l_i = −(U_i(θ') − U_i(θ)) with
U_i(θ) = U(x_i·θ, y_i), and its spread is of the order of |x_i·(θ' − θ)| — with an efficient
random-walk step, the whole test is then about as noisy as the decision is close, and the test
reads most of the data (and errs on many of those hard decisions).

With the second-order Taylor expansion Û_i of U_i at a fixed θ̂ (the posterior mode, found once
by Newton, as for :func:`thrifty.smh`), write l_i = −ΔÛ_i − Δ_i with ΔÛ_i = Û_i(θ') − Û_i(θ)
and Δ_i = R_i(θ') − R_i(θ), R_i = U_i − Û_i the Taylor remainder.  The sum of the ΔÛ_i is exact
in O(d²) from Σ_i ∇U_i(θ̂) and Σ_i ∇²U_i(θ̂) stored at set-up:

    Σ_i ΔÛ_i = ĝ·(θ' − θ) + ½ [(θ' − θ̂)ᵀ Ĥ (θ' − θ̂) − (θ − θ̂)ᵀ Ĥ (θ − θ̂)],

so the decision is the same test on the remainders,

    accept  ⟺  mean_i(−Δ_i) > μ0' = (log u − G + Σ_i ΔÛ_i) / N,

whose terms are of third order in the distance to θ̂ — near the posterior mode, a few
minibatches settle nearly every decision.  This is the "confidence sampler with proxies" of
Bardenet, Doucet & Holmes (JMLR 2017) and the difference estimator of Quiroz et al. (JASA
2019) applied to 004's t-test; the test itself, its ε and its minibatches are unchanged (with
every section used the decision is exact MH's).  The remainders are computed directly from the
observations' data (as ``th.smh`` does), not by executing the program; the plate elements are
left stale after an accepted step and rescored by the runs that next read them.

Requirements (checked at set-up, with an error naming the address at fault): the selected
choice is one top-level real vector θ, and every term of a plate that depends on θ is a
:mod:`thrifty.distributions.glm` observation whose linear predictor is ``X[i] @ θ``; θ reaches no
markov chain or memoized value.  One key of a memoized function (a cluster's weights ``w(k)``, read
as ``glm.logistic(X[i], w(z))``) is handled by :mod:`.mem_proxy`, with per-key statistics that
follow the readers as they change. """

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.engine import (
    same_value,
)
from thrifty.errors import SelectionError
from thrifty.inference.subsampling.glm_sections import require_weights
from thrifty.inference.subsampling.mem_proxy import MemTaylor, proxy_sum


class TaylorSections:
    """The GLM sections of one proposal θ → θ', scored as Taylor remainders (see module)."""

    full_pass = False  # the remainders settle in a few minibatches: no budget

    def __init__(self, helper, st, theta, theta_new):
        self.helper, self.st = helper, st
        self.theta, self.theta_new = theta, theta_new
        self.N = st.N
        # Σ_i l_i = offset + Σ_i evaluate(i)
        self.offset = -proxy_sum(st.G, st.H, st.theta_hat, theta, theta_new)

    def evaluate(self, idx: np.ndarray) -> np.ndarray:
        """−Δ_i for the GLM terms ``idx``: l_i minus its Taylor proxy."""
        return -self.helper._section_delta(self.st, idx, self.theta, self.theta_new)

    def commit(self, skeleton) -> None:
        skeleton.commit()  # θ' with every plate element stale (refreshed when next read)
        self.st.clock = skeleton.trace.clock  # (only θ changed: the sections' data did not)


class TaylorProxy:
    """Second-order Taylor proxy of the GLM sections of one vector choice, at θ̂."""

    def __init__(self, theta_hat=None):
        self.theta_hat = None if theta_hat is None else np.asarray(theta_hat, dtype=float)
        self._helper = None  # an SMH kernel: the GLM section discovery and set-up at θ̂
        self._far = None  # FarFromMode: warns when the chain stays far from θ̂
        self._mem = None  # MemTaylor: the per-key proxies of a memoized choice

    def __repr__(self) -> str:
        return "taylor"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_helper"] = None  # rebuilt on first use (the set-up holds the data)
        return state

    def sections(self, kernel, trace, skeleton, locs, targets) -> tuple[TaylorSections, bool]:
        """The scorer for this proposal, and whether an O(N) set-up was (re)done."""
        name = kernel.name
        if len(locs) == 1 and locs[0].kind == "mem":  # one key: its readers' proxies
            if self.theta_hat is not None:
                raise SelectionError(
                    f"{name}(proxy='taylor', theta_hat=...): {fmt(locs[0].addr)} is a memoized "
                    "choice, whose centres are found per key; theta_hat is for a top-level one"
                )
            if getattr(self, "_mem", None) is None:
                self._mem = MemTaylor()
            return self._mem.sections(kernel, trace, skeleton, locs[0], targets[locs[0].addr])
        if len(locs) != 1 or locs[0].kind != "site":
            raise SelectionError(
                f"{name}(proxy='taylor') updates one top-level vector choice (GLM weights); "
                f"{kernel.selection!r} selects {', '.join(fmt(loc.addr) for loc in locs)}"
            )
        for kind, addr, _ in skeleton.sections:
            if kind != "plate":
                raise SelectionError(
                    f"{name}(proxy='taylor'): {fmt(locs[0].addr)} reaches the markov chain "
                    f"{fmt(addr)}; Taylor proxies cover glm observations in plates only "
                    "(use proxy=None)"
                )
        from thrifty.inference.subsampling.smh import SMH

        addr = locs[0].addr
        h = self._helper
        if h is None or h.selection.pattern != addr:
            h = self._helper = SMH(addr, order=2, theta_hat=self.theta_hat)
        fresh = not h.valid(trace) or not self._same_families(h.sections, skeleton)
        if fresh:
            try:
                h.setup(trace, bounds=False)
            except SelectionError as e:
                msg = str(e).removeprefix("smh: ").replace("smh needs", "the proxy needs")
                raise SelectionError(f"{name}(proxy='taylor'): {msg}") from None
        st = h.sections
        theta_new = np.asarray(targets[addr], dtype=float)
        # the remainders are computed from the data at θ': the weights must be θ' itself
        require_weights(f"{name}(proxy='taylor')", st, skeleton.captured, theta_new)
        theta = np.asarray(locs[0].value, dtype=float)
        far = getattr(self, "_far", None)
        if far is None:
            from thrifty.inference.subsampling.smh import FarFromMode

            far = self._far = FarFromMode(f"{name}(proxy='taylor')")
        far.see(st, st.R @ (theta - st.theta_hat), addr)
        return TaylorSections(h, st, theta, theta_new), fresh

    @staticmethod
    def _same_families(st, skeleton) -> bool:
        """False when a family's parameters (a noise scale another kernel moved) changed."""
        for caddr, dist, _, _ in skeleton.captured or ():
            want = st.families.get(caddr)
            if want is not None and not same_value(dist.family.params(), want):
                return False
        return True
