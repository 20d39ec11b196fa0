"""``@th.model`` and programs (a model applied to its arguments)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from thrifty.errors import ArgumentError


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
        names = _parameter_names(self.fn)
        given = [(names[k] if k < len(names) else f"argument {k}", a)
                 for k, a in enumerate(args)]
        given += [(f"argument {k!r}", v) for k, v in (kwargs or {}).items()]
        data = [as_data(a, label) for label, a in given]
        self.args = tuple(data[: len(args)])
        self.kwargs = dict(zip(kwargs or {}, data[len(args):]))
        self.name = name or getattr(fn, "__name__", "program")
        self.converted = {  # label -> kind of the array-likes given (pandas, xarray, ...)
            label: f"{type(a).__module__.partition('.')[0]}.{type(a).__name__}"
            for (label, a), d in zip(given, data)
            if d is not a and not isinstance(a, (np.ndarray, list, tuple, dict))}
        if any(d is not a for (_, a), d in zip(given, data)):
            self._given = (args, kwargs or {})  # (read again by :meth:`current`)

    def current(self) -> Program:
        """This program, or — when an argument it converted (a list copied into an array, a
        Series) now holds other values — the model applied to its arguments as they are now:
        data changed in place between two ``th.infer`` calls are read anew whatever their
        type, as arrays are.  O(size of the converted arguments); O(1) without them."""
        given = self.__dict__.get("_given")
        if given is None:
            return self
        now = Program(self.model or self.fn, *given, self.name)
        same = _same_data((self.args, self.kwargs), (now.args, now.kwargs))
        return self if same else now

    def __repr__(self) -> str:
        n = len(self.args) + len(self.kwargs)
        return f"Program({self.name}, {n} argument{'s' if n != 1 else ''})"

    def rows_of(self, value: np.ndarray) -> list[tuple[str, int, int]]:
        """``(name, length, start)`` of each argument array ``a`` of which ``value`` holds the
        rows ``start, start + 1, ...`` — ``a[start:k]``, or ``a[start:k, j]`` and the like (the
        same memory, the same row stride, beginning at the start of a row).  Several when
        arguments share memory (``m(y[:-1], y)``): the memory cannot say which one the model
        indexed.  Arguments are the program's arrays and the arrays held in its dict, list and
        tuple arguments, as they are at the call (a dict's array may be swapped between two
        ``th.infer`` calls); O(number of them) per call.

        >>> import numpy as np, thrifty as th
        >>> y = np.arange(8.0).reshape(4, 2)
        >>> prog = th.model(lambda data: None)(y)
        >>> prog.rows_of(y[0:3, 1]), prog.rows_of(y[1:3]), prog.rows_of(np.zeros(3))
        ([("argument 'data'", 4, 0)], [("argument 'data'", 4, 1)], [])
        """
        arrays = _argument_arrays(self)
        if not arrays or value.ndim == 0:
            return []
        ptr = value.__array_interface__["data"][0]
        out = []
        for name, a_ptr, shape, strides in arrays:
            off = ptr - a_ptr
            if off < 0 or value.strides[0] != strides[0]:
                continue
            at = _element_at(off, shape, strides)
            if at is not None and at[0] + value.shape[0] <= shape[0]:
                out.append((name, shape[0], at[0]))
        return out

    def __reduce__(self):
        return (Program, (self.model or self.fn, self.args, self.kwargs, self.name),
                {"converted": self.converted})


def _argument_arrays(program) -> list[tuple]:
    """``(name, data pointer, shape, strides)`` of the arrays among the program's arguments
    (and the values of its dict, list and tuple arguments)."""
    params = program.__dict__.get("_params")
    if params is None:
        params = program._params = _parameter_names(program.fn)
    named = [(params[k] if k < len(params) else f"argument {k}", a)
             for k, a in enumerate(program.args)]
    named += [(f"argument {k!r}", a) for k, a in program.kwargs.items()]
    out = []
    for name, a in named:
        if isinstance(a, dict):
            inner = [(f"{name}[{k!r}]", v) for k, v in a.items()]
        elif isinstance(a, (list, tuple)):
            inner = [(f"{name}[{k}]", v) for k, v in enumerate(a)]
        else:
            inner = [(name, a)]
        for label, v in inner:
            if isinstance(v, np.ndarray) and v.ndim and v.strides[0] > 0:
                out.append((label, v.__array_interface__["data"][0], v.shape, v.strides))
    return out


def _same_data(a, b) -> bool:
    """Whether two converted arguments hold the same values (arrays: shape, dtype, entries)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype
                and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_data(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_data(x, y) for x, y in zip(a, b))
    return a is b


def _parameter_names(fn) -> list[str]:
    """``["argument 'y'", ...]``: the labels of ``fn``'s positional parameters."""
    import inspect

    try:
        return [f"argument {p.name!r}" for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _element_at(off: int, shape: tuple, strides: tuple) -> list | None:
    """The index ``[i, j, ...]`` of the element of an array of ``shape`` and ``strides`` at byte
    offset ``off``, or None (axes taken from the largest stride down, which decomposes the
    offset of any non-overlapping layout: C, Fortran, views)."""
    index = [0] * len(shape)
    for ax in sorted(range(len(shape)), key=lambda k: strides[k], reverse=True):
        st, n = strides[ax], shape[ax]
        if st <= 0:
            continue
        index[ax] = j = off // st
        if j >= n:
            return None
        off -= j * st
    return index if off == 0 else None


def as_data(x, name: str = "argument", depth: int = 0):
    """An argument of a program (``name`` in errors), as the model will read it: data are read
    *by position*.

    * array-likes that are not NumPy arrays — pandas Series / DataFrames, xarray objects,
      anything with ``to_numpy()`` or ``__array__`` — become NumPy arrays (a pandas Series
      indexed 3, 1, 2 is read as its values in order, never by label), and so do those held
      in dicts, lists and tuples (``m({"y": series})``);
    * lists and tuples of numbers or 0-d arrays (or of equal-length lists of numbers) become
      NumPy arrays, so ``y[i]`` works for the index arrays of plates (the arguments themselves:
      lists held in a dict stay lists), and so does a ``range`` argument;
    * an array of dtype object whose entries are all numbers becomes a numeric array;
    * a masked array without masked entries becomes its data; one with masked entries is an
      :class:`~thrifty.errors.ArgumentError` naming ``name`` — its masked values would be
      observed as they are, and thrifty does not impute;
    * everything else (scalars, NumPy arrays, dicts, lists of other objects) is passed as is.

    >>> import numpy as np, pandas as pd
    >>> as_data({"y": pd.Series([3.0, 1.0], index=[1, 0])})["y"]
    array([3., 1.])
    """
    if isinstance(x, np.ma.MaskedArray):
        return _unmasked(x, name)
    if isinstance(x, np.ndarray):
        return _numeric(x) if x.dtype == object and x.size else x
    if x is None or isinstance(x, (str, bytes)):
        return x
    if isinstance(x, dict):
        if depth >= _MAX_DEPTH:
            return x
        out = {k: as_data(v, f"{name}[{k!r}]", depth + 1) for k, v in x.items()}
        return x if all(out[k] is v for k, v in x.items()) else out
    if isinstance(x, range) and depth == 0:
        return np.arange(x.start, x.stop, x.step)
    if isinstance(x, (list, tuple)):
        if depth == 0 and x and all(
                isinstance(v, (int, float, bool, complex, np.number, list, tuple))
                or (isinstance(v, np.ndarray) and v.ndim == 0) for v in x):
            try:
                a = np.asarray(x)
            except ValueError:  # ragged
                a = None
            if a is not None and a.dtype.kind in "biufc":  # (complex: refused where observed)
                return a
        if depth >= _MAX_DEPTH:
            return x
        out = [as_data(v, f"{name}[{j}]", depth + 1) for j, v in enumerate(x)]
        if all(o is v for o, v in zip(out, x)):
            return x
        return type(x)._make(out) if hasattr(x, "_make") else type(x)(out)
    if isinstance(x, (int, float, complex, np.generic)):
        return x
    to_numpy = getattr(x, "to_numpy", None)
    if not callable(to_numpy) and not hasattr(x, "__array__"):
        return x
    try:
        a = np.asarray(to_numpy() if callable(to_numpy) else x)
    except (TypeError, ValueError) as e:
        raise ArgumentError(
            f"{name} ({type(x).__module__.partition('.')[0]}.{type(x).__name__}) cannot be "
            f"read as an array ({e}); data are read by position: pass arrays, pandas Series "
            "or DataFrames, xarray DataArrays, or a dict of them") from e
    return as_data(a, name, depth)


_MAX_DEPTH = 4  # (containers inside containers: how deep data are looked for)


def _numeric(x: np.ndarray) -> np.ndarray:
    """An array of dtype object holding numbers (a pandas column of mixed types) as the
    numeric array of the same values; else ``x``."""
    if not all(isinstance(v, (int, float, np.number)) for v in x.flat):
        return x
    a = np.array(x.tolist())
    return a if a.dtype.kind in "biuf" and a.shape == x.shape else x


def _unmasked(x: np.ma.MaskedArray, name: str) -> np.ndarray:
    """The data of a masked array none of whose entries is masked."""
    masked = int(np.ma.count_masked(x))
    if masked:
        raise ArgumentError(
            f"{name} is a masked array with {masked} masked entr{'y' if masked == 1 else 'ies'} "
            f"of {x.size}: the model would read the values under the mask as data (thrifty does "
            "not impute missing values). Pass only the observed entries (x.compressed(), or "
            "the rows where ~x.mask), or make the missing values latent choices (th.sample)")
    return np.ma.getdata(x)


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
        return program.current()
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
