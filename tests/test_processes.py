"""The statistics of the coupled processes (CRP, Pitman–Yor) and of the collapsed conjugate
families, standalone.

Thresholds: log-densities to 1e-8 against closed forms or quadrature; χ² p > 1e-4 for the CRP
partitions of 5 points against Ewens (60,000 seeded sequential draws); the Pitman–Yor partition
probabilities are checked exactly (to 1e-12) over every partition of 6 points.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln, gammaln

from thrifty.processes import CRP
from thrifty.processes.collapsed import (
    BetaBernoulli,
    GammaPoisson,
    NormalGamma,
    NormalInverseWishart,
)


def set_partitions(n):
    """All partitions of range(n) as canonical label tuples (restricted growth strings)."""
    def grow(prefix, m):
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for k in range(m + 1):
            yield from grow(prefix + [k], max(m, k + 1))
    yield from grow([0], 1)


def canonical(labels):
    seen: dict = {}
    return tuple(seen.setdefault(x, len(seen)) for x in labels)


def ewens(labels, alpha):
    sizes = np.bincount(labels)
    return math.exp(len(sizes) * math.log(alpha) + math.lgamma(alpha)
                    - math.lgamma(alpha + len(labels)) + sum(math.lgamma(s) for s in sizes))


def test_crp_partitions_of_five_match_ewens():
    alpha, n, draws = 1.7, 5, 60_000
    parts = list(set_partitions(n))
    assert len(parts) == 52
    probs = np.array([ewens(p, alpha) for p in parts])
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(0)
    index = {p: i for i, p in enumerate(parts)}
    which, lp = np.zeros(draws, dtype=int), np.zeros(draws)
    for k in range(draws):
        crp, labels = CRP(alpha).state((alpha,)), []
        for _ in range(n):
            t = crp.sample(rng)
            crp.incorporate(t)
            labels.append(t)
        which[k], lp[k] = index[canonical(labels)], crp.log_prob()
    # each draw's log_prob is the Ewens log-probability of its partition
    np.testing.assert_allclose(lp, np.log(probs)[which], rtol=1e-6, atol=1e-12)
    counts = np.bincount(which, minlength=len(parts))
    assert stats.chisquare(counts, draws * probs).pvalue > 1e-4


def test_crp_unincorporate_restores_and_predictive_sums_to_one():
    crp = CRP(0.5).state((0.5,))
    for t in (0, 0, 1, 2, 2, 2):
        crp.incorporate(t)
    before = (dict(crp.counts), crp.n, crp.log_prob())
    crp.incorporate(1)
    crp.unincorporate(1)
    assert (dict(crp.counts), crp.n, crp.log_prob()) == before
    assert sum(p for _, p in crp.predictive()) == pytest.approx(1.0, abs=1e-15)
    crp.unincorporate(1)  # the table empties: it leaves the predictive
    assert 1 not in dict(crp.predictive())


def chain_rule(c, xs):
    """Σ log p(x_i | x_<i) while incorporating, and the marginal afterwards."""
    total = 0.0
    for x in xs:
        total += c.predictive_log_prob(x)
        c.incorporate(x)
    return total, c.marginal_log_prob()


def test_beta_bernoulli_and_gamma_poisson_closed_forms():
    xs = [1, 0, 1, 1, 0, 1]
    c = BetaBernoulli(2.0, 3.0)
    total, marg = chain_rule(c, xs)
    want = betaln(2 + 4, 3 + 2) - betaln(2, 3)
    assert total == pytest.approx(want, abs=1e-10) and marg == pytest.approx(want, abs=1e-10)
    ys = [3, 0, 5, 2]
    g = GammaPoisson(2.0, 1.5)
    total, marg = chain_rule(g, ys)
    s, n = sum(ys), len(ys)
    want = (2.0 * math.log(1.5) - math.lgamma(2.0) + math.lgamma(2.0 + s)
            - (2.0 + s) * math.log(1.5 + n) - sum(gammaln(np.array(ys) + 1.0)))
    assert total == pytest.approx(want, abs=1e-10) and marg == pytest.approx(want, abs=1e-10)


def test_normal_gamma_against_quadrature():
    xs = [0.3, -1.2, 2.1]
    mu0, k0, a0, b0 = 0.5, 2.0, 3.0, 2.0
    c = NormalGamma(mu0, k0, a0, b0)
    total, marg = chain_rule(c, xs)

    def joint(mu, tau):  # τ ~ Gamma(a0, rate b0), μ | τ ~ N(μ0, 1/(κ0 τ)), x_i ~ N(μ, 1/τ)
        prior = (stats.gamma.pdf(tau, a0, scale=1 / b0)
                 * stats.norm.pdf(mu, mu0, 1 / math.sqrt(k0 * tau)))
        return prior * np.prod(stats.norm.pdf(xs, mu, 1 / math.sqrt(tau)))

    # the same density in plain floats for the quadrature's ~80,000 evaluations (scipy.stats
    # costs ~0.1 ms a call); equal to the scipy.stats form above on a grid
    m = len(xs)
    const = (a0 * math.log(b0) - math.lgamma(a0) + 0.5 * math.log(k0)
             - 0.5 * (m + 1) * math.log(2 * math.pi))

    def integrand(mu, tau):
        ss = k0 * (mu - mu0) ** 2 + sum((x - mu) ** 2 for x in xs)
        return math.exp(const + (a0 - 1 + 0.5 * (m + 1)) * math.log(tau) - b0 * tau
                        - 0.5 * tau * ss)

    for mu in (-3.0, 0.2, 1.1, 4.0):
        for tau in (0.05, 0.7, 2.5, 9.0):
            assert integrand(mu, tau) == pytest.approx(joint(mu, tau), rel=1e-12, abs=1e-300)
    val, _ = integrate.dblquad(integrand, 1e-9, 20.0, -15.0, 15.0, epsabs=1e-14, epsrel=1e-11)
    assert marg == pytest.approx(math.log(val), abs=1e-8)
    assert total == pytest.approx(marg, abs=1e-10)


def test_normal_gamma_keeps_its_digits_for_data_far_from_zero():
    """Five points at 2·10⁴ with spread 10⁻³ (prior centred on them): the marginal and the
    chain of predictives match b_n computed in exact rational arithmetic to 1e-8 (b_n from
    Σx² − κ_n μ_n² in floating point was 0.15 nats off); moving points in and out keeps it."""
    from fractions import Fraction

    x = 2e4 + 1e-3 * np.random.default_rng(1).normal(size=5)
    mu0, k0, a0, b0 = 2e4, 1.0, 2.0, 1e-6
    q = [Fraction(float(v)) for v in x]
    mean = sum(q) / 5
    bn = float(Fraction(b0) + sum((v - mean) ** 2 for v in q) / 2
               + Fraction(k0) * 5 * (mean - Fraction(mu0)) ** 2 / (2 * (Fraction(k0) + 5)))
    want = (math.lgamma(a0 + 2.5) - math.lgamma(a0) + a0 * math.log(b0)
            - (a0 + 2.5) * math.log(bn) + 0.5 * math.log(k0 / (k0 + 5))
            - 2.5 * math.log(2 * math.pi))
    c = NormalGamma(mu0, k0, a0, b0)
    total, marg = chain_rule(c, x)
    assert marg == pytest.approx(want, abs=1e-8) and total == pytest.approx(want, abs=1e-8)
    for v in x[::-1]:
        c.incorporate(v + 0.5)
        c.unincorporate(v + 0.5)
    assert c.marginal_log_prob() == pytest.approx(want, abs=1e-8)


def test_niw_in_one_dimension_is_normal_gamma_and_in_two_the_chain_rule_holds():
    xs = [0.3, -1.2, 2.1, 0.7]
    ng = NormalGamma(0.5, 2.0, 3.0, 2.0)  # τ ~ Gamma(a0, b0) ⇔ σ² ~ IW(ν = 2 a0, S = 2 b0)
    niw = NormalInverseWishart(np.array([0.5]), 2.0, 6.0, np.array([[4.0]]))
    t1, m1 = chain_rule(ng, xs)
    t2, m2 = chain_rule(niw, [np.array([x]) for x in xs])
    assert m2 == pytest.approx(m1, abs=1e-10) and t2 == pytest.approx(t1, abs=1e-10)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(7, 2)) @ np.array([[1.0, 0.0], [0.6, 0.5]])
    c = NormalInverseWishart(np.zeros(2), 0.5, 5.0, np.array([[2.0, 0.3], [0.3, 1.0]]))
    total, marg = chain_rule(c, X)
    assert total == pytest.approx(marg, abs=1e-9)
    # the predictive is scipy's multivariate t with the posterior's parameters
    n, kn, vn = 7, 0.5 + 7, 5.0 + 7
    m = X.sum(0) / kn
    S = np.array([[2.0, 0.3], [0.3, 1.0]]) + X.T @ X - kn * np.outer(m, m)
    nu = vn - 1
    t = stats.multivariate_t(m, S * (kn + 1) / (kn * nu), df=nu)
    x = np.array([0.4, -0.9])
    assert c.predictive_log_prob(x) == pytest.approx(t.logpdf(x), abs=1e-10)
    assert n == c.n


def test_incorporate_then_unincorporate_restores_the_statistics():
    rng = np.random.default_rng(2)
    c = NormalInverseWishart(np.zeros(3), 1.0, 6.0, np.eye(3))
    X = rng.normal(size=(20, 3))
    for x in X:
        c.incorporate(x)
    L, sx, lp = c.L.copy(), c.sx.copy(), c.marginal_log_prob()
    for x in X[:5]:
        c.incorporate(x * 2.0)
    for x in X[:5][::-1]:
        c.unincorporate(x * 2.0)
    np.testing.assert_allclose(c.L, L, atol=1e-12)
    np.testing.assert_allclose(c.sx, sx, atol=1e-12)
    assert c.marginal_log_prob() == pytest.approx(lp, abs=1e-10)
    for cls, xs in ((BetaBernoulli(1, 1), [1, 0, 1]), (GammaPoisson(1, 1), [2, 4]),
                    (NormalGamma(), [0.1, -0.4])):
        before = cls.marginal_log_prob()
        for x in xs:
            cls.incorporate(x)
        for x in xs:
            cls.unincorporate(x)
        assert cls.n == 0 and cls.marginal_log_prob() == pytest.approx(before, abs=1e-12)


def test_sampling_from_the_predictive():
    rng = np.random.default_rng(3)
    c = NormalGamma(1.0, 1.0, 4.0, 4.0)
    for x in (0.5, 1.5, 1.0):
        c.incorporate(x)
    draws = np.array([c.sample(rng) for _ in range(20_000)])
    grid = np.linspace(-15, 15, 30001)
    dens = np.exp([c.predictive_log_prob(g) for g in grid])
    cdf = np.cumsum(dens) * (grid[1] - grid[0])
    assert stats.kstest(draws, lambda v: np.interp(v, grid, cdf)).pvalue > 1e-4
    assert len(list(set_partitions(3))) == 5  # (Bell numbers: the enumerator itself)
