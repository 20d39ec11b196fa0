"""The ``Distribution`` base class and the conventions every family follows.

Conventions (every family in this package keeps them):

* Parameters are stored as Python ``float`` when every parameter is a scalar (the fast path:
  ``math`` functions, no NumPy dispatch) and as broadcast NumPy arrays otherwise.
  ``batch_shape`` is the broadcast shape of the parameters; ``event_shape`` the shape of one value.
* ``sample(rng, shape=())`` returns an array of shape ``shape + batch_shape + event_shape`` (a
  Python ``float``/``int`` when that shape is ``()``).  ``rng`` is a ``numpy.random.Generator``.
* ``log_prob(x)`` broadcasts ``x`` against the batch shape, returns a Python ``float`` for scalar
  input and parameters and an array otherwise, and returns ``-inf`` (never raises, never NaN) for
  values outside the support -- including NaN and infinite values, and non-integers for discrete
  families.  The scalar path uses ``math``; the array path NumPy / ``scipy.special`` ufuncs; never
  ``scipy.stats``.
* Invalid parameters are reported through ``self._fail(message)``: outside a program run it raises
  ``DistributionError`` at once; inside a run the error is kept and raised by ``th.sample`` /
  ``th.observe``, which add the address.  Messages name the parameter and its value
  (``"rate must be positive, got -1.0"``); build them only once a check has failed (the
  ``_check_*`` helpers do), since constructors run in inference inner loops.
* ``domain`` is the parameter-free support of the family (an observation outside it can never be
  explained); ``support`` may depend on the parameters.
"""

from __future__ import annotations

import math

import numpy as np

from thrifty import _context
from thrifty.distributions import constraints
from thrifty.distributions.xp import ArrayAPIShape, is_foreign, namespace
from thrifty.errors import DistributionError

LOG_2PI = math.log(2.0 * math.pi)
HALF_LOG_2PI = 0.5 * LOG_2PI
_SCALARS = (float, int)
# NumPy scalars a value may arrive as (``y[t]`` of a data array) → the Python type log_prob
# takes them as, on its fast scalar path: ``float(x)`` is the value ``x.item()`` gives, at a
# tenth of its cost (NumPy 2's ``item`` on a scalar goes through an array)
NP_SCALARS = {np.float64: float, np.float32: float, np.int64: int, np.int32: int,
              np.bool_: bool}
# the shape of the values of one plate element executed alone (Gibbs or MH on an element):
# log_prob takes them on a path of Python floats, the same operations as its array path
ONE = (1,)
# −∞ as a read-only 0-d array: the floor ``np.fmax(lp, OFF_SUPPORT, out=lp)`` that sends a NaN
# log-density (a NaN value) off the support, without converting a Python float at every call
OFF_SUPPORT = np.array(-math.inf)
OFF_SUPPORT.flags.writeable = False


def is_scalar(x) -> bool:
    """True for Python and NumPy scalars and 0-d arrays."""
    t = type(x)
    return t is float or t is int or np.ndim(x) == 0


def as_params(*params, owner: Distribution | None = None):
    """Convert parameters: all-scalar → Python floats and shape ``()``; else broadcast arrays.

    Returns ``(params, batch_shape)``.  Shapes that do not broadcast are reported through
    ``owner._fail`` when an owner is given (the parameters then fall back to scalars so that a
    deferred error leaves a usable object), else raised as ``DistributionError``.
    """
    out = []
    for p in params:  # (the scalar case: no NumPy)
        t = type(p)
        if t is float:
            out.append(p)
        elif t is int or t is np.float64:
            out.append(float(p))
        else:
            break
    else:
        return tuple(out), ()
    fast = _float_arrays(params)  # (the usual batch case: float64 arrays of one shape, scalars)
    if fast is not None:
        return fast
    if any(is_foreign(p) for p in params):
        return _foreign_params(params, owner)
    arrays = [np.asarray(p) for p in params]
    if any(a.dtype.kind == "c" for a in arrays):  # (float() would drop the imaginary part)
        message = "parameters must be real numbers, got a complex value"
        if owner is None:
            raise DistributionError(message)
        owner._fail(message)
        arrays = [a.real for a in arrays]
    arrays = [a.astype(float, copy=False) for a in arrays]
    if all(a.ndim == 0 for a in arrays):
        return tuple(float(a) for a in arrays), ()
    shape = arrays[0].shape
    if all(a.shape == shape for a in arrays):  # nothing to broadcast (one array parameter, say)
        return tuple(arrays), shape
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        message = f"parameter shapes {shapes} do not broadcast"
        if owner is None:
            raise DistributionError(message) from None
        owner._fail(message)
        return tuple(float(a.flat[0]) if a.size else math.nan for a in arrays), ()
    # 0-d parameters stay Python floats (they broadcast in every formula; a broadcast copy
    # costs more than the formula on small batches)
    return tuple(
        float(a) if a.ndim == 0 else a if a.shape == shape else np.broadcast_to(a, shape)
        for a in arrays
    ), shape


def owned(p):
    """A NumPy array parameter as the distribution's own copy (anything else as it is): for the
    parameters a family's ``support`` reads, which the engine asks for after the site executed
    (a gradient kernel's bijection, Gibbs's enumeration) — by then the model may have filled the
    array it passed again (one buffer for every step of a chain, or for two sites)."""
    return p.copy() if type(p) is np.ndarray else p


def _foreign_params(params, owner):
    """``as_params`` for parameters some of which are arrays of another array-API library (JAX
    arrays or tracers, in a gradient run): each becomes a float64 array of that namespace
    (Python scalars stay floats) and nothing is validated by raising — the family's checks
    record where the parameters are invalid (``Distribution._valid``) instead."""
    xp = namespace(*params)
    if owner is not None and not type(owner).array_api:
        raise not_array_api(owner, xp)
    out = []
    for p in params:
        t = type(p)
        if t is float or t is int or isinstance(p, np.generic) or (t is np.ndarray and not p.ndim):
            out.append(float(p))
        else:
            out.append(xp.asarray(p, dtype=xp.float64))
    shape = np.broadcast_shapes(*(getattr(p, "shape", ()) for p in out))
    return tuple(out), ArrayAPIShape(shape)


def not_array_api(owner, xp, what: str = "parameters") -> DistributionError:
    """The error for array-API (JAX) arrays given where a family takes NumPy only."""
    return DistributionError(
        f"{type(owner).__name__} takes no {xp.__name__} arrays as {what} (its log-density is "
        "written for NumPy only), so a gradient kernel cannot differentiate through it; update "
        "the choices it depends on with another kernel (th.mh, th.gibbs)")





def _float_arrays(params):
    """``as_params`` for parameters that are Python scalars and float64 arrays of one shape, at
    least one of them with ``ndim >= 1`` (what a batch of particles or plate elements passes):
    nothing to convert or broadcast.  None for anything else."""
    out, shape = [], None
    for p in params:
        t = type(p)
        if t is float or t is int or t is np.float64:
            out.append(float(p))
        elif t is np.ndarray and p.dtype is _F64 and p.ndim:
            if shape is None:
                shape = p.shape
            elif p.shape != shape:
                return None
            out.append(p)
        else:
            return None
    return (tuple(out), shape) if shape is not None else None


_F64 = F64 = np.dtype(np.float64)


def scalar_or_array(x):
    """A Python ``float`` for a 0-d result (the convention for scalar input), else the array
    (an array of another library, a JAX array, as it is)."""
    if type(x) is not np.ndarray and is_foreign(x):
        return x
    return float(x) if np.ndim(x) == 0 else x


def is_integral(x):
    """Elementwise: finite and integer-valued (a Python ``bool`` for a Python ``float``)."""
    if type(x) is float:
        return x.is_integer()
    x = np.asarray(x, dtype=float)
    return np.isfinite(x) & (x == np.floor(x))


def describe(x) -> str:
    """A short text for a parameter value in an error message."""
    if is_scalar(x):
        return repr(float(x)) if not isinstance(x, (bool, np.bool_)) else repr(bool(x))
    x = np.asarray(x)
    if x.size <= 6:
        return np.array2string(x, precision=4, separator=", ")
    return f"array of shape {x.shape}"


def all_true(cond) -> bool:
    """``bool(np.all(cond))`` with a fast path for Python booleans."""
    return cond if type(cond) is bool else bool(np.all(cond))


# reductions called as ufunc methods (``a.sum()`` goes through two Python-level wrappers)
_MIN, _MAX, _SUM = np.minimum.reduce, np.maximum.reduce, np.add.reduce


def _says_members(cls) -> bool:
    """Whether the family says how its entries are constructed (a subclass may construct
    itself otherwise than its parent: it says so again)."""
    own = cls.__dict__
    return "_member_params" in own or "_member_others" in own or "_member_args" in own


class Distribution:
    """Base class of thrifty's distributions (see the module docstring for the conventions)."""

    event_shape: tuple = ()
    batch_shape: tuple = ()
    is_discrete: bool = False
    has_enumerate_support: bool = False
    coupled: bool = False  # draws coupled across plate elements (th.CRP, collapsed families)
    # the support depends on the parameters' values (bounds, a count, a point): entries of a
    # batch may have different supports, so one element's distribution does not give another's.
    # A family that defines its own support or enumeration varies unless it says otherwise
    # (__init_subclass__: Uniform, Binomial, DiscreteUniform, Truncated, Delta; Bernoulli and
    # Categorical say not): a new family is never assumed to share one support across a batch
    support_varies: bool = False
    domain: constraints.Constraint = constraints.real
    _error: str | None = None
    # the family's array path is written against the array API (it takes JAX arrays)
    array_api: bool = False
    # array-API parameters: where they are valid (None: everywhere); see thrifty.distributions.xp
    _valid = None
    # set while :meth:`member` constructs an entry of a batch whose parameters passed the
    # checks: each check holds entry by entry, so the checks below that compute are skipped
    _entry_of_valid = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        own = cls.__dict__
        if "support_varies" not in own and ("support" in own or "enumerate_support" in own):
            cls.support_varies = True
        cls._plain_members = _says_members(cls) and cls._member_args is Distribution._member_args

    # the family's entries are built by the base :meth:`_member_args` from its own
    # ``_member_params`` (set for each family: __init_subclass__)
    _plain_members = False

    # -- validation ---------------------------------------------------------------------------
    def _fail(self, message: str) -> None:
        if _context.EXECUTIONS.runs:
            if self._error is None:
                self._error = message
            return
        raise DistributionError(f"{type(self).__name__}: {message}")

    def _check(self, ok, message: str) -> None:
        if type(ok) is not bool and is_foreign(ok):
            self._invalid_unless(ok)
        elif not all_true(ok):
            self._fail(message)

    def _invalid_unless(self, ok) -> None:
        """Array-API parameters: record that the density is 0 where ``ok`` fails."""
        self._valid = ok if self._valid is None else self._valid & ok

    def _check_positive(self, name: str, value) -> None:
        """``value > 0`` and finite (NaN fails), elementwise."""
        if self._entry_of_valid:
            return
        t = type(value)
        if t is not float and t is not np.ndarray and is_foreign(value):
            return self._invalid_unless((value > 0) & (value < math.inf))
        if t is np.ndarray and value.shape == ONE and value.dtype.kind == "f":
            if not 0 < value.item() < math.inf:  # (one element: no reductions)
                self._fail(f"{name} must be {'finite' if value.item() > 0 else 'positive'}, "
                           f"got {describe(value)}")
            return
        if t is np.ndarray and value.size:  # two reductions, no temporaries
            if not _MIN(value, axis=None) > 0:
                self._fail(f"{name} must be positive, got {describe(value)}")
            elif not _MAX(value, axis=None) < math.inf:
                self._fail(f"{name} must be finite, got {describe(value)}")
            return
        if not all_true(value > 0):
            self._fail(f"{name} must be positive, got {describe(value)}")
        elif not all_true(value < math.inf):
            self._fail(f"{name} must be finite, got {describe(value)}")

    def _check_nonnegative(self, name: str, value) -> None:
        """``value >= 0`` and finite (NaN fails), elementwise."""
        if self._entry_of_valid:
            return
        if type(value) is not float and is_foreign(value):
            return self._invalid_unless((value >= 0) & (value < math.inf))
        if not all_true(value >= 0):
            self._fail(f"{name} must be non-negative, got {describe(value)}")
        elif not all_true(value < math.inf):
            self._fail(f"{name} must be finite, got {describe(value)}")

    def _check_finite(self, name: str, value) -> None:
        """``value`` finite (not NaN, not ±inf), elementwise."""
        if self._entry_of_valid:
            return
        t = type(value)
        if t is not float and t is not np.ndarray and is_foreign(value):
            return self._invalid_unless(abs(value) < math.inf)
        if t is np.ndarray and value.shape == ONE and value.dtype.kind == "f":
            if not -math.inf < value.item() < math.inf:  # (one element: no reductions)
                self._fail(f"{name} must be finite, got {describe(value)}")
            return
        if t is np.ndarray and value.size:  # one reduction, no temporaries: a finite sum
            # means finite entries (NaN and ±inf propagate); a sum that is not finite (those,
            # or finite entries whose sum overflows) is decided entry by entry
            if -math.inf < _SUM(value, axis=None) < math.inf:
                return
            if not (_MIN(value, axis=None) > -math.inf and _MAX(value, axis=None) < math.inf):
                self._fail(f"{name} must be finite, got {describe(value)}")
            return
        if not all_true(abs(value) < math.inf):
            self._fail(f"{name} must be finite, got {describe(value)}")

    def _raise_if_invalid(self) -> None:
        if self._error is not None:
            raise DistributionError(f"{type(self).__name__}: {self._error}")

    # -- interface ------------------------------------------------------------------------------
    @property
    def support(self) -> constraints.Constraint:
        return self.domain

    @property
    def shape(self) -> tuple:
        return tuple(self.batch_shape) + tuple(self.event_shape)

    def sample(self, rng: np.random.Generator, shape: tuple = ()):
        raise NotImplementedError

    def log_prob(self, value):
        raise NotImplementedError

    def enumerate_support(self) -> np.ndarray:
        """The finite support as an array of shape ``(K,) + event_shape``.

        For batched parameters the values cover the union of the supports; ``log_prob`` is
        ``-inf`` where a value is outside one element's support.
        """
        raise NotImplementedError(f"{type(self).__name__} has no finite support to enumerate")

    def support_size(self) -> int:
        """The number of values :meth:`enumerate_support` gives, without building them where
        the family knows it (a ``DiscreteUniform(0, 2**62)`` is counted, not enumerated)."""
        return len(self.enumerate_support())

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} has no closed-form mean")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} has no closed-form variance")

    def in_domain(self, value) -> bool:
        """Whether ``value`` lies in the family's parameter-free support (all elements)."""
        try:
            return bool(np.all(self.domain.check(value)))
        except (TypeError, ValueError):
            return False

    # -- one entry of a batch ------------------------------------------------------------------
    # the attributes that hold the constructor's parameters (its keywords), each a Python float
    # or an array of the batch shape — what ``as_params`` stores: the families whose entries
    # :meth:`member` constructs
    _member_params: tuple[str, ...] = ()

    def member(self, j: int) -> Distribution | None:
        """The distribution of entry ``j`` of the leading batch axis — one particle's or one
        element's own, constructed from the entry's parameters as a run of that member alone
        constructs it (their checks skipped when the batch passed them: each holds entry by
        entry); the distribution itself when the parameters are shared by the batch (batch
        shape ``()``); None for a family that cannot say.

        >>> import numpy as np
        >>> from thrifty import dist
        >>> dist.Normal(np.array([0.0, 5.0]), 2.0).member(1)
        Normal(loc=5.0, scale=2.0)
        """
        bs = self.batch_shape
        if not bs:
            return self
        if type(bs) is not tuple:
            return None  # (array-API parameters: not a batch of NumPy entries)
        cls = type(self)
        k = 0 if bs[0] == 1 else j  # (an axis of 1 broadcasts)
        if cls._plain_members:  # (the base _member_args' work, without its two calls)
            args = {} if self._member_params else None
            for name in self._member_params:
                p = getattr(self, name)
                if type(p) is float:
                    args[name] = p
                elif type(p) is np.ndarray and p.ndim == len(bs):
                    args[name] = p[k]
                else:
                    args = None
                    break
        else:
            args = self._member_args(k) if _says_members(cls) else None
        if args is None or self._error is not None:
            return None if args is None else cls(**args)
        d = cls.__new__(cls)
        d._entry_of_valid = True
        d.__init__(**args)
        del d._entry_of_valid
        return d

    def has_member(self, j: int) -> bool:
        """Whether :meth:`member` gives entry ``j`` (not None), known without constructing it
        (a family with its own ``_member_args`` computes the entry's keywords)."""
        bs = self.batch_shape
        if not bs:
            return True
        if type(bs) is not tuple:
            return False
        if self._plain_members:  # (member's test of the parameters: floats, or arrays of bs)
            for name in self._member_params:
                p = getattr(self, name)
                if not (type(p) is float or (type(p) is np.ndarray and p.ndim == len(bs))):
                    return False
            return bool(self._member_params)
        return _says_members(type(self)) and self._member_args(
            0 if bs[0] == 1 else j) is not None

    def _member_args(self, k: int) -> dict | None:
        """The constructor's keywords for entry ``k`` of the leading batch axis."""
        if not self._member_params:
            return None
        return self._entry([(n, getattr(self, n)) for n in self._member_params], k)

    def _entry(self, params: list, k: int) -> dict | None:
        """``{keyword: entry k}`` of ``(keyword, parameter)`` pairs, each parameter a Python
        float (shared) or an array of the batch shape; None for anything else."""
        out = {}
        for name, p in params:
            if type(p) is float:
                out[name] = p
            elif type(p) is np.ndarray and p.ndim == len(self.batch_shape):
                out[name] = p[k]
            else:
                return None
        return out

    def _params_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._params_repr()})"
