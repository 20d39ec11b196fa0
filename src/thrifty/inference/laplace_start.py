"""Where an adapted random walk starts: a draw from the Laplace approximation.

A random walk started from a prior draw may spend a long burn-in travelling to the posterior
(the diabetes regression of ``benchmarks/adaptive_drift.py``: σ² ≈ 1 at a prior draw, ≈ 2900 in
the posterior, with correlations up to 0.96 on the way), and the covariance it learns from that
journey describes the journey.  So before the burn-in, a ``th.mh`` block of continuous top-level
choices with ``th.drift()`` (no scale) — unless ``init`` gives one of them —

1. finds the mode of the log joint in the block's coordinates (the other choices held), by BFGS
   from the initial values (each evaluation one execution of the program),
2. starts the chain at a draw from N(mode, H⁻¹) (H: the Hessian of −log p at the mode, by
   central differences on steps scaled by BFGS's estimate — 2d² + 1 more executions), so that
   chains still start at different points and R-hat keeps its meaning, and
3. starts the proposal's covariance at H⁻¹ (λ = 1: Haario's 2.38²/d scaling), which the burn-in's
   windows then refine.

If the optimisation fails (a non-finite density, an indefinite H⁻¹), the chain starts where it is.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from thrifty.core.address import as_pattern
from thrifty.core.locate import locate, plan_for
from thrifty.core.run import Run

BIG = 1e300
RESTARTS = 6


def laplace_start(kernel, trace, rng, init: dict) -> None:
    cs = kernel.choices(trace)
    if cs is None or cs.groups or cs.chain_groups or not cs.scalars:
        return
    addrs = list(cs.scalars)
    given = {as_pattern(k) if isinstance(k, str) else tuple(k) for k in init}
    if any(a in given for a in addrs):
        return
    locs = [locate(trace, a) for a in addrs]
    if any(loc is None or loc.discrete or loc.steps for loc in locs):
        return
    shapes = [np.shape(loc.value) for loc in locs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    x0 = np.concatenate([np.ravel(np.asarray(loc.value, dtype=float)) for loc in locs])
    plan = plan_for(trace, locs)

    def split(x) -> dict:
        out, i = {}, 0
        for a, s, n in zip(addrs, shapes, sizes):
            v = x[i : i + n].reshape(s)
            out[a] = float(v) if s == () else v.copy()
            i += n
        return out

    def neg_log_joint(x) -> float:  # −log p of what the block reaches, up to a constant
        run = Run(trace, rng, targets=split(x), plan=plan).execute()
        if run.aborted is not None or not np.isfinite(run.lp_new):
            return BIG
        return -(run.lp_new - run.lp_old)  # relative to the trace: what runs may vary

    x = x0
    with np.errstate(all="ignore"):
        for _ in range(RESTARTS):  # BFGS may stop early (precision loss) far from the mode
            eps = 1e-7 * np.maximum(np.abs(x), 1e-3)  # relative difference steps
            res = minimize(neg_log_joint, x, method="BFGS",
                           options={"maxiter": 100 * len(x0), "gtol": 1e-6, "eps": eps})
            if res.success or not np.all(np.isfinite(res.x)):
                break
            x = res.x
    approx = np.asarray(getattr(res, "hess_inv", None), dtype=float)
    if not np.isfinite(res.fun) or res.fun >= BIG / 2 or approx.shape != (len(x0), len(x0)):
        return
    try:  # the Hessian by central differences, on steps scaled by BFGS's estimate
        H = _hessian(neg_log_joint, res.x, np.sqrt(np.abs(np.diag(approx))) * 1e-2)
        cov = np.linalg.inv(0.5 * (H + H.T))
        chol = np.linalg.cholesky(0.5 * (cov + cov.T))
    except np.linalg.LinAlgError:
        return
    cov = chol @ chol.T
    for x in (res.x + chol @ rng.standard_normal(len(x0)), res.x):
        run = kernel.execute(trace, rng, targets=split(x), plan=plan)
        if run.aborted is None and np.isfinite(run.lp_new):
            run.commit()
            kernel.proposal.init_covariance(tuple(addrs), cov)
            return


def _hessian(f, x, h) -> np.ndarray:
    """Central-difference Hessian of ``f`` at ``x`` with steps ``h`` (2d² + 1 evaluations)."""
    d = len(x)
    h = np.where(h > 0, h, 1e-6 * np.maximum(np.abs(x), 1.0))
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
