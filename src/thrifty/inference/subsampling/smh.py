r"""Scalable Metropolis–Hastings, ``th.smh`` (paper 002): exact MH that reads O(1) data per step.

The target of the selected vector θ (the weights of GLM observations,
:mod:`thrifty.distributions.glm`) is

    π(θ) ∝ G(θ) · Π_i exp(−U_i(θ)),   U_i(θ) = U(x_i·θ, y_i),

where the N *sections* U_i are the GLM observations inside plates whose weight vector is θ, and
G collects everything else that depends on θ (the prior, factors, non-plate observations).  With
Û_{k,i} the k-th order Taylor expansion of U_i at a fixed θ̂ and Û_k = Σ_i Û_{k,i}, write

    π ∝ ρ_0 · Π_i ρ_i,   ρ_0 = G e^{−Û_k} / π̂_q,   ρ_i = exp(Û_{k,i} − U_i),

where π̂_q is the measure the proposal q is reversible for (π̂_q ≡ 1 for a symmetric random
walk; the Gaussian π̂ = N(m, P⁻¹) for the reversible proposal).  Factorised MH (002 §FMH) accepts
θ' with probability ``(1 ∧ ρ_0(θ')/ρ_0(θ)) · Π_i (1 ∧ ρ_i(θ')/ρ_i(θ))`` — an independent coin per
factor; it is reversible because π(θ) q(θ, θ') α(θ, θ') = π̂_q(θ) q(θ, θ') Π_j ρ_j(θ) ∧ ρ_j(θ')
is symmetric.

* The first factor costs O(d²): G's log-ratio is the exact log-ratio of a *lazy* run (plates
  execute zero elements), Û_k's difference comes from Σ_i ∇U_i(θ̂) and Σ_i ∇²U_i(θ̂), stored at
  set-up.  The lazy run also builds each section plate's GLM (with no rows): its weights must
  be θ' itself — the set-up saw them equal θ at two points only, and a function equal to θ
  there (``np.abs(w)``, a branch on w) would make every U_i(θ') wrong; such a model is refused.
* The section factors: λ_i = −log(1 ∧ ρ_i(θ')/ρ_i(θ)) = (Δ_i)⁺ with Δ_i = R_i(θ') − R_i(θ) and
  R_i = U_i − Û_{k,i}.  Given bounds λ̄_i = Σ_c φ_c(θ, θ') ψ_{c,i} ≥ λ_i, Poisson thinning draws
  C_c ~ Poisson(φ_c Σ_i ψ_{c,i}) candidates from the alias table of ψ_c (:mod:`.alias`) and
  rejects iff some candidate i has U < λ_i/λ̄_i for its uniform U: P(accept) = exp(−Σ_i λ_i)
  exactly, at the cost of evaluating the C candidates only.
* Fallback: when the expected number of candidates exceeds a threshold (at most N; see
  ``fallback``) — far from θ̂, e.g. during burn-in — the step is a plain MH step on the full data
  (O(N)).  The switch is a symmetric function of (θ, θ') and each of the two acceptance rules is
  reversible on its own, so the kernel stays reversible.

Bounds (``bound=``)
-------------------
Write δ_i = x_i·(θ − θ̂), δ'_i = x_i·(θ' − θ̂) and r_k for the order-k Taylor remainder of the
scalar function η ↦ U(η, y_i) at η̂_i = x_i·θ̂, so R_i(θ) = r_k(δ_i) and, since the derivative of
a Taylor polynomial is the Taylor polynomial of the derivative, r_k' is the order-(k−1)
remainder of U'.  With M_m = sup_η |U^{(m)}| (:meth:`GLMFamily.bound`):

    |r_k'(u)| ≤ M_{k+1}|u|^k/k!,   so  |Δ_i| = |∫_δ^{δ'} r_k'(u) du| ≤ M_{k+1}/k! · J_{k+1},
    J_m = |∫_δ^{δ'} |u|^{m−1} du| = |ψ_m(δ') − ψ_m(δ)|/m,   ψ_m(x) = sign(x)|x|^m.          (★)

J_m ≤ (|δ|^m + |δ'|^m)/m (split at 0) and J_m ≤ |δ' − δ| max(|δ|, |δ'|)^{m−1} (length × the
largest integrand).  The bounds differ in how they bound δ_i by a product "θ-part × i-part".

``"l1"`` — 002: |x_i·v| ≤ max_j |x_ij| ‖v‖₁, giving λ̄_i = (‖θ−θ̂‖₁^{k+1} + ‖θ'−θ̂‖₁^{k+1}) ·
M_{k+1} max_j |x_ij|^{k+1}/(k+1)!.

``"metric"`` — Cauchy–Schwarz in the metric of the posterior.  Let P = RᵀR be the precision of the
Laplace approximation at θ̂ (any positive definite matrix gives a valid bound; this one makes the
θ-part O(1) at stationarity), z = R(θ−θ̂), z' = R(θ'−θ̂), r = |z|, r' = |z'|, D = |z'−z|,
s_i = |R⁻ᵀx_i| = (x_iᵀP⁻¹x_i)^{1/2} and ŵ_i = R⁻ᵀx_i/s_i, so that δ_i = s_i ŵ_i·z.  Then

    λ_i ≤ M_{k+1} s_i^{k+1}/(k+1)! · φ_{k+1},   φ_m = sup_{|w|=1} |ψ_m(w·z') − ψ_m(w·z)|.   (♦)

*Proof.*  By (★), λ_i ≤ |Δ_i| ≤ M_{k+1}/k! · s_i^{k+1} |ψ(ŵ_i·z') − ψ(ŵ_i·z)|/(k+1), and ŵ_i is a
unit vector.  ∎  The sup only involves the projection of w on span(z, z') (a shorter projection
scales the value by |p|^m ≤ 1), so it is a one-dimensional sup over directions in that plane,
bounded from a grid of 64 directions with an explicit error term (:func:`_plane`).  It is at
most min(r^m + r'^m, m D max(r, r')^{m−1}) (the two estimates of J_m with |w·z| ≤ r etc.; the
second wins for small random-walk steps), and for the nearly orthogonal z, z' of independent
proposals in d ≥ 3 it is ≈ max(r, r')^m rather than r^m + r'^m.  Compared with ``"l1"``, the
θ-part r² ~ χ²_d at stationarity instead of ‖θ − θ̂‖₁² ≈ (2/π)(Σ_j sd_j)², which pays √d and the
anisotropy of the posterior.

``"local"`` (default; used when the family implements ``d3`` and ``bound(k+2)``, else
``"metric"``) — as ``"metric"``, with the derivative bound taken at each section's own η̂_i:
|U^{(k+1)}(η)| ≤ A_i + B|η − η̂_i| with A_i = |U^{(k+1)}(η̂_i, y_i)| (:meth:`GLMFamily.local_bound`)
and B = M_{k+2} (mean-value theorem).  Integrating, |r_k'(u)| ≤ A_i|u|^k/k! + B|u|^{k+1}/(k+1)!,
and (★)–(♦) apply to each power:

    λ_i ≤ A_i s_i^{k+1}/(k+1)! · φ_{k+1} + B s_i^{k+2}/(k+2)! · φ_{k+2}.

Two alias tables (one per term) and superposed Poisson processes (a candidate from either is
kept with probability λ_i/λ̄_i, λ̄_i the sum).  For logistic regression most sections sit where
|U'''(η̂_i)| is well below its sup 1/(6√3); the second term is of lower order in n.
``tests/test_smh.py`` checks λ_i ≤ λ̄_i on random pairs for every family, order and bound.
Measured (``benchmarks/smh_scaling.py``: logistic regression, d = 10, n = 2¹⁷ ≈ 1.3·10⁵, SMH-2
with the reversible proposal, 8,000 steps): 18.6 likelihood terms per step with ``"l1"``, 2.7
with ``"metric"`` and 1.1 with ``"local"``.

Thinning may use a bound that is not symmetric in (θ, θ') (the grid), because P(accept) =
exp(−Σλ_i) whatever valid bound is used; the fallback switch uses the symmetric Cauchy–Schwarz
rate Σ_c min(r^m + r'^m, m D max(r, r')^{m−1}) Ψ_c.

Notes.  θ̂ is found at set-up (Newton with step halving on the full-data log posterior, using the
likelihood and the prior of θ; other terms of G are ignored there, which affects speed, not
exactness), unless ``theta_hat`` is given.  Set-up is redone, O(N), when the data or the family's
parameters change (Geweke tests; a noise scale updated by another kernel); it never depends on
the current θ, so the kernel between set-ups is a fixed π-reversible kernel.  After an accepted
step the plate elements are stale (not rescored): the runs that next read them rescore them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from thrifty._args import checked_keywords
from thrifty._warn import user_stacklevel
from thrifty.core.address import as_pattern, fmt
from thrifty.core.engine import (
    LAZY_CAPTURE,
    same_value,
    top_choice,
)
from thrifty.errors import ArgumentError, SelectionError
from thrifty.inference.numerics.alias import AliasTable
from thrifty.inference.proposals.base import Drift, require_scale
from thrifty.inference.selecting import Selecting
from thrifty.inference.subsampling.glm_sections import (
    Sections,
    apply,
    derivs,
    find,
    require_weights,
    resolve,
    still_valid,
)
from thrifty.inference.subsampling.glm_sections import confirm as confirm_sections

_LAZY = LAZY_CAPTURE  # the global factor: plates execute no element
_BOUNDS = ("local", "metric", "l1")
# per-step statistics: likelihood terms evaluated (thinning candidates, N per fallback), full-data
# fallback steps, O(N) set-ups, and the Poisson rate Σ_c φ_c Ψ_c of each proposal
_COUNTERS = ("terms", "fallbacks", "setups", "poisson_rate")
_THRESHOLD_N = 400  # pairs (θ, θ') of the fixed-seed simulation of SMH._threshold
_THRESHOLD_FLOOR = 100.0  # ... and the least threshold it gives (N if N is less: no simulation)
_THRESHOLD_DRAWS: dict = {}  # (d, reversible) → its standard draws (the same at every set-up)


def _threshold_draws(d: int, reversible: bool) -> tuple:
    """The standard draws of :meth:`SMH._threshold`'s simulation with the random-walk or
    reversible proposal, from ``default_rng(7)`` in the order it takes them: the same at every
    set-up, so made once per ``(d, reversible)`` (a set-up per step — the data changing, as in
    a Geweke test — spent a fifth of its time making them again)."""
    key = (d, reversible)
    out = _THRESHOLD_DRAWS.get(key)
    if out is None:
        rng0, n = np.random.default_rng(7), _THRESHOLD_N
        out = [rng0.standard_normal((n, d)), rng0.standard_normal((n, d))]
        if reversible:
            out += [rng0.standard_normal((n, d)), rng0.random((n, 1))]
        for a in out:
            a.flags.writeable = False
        out = _THRESHOLD_DRAWS[key] = tuple(out)
    return out


def positive_definite(a: np.ndarray) -> np.ndarray:
    """``a`` symmetrised with its eigenvalues clamped to ≥ 1e-10 × the largest (and > 0)."""
    a = 0.5 * (a + a.T)
    w, v = np.linalg.eigh(a)
    top = max(float(np.max(np.abs(w))), 1e-300)
    w = np.maximum(w, 1e-10 * top)
    return (v * w) @ v.T


def prior_model(d, k: int):
    """θ ↦ (log p(θ) + const, ∇ log p, ∇² log p) for the prior ``d`` of the selected choice.

    Exact and cheap for MvNormal and Normal priors; central finite differences otherwise (the
    result only steers θ̂ and the Laplace approximation — speed, not exactness).
    """
    from thrifty.distributions import MvNormal, Normal

    prec = loc = None
    if isinstance(d, MvNormal) and len(d.batch_shape) == 0:
        linv = np.linalg.inv(d.scale_tril)
        prec, loc = linv.T @ linv, np.asarray(d.loc, dtype=float)
    elif isinstance(d, Normal) and np.broadcast_shapes(np.shape(d.loc), (k,)) == (k,):
        var = np.broadcast_to(np.asarray(d.scale, dtype=float) ** 2, (k,))
        prec, loc = np.diag(1.0 / var), np.broadcast_to(np.asarray(d.loc, dtype=float), (k,))
    if prec is not None:

        def quad(theta):
            g = -prec @ (theta - loc)
            return 0.5 * float(g @ (theta - loc)), g, -prec

        return quad

    def f(t):
        return float(np.sum(d.log_prob(t)))

    def numeric(theta):
        h = 1e-4 * np.maximum(1.0, np.abs(theta))
        grad = np.zeros(k)
        hess = np.zeros((k, k))
        for j in range(k):
            e = np.zeros(k)
            e[j] = h[j]
            grad[j] = (f(theta + e) - f(theta - e)) / (2 * h[j])
            for m in range(j, k):
                e2 = np.zeros(k)
                e2[m] = h[m]
                hess[j, m] = hess[m, j] = (
                    f(theta + e + e2) - f(theta + e - e2) - f(theta - e + e2) + f(theta - e - e2)
                ) / (4 * h[j] * h[m])
        if not (np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
            grad, hess = np.zeros(k), np.zeros((k, k))
        return f(theta), grad, hess

    return numeric


class FarFromMode:
    """Warns once when a chain stays far from θ̂ (paper 002: the bounds are tight near θ̂).

    SMH's bounds and the Taylor proxy of ``subsampled_mh(proxy="taylor")`` are tight only near
    θ̂: far from it SMH's steps fall back to full-data MH or are rejected, and the proxy needs
    most of the data per decision — a chain started far away (``init``) may never arrive.  "Far"
    is a Mahalanobis distance r = ‖R(θ − θ̂)‖ under the Laplace approximation N(θ̂, (RᵀR)⁻¹)
    with r² above the χ²_d quantile of 1 − 1e-9 (≈ 7.1 for d = 5), for ``STEPS`` steps in a
    row: at stationarity a single such step already has probability ≈ 1e-9 when the Laplace
    approximation fits (tall data), so the warning is not a false alarm of a healthy chain.
    """

    STEPS = 200

    def __init__(self, who: str):
        self.who = who
        self.run = 0
        self.warned = False
        self._limit = None  # (d, r² limit)

    def see(self, st, u, addr) -> None:
        """One step at θ with u = R(θ − θ̂)."""
        if self.warned:
            return
        d = len(u)
        if self._limit is None or self._limit[0] != d:
            from scipy.stats import chi2

            self._limit = (d, float(chi2.isf(1e-9, d)))
        r2 = float(u @ u)
        if not r2 > self._limit[1]:
            self.run = 0
            return
        self.run += 1
        if self.run >= self.STEPS:
            self.warned = True
            warnings.warn(
                f"{self.who}: the chain has been far from θ̂ for {self.run} steps ("
                f"{fmt(addr)} at Mahalanobis distance {math.sqrt(r2):.1f} from θ̂ under the "
                f"Laplace approximation; the posterior rarely goes beyond "
                f"{math.sqrt(self._limit[1]):.1f}).  Its bounds are tight only near θ̂, so "
                "these steps cost up to a full-data pass or are rejected and the chain may not "
                f"reach the posterior: leave {fmt(addr)} out of init (the chain then starts at "
                "θ̂), or start it near the posterior mode",
                FarFromModeWarning,
                stacklevel=user_stacklevel(),
            )


class FarFromModeWarning(UserWarning):
    """A th.smh or subsampled_mh(proxy="taylor") chain stays far from θ̂ (see FarFromMode)."""


class SMH(Selecting):
    """Scalable Metropolis–Hastings on one vector choice; see :func:`thrifty.smh`."""

    name = "smh"

    def __init__(
        self,
        selection,
        order: int = 2,
        proposal="reversible",
        theta_hat=None,
        bound: str = "local",
        rho: float = 0.0,
        scale: float | None = None,
        fallback="auto",
        rw_mix: float = 0.1,
    ):
        super().__init__(selection)
        for name in _COUNTERS:  # reported as <name>_per_step by Stats.as_dict
            self.info.count(name, 0)
        if order not in (1, 2):
            raise ArgumentError(f"smh: order must be 1 or 2, got {order!r}")
        if bound not in _BOUNDS:
            raise ArgumentError(f"smh: bound must be one of {_BOUNDS}, got {bound!r}")
        if isinstance(proposal, str):
            if proposal not in ("reversible", "random_walk"):
                raise ArgumentError(
                    f"smh: proposal must be 'reversible', 'random_walk' or th.drift(...), "
                    f"got {proposal!r}"
                )
        elif not isinstance(proposal, Drift):
            raise ArgumentError(
                f"smh: proposal must be 'reversible' or th.drift(...), got {proposal!r}"
            )
        if not 0.0 <= rho < 1.0:
            raise ArgumentError(f"smh: rho must be in [0, 1), got {rho!r}")
        if not 0.0 <= rw_mix <= 1.0:
            raise ArgumentError(f"smh: rw_mix must be in [0, 1], got {rw_mix!r}")
        self.rw_mix = float(rw_mix)
        self.order = order
        self.proposal = proposal
        require_scale("smh", self.proposal)
        self.theta_hat = None if theta_hat is None else np.asarray(theta_hat, dtype=float)
        self.bound = bound
        self.rho = float(rho)
        self.scale = scale  # random walk: step = scale · P^{-1/2} ξ (default 2.38/√d)
        if fallback != "auto" and not (isinstance(fallback, (int, float)) and fallback >= 0):
            raise ArgumentError(f"smh: fallback must be 'auto' or a rate >= 0, got {fallback!r}")
        self.fallback = fallback
        self._st: Sections | None = None
        self._warned = False
        self._far = FarFromMode("smh")

    def label(self) -> str:
        p = self.proposal
        if p == "reversible":
            p = f"reversible(rho={self.rho}, rw_mix={self.rw_mix})"
        return f"smh({self.selection!r}, order={self.order}, proposal={p}, bound={self.bound})"

    # -- pickling (checkpoints, deep copies): the set-up is rebuilt, deterministically ----------
    def __getstate__(self):
        state = self.__dict__.copy()
        state["_st"] = None
        return state

    # -- set-up ---------------------------------------------------------------------------------
    @property
    def sections(self) -> Sections | None:
        """The GLM sections of θ found last (:mod:`.glm_sections`), with what this kernel
        precomputed from them (θ̂, control variates, bounds), or None."""
        return self._st

    def valid(self, trace) -> bool:
        """Whether :attr:`sections` are those of ``trace`` now (O(1))."""
        return still_valid(self._st, trace)

    def setup(self, trace, precompute: bool = True, bounds: bool = True) -> Sections:
        """Find the GLM sections of the selected θ (O(N), :func:`.glm_sections.find`; kept with
        what was precomputed when the data and families are the same); for new ones, with
        ``precompute`` also θ̂ and the control variates, and with ``bounds`` the bounds and
        alias tables.  (Other kernels need less: the SGLD proposal only the sections,
        ``proxy="taylor"`` no bounds.)  Stored as :attr:`sections`."""
        st, kept = find(self, trace, self._st, prior_model)
        if not kept and precompute:
            self._precompute(st, top_choice(trace, st.addr)[0], bounds)
        self._st = st
        return st

    def confirm(self, run, trace) -> bool:
        """After a committed full captured ``run`` (``mode=SETUP_MODE``), whether the sections
        still hold the trace's data and families (:func:`.glm_sections.confirm`)."""
        return confirm_sections(self._st, run, trace)

    def _objective(self, st, theta):
        """Newton pieces on the full data: (F, ∇F, PD Hessian) with F = ΣU_i − log prior."""
        st.passes += 1
        eta = st.X @ theta
        u = float(np.sum(derivs(st, eta, 0)))
        g1 = derivs(st, eta, 1)
        g2 = derivs(st, eta, 2)
        lp, gp, hp = st.prior(theta)
        f = u - lp
        grad = st.X.T @ g1 - gp
        hess = st.X.T @ (np.maximum(g2, 0.0)[:, None] * st.X) - hp
        return f, grad, hess

    def _newton(self, st):
        theta = np.zeros(st.d)
        f, grad, hess = self._objective(st, theta)
        for _ in range(100):
            step = np.linalg.inv(positive_definite(hess)) @ grad
            dec = float(grad @ step)
            if not dec > 1e-12:
                break
            t = 1.0
            while t > 1e-12:
                new = theta - t * step
                f_new, g_new, h_new = self._objective(st, new)
                if f_new <= f - 1e-4 * t * dec:
                    break
                t *= 0.5
            else:
                break
            theta, f, grad, hess = new, f_new, g_new, h_new
        return theta

    def _precompute(self, st, theta_now, bounds=True):
        k, d = self.order, st.d
        if self.theta_hat is not None:
            if self.theta_hat.shape != (d,):
                raise ArgumentError(
                    f"smh: theta_hat must have shape ({d},), got {self.theta_hat.shape}"
                )
            th_hat = self.theta_hat.copy()
        else:
            th_hat = self._newton(st)
        X = st.X
        st.passes += 1
        eta_hat = X @ th_hat
        g = derivs(st, eta_hat, 1)
        h = derivs(st, eta_hat, 2)
        st.theta_hat, st.eta_hat, st.g = th_hat, eta_hat, g
        st.h = h if k == 2 else None
        st.G = X.T @ g  # Σ ∇U_i(θ̂)
        st.H = X.T @ (h[:, None] * X)  # Σ ∇²U_i(θ̂) (exact, may be indefinite)
        _, gp, hp = st.prior(th_hat)
        # Laplace approximation π̂ = N(m, P⁻¹) of exp(−Û₂)·prior at θ̂
        P = positive_definite(X.T @ (np.maximum(h, 0.0)[:, None] * X) - hp)
        R = np.linalg.cholesky(P).T  # P = RᵀR, R upper triangular
        st.R = R
        st.Rinv = np.linalg.inv(R)
        st.m = th_hat - st.Rinv @ (st.Rinv.T @ (st.G - gp))
        st.c = R @ (st.m - th_hat)
        if not bounds:
            self.info.count("setups")
            return
        # bounds: components (power m, ψ array, alias table)
        for caddr, fam in zip(st.families, st.fams):  # (002: exact only with valid bounds)
            if not fam.has_bound(k + 1):
                raise SelectionError(
                    f"smh: the glm family {type(fam).__name__} at {fmt(caddr)} has no bound on "
                    f"derivative {k + 1} of its potential, which order={k} needs (002's bounds "
                    "on the Taylor remainder); implement GLMFamily.bound, or use th.mh / "
                    "th.nuts on this model"
                )
        fam_bound = self._fam_bound
        comps = []
        bound = self.bound
        if bound == "local" and not all(f.has_d3() and f.has_bound(k + 2) for f in st.fams):
            bound = "metric"
        st.bound = bound
        fact = math.factorial
        if bound == "l1":
            mx = np.max(np.abs(X), axis=1)
            psi = fam_bound(st, k + 1) * mx ** (k + 1) / fact(k + 1)
            comps.append((k + 1, psi))
        else:
            Z = X @ st.Rinv  # rows: (R⁻ᵀ xᵢ)ᵀ
            s = np.sqrt(np.einsum("ij,ij->i", Z, Z))
            if bound == "metric":
                comps.append((k + 1, fam_bound(st, k + 1) * s ** (k + 1) / fact(k + 1)))
            else:
                a_loc = apply(
                    st, None, lambda fam, y, e: fam.local_bound(k + 1, e, y), eta_hat
                )
                comps.append((k + 1, a_loc * s ** (k + 1) / fact(k + 1)))
                comps.append((k + 2, fam_bound(st, k + 2) * s ** (k + 2) / fact(k + 2)))
        st.comps = []
        for power, psi in comps:
            psi = np.ascontiguousarray(np.broadcast_to(psi, (st.N,)), dtype=float)
            total = float(psi.sum())
            if total > 0:
                st.comps.append((power, psi, AliasTable(psi), total))
        st.powers = [c[0] for c in st.comps]
        st.n_rw = 2.38 / math.sqrt(d) if self.scale is None else float(self.scale)
        st.threshold = self._threshold(st)
        self.info.count("setups")

    def _fam_bound(self, st, k):
        def fn(fam, y):
            return np.broadcast_to(np.asarray(fam.bound(k, y), dtype=float), y.shape)

        return apply(st, None, fn)

    def start(self, trace, rng, init: dict) -> None:
        """Start the chain at θ̂ (the posterior mode found at set-up, or ``theta_hat``) unless
        ``init`` sets the selected choice: SMH's bounds are tight only near θ̂ — started from
        the prior, a chain falls back to full-data steps and mixes slowly."""
        addr, _ = resolve(self, trace)
        given = {as_pattern(k) if isinstance(k, str) else tuple(k) for k in init}
        if addr in given:
            return
        self._st = st = self.setup(trace)
        run = self.execute(trace, rng, targets={addr: st.theta_hat.copy()})
        if run.aborted is None and np.isfinite(run.lp_new):
            run.commit()  # (θ moved: the set-up, tied to the data and structure, stays valid)
            st.clock = trace.clock

    # -- one step -------------------------------------------------------------------------------
    def _step(self, trace, rng):
        if not self.valid(trace):
            self._st = self.setup(trace)
        st = self._st
        for _ in range(2):
            done = self._try(trace, rng, st)
            if done:
                return trace
            # the family's parameters changed (another kernel moved them): set up again
            self._st = st = self.setup(trace)
        raise RuntimeError("smh: the glm family keeps changing between two runs")

    def _try(self, trace, rng, st) -> bool:
        stats = self.info
        theta = top_choice(trace, st.addr)[0]
        theta_new, pcn = self._propose(st, theta, rng)
        dv, dv_new, u, u_new, phis_sw, phis = _geometry(st, theta, theta_new)
        far = getattr(self, "_far", None)
        if far is None:  # (a kernel pickled by an earlier version)
            far = self._far = FarFromMode("smh")
        far.see(st, u, st.addr)
        rates = [phi * c[3] for phi, c in zip(phis, st.comps)]
        rate = sum(rates)
        stats.count("poisson_rate", rate)

        # the exact global factor G(θ')/G(θ): a lazy run (plates execute no element)
        run = self.execute(trace, rng, targets={st.addr: theta_new}, mode=_LAZY)
        run.check_targets(1)
        if run.n_fresh or run.n_stale:
            raise SelectionError(
                f"smh: changing {fmt(st.addr)} changes the structure of the program; smh needs a "
                "fixed structure"
            )
        require_weights("smh", st, run.captured, theta_new)  # the sections' GLMs, no rows
        for caddr, dist, _, _ in run.captured:
            want = st.families.get(caddr)
            if want is not None and not same_value(dist.family.params(), want):
                return False
        log_g = run.lp_new - run.lp_old
        stats.proposed += 1
        if not log_g > -math.inf:
            return True
        log_q = 0.0  # log π̂_q(θ) − log π̂_q(θ') for the reversible proposal
        if pcn:
            a, b = u - st.c, u_new - st.c
            log_q = 0.5 * float(b @ b - a @ a)

        rate_sw = sum(phi * c[3] for phi, c in zip(phis_sw, st.comps))
        if rate_sw > st.threshold:  # fallback: full-data MH (symmetric switch, exact)
            stats.count("fallbacks")
            stats.count("terms", st.N)
            X = st.X
            du_full = derivs(st, X @ theta_new, 0) - derivs(st, X @ theta, 0)
            log_alpha = log_g - float(np.sum(du_full)) + log_q
            if log_alpha >= 0 or math.log(rng.random()) < log_alpha:
                run.commit()
                st.clock = trace.clock  # (only θ changed: the sections' data did not)
                stats.accepted += 1
            return True

        # first factor: ρ_0 = G e^{−Û_k} / π̂_q
        step = theta_new - theta
        d_hat = float(st.G @ step)
        if self.order == 2:
            d_hat += 0.5 * float(dv_new @ st.H @ dv_new - dv @ st.H @ dv)
        log_f1 = log_g - d_hat + log_q
        if not (log_f1 >= 0 or math.log(rng.random()) < log_f1):
            return True

        # section factors: Poisson thinning
        idx_parts = []
        for rt, c in zip(rates, st.comps):
            if rt > 0:
                n_c = int(rng.poisson(rt))
                if n_c:
                    idx_parts.append(c[2].sample(rng, n_c))
        if idx_parts:
            idx = idx_parts[0] if len(idx_parts) == 1 else np.concatenate(idx_parts)
            stats.count("terms", len(idx))
            lam_bar = phis[0] * st.comps[0][1][idx]
            for phi, c in zip(phis[1:], st.comps[1:]):
                lam_bar = lam_bar + phi * c[1][idx]
            lam = self._section_delta(st, idx, theta, theta_new)
            if np.any(rng.random(len(idx)) * lam_bar < lam):
                return True
        run.commit()
        st.clock = trace.clock  # (only θ changed: the sections' data did not)
        stats.accepted += 1
        return True

    def _propose(self, st, theta, rng):
        """(θ', whether it is a pCN proposal).  "reversible": pCN, or with probability
        ``rw_mix`` a random-walk step — a mixture of two π-reversible kernels chosen
        independently of the state (the random walk lets the chain leave regions where the
        Gaussian π̂ is much lighter-tailed than π, where pCN proposals are all rejected)."""
        prop = self.proposal
        if prop == "reversible" and not (self.rw_mix and rng.random() < self.rw_mix):
            rho = self.rho
            xi = st.Rinv @ rng.standard_normal(st.d)
            return st.m + rho * (theta - st.m) + math.sqrt(1.0 - rho * rho) * xi, True
        if prop == "reversible" or prop == "random_walk":
            return theta + st.n_rw * (st.Rinv @ rng.standard_normal(st.d)), False
        return np.asarray(prop.propose(st.addr, theta, False, rng), dtype=float), False

    def _threshold(self, st) -> float:
        """The Poisson rate above which a step is a full-data MH step.

        ``fallback="auto"``: min(N, max(100, 10 × the 99th percentile of the rate over pairs
        θ ~ N(m, P⁻¹), θ' ~ q(θ, ·))), from a fixed-seed simulation at set-up.  Far from θ̂
        (burn-in from a prior draw) the bound, hence the rate, grows like ‖θ − θ̂‖^{k+1} while the
        factorised acceptance decays like exp(−Σλ_i): full-data steps are then both cheaper per
        accepted move and needed to make progress.  Any threshold gives an exact kernel.
        """
        if self.fallback != "auto":
            return min(float(self.fallback), float(st.N))
        if not st.comps or st.N <= _THRESHOLD_FLOOR:  # (min(N, max(floor, ·)) is N)
            return float(st.N)
        n = _THRESHOLD_N
        prop = self.proposal
        if prop == "reversible" or prop == "random_walk":
            z = _threshold_draws(st.d, prop == "reversible")
            theta = st.m + z[0] @ st.Rinv.T
            theta_new = theta + st.n_rw * (z[1] @ st.Rinv.T)
        else:
            rng0 = np.random.default_rng(7)
            theta = st.m + rng0.standard_normal((n, st.d)) @ st.Rinv.T
            theta_new = np.asarray(prop.propose_many(st.addr, theta, False, rng0), dtype=float)
        if prop == "reversible":
            xi = z[2] @ st.Rinv.T
            pcn = st.m + self.rho * (theta - st.m) + math.sqrt(1 - self.rho**2) * xi
            theta_new = np.where(z[3] < self.rw_mix, theta_new, pcn)
        dv, dv_new = theta - st.theta_hat, theta_new - st.theta_hat
        if st.bound == "l1":
            r, r_new = np.abs(dv).sum(1), np.abs(dv_new).sum(1)
            phis = [r**p + r_new**p for p in st.powers]
        else:
            u, u_new = dv @ st.R.T, dv_new @ st.R.T
            r, r_new = np.linalg.norm(u, axis=1), np.linalg.norm(u_new, axis=1)
            dist, rmax = np.linalg.norm(u_new - u, axis=1), np.maximum(r, r_new)
            phis = [np.minimum(r**p + r_new**p, p * dist * rmax ** (p - 1)) for p in st.powers]
        rates = sum(phi * c[3] for phi, c in zip(phis, st.comps))
        return float(min(st.N, max(_THRESHOLD_FLOOR, 10.0 * np.quantile(rates, 0.99))))

    def _section_delta(self, st, idx, theta, theta_new):
        """Δ_i = R_i(θ') − R_i(θ) for the sections ``idx`` (λ_i = max(Δ_i, 0))."""
        c = len(idx)
        eta2 = st.X[idx] @ np.stack([theta, theta_new], axis=1)  # (C, 2): η and η'
        eta = eta2[:, 0]
        eta_new = eta2[:, 1]
        eh = st.eta_hat[idx]
        dl, dl_new = eta - eh, eta_new - eh
        if st.gid is None:  # one potential call for both points
            u2 = st.fams[0].potential(eta2.T.reshape(-1), np.tile(st.y[idx], 2))
            du = u2[c:] - u2[:c]
        else:
            du = derivs(st, eta_new, 0, idx) - derivs(st, eta, 0, idx)
        out = du - st.g[idx] * (dl_new - dl)
        if self.order == 2:
            out -= 0.5 * st.h[idx] * (dl_new * dl_new - dl * dl)
        return out

    # -- introspection (tests, benchmarks) -----------------------------------------------------
    def setup_info(self, trace) -> dict:
        """θ̂, the bound in use and Σψ per component (runs the set-up if needed)."""
        if not self.valid(trace):
            self._st = self.setup(trace)
        st = self._st
        return {
            "theta_hat": st.theta_hat.copy(),
            "bound": st.bound,
            "n": st.N,
            "psi_sums": [c[3] for c in st.comps],
            "powers": [c[0] for c in st.comps],
            "precision": st.R.T @ st.R,
        }

    def bound_pair(self, trace, theta, theta_new):
        """(λ_i, λ̄_i) for every section at the pair (θ, θ') — O(N), for tests."""
        if not self.valid(trace):
            self._st = self.setup(trace)
        st = self._st
        lam = np.maximum(self._section_delta(st, np.arange(st.N), theta, theta_new), 0.0)
        phis = _geometry(st, theta, theta_new)[5]
        lam_bar = np.zeros(st.N)
        for phi, c in zip(phis, st.comps):
            lam_bar += phi * c[1]
        return lam, lam_bar


# the plane bound: a grid of directions in span(z, z'), symmetric under s → −s (period π)
_K = 64
_ANG = (np.arange(_K) + 0.5) * (math.pi / _K) - 0.5 * math.pi
_COS, _SIN = np.cos(_ANG), np.sin(_ANG)
_H = 0.5 * math.pi / _K  # every direction is within _H of a grid direction


def _plane(u, u_new, r, r_new, powers, base):
    """A tighter φ_m: the sup over unit directions w in span(z, z') of |ψ_m(w·z') − ψ_m(w·z)|.

    For a section with ŵ_i = R⁻ᵀx_i/s_i (a unit vector), δ_i = s_i ŵ_i·z and δ'_i = s_i ŵ_i·z'
    (z = R(θ−θ̂), z' = R(θ'−θ̂)), and J_m = |∫_δ^{δ'} |u|^{m−1} du| = |ψ_m(δ') − ψ_m(δ)|/m with
    ψ_m(x) = sign(x)|x|^m.  So J_m = s_i^m g(ŵ_i)/m with g(w) = |ψ_m(w·z') − ψ_m(w·z)|, which
    depends on w only through its projection p on the plane span(z, z'); g(p) ≤ g(p/|p|)·|p|^m,
    so φ_m = sup over unit w in the plane of g is valid.  (g ≤ |w·z|^m + |w·z'|^m and g ≤
    m|w·(z'−z)| max(|w·z|, |w·z'|)^{m−1}: it is never worse than the Cauchy–Schwarz forms.)
    The sup is bounded from a grid of _K directions: along the circle, g = |G| with G' Lipschitz
    of constant m²(r^m + r'^m) and G' = 0 where |G| is maximal, so the grid misses at most
    m²(r^m + r'^m)_H²/2.  For nearly orthogonal z, z' (independent proposals, d ≥ 3) φ_m is
    ≈ max(r, r')^m instead of r^m + r'^m.  ``base`` (Cauchy–Schwarz) caps it.
    """
    rmax = max(r, r_new)
    if r <= 1e-12 * rmax or r_new <= 1e-12 * rmax:
        return base
    a = u / r
    b = u_new / r_new
    e1, e2 = a + b, a - b
    n1, n2 = math.sqrt(e1 @ e1), math.sqrt(e2 @ e2)
    if n1 < 1e-9 or n2 < 1e-9:  # collinear: Cauchy–Schwarz is attained
        return base
    # coordinates in the orthonormal basis (e1/n1, e2/n2): z = r(n1, n2)/2, z' = r'(n1, −n2)/2
    pa = (0.5 * r) * (n1 * _COS + n2 * _SIN)
    pb = (0.5 * r_new) * (n1 * _COS - n2 * _SIN)
    aa, ab = np.abs(pa), np.abs(pb)
    out = []
    for m, cap in zip(powers, base):
        g = np.abs(pb * ab ** (m - 1) - pa * aa ** (m - 1))  # |ψ_m(w·z') − ψ_m(w·z)|
        sup = g.max() + 0.5 * m * m * (r**m + r_new**m) * _H * _H
        out.append(min(cap, float(sup)))
    return out


def _geometry(st, theta, theta_new):
    """(θ−θ̂, θ'−θ̂, R(θ−θ̂), R(θ'−θ̂), φ for the fallback switch, φ for thinning).

    The switch's φ (Cauchy–Schwarz) is symmetric in (θ, θ'), as the fallback rule needs; the
    thinning φ may be any valid bound (it changes the cost of a step, not its law).
    """
    dv = theta - st.theta_hat
    dv_new = theta_new - st.theta_hat
    u = st.R @ dv
    u_new = st.R @ dv_new
    powers = st.powers
    if st.bound == "l1":
        r, r_new = float(np.abs(dv).sum()), float(np.abs(dv_new).sum())
        phis = [r**p + r_new**p for p in powers]
        return dv, dv_new, u, u_new, phis, phis
    r, r_new = math.sqrt(u @ u), math.sqrt(u_new @ u_new)
    du = u_new - u
    dist = math.sqrt(du @ du)
    rmax = max(r, r_new)
    phis = [min(r**p + r_new**p, p * dist * rmax ** (p - 1)) for p in powers]
    return dv, dv_new, u, u_new, phis, _plane(u, u_new, r, r_new, powers, phis)


@checked_keywords
def smh(
    selection,
    order: int = 2,
    proposal="reversible",
    theta_hat=None,
    bound: str = "local",
    rho: float = 0.0,
    scale: float | None = None,
    fallback="auto",
    rw_mix: float = 0.1,
) -> SMH:
    """Scalable Metropolis–Hastings (paper 002): exact MH on GLM weights, O(1) data per step.

    ``selection`` names one top-level vector choice θ whose observations are
    :mod:`thrifty.distributions.glm` distributions inside plates (``glm.logistic(X[i], w)``, ...).

    * ``order`` — 1 or 2: Taylor order of the control variates; with 2, the expected number of
      likelihood terms per step falls like n^{-1/2} (002).
    * ``proposal`` — ``"reversible"``: the pCN proposal θ' = m + ρ(θ − m) + √(1−ρ²) ξ,
      ξ ~ N(0, P⁻¹), reversible for the Laplace approximation N(m, P⁻¹) at θ̂ (its first factor
      is 1 for a Gaussian prior and SMH-2); ``"random_walk"``: θ + scale·P^{-1/2}ξ (default scale
      2.38/√d, i.e. ∝ n^{-1/2}); or ``th.drift(s)``.
    * ``theta_hat`` — the expansion point; default: the posterior mode (Newton, at set-up).
    * ``bound`` — ``"local"`` (default, tightest), ``"metric"`` or ``"l1"`` (002); see
      :mod:`thrifty.inference.subsampling.smh`.
    * ``rho`` — autocorrelation of the reversible proposal (0: independent draws from N(m, P⁻¹)).
    * ``rw_mix`` — with the reversible proposal, the probability of a random-walk step instead
      (a mixture of two exact kernels): pCN alone cannot leave regions where the Gaussian
      approximation is much lighter-tailed than the posterior (a far start, robust likelihoods).
    * ``scale`` — random-walk step in units of P^{-1/2} (default 2.38/√d).
    * ``fallback`` — ``"auto"`` or a Poisson rate above which a step uses the full data.

    Statistics (``result.stats``, per step): ``terms_per_step`` (likelihood terms evaluated),
    ``fallbacks_per_step`` (full-data steps), ``setups_per_step``, ``poisson_rate_per_step`` (the
    expected number of terms of the proposals), ``acceptance_rate``.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist, glm
    >>> from thrifty.inference.subsampling.smh import smh
    >>> from thrifty.datasets import synthetic_logistic
    >>> X, y, _ = synthetic_logistic(2000, 3, seed=0)
    >>> @th.model
    ... def m(X, y):
    ...     w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
    ...     with th.plate("data", len(y)) as i:
    ...         th.observe("y", glm.logistic(X[i], w), y[i])
    >>> r = th.infer(m(X, y), smh("w"), num_samples=500, seed=0, progress=False)
    >>> s = r.stats[list(r.stats)[0]]
    >>> bool(s["terms_per_step"] < 5 and s["acceptance_rate"] > 0.5)
    True
    """
    return SMH(selection, order, proposal, theta_hat, bound, rho, scale, fallback, rw_mix)


__all__ = ["SMH", "smh"]
