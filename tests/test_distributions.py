"""Tests of ``thrifty.distributions`` against ``scipy.stats``.

* ``log_prob`` agrees with scipy's ``logpdf``/``logpmf`` to 1e-10 (absolute, or relative for large
  magnitudes) on grids of parameters and values that include support boundaries, extreme but valid
  parameters and values off the support -- on the scalar path (Python floats, which must return a
  Python ``float``) and on the vectorized path (parameters of shape (3, 1) against values of
  shape (4,)).
* Sampling: with fixed seeds, n = 20000 draws per family; the sample mean is z-tested against
  ``mean`` with ``|z| < 5`` (a correct sampler exceeds it with probability ~6e-7, so the seeded
  tests are stable, while a bias of a few standard errors fails), and the draws are compared with
  scipy's distribution by a KS test (continuous) or a chi-square test (discrete), ``p > 1e-4``.
* ``enumerate_support``, ``mean`` and ``variance`` against scipy; shapes of batched samples.
* Invalid parameters raise ``DistributionError`` naming the family, the parameter and its value,
  or, inside a program run (``_context.EXECUTIONS.runs`` non-empty), are kept in ``d._error``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import expit, gammaln, log_expit

import thrifty.distributions as D
from thrifty import _context
from thrifty.errors import DistributionError

N = 20_000
Z_MAX = 5.0
P_MIN = 1e-4
TOL = 1e-10
INF = math.inf


def assert_close(ours, ref):
    """1e-10 absolute or relative (whichever is looser); infinities must match exactly."""
    np.testing.assert_allclose(np.asarray(ours, float), np.asarray(ref, float), rtol=TOL, atol=TOL)


def ref_logp(frozen, x):
    """scipy's logpdf/logpmf, with its own warnings silenced."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = frozen.logpmf if hasattr(frozen, "logpmf") else frozen.logpdf
        return f(x)


def ref_moments(frozen):
    """scipy's mean and variance, with its own warnings (from higher moments) silenced."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return frozen.mean(), frozen.var()


def our_logp(d, x):
    """Our log_prob, failing on any NumPy floating-point warning or Python warning."""
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        return d.log_prob(x)


# ---------------------------------------------------------------------------------------------
# Families: (constructor, scipy reference from the same parameters, parameter grid, values)
# ---------------------------------------------------------------------------------------------
UNIVARIATE = {
    "Normal": (
        D.Normal,
        lambda loc, scale: st.norm(loc, scale),
        [(0.0, 1.0), (-3.0, 0.5), (2.0, 1e-8), (1e6, 1e8), (0.5, 1e3)],
        [0.0, 1.0, -2.5, 2.00000001, 1e6, -1e5, 37.5],
    ),
    "LogNormal": (
        D.LogNormal,
        lambda loc, scale: st.lognorm(scale, scale=np.exp(loc)),
        [(0.0, 1.0), (1.5, 0.3), (-2.0, 3.0), (0.0, 1e-3), (5.0, 10.0)],
        [0.0, -1.0, 1e-300, 0.5, 1.0, 1.001, 2.718, 100.0, 1e10],
    ),
    "StudentT": (
        D.StudentT,
        lambda df, loc, scale: st.t(df, loc, scale),
        [
            (1.0, 0.0, 1.0),
            (0.5, 2.0, 3.0),
            (4.0, -1.0, 0.1),
            (30.0, 0.0, 1.0),
            (1e4, 1.0, 2.0),
            (1e7, 0.0, 1.0),
            (2.5, 0.0, 1e-8),
        ],
        [0.0, 1.0, -3.0, 1e3, -1e8, 0.123],
    ),
    "Cauchy": (
        D.Cauchy,
        lambda loc, scale: st.cauchy(loc, scale),
        [(0.0, 1.0), (3.0, 1e-6), (-2.0, 1e4)],
        [0.0, 1.0, 3.000001, -1e6, 1e12, -2.0],
    ),
    "Laplace": (
        D.Laplace,
        # scipy's laplace has no logpdf of its own (log of an underflowing pdf: -inf beyond
        # |z| ~ 745); the generalized normal with beta = 1 is the same law with an exact logpdf
        lambda loc, scale: st.gennorm(1.0, loc, scale),
        [(0.0, 1.0), (3.0, 1e-6), (-2.0, 1e4)],
        [0.0, 1.0, 3.000001, -1e6, 1e12, -2.0],
    ),
    "Uniform": (
        D.Uniform,
        lambda low, high: st.uniform(low, high - low),
        [(0.0, 1.0), (-2.0, 3.0), (0.5, 0.5000001), (-1e6, 1e6)],
        [0.0, 1.0, -2.0, 3.0, 0.5, 0.5000001, -1e-12, 1.0000001, 3.5, 0.25, 0.50000005, 1e6, 2e6],
    ),
    "Exponential": (
        D.Exponential,
        lambda rate: st.expon(scale=1 / rate),
        [(1.0,), (0.5,), (1e-8,), (1e8,)],
        [0.0, -1e-300, -1.0, 1e-3, 1.0, 10.0, 1e8],
    ),
    "Gamma": (
        D.Gamma,
        lambda a, rate: st.gamma(a, scale=1 / rate),
        [(1.0, 1.0), (1.0, 3.0), (0.5, 2.0), (2.0, 0.5), (1e-3, 1.0), (1e3, 1e3), (5.0, 1e-6)],
        [0.0, -1.0, 1e-10, 0.5, 1.0, 3.0, 1e3, 1e7],
    ),
    "InverseGamma": (
        D.InverseGamma,
        lambda a, scale: st.invgamma(a, scale=scale),
        [(1.0, 1.0), (3.0, 2.0), (0.5, 1e-3), (50.0, 100.0)],
        [0.0, -1.0, 1e-3, 0.5, 1.0, 10.0, 1e6],
    ),
    "Beta": (
        D.Beta,
        lambda a, b: st.beta(a, b),
        [
            (1.0, 1.0),
            (1.0, 3.0),
            (3.0, 1.0),
            (0.5, 0.5),
            (2.0, 5.0),
            (1e-3, 1e3),
            (700.0, 200.0),
            (3e5, 1e5),
            (1e6, 2e6),
        ],
        [0.0, 1.0, -1e-12, 1.000000000001, 0.5, 0.01, 0.99, 1e-300, 0.78, 0.75, 0.7501, 1 / 3],
    ),
    "Bernoulli": (
        lambda p: D.Bernoulli(probs=p),
        lambda p: st.bernoulli(p),
        [(0.0,), (1.0,), (0.3,), (1e-12,)],
        [0, 1, 2, -1, 0.5, 1.0],
    ),
    "Bernoulli(logits)": (
        lambda lg: D.Bernoulli(logits=lg),
        lambda lg: st.bernoulli(expit(lg)),
        [(-50.0,), (0.7,), (-3.0,), (12.0,)],
        [0, 1, 2, -1, 0.5, 0.0],
    ),
    "Binomial": (
        lambda n, p: D.Binomial(n, probs=p),
        lambda n, p: st.binom(n, p),
        [
            (0.0, 0.3),
            (1.0, 0.5),
            (10.0, 0.0),
            (10.0, 1.0),
            (10.0, 0.3),
            (1000.0, 1e-3),
            (50.0, 0.999999),
        ],
        [0, 1, 5, 10, 11, -1, 2.5, 1000, 999, 50, 3.0],
    ),
    "Binomial(logits)": (
        lambda n, lg: D.Binomial(n, logits=lg),
        lambda n, lg: st.binom(n, expit(lg)),
        [(10.0, -50.0), (10.0, 0.7), (100.0, -3.0), (3.0, 12.0)],
        [0, 1, 3, 10, 11, -1, 2.5, 100],
    ),
    "Poisson": (
        D.Poisson,
        lambda rate: st.poisson(rate),
        [(0.0,), (1e-10,), (1.0,), (3.5,), (1e3,), (1e6,)],
        [0, 1, 2, 10, 1000, 1000000, -1, 2.5],
    ),
    "Geometric": (
        lambda p: D.Geometric(probs=p),
        lambda p: st.geom(p, loc=-1),
        [(1.0,), (0.5,), (1e-3,), (1e-12,), (0.999,)],
        [0, 1, 2, 10, 1000000, -1, 0.5],
    ),
    "Geometric(logits)": (
        lambda lg: D.Geometric(logits=lg),
        lambda lg: st.geom(expit(lg), loc=-1),
        [(-50.0,), (0.0,), (-3.0,), (12.0,)],
        [0, 1, 2, 10, 1000000, -1, 0.5],
    ),
    "DiscreteUniform": (
        D.DiscreteUniform,
        lambda low, high: st.randint(low, high + 1),
        [(0.0, 1.0), (-3.0, 3.0), (5.0, 5.0), (0.0, 1000.0)],
        [-4, -3, 0, 1, 3, 4, 5, 6, 1000, 1001, 0.5],
    ),
}
DISCRETE = {"Bernoulli", "Binomial", "Poisson", "Geometric", "DiscreteUniform"}


def _is_discrete(name):
    return name.split("(")[0] in DISCRETE


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_log_prob_scalar_path_matches_scipy(name):
    make, ref, grid, values = UNIVARIATE[name]
    for params in grid:
        d = make(*params)
        expected = ref_logp(ref(*params), np.array(values, float))
        for x, e in zip(values, expected, strict=True):
            got = our_logp(d, x)
            assert type(got) is float, (name, params, x, type(got))
            assert_close(got, e)
            if _is_discrete(name) and float(x).is_integer():  # the same from an integral float
                assert_close(our_logp(d, float(x)), e)


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_log_prob_vectorized_path_matches_scipy(name):
    make, ref, grid, values = UNIVARIATE[name]
    rows = [grid[i % len(grid)] for i in (0, len(grid) // 2, len(grid) - 1)]
    params = [np.array([r[j] for r in rows]).reshape(3, 1) for j in range(len(rows[0]))]
    x = np.array(values[:4], float) if not _is_discrete(name) else np.array(values[:4])
    d = make(*params)
    assert d.batch_shape == (3, 1)
    got = our_logp(d, x)
    assert isinstance(got, np.ndarray) and got.shape == (3, 4)
    assert_close(got, ref_logp(ref(*params), x))
    # all values at once (a longer vector) and a NumPy scalar input, which gives a Python float
    allx = np.array(values, float)
    assert_close(our_logp(d, allx), ref_logp(ref(*params), allx))
    d0 = make(*grid[0])
    assert type(our_logp(d0, np.float64(values[0]))) is float
    assert_close(our_logp(d0, allx), ref_logp(ref(*grid[0]), allx))


@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_log_prob_never_nan_off_support(name):
    make, _, grid, _ = UNIVARIATE[name]
    for params in grid:
        d = make(*params)
        for x in (math.nan, INF, -INF):
            assert our_logp(d, x) == -INF, (name, params, x)
        got = our_logp(d, np.array([math.nan, INF, -INF]))
        assert np.all(got == -INF), (name, params, got)


def test_large_logits_beyond_float_probs():
    """At logits = +50, p rounds to 1 (scipy would give -inf); the logits path stays exact."""
    k, n, lg = np.arange(11), 10.0, 50.0
    # Binomial(n, logits) at k equals Binomial(n, -logits) at n - k (checked against scipy above)
    assert_close(D.Binomial(n, logits=lg).log_prob(k), D.Binomial(n, logits=-lg).log_prob(n - k))
    expected = (
        gammaln(n + 1)
        - gammaln(k + 1)
        - gammaln(n - k + 1)
        + k * log_expit(lg)
        + (n - k) * log_expit(-lg)
    )
    assert_close(D.Binomial(n, logits=lg).log_prob(k), expected)
    assert_close([D.Binomial(n, logits=lg).log_prob(int(i)) for i in k], expected)
    g = D.Geometric(logits=lg)
    assert_close([g.log_prob(int(i)) for i in k], log_expit(lg) + k * log_expit(-lg))
    assert_close(g.log_prob(k), log_expit(lg) + k * log_expit(-lg))
    b = D.Bernoulli(logits=lg)
    assert_close([b.log_prob(0), b.log_prob(1)], [log_expit(-lg), log_expit(lg)])
    for lg in (-1000.0, 1000.0):  # far beyond exp's range: no OverflowError on the scalar path
        for d in (D.Bernoulli(logits=lg), D.Binomial(5, logits=lg), D.Geometric(logits=lg)):
            assert_close([d.log_prob(k) for k in (0, 1)], our_logp(d, np.array([0, 1])))
        assert_close(D.Bernoulli(logits=lg).log_prob(1), log_expit(lg))
        assert D.Bernoulli(logits=lg).probs == expit(lg)
    # infinite logits are valid Bernoulli/Binomial parameters (p = 0 or 1): no NaN
    for lg_inf, lp0, lp1 in ((INF, -INF, 0.0), (-INF, 0.0, -INF)):
        b = D.Bernoulli(logits=lg_inf)
        assert [b.log_prob(0), b.log_prob(1)] == [lp0, lp1]
        assert our_logp(D.Bernoulli(logits=np.array([lg_inf])), np.array([0, 1])).tolist() == [
            lp0,
            lp1,
        ]
        binom = D.Binomial(np.array([3.0]), logits=lg_inf)
        assert not np.any(np.isnan(our_logp(binom, np.arange(4))))


# -- Categorical (no scipy family: rv_discrete over 0..K-1) ------------------------------------
def test_categorical_log_prob_matches_scipy():
    probs = np.array([[0.2, 0.0, 0.8], [1 / 3, 1 / 3, 1 / 3], [1e-12, 0.5, 0.5 - 1e-12]])
    values = [0, 1, 2, 3, -1, 0.5, 2.0]
    for p in probs:
        ref = ref_logp(st.rv_discrete(values=(np.arange(3), p)), np.array(values, float))
        d = D.Categorical(p)
        for x, e in zip(values, ref, strict=True):
            got = our_logp(d, x)
            assert type(got) is float
            assert_close(got, e)
        dl = D.Categorical(logits=np.log(p + 1e-300) + 7.0)  # logits: shifts do not matter
        assert_close([dl.log_prob(x) for x in (0, 2)], ref[[0, 2]])
    d = D.Categorical(probs.reshape(3, 1, 3))
    x = np.array([0, 1, 2, 5])
    expected = [ref_logp(st.rv_discrete(values=(np.arange(3), p)), x) for p in probs]
    got = our_logp(d, x)
    assert got.shape == (3, 4)
    assert_close(got, expected)


# -- Delta ---------------------------------------------------------------------------------------
def test_delta():
    rng = np.random.default_rng(0)
    d = D.Delta(2.5, log_density=-1.25)
    assert d.is_discrete and d.event_shape == () and d.batch_shape == ()
    assert d.log_prob(2.5) == -1.25 and type(d.log_prob(2.5)) is float
    assert d.log_prob(2.0) == -INF and d.log_prob(math.nan) == -INF
    assert d.sample(rng) == 2.5 and d.sample(rng, (4,)).tolist() == [2.5] * 4
    assert d.enumerate_support().tolist() == [2.5]
    assert our_logp(d, np.array([2.5, 1.0])).tolist() == [-1.25, -INF]
    assert D.Delta(3).sample(rng) == 3 and type(D.Delta(3).sample(rng)) is int
    assert type(D.Delta(3, 1).log_prob(3)) is float
    v = np.array([1.0, 2.0, 3.0])
    dv = D.Delta(v)
    assert dv.event_shape == (3,) and dv.batch_shape == ()
    assert dv.log_prob(v) == 0.0 and type(dv.log_prob(v)) is float
    assert dv.log_prob(np.array([1.0, 2.0, 4.0])) == -INF
    assert our_logp(dv, np.stack([v, v + 1, v])).tolist() == [0.0, -INF, 0.0]
    assert dv.sample(rng).tolist() == v.tolist() and dv.sample(rng, (5,)).shape == (5, 3)
    assert dv.enumerate_support().shape == (1, 3)
    assert dv.mean.tolist() == v.tolist() and dv.variance.tolist() == [0.0] * 3


# -- MvNormal and Dirichlet ------------------------------------------------------------------------
def _spd(rng, d, scale=1.0):
    a = rng.standard_normal((d, d))
    return scale * (a @ a.T + 0.5 * np.eye(d))


@pytest.mark.parametrize("d", [1, 3, 5])
@pytest.mark.parametrize("scale", [1.0, 1e-6, 1e4])
def test_mvnormal_matches_scipy_for_each_parameterization(d, scale):
    rng = np.random.default_rng(d)
    cov = _spd(rng, d, scale)
    loc = rng.standard_normal(d)
    x = loc + math.sqrt(scale) * rng.standard_normal((4, d))
    ref = st.multivariate_normal(loc, cov).logpdf(x)
    prec = np.linalg.inv(cov)
    prec = 0.5 * (prec + prec.T)
    tril = np.linalg.cholesky(cov)
    refs = {
        "cov": ref,
        "precision": st.multivariate_normal(loc, st.Covariance.from_precision(prec)).logpdf(x),
        "scale_tril": st.multivariate_normal(loc, st.Covariance.from_cholesky(tril)).logpdf(x),
    }
    for kind, m in (("cov", cov), ("precision", prec), ("scale_tril", tril)):
        dist = D.MvNormal(loc, **{kind: m})
        assert dist.event_shape == (d,) and dist.batch_shape == ()
        got = our_logp(dist, x)
        assert got.shape == (4,)
        assert_close(got, refs[kind])
        assert_close(got, ref)
        one = our_logp(dist, x[0])
        assert type(one) is float
        assert_close(one, ref[0])
        np.testing.assert_allclose(dist.covariance_matrix, cov, rtol=1e-8, atol=1e-12 * scale)
        np.testing.assert_allclose(
            dist.scale_tril @ dist.scale_tril.T, cov, rtol=1e-8, atol=1e-12 * scale
        )
        assert np.all(np.triu(dist.scale_tril, 1) == 0)
        np.testing.assert_allclose(dist.precision_matrix, prec, rtol=1e-7, atol=1e-10 / scale)
        assert our_logp(dist, np.full(d, np.nan)) == -INF
        assert our_logp(dist, np.full(d, np.inf)) == -INF


def test_mvnormal_batches_broadcast_and_match_scipy():
    rng = np.random.default_rng(7)
    d = 3
    covs = np.stack([_spd(rng, d) for _ in range(2)])  # batch (2,)
    locs = rng.standard_normal((4, 1, d))  # batch (4, 1)
    x = rng.standard_normal((5, 4, 2, d))  # sample dims (5,) + batch (4, 2)
    ref = np.empty((5, 4, 2))
    for i in range(4):
        for j in range(2):
            ref[:, i, j] = st.multivariate_normal(locs[i, 0], covs[j]).logpdf(x[:, i, j])
    for kind, m in (
        ("cov", covs),
        ("precision", np.linalg.inv(covs)),
        ("scale_tril", np.linalg.cholesky(covs)),
    ):
        dist = D.MvNormal(locs, **{kind: m})
        assert dist.batch_shape == (4, 2) and dist.event_shape == (d,)
        assert dist.scale_tril.shape == (4, 2, d, d)
        assert_close(our_logp(dist, x), ref)
        assert our_logp(dist, x[0, 0, 0]).shape == (4, 2)  # one value broadcast over the batch
        assert dist.sample(np.random.default_rng(0), (5,)).shape == (5, 4, 2, d)
    # a batched loc with a single matrix takes the one-LAPACK-call path
    dist = D.MvNormal(locs[:, 0], cov=covs[0])
    ref1 = np.stack(
        [st.multivariate_normal(locs[i, 0], covs[0]).logpdf(x[:, i, 0]) for i in range(4)], 1
    )
    assert_close(our_logp(dist, x[:, :, 0]), ref1)


def test_dirichlet_matches_scipy():
    rng = np.random.default_rng(3)
    alphas = np.array([[1.0, 1.0, 1.0], [0.5, 2.0, 3.0], [1e-2, 5.0, 200.0], [1.0, 1.0, 4.0]])
    x = rng.dirichlet([1.0, 1.0, 1.0], 6)
    for a in alphas:
        d = D.Dirichlet(a)
        assert d.event_shape == (3,) and d.batch_shape == ()
        ref = st.dirichlet(a).logpdf(x.T)
        assert_close(our_logp(d, x), ref)
        one = our_logp(d, x[0])
        assert type(one) is float
        assert_close(one, ref[0])
        np.testing.assert_allclose(d.mean, st.dirichlet(a).mean(), rtol=1e-12)
        np.testing.assert_allclose(d.variance, st.dirichlet(a).var(), rtol=1e-12)
    batched = D.Dirichlet(alphas.reshape(4, 1, 3))
    assert batched.batch_shape == (4, 1)
    ref = np.array([[st.dirichlet(a).logpdf(xi) for xi in x] for a in alphas])
    assert_close(our_logp(batched, x), ref)
    # off the simplex, and on its boundary (finite only where the concentration is 1)
    off = np.array([[0.5, 0.6, 0.1], [-0.1, 0.6, 0.5], [np.nan, 0.5, 0.5], [0.2, 0.2, 0.2]])
    assert np.all(our_logp(D.Dirichlet(alphas[1]), off) == -INF)
    edge = np.array([0.0, 0.25, 0.75])
    assert_close(
        D.Dirichlet(alphas[3]).log_prob(edge), gammaln(6.0) - gammaln(4.0) + 3.0 * math.log(0.75)
    )
    assert D.Dirichlet(alphas[1]).log_prob(edge) == INF  # concentration 0.5 < 1 at 0
    assert D.Dirichlet([2.0, 1.0, 1.0]).log_prob(edge) == -INF


# -- mean / variance ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(UNIVARIATE))
def test_mean_and_variance_match_scipy(name):
    make, ref, grid, _ = UNIVARIATE[name]
    for params in grid:
        if name == "StudentT" and params[0] <= 2:
            continue  # undefined / infinite moments: see test_moments_that_do_not_exist
        if name == "InverseGamma" and params[0] <= 2:
            continue
        d, (mean, var) = make(*params), ref_moments(ref(*params))
        assert_close(d.mean, mean)
        np.testing.assert_allclose(d.variance, var, rtol=1e-9, atol=1e-300)
    rows = grid[:3]
    batched = make(*[np.array([r[j] for r in rows]) for j in range(len(rows[0]))])
    if name not in ("StudentT", "InverseGamma"):
        means = [ref_moments(ref(*r))[0] for r in rows]
        assert_close(np.broadcast_to(batched.mean, (3,)), means)


def test_moments_that_do_not_exist():
    assert math.isnan(D.StudentT(1.0).mean) and math.isnan(D.StudentT(1.0).variance)
    assert D.StudentT(1.5).variance == INF and D.StudentT(1.5).mean == 0.0
    np.testing.assert_equal(D.StudentT(np.array([0.5, 1.5, 4.0])).mean, [np.nan, 0.0, 0.0])
    np.testing.assert_equal(D.StudentT(np.array([0.5, 1.5, 4.0])).variance, [np.nan, INF, 2.0])
    assert math.isnan(D.Cauchy().mean) and math.isnan(D.Cauchy().variance)
    assert D.InverseGamma(1.0).mean == INF and D.InverseGamma(2.0).variance == INF
    np.testing.assert_equal(D.InverseGamma(np.array([1.0, 3.0]), 2.0).mean, [INF, 1.0])
    assert D.InverseGamma(3.0, 2.0).variance == st.invgamma(3.0, scale=2.0).var()


def test_categorical_binomial_mean_variance():
    p = np.array([0.2, 0.3, 0.5])
    r = st.rv_discrete(values=(np.arange(3), p))
    d = D.Categorical(p)
    assert_close([d.mean, d.variance], [r.mean(), r.var()])
    b = D.Binomial(np.array([3.0, 10.0]), logits=np.array([0.3, -2.0]))
    rb = st.binom(np.array([3.0, 10.0]), expit(np.array([0.3, -2.0])))
    assert_close(b.mean, rb.mean())
    assert_close(b.variance, rb.var())


# -- enumerate_support ----------------------------------------------------------------------------
def test_enumerate_support():
    cases = [
        (D.Bernoulli(probs=0.3), [0, 1]),
        (D.Categorical(np.array([0.1, 0.2, 0.7])), [0, 1, 2]),
        (D.Binomial(4, probs=0.3), [0, 1, 2, 3, 4]),
        (D.Binomial(np.array([2.0, 4.0]), probs=0.3), [0, 1, 2, 3, 4]),  # union over the batch
        (D.Binomial(0, probs=0.3), [0]),
        (D.DiscreteUniform(-2, 1), [-2, -1, 0, 1]),
        (D.DiscreteUniform(np.array([0.0, 3.0]), np.array([2.0, 5.0])), [0, 1, 2, 3, 4, 5]),
        (D.Delta(7), [7]),
    ]
    for d, expected in cases:
        assert d.has_enumerate_support
        support = d.enumerate_support()
        assert support.tolist() == expected
        if not d.batch_shape:  # the pmf sums to 1 over the enumerated support
            assert math.isclose(float(np.exp(d.log_prob(support)).sum()), 1.0, rel_tol=1e-12)
    for d in (D.Poisson(1.0), D.Geometric(probs=0.5), D.Normal()):
        assert not d.has_enumerate_support
        with pytest.raises(NotImplementedError):
            d.enumerate_support()


def test_supports():
    assert D.Uniform(1.0, 3.0).support.check(np.array([1.0, 3.0, 3.5])).tolist() == [1, 1, 0]
    assert D.Binomial(3, probs=0.5).support.check(np.array([0, 3, 4, 1.5])).tolist() == [1, 1, 0, 0]
    assert D.DiscreteUniform(-1, 1).support.check(np.array([-1, 1, 2])).tolist() == [1, 1, 0]
    assert D.Gamma(1.0).in_domain(0.0) and not D.Gamma(1.0).in_domain(-1.0)
    assert D.Beta(1.0, 1.0).in_domain(1.0) and not D.LogNormal(0.0, 1.0).in_domain(0.0)
    assert D.Dirichlet(np.ones(3)).in_domain(np.array([0.2, 0.3, 0.5]))
    assert not D.Dirichlet(np.ones(3)).in_domain(np.array([0.2, 0.3, 0.6]))
    assert D.MvNormal(np.zeros(2), cov=np.eye(2)).in_domain(np.array([1.0, -1.0]))
    assert D.Geometric(probs=0.5).in_domain(0) and not D.Poisson(1.0).in_domain(-1)


# -- sampling -------------------------------------------------------------------------------------
CONTINUOUS_SAMPLING = [
    (D.Normal(1.0, 2.0), st.norm(1.0, 2.0)),
    (D.LogNormal(0.3, 0.5), st.lognorm(0.5, scale=math.exp(0.3))),
    (D.StudentT(3.0, 1.0, 2.0), st.t(3.0, 1.0, 2.0)),
    (D.Cauchy(1.0, 2.0), st.cauchy(1.0, 2.0)),
    (D.Laplace(-1.0, 0.5), st.laplace(-1.0, 0.5)),
    (D.Uniform(-1.0, 3.0), st.uniform(-1.0, 4.0)),
    (D.Exponential(2.5), st.expon(scale=0.4)),
    (D.Gamma(0.7, 3.0), st.gamma(0.7, scale=1 / 3.0)),
    (D.InverseGamma(5.0, 2.0), st.invgamma(5.0, scale=2.0)),
    (D.Beta(0.5, 2.0), st.beta(0.5, 2.0)),
]
DISCRETE_SAMPLING = [
    (D.Bernoulli(probs=0.3), st.bernoulli(0.3)),
    (D.Bernoulli(logits=-1.0), st.bernoulli(expit(-1.0))),
    (
        D.Categorical(np.array([0.1, 0.6, 0.3])),
        st.rv_discrete(values=(np.arange(3), [0.1, 0.6, 0.3])),
    ),
    (D.Binomial(12, probs=0.3), st.binom(12, 0.3)),
    (D.Binomial(12, logits=1.5), st.binom(12, expit(1.5))),
    (D.Poisson(4.5), st.poisson(4.5)),
    (D.Geometric(probs=0.3), st.geom(0.3, loc=-1)),
    (D.Geometric(logits=-1.0), st.geom(expit(-1.0), loc=-1)),
    (D.DiscreteUniform(-2, 4), st.randint(-2, 5)),
]


def _z(samples, mean, variance):
    return (np.mean(samples) - mean) / math.sqrt(variance / len(samples))


def _z_variance(samples, variance, ref):
    """z of the sample variance (its standard error from the kurtosis); 0 if that is infinite."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kurtosis = float(ref.stats(moments="k"))
    if not math.isfinite(kurtosis):
        return 0.0
    mu4 = (kurtosis + 3.0) * variance**2
    return (np.var(samples, ddof=1) - variance) / math.sqrt((mu4 - variance**2) / len(samples))


@pytest.mark.parametrize("d, ref", CONTINUOUS_SAMPLING, ids=lambda v: type(v).__name__)
def test_continuous_sampling(d, ref):
    rng = np.random.default_rng(12345)
    x = d.sample(rng, (N,))
    assert x.shape == (N,) and x.dtype == np.float64
    if not isinstance(d, D.Cauchy):  # the Cauchy has no mean
        assert abs(_z(x, d.mean, d.variance)) < Z_MAX
        assert abs(_z_variance(x, d.variance, ref)) < Z_MAX
    assert st.kstest(x, ref.cdf).pvalue > P_MIN
    # the scalar fast path is a separate code path: the same tests on N scalar draws
    xs = np.array([d.sample(rng) for _ in range(N)])
    assert all(type(v) is float for v in xs[:100].tolist())
    if not isinstance(d, D.Cauchy):
        assert abs(_z(xs, d.mean, d.variance)) < Z_MAX
    assert st.kstest(xs, ref.cdf).pvalue > P_MIN
    assert d.in_domain(xs)


def _chi_square_p(x, ref):
    ks = np.arange(ref.ppf(1e-7), ref.ppf(1 - 1e-7) + 1)
    observed = np.array([np.sum(x == k) for k in ks], float)
    expected = len(x) * ref.pmf(ks)
    small = expected < 5  # pooled with everything beyond the range
    pooled_obs = [*observed[~small].tolist(), len(x) - observed[~small].sum()]
    pooled_exp = [*expected[~small].tolist(), len(x) - expected[~small].sum()]
    if pooled_exp[-1] < 1e-9:
        assert pooled_obs[-1] == 0
        pooled_obs, pooled_exp = pooled_obs[:-1], pooled_exp[:-1]
    return st.chisquare(pooled_obs, pooled_exp).pvalue


@pytest.mark.parametrize("d, ref", DISCRETE_SAMPLING, ids=lambda v: type(v).__name__)
def test_discrete_sampling(d, ref):
    rng = np.random.default_rng(54321)
    x = d.sample(rng, (N,))
    assert x.shape == (N,) and x.dtype.kind == "i"
    assert abs(_z(x, d.mean, d.variance)) < Z_MAX
    assert abs(_z_variance(x, d.variance, ref)) < Z_MAX
    assert _chi_square_p(x, ref) > P_MIN
    # the scalar fast path is a separate code path: the same tests on N scalar draws
    draws = [d.sample(rng) for _ in range(N)]
    assert all(type(v) is int for v in draws)
    xs = np.array(draws)
    assert abs(_z(xs, d.mean, d.variance)) < Z_MAX
    assert _chi_square_p(xs, ref) > P_MIN


def test_mvnormal_sampling():
    rng = np.random.default_rng(99)
    cov = np.array([[2.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 0.5]])
    loc = np.array([1.0, -2.0, 0.5])
    for kind, m in (
        ("cov", cov),
        ("precision", np.linalg.inv(cov)),
        ("scale_tril", np.linalg.cholesky(cov)),
    ):
        d = D.MvNormal(loc, **{kind: m})
        x = d.sample(rng, (N,))
        assert x.shape == (N, 3)
        for i in range(3):
            assert abs(_z(x[:, i], loc[i], cov[i, i])) < Z_MAX
            assert st.kstest(x[:, i], st.norm(loc[i], math.sqrt(cov[i, i])).cdf).pvalue > P_MIN
        # the squared Mahalanobis distance checks the whole covariance: chi2 with 3 dof
        diff = x - loc
        m2 = np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff)
        assert st.kstest(m2, st.chi2(3).cdf).pvalue > P_MIN
        assert d.sample(rng).shape == (3,)


def test_dirichlet_sampling():
    rng = np.random.default_rng(2024)
    a = np.array([0.5, 2.0, 3.5])
    for d in (D.Dirichlet(a), D.Dirichlet(np.stack([a, a]))):
        x = d.sample(rng, (N,)).reshape(N, -1, 3)[:, -1]
        np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
        for i in range(3):
            marginal = st.beta(a[i], a.sum() - a[i])  # the marginals of a Dirichlet are Beta
            assert abs(_z(x[:, i], d.mean[..., i].flat[0], d.variance[..., i].flat[0])) < Z_MAX
            assert st.kstest(x[:, i], marginal.cdf).pvalue > P_MIN
    tiny = D.Dirichlet(np.full((2, 3), 1e-3)).sample(rng, (50,))  # gamma draws underflow
    assert np.all(np.isfinite(tiny)) and np.allclose(tiny.sum(-1), 1.0)


BATCHED = {
    "Normal": lambda: D.Normal(np.zeros(3), 1.0),
    "LogNormal": lambda: D.LogNormal(np.zeros(3), 1.0),
    "StudentT": lambda: D.StudentT(np.array([1.0, 3.0, 10.0])),
    "Cauchy": lambda: D.Cauchy(np.zeros(3)),
    "Laplace": lambda: D.Laplace(np.zeros(3)),
    "Uniform": lambda: D.Uniform(np.zeros(3), np.array([1.0, 2.0, 3.0])),
    "Exponential": lambda: D.Exponential(np.ones(3)),
    "Gamma": lambda: D.Gamma(np.ones(3)),
    "InverseGamma": lambda: D.InverseGamma(np.ones(3)),
    "Beta": lambda: D.Beta(np.ones(3), 2.0),
    "Bernoulli": lambda: D.Bernoulli(probs=np.full(3, 0.5)),
    "Categorical": lambda: D.Categorical(np.full((3, 2), 0.5)),
    "Binomial": lambda: D.Binomial(np.array([1.0, 2.0, 3.0]), logits=0.0),
    "Poisson": lambda: D.Poisson(np.ones(3)),
    "Geometric": lambda: D.Geometric(probs=np.full(3, 0.5)),
    "DiscreteUniform": lambda: D.DiscreteUniform(np.zeros(3), 4),
    "MvNormal": lambda: D.MvNormal(np.zeros((3, 2)), cov=np.eye(2)),
    "Dirichlet": lambda: D.Dirichlet(np.ones((3, 4))),
    "Delta": lambda: D.Delta(np.zeros(3)),  # event shape (3,), no batch
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_sample_shapes(name):
    d = BATCHED[name]()
    rng = np.random.default_rng(0)
    assert d.shape == (3, *d.event_shape) or name == "Delta"
    x = d.sample(rng, (5,))
    assert x.shape == (5, 3) + (d.event_shape if name != "Delta" else ())
    assert x.shape == (5, *d.batch_shape, *d.event_shape)
    assert d.sample(rng).shape == d.batch_shape + d.event_shape
    assert d.sample(rng, (2, 4)).shape == (2, 4, *d.batch_shape, *d.event_shape)
    lp = d.log_prob(x)
    assert lp.shape == (5, *d.batch_shape) and np.all(np.isfinite(lp))


# -- invalid parameters ---------------------------------------------------------------------------
NAN = math.nan
INVALID = [
    (lambda: D.Normal(0.0, -1.0), "Normal: scale must be positive, got -1.0"),
    (lambda: D.Normal(NAN, 1.0), "Normal: loc must be finite, got nan"),
    (
        lambda: D.Normal(np.zeros(2), np.array([1.0, 0.0])),
        "Normal: scale must be positive, got [1., 0.]",
    ),
    (
        lambda: D.Normal(np.zeros(2), np.ones(3)),
        "Normal: parameter shapes (2,), (3,) do not broadcast",
    ),
    (lambda: D.LogNormal(0.0, 0.0), "LogNormal: scale must be positive, got 0.0"),
    (lambda: D.LogNormal(INF, 1.0), "LogNormal: loc must be finite, got inf"),
    (lambda: D.StudentT(-1.0), "StudentT: df must be positive, got -1.0"),
    (lambda: D.StudentT(NAN), "StudentT: df must be positive, got nan"),
    (lambda: D.StudentT(3.0, 0.0, -2.0), "StudentT: scale must be positive, got -2.0"),
    (lambda: D.Cauchy(0.0, NAN), "Cauchy: scale must be positive, got nan"),
    (lambda: D.Cauchy(NAN), "Cauchy: loc must be finite, got nan"),
    (lambda: D.Laplace(0.0, -1.0), "Laplace: scale must be positive, got -1.0"),
    (lambda: D.Laplace(0.0, INF), "Laplace: scale must be finite, got inf"),
    (lambda: D.Uniform(1.0, 1.0), "Uniform: low must be less than high, got low=1.0, high=1.0"),
    (lambda: D.Uniform(2.0, 1.0), "Uniform: low must be less than high, got low=2.0, high=1.0"),
    (lambda: D.Uniform(NAN, 1.0), "Uniform: low must be finite, got nan"),
    (lambda: D.Uniform(0.0, INF), "Uniform: high must be finite, got inf"),
    (lambda: D.Exponential(-1.0), "Exponential: rate must be positive, got -1.0"),
    (lambda: D.Exponential(NAN), "Exponential: rate must be positive, got nan"),
    (lambda: D.Gamma(2.0, -1.0), "Gamma: rate must be positive, got -1.0"),
    (lambda: D.Gamma(0.0), "Gamma: concentration must be positive, got 0.0"),
    (lambda: D.Gamma(NAN), "Gamma: concentration must be positive, got nan"),
    (lambda: D.InverseGamma(-2.0), "InverseGamma: concentration must be positive, got -2.0"),
    (lambda: D.InverseGamma(2.0, NAN), "InverseGamma: scale must be positive, got nan"),
    (lambda: D.Beta(0.0, 1.0), "Beta: alpha must be positive, got 0.0"),
    (lambda: D.Beta(1.0, NAN), "Beta: beta must be positive, got nan"),
    (lambda: D.Bernoulli(probs=1.5), "Bernoulli: probs must be in [0, 1], got 1.5"),
    (lambda: D.Bernoulli(probs=NAN), "Bernoulli: probs must be in [0, 1], got nan"),
    (lambda: D.Bernoulli(logits=NAN), "Bernoulli: logits must not be NaN, got nan"),
    (lambda: D.Bernoulli(), "Bernoulli: give exactly one of probs or logits"),
    (lambda: D.Bernoulli(probs=0.5, logits=0.0), "Bernoulli: give exactly one of probs or logits"),
    (
        lambda: D.Categorical(np.array([0.5, 0.6])),
        "Categorical: probs must be non-negative and sum to 1, got [0.5, 0.6]",
    ),
    (
        lambda: D.Categorical(logits=np.array([0.0, NAN])),
        "Categorical: logits must not be NaN, got [ 0., nan]",
    ),
    (lambda: D.Categorical(), "Categorical: give exactly one of probs or logits"),
    (
        lambda: D.Binomial(-1, probs=0.5),
        "Binomial: total_count must be a non-negative integer, got -1.0",
    ),
    (
        lambda: D.Binomial(2.5, probs=0.5),
        "Binomial: total_count must be a non-negative integer, got 2.5",
    ),
    (
        lambda: D.Binomial(NAN, probs=0.5),
        "Binomial: total_count must be a non-negative integer, got nan",
    ),
    (lambda: D.Binomial(3, probs=-0.1), "Binomial: probs must be in [0, 1], got -0.1"),
    (lambda: D.Binomial(3, logits=NAN), "Binomial: logits must not be NaN, got nan"),
    (lambda: D.Binomial(3), "Binomial: give exactly one of probs or logits"),
    (lambda: D.Binomial(3, probs=0.5, logits=0.0), "Binomial: give exactly one of probs or logits"),
    (lambda: D.Poisson(-1.0), "Poisson: rate must be non-negative, got -1.0"),
    (lambda: D.Poisson(NAN), "Poisson: rate must be non-negative, got nan"),
    (lambda: D.Poisson(INF), "Poisson: rate must be finite, got inf"),
    (lambda: D.Geometric(probs=0.0), "Geometric: probs must be in (0, 1], got 0.0"),
    (lambda: D.Geometric(probs=NAN), "Geometric: probs must be in (0, 1], got nan"),
    (lambda: D.Geometric(logits=-INF), "Geometric: logits must not be NaN or -inf, got -inf"),
    (lambda: D.Geometric(logits=NAN), "Geometric: logits must not be NaN or -inf, got nan"),
    (lambda: D.Geometric(), "Geometric: give exactly one of probs or logits"),
    (lambda: D.Geometric(probs=0.5, logits=0.0), "Geometric: give exactly one of probs or logits"),
    (lambda: D.DiscreteUniform(0.5, 2), "DiscreteUniform: low must be an integer, got 0.5"),
    (lambda: D.DiscreteUniform(0, NAN), "DiscreteUniform: high must be an integer, got nan"),
    (
        lambda: D.DiscreteUniform(3, 2),
        "DiscreteUniform: low must not exceed high, got low=3.0, high=2.0",
    ),
    (lambda: D.Delta(NAN), "Delta: value must not be NaN, got nan"),
    (lambda: D.Delta(1.0, NAN), "Delta: log_density must be finite, got nan"),
    (lambda: D.Delta(1.0, np.zeros(2)), "Delta: log_density must be a scalar, got [0., 0.]"),
    (
        lambda: D.MvNormal(np.zeros(2), cov=np.array([[1.0, 2.0], [2.0, 1.0]])),
        "MvNormal: cov must be positive definite (smallest eigenvalue -1), "
        "got [[1., 2.],\n [2., 1.]]",
    ),
    (
        lambda: D.MvNormal(np.zeros(2), precision=-np.eye(2)),
        "MvNormal: precision must be positive definite (smallest eigenvalue -1), "
        "got [[-1., -0.],\n [-0., -1.]]",
    ),
    (
        lambda: D.MvNormal(np.zeros(2), cov=np.array([[1.0, 0.5], [0.0, 1.0]])),
        "MvNormal: cov must be symmetric, got [[1. , 0.5],\n [0. , 1. ]]",
    ),
    (
        lambda: D.MvNormal(np.zeros(2), scale_tril=np.array([[1.0, 0.5], [0.0, 1.0]])),
        "MvNormal: scale_tril must be lower triangular, got [[1. , 0.5],\n [0. , 1. ]]",
    ),
    (
        lambda: D.MvNormal(np.zeros(2), scale_tril=np.array([[1.0, 0.0], [0.5, -1.0]])),
        "MvNormal: scale_tril must have a positive diagonal, got [[ 1. ,  0. ],\n [ 0.5, -1. ]]",
    ),
    (
        lambda: D.MvNormal(np.zeros(2), cov=np.full((2, 2), NAN)),
        "MvNormal: cov must be finite, got [[nan, nan],\n [nan, nan]]",
    ),
    (
        lambda: D.MvNormal(np.array([0.0, NAN]), cov=np.eye(2)),
        "MvNormal: loc must be finite, got [ 0., nan]",
    ),
    (lambda: D.MvNormal(np.zeros(2)), "MvNormal: give exactly one of cov, precision or scale_tril"),
    (
        lambda: D.MvNormal(np.zeros(2), cov=np.eye(2), precision=np.eye(2)),
        "MvNormal: give exactly one of cov, precision or scale_tril",
    ),
    (
        lambda: D.MvNormal(np.zeros(3), cov=np.eye(2)),
        "MvNormal: cov must have shape (..., 3, 3) to match loc, got (2, 2)",
    ),
    (
        lambda: D.Dirichlet(np.array([1.0, 0.0, 2.0])),
        "Dirichlet: concentration must be positive, got [1., 0., 2.]",
    ),
    (
        lambda: D.Dirichlet(np.array([1.0, NAN])),
        "Dirichlet: concentration must be positive, got [ 1., nan]",
    ),
    (
        lambda: D.Dirichlet(1.0),
        "Dirichlet: concentration must be a vector (at least one dimension), got 1.0",
    ),
]


@pytest.mark.parametrize(
    "make, message",
    INVALID,
    ids=[m.split(":")[0] + "-" + str(i) for i, (_, m) in enumerate(INVALID)],
)
def test_invalid_parameters_raise(make, message):
    with pytest.raises(DistributionError) as info:
        make()
    assert str(info.value) == message


@pytest.mark.parametrize(
    "make, message",
    INVALID,
    ids=[m.split(":")[0] + "-" + str(i) for i, (_, m) in enumerate(INVALID)],
)
def test_invalid_parameters_deferred_inside_a_run(make, message):
    family, _, detail = message.partition(": ")
    _context.EXECUTIONS.runs.append(object())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            d = make()  # must not raise (nor warn) inside a run
    finally:
        _context.EXECUTIONS.runs.pop()
    assert type(d).__name__ == family
    assert d._error == detail
    with pytest.raises(DistributionError) as info:  # what th.sample / th.observe will raise
        d._raise_if_invalid()
    assert str(info.value) == message


def test_valid_parameters_have_no_error():
    for make, _, grid, _ in UNIVARIATE.values():
        for params in grid:
            assert make(*params)._error is None
    assert D.Normal(0.0, 1.0)._error is None and D.Delta(1.0)._error is None


# -- the scalar fast path -------------------------------------------------------------------------
SCALAR = [
    (D.Normal(0.0, 1.0), 0.5),
    (D.LogNormal(0.0, 1.0), 0.5),
    (D.StudentT(3.0), 0.5),
    (D.Cauchy(), 0.5),
    (D.Laplace(), 0.5),
    (D.Uniform(), 0.5),
    (D.Exponential(), 0.5),
    (D.Gamma(2.0), 0.5),
    (D.InverseGamma(2.0), 0.5),
    (D.Beta(2.0, 2.0), 0.5),
    (D.Bernoulli(probs=0.5), 1),
    (D.Bernoulli(logits=0.5), 1),
    (D.Categorical(np.array([0.5, 0.5])), 1),
    (D.Binomial(3, probs=0.5), 1),
    (D.Binomial(3, logits=0.5), 1),
    (D.Poisson(1.0), 1),
    (D.Geometric(probs=0.5), 1),
    (D.Geometric(logits=0.5), 1),
    (D.DiscreteUniform(0, 3), 1),
    (D.Delta(0.5), 0.5),
]


@pytest.mark.parametrize("d, x", SCALAR, ids=lambda v: type(v).__name__)
def test_scalar_fast_path_returns_python_numbers(d, x):
    for value in (x, int(x) if float(x).is_integer() else x, float(x)):
        lp = d.log_prob(value)
        assert type(lp) is float, (d, value, type(lp))
        assert math.isfinite(lp)
    assert type(d.log_prob(-7.5)) is float  # off the support: -inf, still a float
    s = d.sample(np.random.default_rng(0))
    assert type(s) is (int if d.is_discrete and not isinstance(d, D.Delta) else float)
    assert isinstance(d.mean, float) or np.ndim(d.mean) == 0


def test_repr_names_parameters():
    assert repr(D.Gamma(2.0, 3.0)) == "Gamma(concentration=2.0, rate=3.0)"
    assert repr(D.Binomial(3, logits=0.5)) == "Binomial(total_count=3.0, logits=0.5)"
    assert repr(D.Geometric(probs=0.5)) == "Geometric(probs=0.5)"
    assert repr(D.DiscreteUniform(0, 3)) == "DiscreteUniform(low=0.0, high=3.0)"
    assert repr(D.Delta(2.0)) == "Delta(value=2.0, log_density=0.0)"
    assert repr(D.Dirichlet(np.ones(2))) == "Dirichlet(concentration=[1., 1.])"
    assert repr(D.MvNormal(np.zeros(1), cov=np.eye(1))) == "MvNormal(loc=[0.], scale_tril=[[1.]])"
    for name in D.__all__:
        obj = getattr(D, name)
        if isinstance(obj, type) and issubclass(obj, D.Distribution) and obj is not D.Distribution:
            assert obj.__doc__ and ">>>" in obj.__doc__, name


def test_docstring_examples_run(monkeypatch):
    """Every family's docstring example runs (``thrifty.dist``: the alias of the package)."""
    import doctest

    import thrifty
    from thrifty.distributions import continuous, discrete, multivariate

    if not hasattr(thrifty, "dist"):  # the top-level package may not export the alias yet
        monkeypatch.setattr(thrifty, "dist", D, raising=False)
    for module in (continuous, discrete, multivariate):
        result = doctest.testmod(module, verbose=False, report=False)
        assert result.failed == 0 and result.attempted > 0, module.__name__


@pytest.mark.parametrize("loc, scale, x", [
    (0.5, np.array([1.0, 2.0, 3.0]), 0.25),  # an array scale broadcasts a scalar value and loc
    (np.zeros((2, 1)), np.array([1.0, 2.0, 3.0]), np.array([0.1, -0.2, 0.3])),
    (np.array([1.0, -1.0]), 2.0, np.array([[0.0, 1.0], [2.0, np.nan]])),  # NaN: -inf
    (np.array(0.3), np.array(1.5), np.array(0.2)),  # 0-d arrays
    (1, 2, np.arange(3)),  # ints
])
def test_normal_array_log_density_broadcasts_and_matches_scipy(loc, scale, x):
    """The array path of Normal.log_prob (computed in place) against scipy, over the ways its
    parameters and value broadcast."""
    got = D.Normal(loc, scale).log_prob(x)
    want = st.norm.logpdf(np.asarray(x, dtype=float), loc, scale)
    want = np.where(np.isnan(want), -np.inf, want)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)
