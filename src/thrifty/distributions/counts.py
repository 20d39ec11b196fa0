"""Count families beyond Poisson: NegativeBinomial (and Stan's mean/dispersion form) and
Multinomial."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, gammaln, log_expit, xlogy

from thrifty.distributions import constraints
from thrifty.distributions.base import (
    Distribution,
    as_params,
    describe,
    is_integral,
    scalar_or_array,
)
from thrifty.errors import DistributionError


class NegativeBinomial(Distribution):
    """Number of successes before ``total_count`` failures, each trial a success with
    probability ``probs`` (or ``sigmoid(logits)``) — the convention of NumPyro's
    ``NegativeBinomialProbs`` and PyTorch: pmf C(k + r − 1, k) (1 − p)^r p^k, mean r p/(1 − p)
    (``scipy.stats.nbinom(r, 1 − p)``).  ``total_count`` r > 0 need not be an integer.

    >>> from thrifty import dist
    >>> round(dist.NegativeBinomial(2.0, probs=0.5).log_prob(1), 6)  # C(2,1)/8 = 1/4
    -1.386294
    """

    is_discrete = True
    domain = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None):
        if (probs is None) == (logits is None):
            self._fail("give exactly one of probs and logits")
            probs = 0.5 if probs is None and logits is None else probs
        if probs is not None:
            (self.total_count, p), self.batch_shape = as_params(total_count, probs, owner=self)
            if not np.all((np.asarray(p) >= 0) & (np.asarray(p) < 1)):
                self._fail(f"probs must be in [0, 1), got {describe(p)}")
            with np.errstate(divide="ignore"):
                self._log_p = np.log(p) if np.ndim(p) else (math.log(p) if p > 0 else -math.inf)
                self._log_q = np.log1p(-p) if np.ndim(p) else math.log1p(-min(p, 1.0 - 1e-300))
            self.probs = p
        else:
            (self.total_count, z), self.batch_shape = as_params(total_count, logits, owner=self)
            if not np.all(np.asarray(z) < np.inf):
                self._fail(f"logits must be below +inf, got {describe(z)}")
            self._log_p = scalar_or_array(log_expit(z))
            self._log_q = scalar_or_array(log_expit(-np.asarray(z)))
            self.probs = scalar_or_array(expit(z))
        self._check_positive("total_count", self.total_count)

    def sample(self, rng, shape=()):
        p = self.probs
        if not shape and not self.batch_shape:
            return int(rng.negative_binomial(self.total_count, 1.0 - p)) if p > 0 else 0
        return rng.negative_binomial(self.total_count, 1.0 - np.asarray(p),
                                     tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        r = self.total_count
        x = np.asarray(value, dtype=float)
        ok = is_integral(x) & (x >= 0)
        k = np.where(ok, x, 0.0)
        with np.errstate(invalid="ignore"):
            lp = (gammaln(k + r) - gammaln(k + 1.0) - gammaln(r) + r * np.asarray(self._log_q)
                  + np.where(k > 0, k * np.asarray(self._log_p), 0.0))
        return scalar_or_array(np.where(ok, lp, -np.inf))

    @property
    def mean(self):
        p = np.asarray(self.probs)
        return scalar_or_array(self.total_count * p / (1.0 - p))

    @property
    def variance(self):
        p = np.asarray(self.probs)
        return scalar_or_array(self.total_count * p / (1.0 - p) ** 2)

    def _params_repr(self):
        return f"total_count={describe(self.total_count)}, probs={describe(self.probs)}"


class NegativeBinomial2(NegativeBinomial):
    """Negative binomial with ``mean`` μ > 0 and ``concentration`` φ > 0 (Stan's
    ``neg_binomial_2``, PyMC's ``NegativeBinomial(mu, alpha)``, NumPyro's ``GammaPoisson``):
    variance μ + μ²/φ.  The same as ``NegativeBinomial(φ, probs=μ/(μ + φ))``.

    >>> from thrifty import dist
    >>> d = dist.NegativeBinomial2(3.0, 2.0)
    >>> round(d.mean, 12), round(d.variance, 12)
    (3.0, 7.5)
    """

    def __init__(self, mean, concentration):
        (m, phi), _ = as_params(mean, concentration, owner=self)
        self._check_positive("mean", m)
        self._check_positive("concentration", phi)
        mm, pp = np.asarray(m, dtype=float), np.asarray(phi, dtype=float)
        with np.errstate(all="ignore"):
            logits = np.log(mm) - np.log(pp)  # log(p / (1 − p)) with p = μ/(μ + φ)
        super().__init__(phi, logits=scalar_or_array(logits))


class Multinomial(Distribution):
    """Counts of ``total_count`` draws among K categories with probabilities ``probs``
    (..., K): event shape (K,), pmf n! Π p_i^{x_i} / x_i!.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> round(dist.Multinomial(2, np.array([0.5, 0.5])).log_prob(np.array([1, 1])), 6)
    -0.693147
    """

    is_discrete = True
    domain = constraints.any_value

    def __init__(self, total_count, probs):
        p = np.asarray(probs, dtype=float)
        n = total_count
        if not (isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0):
            self._fail(f"total_count must be a non-negative integer, got {n!r}")
            n = 0
        if p.ndim == 0:
            self._fail(f"probs must be a vector (..., K), got {describe(p)}")
            p = p.reshape(1)
        elif not (np.all(p >= 0) and np.allclose(p.sum(-1), 1.0, atol=1e-6)):
            self._fail(f"probs must be non-negative and sum to 1 over the last axis, got "
                       f"{describe(p)}")
        self.total_count, self.probs = int(n), p
        self.batch_shape, self.event_shape = p.shape[:-1], p.shape[-1:]

    def sample(self, rng, shape=()):
        shape = tuple(shape)
        p = self.probs / self.probs.sum(-1, keepdims=True)
        if not self.batch_shape:
            return rng.multinomial(self.total_count, p, size=shape or None)
        return rng.multinomial(self.total_count, np.broadcast_to(p, shape + p.shape))

    def log_prob(self, value):
        x = np.asarray(value, dtype=float)
        if x.ndim == 0 or x.shape[-1] != self.probs.shape[-1]:
            raise DistributionError(f"Multinomial: value must have shape (..., "
                                    f"{self.probs.shape[-1]}), got {x.shape}")
        ok = np.all(is_integral(x) & (x >= 0), axis=-1) & (x.sum(-1) == self.total_count)
        k = np.where(is_integral(x) & (x >= 0), x, 0.0)
        lp = gammaln(self.total_count + 1.0) + (xlogy(k, self.probs) - gammaln(k + 1.0)).sum(-1)
        return scalar_or_array(np.where(ok, lp, -np.inf))

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        return self.total_count * self.probs * (1.0 - self.probs)

    def _params_repr(self):
        return f"total_count={self.total_count}, probs={describe(self.probs)}"
