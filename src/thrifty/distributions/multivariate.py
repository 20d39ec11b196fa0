"""Multivariate families: ``MvNormal`` and ``Dirichlet`` (``event_shape = (d,)``)."""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.lapack import dtrtrs
from scipy.special import gammaln, xlogy

from thrifty.distributions import constraints
from thrifty.distributions.base import (
    LOG_2PI,
    Distribution,
    all_true,
    describe,
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
from thrifty.errors import DistributionError


def _swap(m):
    return np.swapaxes(m, -1, -2)


def _is_symmetric(m) -> bool:
    scale = np.max(np.abs(m), axis=(-2, -1), keepdims=True)
    return all_true(np.abs(m - _swap(m)) <= 1e-8 * scale)


def _tril_solve(L, b):
    """``L^{-1} b`` for lower-triangular ``L`` (..., d, d) and ``b`` (..., d), broadcasting.

    One LAPACK triangular solve for all of ``b`` when ``L`` is a single matrix; otherwise a forward
    substitution over the ``d`` rows, vectorized over the batch and sample dimensions.
    """
    d = L.shape[-1]
    if L.ndim == 2:
        flat = b.reshape(-1, d).T
        z, _ = dtrtrs(L, flat, lower=1)  # LAPACK directly: solve_triangular adds ~7 µs
        return z.T.reshape(b.shape)
    shape = (*np.broadcast_shapes(b.shape[:-1], L.shape[:-2]), d)
    b = np.broadcast_to(b, shape)
    z = np.empty(shape)
    for i in range(d):
        s = b[..., i]
        if i:
            s = s - np.einsum("...j,...j->...", L[..., i, :i], z[..., :i])
        z[..., i] = s / L[..., i, i]
    return z


def _tril_inverse(L):
    """``L⁻¹`` for lower-triangular ``L`` (..., d, d)."""
    d = L.shape[-1]
    eye = np.eye(d)
    if L.ndim == 2:
        return solve_triangular(L, eye, lower=True)
    # row j of the result of solving against e_j is column j of L⁻¹
    return _swap(_tril_solve(L[..., None, :, :], np.broadcast_to(eye, L.shape)))


# Models rebuild the same small covariance at every execution (``0.1 * np.eye(d)``): cache the
# validated Cholesky factors of recent small matrices, keyed by their bytes.
_CACHE_MAX_SIZE = 32 * 32
_CACHE_ENTRIES = 64
_FACTORS: dict = {}


class MvNormal(Distribution):
    """Multivariate normal with mean ``loc`` and one of ``cov``, ``precision`` or ``scale_tril``.

    ``scale_tril`` is the lower Cholesky factor ``L`` of the covariance (``cov = L Lᵀ``, positive
    diagonal); the factor is what the distribution stores, whichever matrix is given.
    ``batch_shape`` broadcasts ``loc.shape[:-1]`` with the matrix's leading dimensions;
    ``event_shape`` is ``(d,)``.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.MvNormal(np.zeros(2), cov=np.eye(2))
    >>> round(d.log_prob(np.zeros(2)), 6), d.sample(np.random.default_rng(0), (5,)).shape
    (-1.837877, (5, 2))
    """

    domain = constraints.real_vector
    array_api = True

    def __init__(self, loc, cov=None, precision=None, scale_tril=None):
        mats = (("cov", cov), ("precision", precision), ("scale_tril", scale_tril))
        if any(is_foreign(m) for _, m in mats):
            return self._init_xp(loc, [(n, m) for n, m in mats if m is not None])
        foreign_loc = loc if is_foreign(loc) else None  # (a gradient run's array: kept as is)
        loc = np.asarray(loc, dtype=float) if foreign_loc is None else np.zeros(loc.shape)
        if loc.ndim == 0:
            self._fail(f"loc must be a vector (at least one dimension), got {describe(loc)}")
            loc = loc.reshape(1)
        d = loc.shape[-1]
        given = [
            (n, m)
            for n, m in (("cov", cov), ("precision", precision), ("scale_tril", scale_tril))
            if m is not None
        ]
        if len(given) != 1:
            self._fail("give exactly one of cov, precision or scale_tril")
            given = [("scale_tril", np.eye(d))]
        name, m = given[0]
        m = np.asarray(m, dtype=float)
        if m.ndim < 2 or m.shape[-1] != m.shape[-2] or m.shape[-1] != d:
            self._fail(f"{name} must have shape (..., {d}, {d}) to match loc, got {m.shape}")
            m = np.eye(d)
        try:
            self.batch_shape = np.broadcast_shapes(loc.shape[:-1], m.shape[:-2])
        except ValueError:
            self._fail(f"loc shape {loc.shape} and {name} shape {m.shape} do not broadcast")
            loc, m = loc.reshape(-1, d)[0], np.eye(d)
            self.batch_shape = ()
        self.event_shape = (d,)
        if not all_true(np.isfinite(loc)):
            self._fail(f"loc must be finite, got {describe(loc)}")
        self.loc = np.broadcast_to(loc, (*self.batch_shape, d))
        if foreign_loc is not None:
            xp = namespace(foreign_loc)
            self.loc = xp.broadcast_to(asfloat(xp, foreign_loc), (*self.batch_shape, d))
            self._invalid_unless(xp.all(xp.isfinite(self.loc), axis=-1))
        key = (name, m.shape, m.tobytes()) if m.size <= _CACHE_MAX_SIZE else None
        hit = _FACTORS.get(key) if key is not None else None
        if hit is not None:  # the same small matrix as a recent construction: reuse its factor
            self._L, self._half_log_det = hit
            return
        self._L = self._factor(name, m)  # its own leading dims; broadcasts with batch_shape
        self._half_log_det = np.log(np.diagonal(self._L, axis1=-2, axis2=-1)).sum(-1)
        if key is not None and self._error is None:
            if len(_FACTORS) >= _CACHE_ENTRIES:
                _FACTORS.clear()
            self._L.setflags(write=False)
            _FACTORS[key] = (self._L, self._half_log_det)

    def _init_xp(self, loc, given) -> None:
        """A matrix of another array-API library (a gradient run's traced covariance, e.g. from
        an LKJ Cholesky factor): the factor ``L`` in that namespace, nothing raised — where
        the matrix is not a valid one (not positive definite, a factor with a non-positive
        diagonal or entries above it) the density is 0 (``_valid``)."""
        if len(given) != 1:
            self._fail("give exactly one of cov, precision or scale_tril")
            given = given[:1]
        name, m = given[0]
        xp = namespace(m, loc)
        m = asfloat(xp, m)
        loc = asfloat(xp, loc)
        d = m.shape[-1]
        if loc.ndim == 0 or m.ndim < 2 or m.shape[-2] != d or loc.shape[-1] != d:
            raise DistributionError(f"MvNormal: {name} of shape {tuple(m.shape)} does not match "
                                    f"loc of shape {tuple(loc.shape)}")
        self.batch_shape = np.broadcast_shapes(tuple(loc.shape[:-1]), tuple(m.shape[:-2]))
        self.event_shape = (d,)
        self.loc = xp.broadcast_to(loc, (*self.batch_shape, d))
        if name == "precision":
            m = xp.linalg.inv(m)
        if name == "scale_tril":
            L = m
            self._invalid_unless(xp.all(xp.triu(m, k=1) == 0, axis=(-2, -1)))
        else:
            L = xp.linalg.cholesky(m)  # (NaN where m is not positive definite)
        diag = xp.linalg.diagonal(L)
        self._invalid_unless(xp.all(diag > 0, axis=-1) & xp.all(xp.isfinite(self.loc), axis=-1))
        self._L = L
        self._half_log_det = xp.sum(xp.log(diag), axis=-1)

    def _factor(self, name, m):
        """The lower Cholesky factor of the covariance from ``m`` (identity after a failure)."""
        d = m.shape[-1]
        if not all_true(np.isfinite(m)):
            self._fail(f"{name} must be finite, got {describe(m)}")
            return np.eye(d)
        if name == "scale_tril":
            if not all_true(np.triu(m, 1) == 0):
                self._fail(f"scale_tril must be lower triangular, got {describe(m)}")
                return np.eye(d)
            if not all_true(np.diagonal(m, axis1=-2, axis2=-1) > 0):
                self._fail(f"scale_tril must have a positive diagonal, got {describe(m)}")
                return np.eye(d)
            return m
        if not _is_symmetric(m):
            self._fail(f"{name} must be symmetric, got {describe(m)}")
            return np.eye(d)
        # precision P: cholesky of the flipped matrix gives P = U Uᵀ with U upper triangular;
        # the covariance P⁻¹ = U⁻ᵀ U⁻¹ then has the lower factor (Uᵀ)⁻¹.
        a = m if name == "cov" else m[..., ::-1, ::-1]
        try:
            f = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            smallest = float(np.min(np.linalg.eigvalsh(m)))
            self._fail(
                f"{name} must be positive definite (smallest eigenvalue {smallest:.4g}), "
                f"got {describe(m)}"
            )
            return np.eye(d)
        if name == "cov":
            return f
        return _tril_inverse(_swap(f[..., ::-1, ::-1]))  # (Uᵀ)⁻¹ with Uᵀ lower triangular

    @property
    def scale_tril(self):
        return np.broadcast_to(self._L, self.batch_shape + self.event_shape * 2)

    @property
    def covariance_matrix(self):
        return np.broadcast_to(self._L @ _swap(self._L), self.batch_shape + self.event_shape * 2)

    @property
    def precision_matrix(self):
        linv = _tril_inverse(self._L)
        return np.broadcast_to(_swap(linv) @ linv, self.batch_shape + self.event_shape * 2)

    def sample(self, rng, shape=()):
        eps = rng.standard_normal(tuple(shape) + self.batch_shape + self.event_shape)
        return self.loc + (self._L @ eps[..., None])[..., 0]

    def log_prob(self, value):
        xp = namespace(value, self.loc)
        d = self.event_shape[0]
        if xp is not np:
            x = asfloat(xp, value)
            if x.ndim == 0 or x.shape[-1] != d:
                raise DistributionError(f"MvNormal: value must have shape (..., {d}), got "
                                        f"{x.shape}")
            if is_foreign(self._L):  # a traced factor: z = L⁻¹ (x − loc)
                z = xp.sum(xp.linalg.inv(self._L) * (x - self.loc)[..., None, :], axis=-1)
            else:
                z = (x - self.loc) @ xp.asarray(_swap(_tril_inverse(self._L)))
            lp = -0.5 * xp.sum(z * z, axis=-1) - self._half_log_det - 0.5 * d * LOG_2PI
            return finish(xp, self, lp)
        x = np.asarray(value, dtype=float)
        if x.ndim == 0 or x.shape[-1] != d:
            raise DistributionError(f"MvNormal: value must have shape (..., {d}), got {x.shape}")
        z = _tril_solve(self._L, x - self.loc)
        lp = -0.5 * np.einsum("...i,...i->...", z, z) - self._half_log_det - 0.5 * d * LOG_2PI
        return scalar_or_array(np.fmax(lp, -np.inf))  # non-finite values are off the support

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return np.broadcast_to((self._L**2).sum(-1), self.batch_shape + self.event_shape)

    def _params_repr(self):
        return f"loc={describe(self.loc)}, scale_tril={describe(self.scale_tril)}"


class Dirichlet(Distribution):
    """Dirichlet distribution on the probability simplex, with ``concentration`` (..., K) > 0.

    ``log_prob`` is ``-inf`` off the simplex (entries < 0 or a sum differing from 1 by 1e-6 or
    more).  On the boundary (an entry 0) the density is finite only where that concentration is 1.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Dirichlet(np.ones(3))
    >>> round(d.log_prob(np.array([0.2, 0.3, 0.5])), 6), d.event_shape  # log Γ(3) = log 2
    (0.693147, (3,))
    """

    domain = constraints.simplex
    array_api = True

    def __init__(self, concentration):
        if is_foreign(concentration):  # (a gradient run: validity recorded, not raised)
            xp = namespace(concentration)
            a = asfloat(xp, concentration)
            if a.ndim == 0:
                raise DistributionError(f"Dirichlet: concentration must be a vector (at least "
                                        f"one dimension), got shape {a.shape}")
            self.concentration = a
            self.batch_shape = ArrayAPIShape(a.shape[:-1])
            self.event_shape = a.shape[-1:]
            self._valid = xp.all((a > 0) & (a < np.inf), axis=-1)
            self._log_norm = None
            return
        a = np.asarray(concentration, dtype=float)
        if a.ndim == 0:
            self._fail(
                f"concentration must be a vector (at least one dimension), got {describe(a)}"
            )
            a = a.reshape(1)
        if not all_true(a > 0):
            self._fail(f"concentration must be positive, got {describe(a)}")
        elif not all_true(a < np.inf):
            self._fail(f"concentration must be finite, got {describe(a)}")
        self.concentration = a
        self.batch_shape = a.shape[:-1]
        self.event_shape = a.shape[-1:]
        self._log_norm = None

    def sample(self, rng, shape=()):
        a = self.concentration
        shape = tuple(shape)
        if not self.batch_shape:
            return _inside(rng.dirichlet(a, shape or None))
        g = rng.standard_gamma(a, shape + self.batch_shape + self.event_shape)
        s = g.sum(-1, keepdims=True)
        bad = ~(s[..., 0] > 0)
        if bad.any():  # every gamma draw underflowed (tiny concentrations): numpy's own sampler
            for i in map(tuple, np.argwhere(bad)):
                g[i] = rng.dirichlet(a[i[len(shape) :]])
            s = g.sum(-1, keepdims=True)
        return _inside(g / s)

    def log_prob(self, value):
        a = self.concentration
        xp = namespace(value, a)
        if self._log_norm is None:
            if not is_foreign(a):  # (NumPy: kept with the distribution)
                self._log_norm = gammaln(a.sum(-1)) - gammaln(a).sum(-1)
            else:  # (a traced concentration: this distribution lives in one trace)
                lg = special(xp).gammaln
                self._log_norm = lg(xp.sum(a, axis=-1)) - xp.sum(lg(a), axis=-1)
        x = asfloat(xp, value)
        if x.ndim == 0 or x.shape[-1] != a.shape[-1]:
            raise DistributionError(
                f"Dirichlet: value must have shape (..., {a.shape[-1]}), got {x.shape}"
            )
        if xp is not np:
            lp = xp.sum(special(xp).xlogy(a - 1.0, x), axis=-1) + self._log_norm
            ok = xp.all(x >= 0, axis=-1) & (xp.abs(xp.sum(x, axis=-1) - 1.0) < 1e-6)
            return finish(xp, self, xp.where(ok, lp, -np.inf))
        ok = constraints.simplex.check(x)
        xs = np.where(x >= 0, x, 1.0)
        lp = xlogy(a - 1.0, xs).sum(-1) + self._log_norm
        return scalar_or_array(np.where(ok, lp, -np.inf))

    @property
    def mean(self):
        a = self.concentration
        return a / a.sum(-1, keepdims=True)

    @property
    def variance(self):
        a = self.concentration
        a0 = a.sum(-1, keepdims=True)
        return a * (a0 - a) / (a0 * a0 * (a0 + 1.0))

    def _params_repr(self):
        return f"concentration={describe(self.concentration)}"


def _inside(p: np.ndarray) -> np.ndarray:
    """Simplex points with no coordinate exactly 0 (tiny concentrations underflow to 0, where
    the density is +∞ and a chain would freeze): zeros become the smallest positive double."""
    if (p > 0).all():
        return p
    p = np.maximum(p, 5e-324)
    return p / p.sum(-1, keepdims=True)
