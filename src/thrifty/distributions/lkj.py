"""LKJ distribution of the Cholesky factor of a correlation matrix (Lewandowski, Kurowicka and
Joe 2009), as Stan's ``lkj_corr_cholesky`` and NumPyro's ``LKJCholesky``.

For R = L Lᵀ, p(R) ∝ det(R)^(η − 1); on L (lower triangular, positive diagonal, unit rows)

    log p(L) = Σ_{i=2..d} (d − i + 2η − 2) · log L_ii − log c_d(η),

with the Jacobian Π L_ii^(d − i) of R = L Lᵀ and LKJ's normalising constant (their Eq. 16)
c_d(η) = Π_{k=1}^{d−1} [2^(2η − 2 + d − k) · B(η + (d − k − 1)/2, η + (d − k − 1)/2)]^(d − k).
Sampling is the onion method (their §3.2), row by row of L.  Each off-diagonal correlation r
of R has (r + 1)/2 ~ Beta(η − 1 + d/2, η − 1 + d/2).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import betaln

from thrifty.distributions import constraints
from thrifty.distributions.base import Distribution, describe, scalar_or_array
from thrifty.errors import DistributionError


class LKJCholesky(Distribution):
    """Cholesky factors of ``dim`` × ``dim`` correlation matrices with ``concentration`` η > 0
    (η = 1: uniform over correlation matrices; larger η: closer to the identity).

    >>> import numpy as np
    >>> from thrifty import dist
    >>> L = dist.LKJCholesky(3, 2.0).sample(np.random.default_rng(0))
    >>> np.allclose(np.diag(L @ L.T), 1.0)
    True
    """

    domain = constraints.any_value

    def __init__(self, dim: int, concentration=1.0):
        if not (isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim >= 1):
            self._fail(f"dim must be an integer >= 1, got {dim!r}")
            dim = 1
        eta = float(concentration) if np.ndim(concentration) == 0 else math.nan
        if not eta > 0 or not math.isfinite(eta):
            self._fail(f"concentration must be a positive scalar, got {describe(concentration)}")
            eta = 1.0
        self.dim, self.concentration = int(dim), eta
        self.event_shape = (self.dim, self.dim)
        d = self.dim
        k = np.arange(1, d)
        a = eta + (d - k - 1) / 2.0
        self._log_c = float(np.sum((d - k) * ((2 * eta - 2 + d - k) * math.log(2.0)
                                              + betaln(a, a))))
        self._power = np.array([d - i + 2 * eta - 2 for i in range(2, d + 1)])

    def sample(self, rng, shape=()):
        shape = tuple(shape)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        out = np.stack([self._onion(rng) for _ in range(n)])
        return out.reshape(shape + self.event_shape) if shape else out[0]

    def _onion(self, rng) -> np.ndarray:
        d, eta = self.dim, self.concentration
        L = np.zeros((d, d))
        L[0, 0] = 1.0
        if d == 1:
            return L
        beta = eta + (d - 2) / 2.0
        r = 2.0 * rng.beta(beta, beta) - 1.0
        L[1, 0], L[1, 1] = r, math.sqrt(max(1.0 - r * r, 0.0))
        for k in range(2, d):
            beta -= 0.5
            y = rng.beta(k / 2.0, beta)
            u = rng.standard_normal(k)
            w = math.sqrt(y) * u / np.linalg.norm(u)
            L[k, :k] = w
            L[k, k] = math.sqrt(max(1.0 - y, 0.0))
        return L

    def log_prob(self, value):
        x = np.asarray(value, dtype=float)
        d = self.dim
        if x.shape[-2:] != (d, d):
            raise DistributionError(f"LKJCholesky: value must have shape (..., {d}, {d}), got "
                                    f"{x.shape}")
        diag = np.diagonal(x, axis1=-2, axis2=-1)
        ok = (np.all(np.triu(x, 1) == 0, axis=(-2, -1)) & np.all(diag > 0, axis=-1)
              & np.all(np.abs(np.sum(x * x, axis=-1) - 1.0) < 1e-8, axis=-1))
        lp = np.sum(self._power * np.log(np.where(diag[..., 1:] > 0, diag[..., 1:], 1.0)),
                    axis=-1) - self._log_c
        return scalar_or_array(np.where(ok, lp, -np.inf))

    def _params_repr(self):
        return f"dim={self.dim}, concentration={self.concentration!r}"
