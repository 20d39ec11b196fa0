"""Half distributions on [0, ∞): HalfNormal, HalfCauchy, HalfStudentT (the usual priors of scales).

Each is ``|X|`` for X symmetric about 0 with the given scale: density 2·f(x) on x ≥ 0.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from thrifty.distributions import constraints
from thrifty.distributions.base import (
    HALF_LOG_2PI,
    Distribution,
    as_params,
    describe,
    scalar_or_array,
)

INF = math.inf
LOG_2 = math.log(2.0)
LOG_PI = math.log(math.pi)


def _const(x, shape):
    return np.full(shape, x) if shape else x


class _Half(Distribution):
    domain = constraints.nonnegative

    def _lp(self, z, log_scale):  # log f(z) of the symmetric base at z = x / scale
        raise NotImplementedError

    def log_prob(self, value):
        t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if not 0.0 <= value < INF:
                return -INF
            return LOG_2 + self._lp(value / self.scale, math.log(self.scale))
        x = np.asarray(value, dtype=float)
        ok = (x >= 0) & (x < np.inf)
        lp = LOG_2 + self._lp(np.where(ok, x, 0.0) / self.scale, np.log(self.scale))
        return scalar_or_array(np.where(ok, lp, -np.inf))


class HalfNormal(_Half):
    """The absolute value of N(0, scale²): density √(2/π)/scale · exp(−x²/(2 scale²)) on x ≥ 0.

    >>> from thrifty import dist
    >>> round(dist.HalfNormal(1.0).log_prob(0.0), 6)  # log √(2/π)
    -0.225791
    """

    def __init__(self, scale=1.0):
        (self.scale,), self.batch_shape = as_params(scale, owner=self)
        self._check_positive("scale", self.scale)

    def _lp(self, z, log_scale):
        return -HALF_LOG_2PI - log_scale - 0.5 * z * z

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return abs(rng.standard_normal()) * self.scale
        return np.abs(rng.standard_normal(tuple(shape) + self.batch_shape)) * self.scale

    @property
    def mean(self):
        return self.scale * math.sqrt(2.0 / math.pi)

    @property
    def variance(self):
        return self.scale**2 * (1.0 - 2.0 / math.pi)

    def _params_repr(self):
        return f"scale={describe(self.scale)}"


class HalfCauchy(_Half):
    """The absolute value of Cauchy(0, scale): density 2/(π scale (1 + (x/scale)²)) on x ≥ 0.
    No finite mean or variance (both ``inf``, as in ``scipy.stats.halfcauchy``).

    >>> from thrifty import dist
    >>> round(dist.HalfCauchy(1.0).log_prob(0.0), 6)  # log(2/π)
    -0.451583
    """

    def __init__(self, scale=1.0):
        (self.scale,), self.batch_shape = as_params(scale, owner=self)
        self._check_positive("scale", self.scale)

    def _lp(self, z, log_scale):
        if type(z) is float:
            return -LOG_PI - log_scale - math.log1p(z * z)
        return -LOG_PI - log_scale - np.log1p(z * z)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return abs(rng.standard_cauchy()) * self.scale
        return np.abs(rng.standard_cauchy(tuple(shape) + self.batch_shape)) * self.scale

    @property
    def mean(self):
        return _const(INF, self.batch_shape)

    @property
    def variance(self):
        return _const(INF, self.batch_shape)

    def _params_repr(self):
        return f"scale={describe(self.scale)}"


class HalfStudentT(_Half):
    """The absolute value of t_df(0, scale): twice the Student-t density on x ≥ 0 (Stan's and
    PyMC's half-t prior).  The mean is finite for df > 1 and the variance for df > 2 (else
    ``inf``).

    >>> from thrifty import dist
    >>> d = dist.HalfStudentT(3.0, 2.0)
    >>> round(d.log_prob(1.0), 6)
    -0.862158
    """

    def __init__(self, df, scale=1.0):
        (self.df, self.scale), self.batch_shape = as_params(df, scale, owner=self)
        self._check_positive("df", self.df)
        self._check_positive("scale", self.scale)

    def _lp(self, z, log_scale):
        v = self.df
        if type(z) is float:
            return (math.lgamma(0.5 * (v + 1)) - math.lgamma(0.5 * v) - 0.5 * math.log(v * math.pi)
                    - log_scale - 0.5 * (v + 1) * math.log1p(z * z / v))
        return (gammaln(0.5 * (v + 1)) - gammaln(0.5 * v) - 0.5 * np.log(v * np.pi)
                - log_scale - 0.5 * (v + 1) * np.log1p(z * z / v))

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return abs(rng.standard_t(self.df)) * self.scale
        return np.abs(rng.standard_t(self.df, tuple(shape) + self.batch_shape)) * self.scale

    @property
    def mean(self):
        v, s = np.asarray(self.df, dtype=float), np.asarray(self.scale, dtype=float)
        with np.errstate(all="ignore"):
            m = 2 * s * np.sqrt(v / np.pi) * np.exp(gammaln(0.5 * (v + 1)) - gammaln(0.5 * v)) / (
                v - 1)
        return scalar_or_array(np.where(v > 1, m, np.inf))

    @property
    def variance(self):
        v, s = np.asarray(self.df, dtype=float), np.asarray(self.scale, dtype=float)
        with np.errstate(all="ignore"):
            var = s**2 * v / (v - 2) - np.asarray(self.mean) ** 2
        return scalar_or_array(np.where(v > 2, var, np.inf))

    def _params_repr(self):
        return f"df={describe(self.df)}, scale={describe(self.scale)}"
