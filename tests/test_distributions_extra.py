"""HalfNormal, HalfCauchy, HalfStudentT, NegativeBinomial(2), Multinomial, LKJCholesky,
Truncated and Mixture against scipy, with the thresholds of ``test_distributions``: log_prob to
1e-10 (absolute or relative), seeded samples of n = 20000 with |z| < 5 on the mean (where it
exists) and KS / chi-square p > 1e-4; invalid parameters raise errors that name them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
from scipy.special import betaln

import thrifty as th
from thrifty import dist
from thrifty.errors import DistributionError

N = 20_000
Z_MAX = 5.0
P_MIN = 1e-4


def close(ours, ref):
    np.testing.assert_allclose(np.asarray(ours, float), np.asarray(ref, float), rtol=1e-10,
                               atol=1e-10)


def z_mean(x, mean, var):
    return (np.mean(x) - mean) / math.sqrt(var / len(x))


X_POS = np.array([0.0, 1e-8, 0.3, 1.0, 2.5, 40.0, -0.5, np.inf, np.nan])


@pytest.mark.parametrize("ours, ref", [
    (dist.HalfNormal(1.7), st.halfnorm(scale=1.7)),
    (dist.HalfCauchy(0.6), st.halfcauchy(scale=0.6)),
])
def test_half_normal_and_cauchy(ours, ref):
    want = np.where(X_POS >= 0, ref.logpdf(np.nan_to_num(X_POS, nan=-1.0)), -np.inf)
    close(ours.log_prob(X_POS), want)
    for x in (0.0, 0.7, 3.0):
        assert type(ours.log_prob(x)) is float
        close(ours.log_prob(x), ref.logpdf(x))
    assert ours.log_prob(-1.0) == -math.inf
    s = ours.sample(np.random.default_rng(0), (N,))
    assert s.min() >= 0
    assert st.kstest(s, ref.cdf).pvalue > P_MIN
    if np.isfinite(ref.mean()):
        assert abs(z_mean(s, ours.mean, ours.variance)) < Z_MAX
        close(ours.mean, ref.mean())
        close(ours.variance, ref.var())
    else:
        assert ours.mean == math.inf and ours.variance == math.inf
        assert abs(np.median(s) - ref.median()) < 5 * math.sqrt(0.25 / N) / ref.pdf(ref.median())


def test_half_student_t():
    for df in (1.0, 3.0, 7.5):
        ours = dist.HalfStudentT(df, 2.0)
        x = X_POS[:6]
        close(ours.log_prob(x), math.log(2) + st.t(df, scale=2.0).logpdf(x))
        close(ours.log_prob(1.3), math.log(2) + st.t(df, scale=2.0).logpdf(1.3))
        s = ours.sample(np.random.default_rng(1), (N,))
        ref_cdf = lambda v, df=df: 2 * st.t(df, scale=2.0).cdf(v) - 1  # noqa: E731
        assert st.kstest(s, ref_cdf).pvalue > P_MIN
        if df > 2:
            m = 2.0 * 2 * math.sqrt(df / math.pi) * math.exp(
                math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / (df - 1)
            close(ours.mean, m)
            assert abs(z_mean(s, ours.mean, ours.variance)) < Z_MAX
    assert dist.HalfStudentT(1.0).mean == math.inf
    assert dist.HalfStudentT(1.5).variance == math.inf


def test_batched_half_shapes():
    d = dist.HalfNormal(np.array([[1.0], [2.0], [3.0]]))
    assert d.log_prob(np.array([0.1, 0.2, 0.3, 0.4])).shape == (3, 4)
    assert d.sample(np.random.default_rng(0), (5,)).shape == (5, 3, 1)


def test_negative_binomial():
    k = np.array([0, 1, 2, 5, 30, 1.5, -1])
    for r, p in ((2.0, 0.3), (0.7, 0.9), (5.5, 0.01)):
        ours = dist.NegativeBinomial(r, probs=p)
        ref = st.nbinom(r, 1 - p)
        want = np.where((k >= 0) & (k == np.floor(k)), ref.logpmf(np.maximum(k, 0)), -np.inf)
        close(ours.log_prob(k), want)
        close(dist.NegativeBinomial(r, logits=math.log(p / (1 - p))).log_prob(k[:5]),
              want[:5])
        close(ours.mean, ref.mean())
        close(ours.variance, ref.var())
        s = ours.sample(np.random.default_rng(2), (N,))
        assert abs(z_mean(s, ref.mean(), ref.var())) < Z_MAX
        vals, counts = np.unique(s, return_counts=True)
        top = vals[counts >= 20]
        exp = ref.pmf(top) * N
        obs = np.array([counts[vals == v][0] for v in top])
        rest_o, rest_e = N - obs.sum(), N - exp.sum()
        assert st.chisquare(np.r_[obs, rest_o], np.r_[exp, rest_e]).pvalue > P_MIN
    d2 = dist.NegativeBinomial2(3.0, 2.0)  # Stan's neg_binomial_2(mu, phi)
    close(d2.log_prob(k[:5]), st.nbinom(2.0, 2.0 / 5.0).logpmf(k[:5]))
    with pytest.raises(DistributionError, match="total_count"):
        dist.NegativeBinomial(-1.0, probs=0.5)
    with pytest.raises(DistributionError, match="probs"):
        dist.NegativeBinomial(2.0, probs=1.0)
    with pytest.raises(DistributionError, match="concentration"):
        dist.NegativeBinomial2(1.0, 0.0)


def test_multinomial():
    p = np.array([0.2, 0.5, 0.3])
    ours, ref = dist.Multinomial(6, p), st.multinomial(6, p)
    xs = np.array([[6, 0, 0], [1, 2, 3], [2, 2, 2], [1, 1, 1], [7, -1, 0]])
    want = [ref.logpmf(x) if x.sum() == 6 and (x >= 0).all() else -np.inf for x in xs]
    close(ours.log_prob(xs), want)
    s = ours.sample(np.random.default_rng(3), (N,))
    assert s.shape == (N, 3) and (s.sum(1) == 6).all()
    for j in range(3):
        assert abs(z_mean(s[:, j], 6 * p[j], 6 * p[j] * (1 - p[j]))) < Z_MAX
    with pytest.raises(DistributionError, match="probs"):
        dist.Multinomial(3, np.array([0.5, 0.6]))
    with pytest.raises(DistributionError, match="total_count"):
        dist.Multinomial(2.5, p)


def test_lkj_cholesky():
    # d = 2: the normaliser integrates to one (r = L[1,0] has density (1 − r²)^(η−1)/c)
    for eta in (0.5, 1.0, 3.0):
        d = dist.LKJCholesky(2, eta)
        r = np.linspace(-0.999, 0.999, 20001)
        Ls = np.zeros((len(r), 2, 2))
        Ls[:, 0, 0], Ls[:, 1, 0], Ls[:, 1, 1] = 1.0, r, np.sqrt(1 - r * r)
        # in 2-d, log p(L) = (2η − 2) log L_11 − log c = log of the density of r = L_10
        want = (eta - 1) * np.log1p(-r * r) - ((2 * eta - 1) * math.log(2) + betaln(eta, eta))
        close(d.log_prob(Ls), want)
    for dim, eta in ((3, 1.0), (4, 2.5)):
        d = dist.LKJCholesky(dim, eta)
        L = d.sample(np.random.default_rng(4), (4000,))
        R = L @ np.swapaxes(L, -1, -2)
        np.testing.assert_allclose(np.diagonal(R, axis1=1, axis2=2), 1.0, atol=1e-12)
        assert np.all(np.triu(L, 1) == 0)
        a = eta - 1 + dim / 2
        for i, j in ((1, 0), (dim - 1, 0), (dim - 1, dim - 2)):
            p = st.kstest((R[:, i, j] + 1) / 2, st.beta(a, a).cdf).pvalue
            assert p > P_MIN, (dim, eta, i, j, p)
        assert np.all(np.isfinite(d.log_prob(L)))
    bad = np.eye(3)
    bad[0, 1] = 0.5
    assert dist.LKJCholesky(3).log_prob(bad) == -np.inf
    with pytest.raises(DistributionError, match="concentration"):
        dist.LKJCholesky(3, 0.0)


def test_lkj_normaliser_in_three_dims():
    """η = 1 is uniform over 3×3 correlation matrices, a set of volume π²/2: c_3(1) = π²/2."""
    assert dist.LKJCholesky(3, 1.0)._log_c == pytest.approx(math.log(math.pi**2 / 2), rel=1e-12)


@pytest.mark.parametrize("base, ref, lo, hi", [
    (dist.Normal(0.0, 1.0), st.norm(), -1.0, 2.0),
    (dist.Normal(0.0, 1.0), st.norm(), 8.0, None),  # far upper tail
    (dist.Normal(1.0, 2.0), st.norm(1, 2), None, -9.0),  # far lower tail
    (dist.StudentT(3.0, 0.0, 1.0), st.t(3), 0.5, 4.0),
    (dist.Gamma(2.0, 3.0), st.gamma(2.0, scale=1 / 3), 0.2, 1.0),
    (dist.Beta(2.0, 5.0), st.beta(2, 5), 0.1, 0.6),
    (dist.Exponential(2.0), st.expon(scale=0.5), 1.0, None),
    (dist.Cauchy(0.0, 1.0), st.cauchy(), -2.0, 10.0),
    (dist.Laplace(0.0, 1.0), st.laplace(), -3.0, 0.5),
    (dist.LogNormal(0.0, 0.5), st.lognorm(0.5), 0.5, 2.0),
])
def test_truncated(base, ref, lo, hi):
    d = dist.Truncated(base, lo, hi)
    a = -np.inf if lo is None else lo
    b = np.inf if hi is None else hi
    mass = ref.sf(a) - ref.sf(b) if ref.sf(a) < 0.5 else ref.cdf(b) - ref.cdf(a)
    xs = np.array([v for v in (a - 1, a, (a + b) / 2 if np.isfinite(a + b) else a + 0.3, b,
                               b + 1) if np.isfinite(v)])
    want = np.where((xs >= a) & (xs <= b), ref.logpdf(xs) - math.log(mass), -np.inf)
    np.testing.assert_allclose(d.log_prob(xs), want, rtol=1e-9, atol=1e-9)
    s = d.sample(np.random.default_rng(6), (N,))
    assert np.all((s >= a) & (s <= b)) and np.all(np.isfinite(s))
    cdf = lambda v: np.clip((ref.cdf(v) - ref.cdf(a)) / (ref.cdf(b) - ref.cdf(a)), 0, 1)  # noqa
    if ref.cdf(a) < 0.999 and ref.cdf(b) > 1e-3:
        assert st.kstest(s, cdf).pvalue > P_MIN
    else:  # a far tail: compare with scipy's exact tail law through the survival function
        sf = lambda v: (ref.sf(v) - ref.sf(b)) / (ref.sf(a) - ref.sf(b))  # noqa: E731
        if hi is None or ref.sf(a) < 0.5:
            assert st.kstest(s, lambda v: 1 - sf(v)).pvalue > P_MIN
        else:
            cdf2 = lambda v: ref.cdf(v) / ref.cdf(b)  # noqa: E731
            assert st.kstest(s, cdf2).pvalue > P_MIN


def test_truncated_normal_matches_truncnorm_and_errors():
    d = dist.Truncated(dist.Normal(0.5, 2.0), -1.0, 3.0)
    ref = st.truncnorm((-1.0 - 0.5) / 2, (3.0 - 0.5) / 2, loc=0.5, scale=2.0)
    xs = np.linspace(-1, 3, 9)
    close(d.log_prob(xs), ref.logpdf(xs))
    with pytest.raises(DistributionError, match="low must be below high"):
        dist.Truncated(dist.Normal(0.0, 1.0), 2.0, 1.0)
    with pytest.raises(DistributionError, match="base"):
        dist.Truncated(dist.Poisson(2.0), 0.0, 3.0)


def test_mixture():
    comps = [dist.Normal(-1.0, 1.0), dist.Normal(2.0, 0.5), dist.StudentT(4.0, 0.0, 3.0)]
    w = np.array([0.2, 0.5, 0.3])
    m = dist.Mixture(w, comps)
    refs = [st.norm(-1, 1), st.norm(2, 0.5), st.t(4, scale=3)]
    xs = np.array([-3.0, 0.0, 1.9, 10.0])
    close(m.log_prob(xs), np.log(sum(wi * r.pdf(xs) for wi, r in zip(w, refs))))
    s = m.sample(np.random.default_rng(7), (N,))
    cdf = lambda v: sum(wi * r.cdf(v) for wi, r in zip(w, refs))  # noqa: E731
    assert st.kstest(s, cdf).pvalue > P_MIN
    assert abs(z_mean(s, m.mean, m.variance)) < Z_MAX
    disc = dist.Mixture([0.4, 0.6], [dist.Poisson(1.0), dist.Poisson(6.0)])
    close(disc.log_prob(np.array([0, 3, 7])),
          np.log(0.4 * st.poisson(1).pmf([0, 3, 7]) + 0.6 * st.poisson(6).pmf([0, 3, 7])))
    assert disc.is_discrete
    with pytest.raises(DistributionError, match="weights"):
        dist.Mixture([0.5, 0.6], comps[:2])
    with pytest.raises(DistributionError, match="components"):
        dist.Mixture([1.0], [])


# -- through the public path ---------------------------------------------------------------------
def test_half_cauchy_scale_posterior_against_quadrature():
    y = np.array([0.8, -1.2, 2.5, 0.3, -0.4])

    @th.model
    def m(y):
        tau = th.sample("tau", dist.HalfCauchy(1.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(0.0, tau), y[i])

    r = th.infer(m(y), th.mh("tau", th.drift(0.5)), num_samples=8000, burn_in=1000, chains=2,
                 seed=0, progress=False)
    grid = np.linspace(1e-4, 60, 200_001)
    logp = st.halfcauchy.logpdf(grid) + st.norm.logpdf(y[:, None], 0, grid).sum(0)
    p = np.exp(logp - logp.max())
    mean = (grid * p).sum() / p.sum()
    sd = math.sqrt((grid**2 * p).sum() / p.sum() - mean**2)
    from thrifty.diagnostics._arviz import ess

    tau = r["tau"]
    assert abs((tau.mean() - mean) / (sd / math.sqrt(ess(tau)))) < 4.5


def test_negative_binomial_and_mixture_in_a_plate():
    rng = np.random.default_rng(0)
    counts = rng.negative_binomial(3.0, 0.4, size=200)

    @th.model
    def nb(y):
        mu = th.sample("mu", dist.Gamma(2.0, 0.5))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.NegativeBinomial2(mu, 3.0), y[i])

    r = th.infer(nb(counts), th.mh("mu", th.drift(0.3)), num_samples=3000, burn_in=500,
                 seed=0, progress=False)
    assert abs(r["mu"].mean() - counts.mean()) < 0.5  # posterior near the sample mean (4.5)

    @th.model
    def mix(y):
        loc = th.sample("loc", dist.Normal(0.0, 5.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Mixture([0.5, 0.5], [dist.Normal(loc, 1.0),
                                                      dist.Normal(-loc, 1.0)]), y[i])

    y = np.r_[rng.normal(3, 1, 100), rng.normal(-3, 1, 100)]
    r = th.infer(mix(y), th.mh("loc", th.drift(0.3)), num_samples=2000, burn_in=500, seed=0,
                 init={"loc": 1.0}, progress=False)
    assert abs(abs(r["loc"].mean()) - 3.0) < 0.3
