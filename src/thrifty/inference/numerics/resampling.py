"""Resampling schemes for particle methods: ``ancestors = scheme(weights, n, rng)``.

Each scheme takes normalised weights ``w`` (m,), a number of offspring ``n`` and a NumPy
generator, and returns ``n`` ancestor indices in increasing order such that particle ``i`` has
``n·w_i`` offspring in expectation (unbiased).  They differ in variance: multinomial (independent
draws) ≥ residual ≥ stratified ≥ systematic in practice (Douc, Cappé & Moulines 2005).

>>> import numpy as np

from thrifty.errors import ArgumentError
>>> from thrifty.inference.numerics.resampling import systematic
>>> systematic(np.array([0.5, 0.25, 0.25]), 4, np.random.default_rng(0))
array([0, 0, 1, 2])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from thrifty.errors import ArgumentError, NumericalError

Scheme = Callable[[np.ndarray, int, np.random.Generator], np.ndarray]


def _inverse_cdf(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Indices i with cumsum(w)[i-1] <= u_k < cumsum(w)[i], for increasing u in [0, 1)."""
    cdf = np.cumsum(w)
    cdf[-1] = 1.0  # rounding: the last particle catches u close to 1
    return np.searchsorted(cdf, u, side="right")


def multinomial(w: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n independent draws from the categorical distribution ``w`` (sorted uniforms)."""
    u = np.sort(rng.random(n))
    return _inverse_cdf(u, w)


def stratified(w: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """One uniform in each stratum [k/n, (k+1)/n)."""
    u = (np.arange(n) + rng.random(n)) / n
    return _inverse_cdf(u, w)


def systematic(w: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """One uniform shared by the n strata: u_k = (k + U)/n."""
    u = (np.arange(n) + rng.random()) / n
    return _inverse_cdf(u, w)


def residual(w: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """floor(n·w_i) copies of each particle, the remaining draws multinomial on the residuals."""
    nw = n * np.asarray(w, dtype=float)
    copies = np.floor(nw).astype(np.int64)
    rest = n - int(copies.sum())
    out = np.repeat(np.arange(len(w)), copies)
    if rest > 0:
        r = nw - copies
        extra = multinomial(r / r.sum(), rest, rng)
        out = np.sort(np.concatenate([out, extra]))
    return out


def grouped(fn: Scheme, W: np.ndarray, rng: np.random.Generator,
            ordered: bool = True) -> np.ndarray:
    """Resample each row of ``W`` (G, n) independently with ``fn``: flat ancestor indices
    (G·n,) into the G·n members, row g's offspring drawn from row g.  Multinomial, stratified
    and systematic run vectorized over the rows (one search over the rows' CDFs shifted by
    their row numbers); other schemes row by row.  ``ordered=False`` (multinomial only): the
    n draws of a row in the order drawn — iid, not sorted (conditional SMC overwrites one)."""
    G, n = W.shape
    if fn is multinomial:
        u = rng.random((G, n))
        if ordered:
            u.sort(axis=1)
    elif fn is stratified:
        u = (np.arange(n) + rng.random((G, n))) / n
    elif fn is systematic:
        u = (np.arange(n) + rng.random((G, 1))) / n
    else:
        return np.concatenate([g * n + fn(W[g], n, rng) for g in range(G)])
    if G == 1:  # one row (a chain at the top level): no row offsets, no axis
        cdf = np.add.accumulate(W[0])  # (cumsum's accumulation, without the method's wrapper)
        cdf[-1] = 1.0
        return np.minimum(cdf.searchsorted(u[0], side="right"), n - 1)
    cdf = W.cumsum(axis=1)
    cdf[:, -1] = 1.0
    rows = np.arange(G)[:, None]
    idx = np.searchsorted((cdf + rows).ravel(), (u + rows).ravel(), side="right")
    return np.minimum(idx, (rows * n + n - 1).repeat(n, axis=1).ravel())


def normalize_rows(log_w: np.ndarray) -> np.ndarray:
    """Row-wise normalised weights of (G, n) log-weights."""
    m = log_w.max(axis=1, keepdims=True)
    if not np.all(m > -np.inf):
        raise NumericalError("every particle of a group has weight zero")
    w = np.exp(log_w - m)
    return w / w.sum(axis=1, keepdims=True)


def log_sum_exp_rows(log_w: np.ndarray) -> np.ndarray:
    """Row-wise log Σ exp of (G, n) log-weights (−∞ for an all −∞ row)."""
    m = log_w.max(axis=1, keepdims=True)
    safe = np.where(m > -np.inf, m, 0.0)
    with np.errstate(divide="ignore"):
        return (safe + np.log(np.exp(log_w - safe).sum(axis=1, keepdims=True)))[:, 0]


SCHEMES: dict[str, Scheme] = {
    "multinomial": multinomial,
    "stratified": stratified,
    "systematic": systematic,
    "residual": residual,
}


def scheme(name: str | Scheme) -> Scheme:
    """The resampling function named ``name`` (or ``name`` itself if it is a function)."""
    if callable(name):
        return name
    try:
        return SCHEMES[name]
    except (KeyError, TypeError):
        raise ArgumentError(
            f"resample={name!r}: unknown scheme; choose one of {sorted(SCHEMES)}"
        ) from None


def log_sum_exp(log_w: np.ndarray) -> float:
    """log Σ exp(log_w), max-shifted (−∞ when every entry is −∞).  (scipy's ``logsumexp``
    costs ~60 µs per call through its array-API layer: too much once per generation.)"""
    m = np.max(log_w)
    if not m > -np.inf:
        return float(m)
    return float(m + np.log(np.sum(np.exp(log_w - m))))


def normalize(log_w: np.ndarray) -> np.ndarray:
    """Normalised weights from log-weights (max-shifted; all −∞ is an error)."""
    m = np.max(log_w)
    if not m > -np.inf:
        raise NumericalError("every particle has weight zero")
    w = np.exp(log_w - m)
    return w / w.sum()


def ess(w: np.ndarray) -> float:
    """Effective sample size 1 / Σ w_i² of normalised weights."""
    return float(1.0 / np.dot(w, w))


__all__ = [
    "SCHEMES",
    "ess",
    "grouped",
    "log_sum_exp",
    "log_sum_exp_rows",
    "multinomial",
    "normalize",
    "normalize_rows",
    "residual",
    "scheme",
    "stratified",
    "systematic",
]
