"""Checks of the arguments of thrifty's functions: an invalid one is an
:class:`~thrifty.errors.ArgumentError` naming the function and the argument, never a value
silently rounded (``batch_size=2.5`` → 2), a ``bool`` taken for an int or an infinite scale."""

from __future__ import annotations

import difflib
import functools
import inspect
import numbers
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numpy as np

from thrifty.errors import ArgumentError

P = ParamSpec("P")
R = TypeVar("R")


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


# Names other libraries give thrifty's arguments (PyMC's ``pm.sample``, NumPyro's ``MCMC``,
# Stan's and Pyro's): an unknown keyword that is one of these says which argument it is here.
_ALIASES = {
    "num_samples": ("draws", "n_samples", "num_draws", "n_draws", "samples", "iter",
                    "iterations", "n_iter", "niter", "num_iter"),
    "burn_in": ("tune", "warmup", "num_warmup", "n_warmup", "warmup_steps", "burnin", "burn",
                "n_burnin", "num_burnin", "iter_warmup"),
    "seed": ("random_seed", "rng_seed", "rng_key", "random_state", "rng"),
    "chains": ("num_chains", "n_chains", "chain"),
    "workers": ("cores", "n_jobs", "num_workers", "jobs", "processes", "parallel_chains"),
    "kernel": ("step", "sampler", "method", "algorithm"),
    "init": ("initvals", "init_params", "initial_values", "inits", "init_values", "start"),
    "progress": ("progressbar", "progress_bar", "show_progress", "refresh"),
    "thin": ("thinning", "num_thin", "n_thin", "thin_to"),
    "particles": ("num_particles", "n_particles"),
    "num_steps": ("num_leapfrog", "n_leapfrog", "leapfrog_steps", "path_length"),
}
_ALIAS_OF = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}


def checked_keywords(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` whose unknown keyword arguments are an :class:`ArgumentError` naming the
    argument and, when it is another library's name of one of ``fn``'s or close to one, that
    one (``draws`` → ``num_samples``, ``tune`` → ``burn_in``); Python's own ``TypeError``
    names only the argument.  The signature is ``fn``'s (``inspect`` and the docs read it).

    >>> @checked_keywords
    ... def infer(program, num_samples=1000, burn_in=None):
    ...     return num_samples
    >>> infer(None, draws=10)
    Traceback (most recent call last):
    ...
    thrifty.errors.ArgumentError: infer: no argument named 'draws'; did you mean num_samples=?
    """
    names = tuple(inspect.signature(fn).parameters)
    known = frozenset(names)
    where = fn.__name__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not known.issuperset(kwargs):
            _unknown_keyword(where, next(k for k in kwargs if k not in known), names)
        return fn(*args, **kwargs)

    return call


def _unknown_keyword(where: str, key: str, names: tuple) -> None:
    meant = _ALIAS_OF.get(key)
    if meant not in names:
        close = difflib.get_close_matches(key, names, 1)
        meant = close[0] if close else None
    hint = f"; did you mean {meant}=?" if meant else f" (its arguments: {', '.join(names)})"
    raise ArgumentError(f"{where}: no argument named {key!r}{hint}")
