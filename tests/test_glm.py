"""GLM observation families (thrifty.distributions.glm): potentials, derivatives, bounds, the
distribution.

* derivatives d1..d3 agree with central finite differences of the level below (relative error
  < 1e-5 on η ∈ [−8, 8], several y);
* ``bound(k)`` is valid — at least sup |U^{(k)}| over a dense grid (spacing 1e-4 over a range
  where the derivatives have decayed) — and tight (within 0.1 % of that sup), for k = 2, 3, 4;
* ``GLM.log_prob`` equals the corresponding thrifty distribution (Bernoulli with logits, Normal,
  StudentT) or scipy's normal CDF (probit); −inf outside the family's domain;
* a model written with ``glm.logistic`` scores the same as with ``dist.Bernoulli(logits=...)``;
* a user-defined family (the documented extension point) works with ``th.smh``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from thrifty import dist, glm
from thrifty.errors import DistributionError
from thrifty.inference.subsampling.smh import smh

FAMILIES = {
    "logistic": (glm.Logistic(), np.array([0, 1])),
    "probit": (glm.Probit(), np.array([0, 1])),
    "gaussian": (glm.GaussianLinear(0.7), np.array([-1.3, 0.0, 2.5])),
    "student_t": (glm.StudentT(3.0, 0.8), np.array([-1.3, 0.0, 2.5])),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_derivatives_match_finite_differences(name):
    fam, ys = FAMILIES[name]
    eta = np.linspace(-8, 8, 801)
    h = 1e-5
    for y in ys:
        for k in (1, 2, 3):
            fd = (fam.derivative(k - 1, eta + h, y) - fam.derivative(k - 1, eta - h, y)) / (2 * h)
            an = fam.derivative(k, eta, y)
            err = np.max(np.abs(fd - an) / (1e-3 + np.abs(an)))
            assert err < 1e-5, f"{name}: d{k} at y={y}: relative error {err:.2e}"


def _grid_sup(fam, k, y, lo, hi):
    eta = np.arange(lo, hi, 1e-4)
    return float(np.max(np.abs(fam.derivative(k, eta, y)))) if k <= 3 else None


@pytest.mark.parametrize("name", list(FAMILIES))
def test_bounds_valid_and_tight(name):
    fam, ys = FAMILIES[name]
    for k in (2, 3):
        sup = max(_grid_sup(fam, k, y, -40.0, 40.0) for y in ys)
        b = fam.bound(k)
        assert sup <= b * (1 + 1e-12) + 1e-15, f"{name}: sup|U^({k})| = {sup} > bound {b}"
        if name == "probit" and k == 2:
            continue  # sup |h''| = 1 is a limit (η → −∞), not attained on a finite grid
        assert sup >= 0.999 * b, f"{name}: bound({k}) = {b} is loose (grid sup {sup})"
    # k = 4 from finite differences of d3
    h = 1e-5
    eta = np.arange(-40.0, 40.0, 1e-3)
    sup4 = max(float(np.max(np.abs(fam.d3(eta + h, y) - fam.d3(eta - h, y)) / (2 * h))) for y in ys)
    b4 = fam.bound(4)
    assert sup4 <= b4 * (1 + 1e-6) + 1e-9, f"{name}: sup|U''''| = {sup4} > bound {b4}"
    if b4 > 0:
        assert sup4 >= 0.999 * b4, f"{name}: bound(4) = {b4} is loose (grid sup {sup4})"
    with pytest.raises(ValueError):
        fam.bound(7)


def test_probit_curvature_where_phi_is_tiny():
    """The probit's U'' = m w and U''' where Φ(z) is tiny (z = ±η ≪ 0: a section on the wrong
    side), where w = z + m ≈ −1/z cancels: U'' against central differences of U' (m is exact
    there; step 1e-4|z|, error below 1e-9), U''' against central differences of U'' for |z| ≤ 1e3
    and its leading term −2/|z|³ beyond.  SMH-2's Taylor term reads U'' at η̂."""
    fam = glm.Probit()
    z = -np.logspace(1.0, 300.0, 600)
    for y, s in ((1, 1.0), (0, -1.0)):
        eta = s * z
        d2 = fam.d2(eta, y)
        assert np.all((d2 > 0) & (d2 <= 1)), d2[~((d2 > 0) & (d2 <= 1))][:3]
        mid = np.abs(z) < 1e12
        e, h = eta[mid], 1e-4 * np.abs(z[mid])
        fd = (fam.d1(e + h, y) - fam.d1(e - h, y)) / (2 * h)
        np.testing.assert_allclose(d2[mid], fd, rtol=1e-9)
        d3 = fam.d3(eta, y)
        near = np.abs(z) <= 1e3
        e, h = eta[near], 1e-3 * np.abs(z[near])
        fd = (fam.d2(e + h, y) - fam.d2(e - h, y)) / (2 * h)
        np.testing.assert_allclose(d3[near], fd, rtol=1e-4)
        lead = -2.0 * s / np.abs(z) ** 3  # U''' = s³ h'''(z), h''' = −2/|z|³ (1 + O(z⁻²))
        np.testing.assert_allclose(d3[~near], lead[~near], rtol=1e-5, atol=1e-300)
        right = (fam.d2(-eta, y), fam.d3(-eta, y))  # the right side: both vanish, none is NaN
        assert np.all(np.isfinite(right)) and np.all(np.abs(right) < 1e-20)


def test_closed_form_constants():
    assert glm.Logistic().bound(3) == pytest.approx(1 / (6 * math.sqrt(3)))
    t = glm.StudentT(4.0, 2.0)
    a = 4.0 * 4.0
    assert t.bound(2) == pytest.approx(5.0 / a)
    assert t.bound(3) == pytest.approx(5.0 / ((12 - 8 * math.sqrt(2)) * a**1.5))
    assert glm.GaussianLinear(2.0).bound(2) == 0.25
    assert glm.GaussianLinear(2.0).bound(3) == 0.0


def test_log_prob_matches_reference_distributions():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    w = np.array([0.5, -1.0, 2.0])
    eta = X @ w
    yb = (rng.random(50) < 0.5).astype(np.int64)
    yc = rng.standard_normal(50)
    np.testing.assert_allclose(
        glm.logistic(X, w).log_prob(yb), dist.Bernoulli(logits=eta).log_prob(yb), rtol=1e-12
    )
    np.testing.assert_allclose(
        glm.probit(X, w).log_prob(yb),
        np.where(yb == 1, stats.norm.logcdf(eta), stats.norm.logcdf(-eta)),
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        glm.gaussian(X, w, 0.7).log_prob(yc), dist.Normal(eta, 0.7).log_prob(yc), rtol=1e-12
    )
    np.testing.assert_allclose(
        glm.student_t(X, w, 3.0, 0.8).log_prob(yc),
        dist.StudentT(3.0, eta, 0.8).log_prob(yc),
        rtol=1e-10,
    )
    lp = glm.logistic(X, w).log_prob(np.full(50, 2))
    assert np.all(lp == -np.inf)
    assert glm.logistic(X[0], w).log_prob(1) == pytest.approx(-math.log1p(math.exp(-eta[0])))


def test_distribution_shapes_and_errors():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((7, 2))
    d = glm.probit(X, np.zeros(2))
    assert d.batch_shape == (7,) and d.is_discrete
    assert d.sample(rng).shape == (7,)
    assert d.sample(rng, (3,)).shape == (3, 7)
    assert glm.gaussian(X, np.zeros(2), 1.0).sample(rng).dtype.kind == "f"
    with pytest.raises(DistributionError):
        glm.logistic(X, np.zeros(3))
    with pytest.raises(DistributionError):
        glm.logistic(X, np.array([np.nan, 0.0]))
    with pytest.raises(ValueError):
        glm.StudentT(-1.0, 1.0)
    with pytest.raises(ValueError):
        glm.GaussianLinear(0.0)
    with pytest.raises(TypeError):
        glm.GLM("logistic", X, np.zeros(2))


def test_model_with_glm_scores_like_bernoulli():
    from thrifty.datasets import synthetic_logistic

    X, y, _ = synthetic_logistic(300, 3, seed=2)

    @th.model
    def a(X, y):
        w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
        with th.plate("data", len(y)) as i:
            th.observe("y", glm.logistic(X[i], w), y[i])

    @th.model
    def b(X, y):
        w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Bernoulli(logits=X[i] @ w), y[i])

    ta = th.simulate(a(X, y), seed=0, init={"w": np.array([0.3, -0.2, 1.0])})
    tb = th.simulate(b(X, y), seed=0, init={"w": np.array([0.3, -0.2, 1.0])})
    assert ta.log_joint() == pytest.approx(tb.log_joint(), rel=1e-12)


class ScaledLogistic(glm.GLMFamily):
    """A user-defined family (the documented extension point): Bernoulli(σ(c·η))."""

    domain = glm.Logistic.domain
    is_discrete = True

    def __init__(self, c):
        self.c = float(c)
        self._base = glm.Logistic()

    def potential(self, eta, y):
        return self._base.potential(self.c * np.asarray(eta), y)

    def d1(self, eta, y):
        return self.c * self._base.d1(self.c * np.asarray(eta), y)

    def d2(self, eta, y):
        return self.c**2 * self._base.d2(self.c * np.asarray(eta), y)

    def bound(self, k, y=None):
        return self.c**k * self._base.bound(k)

    def sample(self, eta, rng, shape=()):
        return self._base.sample(self.c * np.asarray(eta), rng, shape)


def test_user_family_wismh():
    from thrifty.datasets import synthetic_logistic

    X, y, _ = synthetic_logistic(3000, 3, seed=3)
    fam = ScaledLogistic(0.5)
    assert fam.params() == (("c", 0.5),) and not fam.has_d3()

    @th.model
    def m(X, y):
        w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
        with th.plate("data", len(y)) as i:
            th.observe("y", glm.GLM(fam, X[i], w), y[i])

    r = th.infer(m(X, y), smh("w"), num_samples=300, burn_in=50, seed=0, progress=False)
    s = next(iter(r.stats.values()))
    assert s["acceptance_rate"] > 0.5
    k = smh("w")
    trace = th.simulate(m(X, y), seed=1)
    assert k.setup_info(trace)["bound"] == "metric"  # no d3: the "local" bound falls back
