"""Bijections from unconstrained space onto the supports of continuous families.

A gradient kernel (HMC, NUTS) moves in ℝⁿ; a choice whose support is constrained is moved as
``u = t.inverse(x)`` and read back as ``x = t.forward(u)``, and the density it targets is the
choice's density times the Jacobian of ``forward``: ``log p(x) + t.log_abs_det_jacobian(u)``
(the change of variables of Stan's reference manual, "Constraint transforms").
:func:`biject_to` gives the transform of a support (:mod:`thrifty.distributions.constraints`):

===================================  =========================================  ===============
support                              ``forward(u)``                             unconstrained
===================================  =========================================  ===============
real, real vector                    u                                          same shape
(lower, ∞)                           lower + exp(u)                             same shape
(−∞, upper)                          upper − exp(u)                             same shape
(lower, upper), unit interval        lower + (upper − lower) σ(u)               same shape
simplex of K                         stick-breaking, σ(u_k − log(K − 1 − k))   K − 1
Cholesky factor of a correlation     canonical partial correlations tanh(u)     K(K − 1)/2
positive definite K × K              L Lᵀ, L lower with diagonal exp(u_ii)      K(K + 1)/2
===================================  =========================================  ===============

``log_abs_det_jacobian(u)`` is log |det ∂c(forward(u))/∂u| for the free coordinates ``c`` of a
value (all of it; a simplex's first K − 1 entries; a triangular factor's strictly lower
entries; a positive-definite matrix's lower triangle), one number per value: elementwise for
the scalar supports, summed over the event for the others.  Leading axes are batch axes.

The transforms are written once against the array API (``array_api_compat``): NumPy arrays in
give NumPy arrays out, and any other conforming array library (JAX) works as it is.

>>> import numpy as np
>>> from thrifty import dist
>>> from thrifty.transforms import biject_to
>>> t = biject_to(dist.Dirichlet(np.ones(3)).support)
>>> x = t.forward(np.array([0.3, -1.2]))
>>> bool(np.isclose(x.sum(), 1.0)), np.allclose(t.inverse(x), [0.3, -1.2])
(True, True)
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import array_namespace as _ns

from thrifty.distributions import constraints
from thrifty.distributions.xp import is_foreign
from thrifty.errors import DistributionError


def _as_array(x):
    if isinstance(x, (int, float, np.number)):
        return np.asarray(x, dtype=float)
    return x


def _softplus(xp, v):
    """log(1 + exp(v)) without overflow."""
    return xp.maximum(v, 0.0) + xp.log1p(xp.exp(-xp.abs(v)))


class Transform:
    """A bijection from unconstrained arrays onto a support (see the module docstring)."""

    event_dim = 0  # dimensions of one constrained value

    def forward(self, u):
        raise NotImplementedError

    def inverse(self, x):
        raise NotImplementedError

    def log_abs_det_jacobian(self, u):
        raise NotImplementedError

    def unconstrained_shape(self, event_shape: tuple) -> tuple:
        """The shape of one unconstrained value for a value of ``event_shape``."""
        return tuple(event_shape)

    def __repr__(self) -> str:
        return type(self).__name__


class Identity(Transform):
    """ℝⁿ itself."""

    def __init__(self, event_dim: int = 0):
        self.event_dim = event_dim

    def forward(self, u):
        return u

    def inverse(self, x):
        return x

    def log_abs_det_jacobian(self, u):
        u = _as_array(u)
        xp = _ns(u)
        shape = u.shape[: u.ndim - self.event_dim]
        return xp.zeros(shape, dtype=u.dtype)


class ExpAbove(Transform):
    """(lower, ∞): x = lower + exp(u), log-Jacobian u."""

    def __init__(self, lower=0.0):
        self.lower = lower

    def forward(self, u):
        u = _as_array(u)
        return self.lower + _ns(u).exp(u)

    def inverse(self, x):
        x = _as_array(x)
        return _ns(x).log(x - self.lower)

    def log_abs_det_jacobian(self, u):
        return _as_array(u)

    def __repr__(self) -> str:
        return f"ExpAbove({self.lower})"


class ExpBelow(Transform):
    """(−∞, upper): x = upper − exp(u), log-Jacobian u."""

    def __init__(self, upper=0.0):
        self.upper = upper

    def forward(self, u):
        u = _as_array(u)
        return self.upper - _ns(u).exp(u)

    def inverse(self, x):
        x = _as_array(x)
        return _ns(x).log(self.upper - x)

    def log_abs_det_jacobian(self, u):
        return _as_array(u)

    def __repr__(self) -> str:
        return f"ExpBelow({self.upper})"


class SigmoidInterval(Transform):
    """(lower, upper): x = lower + (upper − lower) σ(u); log-Jacobian
    log(upper − lower) + log σ(u) + log σ(−u)."""

    def __init__(self, lower=0.0, upper=1.0):
        self.lower, self.upper = lower, upper

    def forward(self, u):
        u = _as_array(u)
        xp = _ns(u)
        return self.lower + (self.upper - self.lower) * xp.exp(-_softplus(xp, -u))

    def inverse(self, x):
        x = _as_array(x)
        xp = _ns(x)
        z = (x - self.lower) / (self.upper - self.lower)
        return xp.log(z) - xp.log1p(-z)

    def log_abs_det_jacobian(self, u):
        u = _as_array(u)
        xp = _ns(u)
        width = self.upper - self.lower
        log_width = math.log(width) if isinstance(width, (int, float)) else xp.log(width)
        return log_width - _softplus(xp, u) - _softplus(xp, -u)

    def __repr__(self) -> str:
        return f"SigmoidInterval({self.lower}, {self.upper})"


class StickBreaking(Transform):
    """The simplex of K (Stan's stick-breaking): z_k = σ(u_k − log(K − 1 − k)), x_k = z_k ×
    (what the first k entries left), the last entry what remains; u = 0 is the centre."""

    event_dim = 1

    def forward(self, u):
        u = _as_array(u)
        xp = _ns(u)
        km1 = u.shape[-1]
        v = u - xp.log(xp.asarray(np.arange(km1, 0, -1), dtype=u.dtype))
        log_z = -_softplus(xp, -v)  # log σ(v)
        log_rest = xp.cumulative_sum(-_softplus(xp, v), axis=-1)  # log Π_{j ≤ k} (1 − z_j)
        log_left = xp.concat([xp.zeros(u.shape[:-1] + (1,), dtype=u.dtype),
                              log_rest[..., :-1]], axis=-1)
        head = xp.exp(log_left + log_z)
        return xp.concat([head, xp.exp(log_rest[..., -1:])], axis=-1)

    def inverse(self, x):
        x = _as_array(x)
        xp = _ns(x)
        km1 = x.shape[-1] - 1
        left = 1.0 - xp.concat([xp.zeros(x.shape[:-1] + (1,), dtype=x.dtype),
                                xp.cumulative_sum(x[..., :km1 - 1], axis=-1)], axis=-1)
        z = x[..., :km1] / left
        return (xp.log(z) - xp.log1p(-z)
                + xp.log(xp.asarray(np.arange(km1, 0, -1), dtype=x.dtype)))

    def log_abs_det_jacobian(self, u):
        u = _as_array(u)
        xp = _ns(u)
        km1 = u.shape[-1]
        v = u - xp.log(xp.asarray(np.arange(km1, 0, -1), dtype=u.dtype))
        log1m_z = -_softplus(xp, v)
        log_rest = xp.cumulative_sum(log1m_z, axis=-1)
        log_left = log_rest - log1m_z  # (exclusive)
        return xp.sum(-_softplus(xp, -v) + log1m_z + log_left, axis=-1)

    def unconstrained_shape(self, event_shape: tuple) -> tuple:
        return (event_shape[-1] - 1,)


def _tril_size(k: int, diag: bool) -> int:
    return k * (k + 1) // 2 if diag else k * (k - 1) // 2


def _order(m: int, diag: bool) -> int:
    """K from the number of free entries of a K × K triangle."""
    k = round((math.sqrt(8 * m + 1) + (-1 if diag else 1)) / 2)
    if _tril_size(k, diag) != m:
        raise DistributionError(f"{m} unconstrained values do not fill a triangular matrix")
    return k


class CorrCholesky(Transform):
    """Lower Cholesky factors of K × K correlation matrices (Stan, LKJ): the K(K − 1)/2
    canonical partial correlations z = tanh(u), row by row — L[i, j] = z_ij (1 − Σ_{k<j}
    L[i, k]²)^½ below the diagonal, L[i, i] = (1 − Σ_{k<i} L[i, k]²)^½ — with log-Jacobian
    Σ log(1 − z²) + ½ Σ_{i>j} log(1 − Σ_{k<j} L[i, k]²)."""

    event_dim = 2

    def _rows(self, u):
        u = _as_array(u)
        xp = _ns(u)
        k = _order(u.shape[-1], diag=False)
        z = xp.tanh(u)
        batch = u.shape[:-1]
        zero = xp.zeros(batch, dtype=u.dtype)
        rows, log_j = [], xp.sum(xp.log1p(-z * z), axis=-1)
        pos = 0
        for i in range(k):
            row, used = [], zero
            for _ in range(i):
                left = 1.0 - used
                row.append(z[..., pos] * xp.sqrt(left))
                log_j = log_j + 0.5 * xp.log(left)
                used = used + row[-1] * row[-1]
                pos += 1
            row.append(xp.sqrt(1.0 - used) if i else zero + 1.0)
            row += [zero] * (k - 1 - i)
            rows.append(xp.stack(row, axis=-1))
        return xp.stack(rows, axis=-2), log_j

    def forward(self, u):
        return self._rows(u)[0]

    def log_abs_det_jacobian(self, u):
        return self._rows(u)[1]

    def inverse(self, x):
        x = _as_array(x)
        xp = _ns(x)
        k = x.shape[-1]
        out = []
        for i in range(1, k):
            used = xp.zeros(x.shape[:-2], dtype=x.dtype)
            for j in range(i):
                out.append(x[..., i, j] / xp.sqrt(1.0 - used))
                used = used + x[..., i, j] * x[..., i, j]
        z = xp.stack(out, axis=-1)
        return 0.5 * (xp.log1p(z) - xp.log1p(-z))  # atanh

    def unconstrained_shape(self, event_shape: tuple) -> tuple:
        return (_tril_size(event_shape[-1], diag=False),)


class PositiveDefinite(Transform):
    """Symmetric positive-definite K × K matrices: X = L Lᵀ with L lower triangular, its
    diagonal exp(u_ii) (the K(K + 1)/2 entries of u fill L row by row); log-Jacobian (of X's
    lower triangle) K log 2 + Σ_i (K − i + 1) u_ii for i = 0, …, K − 1."""

    event_dim = 2

    def _factor(self, u):
        u = _as_array(u)
        xp = _ns(u)
        k = _order(u.shape[-1], diag=True)
        zero = xp.zeros(u.shape[:-1], dtype=u.dtype)
        rows, diag, pos = [], [], 0
        for i in range(k):
            row = [u[..., pos + j] for j in range(i)]
            diag.append(u[..., pos + i])
            row.append(xp.exp(u[..., pos + i]))
            row += [zero] * (k - 1 - i)
            rows.append(xp.stack(row, axis=-1))
            pos += i + 1
        return xp.stack(rows, axis=-2), xp.stack(diag, axis=-1), k

    def forward(self, u):
        L, _, _ = self._factor(u)
        xp = _ns(L)
        return xp.matmul(L, xp.matrix_transpose(L))

    def log_abs_det_jacobian(self, u):
        _, d, k = self._factor(u)
        xp = _ns(d)
        weights = xp.asarray(np.arange(k, 0, -1) + 1.0, dtype=d.dtype)
        return k * math.log(2.0) + xp.sum(weights * d, axis=-1)

    def inverse(self, x):
        x = _as_array(x)
        xp = _ns(x)
        L = xp.linalg.cholesky(x)
        k = x.shape[-1]
        out = []
        for i in range(k):
            out += [L[..., i, j] for j in range(i)]
            out.append(xp.log(L[..., i, i]))
        return xp.stack(out, axis=-1)

    def unconstrained_shape(self, event_shape: tuple) -> tuple:
        return (_tril_size(event_shape[-1], diag=True),)


def _open(bound, inf: float, support) -> bool:
    """Whether an interval's ``bound`` is ``inf`` (−∞ below, +∞ above) on every entry: a side
    the transform leaves open.  A bound of another array library (traced in a gradient run: a
    choice's value, or data given as inputs) is taken as finite, as a bound read from the
    model's choices is; one infinite on some entries only has no single transform."""
    if is_foreign(bound):
        return False
    b = np.asarray(bound)
    if np.all(b == inf):
        return True
    if np.any(np.isinf(b)):
        raise DistributionError(f"no transform for the interval {support!r}: a bound is "
                                "infinite on some entries and finite on others (give those "
                                "entries separate sites, or a finite bound)")
    return False


def biject_to(support: constraints.Constraint) -> Transform:
    """The transform from unconstrained space onto ``support`` (a
    :class:`~thrifty.distributions.constraints.Constraint`; a distribution's ``.support``).
    Discrete supports and unions have none: an error says so."""
    if support.is_discrete:
        raise DistributionError(f"the support {support!r} is discrete: no transform to "
                                "unconstrained space (gradient kernels move continuous choices)")
    kind = type(support)
    if support is constraints.real or support is constraints.any_value:
        return Identity(0)
    if support is constraints.real_vector:
        return Identity(1)
    if kind is constraints._GreaterThan:
        return ExpAbove(support.lower)
    if kind is constraints._Interval:
        lo, hi = support.lower, support.upper
        open_lo, open_hi = _open(lo, -np.inf, support), _open(hi, np.inf, support)
        if open_lo and open_hi:
            return Identity(0)
        if open_hi:
            return ExpAbove(lo)
        if open_lo:
            return ExpBelow(hi)
        return SigmoidInterval(lo, hi)
    if kind is constraints._Simplex:
        return StickBreaking()
    if kind is constraints._CorrCholesky:
        return CorrCholesky()
    if kind is constraints._PositiveDefinite:
        return PositiveDefinite()
    if kind is constraints._Union:
        raise DistributionError(f"no transform to unconstrained space for the support "
                                f"{support!r}: a gradient kernel's trajectories cannot cross "
                                "the gap of zero density between its parts (move the choice "
                                "with th.lmh or th.mh)")
    raise DistributionError(f"no transform to unconstrained space for the support {support!r}")
