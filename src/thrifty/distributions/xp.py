"""Array namespaces for the array paths of ``log_prob``: NumPy, or any array-API library (JAX).

The families' array formulas are written once against a namespace ``xp``: :func:`namespace`
returns ``numpy`` for NumPy arrays and Python or NumPy scalars (the default, at the cost of a
few type checks) and the array-API namespace of any other array (``jax.numpy`` for JAX arrays
and tracers, through ``array_api_compat``).  The array API has no special functions, so
:func:`special` dispatches them per namespace: ``scipy.special`` for NumPy,
``jax.scipy.special`` for JAX.

Parameters given as arrays of another namespace cannot be validated by raising (under
``jax.jit`` their values are not known): the family records where they are invalid
(``Distribution._valid``) and :func:`finish` makes the log-density ``-inf`` there, so a
gradient kernel's trajectory into invalid parameters is a rejected (divergent) one.

>>> import numpy as np
>>> from thrifty.distributions.xp import namespace, special
>>> namespace(np.ones(2), 1.0) is np
True
>>> float(special(np).gammaln(4.0))  # log 3!
1.791759469228055
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as _scipy_special
from array_api_compat import array_namespace

_NUMPY_TYPES = frozenset(
    (np.ndarray, float, int, bool, np.float64, np.float32, np.int64, np.int32, np.bool_,
     list, tuple, type(None))
)


def is_foreign(x) -> bool:
    """Whether ``x`` is an array of a library other than NumPy (a JAX array or tracer)."""
    t = type(x)
    return t not in _NUMPY_TYPES and not isinstance(x, (np.ndarray, np.generic)) and hasattr(
        x, "__array_namespace__")


class ArrayAPIShape(tuple):
    """The batch shape of a family with array-API parameters: a tuple that is never false, so
    that ``if not self.batch_shape`` (the families' scalar paths, written with ``math`` for
    Python floats) sends every value to the array path, even for 0-d parameters."""

    def __bool__(self) -> bool:
        return True


def holds_foreign(x) -> bool:
    """Whether ``x`` is an array of another library or a list or tuple with one among its
    entries (``[w, 1 - w]`` of a traced ``w``)."""
    t = type(x)
    if t is list or t is tuple:
        return any(map(is_foreign, x))
    return is_foreign(x)


def entries(x) -> tuple:
    """The entries of a list or tuple ``x`` (for :func:`namespace`), else ``(x,)``."""
    return tuple(x) if type(x) is list or type(x) is tuple else (x,)


def takes_foreign(d, value) -> bool:
    """Whether ``d.log_prob(value)`` must take the array-API path: ``d`` has array-API
    parameters or ``value`` is an array of another library (two type checks otherwise)."""
    return type(d.batch_shape) is ArrayAPIShape or (
        type(value) is not np.ndarray and is_foreign(value))


def namespace(*xs):
    """``numpy``, unless one of ``xs`` is an array of another library: then its namespace."""
    for x in xs:
        if type(x) in _NUMPY_TYPES:
            continue
        if is_foreign(x):
            return array_namespace(x)
    return np


class _JaxSpecial:
    """The special functions the families use, from ``jax.scipy.special`` / ``jax.nn``."""

    def __init__(self):
        import jax
        import jax.scipy.special as jss

        self.gammaln = jss.gammaln
        self.betaln = self._betaln
        self._jax_betaln = jss.betaln
        self.xlogy = jss.xlogy
        self.xlog1py = jss.xlog1py
        self.expit = jss.expit
        self.log_expit = jax.nn.log_sigmoid
        self.logsumexp = jss.logsumexp
        self.log_ndtr = jss.log_ndtr
        self.erf = jss.erf
        self.gammainc = jss.gammainc
        self.gammaincc = jss.gammaincc
        self.betainc = jss.betainc

    def _betaln(self, a, b):
        """``log B(a, b)`` to ~1e-11 where ``a + b < 1e3`` (three log-gammas, as the scalar
        path :func:`thrifty.distributions._special.betaln` computes it), JAX's ``betaln`` above:
        JAX's own is off by up to 1.3e-6 where the larger argument is near 8 (where it switches
        formulas), more than the rounding by which a gradient kernel's density may differ from
        the engine's (:data:`thrifty.inference.gradient.hmc.ROUNDING`)."""
        import jax.numpy as jnp

        a, b = jnp.asarray(a), jnp.asarray(b)
        three = self.gammaln(a) + self.gammaln(b) - self.gammaln(a + b)
        return jnp.where(a + b < 1e3, three, self._jax_betaln(a, b))


_SPECIAL: dict = {}


def special(xp):
    """The special functions for namespace ``xp`` (``gammaln``, ``betaln``, ``xlogy``,
    ``xlog1py``, ``expit``, ``log_expit``, ``logsumexp``, ``log_ndtr``, ``erf``, ``gammainc``,
    ``gammaincc``, ``betainc``; JAX differentiates ``betainc`` in ``x`` only)."""
    if xp is np:
        return _scipy_special
    sp = _SPECIAL.get(xp.__name__)
    if sp is None:
        if not xp.__name__.startswith("jax"):
            raise TypeError(f"thrifty's distributions have no special functions for the array "
                            f"library {xp.__name__} (NumPy and JAX are supported)")
        sp = _SPECIAL[xp.__name__] = _JaxSpecial()
    return sp


def asfloat(xp, x):
    """``x`` as a float64 array of namespace ``xp``."""
    if xp is np:
        return np.asarray(x, dtype=float)
    return xp.asarray(x, dtype=xp.float64)


SUMMED: list = []  # the distributions whose log-densities a gradient run is summing


def finish(xp, d, lp, masked: bool = False):
    """The end of an array path: NaN (a NaN value, off the support) becomes ``-inf`` — unless
    ``masked``: the formula already gave ``-inf`` off the support (``where(ok, lp, -inf)``) —,
    and so does every element where ``d``'s array-API parameters are invalid; a 0-d NumPy
    result becomes a Python float (the package's convention).

    A gradient run that sums ``d``'s log-density (``d`` last in ``SUMMED``) gets it as the
    formula gave it: it applies NaN and ``d._valid`` to its total, once (a select per element
    and site doubles what XLA compiles).  Distributions ``d`` calls (a mixture's components)
    are finished here as always."""
    if xp is np:
        if not masked:
            lp = np.fmax(lp, -np.inf)
        return float(lp) if lp.ndim == 0 else lp
    if SUMMED and SUMMED[-1] is d:
        return lp
    lp = xp.where(xp.isnan(lp), -math.inf, lp)
    valid = d._valid
    if valid is not None:
        lp = xp.where(valid, lp, -math.inf)
    return lp
