"""Cumulative distribution functions of the univariate families, as mixins.

A family that mixes in :class:`Cumulative` (through one of the family mixins below, or with its
own ``cdf``/``sf``/``icdf``/``isf``) offers

* ``cdf(x) = P(X <= x)`` and ``sf(x) = P(X > x)`` -- the survival function is computed directly,
  not as ``1 - cdf``, so both tails keep their relative precision;
* ``log_cdf(x)`` and ``log_sf(x)`` (log-space formulas where the plain ones underflow, e.g.
  ``log_ndtr`` for the normal: ``Normal(0, 1).log_sf(40.0)`` is ``-804.6``, not ``-inf``);
* ``icdf(q)``: the quantile, the smallest ``x`` with ``cdf(x) >= q``, and ``isf(s)``: the smallest
  ``x`` with ``sf(x) <= s`` (precise for small ``s``, where ``icdf(1 - s)`` is not);
* ``_icdf_log(log_q)`` / ``_isf_log(log_s)``: the same from log-probabilities, for probabilities
  below the smallest double (far-tail truncation in :class:`~thrifty.distributions.Truncated`);
* ``_xp_log_cdf(xp, x)`` / ``_xp_log_sf(xp, x)`` where ``array_api_cdf`` is set: ``log_cdf`` and
  ``log_sf`` written against the array API, for parameters or points that are JAX arrays
  (``Truncated`` with a gradient kernel's parameters).  At a boundary of the support, where a
  tail is 0, the formula is taken at an inner point and masked (``where`` twice), so that no
  infinite derivative meets a zero one (a NaN gradient).  The families whose cdf is an
  incomplete beta function (``StudentT``, ``Beta``, the half Student t, the negative binomial)
  are differentiable by JAX in their location and scale (and ``probs``) only, not in ``df``,
  ``alpha``, ``beta`` or ``total_count``: ``jax.scipy.special.betainc`` has derivatives in ``x``
  only.

Values and probabilities broadcast against the batch shape; a Python ``float`` comes back for
scalar input and parameters, else an array.  Quantiles of probabilities outside ``[0, 1]`` are NaN.
``scipy.special`` functions throughout (and ``scipy.stats`` quantiles for the discrete families).
These mixins keep the family modules short; the families list them as bases
(``class Normal(cumulative.NormalCDF, Distribution)``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import (
    betainc,
    betaincc,
    betainccinv,
    betaincinv,
    gammainc,
    gammaincc,
    gammainccinv,
    gammaincinv,
    gammaln,
    log_ndtr,
    ndtr,
    ndtri,
    ndtri_exp,
    pdtr,
    pdtrc,
    stdtr,
    stdtrit,
)

from thrifty.distributions.base import scalar_or_array
from thrifty.distributions.xp import special

LOG_2 = math.log(2.0)
_T_TAIL = 1e-3  # below this probability the Student t quantile goes through the incomplete beta
UNDERFLOW = 1e-280  # incomplete-beta inverses below this have lost their relative precision
LOG_SQRT_PI = 0.5 * math.log(math.pi)
INF = math.inf


def _quiet():
    """Silence NumPy's floating-point warnings (edge values: log 0, ±inf arguments)."""
    return np.errstate(all="ignore")


def stats_module():
    """``scipy.stats``, imported at the first count quantile that needs it: its import is a
    third of ``import thrifty``'s, which every worker process pays."""
    import scipy.stats

    return scipy.stats


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=float)


class Cumulative:
    """Mixin: the cumulative functions of a univariate family (see the module docstring).

    A family defines ``cdf``, ``sf``, ``icdf`` and ``isf``; the log-space versions default to
    logs / exponentials of these and are overridden where that underflows.
    """

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def sf(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no survival function")

    def log_cdf(self, value):
        with _quiet():
            return scalar_or_array(np.log(self.cdf(value)))

    def log_sf(self, value):
        with _quiet():
            return scalar_or_array(np.log(self.sf(value)))

    def _icdf_log(self, log_q):
        return self.icdf(np.exp(log_q))

    def _isf_log(self, log_s):
        return self.isf(np.exp(log_s))

    array_api_cdf = False  # _xp_log_cdf and _xp_log_sf are implemented

    def _xp_log_cdf(self, xp, x):
        """``log_cdf`` of the float array ``x`` of namespace ``xp`` (the module docstring)."""
        raise NotImplementedError(f"{type(self).__name__}'s cdf is written for NumPy only")

    def _xp_log_sf(self, xp, x):
        """``log_sf`` of the float array ``x`` of namespace ``xp``."""
        raise NotImplementedError(f"{type(self).__name__}'s cdf is written for NumPy only")


def xp_log_inside(xp, inside, f, x, safe, outside):
    """``log f(x)`` where ``inside``, ``outside`` elsewhere, with ``f`` taken at ``safe`` there
    (so that neither its value nor its derivative is infinite where it is not used)."""
    return xp.where(inside, xp.log(f(xp.where(inside, x, safe))), outside)


def xp_log1mexp(xp, v):
    """``log(1 - exp(v))`` for ``v <= 0``, precise at both ends."""
    near = v > -LOG_2
    return xp.where(near, xp.log(-xp.expm1(xp.where(near, v, -1.0))),
                    xp.log1p(-xp.exp(xp.where(near, -1.0, v))))


class NormalCDF(Cumulative):
    def _z(self, value):
        return (_arr(value) - self.loc) / self.scale

    def cdf(self, value):
        return scalar_or_array(ndtr(self._z(value)))

    def sf(self, value):
        return scalar_or_array(ndtr(-self._z(value)))

    def log_cdf(self, value):
        return scalar_or_array(log_ndtr(self._z(value)))

    def log_sf(self, value):
        return scalar_or_array(log_ndtr(-self._z(value)))

    def icdf(self, q):
        return scalar_or_array(self.loc + self.scale * ndtri(_arr(q)))

    def isf(self, s):
        return scalar_or_array(self.loc - self.scale * ndtri(_arr(s)))

    def _icdf_log(self, log_q):
        return scalar_or_array(self.loc + self.scale * ndtri_exp(_arr(log_q)))

    def _isf_log(self, log_s):
        return scalar_or_array(self.loc - self.scale * ndtri_exp(_arr(log_s)))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        return special(xp).log_ndtr((x - self.loc) / self.scale)

    def _xp_log_sf(self, xp, x):
        return special(xp).log_ndtr(-((x - self.loc) / self.scale))


class LogNormalCDF(Cumulative):
    def _z(self, value):
        x = _arr(value)
        with _quiet():
            return (np.log(np.where(x < 0, 0.0, x)) - self.loc) / self.scale

    def cdf(self, value):
        return scalar_or_array(ndtr(self._z(value)))

    def sf(self, value):
        return scalar_or_array(ndtr(-self._z(value)))

    def log_cdf(self, value):
        return scalar_or_array(log_ndtr(self._z(value)))

    def log_sf(self, value):
        return scalar_or_array(log_ndtr(-self._z(value)))

    def icdf(self, q):
        return scalar_or_array(np.exp(self.loc + self.scale * ndtri(_arr(q))))

    def isf(self, s):
        return scalar_or_array(np.exp(self.loc - self.scale * ndtri(_arr(s))))

    def _icdf_log(self, log_q):
        return scalar_or_array(np.exp(self.loc + self.scale * ndtri_exp(_arr(log_q))))

    def _isf_log(self, log_s):
        return scalar_or_array(np.exp(self.loc - self.scale * ndtri_exp(_arr(log_s))))

    array_api_cdf = True

    def _xp_z(self, xp, x):
        pos = x > 0
        return pos, (xp.log(xp.where(pos, x, 1.0)) - self.loc) / self.scale

    def _xp_log_cdf(self, xp, x):
        pos, z = self._xp_z(xp, x)
        return xp.where(pos, special(xp).log_ndtr(z), -INF)

    def _xp_log_sf(self, xp, x):
        pos, z = self._xp_z(xp, x)
        return xp.where(pos, special(xp).log_ndtr(-z), 0.0)


def t_tail_log_constant(df):
    """``log K`` with ``P(T > t) ~ K t^(-df)`` as ``t -> inf`` (standard Student t): the density
    is ``~ Γ((df+1)/2) / (sqrt(df π) Γ(df/2)) df^((df+1)/2) t^(-df-1)``, so
    ``K = Γ((df+1)/2) df^(df/2 - 1) / (sqrt(π) Γ(df/2))``."""
    return gammaln(0.5 * (df + 1.0)) + (0.5 * df - 1.0) * np.log(df) - LOG_SQRT_PI - gammaln(
        0.5 * df
    )


def _t_lower_quantile(df, q):
    """Standard Student t quantile for ``q <= 1/2``.  ``stdtrit`` fails below ~1e-20 (it returns
    +inf); in the tail, ``F(t) = I_x(df/2, 1/2) / 2`` with ``x = df / (df + t²)`` is inverted
    instead, with ``1 - x`` from the complementary inverse so that neither loses precision.
    Where ``x`` underflows (``|t| > 1e140``) the power-law tail ``F(t) = K |t|^(-df)`` is exact
    to double precision."""
    with _quiet():
        x = betaincinv(0.5 * df, 0.5, 2.0 * q)
        y = betainccinv(0.5, 0.5 * df, 2.0 * q)  # 1 - x: I_x(a, b) = 1 - I_{1-x}(b, a)
        tail = -np.sqrt(df * y / x)
        far = -np.exp((t_tail_log_constant(df) - np.log(q)) / df)
        tail = np.where(x < UNDERFLOW, far, tail)
        return np.where(q < _T_TAIL, tail, stdtrit(df, np.maximum(q, _T_TAIL)))


def _t_quantile(df, q):
    q = _arr(q)
    lower = _t_lower_quantile(df, np.minimum(q, 1.0 - q))
    t = np.where(q <= 0.5, lower, -lower)
    return np.where((q >= 0) & (q <= 1), t, np.nan)


def _t_lower_tail(df, z):
    """Standard Student t ``F(z)``; beyond ``|z| = 1e100`` (where ``stdtr`` returns 0) the
    power-law tail ``K |z|^(-df)``, exact there to double precision."""
    with _quiet():
        far = np.exp(t_tail_log_constant(df) - df * np.log(-z))
        return np.where((z < -1e100) & (z > -np.inf), far, stdtr(df, z))


class StudentTCDF(Cumulative):
    def _z(self, value):
        return (_arr(value) - self.loc) / self.scale

    def cdf(self, value):
        return scalar_or_array(_t_lower_tail(self.df, self._z(value)))

    def sf(self, value):
        return scalar_or_array(_t_lower_tail(self.df, -self._z(value)))

    def icdf(self, q):
        return scalar_or_array(self.loc + self.scale * _t_quantile(self.df, q))

    def isf(self, s):
        return scalar_or_array(self.loc - self.scale * _t_quantile(self.df, s))

    array_api_cdf = True

    def _xp_log_lower(self, xp, z):
        """``log F(z)`` of the standard t: ``F(z) = I_{df/(df+z²)}(df/2, 1/2) / 2`` for
        ``z < 0``.  At ``z = 0`` the incomplete beta's derivative is infinite: there
        ``log F = log 1/2 + 2 f(0) z``, exact in value and derivative."""
        df, zero = self.df, z == 0
        sp = special(xp)
        zz = xp.where(zero, 1.0, z)
        i = sp.betainc(0.5 * df, 0.5, df / (df + zz * zz))
        f0 = xp.exp(sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df)) / xp.sqrt(df * math.pi)
        return xp.where(zero, 2.0 * f0 * z - LOG_2,
                        xp.where(z < 0, xp.log(0.5 * i), xp.log1p(-0.5 * i)))

    def _xp_log_cdf(self, xp, x):
        return self._xp_log_lower(xp, (x - self.loc) / self.scale)

    def _xp_log_sf(self, xp, x):
        return self._xp_log_lower(xp, -((x - self.loc) / self.scale))


def _cauchy_quantile(q):
    """Standard Cauchy quantile ``tan(π (q - 1/2))``, written as ``-cot(π q)`` so that small
    ``q`` (and ``1 - q``) keep their precision."""
    q = _arr(q)
    with _quiet():
        t = np.where(q <= 0.5, -1.0 / np.tan(np.pi * q), 1.0 / np.tan(np.pi * (1.0 - q)))
    return np.where((q >= 0) & (q <= 1), t, np.nan)


class CauchyCDF(Cumulative):
    def _z(self, value):
        return (_arr(value) - self.loc) / self.scale

    def cdf(self, value):  # arctan2(1, -z) / π = 1/2 + arctan(z) / π, precise for z -> -inf
        return scalar_or_array(np.arctan2(1.0, -self._z(value)) / np.pi)

    def sf(self, value):
        return scalar_or_array(np.arctan2(1.0, self._z(value)) / np.pi)

    def icdf(self, q):
        return scalar_or_array(self.loc + self.scale * _cauchy_quantile(q))

    def isf(self, s):
        return scalar_or_array(self.loc - self.scale * _cauchy_quantile(s))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        return xp.log(xp.atan2(1.0, -((x - self.loc) / self.scale)) / math.pi)

    def _xp_log_sf(self, xp, x):
        return xp.log(xp.atan2(1.0, (x - self.loc) / self.scale) / math.pi)


def _laplace_log_lower(z):
    """``log F(z)`` of the standard Laplace distribution."""
    with _quiet():
        return np.where(z < 0, z - LOG_2, np.log1p(-0.5 * np.exp(-np.abs(z))))


def _laplace_quantile_log(log_q):
    """Standard Laplace quantile from ``log q``."""
    with _quiet():
        upper = -LOG_2 - np.log(-np.expm1(log_q))  # -log(2 (1 - q))
        return np.where(log_q <= -LOG_2, log_q + LOG_2, upper)


class LaplaceCDF(Cumulative):
    def _z(self, value):
        return (_arr(value) - self.loc) / self.scale

    def cdf(self, value):
        return scalar_or_array(np.exp(_laplace_log_lower(self._z(value))))

    def sf(self, value):
        return scalar_or_array(np.exp(_laplace_log_lower(-self._z(value))))

    def log_cdf(self, value):
        return scalar_or_array(_laplace_log_lower(self._z(value)))

    def log_sf(self, value):
        return scalar_or_array(_laplace_log_lower(-self._z(value)))

    def icdf(self, q):
        with _quiet():
            return self._icdf_log(np.log(_arr(q)))

    def isf(self, s):
        with _quiet():
            return self._isf_log(np.log(_arr(s)))

    def _icdf_log(self, log_q):
        return scalar_or_array(self.loc + self.scale * _laplace_quantile_log(_arr(log_q)))

    def _isf_log(self, log_s):
        return scalar_or_array(self.loc - self.scale * _laplace_quantile_log(_arr(log_s)))

    array_api_cdf = True

    @staticmethod
    def _xp_log_lower(xp, z):
        return xp.where(z < 0, z - LOG_2, xp.log1p(-0.5 * xp.exp(-xp.abs(z))))

    def _xp_log_cdf(self, xp, x):
        return self._xp_log_lower(xp, (x - self.loc) / self.scale)

    def _xp_log_sf(self, xp, x):
        return self._xp_log_lower(xp, -((x - self.loc) / self.scale))


def _in_unit(q, x):
    """``x`` where ``0 <= q <= 1``, NaN elsewhere (quantiles of invalid probabilities)."""
    return np.where((q >= 0) & (q <= 1), x, np.nan)


class UniformCDF(Cumulative):
    def cdf(self, value):
        return scalar_or_array(np.clip((_arr(value) - self.low) / (self.high - self.low), 0, 1))

    def sf(self, value):
        return scalar_or_array(np.clip((self.high - _arr(value)) / (self.high - self.low), 0, 1))

    def icdf(self, q):
        q = _arr(q)
        return scalar_or_array(_in_unit(q, self.low + q * (self.high - self.low)))

    def isf(self, s):
        s = _arr(s)
        return scalar_or_array(_in_unit(s, self.high - s * (self.high - self.low)))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        u = (x - self.low) / (self.high - self.low)
        return xp_log_inside(xp, u > 0, lambda u: xp.minimum(u, 1.0), u, 1.0, -INF)

    def _xp_log_sf(self, xp, x):
        v = (self.high - x) / (self.high - self.low)
        return xp_log_inside(xp, v > 0, lambda v: xp.minimum(v, 1.0), v, 1.0, -INF)


class ExponentialCDF(Cumulative):
    def _rx(self, value):
        return self.rate * np.maximum(_arr(value), 0.0)  # NaN stays NaN

    def cdf(self, value):
        return scalar_or_array(-np.expm1(-self._rx(value)))

    def sf(self, value):
        return scalar_or_array(np.exp(-self._rx(value)))

    def log_sf(self, value):
        return scalar_or_array(-self._rx(value))

    def icdf(self, q):
        q = _arr(q)
        with _quiet():
            return scalar_or_array(_in_unit(q, -np.log1p(-q) / self.rate))

    def isf(self, s):
        s = _arr(s)
        with _quiet():
            return scalar_or_array(_in_unit(s, -np.log(s) / self.rate))

    def _isf_log(self, log_s):
        log_s = _arr(log_s)
        return scalar_or_array(np.where(log_s <= 0, -log_s / self.rate, np.nan))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        return xp_log_inside(xp, x > 0, lambda x: -xp.expm1(-self.rate * x), x, 1.0, -INF)

    def _xp_log_sf(self, xp, x):
        return -self.rate * xp.where(x > 0, x, 0.0)


class GammaCDF(Cumulative):
    def _rx(self, value):
        return self.rate * np.maximum(_arr(value), 0.0)

    def cdf(self, value):
        return scalar_or_array(gammainc(self.concentration, self._rx(value)))

    def sf(self, value):
        return scalar_or_array(gammaincc(self.concentration, self._rx(value)))

    def icdf(self, q):
        return scalar_or_array(gammaincinv(self.concentration, _arr(q)) / self.rate)

    def isf(self, s):
        return scalar_or_array(gammainccinv(self.concentration, _arr(s)) / self.rate)

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        f = special(xp).gammainc
        return xp_log_inside(xp, x > 0, lambda x: f(self.concentration, self.rate * x), x, 1.0,
                             -INF)

    def _xp_log_sf(self, xp, x):
        f = special(xp).gammaincc
        return xp_log_inside(xp, x > 0, lambda x: f(self.concentration, self.rate * x), x, 1.0,
                             0.0)


class InverseGammaCDF(Cumulative):
    def _y(self, value):  # scale / x, +inf for x <= 0 (where the cdf is 0)
        x = _arr(value)
        with _quiet():
            return self.scale / np.where(x < 0, 0.0, x)

    def cdf(self, value):
        return scalar_or_array(gammaincc(self.concentration, self._y(value)))

    def sf(self, value):
        return scalar_or_array(gammainc(self.concentration, self._y(value)))

    def icdf(self, q):
        with _quiet():
            return scalar_or_array(self.scale / gammainccinv(self.concentration, _arr(q)))

    def isf(self, s):
        with _quiet():
            return scalar_or_array(self.scale / gammaincinv(self.concentration, _arr(s)))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        f = special(xp).gammaincc
        return xp_log_inside(xp, x > 0, lambda x: f(self.concentration, self.scale / x), x, 1.0,
                             -INF)

    def _xp_log_sf(self, xp, x):
        f = special(xp).gammainc
        return xp_log_inside(xp, x > 0, lambda x: f(self.concentration, self.scale / x), x, 1.0,
                             0.0)


class BetaCDF(Cumulative):
    def _x(self, value):
        return np.clip(_arr(value), 0.0, 1.0)

    def cdf(self, value):
        return scalar_or_array(betainc(self.alpha, self.beta, self._x(value)))

    def sf(self, value):
        return scalar_or_array(betaincc(self.alpha, self.beta, self._x(value)))

    def icdf(self, q):
        return scalar_or_array(betaincinv(self.alpha, self.beta, _arr(q)))

    def isf(self, s):
        return scalar_or_array(betainccinv(self.alpha, self.beta, _arr(s)))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        f = special(xp).betainc
        return xp_log_inside(xp, (x > 0) & (x < 1), lambda x: f(self.alpha, self.beta, x), x, 0.5,
                             xp.where(x <= 0, -INF, 0.0))

    def _xp_log_sf(self, xp, x):  # I_{1-x}(β, α)
        f = special(xp).betainc
        return xp_log_inside(xp, (x > 0) & (x < 1), lambda x: f(self.beta, self.alpha, 1.0 - x), x,
                             0.5, xp.where(x <= 0, 0.0, -INF))


def as_counts(x):
    """Quantiles of a discrete family as integers where finite (floats where ±inf or NaN)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return int(x) if np.isfinite(x) else float(x)
    return x.astype(np.int64) if np.all(np.isfinite(x)) else x


def _upper_quantile(sf, s, k):
    """``isf(s)``: the smallest integer k with ``sf(k) <= s``, given a first answer ``k``.  scipy
    inverts ``1 - s``, which has lost ``s`` below about 1e-14 (its Poisson ``isf`` is NaN below
    1e-16); where its answer fails that definition for ``0 < s < 1``, a bisection on the exact
    survival function finds k (far-tail truncation samples through it)."""
    k = np.array(k, dtype=float)  # (of the shape of s and the parameters broadcast)
    s = np.broadcast_to(_arr(s), k.shape)
    with _quiet():
        bad = (s > 0) & (s < 1) & ~((sf(k) <= s) & (sf(k - 1.0) > s))
    if not bad.any():
        return k
    lo, hi = np.full(k.shape, -1.0), np.ones(k.shape)  # sf(lo) = 1 > s where it is bad
    while np.any(bad & (sf(hi) > s)):
        hi = np.where(sf(hi) > s, 2.0 * hi, hi)
    while np.any(bad & (hi - lo > 1.0)):
        mid = np.floor(0.5 * (lo + hi))
        below = sf(mid) <= s
        hi, lo = np.where(below, mid, hi), np.where(below, lo, mid)
    k[bad] = hi[bad]
    return k


class PoissonCDF(Cumulative):
    """``cdf(x) = P(X <= floor(x))``; quantiles are integers (scipy's conventions at 0 and 1)."""

    def cdf(self, value):
        k = np.floor(_arr(value))
        with _quiet():
            return scalar_or_array(np.where(k < 0, 0.0, pdtr(np.maximum(k, 0.0), self.rate)))

    def sf(self, value):
        k = np.floor(_arr(value))
        with _quiet():
            return scalar_or_array(np.where(k < 0, 1.0, pdtrc(np.maximum(k, 0.0), self.rate)))

    def icdf(self, q):
        return as_counts(stats_module().poisson.ppf(q, self.rate))

    def isf(self, s):
        with _quiet():
            k = stats_module().poisson.isf(s, self.rate)
        return as_counts(_upper_quantile(self.sf, s, k))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):  # P(X <= k) = Q(k + 1, rate)
        f = special(xp).gammaincc
        k = xp.floor(x)
        return xp_log_inside(xp, k >= 0, lambda k: f(k + 1.0, self.rate), k, 0.0, -INF)

    def _xp_log_sf(self, xp, x):
        f = special(xp).gammainc
        k = xp.floor(x)
        return xp_log_inside(xp, k >= 0, lambda k: f(k + 1.0, self.rate), k, 0.0, 0.0)
