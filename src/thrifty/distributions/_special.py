"""Scalar special functions on Python floats (``math`` only) for the fast paths of ``log_prob``.

Each mirrors a ``scipy.special`` ufunc used on the array paths, including its conventions at the
edges (``0 * log(0) = 0``), without the ~1 µs cost of a ufunc call on a Python float.
:func:`log1p_square` (with its array form) is the heavy-tailed families' ``log(1 + z²/df)``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln as _betaln_ufunc
from scipy.special import poch as _poch_ufunc

INF = math.inf


def xlogy(a: float, x: float) -> float:
    """``a * log(x)`` for ``x >= 0``, with ``0 * log(0) = 0`` (``scipy.special.xlogy``)."""
    if x > 0.0:
        return a * math.log(x)
    return 0.0 if a == 0.0 else (-INF if a > 0.0 else INF)


def xlog1my(a: float, x: float) -> float:
    """``a * log(1 - x)`` for ``x <= 1``, with ``0 * log(0) = 0`` (``xlog1py(a, -x)``)."""
    if x < 1.0:
        return a * math.log1p(-x)
    return 0.0 if a == 0.0 else (-INF if a > 0.0 else INF)


def xmul(a: float, y: float) -> float:
    """``a * y`` with ``0 * y = 0`` even for infinite ``y``."""
    return 0.0 if a == 0 else a * y


def log_expit(x: float) -> float:
    """``log(1 / (1 + exp(-x)))`` without overflow (``scipy.special.log_expit``)."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


def expit(x: float) -> float:
    """``1 / (1 + exp(-x))`` without overflow (``scipy.special.expit``)."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def betaln(a: float, b: float) -> float:
    """``log B(a, b)``: ``math.lgamma`` while its cancellation error stays below ~1e-12."""
    if a + b < 1e3:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    return float(_betaln_ufunc(a, b))


def log1p_square(d: float, s: float, df: float = 1.0) -> float:
    """``log(1 + (d/s)² / df)`` without overflow: ``(d/s)²`` overflows from ``|d/s| ≈ 1.3e154``
    on (a Cauchy observation at 1e155 is not impossible), where ``u = 2 log|d/s| − log df`` and
    the result is ``u + log1p(exp(−u))``."""
    z = d / s
    r = z * z / df
    if r < INF:
        return math.log1p(r)
    u = 2.0 * (math.log(abs(d)) - math.log(s)) - math.log(df)
    return u + math.log1p(math.exp(-u))


def log1p_square_array(d, s, df=1.0) -> np.ndarray:
    """:func:`log1p_square` elementwise."""
    with np.errstate(over="ignore", under="ignore"):
        z = d / s
        r = z * z / df
        out = np.log1p(r)
        big = np.isinf(r)
        if big.any():  # (there u > 709: exp(−u) is tiny, and u = inf for an infinite d)
            u = 2.0 * (np.log(np.abs(np.where(big, d, 1.0))) - np.log(s)) - np.log(df)
            u = np.where(big, u, np.inf)  # (elsewhere unused)
            out = np.where(big, u + np.log1p(np.exp(-u)), out)
    return out


def log_gamma_ratio_half(x: float) -> float:
    """``log Γ(x + 1/2) - log Γ(x)`` (``math.lgamma`` cancels badly for large ``x``)."""
    if x < 500.0:
        return math.lgamma(x + 0.5) - math.lgamma(x)
    return math.log(_poch_ufunc(x, 0.5))
