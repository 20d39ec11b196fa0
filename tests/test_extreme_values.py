"""Log-densities at extreme values, against exact references; complex data refused.

* Poisson, binomial, multinomial and negative binomial log-probabilities of counts up to
  10¹⁸: the direct formulas add terms of size ``log k!`` (3.6·10¹⁷ at k = 10¹⁶) that cancel to
  O(log k), and ``scipy.stats`` loses the same digits (``poisson.logpmf(1e16, 1e16)`` is 19
  off), so the reference is exact arithmetic: ``decimal`` with 60 digits, ``log k!`` summed
  term by term below 1000 and from Stirling's series beyond (truncated after the k⁻¹³ term:
  error below 1e-40 there).  Threshold: agreement to 1e-9 · max(1, |reference|), on the scalar
  and the vectorized path (the parameters are floats, so the rounding of ``n·p`` alone moves a
  value 40 standard deviations from the mean by ~1e-10 relative).  The vectorized paths run
  under ``np.errstate(all="raise")``: no floating-point warning on the way (the series of a
  value one count from the mean underflows harmlessly).
* Cauchy, Student t, half-Cauchy and half Student t observations far in the tails (|y| up to
  1e308, where (y/s)² overflows): the reference is scipy's log-density at 0 (the normaliser)
  minus ``(df + 1)/2 · log(1 + (y/s)²/df)`` in exact arithmetic; same threshold.
* Complex observed values, parameters and log-weights are errors naming the site (they used to
  lose their imaginary part silently).
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
import scipy.stats as st

import thrifty as th
from thrifty import dist
from thrifty.errors import DistributionError, ModelError

getcontext().prec = 60
PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
HALF_LN_2PI = (2 * PI).ln() / 2
STIRLING = [(1, 12), (-1, 360), (1, 1260), (-1, 1680), (1, 1188), (-691, 360360), (1, 156)]
TOL = 1e-9


def ln_factorial(k: int) -> Decimal:
    if k < 1000:
        return sum((Decimal(j).ln() for j in range(2, k + 1)), Decimal(0))
    x = Decimal(k)
    s = (x + Decimal("0.5")) * x.ln() - x + HALF_LN_2PI
    power = x
    for num, den in STIRLING:  # Σ B₂ⱼ / (2j (2j−1) x^(2j−1))
        s += Decimal(num) / (Decimal(den) * power)
        power *= x * x
    return s


def xln(a: int, x: Decimal) -> Decimal:
    return Decimal(0) if a == 0 else Decimal(a) * x.ln()


def poisson_ref(k: int, rate: float) -> float:
    lam = Decimal(rate)
    return float(xln(k, lam) - lam - ln_factorial(k))


def binomial_ref(k: int, n: int, p: Decimal) -> float:
    return float(ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k) + xln(k, p)
                 + xln(n - k, 1 - p))


def exact_int(x: float) -> int:
    """An integer exactly representable as a float, near ``x``."""
    return int(float(round(x)))


def check(got, ref, what):
    assert abs(got - ref) <= TOL * max(1.0, abs(ref)), f"{what}: {got!r} vs exact {ref!r}"


@pytest.mark.parametrize("rate", [1e6, 1e9, 1e12, 1e15, 1e16, 1e18])
def test_poisson_log_prob_of_huge_counts_is_exact(rate):
    sd = rate**0.5
    ks = [exact_int(rate + c * sd) for c in (0.0, 3.0, -7.0, 40.0)]
    ks += [exact_int(rate) + 1, exact_int(rate / 2), exact_int(2 * rate), 1, 0]
    refs = [poisson_ref(k, rate) for k in ks]
    d = dist.Poisson(rate)
    for k, ref in zip(ks, refs):
        check(d.log_prob(k), ref, f"Poisson({rate:g}).log_prob({k})")
        check(d.log_prob(float(k)), ref, f"Poisson({rate:g}).log_prob({float(k)!r})")
    with np.errstate(all="raise"):
        got = dist.Poisson(np.array([rate, rate])).log_prob(np.array(ks, dtype=float)[:, None])
    for (k, ref), g in zip(zip(ks, refs), got):
        check(g[0], ref, f"Poisson([{rate:g}]).log_prob([{k}])")
        check(g[1], ref, f"Poisson([{rate:g}]).log_prob([{k}])")


@pytest.mark.parametrize("n", [10**6, 10**12, 10**16])
@pytest.mark.parametrize("p", [0.5, 0.9, 1e-3, 1e-12])
def test_binomial_log_prob_of_huge_counts_is_exact(n, p):
    mean, sd = n * p, (n * p * (1 - p)) ** 0.5
    ks = {exact_int(min(max(mean + c * sd, 0), n)) for c in (0.0, 3.0, -7.0, 40.0)}
    ks = sorted(ks | {exact_int(mean) + 1, 0, 1, n - 1, n})
    refs = [binomial_ref(k, n, Decimal(p)) for k in ks]
    d = dist.Binomial(n, probs=p)
    for k, ref in zip(ks, refs):
        check(d.log_prob(k), ref, f"Binomial({n}, {p}).log_prob({k})")
    with np.errstate(all="raise"):
        got = dist.Binomial(np.array([n, n]), probs=p).log_prob(
            np.array(ks, dtype=float)[:, None])
    for (k, ref), g in zip(zip(ks, refs), got):
        check(g[0], ref, f"Binomial([{n}], {p}).log_prob([{k}])")
        check(g[1], ref, f"Binomial([{n}], {p}).log_prob([{k}])")


@pytest.mark.parametrize("n", [10**5, 10**12, 10**16, 10**18])
def test_multinomial_log_prob_of_huge_counts_is_exact(n):
    """Probabilities that sum to 1 exactly in binary, so that the exact reference is that of
    the distribution given; counts at the mean, 3 and 40 sds off, and a category left empty."""
    p = [0.125, 0.375, 0.5, 0.0]
    sd = (n * 0.125) ** 0.5
    rows = [[n // 8, 3 * n // 8], [exact_int(n / 8 + 3 * sd), exact_int(3 * n / 8 - 40 * sd)],
            [0, exact_int(n / 2 - sd)], [1, n // 2]]
    xs = [r + [n - sum(r), 0] for r in rows]
    refs = [float(ln_factorial(n) - sum(ln_factorial(k) for k in x)
                  + sum(xln(k, Decimal(q)) for k, q in zip(x, p))) for x in xs]
    d = dist.Multinomial(n, np.array(p))
    for x, ref in zip(xs, refs):
        check(d.log_prob(np.array(x, dtype=float)), ref, f"Multinomial({n}).log_prob({x})")
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = d.log_prob(np.array(xs, dtype=float))
    for x, ref, g in zip(xs, refs, got):
        check(g, ref, f"Multinomial({n}).log_prob([{x}])")
    assert d.log_prob(np.array([1.0, 0.0, n - 2.0, 1.0])) == -np.inf  # p = 0 observed


@pytest.mark.parametrize("k", [10**12, 10**16, 10**18])
def test_negative_binomial_log_prob_of_huge_counts_is_exact(k):
    """At and beyond the mean (logits log(k/r), +0.5) and far below it: the reference uses
    log Γ(k+r) − log k! = (r−1) log k + r(r−1)/(2k) + O(k⁻²) (error below 1e-23 here)."""
    r = 3.5
    for lg in (math.log(k / r), math.log(k / r) + 0.5, 2.0):
        L = Decimal(lg)
        log_p, log_q = -(1 + (-L).exp()).ln(), -(1 + L.exp()).ln()
        ref = float((Decimal(r) - 1) * Decimal(k).ln() + Decimal(r * (r - 1) / 2) / Decimal(k)
                    - Decimal(math.lgamma(r)) + k * log_p + Decimal(r) * log_q)
        check(dist.NegativeBinomial(r, logits=lg).log_prob(k), ref, f"NB logits={lg}, k={k}")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            got = dist.NegativeBinomial(np.array([r]), logits=lg).log_prob(np.array([float(k)]))
        check(got[0], ref, f"NB logits={lg}, array, k={k}")


@pytest.mark.parametrize("logit", [2.0, -30.0])
def test_binomial_log_prob_of_huge_counts_with_logits_is_exact(logit):
    n = 10**16
    p = 1 / (1 + (-Decimal(logit)).exp())
    mean, sd = n * float(p), (n * float(p) * (1 - float(p))) ** 0.5
    for k in sorted({exact_int(mean), exact_int(mean + 3 * sd), 0, 1, n}):
        ref = binomial_ref(k, n, p)
        check(dist.Binomial(n, logits=logit).log_prob(k), ref, f"Binomial logits k={k}")
        with np.errstate(all="raise"):
            got = dist.Binomial(np.array([n]), logits=logit).log_prob(np.array([float(k)]))
        check(got[0], ref, f"Binomial logits, array, k={k}")


def _heavy_tail_ref(logpdf0: float, y: float, scale: float, df: float) -> float:
    z = Decimal(y) / Decimal(scale)
    return logpdf0 - float((Decimal(df) + 1) / 2 * (1 + z * z / Decimal(df)).ln())


HEAVY = [
    ("Cauchy", lambda: dist.Cauchy(1.0, 2.0), st.cauchy.logpdf(0.0, scale=2.0), 2.0, 1.0, 1.0),
    ("StudentT", lambda: dist.StudentT(3.0, 1.0, 2.0), st.t.logpdf(0.0, 3.0, scale=2.0), 2.0, 3.0,
     1.0),
    ("HalfCauchy", lambda: dist.HalfCauchy(2.0), st.halfcauchy.logpdf(0.0, scale=2.0), 2.0, 1.0,
     0.0),
    ("HalfStudentT", lambda: dist.HalfStudentT(3.0, 2.0), np.log(2.0) + st.t.logpdf(0.0, 3.0,
     scale=2.0), 2.0, 3.0, 0.0),
]


@pytest.mark.parametrize("name, make, logpdf0, scale, df, loc", HEAVY, ids=[h[0] for h in HEAVY])
def test_heavy_tailed_log_densities_far_in_the_tails(name, make, logpdf0, scale, df, loc):
    d = make()
    ys = [1e100, 1e154, 1e155, 3.7e200, 1e300, 1.7e308]
    if loc:  # the two-sided families: negative values too
        ys += [-1e155, -1e300]
    for y in ys:
        ref = _heavy_tail_ref(logpdf0, y - loc, scale, df)
        check(d.log_prob(y), ref, f"{name}.log_prob({y!r})")
        with np.errstate(all="raise"):
            check(d.log_prob(np.array([y]))[0], ref, f"{name}.log_prob([{y!r}])")
    if name == "Cauchy":  # scipy's Cauchy is accurate there: agreement with it too
        check(d.log_prob(1e200), st.cauchy.logpdf(1e200, 1.0, 2.0), "Cauchy vs scipy")


def test_glm_student_t_far_in_the_tails_and_its_derivatives():
    """The GLM Student-t family (its potential U = −log p and the three derivatives that Newton
    and the SMH bounds use) stays finite where (y − η)² overflows."""
    from thrifty.distributions.glm import StudentT

    f = StudentT(3.0, 2.0)
    logpdf0 = st.t.logpdf(0.0, 3.0, scale=2.0)
    for y in [1e100, 1e154, 1e155, 3.7e200, -1e300, 1.7e308]:
        check(-f.potential(0.0, y), _heavy_tail_ref(logpdf0, y, 2.0, 3.0), f"potential({y!r})")
        with np.errstate(over="raise", invalid="raise", divide="raise"):  # (underflow is fine)
            u1, u2, u3 = (float(g(np.array([0.0]), np.array([y]))[0]) for g in (f.d1, f.d2, f.d3))
        # leading terms in r = y − η: U' = −(ν+1)/r, U'' = −(ν+1)/r², |U'''| = 2(ν+1)/|r|³
        np.testing.assert_allclose(u1 * y, -4.0, rtol=1e-9)
        assert -4.0 / y / y * (1 + 1e-9) <= u2 <= 0.0  # (underflows to −0 beyond 1e155)
        assert np.isfinite(u3) and abs(u3) <= 8.0 / abs(y) / abs(y) / abs(y) * (1 + 1e-9)
    np.testing.assert_allclose(f.d2(0.0, 1e100) * 1e200, -4.0, rtol=1e-9)
    eta, y = np.array([0.3, -2.0]), np.array([1.0, 5.0])  # the ordinary range: derivatives
    h = 1e-5
    for fn, dn in ((f.potential, f.d1), (f.d1, f.d2), (f.d2, f.d3)):
        np.testing.assert_allclose((fn(eta + h, y) - fn(eta - h, y)) / (2 * h), dn(eta, y),
                                   rtol=1e-6)


def _infer(prog):
    return th.infer(prog, th.mh("mu", th.drift(0.5)), num_samples=3, seed=0, progress=False)


@th.model
def _plate(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


@th.model
def _single(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(mu, 1.0), y)


def test_complex_data_are_refused_naming_the_site():
    """Complex observations (arrays, lists, scalars), parameters and log-weights are errors
    naming the site, never values whose imaginary part is dropped."""
    for prog in (_plate(np.array([1 + 2j, 3 + 0j])), _plate([1 + 2j, 3.0]), _single(1 + 2j),
                 _single(np.complex64(1 + 1j)), _single(np.array(1 + 1j)),
                 _plate(np.array([1.0, 2.0], dtype=complex))):
        with pytest.raises(ModelError, match=r"th.observe\('y', \.\.\.\): the observed value is "
                                             r"complex .*real and imaginary parts"):
            _infer(prog)

    @th.model
    def param(c):
        th.sample("mu", dist.Normal(c, 1.0))

    with pytest.raises(DistributionError, match=r"Normal at address \('mu',\): parameters must "
                                                r"be real numbers, got a complex value"):
        _infer(param(np.array(1j)))
    with pytest.raises(DistributionError, match="parameters must be real"):
        dist.Normal(np.array([1j, 0.0]), 1.0)

    @th.model
    def weight(c):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.factor("w", c * mu)

    with pytest.raises(ModelError, match=r"th.factor\('w', \.\.\.\): the log-weight is complex"):
        _infer(weight(np.complex128(1j)))
