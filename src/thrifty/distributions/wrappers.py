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
    owned,
    scalar_or_array,
)
from thrifty.distributions.xp import (
    ArrayAPIShape,
    asfloat,
    entries,
    finish,
    holds_foreign,
    is_foreign,
    namespace,
    special,
    takes_foreign,
)
from thrifty.errors import DistributionError

INF = math.inf
_HALF_ULP = 2.0**-54  # replaces a uniform draw of exactly 0: inverse-cdf draws stay inside


def _quiet():
    return np.errstate(all="ignore")


def _namespace_of(*dists):
    """The namespace of the array-API (JAX) arrays the distributions hold (NumPy if none)."""
    for d in dists:
        for v in vars(d).values():
            if isinstance(v, Distribution):
                xp = _namespace_of(v)
            elif type(v) is list:
                xp = _namespace_of(*(c for c in v if isinstance(c, Distribution)))
            else:
                xp = namespace(v)
            if xp is not np:
                return xp
    return np


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

    The base's parameters, the bounds and the value may be JAX arrays (a gradient kernel's) when
    the base's cdf is written against the array API (``array_api_cdf``: the continuous families,
    the half distributions, ``Poisson``, ``NegativeBinomial`` and mixtures of these; see
    :mod:`~thrifty.distributions.cumulative` for the derivatives JAX lacks); invalid ones give
    ``-inf``.

    >>> from thrifty import dist
    >>> d = dist.Truncated(dist.Normal(0.0, 1.0), low=0.0)  # the half-normal
    >>> round(d.log_prob(1.0), 6) == round(dist.HalfNormal(1.0).log_prob(1.0), 6), d.log_prob(-1.0)
    (True, -inf)
    >>> zt = dist.Truncated(dist.Poisson(2.0), low=1)  # zero-truncated Poisson
    >>> zt.log_prob(0), round(zt.log_prob(1), 6)  # log(2 e^-2 / (1 - e^-2))
    (-inf, -1.161439)
    """

    array_api = True

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
        if type(shape) is ArrayAPIShape or type(base.batch_shape) is ArrayAPIShape:
            return self._init_array_api(lo, hi, shape)
        if not all_true(lo == lo) or not all_true(hi == hi):
            self._fail(f"low and high must not be NaN, got low={describe(lo)}, high={describe(hi)}")
            return
        if self.is_discrete:  # integer bounds, both included
            lo, hi = scalar_or_array(np.ceil(lo)), scalar_or_array(np.floor(hi))
        self.low, self.high = owned(lo), owned(hi)  # (its support: read after the site)
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

    def _init_array_api(self, lo, hi, shape):
        """The base's parameters or the bounds are arrays of another library (JAX): the
        normaliser on the array API, where it is invalid recorded (``_valid``), not raised."""
        base = self.base
        xp = namespace(lo, hi)
        if xp is np:
            xp = _namespace_of(base)
        name = type(base).__name__
        if not callable(getattr(base, "log_cdf", None)):
            self._fail(f"{name} has no cdf; Truncated needs one")
            return
        if not getattr(base, "array_api_cdf", False):
            raise DistributionError(
                f"Truncated: the cdf of {name} is written for NumPy only, so a truncated {name} "
                f"takes no {xp.__name__} arrays (a gradient kernel cannot differentiate through "
                "it); update the choices it depends on with another kernel (th.mh, th.gibbs)")
        foreign = is_foreign(lo) or is_foreign(hi)
        rnd = (xp.ceil, xp.floor) if foreign else (np.ceil, np.floor)
        if self.is_discrete:  # integer bounds, both included
            lo, hi = rnd[0](lo), rnd[1](hi)
        ok = (lo == lo) & (hi == hi) & ((lo <= hi) if self.is_discrete else (lo < hi))
        if foreign:
            self._invalid_unless(ok)
        elif not all_true(ok):
            self._fail(f"low and high must not be NaN and low must be below high, got "
                       f"low={describe(lo)}, high={describe(hi)}")
            return
        try:
            self.batch_shape = ArrayAPIShape(np.broadcast_shapes(tuple(base.batch_shape),
                                                                 tuple(shape)))
        except ValueError:
            self._fail(f"low/high shape {tuple(shape)} and base batch shape "
                       f"{tuple(base.batch_shape)} do not broadcast")
            return
        self.low, self.high = lo, hi
        self._log_z = self._xp_log_mass(xp)
        self._invalid_unless(self._log_z > -INF)
        if base._valid is not None:
            self._invalid_unless(base._valid)

    def _xp_tails(self, xp, v, inf):
        """``(log F(v), log S(v))`` on the array API; at ``v = inf`` (±) they are constants."""
        at_inf = v == inf
        if is_foreign(v):
            v = xp.where(at_inf, 0.0, v)
        elif all_true(at_inf):
            return (-INF, 0.0) if inf < 0 else (0.0, -INF)
        else:  # (a NumPy array still: a fixed point, which the negative binomial's cdf uses)
            v = np.where(at_inf, 0.0, v)
        lc, ls = self.base._xp_log_cdf(xp, v), self.base._xp_log_sf(xp, v)
        if inf < 0:
            return xp.where(at_inf, -INF, lc), xp.where(at_inf, 0.0, ls)
        return xp.where(at_inf, 0.0, lc), xp.where(at_inf, -INF, ls)

    def _xp_log_mass(self, xp):
        """:meth:`_log_mass` on the array API."""
        a = self.low - 1.0 if self.is_discrete else self.low
        la, sa = self._xp_tails(xp, a, -INF)
        lb, sb = self._xp_tails(xp, self.high, INF)
        upper = self._upper = la > sa
        self._tails = la, lb, sa, sb
        # each side's formula given its own arguments only: the other's is log 0 in a far tail
        # (la = log F(40) rounds to 0), and its derivative, ∞, times the where's 0 is NaN
        cond = xp.asarray(upper)
        from_sf = sa + xp.log(-xp.expm1(xp.where(cond, xp.asarray(sb - sa), -1.0)))
        from_cdf = lb + xp.log(-xp.expm1(xp.where(cond, -1.0, xp.asarray(la - lb))))
        log_z = xp.where(cond, from_sf, from_cdf)
        return xp.where(xp.isnan(log_z), -INF, log_z)

    @property
    def support(self):
        """``[low, high]`` within the base's support (a half-normal truncated above at 3:
        ``[0, 3]``, where a gradient kernel's transform maps; not ``(−∞, 3]``, whose negative
        half has density 0)."""
        if self.is_discrete:
            return constraints.integer_interval(self.low, self.high)
        base = self.base.support
        if type(base) is constraints._Union:  # (a mixture with a gap: each part within bounds)
            parts = [self._within(_bounds(c)) for c in base.parts]
            kept = [c for c in parts if c is not None]
            return constraints.union(*kept) if kept else constraints.interval(self.low, self.high)
        return self._within(_bounds(base)) or constraints.interval(self.low, self.high)

    def _within(self, inner):
        """``[low, high]`` within the interval ``inner`` = (lower, upper); None: not an
        interval, or (NumPy bounds) empty for every entry."""
        if inner is None:
            return None
        lo, hi = _meet(self.low, inner[0], max), _meet(self.high, inner[1], min)
        if not (is_foreign(lo) or is_foreign(hi)) and np.all(np.asarray(lo) > np.asarray(hi)):
            return None
        return constraints.interval(lo, hi)

    @property
    def has_enumerate_support(self):
        return self.is_discrete and bool(np.all(np.isfinite(self.low) & np.isfinite(self.high)))

    def enumerate_support(self):
        if not self.has_enumerate_support:
            return super().enumerate_support()
        return np.arange(int(np.min(self.low)), int(np.max(self.high)) + 1)

    def support_size(self) -> int:
        if not self.has_enumerate_support:
            return super().support_size()
        return int(np.max(self.high)) - int(np.min(self.low)) + 1

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if (t is float or t is int) and not self.batch_shape:
            if self.low <= value <= self.high:
                return self.base.log_prob(value) - self._log_z
            return -INF
        if takes_foreign(self, value):
            xp = namespace(value, self.low, self.high, self._log_z)
            x = asfloat(xp, value)
            lp = self.base.log_prob(x) - self._log_z
            return finish(xp, self, xp.where((x >= self.low) & (x <= self.high), lp, -INF),
                          masked=True)
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
        if not np.all(np.isfinite(x)):  # an inverse cdf that failed: no draw, not a wrong one
            raise DistributionError(
                f"Truncated: cannot sample: the inverse cdf of {base!r} gave "
                f"{describe(x[~np.isfinite(x)] if np.ndim(x) else x)} inside "
                f"[{describe(self.low)}, {describe(self.high)}]"
            )
        if self.is_discrete:
            x = x.astype(np.int64)
            return int(x) if not size else x
        return float(x) if not size else x

    def _params_repr(self):
        return f"{self.base!r}, low={describe(self.low)}, high={describe(self.high)}"


def _bounds(c) -> tuple | None:
    """(lower, upper) of a support that is an interval, a half-line or the real line."""
    if c is constraints.real:
        return -INF, INF
    if type(c) is constraints._GreaterThan:
        return c.lower, INF
    if type(c) is constraints._Interval:
        return c.lower, c.upper
    return None


def _span(bounds: list):
    """The interval spanning the intervals ``bounds`` ((lower, upper) pairs), or None where
    they leave a gap.  A side open in one of them is open; bounds of another array library
    (a gradient run's traced values) are joined by minimum and maximum — their gaps are
    checked on the trace's values, with NumPy, before a gradient kernel's step."""
    los, his = [b[0] for b in bounds], [b[1] for b in bounds]
    if any(is_foreign(v) for v in los + his):
        xp = namespace(*los, *his)

        def side(values, inf, join, fixed):
            if any(not is_foreign(v) and all_true(np.asarray(v) == inf) for v in values):
                return inf
            if not any(is_foreign(v) for v in values):  # (this side's bounds: NumPy)
                out = fixed(np.broadcast_arrays(*(np.asarray(v, float) for v in values)), 0)
                return float(out) if out.ndim == 0 else out
            return _fold(join, values)

        return constraints.interval(side(los, -INF, xp.minimum, np.min),
                                    side(his, INF, xp.maximum, np.max))
    lo = np.stack(np.broadcast_arrays(*(np.asarray(v, float) for v in los + his)), -1)
    lo, hi = lo[..., :len(los)], lo[..., len(los):]
    order = np.argsort(lo, axis=-1)
    lo, hi = np.take_along_axis(lo, order, -1), np.take_along_axis(hi, order, -1)
    reach = np.maximum.accumulate(hi, axis=-1)
    if np.any(lo[..., 1:] > reach[..., :-1]):
        return None
    lo, hi = lo[..., 0], reach[..., -1]
    return constraints.interval(float(lo) if lo.ndim == 0 else lo,
                                float(hi) if hi.ndim == 0 else hi)


def _meet(bound, inner, pick):
    """The tighter of a truncation bound and the base's support's (``pick``: max below, min
    above), entry by entry; a bound of another array library through its namespace."""
    if not (is_foreign(bound) or is_foreign(inner)):
        out = (np.maximum if pick is max else np.minimum)(np.asarray(bound, float), inner)
        return float(out) if out.ndim == 0 else out
    if not is_foreign(inner) and all_true(np.asarray(inner) == (-INF if pick is max else INF)):
        return bound  # (the base's support open on that side)
    xp = namespace(bound, inner)
    return (xp.maximum if pick is max else xp.minimum)(bound, inner)


def _fold(f, values):
    out = values[0]
    for v in values[1:]:
        out = f(out, v)
    return out


class Mixture(Distribution):
    """Finite mixture: ``x`` is drawn from ``components[k]`` with probability ``weights[k]``
    (PyMC's ``Mixture(w, comp_dists)``; NumPyro's ``MixtureGeneral``).

        log p(x) = logsumexp_k (log w_k + log p_k(x))

    ``weights`` has the components on its last axis (leading axes are batch axes) and must be
    non-negative and sum to 1.  The components must share their event shape and be all discrete
    or all continuous; each has scalar parameters or parameters of the mixture's full batch
    shape.  ``domain`` is the union of the components' domains; ``support`` joins their supports
    (see :attr:`support`).  ``mean`` / ``variance`` come
    from the components'; ``cdf``, ``sf`` and their logs too when every component has them
    (so a mixture can be truncated, though not sampled truncated: it has no ``icdf``).  The
    weights and the components' parameters may be JAX arrays (a gradient kernel's): invalid
    weights, or an invalid component, give ``-inf``.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Mixture([0.3, 0.7], [dist.Normal(-2.0, 1.0), dist.Normal(2.0, 0.5)])
    >>> round(d.log_prob(0.0), 6), round(d.mean, 6)  # log(0.3 φ(2) + 0.7 φ(4) / 0.5)
    (-4.11141, 0.8)
    """

    _scalar = False  # weights of shape (K,), univariate components with scalar parameters
    _xp = None  # the namespace of array-API (JAX) weights or components' parameters
    array_api = True

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
        if holds_foreign(weights) or any(type(c.batch_shape) is ArrayAPIShape
                                         or c._valid is not None for c in comps):  # (array API)
            return self._init_array_api(weights, comps)
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

    def _init_array_api(self, weights, comps):
        """Weights or components' parameters of another library (JAX): where they are invalid
        is recorded (``_valid``), not raised."""
        xp = namespace(*entries(weights))
        if xp is np:
            xp = _namespace_of(*comps)
        w = asfloat(xp, weights)
        if w.ndim == 0 or w.shape[-1] != len(comps):
            self._fail(f"weights must have one entry per component ({len(comps)}) on its last "
                       f"axis, got an array of shape {tuple(w.shape)}")
            return
        shapes = [tuple(c.batch_shape) for c in comps]
        try:
            batch = np.broadcast_shapes(tuple(w.shape[:-1]), *shapes)
        except ValueError:
            self._fail(f"weights shape {tuple(w.shape)} and component batch shapes "
                       f"{', '.join(map(str, shapes))} do not broadcast")
            return
        for j, shape in enumerate(shapes):
            if shape and shape != batch:
                self._fail(f"components[{j}] has batch shape {shape} but the mixture's batch "
                           f"shape is {batch}; give each component scalar parameters or "
                           "parameters of the full batch shape")
                return
        self._invalid_unless(xp.all(w >= 0, axis=-1) & (xp.abs(xp.sum(w, axis=-1) - 1.0) < 1e-6))
        for c in comps:
            if c._valid is not None:
                self._invalid_unless(c._valid)
        self.weights, self.batch_shape, self._xp = w, ArrayAPIShape(batch), xp
        self.event_shape = tuple(comps[0].event_shape)
        self.is_discrete = bool(comps[0].is_discrete)
        self.domain = constraints.union(*(c.domain for c in comps))
        self._log_w = xp.log(w)

    @property
    def support(self):
        """The components' supports joined: the one set they all are; where they are intervals
        (half-lines, the real line) that overlap or touch, entry by entry, the interval
        spanning them, onto which a gradient kernel's transform maps; otherwise (a gap
        between them) their union, which has no transform: a gradient kernel's trajectories
        cannot cross a gap of zero density, and it refuses the choice.  A discrete mixture:
        its domain."""
        parts = [c.support for c in self.components]
        if self.is_discrete or not parts or all(p is parts[0] for p in parts):
            return parts[0] if parts and not self.is_discrete else self.domain
        bounds = [_bounds(p) for p in parts]
        hull = None if any(b is None for b in bounds) else _span(bounds)
        return constraints.union(*parts) if hull is None else hull

    # -- density ---------------------------------------------------------------------------
    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if self._scalar and (t is float or t is int):
            terms = [lw + c.log_prob(value) for lw, c in zip(self._log_w_list, self.components)]
            m = max(terms)
            if not -INF < m < INF:
                return m
            return m + math.log(math.fsum(math.exp(s - m) for s in terms))
        if takes_foreign(self, value):
            xp = self._xp or namespace(value)
            lp = self._xp_logsumexp(xp, [c.log_prob(value) for c in self.components])
            return finish(xp, self, lp)
        return self._logsumexp([c.log_prob(value) for c in self.components])

    def _xp_logsumexp(self, xp, per_component):
        """:meth:`_logsumexp` on the array API."""
        terms = xp.broadcast_arrays(*(asfloat(xp, t) for t in per_component))
        return special(xp).logsumexp(xp.stack(terms, axis=-1) + self._log_w, axis=-1)

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

    @property
    def array_api_cdf(self) -> bool:
        """Whether every component's cdf is written against the array API."""
        return all(getattr(c, "array_api_cdf", False) for c in self.components)

    def _xp_log_cdf(self, xp, x):
        return self._xp_logsumexp(xp, [c._xp_log_cdf(xp, x) for c in self.components])

    def _xp_log_sf(self, xp, x):
        return self._xp_logsumexp(xp, [c._xp_log_sf(xp, x) for c in self.components])

    def _params_repr(self):
        comps = ", ".join(repr(c) for c in self.components)
        return f"weights={describe(self.weights)}, components=[{comps}]"
