"""``Truncated(d, low, high)`` and finite ``Mixture(weights, components)``."""

from __future__ import annotations

import math

import numpy as np
from scipy import special as sp

from thrifty.distributions import constraints
from thrifty.distributions.base import Distribution, describe, scalar_or_array


# -- log cdf, log survival and their inverses of the univariate continuous families ------------
def _std(d, x):
    return (np.asarray(x, dtype=float) - d.loc) / d.scale


def _normal(d):
    return (lambda x: sp.log_ndtr(_std(d, x)), lambda x: sp.log_ndtr(-_std(d, x)),
            lambda p: d.loc + d.scale * sp.ndtri(p), lambda q: d.loc - d.scale * sp.ndtri(q))


def _student(d):
    v = d.df
    return (lambda x: np.log(sp.stdtr(v, _std(d, x))), lambda x: np.log(sp.stdtr(v, -_std(d, x))),
            lambda p: d.loc + d.scale * sp.stdtrit(v, p),
            lambda q: d.loc - d.scale * sp.stdtrit(v, q))


def _cauchy(d):
    return (lambda x: np.log(0.5 + np.arctan(_std(d, x)) / np.pi),
            lambda x: np.log(0.5 - np.arctan(_std(d, x)) / np.pi),
            lambda p: d.loc + d.scale * np.tan(np.pi * (p - 0.5)),
            lambda q: d.loc - d.scale * np.tan(np.pi * (q - 0.5)))


def _laplace(d):
    def lcdf(x):
        z = _std(d, x)
        return np.where(z < 0, z - math.log(2.0), np.log1p(-0.5 * np.exp(-np.abs(z))))

    def icdf(p):
        p = np.asarray(p, dtype=float)
        return d.loc + d.scale * np.where(p < 0.5, np.log(2 * p), -np.log(2 * (1 - p)))

    return (lcdf, lambda x: lcdf(2 * d.loc - np.asarray(x, dtype=float)), icdf,
            lambda q: 2 * d.loc - icdf(q))


def _exponential(d):
    return (lambda x: np.log(-np.expm1(-d.rate * np.maximum(x, 0.0))),
            lambda x: -d.rate * np.maximum(x, 0.0),
            lambda p: -np.log1p(-np.asarray(p)) / d.rate, lambda q: -np.log(q) / d.rate)


def _gamma(d):
    a, b = d.concentration, d.rate
    return (lambda x: np.log(sp.gammainc(a, b * np.maximum(x, 0.0))),
            lambda x: np.log(sp.gammaincc(a, b * np.maximum(x, 0.0))),
            lambda p: sp.gammaincinv(a, p) / b, lambda q: sp.gammainccinv(a, q) / b)


def _lognormal(d):
    def z(x):
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore"):
            return (np.log(np.maximum(x, 0.0)) - d.loc) / d.scale

    return (lambda x: sp.log_ndtr(z(x)), lambda x: sp.log_ndtr(-z(x)),
            lambda p: np.exp(d.loc + d.scale * sp.ndtri(p)),
            lambda q: np.exp(d.loc - d.scale * sp.ndtri(q)))


def _beta(d):
    a, b = d.alpha, d.beta
    return (lambda x: np.log(sp.betainc(a, b, np.clip(x, 0.0, 1.0))),
            lambda x: np.log(sp.betainc(b, a, 1.0 - np.clip(x, 0.0, 1.0))),
            lambda p: sp.betaincinv(a, b, p), lambda q: 1.0 - sp.betaincinv(b, a, q))


def _uniform(d):
    w = d.high - d.low
    return (lambda x: np.log(np.clip((np.asarray(x) - d.low) / w, 0.0, 1.0)),
            lambda x: np.log(np.clip((d.high - np.asarray(x)) / w, 0.0, 1.0)),
            lambda p: d.low + w * np.asarray(p), lambda q: d.high - w * np.asarray(q))


CDFS = {"Normal": _normal, "StudentT": _student, "Cauchy": _cauchy, "Laplace": _laplace,
        "Exponential": _exponential, "Gamma": _gamma, "LogNormal": _lognormal, "Beta": _beta,
        "Uniform": _uniform}


def _log_diff(a, b):
    """log(exp(a) − exp(b)) for a ≥ b."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return a + np.log1p(-np.exp(b - a))


class Truncated(Distribution):
    """``base`` (a univariate continuous distribution) restricted to [``low``, ``high``]:
    density f(x) / (F(high) − F(low)) inside, 0 outside.  ``low``/``high`` may be None (no
    bound).  The mass is computed from the lower tail or the upper tail, whichever is smaller,
    in log space, and sampling inverts the cdf or the survival function accordingly — so a
    far tail (Normal(0, 1) above 8, mass 6e-16) is exact.

    >>> from thrifty import dist
    >>> d = dist.Truncated(dist.Normal(0.0, 1.0), low=0.0)
    >>> round(d.log_prob(0.0) - dist.Normal(0.0, 1.0).log_prob(0.0), 12)  # log 2
    0.693147180560
    """

    def __init__(self, base, low=None, high=None):
        name = type(base).__name__
        if not isinstance(base, Distribution) or name not in CDFS or base.event_shape:
            self._fail(f"base must be one of the univariate continuous families "
                       f"{', '.join(sorted(CDFS))}, got {base!r}")
            from thrifty.distributions.continuous import Normal

            base = Normal(0.0, 1.0)
        if base._error is not None:
            self._fail(f"base: {base._error}")
        lo = -np.inf if low is None else np.asarray(low, dtype=float)
        hi = np.inf if high is None else np.asarray(high, dtype=float)
        if not np.all(lo < hi):
            self._fail(f"low must be below high, got low={describe(lo)}, high={describe(hi)}")
        self.base, self.low, self.high = base, scalar_or_array(lo), scalar_or_array(hi)
        self.batch_shape = np.broadcast_shapes(base.batch_shape, np.shape(lo), np.shape(hi))
        lcdf, lsf, self._icdf, self._isf = CDFS[name](base)
        with np.errstate(all="ignore"):
            fl, fh = lcdf(lo), lcdf(hi)
            sl, sh = lsf(lo), lsf(hi)
        self._upper = np.asarray(sl < fh)  # the interval is nearer the upper tail: use sf
        with np.errstate(all="ignore"):
            self._log_mass = np.where(self._upper, _log_diff(sl, sh), _log_diff(fh, fl))
        self._fl, self._fh, self._sl, self._sh = fl, fh, sl, sh
        if not np.all(self._log_mass > -np.inf):
            self._fail(f"the interval [{describe(lo)}, {describe(hi)}] has no mass under "
                       f"{base!r}")

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    def log_prob(self, value):
        x = np.asarray(value, dtype=float)
        inside = (x >= self.low) & (x <= self.high)
        lp = np.asarray(self.base.log_prob(np.where(inside, x, np.clip(x, self.low, self.high))))
        return scalar_or_array(np.where(inside, lp - self._log_mass, -np.inf))

    def sample(self, rng, shape=()):
        u = rng.random(tuple(shape) + self.batch_shape)
        with np.errstate(all="ignore"):
            # lower tail: F⁻¹(F(l) + u (F(h) − F(l))); upper tail: S⁻¹(S(l) − u (S(l) − S(h)))
            lower = self._icdf(np.exp(np.logaddexp(self._fl, np.log(u) + self._log_mass)))
            upper = self._isf(np.exp(_log_diff(self._sl, np.log(u) + self._log_mass)))
        x = np.clip(np.where(self._upper, upper, lower), self.low, self.high)
        return float(x) if np.ndim(x) == 0 else x

    @property
    def mean(self):
        raise NotImplementedError("Truncated has no closed-form mean here")

    def _params_repr(self):
        return f"{self.base!r}, low={describe(self.low)}, high={describe(self.high)}"


class Mixture(Distribution):
    """Finite mixture Σ_k w_k p_k(x) of ``components`` (distributions of the same support and
    shapes) with ``weights`` (non-negative, summing to 1).

    >>> import math
    >>> from thrifty import dist
    >>> m = dist.Mixture([0.3, 0.7], [dist.Normal(-1.0, 1.0), dist.Normal(2.0, 0.5)])
    >>> ref = math.log(0.3 * math.exp(dist.Normal(-1.0, 1.0).log_prob(0.0))
    ...                + 0.7 * math.exp(dist.Normal(2.0, 0.5).log_prob(0.0)))
    >>> abs(m.log_prob(0.0) - ref) < 1e-12
    True
    """

    def __init__(self, weights, components):
        comps = list(components) if isinstance(components, (list, tuple)) else []
        if not comps or not all(isinstance(c, Distribution) for c in comps):
            self._fail(f"components must be a non-empty list of distributions, got "
                       f"{components!r}")
            from thrifty.distributions.continuous import Normal

            comps = [Normal(0.0, 1.0)]
        w = np.asarray(weights, dtype=float)
        if w.shape != (len(comps),) or not np.all(w >= 0) or not abs(w.sum() - 1.0) < 1e-8:
            self._fail(f"weights must be {len(comps)} non-negative numbers summing to 1 (one "
                       f"per component), got {describe(w)}")
            w = np.full(len(comps), 1.0 / len(comps))
        kinds = {c.is_discrete for c in comps}
        if len(kinds) != 1 or len({c.event_shape for c in comps}) != 1:
            self._fail("components must all be discrete or all continuous, with one event shape")
        for c in comps:
            if c._error is not None:
                self._fail(f"component {c!r}: {c._error}")
        self.weights, self.components = w, comps
        self.is_discrete = comps[0].is_discrete
        self.event_shape = comps[0].event_shape
        self.batch_shape = np.broadcast_shapes(*(c.batch_shape for c in comps))
        self.domain = comps[0].domain
        with np.errstate(divide="ignore"):
            self._log_w = np.log(w)

    def log_prob(self, value):
        lps = np.stack([np.broadcast_to(np.asarray(c.log_prob(value), dtype=float),
                                        np.shape(self.components[0].log_prob(value)))
                        for c in self.components])
        lw = self._log_w.reshape((-1,) + (1,) * (lps.ndim - 1))
        return scalar_or_array(sp.logsumexp(lw + lps, axis=0))

    def sample(self, rng, shape=()):
        shape = tuple(shape) + self.batch_shape
        k = rng.choice(len(self.components), size=shape, p=self.weights)
        draws = np.stack([np.broadcast_to(np.asarray(c.sample(rng, tuple(shape)), dtype=float),
                                          shape + self.event_shape)
                          for c in self.components])
        idx = k.reshape((1,) + k.shape + (1,) * len(self.event_shape))
        x = np.take_along_axis(draws, np.broadcast_to(idx, (1,) + draws.shape[1:]), 0)[0]
        if self.is_discrete:
            x = x.astype(np.int64)
        return x.item() if x.ndim == 0 else x

    @property
    def mean(self):
        ms = [np.asarray(c.mean, dtype=float) for c in self.components]
        return scalar_or_array(sum(w * m for w, m in zip(self.weights, ms)))

    @property
    def variance(self):
        ms = [np.asarray(c.mean, dtype=float) for c in self.components]
        vs = [np.asarray(c.variance, dtype=float) for c in self.components]
        second = sum(w * (v + m * m) for w, v, m in zip(self.weights, vs, ms))
        return scalar_or_array(second - np.asarray(self.mean) ** 2)

    def _params_repr(self):
        return f"weights={describe(self.weights)}, components={self.components!r}"
