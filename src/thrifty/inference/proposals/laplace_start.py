"""Where a random walk starts: a draw from the Laplace approximation, found in a few data passes.

A random walk started from a prior draw may spend a long burn-in travelling to the posterior
(the diabetes regression of ``benchmarks/adaptive_drift.py``: σ² ≈ 1 at a prior draw, ≈ 2900 in
the posterior, with correlations up to 0.96 on the way), and the covariance it learns from that
journey describes the journey.  So before the burn-in, a block of continuous top-level choices
updated by ``th.mh`` with ``th.drift()`` (no scale), or by ``th.subsampled_mh`` with its default
proposal or ``proxy="taylor"`` — unless ``init`` gives one of them —

1. finds the mode θ̂ of the log joint in the block's coordinates (the other choices held) and
   H, the Hessian of −log p there;
2. starts the chain at a draw from N(θ̂, H⁻¹), so that chains still start at different points
   and R-hat keeps its meaning;
3. starts an adaptive proposal's covariance at H⁻¹ (λ = 1: Haario's 2.38²/d scaling), which the
   burn-in's windows then refine, pooled with it (:mod:`thrifty.inference.proposals.adapt`).

How θ̂ and H are found, and what it costs (``result.stats[label]["start"]``, per chain):

* **GLM weights** — one top-level real vector θ whose plate terms are
:mod:`thrifty.distributions.glm`
  observations ``glm.logistic(X[i], θ)``, …: Newton's method on the full data with the
  families' own derivatives, ∇U_i = U'(η_i) x_i and ∇²U_i = U''(η_i) x_i x_iᵀ — the set-up of
  ``th.smh`` (:func:`~thrifty.inference.subsampling.glm_sections.find`, paper 002 §3), shared with
  ``proxy="taylor"``, which keeps it.  Two executions of the program find the GLM sections,
  each Newton evaluation is one NumPy pass over X (O(N·d²); typically 5–10 of them), and one
  more execution moves the chain: a few full-data passes, whatever d.  Terms of θ other than
  its prior and the GLM observations in plates (a factor, an observation outside a plate) are
  left out of the fit — they shift the start and the initial covariance, not the chain's law.
* **anything else** — after the two executions that find no GLM sections (for one vector
  choice), BFGS on finite differences, each evaluation one execution of the program (the
  block's part of it), from the initial values, then H by central differences (2d² + 1 more
  executions).  BFGS stops at ``MAX_EXECUTIONS_PER_DIM·(d + 1)`` executions or once they
  have executed ``MAX_ELEMENTS`` plate elements in all, whichever comes first, and goes on from
  the best point found.  So the cost is bounded — about 10⁸ element evaluations for tall data,
  seconds — but it is hundreds of full-data passes, not a few: the raw diabetes regression of
  ``benchmarks/adaptive_drift.py`` (d = 12, N = 442) takes 6,000–9,000 executions, a
  ``dist.Bernoulli(logits=X[i] @ w)`` regression at N = 10⁵, d = 10 is cut at 1,000.  Write
  the observations as GLM terms where they are.

If no finite mode with a positive definite H is found, the chain starts where it is.
"""

from __future__ import annotations

import warnings
from time import perf_counter

import numpy as np
from scipy.optimize import minimize

from thrifty.core.address import as_pattern
from thrifty.core.engine import (
    locate,
    plan_for,
    propose,
)
from thrifty.errors import SelectionError
from thrifty.inference.subsampling.glm_sections import SETUP_MODE

BIG = 1e300
RESTARTS = 6
MAX_EXECUTIONS_PER_DIM = 1000  # BFGS of the fallback: at most this many executions per d + 1
MAX_ELEMENTS = 10**8  # ... and at most this many plate elements executed in all


def laplace_start(kernel, trace, rng, init: dict, proxy=None) -> None:
    """Move ``trace`` to a draw from the Laplace approximation of ``kernel``'s block (see the
    module docstring); with ``proxy`` (a :class:`~thrifty.inference.subsampling.proxy.TaylorProxy`),
    the GLM fit at the proxy's θ̂ only, handed to the proxy."""
    block = _block(kernel, trace, init)
    if block is None:
        return
    addrs, locs = block
    t0 = perf_counter()
    cost = {"method": "glm", "executions": 0, "elements": 0, "newton_passes": 0}
    fit = _glm_fit(trace, addrs, locs, cost, proxy)
    if fit is None:
        if proxy is not None:
            return  # not GLM weights: the proxy's first step says why
        cost["method"] = "bfgs"
        fit = _numeric_fit(trace, rng, locs, cost)
    if fit is not None:
        mode, cov = fit
        helper = None if proxy is None else proxy._helper
        _move(kernel, trace, rng, addrs, locs, mode, cov, cost, helper)
    cost["seconds"] = perf_counter() - t0
    kernel.stats.start = [cost]


def _block(kernel, trace, init):
    """(addresses, locations) of the kernel's block of continuous top-level choices, or None."""
    cs = kernel.choices(trace)
    if cs is None or cs.groups or cs.chain_groups or not cs.scalars:
        return None
    addrs = list(cs.scalars)
    given = {as_pattern(k) if isinstance(k, str) else tuple(k) for k in init}
    if any(a in given for a in addrs):
        return None
    locs = [locate(trace, a) for a in addrs]
    if any(loc is None or loc.discrete or loc.steps for loc in locs):
        return None
    return addrs, locs


def _execute(trace, rng, cost, **kw):
    """One execution of the program, counted in ``cost``."""
    run = propose(trace, rng, **kw)
    cost["executions"] += 1
    cost["elements"] += run.work_elements
    return run


def _splitter(addrs, locs):
    shapes = [np.shape(loc.value) for loc in locs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]

    def split(x) -> dict:
        out, i = {}, 0
        for a, s, n in zip(addrs, shapes, sizes):
            v = x[i : i + n].reshape(s)
            out[a] = float(v) if s == () else v.copy()
            i += n
        return out

    return split


def _move(kernel, trace, rng, addrs, locs, mode, cov, cost, helper=None) -> None:
    """Commit a draw from N(mode, cov) (or the mode itself, if the draw is outside the support)
    and start an adaptive proposal's covariance at ``cov``.  With ``helper`` (the proxy's GLM
    set-up), the move's run captures the observations and the set-up is confirmed against
    them, so that the proxy's first step does not compare the data again."""
    try:
        chol = np.linalg.cholesky(0.5 * (cov + cov.T))
    except np.linalg.LinAlgError:
        return
    cov = chol @ chol.T
    split = _splitter(addrs, locs)
    plan = plan_for(trace, locs)
    for x in (mode + chol @ rng.standard_normal(len(mode)), mode):
        kw = {} if helper is None else {"mode": SETUP_MODE}
        run = _execute(trace, rng, cost, targets=split(x), plan=plan, **kw)
        if run.aborted is None and np.isfinite(run.lp_new):
            run.commit()
            if helper is not None:
                helper.confirm(run, trace)
            if getattr(kernel.proposal, "adaptive", False):
                kernel.proposal.init_covariance(tuple(addrs), cov)
            return


def _glm_fit(trace, addrs, locs, cost, proxy):
    """(θ̂, H⁻¹) by Newton on the GLM observations of a vector choice, or None when the block
    is not the weights of GLM observations."""
    if len(locs) != 1 or locs[0].kind != "site":
        return None
    v = locs[0].value
    if not (isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind == "f"):
        return None
    from thrifty.inference.subsampling.smh import SMH

    h = SMH(addrs[0], order=2, theta_hat=None if proxy is None else proxy.theta_hat)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (smh's own advice on terms outside plates)
            st = h.setup(trace, bounds=False)
    except SelectionError:
        return None
    finally:
        cost["executions"] += h.stats.runs
        cost["elements"] += h.stats.elements
    cost["newton_passes"] += st.passes
    if not np.all(np.isfinite(st.theta_hat)):
        return None
    if proxy is not None:
        proxy._helper = h  # the proxy's set-up: its first step does not redo it
    return st.theta_hat.copy(), st.Rinv @ st.Rinv.T


class _OutOfBudget(Exception):
    pass


def _numeric_fit(trace, rng, locs, cost):
    """(mode, H⁻¹) by BFGS on finite differences and a central-difference Hessian, each
    evaluation an execution of the program (BFGS within the budget of the module docstring)."""
    addrs = [loc.addr for loc in locs]
    split = _splitter(addrs, locs)
    x0 = np.concatenate([np.ravel(np.asarray(loc.value, dtype=float)) for loc in locs])
    plan = plan_for(trace, locs)
    max_runs = cost["executions"] + MAX_EXECUTIONS_PER_DIM * (len(x0) + 1)
    max_elements = cost["elements"] + MAX_ELEMENTS
    best = [np.inf, x0]

    def neg_log_joint(x) -> float:  # −log p of what the block reaches, up to a constant
        run = _execute(trace, rng, cost, targets=split(x), plan=plan)
        if run.aborted is not None or not np.isfinite(run.lp_new):
            return BIG
        f = -(run.lp_new - run.lp_old)  # relative to the trace: what runs may vary
        if f < best[0]:
            best[:] = [f, np.array(x, dtype=float)]
        return f

    def budgeted(x) -> float:
        if cost["executions"] >= max_runs or cost["elements"] >= max_elements:
            raise _OutOfBudget
        return neg_log_joint(x)

    x, approx = x0, None
    with np.errstate(all="ignore"):
        try:
            for _ in range(RESTARTS):  # BFGS may stop early (precision loss) far from the mode
                eps = 1e-7 * np.maximum(np.abs(x), 1e-3)  # relative difference steps
                res = minimize(budgeted, x, method="BFGS",
                               options={"maxiter": 100 * len(x0), "gtol": 1e-6, "eps": eps})
                approx = np.asarray(getattr(res, "hess_inv", None), dtype=float)
                if res.success or not np.all(np.isfinite(res.x)):
                    break
                x = res.x
        except _OutOfBudget:
            pass
    f_min, x = best
    if not f_min < BIG / 2:
        return None
    if approx is not None and approx.shape == (len(x0), len(x0)):
        steps = np.sqrt(np.abs(np.diag(approx))) * 1e-2  # scaled by BFGS's estimate
    else:
        steps = 1e-4 * np.maximum(np.abs(x), 1e-2)
    try:
        with np.errstate(all="ignore"):
            H = _hessian(neg_log_joint, x, steps)
        cov = np.linalg.inv(0.5 * (H + H.T))
        np.linalg.cholesky(cov)  # (positive definite, or no fit)
    except (np.linalg.LinAlgError, _OffSupport):
        return None
    return (x, cov) if np.all(np.isfinite(cov)) else None


class _OffSupport(Exception):
    """A difference step of the Hessian left the support (a mode at or near its boundary):
    no quadratic approximation there."""


def _hessian(f, x, h) -> np.ndarray:
    """Central-difference Hessian of ``f`` at ``x`` with steps ``h`` (2d² + 1 evaluations)."""
    d = len(x)
    h = np.where(h > 0, h, 1e-6 * np.maximum(np.abs(x), 1.0))

    def f(x, f=f):  # a step off the support: −log p = BIG, not a curvature (_OffSupport)
        v = f(x)
        if not v < BIG / 2:
            raise _OffSupport
        return v

    f0 = f(x)
    H = np.empty((d, d))
    for i in range(d):
        ei = np.zeros(d)
        ei[i] = h[i]
        H[i, i] = (f(x + ei) - 2 * f0 + f(x - ei)) / h[i] ** 2
        for j in range(i):
            ej = np.zeros(d)
            ej[j] = h[j]
            H[i, j] = H[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej)
                                 + f(x - ei - ej)) / (4 * h[i] * h[j])
    return H
