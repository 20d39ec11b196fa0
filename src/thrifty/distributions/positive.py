"""Half distributions for scale parameters: ``HalfNormal``, ``HalfCauchy``, ``HalfStudentT``.

Each is the law of ``|X|`` for a centred ``X`` (NumPyro / PyMC parametrisations: a ``scale``,
plus ``df`` for the half Student t), with support ``[0, inf)`` and a finite density at 0 (so a
draw of exactly 0 is a valid value).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import (
    betainc,
    betainccinv,
    betaincinv,
    erf,
    erfc,
    erfinv,
    log_ndtr,
    ndtri,
    ndtri_exp,
    poch,
)

from thrifty.distributions import _special as sm
from thrifty.distributions import constraints
from thrifty.distributions.base import (
    NP_SCALARS,
    Distribution,
    as_params,
    describe,
    scalar_or_array,
)
from thrifty.distributions.cumulative import (
    UNDERFLOW,
    Cumulative,
    t_tail_log_constant,
    xp_log_inside,
)
from thrifty.distributions.xp import asfloat, finish, namespace, special

INF = math.inf
BIG = float(np.finfo(float).max)
LOG_2 = math.log(2.0)
LOG_PI = math.log(math.pi)
HALF_LOG_2_OVER_PI = 0.5 * math.log(2.0 / math.pi)
LOG_2_OVER_PI = math.log(2.0 / math.pi)
SQRT_2 = math.sqrt(2.0)


def _quiet():
    return np.errstate(all="ignore")


def _z(d, value):
    """``max(x, 0) / scale`` as an array (NaN stays NaN): the cumulative functions are those of
    ``|X|``, 0 below 0."""
    return np.maximum(np.asarray(value, dtype=float), 0.0) / d.scale


def _moment_or_inf(d, ok, value):
    """``value`` where the moment exists (``ok``), ``inf`` elsewhere: a float for scalar
    parameters, else an array of the batch shape."""
    if not d.batch_shape:
        return float(value) if ok else INF
    return np.broadcast_to(np.where(ok, value, np.inf), d.batch_shape)


class HalfNormal(Cumulative, Distribution):
    """Half-normal distribution: ``|X|`` for ``X ~ Normal(0, scale)`` (NumPyro / PyMC
    ``HalfNormal``).

    Density ``sqrt(2/π) / scale · exp(-x² / (2 scale²))`` on ``[0, inf)``
    (``scipy.stats.halfnorm(scale=scale)``); mean ``scale sqrt(2/π)``.

    >>> from thrifty import dist
    >>> d = dist.HalfNormal(2.0)
    >>> round(d.log_prob(0.0), 6), d.log_prob(-0.1), round(d.mean, 6)  # log(sqrt(2/π)/2)
    (-0.918939, -inf, 1.595769)
    """

    domain = constraints.nonnegative
    array_api = True

    _member_params = ("scale",)

    def __init__(self, scale: float | np.ndarray = 1.0):
        (self.scale,), self.batch_shape = as_params(scale, owner=self)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return abs(self.scale * rng.standard_normal())
        return np.abs(self.scale * rng.standard_normal(tuple(shape) + self.batch_shape))

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 <= value < INF:
                return -INF
            z = value / self.scale
            return HALF_LOG_2_OVER_PI - math.log(self.scale) - 0.5 * z * z
        xp = namespace(value, self.scale)
        x = asfloat(xp, value)
        ok = (x >= 0) & (x < INF)
        z = xp.where(ok, x, 0.0) / self.scale
        lp = HALF_LOG_2_OVER_PI - xp.log(self.scale) - 0.5 * z * z
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    def cdf(self, value):
        return scalar_or_array(erf(_z(self, value) / SQRT_2))

    def sf(self, value):
        return scalar_or_array(erfc(_z(self, value) / SQRT_2))

    def log_sf(self, value):
        return scalar_or_array(LOG_2 + log_ndtr(-_z(self, value)))

    def icdf(self, q):
        q = np.asarray(q, dtype=float)
        x = self.scale * SQRT_2 * erfinv(q)
        return scalar_or_array(np.where(q >= 0, x, np.nan))  # erfinv is odd: -0.1 is not NaN

    def isf(self, s):
        return scalar_or_array(-self.scale * ndtri(0.5 * np.asarray(s, dtype=float)))

    def _isf_log(self, log_s):
        return scalar_or_array(-self.scale * ndtri_exp(np.asarray(log_s, dtype=float) - LOG_2))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        f = special(xp).erf
        return xp_log_inside(xp, x > 0, lambda x: f(x / (SQRT_2 * self.scale)), x, 1.0, -INF)

    def _xp_log_sf(self, xp, x):
        return LOG_2 + special(xp).log_ndtr(-(xp.where(x > 0, x, 0.0) / self.scale))

    @property
    def mean(self):
        return self.scale * math.sqrt(2.0 / math.pi)

    @property
    def variance(self):
        return self.scale**2 * (1.0 - 2.0 / math.pi)

    def _params_repr(self):
        return f"scale={describe(self.scale)}"


def _half_cauchy_quantile(q):
    """``tan(π q / 2)``, as ``1 / tan(π (1 - q) / 2)`` above 1/2 (precise near ``q = 1``)."""
    q = np.asarray(q, dtype=float)
    with _quiet():
        t = np.where(q <= 0.5, np.tan(0.5 * np.pi * q), 1.0 / np.tan(0.5 * np.pi * (1.0 - q)))
    return np.where((q >= 0) & (q <= 1), t, np.nan)


class HalfCauchy(Cumulative, Distribution):
    """Half-Cauchy distribution: ``|X|`` for ``X ~ Cauchy(0, scale)`` (NumPyro / PyMC
    ``HalfCauchy``), the usual weakly informative prior on a scale.

    Density ``2 / (π scale (1 + (x / scale)²))`` on ``[0, inf)``
    (``scipy.stats.halfcauchy(scale=scale)``); the median is ``scale``.  It has no finite mean:
    ``mean`` and ``variance`` are ``inf``, as scipy reports them.

    >>> from thrifty import dist
    >>> d = dist.HalfCauchy(1.0)
    >>> round(d.log_prob(0.0), 6), round(d.icdf(0.5), 12), d.mean  # log(2/π); median = scale
    (-0.451583, 1.0, inf)
    """

    domain = constraints.nonnegative
    array_api = True

    _member_params = ("scale",)

    def __init__(self, scale: float | np.ndarray = 1.0):
        (self.scale,), self.batch_shape = as_params(scale, owner=self)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return min(abs(self.scale * rng.standard_cauchy()), BIG)
        x = np.abs(self.scale * rng.standard_cauchy(tuple(shape) + self.batch_shape))
        return np.minimum(x, BIG)  # a zero normal denominator gives inf, outside the support

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 <= value < INF:
                return -INF
            return LOG_2_OVER_PI - math.log(self.scale) - sm.log1p_square(value, self.scale)
        xp = namespace(value, self.scale)
        if xp is not np:
            x = asfloat(xp, value)
            ok = (x >= 0) & (x < INF)
            z = xp.where(ok, x, 0.0) / self.scale
            lp = LOG_2_OVER_PI - xp.log(self.scale) - xp.log1p(z * z)
            return finish(xp, self, xp.where(ok, lp, -INF), masked=True)
        x = np.asarray(value, dtype=float)
        ok = (x >= 0) & (x < np.inf)
        lp = (LOG_2_OVER_PI - np.log(self.scale)
              - sm.log1p_square_array(np.where(ok, x, 0.0), self.scale))
        return scalar_or_array(np.where(ok, lp, -np.inf))

    def cdf(self, value):
        return scalar_or_array(np.arctan2(_z(self, value), 1.0) / (0.5 * np.pi))

    def sf(self, value):  # (2/π) arctan(1/z): precise in the upper tail
        return scalar_or_array(np.arctan2(1.0, _z(self, value)) / (0.5 * np.pi))

    def icdf(self, q):
        return scalar_or_array(self.scale * _half_cauchy_quantile(q))

    def isf(self, s):
        s = np.asarray(s, dtype=float)
        with _quiet():
            return scalar_or_array(np.where(s > 0, self.scale / _half_cauchy_quantile(s), np.inf))

    array_api_cdf = True

    def _xp_log_cdf(self, xp, x):
        pos = x > 0
        z = xp.where(pos, x, 1.0) / self.scale
        return xp.where(pos, xp.log(xp.atan2(z, 1.0) / (0.5 * math.pi)), -INF)

    def _xp_log_sf(self, xp, x):
        return xp.log(xp.atan2(1.0, xp.where(x > 0, x, 0.0) / self.scale) / (0.5 * math.pi))

    @property
    def mean(self):
        return np.full(self.batch_shape, np.inf) if self.batch_shape else INF

    @property
    def variance(self):
        return self.mean

    def _params_repr(self):
        return f"scale={describe(self.scale)}"


class HalfStudentT(Cumulative, Distribution):
    """Half Student t distribution: ``|X|`` for ``X ~ StudentT(df, 0, scale)`` (PyMC
    ``HalfStudentT(nu=df, sigma=scale)``).

    Density ``2 t_df(x / scale) / scale`` on ``[0, inf)`` with ``t_df`` the standard Student t
    density.  ``mean`` is ``inf`` for ``df <= 1`` and ``variance`` is ``inf`` for ``df <= 2`` (the
    moments diverge); ``df = 1`` is the half-Cauchy, ``df -> inf`` the half-normal.

    >>> from thrifty import dist
    >>> d = dist.HalfStudentT(3.0, 2.0)
    >>> round(d.log_prob(1.0), 6), round(d.mean, 6)  # log t_3(1/2); see mean for the formula
    (-1.160974, 2.205316)
    """

    domain = constraints.nonnegative
    array_api = True

    _member_params = ("df", "scale")

    def __init__(self, df: float | np.ndarray, scale: float | np.ndarray = 1.0):
        (self.df, self.scale), self.batch_shape = as_params(df, scale, owner=self)
        self._check_positive("df", self.df)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return min(abs(self.scale * rng.standard_t(self.df)), BIG)
        x = np.abs(self.scale * rng.standard_t(self.df, tuple(shape) + self.batch_shape))
        return np.minimum(x, BIG)  # tiny df: a chi-square draw underflowing to 0 gives inf

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        df = self.df
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 <= value < INF:
                return -INF
            return (
                LOG_2
                + sm.log_gamma_ratio_half(0.5 * df)
                - 0.5 * (math.log(df) + LOG_PI)
                - math.log(self.scale)
                - 0.5 * (df + 1.0) * sm.log1p_square(value, self.scale, df)
            )
        xp = namespace(value, self.scale, df)
        if xp is not np:
            x = asfloat(xp, value)
            ok = (x >= 0) & (x < INF)
            z = xp.where(ok, x, 0.0) / self.scale
            sp = special(xp)
            lp = (LOG_2 + sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df)
                  - 0.5 * (xp.log(df) + LOG_PI) - xp.log(self.scale)
                  - 0.5 * (df + 1.0) * xp.log1p(z * z / df))
            return finish(xp, self, xp.where(ok, lp, -INF), masked=True)
        x = np.asarray(value, dtype=float)
        ok = (x >= 0) & (x < np.inf)
        lp = (
            LOG_2
            + np.log(poch(0.5 * df, 0.5))
            - 0.5 * (np.log(df) + LOG_PI)
            - np.log(self.scale)
            - 0.5 * (df + 1.0) * sm.log1p_square_array(np.where(ok, x, 0.0), self.scale, df)
        )
        return scalar_or_array(np.where(ok, lp, -np.inf))

    # P(|T| <= z) = I_{z²/(df+z²)}(1/2, df/2) and P(|T| > z) = I_{df/(df+z²)}(df/2, 1/2): both
    # tails without cancellation
    def _cdf_sf(self, value):
        """``(cdf, sf)``, each from its own incomplete beta where it is at most 1/2 (else one
        minus the other); z² under- or overflows beyond 1e±100, where the leading terms
        ``2 f(0) z`` and ``2 K z^(-df)`` are exact in double precision."""
        z, df = _z(self, value), self.df
        with _quiet():
            p = betainc(0.5, 0.5 * df, 1.0 / (1.0 + df / (z * z)))
            p = np.where(z < 1e-100, 2.0 * z * poch(0.5 * df, 0.5) / np.sqrt(df * np.pi), p)
            s = betainc(0.5 * df, 0.5, 1.0 / (1.0 + z * z / df))
            far = np.exp(LOG_2 + t_tail_log_constant(df) - df * np.log(z))
            s = np.where((z > 1e100) & (z < np.inf), far, s)
        return np.where(p <= 0.5, p, 1.0 - s), np.where(s <= 0.5, s, 1.0 - p)

    def cdf(self, value):
        return scalar_or_array(self._cdf_sf(value)[0])

    def sf(self, value):
        return scalar_or_array(self._cdf_sf(value)[1])

    array_api_cdf = True

    def _xp_cdf_sf(self, xp, x):
        """``(x > 0, cdf, sf)`` on the array API (``x`` taken as 1 where not positive)."""
        pos, df, f = x > 0, self.df, special(xp).betainc
        z = xp.where(pos, x, 1.0) / self.scale
        p = f(0.5, 0.5 * df, 1.0 / (1.0 + df / (z * z)))
        s = f(0.5 * df, 0.5, 1.0 / (1.0 + z * z / df))
        return pos, xp.where(p <= 0.5, p, 1.0 - s), xp.where(s <= 0.5, s, 1.0 - p)

    def _xp_log_cdf(self, xp, x):
        pos, cdf, _ = self._xp_cdf_sf(xp, x)
        return xp.where(pos, xp.log(cdf), -INF)

    def _xp_log_sf(self, xp, x):
        pos, _, sf = self._xp_cdf_sf(xp, x)
        return xp.where(pos, xp.log(sf), 0.0)

    # Each inverse is taken from the side whose probability is at most 1/2 (the other is exact:
    # 1 - q for q >= 1/2); where the incomplete-beta inverse underflows, the leading terms are
    # exact in double precision: cdf(z) = 2 f(0) z near 0 and sf(z) = 2 K z^(-df) far out.
    def _inverse_cdf(self, q):
        df = self.df
        y = betaincinv(0.5, 0.5 * df, q)  # z² / (df + z²)
        w = betainccinv(0.5 * df, 0.5, q)  # its complement df / (df + z²)
        with _quiet():
            near_zero = q * np.sqrt(df * np.pi) / (2.0 * poch(0.5 * df, 0.5))
            return np.where(y < UNDERFLOW, near_zero, np.sqrt(df * y / w))

    def _inverse_sf(self, s):
        df = self.df
        w = betaincinv(0.5 * df, 0.5, s)  # df / (df + z²)
        y = betainccinv(0.5, 0.5 * df, s)  # its complement z² / (df + z²)
        with _quiet():
            far = np.exp((LOG_2 + t_tail_log_constant(df) - np.log(s)) / df)
            return np.where(w < UNDERFLOW, far, np.sqrt(df * y / w))

    def icdf(self, q):
        q = np.asarray(q, dtype=float)
        z = np.where(q <= 0.5, self._inverse_cdf(q), self._inverse_sf(1.0 - q))
        return scalar_or_array(self.scale * z)

    def isf(self, s):
        s = np.asarray(s, dtype=float)
        z = np.where(s <= 0.5, self._inverse_sf(s), self._inverse_cdf(1.0 - s))
        return scalar_or_array(self.scale * z)

    @property
    def mean(self):  # 2 scale sqrt(df / π) Γ((df + 1) / 2) / (Γ(df / 2) (df - 1))
        df = self.df
        with _quiet():
            m = self.scale * 2.0 * np.sqrt(df / math.pi) * poch(0.5 * df, 0.5) / (df - 1.0)
        return _moment_or_inf(self, df > 1, m)

    @property
    def variance(self):
        df = self.df
        with _quiet():
            v = self.scale**2 * df / (df - 2.0) - self.mean**2
        return _moment_or_inf(self, df > 2, v)

    def _params_repr(self):
        return f"df={describe(self.df)}, scale={describe(self.scale)}"
