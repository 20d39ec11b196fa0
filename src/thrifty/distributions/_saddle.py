"""Poisson and binomial log-probabilities of large counts, in saddle-point form.

``log k!`` of a count k = 10¹⁶ is about 3.6·10¹⁷, and the usual formulas add and subtract
such terms down to a result of order ``log k``: float64 keeps none of its digits (and ``k + 1.0``
rounds to ``k`` above 2⁵³): they put ``Poisson(1e16).log_prob(1e16)`` 19 too high.  Loader's
forms (Loader 2000, *Fast and accurate computation of binomial probabilities*) add only terms
of the size of the result:

    log Poisson(x; λ)      = −δ(x) − D(x, λ) − ½ log(2πx),
    log Binomial(x; n, p)  = δ(n) − δ(x) − δ(n−x) − D(x, np) − D(n−x, nq) − ½ log(2πx(n−x)/n),

with Stirling's error δ(x) = log x! − log(√(2πx) (x/e)ˣ) (a series in 1/x) and the deviance
D(x, M) = x log(x/M) + M − x ≥ 0 (a series in v = (x−M)/(x+M) when x is near M).  The families
switch to these forms from ``LARGE`` on, where the direct formulas start to lose more than
~10⁻¹⁰; below it they keep their fast ``lgamma`` paths.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

LARGE = 1e5
"""Counts (Poisson) or total counts (binomial) from which the saddle-point forms are used."""

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188


def stirlerr(x: float) -> float:
    """δ(x) = log x! − (x + ½) log x + x − ½ log 2π for x > 0 (Loader's ``stirlerr``)."""
    if x < 16.0:  # few digits cancel: the direct formula is exact to ~1e-14
        return math.lgamma(x + 1.0) - (x + 0.5) * math.log(x) + x - HALF_LOG_2PI
    xx = x * x
    if x > 500.0:
        return (_S0 - _S1 / xx) / x
    return (_S0 - (_S1 - (_S2 - (_S3 - _S4 / xx) / xx) / xx) / xx) / x


def bd0(x: float, m: float, log_m: float = -math.inf) -> float:
    """D(x, m) = x log(x/m) + m − x for x > 0, m ≥ 0 (Loader's ``bd0``): near x = m the series
    2x Σ v^(2j+1)/(2j+1) − (x−m)v in v = (x−m)/(x+m), which loses nothing to cancellation.
    ``log_m`` serves when m underflows to 0 (a binomial's ``n·expit(logits)``)."""
    d = x - m
    if abs(d) < 0.1 * (x + m):
        v = d / (x + m)
        s = d * v
        ej = 2.0 * x * v
        v2 = v * v
        j = 3.0
        while True:
            ej *= v2
            s1 = s + ej / j
            if s1 == s:
                return s1
            s, j = s1, j + 2.0
    if m == 0.0:
        return x * (math.log(x) - log_m) - x
    return x * math.log(x / m) + m - x


def poisson(k: float, rate: float) -> float:
    """log Poisson(k; rate) for an integer k ≥ 1."""
    return -stirlerr(k) - bd0(k, rate) - HALF_LOG_2PI - 0.5 * math.log(k)


def binomial(k: float, n: float, p: float, q: float, log_p: float, log_q: float) -> float:
    """log Binomial(k; n, p) for integers 0 ≤ k ≤ n (``q = 1 − p``; their logs given, so that
    ``logits`` keep their precision)."""
    if k == 0.0:
        return n * log_q if n else 0.0
    if k == n:
        return n * log_p
    log_n = math.log(n)
    lc = (stirlerr(n) - stirlerr(k) - stirlerr(n - k) - bd0(k, n * p, log_n + log_p)
          - bd0(n - k, n * q, log_n + log_q))
    return lc - HALF_LOG_2PI - 0.5 * (math.log(k) + math.log1p(-k / n))


# -- arrays ---------------------------------------------------------------------------------


def stirlerr_array(x: np.ndarray) -> np.ndarray:
    """:func:`stirlerr` elementwise (x > 0)."""
    x = np.asarray(x, dtype=float)
    small = x < 16.0
    xs = np.where(small, x, 1.0)
    direct = gammaln(xs + 1.0) - (xs + 0.5) * np.log(xs) + xs - HALF_LOG_2PI
    xl = np.where(small, 16.0, x)
    xx = xl * xl
    series = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / xx) / xx) / xx) / xx) / xl
    return np.where(small, direct, series)


def bd0_array(x: np.ndarray, m: np.ndarray, log_m=-np.inf) -> np.ndarray:
    """:func:`bd0` elementwise (x > 0, m ≥ 0); the series to 12 terms (|v| < 0.1: v²⁴ < 1e-24)."""
    x, m = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(m, dtype=float))
    d = x - m
    near = np.abs(d) < 0.1 * (x + m)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):  # (m = 0: far is inf)
        far = np.where(m > 0, x * np.log(x / m) + m - x, x * (np.log(x) - log_m) - x)
        v = np.where(near, d / (x + m), 0.0)
        s = d * v
        ej = 2.0 * x * v
        v2 = v * v
        for j in range(3, 27, 2):
            ej = ej * v2
            s = s + ej / j
    return np.where(near, s, far)


def poisson_array(k: np.ndarray, rate) -> np.ndarray:
    """:func:`poisson` elementwise (integers k ≥ 1)."""
    return -stirlerr_array(k) - bd0_array(k, rate) - HALF_LOG_2PI - 0.5 * np.log(k)


def binomial_array(k, n, p, q, log_p, log_q) -> np.ndarray:
    """:func:`binomial` elementwise (integers 0 ≤ k ≤ n)."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    inner = (k > 0) & (k < n)
    ki = np.where(inner, k, 1.0)
    ni = np.where(inner, n, 2.0)
    log_n = np.log(ni)
    with np.errstate(under="ignore"):
        m_p, m_q = ni * p, ni * q
    lc = (stirlerr_array(ni) - stirlerr_array(ki) - stirlerr_array(ni - ki)
          - bd0_array(ki, m_p, log_n + log_p) - bd0_array(ni - ki, m_q, log_n + log_q))
    mid = lc - HALF_LOG_2PI - 0.5 * (np.log(ki) + np.log1p(-ki / ni))
    with np.errstate(invalid="ignore"):
        edge = np.where(k == 0, np.where(n > 0, n * log_q, 0.0), n * log_p)
    return np.where(inner, mid, edge)
