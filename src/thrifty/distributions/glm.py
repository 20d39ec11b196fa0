"""Generalised linear model observations: families that know their derivatives and bounds.

A GLM observation has a *linear predictor* ``η = x·θ`` and a scalar *potential*
``U(η, y) = −log p(y | η)``.  ``th.smh`` (paper 002) needs, per observation, the potential, its
first derivatives at a reference point and a bound on a higher derivative; a GLM supplies all of
them through one scalar function of η, because the chain rule gives::

    ∇_θ U_i = U'(η_i) x_i,   ∇²_θ U_i = U''(η_i) x_i x_iᵀ (rank one),
    |∂^β U_i| ≤ sup_η |U^{(k)}(η)| · Π_j |x_ij|^{β_j}   for |β| = k,

so the per-section gradients and Hessians cost O(d) storage each and the (k+1)-th derivative bounds
of 002 are one constant times a function of ``x_i``.

Usage (inside a model)::

    from thrifty import glm

    w = th.sample("w", dist.MvNormal(np.zeros(d), 0.1 * np.eye(d)))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], w), y[i])

Families (all derivatives are with respect to η):

=====================  ====================================  ============  =====================
family                 U(η, y)                               sup \\|U''\\|   sup \\|U'''\\|
=====================  ====================================  ============  =====================
``Logistic()``         softplus(η) − yη, y ∈ {0, 1}          1/4           1/(6√3)
``Probit()``           −log Φ((2y − 1)η), y ∈ {0, 1}         1             0.29572 (numeric)
``GaussianLinear(σ)``  (y − η)²/(2σ²) + log(σ√(2π))          1/σ²          0 (Û₂ is exact)
``StudentT(ν, σ)``     (ν+1)/2 · log(1 + (y−η)²/a) + c       (ν+1)/a       (ν+1)/((12−8√2)a^1.5)
=====================  ====================================  ============  =====================

(a = νσ² for the Student-t.)

``bound(4)`` (used by the tightest SMH bound) is 1/8, 0.18896, 0 and 6(ν+1)/(νσ²)² respectively.

Derivations::

    *Logistic*: with s = σ(η), U' = s − y, U'' = s(1−s) = t ≤ 1/4, U''' = t(1 − 2s) with
    (1 − 2s)² = 1 − 4t, so U'''² = t²(1 − 4t), maximal at t = 1/6: 1/108, i.e. 1/(6√3); U'''' =
    t(1 − 6t) ∈ [−1/8, 1/24].  *Probit*: with h(z) = −log Φ(z), m = φ/Φ and w = z + m: h' = −m,
    h'' = m w ∈ (0, 1) (one minus the variance of a truncated normal), h''' = m(1 − w² − m w),
    h'''' = m(w³ + 4 m w² − 3 w + m² w − m); U^{(k)}(η) = s^k h^{(k)}(sη) with s = ±1.  The sups of
    |h'''| and |h''''| (at z ≈ 1.0024 and z ≈ 2.0713) were found on a grid of spacing 1e-5 over
    [−12, 12] (both decay like |z|^{-3} and e^{-z²/2} outside) and are rounded up by 1e-4.
    *Student-t*: with a = νσ² and r = y − η, U_rr = (ν+1)(a − r²)/(a + r²)², maximal at r = 0;
    U_rrr = 2(ν+1) r (r² − 3a)/(a + r²)³ — with r = √a·t its modulus is 2(ν+1)a^{-3/2} g(t),
    g(t) = |t(t² − 3)|/(1 + t²)³, whose maximum is at t = √2 − 1 (g' ∝ t⁴ − 6t² + 1) and equals
    1/(24 − 16√2); U_rrrr = −6(ν+1)(r⁴ − 6ar² + a²)/(a + r²)⁴, maximal in modulus at r = 0.

``tests/test_glm.py`` checks every derivative against finite differences and every bound against
a dense grid.

Adding a family.  Subclass :class:`GLMFamily` and implement ``potential``, ``d1``, ``d2`` and
``bound(k)`` for ``k = 2`` (SMH-1) and ``k = 3`` (SMH-2) — a *valid* upper bound of
``sup_η |∂^k U/∂η^k|``, possibly depending on ``y`` (return an array broadcasting against ``y``);
``th.smh`` is exact only if the bounds are.  Optionally implement ``d3`` and ``bound(4)`` to enable
SMH's tightest ("local") bound, ``sample`` for simulation (Geweke tests, prior predictive),
``xp_log_density`` for the gradient kernels (``th.nuts``, ``th.hmc``: θ a JAX array), and
set ``domain``/``is_discrete``.  Then ``GLM(MyFamily(...), X, theta)`` is an observation ``th.smh``
can subsample::

    class Poisson(GLMFamily):          # U = exp(η) − yη + log y!  (unbounded U''': not for SMH)
        ...

``params()`` (default: the instance's attributes) identifies a family's parameters; SMH re-does its
O(N) set-up when they change (e.g. a noise scale updated by another kernel).

>>> import numpy as np, thrifty as th
>>> from thrifty import dist, glm
>>> @th.model
... def logreg(X, y):
...     w = th.sample("w", dist.MvNormal(np.zeros(2), np.eye(2)))
...     with th.plate("data", len(y)) as i:
...         th.observe("y", glm.logistic(X[i], w), y[i])   # a GLM observation: th.smh applies
>>> X = np.c_[np.ones(4), [0.1, -0.3, 0.5, 0.2]]
>>> th.simulate(logreg(X, np.array([1, 0, 1, 1])), seed=0)["w"].shape
(2,)
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special as sp

from thrifty.distributions import constraints
from thrifty.distributions.base import Distribution, describe
from thrifty.distributions.xp import (
    ArrayAPIShape,
    asfloat,
    finish,
    is_foreign,
    namespace,
    special,
    takes_foreign,
)
from thrifty.errors import DistributionError

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_PI = math.log(math.pi)
INF = math.inf


_HUGE = 1e50  # |(y − η)/√a| beyond which (1 + s²)³ would overflow: s² → its leading term

class GLMFamily:
    """A scalar potential ``U(η, y) = −log p(y | η)`` and what ``th.smh`` needs to know of it.

    Subclasses implement ``potential``, ``d1``, ``d2``, ``bound`` (and optionally ``d3``,
    ``sample``); all take NumPy arrays (or floats) ``eta`` and ``y`` that broadcast together.
    """

    name = "glm"
    domain: constraints.Constraint = constraints.real
    is_discrete = False
    _foreign = False  # a parameter is an array of another library (JAX): see xp_params

    def potential(self, eta, y):
        """``U(η, y) = −log p(y | η)`` (``+inf`` where ``y`` is outside the support)."""
        raise NotImplementedError

    def log_density(self, eta, y):
        """``log p(y | η) = −U(η, y)``, ``-inf`` off the support (a family may do it faster)."""
        lp = -self.potential(eta, y)
        return np.fmax(lp, -np.inf)  # NaN (e.g. a NaN observation) counts as off the support

    def xp_log_density(self, xp, eta, y):
        """``log p(y | η)`` on arrays of namespace ``xp`` (JAX arrays of a gradient run), ``-inf``
        off the support or NaN there (the GLM makes NaN ``-inf``)."""
        raise DistributionError(
            f"GLM: the family {type(self).__name__} has no xp_log_density (its log-density is "
            f"written for NumPy only), so it takes no {xp.__name__} arrays and a gradient kernel "
            "cannot differentiate through it; update the choices it depends on with another "
            "kernel (th.mh, th.gibbs)")

    def xp_params(self) -> tuple:
        """The family's parameters that may be arrays of another library (JAX)."""
        return ()

    def xp_valid(self, xp):
        """Where such parameters are valid (None: everywhere)."""
        return None

    def d1(self, eta, y):
        """``∂U/∂η``."""
        raise NotImplementedError

    def d2(self, eta, y):
        """``∂²U/∂η²``."""
        raise NotImplementedError

    def d3(self, eta, y):
        """``∂³U/∂η³`` (optional: enables SMH-2's "local" bound)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement d3")

    def derivative(self, k: int, eta, y):
        """``∂^k U/∂η^k`` for k = 0..3."""
        if k == 0:
            return self.potential(eta, y)
        return (self.d1, self.d2, self.d3)[k - 1](eta, y)

    def bound(self, k: int, y=None):
        """An upper bound of ``sup_η |∂^k U/∂η^k|`` (a float, or an array over ``y``)."""
        raise NotImplementedError(f"{type(self).__name__} has no bound on derivative {k}")

    def has_bound(self, k: int) -> bool:
        try:
            self.bound(k)
        except (NotImplementedError, ValueError):
            return False
        return True

    def has_d3(self) -> bool:
        try:
            self.d3(np.zeros(1), np.zeros(1))
        except NotImplementedError:
            return False
        return True

    def local_bound(self, k: int, eta, y):
        """A valid upper bound of ``|∂^k U/∂η^k|`` *at* ``eta`` (default: the computed value).

        Families whose formula loses precision somewhere return the global bound there.
        """
        return np.abs(self.derivative(k, eta, y))

    def sample(self, eta, rng, shape=()):
        """Draw ``y`` given ``eta`` (shape ``shape + eta.shape``)."""
        raise NotImplementedError(f"{type(self).__name__} cannot simulate observations")

    def mean(self, eta):
        raise NotImplementedError

    def params(self) -> tuple:
        """The family's parameters (compared to detect a change between two steps)."""
        return tuple(sorted((k, v) for k, v in vars(self).items() if not k.startswith("_")))

    def __eq__(self, other) -> bool:
        from thrifty.core.trace import same_value

        return type(self) is type(other) and same_value(self.params(), other.params())

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params())
        return f"{type(self).__name__}({p})"


def _unsupported(family, k):
    raise ValueError(f"{type(family).__name__}: no bound on derivative {k} (k must be 2, 3 or 4)")


class Logistic(GLMFamily):
    """Bernoulli with logit link: ``U = softplus(η) − yη``, ``y ∈ {0, 1}``."""

    name = "logistic"
    domain = constraints.boolean
    is_discrete = True

    def potential(self, eta, y):
        eta = np.asarray(eta, dtype=float)
        y = np.asarray(y)
        u = np.logaddexp(0.0, eta) - y * eta
        return np.where((y == 0) | (y == 1), u, np.inf)

    def log_density(self, eta, y):
        y = np.asarray(y)
        if type(eta) is np.ndarray and eta.ndim and y.shape == eta.shape and y.dtype.kind in "biuf":
            from thrifty.distributions.discrete import bernoulli_logits_lp

            # the allocation-free path of Bernoulli(logits); θ is checked finite, so η is unless
            # X has ±inf — then log p is NaN and the run reports it, naming the element
            return bernoulli_logits_lp(y, eta, finite=True)
        return super().log_density(eta, y)

    def xp_log_density(self, xp, eta, y):
        y = asfloat(xp, y)
        spx = special(xp)
        lp = xp.where(y == 1, spx.log_expit(eta), spx.log_expit(-eta))
        return xp.where((y == 0) | (y == 1), lp, -INF)

    def d1(self, eta, y):
        return sp.expit(eta) - y

    def d2(self, eta, y):
        # σ(η)σ(−η): both factors keep full relative precision for large |η| (1 − σ would not)
        eta = np.asarray(eta, dtype=float)
        return sp.expit(eta) * sp.expit(-eta) + 0.0 * np.asarray(y, dtype=float)

    def d3(self, eta, y):
        eta = np.asarray(eta, dtype=float)  # 1 − 2σ(η) = −tanh(η/2)
        return -sp.expit(eta) * sp.expit(-eta) * np.tanh(0.5 * eta) + 0.0 * np.asarray(y, float)

    def bound(self, k, y=None):
        if k == 2:
            return 0.25
        if k == 3:
            return 1.0 / (6.0 * math.sqrt(3.0))
        if k == 4:
            return 0.125
        return _unsupported(self, k)

    def sample(self, eta, rng, shape=()):
        eta = np.asarray(eta, dtype=float)
        return (rng.random(tuple(shape) + eta.shape) < sp.expit(eta)).astype(np.int64)

    def mean(self, eta):
        return sp.expit(eta)


def _mills(z):
    """``m = φ(z)/Φ(z)`` (stably, ``erfcx``, for every z) and ``w = z + m``, which cancels where
    z ≪ 0 (m ≈ −z there: :func:`_probit_curvature` takes h'' and h''' from series)."""
    m = _SQRT_2_OVER_PI / sp.erfcx(-z * _SQRT_HALF)
    return m, z + m


# For z = −x ≪ 0 and v = 1/x²: x Φ(−x)/φ(x) = P(v) (the asymptotic series of Mills' ratio),
# w = Q/(xP) with Q = (1 − P)/v, so h'' = m w = Q/P² and h''' = m(1 − w² − m w) = x v² N/P³ with
# N = (P² − Q − vQ²)/v².  Beyond x = 40 the truncated series err by less than 1e-14 (relative);
# the direct formulas lose ~x²ε in h'' and ~x⁴ε in h''' to the cancellation in w.
_P = (1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0)
_Q = (1.0, -3.0, 15.0, -105.0, 945.0, -10395.0, 135135.0)
_N = (-2.0, 30.0, -396.0, 5460.0, -81990.0)
_FAR = -40.0
_polyval = np.polynomial.polynomial.polyval  # Σ c_k v^k (Horner)


def _probit_curvature(z):
    """``(h''(z), h'''(z))`` of ``h = −log Φ``: the direct formulas, the series where z < −40."""
    m, w = _mills(z)
    with np.errstate(invalid="ignore"):  # z ≫ 0: m = 0 (underflow), w² = inf
        h2, h3 = m * w, np.where(m > 0, m * (1.0 - w * w - m * w), 0.0)
    far = z < _FAR
    if np.any(far):
        with np.errstate(all="ignore"):
            x = -z
            v = 1.0 / (x * x)
            p = _polyval(v, _P)
            h2 = np.where(far, _polyval(v, _Q) / (p * p), h2)
            h3 = np.where(far, _polyval(v, _N) * (v / x) / (p * p * p), h3)
    return h2, h3


class Probit(GLMFamily):
    """Bernoulli with probit link: ``U = −log Φ((2y − 1)η)``, ``y ∈ {0, 1}``."""

    name = "probit"
    domain = constraints.boolean
    is_discrete = True
    M3 = 0.2958  # sup |h'''| = 0.295719 (module docstring), rounded up
    M4 = 0.1890  # sup |h''''| = 0.188957, rounded up
    _SAFE = -10.0  # below, h''' and h'''' cancel badly: local_bound returns the global bound

    @staticmethod
    def _s(y):
        y = np.asarray(y)
        return np.where(y == 1, 1.0, -1.0), (y == 0) | (y == 1)

    def potential(self, eta, y):
        s, ok = self._s(y)
        return np.where(ok, -sp.log_ndtr(s * np.asarray(eta, dtype=float)), np.inf)

    def xp_log_density(self, xp, eta, y):
        y = asfloat(xp, y)
        lp = special(xp).log_ndtr(xp.where(y == 1, eta, -eta))
        return xp.where((y == 0) | (y == 1), lp, -INF)

    def d1(self, eta, y):
        s, _ = self._s(y)
        m, _ = _mills(s * np.asarray(eta, dtype=float))
        return -s * m

    def d2(self, eta, y):
        s, _ = self._s(y)
        return _probit_curvature(s * np.asarray(eta, dtype=float))[0]

    def d3(self, eta, y):
        s, _ = self._s(y)
        return s * _probit_curvature(s * np.asarray(eta, dtype=float))[1]

    def local_bound(self, k, eta, y):
        s, _ = self._s(y)
        z = s * np.asarray(eta, dtype=float)
        return np.where(z < self._SAFE, self.bound(k), np.abs(self.derivative(k, eta, y)))

    def bound(self, k, y=None):
        if k == 2:
            return 1.0
        if k == 3:
            return self.M3
        if k == 4:
            return self.M4
        return _unsupported(self, k)

    def sample(self, eta, rng, shape=()):
        eta = np.asarray(eta, dtype=float)
        return (rng.random(tuple(shape) + eta.shape) < sp.ndtr(eta)).astype(np.int64)

    def mean(self, eta):
        return sp.ndtr(eta)


class GaussianLinear(GLMFamily):
    """Normal with identity link: ``y ~ N(η, σ²)``.  ``U''' = 0``: SMH-2 evaluates no terms."""

    name = "gaussian"

    def __init__(self, sigma: float = 1.0):
        if is_foreign(sigma):  # (a gradient run's array: the GLM's density is -inf where invalid)
            self.sigma, self._foreign = sigma, True
            return
        sigma = float(sigma)
        if not sigma > 0 or not math.isfinite(sigma):
            raise ValueError(f"GaussianLinear: sigma must be positive and finite, got {sigma}")
        self.sigma = sigma

    def potential(self, eta, y):
        r = (np.asarray(y, dtype=float) - eta) / self.sigma
        return 0.5 * r * r + math.log(self.sigma) + _LOG_SQRT_2PI

    def xp_log_density(self, xp, eta, y):
        sigma = asfloat(xp, self.sigma)
        r = (asfloat(xp, y) - eta) / sigma
        return -(0.5 * r * r + xp.log(sigma) + _LOG_SQRT_2PI)

    def xp_params(self):
        return (self.sigma,)

    def xp_valid(self, xp):
        return _positive(self.sigma) if self._foreign else None

    def d1(self, eta, y):
        return (np.asarray(eta, dtype=float) - y) / self.sigma**2

    def d2(self, eta, y):
        return np.full(np.broadcast(np.asarray(eta), np.asarray(y)).shape, self.sigma**-2)

    def d3(self, eta, y):
        return np.zeros(np.broadcast(np.asarray(eta), np.asarray(y)).shape)

    def bound(self, k, y=None):
        if k == 2:
            return self.sigma**-2
        if k in (3, 4):
            return 0.0
        return _unsupported(self, k)

    def sample(self, eta, rng, shape=()):
        eta = np.asarray(eta, dtype=float)
        return eta + self.sigma * rng.standard_normal(tuple(shape) + eta.shape)

    def mean(self, eta):
        return eta


class StudentT(GLMFamily):
    """Robust regression: ``y = η + σ·t_ν``."""

    name = "student_t"

    def __init__(self, df: float, sigma: float = 1.0):
        if is_foreign(df) or is_foreign(sigma):  # (the GLM's density is -inf where invalid)
            self.df, self.sigma, self._foreign = df, sigma, True
            return
        df, sigma = float(df), float(sigma)
        for n, v in (("df", df), ("sigma", sigma)):
            if not v > 0 or not math.isfinite(v):
                raise ValueError(f"StudentT: {n} must be positive and finite, got {v}")
        self.df = df
        self.sigma = sigma

    @property
    def _a(self) -> float:
        return self.df * self.sigma**2

    def _scaled(self, eta, y):
        """s = (y − η)/√a and whether |s| is so large that s² would overflow."""
        s = (np.asarray(y, dtype=float) - eta) / math.sqrt(self._a)
        return s, np.abs(s) > _HUGE

    def potential(self, eta, y):
        nu = self.df
        s, far = self._scaled(eta, y)
        const = (
            math.lgamma(0.5 * (nu + 1.0))
            - math.lgamma(0.5 * nu)
            - 0.5 * math.log(nu * math.pi)
            - math.log(self.sigma)
        )
        with np.errstate(over="ignore", divide="ignore"):  # far tails: log(1 + s²) = 2 log|s|
            lg = np.where(far, 2.0 * np.log(np.abs(s)), np.log1p(s * s))
        return 0.5 * (nu + 1.0) * lg - const

    def xp_log_density(self, xp, eta, y):
        nu, sigma = asfloat(xp, self.df), asfloat(xp, self.sigma)
        s = (asfloat(xp, y) - eta) / xp.sqrt(nu * sigma**2)
        far = xp.abs(s) > _HUGE  # (far tails: log(1 + s²) = 2 log|s|)
        lg = xp.where(far, 2.0 * xp.log(xp.abs(xp.where(far, s, 1.0))),
                      xp.log1p(xp.where(far, 0.0, s) ** 2))
        lgamma = special(xp).gammaln
        const = (lgamma(0.5 * (nu + 1.0)) - lgamma(0.5 * nu) - 0.5 * (xp.log(nu) + _LOG_PI)
                 - xp.log(sigma))
        return const - 0.5 * (nu + 1.0) * lg

    def xp_params(self):
        return (self.df, self.sigma)

    def xp_valid(self, xp):
        return _positive(self.df) & _positive(self.sigma) if self._foreign else None

    def d1(self, eta, y):
        s, far = self._scaled(eta, y)
        with np.errstate(all="ignore"):  # (only the branch not taken overflows)
            g = np.where(far, 1.0 / s, s / (1.0 + s * s))
        return -(self.df + 1.0) * g / math.sqrt(self._a)

    def d2(self, eta, y):
        s, far = self._scaled(eta, y)
        with np.errstate(all="ignore"):  # (only the branch not taken overflows)
            s2 = s * s
            g = np.where(far, -1.0 / s / s, (1.0 - s2) / (1.0 + s2) ** 2)
        return (self.df + 1.0) * g / self._a

    def d3(self, eta, y):
        s, far = self._scaled(eta, y)
        with np.errstate(all="ignore"):  # (only the branch not taken overflows)
            s2 = s * s
            g = np.where(far, 1.0 / s / s / s, s * (s2 - 3.0) / (1.0 + s2) ** 3)
        return -2.0 * (self.df + 1.0) * g / self._a**1.5

    def bound(self, k, y=None):
        a, nu1 = self._a, self.df + 1.0
        if k == 2:
            return nu1 / a
        if k == 3:
            return nu1 / ((12.0 - 8.0 * math.sqrt(2.0)) * a**1.5)
        if k == 4:
            return 6.0 * nu1 / a**2
        return _unsupported(self, k)

    def sample(self, eta, rng, shape=()):
        eta = np.asarray(eta, dtype=float)
        return eta + self.sigma * rng.standard_t(self.df, tuple(shape) + eta.shape)

    def mean(self, eta):
        return eta


def _positive(v):
    """``0 < v < inf`` (an array of another library, or a Python float)."""
    return (v > 0) & (v < INF)


class GLM(Distribution):
    """Observations ``y_i ~ family(η_i)`` with ``η = X @ theta``; batch shape ``(n,)``.

    ``X`` is ``(n, d)`` (or ``(d,)`` for one observation), ``theta`` ``(d,)`` — or ``(n, d)``, one
    weight vector per observation (per-cluster weights read through ``th.mem``, ``w(z)``).
    ``log_prob(y) = −U(η, y)``.  ``th.smh`` recognises these observations as the local sections
    of the choice ``theta`` (see the module docstring).  ``theta``, ``X`` and the family's
    parameters may be JAX arrays (a gradient kernel's): ``log_prob`` is then the family's
    ``xp_log_density``, ``-inf`` where they are not finite / valid.
    """

    _rowwise = False
    array_api = True

    def __init__(self, family: GLMFamily, X, theta):
        if not isinstance(family, GLMFamily):
            raise TypeError(f"GLM: family must be a GLMFamily, got {family!r}")
        self.family = family
        self.domain = family.domain
        self.is_discrete = family.is_discrete
        if (family._foreign or (type(theta) is not np.ndarray and is_foreign(theta))
                or (type(X) is not np.ndarray and is_foreign(X))):
            return self._init_array_api(X, theta)
        X = np.asarray(X, dtype=float)
        theta = np.asarray(theta, dtype=float)
        if theta.ndim == 2 and X.ndim == 2 and theta.shape == X.shape:  # a θ per observation
            self._rowwise = True
            self._check_finite("theta", theta)
            self.X, self.theta, self.batch_shape, self._eta = X, theta, X.shape[:-1], None
            return
        if theta.ndim != 1:
            self._fail(f"theta must be a vector (or (n, d) like X), got {describe(theta)}")
            theta = theta.reshape(-1)
        if X.ndim not in (1, 2) or X.shape[-1] != theta.shape[0]:
            self._fail(
                f"X must have shape (n, {theta.shape[0]}) or ({theta.shape[0]},) to match theta, "
                f"got {X.shape}"
            )
            X = np.zeros((0, theta.shape[0]))
        self._check_finite("theta", theta)
        self.X = X
        self.theta = theta
        self.batch_shape = X.shape[:-1]
        self._eta = None

    def _init_array_api(self, X, theta):
        """``X``, ``theta`` or the family's parameters arrays of another library (JAX): where
        they are invalid is recorded (``_valid``), not raised."""
        family = self.family
        xp = namespace(X, theta, *family.xp_params())
        X, theta = asfloat(xp, X), asfloat(xp, theta)
        if theta.ndim == 2 and X.ndim == 2 and theta.shape == X.shape:  # a θ per observation
            self._rowwise = True
            self._invalid_unless(xp.all(xp.abs(theta) < INF, axis=-1))
        else:
            if theta.ndim != 1:
                self._fail(f"theta must be a vector (or (n, d) like X), got an array of shape "
                           f"{tuple(theta.shape)}")
                theta = xp.reshape(theta, (-1,))
            d = theta.shape[0]
            if X.ndim not in (1, 2) or X.shape[-1] != d:
                self._fail(f"X must have shape (n, {d}) or ({d},) to match theta, got "
                           f"{tuple(X.shape)}")
                X = xp.zeros((0, d))
            self._invalid_unless(xp.all(xp.abs(theta) < INF))
        valid = family.xp_valid(xp)
        if valid is not None:
            self._invalid_unless(valid)
        if type(family).xp_log_density is GLMFamily.xp_log_density:  # NumPy only: refused
            family.xp_log_density(xp, None, None)
        self.X, self.theta, self._eta = X, theta, None
        self.batch_shape = ArrayAPIShape(X.shape[:-1])

    @property
    def eta(self) -> np.ndarray:
        """The linear predictor ``X @ theta`` (computed once)."""
        if self._eta is None:
            if type(self.batch_shape) is ArrayAPIShape:
                xp = namespace(self.X, self.theta)
                self._eta = (xp.sum(self.X * self.theta, axis=-1) if self._rowwise
                             else self.X @ self.theta)
            elif self._rowwise:
                self._eta = np.einsum("ij,ij->i", self.X, self.theta)
            else:
                self._eta = self.X @ self.theta
        return self._eta

    def log_prob(self, value):
        if takes_foreign(self, value):
            eta = self.eta
            xp = namespace(value, eta)
            return finish(xp, self, self.family.xp_log_density(xp, asfloat(xp, eta), value))
        lp = self.family.log_density(self.eta, value)
        return float(lp) if np.ndim(lp) == 0 else lp

    def sample(self, rng, shape=()):
        v = self.family.sample(self.eta, rng, tuple(shape))
        return v.item() if np.ndim(v) == 0 else v

    @property
    def mean(self):
        return self.family.mean(self.eta)

    def _params_repr(self):
        return f"{self.family!r}, X={describe(self.X)}, theta={describe(self.theta)}"


def logistic(X, theta) -> GLM:
    """Logistic regression observations: ``y_i ~ Bernoulli(σ(x_i·θ))``."""
    return GLM(Logistic(), X, theta)


def probit(X, theta) -> GLM:
    """Probit regression observations: ``y_i ~ Bernoulli(Φ(x_i·θ))``."""
    return GLM(Probit(), X, theta)


def gaussian(X, theta, sigma=1.0) -> GLM:
    """Linear regression observations: ``y_i ~ N(x_i·θ, σ²)``."""
    return GLM(GaussianLinear(sigma), X, theta)


def student_t(X, theta, df, sigma=1.0) -> GLM:
    """Robust regression observations: ``y_i = x_i·θ + σ·t_ν``."""
    return GLM(StudentT(df, sigma), X, theta)


__all__ = [
    "GLM",
    "GLMFamily",
    "GaussianLinear",
    "Logistic",
    "Probit",
    "StudentT",
    "gaussian",
    "logistic",
    "probit",
    "student_t",
]
