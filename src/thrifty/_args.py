"""Checks of the arguments of thrifty's functions: an invalid one is an
:class:`~thrifty.errors.ArgumentError` naming the function and the argument, never a value
silently rounded (``batch_size=2.5`` → 2), a ``bool`` taken for an int or an infinite scale."""

from __future__ import annotations

import numbers

import numpy as np

from thrifty.errors import ArgumentError


def int_arg(where: str, name: str, value, minimum: int = 1) -> int:
    """``value`` as an int ≥ ``minimum`` (ints and NumPy integers; not bools, not floats).

    >>> int_arg("smc", "particles", 100)
    100
    >>> int_arg("smc", "particles", True)
    Traceback (most recent call last):
    ...
    thrifty.errors.ArgumentError: smc: particles must be a positive int, got True
    """
    what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ArgumentError(f"{where}: {name} must be {what}, got {value!r}")
    if value < minimum:
        raise ArgumentError(f"{where}: {name} must be {what}, got {value}")
    return int(value)


def positive_finite(where: str, name: str, value):
    """``value`` (a number or an array of numbers) as floats, each positive and finite.

    >>> positive_finite("drift", "scale", 0.5)
    0.5
    >>> positive_finite("drift", "scale", float("inf"))
    Traceback (most recent call last):
    ...
    thrifty.errors.ArgumentError: drift: scale must be positive and finite, got inf
    """
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ArgumentError(f"{where}: {name} must be a positive number, got {value!r}") from None
    if isinstance(value, (bool, np.bool_)) or not np.all((a > 0) & np.isfinite(a)):
        raise ArgumentError(f"{where}: {name} must be positive and finite, got {value!r}")
    return float(a) if a.ndim == 0 else a


def seed_arg(where: str, seed):
    """``seed`` if it is None, an int ≥ 0 (not a bool) or a ``numpy.random.SeedSequence``.

    >>> seed_arg("predictive", -1)
    Traceback (most recent call last):
    ...
    thrifty.errors.ArgumentError: predictive: seed must be >= 0, got -1
    """
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise ArgumentError(f"{where}: seed must be an int, None or a numpy.random.SeedSequence, "
                            f"got {type(seed).__name__}")
    if seed < 0:
        raise ArgumentError(f"{where}: seed must be >= 0, got {seed}")
    return seed
