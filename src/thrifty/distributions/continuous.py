"""Univariate continuous families."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import poch

from thrifty.distributions import _special as sm
from thrifty.distributions import constraints, cumulative
from thrifty.distributions.base import (
    F64,
    HALF_LOG_2PI,
    NP_SCALARS,
    OFF_SUPPORT,
    ONE,
    Distribution,
    all_true,
    as_params,
    describe,
    owned,
    scalar_or_array,
)
from thrifty.distributions.xp import (
    ArrayAPIShape,
    asfloat,
    finish,
    is_foreign,
    namespace,
    special,
)

INF = math.inf
NP_F64 = np.float64
TINY = 5e-324  # the smallest positive double: draws on an open boundary are moved inside
ONE_BELOW = float(np.nextafter(1.0, 0.0))
BIG = float(np.finfo(float).max)
LOG_PI = math.log(math.pi)
LOG_2 = math.log(2.0)


def _undefined_where(cond, value):
    """``value`` with NaN where ``cond`` holds (moments that do not exist), as float or array."""
    if type(cond) is bool:
        return math.nan if cond else value
    return np.where(cond, np.nan, value)


class Normal(cumulative.NormalCDF, Distribution):
    """Normal distribution with mean ``loc`` and standard deviation ``scale``.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> round(dist.Normal(0.0, 1.0).log_prob(0.0), 6)
    -0.918939
    >>> dist.Normal(np.zeros(3), 1.0).sample(np.random.default_rng(0)).shape
    (3,)
    """

    domain = constraints.real
    array_api = True

    _member_params = ("loc", "scale")

    def __init__(self, loc=0.0, scale=1.0):
        if type(loc) is NP_F64:  # an entry of a data array (``means[z]``): as_params would
            loc = float(loc)  # make it this float, so the fast path below takes it
        if type(loc) is float and type(scale) is float and -INF < loc < INF and 0 < scale < INF:
            self.loc, self.scale = loc, scale  # (valid scalars: the common case, checked here)
            return
        if (type(loc) is np.ndarray and loc.shape == ONE and loc.dtype is F64 and type(scale) is
                float and -INF < loc.item() < INF and 0 < scale < INF):
            self.loc, self.scale, self.batch_shape = loc, scale, ONE  # (one plate element)
            return
        if type(loc) is np.ndarray and loc.dtype is F64 and loc.ndim and (
                type(scale) is float or type(scale) is np.float64) and 0 < scale < INF:
            # (a batch of means, one valid scale: particles, plate elements)
            self.loc, self.scale, self.batch_shape = loc, float(scale), loc.shape
            self._check_finite("loc", loc)
            return
        (self.loc, self.scale), self.batch_shape = as_params(loc, scale, owner=self)
        self._check_finite("loc", self.loc)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return self.loc + self.scale * rng.standard_normal()
        x = rng.standard_normal(tuple(shape) + self.batch_shape)
        x *= self.scale  # (in place: x has the full shape)
        x += self.loc
        return x

    def log_prob(self, value):
        t = type(value)
        if t is not float and t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        scale = self.scale
        if (t is float or t is int) and not self.batch_shape:
            if not -INF < value < INF:
                return -INF
            z = (value - self.loc) / scale
            return -0.5 * z * z - math.log(scale) - HALF_LOG_2PI
        if t is np.ndarray and value.shape == ONE and type(scale) is float:
            loc = self.loc  # one plate element (Gibbs, MH on an element): the array path's
            if type(loc) is np.ndarray and loc.shape == ONE:  # operations, on Python floats
                loc = loc.item()
            if type(loc) is float and value.dtype.kind in "biuf":
                v = value.item()
                if not -INF < v < INF:  # (NaN too: off the support)
                    return np.array([-INF])
                z = (v - loc) / scale
                out = np.empty(1)  # (``np.array([lp])`` without its type discovery: half the cost)
                out[0] = z * z * -0.5 - (math.log(scale) + HALF_LOG_2PI)
                return out
        if type(self.batch_shape) is ArrayAPIShape or (t is not np.ndarray and is_foreign(value)):
            # the array API (takes_foreign, without its call; NumPy's path below: the same)
            xp = namespace(value, self.loc, scale)
            z = (asfloat(xp, value) - self.loc) / scale
            return finish(xp, self, -0.5 * z * z - xp.log(scale) - HALF_LOG_2PI)
        if t is np.ndarray and value.dtype is F64:  # (a float loc or float64 array: the same
            z = np.subtract(value, self.loc)  # doubles as dtype=float, without its cast check)
        else:
            z = np.subtract(value, self.loc, dtype=float)
        if type(scale) is float and type(z) is np.ndarray:
            z /= scale  # (a new array of the full shape: the rest works in place)
        else:  # an array scale may broadcast z further
            z = np.asarray(np.divide(z, scale))
        z *= z
        z *= -0.5
        z -= (math.log(scale) if type(scale) is float else np.log(scale)) + HALF_LOG_2PI
        np.fmax(z, OFF_SUPPORT, out=z)  # a NaN value is off the support
        return z if z.ndim else float(z)  # (z is an array: see scalar_or_array)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale**2

    def _params_repr(self):
        return f"loc={describe(self.loc)}, scale={describe(self.scale)}"


class LogNormal(cumulative.LogNormalCDF, Distribution):
    """Distribution of ``exp(X)`` for ``X ~ Normal(loc, scale)``.

    >>> from thrifty import dist
    >>> round(dist.LogNormal(0.0, 1.0).log_prob(1.0), 6)
    -0.918939
    >>> dist.LogNormal(0.0, 1.0).log_prob(-1.0)
    -inf
    """

    domain = constraints.positive
    array_api = True

    _member_params = ("loc", "scale")

    def __init__(self, loc, scale):
        (self.loc, self.scale), self.batch_shape = as_params(loc, scale, owner=self)
        self._check_finite("loc", self.loc)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return math.exp(self.loc + self.scale * rng.standard_normal())
        return np.exp(self.loc + self.scale * rng.standard_normal(tuple(shape) + self.batch_shape))

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 < value < INF:
                return -INF
            lx = math.log(value)
            z = (lx - self.loc) / self.scale
            return -0.5 * z * z - lx - math.log(self.scale) - HALF_LOG_2PI
        xp = namespace(value, self.loc, self.scale)
        x = asfloat(xp, value)
        ok = (x > 0) & (x < INF)
        lx = xp.log(xp.where(ok, x, 1.0))
        z = (lx - self.loc) / self.scale
        lp = -0.5 * z * z - lx - xp.log(self.scale) - HALF_LOG_2PI
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):
        m = self.loc + 0.5 * self.scale**2
        return np.exp(m) if self.batch_shape else math.exp(m)

    @property
    def variance(self):
        s2 = self.scale**2
        if self.batch_shape:
            return np.expm1(s2) * np.exp(2 * self.loc + s2)
        return math.expm1(s2) * math.exp(2 * self.loc + s2)

    def _params_repr(self):
        return f"loc={describe(self.loc)}, scale={describe(self.scale)}"


class StudentT(cumulative.StudentTCDF, Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc``, scale ``scale``.

    ``mean`` is NaN for ``df <= 1``; ``variance`` is ``inf`` for ``1 < df <= 2`` and NaN for
    ``df <= 1`` (the moments do not exist).

    >>> from thrifty import dist
    >>> round(dist.StudentT(1.0).log_prob(0.0), 6)  # Cauchy: -log(pi)
    -1.14473
    """

    domain = constraints.real
    array_api = True

    _member_params = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0):
        (self.df, self.loc, self.scale), self.batch_shape = as_params(df, loc, scale, owner=self)
        self._check_positive("df", self.df)
        self._check_finite("loc", self.loc)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return self.loc + self.scale * rng.standard_t(self.df)
        return self.loc + self.scale * rng.standard_t(self.df, tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        df = self.df
        if (t is float or t is int) and not self.batch_shape:
            if not -INF < value < INF:
                return -INF
            return (
                sm.log_gamma_ratio_half(0.5 * df)
                - 0.5 * (math.log(df) + LOG_PI)
                - math.log(self.scale)
                - 0.5 * (df + 1.0) * sm.log1p_square(value - self.loc, self.scale, df)
            )
        xp = namespace(value, self.loc, self.scale, df)
        if xp is not np:
            z = (asfloat(xp, value) - self.loc) / self.scale
            sp = special(xp)
            lp = (sp.gammaln(0.5 * (df + 1.0)) - sp.gammaln(0.5 * df)
                  - 0.5 * (xp.log(df) + LOG_PI) - xp.log(self.scale)
                  - 0.5 * (df + 1.0) * xp.log1p(z * z / df))
            return finish(xp, self, lp)
        d = np.asarray(value, dtype=float) - self.loc
        lp = (
            np.log(poch(0.5 * df, 0.5))
            - 0.5 * (np.log(df) + LOG_PI)
            - np.log(self.scale)
            - 0.5 * (df + 1.0) * sm.log1p_square_array(d, self.scale, df)
        )
        return scalar_or_array(np.fmax(lp, -np.inf))  # a NaN value is off the support: -inf

    @property
    def mean(self):
        return _undefined_where(self.df <= 1, self.loc)

    @property
    def variance(self):
        df = self.df
        if not self.batch_shape:
            if df > 2:
                return self.scale**2 * df / (df - 2)
            return INF if df > 1 else math.nan
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(df > 2, self.scale**2 * df / (df - 2), np.inf)
        return np.where(df > 1, v, np.nan)

    def _params_repr(self):
        return f"df={describe(self.df)}, loc={describe(self.loc)}, scale={describe(self.scale)}"


class Cauchy(cumulative.CauchyCDF, Distribution):
    """Cauchy distribution with location ``loc`` and scale ``scale``.

    It has no mean or variance: ``mean`` and ``variance`` are NaN.

    >>> from thrifty import dist
    >>> round(dist.Cauchy(0.0, 1.0).log_prob(1.0), 6)  # -log(2 pi)
    -1.837877
    """

    domain = constraints.real
    array_api = True

    _member_params = ("loc", "scale")

    def __init__(self, loc=0.0, scale=1.0):
        (self.loc, self.scale), self.batch_shape = as_params(loc, scale, owner=self)
        self._check_finite("loc", self.loc)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return self.loc + self.scale * rng.standard_cauchy()
        return self.loc + self.scale * rng.standard_cauchy(tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not -INF < value < INF:
                return -INF
            return -LOG_PI - math.log(self.scale) - sm.log1p_square(value - self.loc, self.scale)
        xp = namespace(value, self.loc, self.scale)
        if xp is not np:
            z = (asfloat(xp, value) - self.loc) / self.scale
            return finish(xp, self, -LOG_PI - xp.log(self.scale) - xp.log1p(z * z))
        d = np.asarray(value, dtype=float) - self.loc
        lp = -LOG_PI - np.log(self.scale) - sm.log1p_square_array(d, self.scale)
        return scalar_or_array(np.fmax(lp, -np.inf))  # a NaN value is off the support: -inf

    @property
    def mean(self):
        return np.full(self.batch_shape, np.nan) if self.batch_shape else math.nan

    @property
    def variance(self):
        return self.mean

    def _params_repr(self):
        return f"loc={describe(self.loc)}, scale={describe(self.scale)}"


class Laplace(cumulative.LaplaceCDF, Distribution):
    """Laplace (double exponential) distribution: density ``exp(-|x - loc| / scale) / (2 scale)``.

    >>> from thrifty import dist
    >>> round(dist.Laplace(0.0, 1.0).log_prob(0.0), 6)  # -log(2)
    -0.693147
    """

    domain = constraints.real
    array_api = True

    _member_params = ("loc", "scale")

    def __init__(self, loc=0.0, scale=1.0):
        (self.loc, self.scale), self.batch_shape = as_params(loc, scale, owner=self)
        self._check_finite("loc", self.loc)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return self.loc + self.scale * rng.laplace()
        return self.loc + self.scale * rng.laplace(size=tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not -INF < value < INF:
                return -INF
            return -LOG_2 - math.log(self.scale) - abs(value - self.loc) / self.scale
        xp = namespace(value, self.loc, self.scale)
        x = asfloat(xp, value)
        lp = -LOG_2 - xp.log(self.scale) - xp.abs(x - self.loc) / self.scale
        return finish(xp, self, lp)  # a NaN value is off the support: -inf

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2.0 * self.scale**2

    def _params_repr(self):
        return f"loc={describe(self.loc)}, scale={describe(self.scale)}"


class Uniform(cumulative.UniformCDF, Distribution):
    """Uniform distribution on the closed interval ``[low, high]`` (``low < high``, both finite).

    >>> from thrifty import dist
    >>> d = dist.Uniform(0.0, 4.0)
    >>> round(d.log_prob(4.0), 6), d.log_prob(4.5), d.support
    (-1.386294, -inf, [0.0, 4.0])
    """

    domain = constraints.real
    array_api = True

    _member_params = ("low", "high")

    def __init__(self, low=0.0, high=1.0):
        (lo, hi), self.batch_shape = as_params(low, high, owner=self)
        self.low, self.high = owned(lo), owned(hi)  # (its support: read after the site)
        self._check_finite("low", self.low)
        self._check_finite("high", self.high)
        ordered = self.low < self.high
        if type(ordered) is not bool and is_foreign(ordered):
            self._invalid_unless(ordered)
        elif not all_true(ordered):
            self._fail(
                f"low must be less than high, got low={describe(self.low)}, "
                f"high={describe(self.high)}"
            )
        elif not all_true(self.high - self.low < INF):  # (the density 1/width, draws low +
            self._fail(  # width·u and the cdf: inf, -inf and 0 past float64's largest)
                f"high - low must be a finite float64 (below 1.8e308), got low="
                f"{describe(self.low)}, high={describe(self.high)}"
            )

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return self.low + (self.high - self.low) * rng.random()
        return self.low + (self.high - self.low) * rng.random(tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if self.low <= value <= self.high:
                return -math.log(self.high - self.low)
            return -INF
        xp = namespace(value, self.low, self.high)
        x = asfloat(xp, value)
        ok = (x >= self.low) & (x <= self.high)
        return finish(xp, self, xp.where(ok, -xp.log(self.high - self.low), -INF), masked=True)

    @property
    def mean(self):
        return 0.5 * (self.low + self.high)

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12.0

    def _params_repr(self):
        return f"low={describe(self.low)}, high={describe(self.high)}"


class Exponential(cumulative.ExponentialCDF, Distribution):
    """Exponential distribution with rate ``rate`` (mean ``1 / rate``), support ``[0, inf)``.

    >>> from thrifty import dist
    >>> import math
    >>> dist.Exponential(2.0).log_prob(0.0) == math.log(2.0)
    True
    """

    domain = constraints.nonnegative
    array_api = True

    _member_params = ("rate",)

    def __init__(self, rate=1.0):
        (self.rate,), self.batch_shape = as_params(rate, owner=self)
        self._check_positive("rate", self.rate)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return rng.standard_exponential() / self.rate
        return rng.standard_exponential(tuple(shape) + self.batch_shape) / self.rate

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if 0.0 <= value < INF:
                return math.log(self.rate) - self.rate * value
            return -INF
        xp = namespace(value, self.rate)
        x = asfloat(xp, value)
        ok = (x >= 0) & (x < INF)
        lp = xp.log(self.rate) - self.rate * xp.where(ok, x, 0.0)
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):
        return 1.0 / self.rate

    @property
    def variance(self):
        return 1.0 / self.rate**2

    def _params_repr(self):
        return f"rate={describe(self.rate)}"


class Gamma(cumulative.GammaCDF, Distribution):
    """Gamma distribution with shape ``concentration`` and rate ``rate`` (mean ``α / rate``).

    Density ``rate^α / Γ(α) x^(α-1) exp(-rate x)`` on ``[0, inf)`` (at 0 it is ``+inf`` for
    ``α < 1`` and 0 for ``α > 1``).

    >>> from thrifty import dist
    >>> round(dist.Gamma(2.0, 3.0).log_prob(1.0), 6)  # log(9) + log(1) - 3
    -0.802775
    """

    domain = constraints.nonnegative
    array_api = True

    _member_params = ("concentration", "rate")

    def __init__(self, concentration, rate=1.0):
        (self.concentration, self.rate), self.batch_shape = as_params(
            concentration, rate, owner=self
        )
        self._check_positive("concentration", self.concentration)
        self._check_positive("rate", self.rate)

    def sample(self, rng, shape=()):
        # a small concentration underflows to exactly 0, outside the support: keep it positive
        if not shape and not self.batch_shape:
            return max(rng.standard_gamma(self.concentration), TINY) / self.rate
        g = rng.standard_gamma(self.concentration, tuple(shape) + self.batch_shape)
        return np.maximum(g, TINY) / self.rate

    def log_prob(self, value):
        a, rate = self.concentration, self.rate
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 <= value < INF:
                return -INF
            return a * math.log(rate) + sm.xlogy(a - 1.0, value) - rate * value - math.lgamma(a)
        xp = namespace(value, a, rate)
        sp = special(xp)
        x = asfloat(xp, value)
        ok = (x >= 0) & (x < INF)
        x = xp.where(ok, x, 1.0)
        lp = a * xp.log(rate) + sp.xlogy(a - 1.0, x) - rate * x - sp.gammaln(a)
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def variance(self):
        return self.concentration / self.rate**2

    def _params_repr(self):
        return f"concentration={describe(self.concentration)}, rate={describe(self.rate)}"


class InverseGamma(cumulative.InverseGammaCDF, Distribution):
    """Distribution of ``1 / X`` for ``X ~ Gamma(concentration, rate=scale)``.

    Density ``β^α / Γ(α) x^(-α-1) exp(-β / x)`` on ``(0, inf)`` with ``α = concentration``,
    ``β = scale`` (``scipy.stats.invgamma(α, scale=β)``).  ``mean`` is ``inf`` for ``α <= 1`` and
    ``variance`` is ``inf`` for ``α <= 2``.

    >>> from thrifty import dist
    >>> round(dist.InverseGamma(3.0, 2.0).log_prob(1.0), 6)  # 3 log 2 - log 2 - 2
    -0.613706
    """

    domain = constraints.positive
    array_api = True

    _member_params = ("concentration", "scale")

    def __init__(self, concentration, scale=1.0):
        (self.concentration, self.scale), self.batch_shape = as_params(
            concentration, scale, owner=self
        )
        self._check_positive("concentration", self.concentration)
        self._check_positive("scale", self.scale)

    def sample(self, rng, shape=()):
        # a small concentration gives gamma draws that underflow to 0: the inverse would be
        # +inf, outside the support; keep the draws finite
        if not shape and not self.batch_shape:
            return min(self.scale / max(rng.standard_gamma(self.concentration), TINY), BIG)
        g = rng.standard_gamma(self.concentration, tuple(shape) + self.batch_shape)
        with np.errstate(over="ignore"):
            return np.minimum(self.scale / np.maximum(g, TINY), BIG)

    def log_prob(self, value):
        a, b = self.concentration, self.scale
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 < value < INF:
                return -INF
            return a * math.log(b) - math.lgamma(a) - (a + 1.0) * math.log(value) - b / value
        xp = namespace(value, a, b)
        x = asfloat(xp, value)
        ok = (x > 0) & (x < INF)
        x = xp.where(ok, x, 1.0)
        lp = a * xp.log(b) - special(xp).gammaln(a) - (a + 1.0) * xp.log(x) - b / x
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):
        a, b = self.concentration, self.scale
        if not self.batch_shape:
            return b / (a - 1.0) if a > 1 else INF
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 1, b / (a - 1.0), np.inf)

    @property
    def variance(self):
        a, b = self.concentration, self.scale
        if not self.batch_shape:
            return b * b / ((a - 1.0) ** 2 * (a - 2.0)) if a > 2 else INF
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 2, b * b / ((a - 1.0) ** 2 * (a - 2.0)), np.inf)

    def _params_repr(self):
        return f"concentration={describe(self.concentration)}, scale={describe(self.scale)}"


class Beta(cumulative.BetaCDF, Distribution):
    """Beta distribution on ``[0, 1]`` with density ``x^(α-1) (1-x)^(β-1) / B(α, β)``.

    At the endpoints the density is finite only when the matching parameter is 1 (``+inf`` below
    1, 0 above).

    >>> from thrifty import dist
    >>> round(dist.Beta(2.0, 2.0).log_prob(0.5), 6)  # log 1.5
    0.405465
    >>> round(dist.Beta(1.0, 3.0).log_prob(0.0), 6)  # log 3: finite at 0 since alpha = 1
    1.098612
    """

    domain = constraints.unit_interval
    array_api = True

    _member_params = ("alpha", "beta")

    def __init__(self, alpha, beta):
        (self.alpha, self.beta), self.batch_shape = as_params(alpha, beta, owner=self)
        self._check_positive("alpha", self.alpha)
        self._check_positive("beta", self.beta)

    def sample(self, rng, shape=()):
        # small α or β: NumPy returns exactly 0 or 1 (underflow), where the density is +∞ and
        # a chain would freeze; the draws stay inside the open interval (0, 1)
        if not shape and not self.batch_shape:
            return min(max(rng.beta(self.alpha, self.beta), TINY), ONE_BELOW)
        return np.clip(rng.beta(self.alpha, self.beta, tuple(shape) + self.batch_shape),
                       TINY, ONE_BELOW)

    def log_prob(self, value):
        a, b = self.alpha, self.beta
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 <= value <= 1.0:
                return -INF
            return sm.xlogy(a - 1.0, value) + sm.xlog1my(b - 1.0, value) - sm.betaln(a, b)
        xp = namespace(value, a, b)
        sp = special(xp)
        x = asfloat(xp, value)
        ok = (x >= 0) & (x <= 1)
        x = xp.where(ok, x, 0.5)
        lp = sp.xlogy(a - 1.0, x) + sp.xlog1py(b - 1.0, -x) - sp.betaln(a, b)
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self):
        a, b = self.alpha, self.beta
        s = a + b
        return a * b / (s * s * (s + 1.0))

    def _params_repr(self):
        return f"alpha={describe(self.alpha)}, beta={describe(self.beta)}"
