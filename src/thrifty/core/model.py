"""``@th.model`` and programs (a model applied to its arguments)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np


class Model:
    """A probabilistic model: a Python function that calls ``th.sample``, ``th.observe``, ….

    Calling a model does not run it: ``model(*args)`` returns a :class:`Program`, which
    ``th.infer`` and friends execute.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def coin(flips):
    ...     p = th.sample("p", dist.Beta(1.0, 1.0))
    ...     with th.plate("flips", len(flips)) as i:
    ...         th.observe("y", dist.Bernoulli(p), flips[i])
    ...     return p
    >>> coin([1, 0, 1])
    Program(coin, 1 argument)
    """

    def __init__(self, fn: Callable):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Program:
        return Program(self, args, kwargs, self.__name__)

    def __repr__(self) -> str:
        return f"Model({self.__name__})"

    def __reduce__(self):
        # ``@th.model`` replaces the function in its module by the Model, so pickle the Model by
        # reference (module and qualified name), as pickle does for functions.
        return (_import, (self.__module__, self.__qualname__))


def _import(module: str, qualname: str):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class Program:
    """A model together with its arguments: what inference runs.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m(y):
    ...     th.observe("y", dist.Normal(th.sample("mu", dist.Normal(0.0, 1.0)), 1.0), y)
    >>> prog = m(0.3)                 # a Program: the model applied to its data
    >>> type(prog).__name__, prog.name
    ('Program', 'm')
    """

    def __init__(self, fn: Callable, args: tuple = (), kwargs: dict | None = None, name=None):
        self.model = fn if isinstance(fn, Model) else None
        self.fn = fn.fn if isinstance(fn, Model) else fn
        self.args = tuple(as_data(a) for a in args)
        self.kwargs = {k: as_data(v) for k, v in (kwargs or {}).items()}
        self.name = name or getattr(fn, "__name__", "program")

    def __repr__(self) -> str:
        n = len(self.args) + len(self.kwargs)
        return f"Program({self.name}, {n} argument{'s' if n != 1 else ''})"

    def __reduce__(self):
        return (Program, (self.model or self.fn, self.args, self.kwargs, self.name))


def as_data(x):
    """An argument of a program, as the model will read it: data are read *by position*.

    * array-likes that are not NumPy arrays — pandas Series / DataFrames, xarray objects,
      anything with ``to_numpy()`` or ``__array__`` — become NumPy arrays (a pandas Series
      indexed 3, 1, 2 is read as its values in order, never by label);
    * lists and tuples of numbers (or of equal-length lists of numbers) become NumPy arrays,
      so ``y[i]`` works for the index arrays of plates;
    * everything else (scalars, NumPy arrays, dicts, lists of other objects) is passed as is.
    """
    if isinstance(x, np.ndarray) or x is None or isinstance(x, (str, bytes, dict)):
        return x
    if isinstance(x, (list, tuple)):
        if not x or not all(isinstance(v, (int, float, bool, np.number, list, tuple))
                            for v in x):
            return x
        try:
            a = np.asarray(x)
        except ValueError:  # ragged
            return x
        return a if a.dtype.kind in "biuf" else x
    to_numpy = getattr(x, "to_numpy", None)
    if callable(to_numpy) and not isinstance(x, (int, float, complex, np.generic)):
        return np.asarray(to_numpy())
    if hasattr(x, "__array__") and not isinstance(x, (int, float, complex, np.generic)):
        return np.asarray(x)
    return x


def model(fn: Callable) -> Model:
    """Decorator turning a Python function into a :class:`Model`.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def coin(flips):
    ...     p = th.sample("p", dist.Beta(1.0, 1.0))
    ...     with th.plate("flips", len(flips)) as i:
    ...         th.observe("y", dist.Bernoulli(probs=p), flips[i])
    >>> r = th.infer(coin([1, 0, 1, 1]), th.mh("p", th.drift(0.2)), num_samples=500, seed=0,
    ...              progress=False)
    >>> r["p"].shape
    (1, 500)
    """
    return Model(fn)


def as_program(program) -> Program:
    """Accept a Program, or a Model / plain function of no arguments."""
    if isinstance(program, Program):
        return program
    if isinstance(program, Model):
        import inspect

        try:
            inspect.signature(program.fn).bind()
        except TypeError:
            raise TypeError(
                f"got the model {program.__name__!r} itself; apply it to its arguments first: "
                f"{program.__name__}(...) (a program is a model applied to its data)"
            ) from None
        return program()
    if callable(program):
        return Program(program, (), {}, getattr(program, "__name__", None))
    raise TypeError(f"expected a program (a @th.model applied to its arguments), got {program!r}")
