"""The Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from thrifty.distributions import constraints
from thrifty.distributions.base import Distribution, describe
from thrifty.distributions.xp import asfloat, finish, is_foreign, namespace, special
from thrifty.errors import DistributionError

LOG_2 = math.log(2.0)
LOG_PI = math.log(math.pi)


class Wishart(Distribution):
    """Wishart distribution over ``d × d`` positive-definite matrices with ``df`` degrees of
    freedom (``df > d − 1``) and ``scale`` matrix Σ, or its lower Cholesky factor
    ``scale_tril`` (exactly one): for an integer ``df``, the law of ``Σ_k z_k z_kᵀ`` over
    ``df`` draws ``z_k ~ N(0, Σ)``; mean ``df · Σ``.  As NumPyro's ``Wishart(concentration,
    scale_matrix=...)``, Stan's ``wishart`` and ``scipy.stats.wishart``;
    ``event_shape = (d, d)``, no batch shape.

        log p(X) = (df − d − 1)/2 · log|X| − tr(Σ⁻¹ X)/2 − df·d/2 · log 2 − df/2 · log|Σ|
                   − log Γ_d(df/2),

    with ``log Γ_d(a) = d(d − 1)/4 · log π + Σ_{j<d} log Γ(a − j/2)``.  ``log_prob`` is
    ``-inf`` unless ``X`` is symmetric and positive definite.  Its support is the
    positive-definite matrices, which a gradient kernel moves through ``X = L Lᵀ`` with ``L``
    lower triangular, its diagonal ``exp(u)`` (:mod:`thrifty.transforms`).  ``sample`` uses
    Bartlett's decomposition.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Wishart(4.0, scale=np.eye(2))
    >>> X = d.sample(np.random.default_rng(0))
    >>> X.shape, bool(np.allclose(X, X.T)), round(d.log_prob(np.eye(2)), 6)
    ((2, 2), True, -4.224171)
    """

    domain = constraints.positive_definite
    array_api = True

    def __init__(self, df, scale=None, scale_tril=None):
        if (scale is None) == (scale_tril is None):
            self._fail("give exactly one of scale or scale_tril")
            scale, scale_tril = np.eye(2), None
        m = scale if scale_tril is None else scale_tril
        xp = namespace(df, m)
        if xp is not np:  # a gradient run's traced parameters: nothing raised (``_valid``)
            m = asfloat(xp, m)
            d = int(m.shape[-1])
            self.event_shape = (d, d)
            self.df = asfloat(xp, df)
            L = m if scale_tril is not None else xp.linalg.cholesky(m)
            diag = xp.stack([L[..., j, j] for j in range(d)], axis=-1)
            self._invalid_unless(xp.all(diag > 0) & (self.df > d - 1))
            self._L, self._Linv = L, xp.linalg.inv(L)
            self._log_det = 2.0 * xp.sum(xp.log(diag))
            return
        m = np.asarray(m, dtype=float)
        if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
            raise DistributionError(f"Wishart: {'scale' if scale_tril is None else 'scale_tril'}"
                                    f" must be a square matrix, got shape {m.shape}")
        d = m.shape[0]
        self.event_shape = (d, d)
        self.df = float(df) if np.ndim(df) == 0 else np.nan
        if not self.df > d - 1:
            self._fail(f"df must be a number > d - 1 = {d - 1}, got {describe(df)}")
            self.df = float(d)
        if scale_tril is not None:
            L = m
            if not (np.all(np.triu(L, 1) == 0) and np.all(np.diag(L) > 0)):
                self._fail(f"scale_tril must be lower triangular with a positive diagonal, got "
                           f"{describe(L)}")
                L = np.eye(d)
        elif constraints.positive_definite.check(m):
            L = np.linalg.cholesky(m)
        else:
            self._fail(f"scale must be symmetric positive definite, got {describe(m)}")
            L = np.eye(d)
        self._L, self._Linv = L, np.linalg.inv(L)
        self._log_det = float(2.0 * np.log(np.diag(L)).sum())

    @property
    def scale(self):
        return self._L @ self._L.T

    @property
    def mean(self):
        return self.df * self.scale

    def sample(self, rng, shape=()):
        d = self.event_shape[0]
        shape = tuple(shape)
        A = np.zeros(shape + (d, d))
        for i in range(d):  # Bartlett: A_ii² ~ χ²(df − i), A_ij ~ N(0, 1) below the diagonal
            A[..., i, i] = np.sqrt(rng.chisquare(self.df - i, shape))
            A[..., i, :i] = rng.standard_normal(shape + (i,))
        LA = self._L @ A
        return LA @ np.swapaxes(LA, -1, -2)

    def log_prob(self, value):
        d = self.event_shape[0]
        xp = namespace(value, self.df, self._L)
        x = asfloat(xp, value)
        if x.ndim < 2 or tuple(x.shape[-2:]) != (d, d):
            raise DistributionError(f"Wishart: value must have shape (..., {d}, {d}), got "
                                    f"{tuple(x.shape)}")
        df = self.df
        log_gamma_d = d * (d - 1) / 4 * LOG_PI
        if xp is np:
            ok = constraints.positive_definite.check(x)
            x = np.where(ok[..., None, None], x, np.eye(d))
            log_gamma_d += sum(gammaln(0.5 * df - 0.5 * j) for j in range(d))
        else:  # (not positive definite: the factor is NaN, and so is the density: -inf)
            sym = xp.all(xp.abs(x - xp.matrix_transpose(x)) <= 1e-10 * (1 + xp.abs(x)),
                         axis=(-2, -1))
            lg = special(xp).gammaln
            log_gamma_d = log_gamma_d + sum(lg(0.5 * df - 0.5 * j) for j in range(d))
        Lx = xp.linalg.cholesky(x)
        diag = xp.stack([Lx[..., j, j] for j in range(d)], axis=-1)
        log_det_x = 2.0 * xp.sum(xp.log(diag), axis=-1)
        M = self._Linv @ Lx  # tr(Σ⁻¹ X) = ‖L⁻¹ L_x‖²
        trace = xp.sum(M * M, axis=(-2, -1))
        lp = (0.5 * (df - d - 1) * log_det_x - 0.5 * trace - 0.5 * df * d * LOG_2
              - 0.5 * df * self._log_det - log_gamma_d)
        if xp is np:
            return finish(np, self, np.where(ok, lp, -np.inf), masked=True)
        return finish(xp, self, xp.where(sym, lp, -math.inf))

    def _params_repr(self):
        df = "<traced>" if is_foreign(self.df) else self.df
        tril = "<traced>" if is_foreign(self._L) else describe(self._L)
        return f"df={df}, scale_tril={tril}"
