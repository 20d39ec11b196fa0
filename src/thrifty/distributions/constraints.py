"""Supports of distributions: sets with a vectorized membership test.

A constraint answers ``check(x)`` with a boolean (array) of the shape of ``x`` minus the event
dimensions.  ``Distribution.domain`` is the parameter-free support of a family (used to reject
observations that no parameter value could explain); ``Distribution.support`` may depend on the
parameters (``Uniform(a, b).support`` is ``interval(a, b)``).
"""

from __future__ import annotations

import numpy as np


class Constraint:
    """A set of values.  ``event_dim`` is the number of trailing dimensions of one value."""

    event_dim = 0
    is_discrete = False

    def check(self, x):
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_")


class _Real(Constraint):
    def check(self, x):
        x = np.asarray(x)
        return np.isfinite(x) if x.dtype.kind in "fc" else np.ones(x.shape, bool)

    def __repr__(self) -> str:
        return "real"


class _GreaterThan(Constraint):
    def __init__(self, lower, strict=True):
        self.lower, self.strict = lower, strict

    def check(self, x):
        x = np.asarray(x)
        ok = (x > self.lower) if self.strict else (x >= self.lower)
        return ok & ~np.isinf(x)

    def __repr__(self) -> str:
        return f"({self.lower}, inf)" if self.strict else f"[{self.lower}, inf)"


class _Interval(Constraint):
    def __init__(self, lower, upper, closed=(True, True)):
        self.lower, self.upper, self.closed = lower, upper, closed

    def check(self, x):
        x = np.asarray(x)
        lo = (x >= self.lower) if self.closed[0] else (x > self.lower)
        hi = (x <= self.upper) if self.closed[1] else (x < self.upper)
        return lo & hi

    def __repr__(self) -> str:
        left = "[" if self.closed[0] else "("
        right = "]" if self.closed[1] else ")"
        return f"{left}{self.lower}, {self.upper}{right}"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def check(self, x):
        x = np.asarray(x)
        return (x == np.floor(x)) & (x >= self.lower) & (x <= self.upper)

    def __repr__(self) -> str:
        return f"{{{self.lower}, ..., {self.upper}}}"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, x):
        x = np.asarray(x, float)
        return np.all(x >= 0, axis=-1) & (np.abs(x.sum(-1) - 1.0) < 1e-6)

    def __repr__(self) -> str:
        return "simplex"


class _RealVector(Constraint):
    event_dim = 1

    def check(self, x):
        return np.all(np.isfinite(np.asarray(x, float)), axis=-1)

    def __repr__(self) -> str:
        return "real_vector"


class _NonnegativeIntegerVector(Constraint):
    """Vectors of non-negative integers (the counts of a multinomial)."""

    event_dim = 1
    is_discrete = True

    def check(self, x):
        x = np.asarray(x, float)
        return np.all((x >= 0) & (x == np.floor(x)) & (x < np.inf), axis=-1)

    def __repr__(self) -> str:
        return "nonnegative_integer_vector"


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower triangular, positive diagonal,
    rows of unit Euclidean norm (within 1e-6)."""

    event_dim = 2

    def check(self, x):
        x = np.asarray(x, float)
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            return np.zeros(x.shape[:-2], bool)
        upper = np.triu(np.ones(x.shape[-2:], bool), 1)
        lower_ok = np.all(np.where(upper, x == 0, True), axis=(-2, -1))
        diag_ok = np.all(np.diagonal(x, axis1=-2, axis2=-1) > 0, axis=-1)
        norm_ok = np.all(np.abs((x * x).sum(-1) - 1.0) < 1e-6, axis=-1)
        return lower_ok & diag_ok & norm_ok

    def __repr__(self) -> str:
        return "corr_cholesky"


class _PositiveDefinite(Constraint):
    """Symmetric positive-definite matrices (finite)."""

    event_dim = 2

    def check(self, x):
        x = np.asarray(x, float)
        if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
            return np.zeros(x.shape[:-2], bool)
        finite = np.all(np.isfinite(x), axis=(-2, -1))
        sym = np.all(np.abs(x - np.swapaxes(x, -1, -2)) <= 1e-10 * (1 + np.abs(x)), axis=(-2, -1))
        safe = np.where((finite & sym)[..., None, None], x, np.eye(x.shape[-1]))
        return finite & sym & (np.linalg.eigvalsh(safe)[..., 0] > 0)

    def __repr__(self) -> str:
        return "positive_definite"


class _Union(Constraint):
    """The union of constraints with the same event dimension (the support of a mixture)."""

    def __init__(self, parts):
        self.parts = tuple(parts)
        self.event_dim = self.parts[0].event_dim
        self.is_discrete = all(c.is_discrete for c in self.parts)

    def check(self, x):
        out = self.parts[0].check(x)
        for c in self.parts[1:]:
            out = out | c.check(x)
        return out

    def __repr__(self) -> str:
        return " | ".join(repr(c) for c in self.parts)


class _Any(Constraint):
    def check(self, x):
        return np.ones(np.shape(x), bool)

    def __repr__(self) -> str:
        return "any"


real = _Real()
real_vector = _RealVector()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThan(0.0, strict=False)
unit_interval = _Interval(0.0, 1.0)
open_unit_interval = _Interval(0.0, 1.0, closed=(False, False))
boolean = _IntegerInterval(0, 1)
nonnegative_integer = _IntegerInterval(0, np.inf)
positive_integer = _IntegerInterval(1, np.inf)
integer = _IntegerInterval(-np.inf, np.inf)
simplex = _Simplex()
any_value = _Any()
nonnegative_integer_vector = _NonnegativeIntegerVector()
corr_cholesky = _CorrCholesky()
positive_definite = _PositiveDefinite()


def interval(lower, upper) -> Constraint:
    return _Interval(lower, upper)


def integer_interval(lower, upper) -> Constraint:
    return _IntegerInterval(lower, upper)


def greater_than(lower) -> Constraint:
    return _GreaterThan(lower)


def union(*parts: Constraint) -> Constraint:
    """The union of ``parts`` (duplicates dropped; one distinct part is returned as it is)."""
    distinct = []
    for c in parts:
        if not any(c is d for d in distinct):
            distinct.append(c)
    return distinct[0] if len(distinct) == 1 else _Union(distinct)
