"""``LKJCholesky``: the LKJ distribution on Cholesky factors of correlation matrices."""

from __future__ import annotations

import math
import operator

import numpy as np
from scipy.special import gammaln, xlogy

from thrifty.distributions import constraints
from thrifty.distributions.base import Distribution, as_params, describe, scalar_or_array
from thrifty.distributions.xp import (
    ArrayAPIShape,
    asfloat,
    finish,
    namespace,
    special,
    takes_foreign,
)
from thrifty.errors import DistributionError

INF = math.inf
LOG_PI = math.log(math.pi)
TINY = 5e-324


class LKJCholesky(Distribution):
    """LKJ distribution over lower Cholesky factors ``L`` of ``dim x dim`` correlation matrices
    ``R = L Lᵀ`` with ``concentration`` η > 0 (NumPyro ``LKJCholesky(dimension, concentration)``,
    Stan ``lkj_corr_cholesky``); ``event_shape = (dim, dim)``.

    The density of ``R`` is proportional to ``det(R)^(η-1)`` (η = 1: uniform over correlation
    matrices; larger η concentrates near the identity).  As a density over the strictly lower
    entries of ``L`` (rows of unit norm, positive diagonal):

        log p(L) = Σ_{i=2..d} (d - i + 2η - 2) log L_ii - log Z,
        log Z = Σ_{i=2..d} [ (i-1)/2 log π + log Γ(η + (d-i)/2) - log Γ(η + (d-1)/2) ].

    The density factorises over the rows: row ``i`` is ``(w, sqrt(1 - |w|²))`` with ``w`` in the
    unit ball of dimension ``i - 1`` and density ∝ ``(1 - |w|²)^((d-i)/2 + η - 1)``.  Sampling
    draws each row that way (the onion method): ``|w|² ~ Beta((i-1)/2, η + (d-i)/2)`` and a
    uniform direction.  Each off-diagonal correlation ``r`` of ``R`` then has
    ``(r + 1)/2 ~ Beta(η - 1 + d/2, η - 1 + d/2)``.  ``log_prob`` is ``-inf`` unless ``L`` is lower
    triangular with a positive diagonal and rows of unit norm (within 1e-6).

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.LKJCholesky(2, 1.0)
    >>> round(d.log_prob(np.eye(2)), 6)  # uniform correlation on (-1, 1): log(1/2)
    -0.693147
    >>> L = d.sample(np.random.default_rng(0))
    >>> L.shape, bool(np.allclose(np.diag(L @ L.T), 1.0))
    ((2, 2), True)
    """

    domain = constraints.corr_cholesky
    array_api = True

    def __init__(self, dim: int, concentration: float | np.ndarray = 1.0):
        try:
            d = operator.index(dim)
        except TypeError:
            d = int(dim) if isinstance(dim, float) and dim.is_integer() else -1
        if d < 2:
            self._fail(f"dim must be an integer >= 2, got {dim!r}")
            d = 2
        self.dim = d
        self.event_shape = (d, d)
        (self.concentration,), self.batch_shape = as_params(concentration, owner=self)
        self._check_positive("concentration", self.concentration)
        i = np.arange(2, d + 1)  # 1-based row numbers of the diagonal entries L_22 ... L_dd
        if type(self.batch_shape) is ArrayAPIShape:  # a concentration of another library (JAX)
            xp = namespace(self.concentration)
            eta = asfloat(xp, self.concentration)[..., None]
            lgamma = special(xp).gammaln
            self._exponents = d - i + 2.0 * eta - 2.0
            log_z = (0.5 * (i - 1) * LOG_PI + lgamma(eta + 0.5 * (d - i))
                     - lgamma(eta + 0.5 * (d - 1)))
            self._log_normalizer = xp.sum(log_z, axis=-1)
            return
        eta = np.asarray(self.concentration, dtype=float)[..., None]
        self._exponents = d - i + 2.0 * eta - 2.0  # (batch..., d - 1)
        log_z = 0.5 * (i - 1) * LOG_PI + gammaln(eta + 0.5 * (d - i)) - gammaln(eta + 0.5 * (d - 1))
        self._log_normalizer = scalar_or_array(log_z.sum(-1))

    def sample(self, rng, shape=()):
        d = self.dim
        size = tuple(shape) + tuple(self.batch_shape)
        eta = np.broadcast_to(np.asarray(self.concentration, dtype=float), size)
        L = np.zeros(size + (d, d))
        L[..., 0, 0] = 1.0
        for i in range(1, d):  # row i (0-based) has i free entries w
            g1 = rng.standard_gamma(0.5 * i, size)
            g2 = np.maximum(rng.standard_gamma(eta + 0.5 * (d - 1 - i), size), TINY)
            # |w|² = g1 / s ~ Beta(i/2, η + (d-1-i)/2) and L_ii² = g2 / s, both without
            # cancellation; square roots taken apart so that a tiny g2 does not underflow to 0
            root_s = np.sqrt(g1 + g2)
            z = rng.standard_normal(size + (i,))
            u = z / np.linalg.norm(z, axis=-1, keepdims=True)
            L[..., i, :i] = (np.sqrt(g1) / root_s)[..., None] * u
            L[..., i, i] = np.sqrt(g2) / root_s
        return L

    def log_prob(self, value):
        if takes_foreign(self, value):
            return self._xp_log_prob(value)
        x = np.asarray(value, dtype=float)
        d = self.dim
        if x.ndim < 2 or x.shape[-2:] != (d, d):
            raise DistributionError(
                f"LKJCholesky: value must have shape (..., {d}, {d}), got {x.shape}"
            )
        ok = constraints.corr_cholesky.check(x)
        diag = np.diagonal(x, axis1=-2, axis2=-1)[..., 1:]
        diag = np.where(ok[..., None], diag, 1.0)
        lp = xlogy(self._exponents, diag).sum(-1) - self._log_normalizer
        return scalar_or_array(np.where(ok, lp, -np.inf))

    def _xp_log_prob(self, value):
        """``log_prob`` on the array API (a JAX value or concentration)."""
        xp = namespace(value, self.concentration)
        x = asfloat(xp, value)
        d = self.dim
        if x.ndim < 2 or tuple(x.shape[-2:]) != (d, d):
            raise DistributionError(
                f"LKJCholesky: value must have shape (..., {d}, {d}), got {tuple(x.shape)}"
            )
        upper = xp.asarray(np.triu(np.ones((d, d), dtype=bool), 1))
        diag = xp.stack([x[..., j, j] for j in range(d)], axis=-1)
        ok = (xp.all((x == 0) | ~upper, axis=(-2, -1)) & xp.all(diag > 0, axis=-1)
              & xp.all(xp.abs(xp.sum(x * x, axis=-1) - 1.0) < 1e-6, axis=-1))
        diag = xp.where(ok[..., None], diag[..., 1:], 1.0)
        lp = xp.sum(special(xp).xlogy(self._exponents, diag), axis=-1) - self._log_normalizer
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    def _params_repr(self):
        return f"dim={self.dim}, concentration={describe(self.concentration)}"
