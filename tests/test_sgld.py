"""SGLD proposals with the minibatch-conditioned MH correction (004 §6.2)."""

import numpy as np
import pytest

import thrifty as th
from thrifty.datasets import synthetic_logistic
from thrifty.diagnostics import geweke
from thrifty.errors import SelectionError
from thrifty.inference.subsampling.sgld import SGLD
from thrifty.models import logistic_regression

X_SMALL, Y_SMALL, _ = synthetic_logistic(30, 2, seed=1)


class Uncorrected(SGLD):
    """Negative control: SGLD treated as a symmetric proposal (no q-ratio)."""

    def propose_block(self, trace, locs, rng):
        targets, _ = super().propose_block(trace, locs, rng)
        return targets, 0.0


def test_geweke_mh_corrected_sgld():
    """Threshold: min p over the test functions > 1e-4 (4 functions)."""
    r = geweke(logistic_regression(X_SMALL, Y_SMALL), th.mh("w", th.sgld(0.05, 10)),
               num_samples=4000, seed=0)
    assert r.min_p > 1e-4, r


def grid_posterior():
    """Exact posterior moments of the 2-weight model on X_SMALL, by a 401² grid."""
    g = np.linspace(-2.5, 2.5, 401)
    w = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    z = w @ X_SMALL.T
    lp = (Y_SMALL * z - np.logaddexp(0, z)).sum(1) - 0.5 * (w**2).sum(1) / 0.1
    p = np.exp(lp - lp.max())
    p /= p.sum()
    return p @ w, p @ w**2


@pytest.mark.parametrize("kind", ["corrected", "uncorrected"])
def test_second_moments_against_the_exact_posterior(kind):
    """E[w_j²] by a 20,000-step chain (step 0.1, 61% acceptance) against the grid: |z| < 4.5
    with ESS-based standard errors for SGLD + MH; the uncorrected chain (no q-ratio) is ~20%
    too narrow and must give |z| > 6 for some coordinate."""
    from thrifty.diagnostics._arviz import ess as az_ess

    _, second = grid_posterior()
    prop = th.sgld(0.1, 10) if kind == "corrected" else Uncorrected(0.1, 10)
    r = th.infer(logistic_regression(X_SMALL, Y_SMALL), th.mh("w", prop), num_samples=20000,
                 burn_in=1000, seed=0, progress=False)
    z = []
    for j in range(2):
        s = r["w"][..., j] ** 2
        z.append((s.mean() - second[j]) / (s.std() / np.sqrt(az_ess(s))))
    if kind == "corrected":
        assert max(abs(v) for v in z) < 4.5, z
    else:
        assert max(abs(v) for v in z) > 6, z


def test_sgld_q_ratio_is_conditioned_on_one_minibatch():
    from thrifty.core.locate import locate
    from thrifty.core.simulate import initialize

    rng = np.random.default_rng(0)
    trace = initialize(logistic_regression(X_SMALL, Y_SMALL), rng)
    prop = th.sgld(0.1, batch_size=5)
    loc = locate(trace, ("w",))
    state = rng.bit_generator.state
    targets, log_q = prop.propose_block(trace, [loc], rng)
    # recompute by hand with the same random draws
    rng.bit_generator.state = state
    st = prop._sections(trace, loc)
    batch = rng.choice(st.N, size=5, replace=False)
    theta = loc.value
    g = prop.gradient(st, theta, batch)
    new = theta + 0.05 * g + np.sqrt(0.1) * rng.standard_normal(2)
    np.testing.assert_allclose(targets[("w",)], new)
    g_new = prop.gradient(st, new, batch)
    fwd = -np.sum((new - theta - 0.05 * g) ** 2) / 0.2
    rev = -np.sum((theta - new - 0.05 * g_new) ** 2) / 0.2
    assert log_q == pytest.approx(rev - fwd)
    # the gradient on the full data equals the analytic logistic gradient
    full = np.arange(st.N)
    p = 1 / (1 + np.exp(-(X_SMALL @ theta)))
    want = X_SMALL.T @ (Y_SMALL - p) - theta / 0.1
    np.testing.assert_allclose(prop.gradient(st, theta, full), want, rtol=1e-10)


def test_subsampled_mh_with_sgld_at_epsilon_zero_decides_like_exact_mh():
    """An SGLD proposal and its q-ratio, one u: the sequential test at ε = 0 (all sections)
    decides exactly as MH with log α = log π(θ')/π(θ) + log q(θ|θ')/q(θ'|θ)."""
    import math

    from thrifty.core.locate import locate
    from thrifty.core.run import RESCORE, Run
    from thrifty.core.simulate import initialize

    rng = np.random.default_rng(3)
    trace = initialize(logistic_regression(*synthetic_logistic(2000, 2, seed=2)[:2]), rng)
    prop = th.sgld(2e-3, 50)
    k = th.subsampled_mh("w", batch_size=100, epsilon=0.0, proposal=prop)
    accepted = 0
    for _ in range(40):
        loc = locate(trace, ("w",))
        targets, log_q = prop.propose_block(trace, [loc], rng)
        exact = Run(trace, rng, targets=targets, mode=RESCORE).execute().log_weight + log_q
        log_u = math.log(rng.random())
        got = k.decide(trace, rng, [loc], targets, log_q, log_u)
        assert got == (log_u < exact)
        accepted += got
    assert 0 < accepted < 40  # both outcomes occurred


def test_sgld_needs_glm_weights():
    import thrifty.distributions as dist

    @th.model
    def m():
        th.sample("w", dist.Normal(np.zeros(2), 1.0))

    with pytest.raises(SelectionError, match="glm"):
        th.infer(m(), th.mh("w", th.sgld(0.1)), num_samples=2, progress=False)
