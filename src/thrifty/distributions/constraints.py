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


def interval(lower, upper) -> Constraint:
    return _Interval(lower, upper)


def integer_interval(lower, upper) -> Constraint:
    return _IntegerInterval(lower, upper)


def greater_than(lower) -> Constraint:
    return _GreaterThan(lower)
