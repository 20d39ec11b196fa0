"""Transforms to unconstrained space: round trips, log-Jacobians against numerical ones, the
transformed densities integrating to one, the support of each continuous family, and the same
numbers on another array library (``array_api_strict``: the array API and nothing else)."""

from __future__ import annotations

import array_api_strict as xs
import numpy as np
import pytest
from scipy import integrate

from thrifty import dist
from thrifty.distributions import constraints
from thrifty.errors import DistributionError
from thrifty.transforms import (
    CorrCholesky,
    ExpAbove,
    ExpBelow,
    Identity,
    PositiveDefinite,
    SigmoidInterval,
    StickBreaking,
    biject_to,
)

# transform, number of unconstrained values, the free coordinates of a constrained value
TRANSFORMS = {
    "exp": (ExpAbove(1.5), 1, lambda x: np.atleast_1d(x)),
    "exp_below": (ExpBelow(-0.5), 1, lambda x: np.atleast_1d(x)),
    "interval": (SigmoidInterval(-2.0, 3.0), 1, lambda x: np.atleast_1d(x)),
    "simplex": (StickBreaking(), 4, lambda x: x[:-1]),
    "corr_cholesky": (CorrCholesky(), 6, lambda x: x[np.tril_indices(4, -1)]),
    "positive_definite": (PositiveDefinite(), 6, lambda x: x[np.tril_indices(3)]),
}


def _u(m, rng):
    return rng.normal(size=m) if m > 1 else float(rng.normal())


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_round_trip_and_support(name):
    t, m, _ = TRANSFORMS[name]
    rng = np.random.default_rng(0)
    for _ in range(5):
        u = _u(m, rng)
        x = t.forward(u)
        np.testing.assert_allclose(t.inverse(x), u, atol=1e-10)
    batch = rng.normal(size=(7, m)) if m > 1 else rng.normal(size=7)
    xb = t.forward(batch)
    np.testing.assert_allclose(t.inverse(xb), batch, atol=1e-10)
    assert np.shape(t.log_abs_det_jacobian(batch)) == (7,)
    support = {"exp": constraints.greater_than(1.5),
               "exp_below": constraints.interval(-np.inf, -0.5),
               "interval": constraints.interval(-2, 3),
               "simplex": constraints.simplex, "corr_cholesky": constraints.corr_cholesky,
               "positive_definite": constraints.positive_definite}[name]
    assert np.all(support.check(xb))


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_log_jacobian_matches_central_differences(name):
    """log |det ∂c(forward(u))/∂u| against a central-difference Jacobian (h = 1e-6), to 1e-6."""
    t, m, free = TRANSFORMS[name]
    rng = np.random.default_rng(1)
    for _ in range(4):
        u = np.atleast_1d(_u(m, rng))
        h = 1e-6
        J = np.empty((m, m))
        for k in range(m):
            e = np.zeros(m)
            e[k] = h
            plus = free(t.forward(u + e if m > 1 else (u + e)[0]))
            minus = free(t.forward(u - e if m > 1 else (u - e)[0]))
            J[:, k] = (plus - minus) / (2 * h)
        want = np.linalg.slogdet(J)[1]
        got = t.log_abs_det_jacobian(u if m > 1 else u[0])
        assert float(got) == pytest.approx(want, abs=1e-6)


def test_transformed_densities_integrate_to_one():
    """p(forward(u)) |J(u)| is a density on ℝⁿ: Gamma and Beta (one dimension), the Dirichlet
    on the simplex of 3 and the LKJ on 2 × 2 Cholesky factors."""
    cases = [dist.Gamma(2.5, 1.3), dist.Beta(2.0, 3.5), dist.Uniform(-1.0, 4.0),
             dist.HalfNormal(2.0)]
    def density(d, t):
        return lambda u: np.exp(d.log_prob(t.forward(u)) + t.log_abs_det_jacobian(u))

    for d in cases:
        val = integrate.quad(density(d, biject_to(d.support)), -40, 40, limit=200)[0]
        assert val == pytest.approx(1.0, abs=1e-6), d
    d = dist.Dirichlet(np.array([1.5, 2.0, 0.7]))
    t = biject_to(d.support)
    val = integrate.dblquad(lambda a, b: np.exp(d.log_prob(t.forward(np.array([a, b])))
                                                + t.log_abs_det_jacobian(np.array([a, b]))),
                            -25, 25, -25, 25, epsabs=1e-7)[0]
    assert val == pytest.approx(1.0, abs=1e-5)
    d = dist.LKJCholesky(2, 1.7)
    t = biject_to(d.support)
    val = integrate.quad(lambda u: np.exp(d.log_prob(t.forward(np.array([u])))
                                          + t.log_abs_det_jacobian(np.array([u]))), -30, 30)[0]
    assert val == pytest.approx(1.0, abs=1e-6)


def test_every_continuous_family_has_a_transform_and_discrete_ones_refuse():
    expect = {
        dist.Normal(0.0, 1.0): Identity, dist.Cauchy(0.0, 1.0): Identity,
        dist.StudentT(3.0, 0.0, 1.0): Identity, dist.Laplace(0.0, 1.0): Identity,
        dist.MvNormal(np.zeros(2), np.eye(2)): Identity,
        dist.Gamma(2.0, 1.0): ExpAbove, dist.Exponential(1.0): ExpAbove,
        dist.LogNormal(0.0, 1.0): ExpAbove, dist.InverseGamma(2.0, 1.0): ExpAbove,
        dist.HalfNormal(1.0): ExpAbove, dist.HalfCauchy(1.0): ExpAbove,
        dist.HalfStudentT(3.0, 1.0): ExpAbove,
        dist.Beta(2.0, 2.0): SigmoidInterval, dist.Uniform(-1.0, 1.0): SigmoidInterval,
        dist.Truncated(dist.Normal(0.0, 1.0), -1.0, 2.0): SigmoidInterval,
        dist.Truncated(dist.Normal(0.0, 1.0), low=0.5): ExpAbove,
        dist.Truncated(dist.Normal(0.0, 1.0), high=0.5): ExpBelow,
        dist.Truncated(dist.HalfNormal(1.0), high=0.5): SigmoidInterval,  # [0, 0.5]
        dist.Truncated(dist.Gamma(2.0, 1.0), low=-1.0): ExpAbove,  # (0, ∞)
        dist.Truncated(dist.Normal(0.0, 1.0), low=np.array([-1.0, 0.0])): ExpAbove,
        dist.Dirichlet(np.ones(3)): StickBreaking,
        dist.LKJCholesky(3, 1.0): CorrCholesky,
        dist.Wishart(3.0, scale=np.eye(2)): PositiveDefinite,
    }
    for d, kind in expect.items():
        assert type(biject_to(d.support)) is kind, d
    for d in (dist.Poisson(1.0), dist.Bernoulli(probs=0.3), dist.Categorical(np.ones(3) / 3)):
        with pytest.raises(DistributionError, match="discrete"):
            biject_to(d.support)
    assert type(biject_to(constraints.positive_definite)) is PositiveDefinite
    # a bound infinite on some entries only: no one transform (ExpAbove would put those
    # entries at −∞)
    for lo, hi in (([-np.inf, 0.0], np.inf), (0.0, [np.inf, 1.0]), ([-np.inf, 0.0], 2.0)):
        with pytest.raises(DistributionError, match="infinite on some entries"):
            biject_to(constraints.interval(np.array(lo), np.array(hi)))


def test_a_mixture_s_support_joins_its_components():
    """Intervals that overlap or touch join into the interval spanning them (entry by entry);
    a gap leaves a union, which has no transform (a mixture's support was the union of the
    components' domains: the real line for uniforms on [0, 1] and [2, 3])."""
    def mix(*comps):
        return dist.Mixture(np.ones(len(comps)) / len(comps), list(comps))

    t = biject_to(mix(dist.Uniform(0.0, 2.0), dist.Uniform(1.0, 3.0)).support)
    assert type(t) is SigmoidInterval and (t.lower, t.upper) == (0.0, 3.0)
    assert type(biject_to(mix(dist.Gamma(2.0, 1.0), dist.LogNormal(0.0, 1.0)).support)) is ExpAbove
    assert type(biject_to(mix(dist.Normal(0.0, 1.0), dist.Gamma(2.0, 1.0)).support)) is Identity
    assert type(biject_to(mix(dist.Normal(0.0, 1.0), dist.Normal(3.0, 1.0)).support)) is Identity
    lo = np.array([0.0, 5.0])
    s = mix(dist.Uniform(lo, lo + 1.0), dist.Uniform(lo + 0.5, lo + 2.0)).support
    np.testing.assert_array_equal(s.lower, lo)
    np.testing.assert_array_equal(s.upper, lo + 2.0)
    # a traced bound (a gradient run's): joined by maximum, a side open in one part stays open
    t = biject_to(mix(dist.Gamma(2.0, 1.0), dist.Uniform(0.0, xs.asarray(2.0))).support)
    assert type(t) is ExpAbove and t.lower == 0.0
    for gap in (mix(dist.Uniform(0.0, 1.0), dist.Uniform(2.0, 3.0)),
                mix(dist.Uniform(lo, lo + 1.0), dist.Uniform(lo + np.array([0.5, 1.5]), 9.0))):
        with pytest.raises(DistributionError, match="cannot cross the gap"):
            biject_to(gap.support)


def test_a_traced_bound_with_an_open_side_opens_that_side():
    """A bound of the array library (a gradient run's traced choice) is taken as finite; an
    open side (a Python or NumPy infinity) stays open: x = lo + exp(u), not lo + ∞ · σ(u)."""
    lo, hi = xs.asarray(0.5), xs.asarray(-0.5)
    assert type(biject_to(constraints.interval(lo, np.inf))) is ExpAbove
    assert type(biject_to(constraints.interval(-np.inf, hi))) is ExpBelow
    assert type(biject_to(constraints.interval(lo, xs.asarray(2.0)))) is SigmoidInterval
    x = biject_to(constraints.interval(lo, np.inf)).forward(xs.asarray([-1.0, 3.0]))
    np.testing.assert_allclose(np.asarray(x), 0.5 + np.exp([-1.0, 3.0]))


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_written_against_the_array_api(name):
    """The same numbers on ``array_api_strict`` arrays (only the standard's functions)."""
    t, m, _ = TRANSFORMS[name]
    u = np.random.default_rng(2).normal(size=(3, m))
    a = xs.asarray(u if m > 1 else u[:, 0])
    b = u if m > 1 else u[:, 0]
    x = t.forward(a)
    np.testing.assert_allclose(np.asarray(x), t.forward(b), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(t.inverse(x)), b, atol=1e-10)
    np.testing.assert_allclose(np.asarray(t.log_abs_det_jacobian(a)),
                               t.log_abs_det_jacobian(b), rtol=1e-12)
