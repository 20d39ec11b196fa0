"""Distributions built from others: ``Truncated`` (to an interval) and a finite ``Mixture``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from thrifty.distributions import constraints
from thrifty.distributions.base import (
    NP_SCALARS,
    Distribution,
    all_true,
    as_params,
    describe,
    scalar_or_array,
)
from thrifty.errors import DistributionError

INF = math.inf
_HALF_ULP = 2.0**-54  # replaces a uniform draw of exactly 0: inverse-cdf draws stay inside


def _quiet():
    return np.errstate(all="ignore")


def _open_uniform(rng, size):
    """Uniform draws on the open interval (0, 1), as an array of shape ``size``."""
    u = np.asarray(rng.random(size))
    return np.where(u == 0.0, _HALF_ULP, u)


class Truncated(Distribution):
    """The distribution ``base`` restricted to ``[low, high]`` and renormalised (NumPyro's
    ``TruncatedDistribution``, PyMC's ``Truncated``).

        log p(x) = base.log_prob(x) - log(F(high) - F(low))   for low <= x <= high, else -inf

    with ``F`` the base cdf (for a discrete base, ``F(low - 1)``: both bounds are included;
    non-integer bounds are rounded inwards).  ``low=None`` / ``high=None`` leave that side open.
    The mass ``F(high) - F(low)`` is computed in log space from the side of the median it lies on
    (the survival function above it), so far-tail truncation stays exact:
    ``Truncated(Normal(0, 1), low=40.0)`` has a log normaliser of ``-804.6``.  Sampling inverts the
    cdf (``icdf``, ``isf``) at a uniform draw, also in log space, so it is exact and never
    rejects.  ``base`` must be univariate with a cdf (the continuous families, ``Poisson``,
    ``NegativeBinomial``, the half distributions, a ``Mixture`` of these); sampling also needs
    its inverse, which a ``Mixture`` lacks.  ``low``/``high`` broadcast with the base's batch
    shape.  ``mean``/``variance`` are not available.

    >>> from thrifty import dist
    >>> d = dist.Truncated(dist.Normal(0.0, 1.0), low=0.0)  # the half-normal
    >>> round(d.log_prob(1.0), 6) == round(dist.HalfNormal(1.0).log_prob(1.0), 6), d.log_prob(-1.0)
    (True, -inf)
    >>> zt = dist.Truncated(dist.Poisson(2.0), low=1)  # zero-truncated Poisson
    >>> zt.log_prob(0), round(zt.log_prob(1), 6)  # log(2 e^-2 / (1 - e^-2))
    (-inf, -1.161439)
    """

    def __init__(self, base: Distribution, low: float | np.ndarray | None = None,
                 high: float | np.ndarray | None = None):
        self.base = base
        self.low, self.high = (-INF if low is None else low), (INF if high is None else high)
        if not isinstance(base, Distribution):
            self._fail(f"base must be a Distribution, got {type(base).__name__}")
            self.low = self.high = 0.0
            return
        self.is_discrete = base.is_discrete
        self.domain = base.domain
        if base._error is not None:
            self._fail(f"base {type(base).__name__}: {base._error}")
        if base.event_shape:
            self._fail(
                f"base must be univariate, got {type(base).__name__} with event shape "
                f"{tuple(base.event_shape)}"
            )
            return
        (lo, hi), shape = as_params(self.low, self.high, owner=self)
        if not all_true(lo == lo) or not all_true(hi == hi):
            self._fail(f"low and high must not be NaN, got low={describe(lo)}, high={describe(hi)}")
            return
        if self.is_discrete:  # integer bounds, both included
            lo, hi = scalar_or_array(np.ceil(lo)), scalar_or_array(np.floor(hi))
        self.low, self.high = lo, hi
        if not all_true(lo <= hi if self.is_discrete else lo < hi):
            relation = "must not exceed" if self.is_discrete else "must be less than"
            self._fail(f"low {relation} high, got low={describe(lo)}, high={describe(hi)}")
            return
        try:
            self.batch_shape = np.broadcast_shapes(tuple(base.batch_shape), shape)
        except ValueError:
            self._fail(f"low/high shape {shape} and base batch shape {base.batch_shape} do not "
                       "broadcast")
            return
        if not callable(getattr(base, "log_cdf", None)):
            self._fail(f"{type(base).__name__} has no cdf; Truncated needs one")
            return
        try:
            self._log_z = self._log_mass()
        except NotImplementedError as e:
            self._fail(f"{e}; Truncated needs one")
            return
        if not all_true(self._log_z > -INF):
            self._fail(
                f"the interval [{describe(lo)}, {describe(hi)}] has probability 0 under "
                f"{base!r} (or below the smallest double)"
            )

    def _log_mass(self):
        """``log(F(high) - F(a))`` with ``a = low`` (``low - 1`` for a discrete base), from the
        survival function where ``a`` lies above the median; also keeps the four log tails."""
        base = self.base
        a = self.low - 1.0 if self.is_discrete else self.low
        la, lb = np.asarray(base.log_cdf(a)), np.asarray(base.log_cdf(self.high))
        sa, sb = np.asarray(base.log_sf(a)), np.asarray(base.log_sf(self.high))
        with _quiet():
            from_sf = sa + np.log(-np.expm1(sb - sa))
            from_cdf = lb + np.log(-np.expm1(la - lb))
        self._upper = la > sa
        self._tails = la, lb, sa, sb
        log_z = np.where(self._upper, from_sf, from_cdf)
        return scalar_or_array(np.where(np.isnan(log_z), -np.inf, log_z))

    @property
    def support(self):
        if self.is_discrete:
            return constraints.integer_interval(self.low, self.high)
        return constraints.interval(self.low, self.high)

    @property
    def has_enumerate_support(self):
        return self.is_discrete and bool(np.all(np.isfinite(self.low) & np.isfinite(self.high)))

    def enumerate_support(self):
        if not self.has_enumerate_support:
            return super().enumerate_support()
        return np.arange(int(np.min(self.low)), int(np.max(self.high)) + 1)

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = value.item()
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if self.low <= value <= self.high:
                return self.base.log_prob(value) - self._log_z
            return -INF
        x = np.asarray(value)
        ok = (x >= self.low) & (x <= self.high)
        with _quiet():
            lp = np.where(ok, np.asarray(self.base.log_prob(x)) - self._log_z, -np.inf)
        return scalar_or_array(lp)

    def sample(self, rng, shape=()):
        base = self.base
        if not callable(getattr(base, "icdf", None)):
            raise DistributionError(
                f"Truncated: cannot sample: {type(base).__name__} has no inverse cdf (icdf)"
            )
        size = tuple(shape) + tuple(self.batch_shape)
        u = _open_uniform(rng, size)
        la, lb, sa, sb = self._tails
        with _quiet():
            if self.is_discrete:  # icdf / isf of a probability strictly inside the interval's
                lower = base.icdf(np.exp(la) + u * (np.exp(lb) - np.exp(la)))
                upper = base.isf(np.exp(sb) + u * (np.exp(sa) - np.exp(sb)))
            else:  # the same in log space: F(x) = F(a) + u (F(b) - F(a)), or its complement
                lower = base._icdf_log(lb + np.log(np.exp(la - lb) - u * np.expm1(la - lb)))
                upper = base._isf_log(sa + np.log1p(u * np.expm1(sb - sa)))
        x = np.clip(np.where(self._upper, upper, lower), self.low, self.high)
        if self.is_discrete:
            x = x.astype(np.int64)
            return int(x) if not size else x
        return float(x) if not size else x

    def _params_repr(self):
        return f"{self.base!r}, low={describe(self.low)}, high={describe(self.high)}"


class Mixture(Distribution):
    """Finite mixture: ``x`` is drawn from ``components[k]`` with probability ``weights[k]``
    (PyMC's ``Mixture(w, comp_dists)``; NumPyro's ``MixtureGeneral``).

        log p(x) = logsumexp_k (log w_k + log p_k(x))

    ``weights`` has the components on its last axis (leading axes are batch axes) and must be
    non-negative and sum to 1.  The components must share their event shape and be all discrete
    or all continuous; each has scalar parameters or parameters of the mixture's full batch
    shape.  ``domain`` is the union of the components' domains.  ``mean`` / ``variance`` come
    from the components'; ``cdf``, ``sf`` and their logs too when every component has them
    (so a mixture can be truncated, though not sampled truncated: it has no ``icdf``).

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Mixture([0.3, 0.7], [dist.Normal(-2.0, 1.0), dist.Normal(2.0, 0.5)])
    >>> round(d.log_prob(0.0), 6), round(d.mean, 6)  # log(0.3 φ(2) + 0.7 φ(4) / 0.5)
    (-4.11141, 0.8)
    """

    _scalar = False  # weights of shape (K,), univariate components with scalar parameters

    def __init__(self, weights: Sequence[float] | np.ndarray,
                 components: Sequence[Distribution]):
        comps = list(components) if isinstance(components, (list, tuple)) else []
        self.components = comps
        self.weights = np.ones(max(len(comps), 1)) / max(len(comps), 1)
        if not comps:
            self._fail(f"components must be a non-empty list of distributions, got {components!r}")
            return
        for j, c in enumerate(comps):
            if not isinstance(c, Distribution):
                self._fail(f"components[{j}] must be a Distribution, got {type(c).__name__}")
                return
            if c._error is not None:
                self._fail(f"components[{j}] ({type(c).__name__}): {c._error}")
        if len({tuple(c.event_shape) for c in comps}) > 1:
            shapes = ", ".join(str(tuple(c.event_shape)) for c in comps)
            self._fail(f"components must have the same event shape, got {shapes}")
            return
        if len({bool(c.is_discrete) for c in comps}) > 1:
            kinds = ", ".join("discrete" if c.is_discrete else "continuous" for c in comps)
            self._fail(f"components must be all discrete or all continuous, got {kinds}")
            return
        w = np.asarray(weights, dtype=float)
        if w.ndim == 0 or w.shape[-1] != len(comps):
            self._fail(
                f"weights must have one entry per component ({len(comps)}) on its last axis, "
                f"got {describe(w)}"
            )
            return
        if not (all_true(w >= 0) and all_true(np.abs(w.sum(-1) - 1.0) < 1e-6)):
            self._fail(f"weights must be non-negative and sum to 1, got {describe(w)}")
            return
        try:
            batch = np.broadcast_shapes(w.shape[:-1], *(tuple(c.batch_shape) for c in comps))
        except ValueError:
            shapes = ", ".join(str(tuple(c.batch_shape)) for c in comps)
            self._fail(f"weights shape {w.shape} and component batch shapes {shapes} do not "
                       "broadcast")
            return
        for j, c in enumerate(comps):
            if c.batch_shape and tuple(c.batch_shape) != batch:
                self._fail(
                    f"components[{j}] has batch shape {tuple(c.batch_shape)} but the mixture's "
                    f"batch shape is {batch}; give each component scalar parameters or "
                    "parameters of the full batch shape"
                )
                return
        self.weights, self.batch_shape = w, batch
        self.event_shape = tuple(comps[0].event_shape)
        self.is_discrete = bool(comps[0].is_discrete)
        self.domain = constraints.union(*(c.domain for c in comps))
        with _quiet():
            self._log_w = np.log(w)
        self._scalar = w.ndim == 1 and not batch and not self.event_shape
        if self._scalar:
            self._log_w_list = self._log_w.tolist()
            self._cum_w = np.cumsum(w).tolist()

    # -- density ---------------------------------------------------------------------------
    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = value.item()
            t = type(value)
        if self._scalar and (t is float or t is int):
            terms = [lw + c.log_prob(value) for lw, c in zip(self._log_w_list, self.components)]
            m = max(terms)
            if not -INF < m < INF:
                return m
            return m + math.log(math.fsum(math.exp(s - m) for s in terms))
        return self._logsumexp([c.log_prob(value) for c in self.components])

    def _logsumexp(self, per_component):
        """``logsumexp_k(log w_k + t_k)`` over per-component terms (arrays or floats)."""
        terms = [np.asarray(t, dtype=float) for t in per_component]
        shape = np.broadcast_shapes(*(t.shape for t in terms), self._log_w.shape[:-1])
        a = np.stack([np.broadcast_to(t, shape) for t in terms], axis=-1) + self._log_w
        with _quiet():
            m = a.max(-1)
            out = m + np.log(np.exp(a - m[..., None]).sum(-1))
        return scalar_or_array(np.where(np.isfinite(m), out, m))

    def sample(self, rng, shape=()):
        comps = self.components
        if self._scalar and not shape:
            u = rng.random()
            k = next((j for j, c in enumerate(self._cum_w) if u < c), len(comps) - 1)
            return comps[k].sample(rng)
        size = tuple(shape) + tuple(self.batch_shape)
        cum = np.cumsum(self.weights, -1)
        k = np.minimum((rng.random(size + (1,)) >= cum).sum(-1), len(comps) - 1)
        full = size + self.event_shape
        draws = [np.broadcast_to(c.sample(rng, shape if c.batch_shape else size), full)
                 for c in comps]
        k = k.reshape(k.shape + (1,) * len(self.event_shape))
        out = np.array(draws[0])
        for j in range(1, len(comps)):
            out = np.where(k == j, draws[j], out)
        return out

    # -- moments and cumulative functions --------------------------------------------------------
    def _weight(self, j):
        """``weights[..., j]`` shaped to broadcast against the component's batch + event."""
        w = self.weights[..., j]
        return w.reshape(w.shape + (1,) * len(self.event_shape)) if w.ndim else float(w)

    @property
    def mean(self):
        return sum(self._weight(j) * c.mean for j, c in enumerate(self.components))

    @property
    def variance(self):
        with _quiet():
            second = sum(
                self._weight(j) * (c.variance + np.square(c.mean))
                for j, c in enumerate(self.components)
            )
            m = self.mean
            v = second - np.square(m)
        return scalar_or_array(np.where(np.isinf(m), np.inf, v))

    def _each(self, method, value):
        out = []
        for j, c in enumerate(self.components):
            f = getattr(c, method, None)
            if not callable(f):
                raise NotImplementedError(
                    f"Mixture: components[{j}] ({type(c).__name__}) has no {method}"
                )
            out.append(f(value))
        return out

    def cdf(self, value):
        return scalar_or_array(np.exp(self.log_cdf(value)))

    def sf(self, value):
        return scalar_or_array(np.exp(self.log_sf(value)))

    def log_cdf(self, value):
        return self._logsumexp(self._each("log_cdf", value))

    def log_sf(self, value):
        return self._logsumexp(self._each("log_sf", value))

    def _params_repr(self):
        comps = ", ".join(repr(c) for c in self.components)
        return f"weights={describe(self.weights)}, components=[{comps}]"
