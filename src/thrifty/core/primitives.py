"""The modeling primitives: ``sample``, ``observe``, ``factor``, ``deterministic``, ``plate``,
``markov``, ``mem`` and ``call``.  Each forwards to the frame of the active run."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from thrifty import _context
from thrifty.core.address import as_name, fmt
from thrifty.core.mem import Mem
from thrifty.core.model import Model
from thrifty.core.vocab import non_numeric, same_value
from thrifty.distributions.base import Distribution
from thrifty.distributions.xp import is_foreign
from thrifty.errors import ModelError

EXECUTIONS = _context.EXECUTIONS  # (the calling thread's executions)
NP_F64 = np.float64  # (a data array's entry, ``y[t]``: never complex)


def _frame(what: str):
    runs = EXECUTIONS.runs
    if not runs:
        raise RuntimeError(
            f"th.{what}() was called outside a program run; apply the model to its arguments "
            "and give the program to th.infer / th.simulate"
        )
    return runs[-1].frame


def sample(name, d) -> Any:
    """A random choice named ``name`` drawn from distribution ``d``; returns its value.

    Inside a plate the value has one entry per executed element; inside markov step ``t`` of
    chain ``c`` the address is ``(c, t, name)``.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     return th.sample("x", dist.Gamma(2.0, 1.0))
    >>> x = th.simulate(m(), seed=0).output
    >>> x > 0
    True
    """
    runs = EXECUTIONS.runs
    if not runs:
        _frame("sample")
    try:
        return runs[-1].frame.sample(name, d)
    except AttributeError:  # (checked here, off the hot path)
        if not isinstance(d, Distribution):
            raise _not_a_distribution("th.sample", name, d) from None
        raise


def _is_complex(value) -> bool:
    if type(value) is np.ndarray:
        return value.dtype.kind == "c"
    return isinstance(value, (complex, np.complexfloating))


def _describe_complex(value) -> str:
    if type(value) is np.ndarray:
        return f"an array of dtype {value.dtype}"
    return repr(value)


def _by_position(name, value):
    """A pandas (or xarray) object observed, which the model's code took from data it did not
    receive as an argument (arguments are read by position: :func:`~thrifty.core.model.as_data`):
    its values in order at the top level; in a plate an error, as ``y[i]`` with the plate's
    index array reads a Series of integer labels by label — the wrong rows, silently, on the
    one-element and subsampled runs that execute some elements only."""
    runs = EXECUTIONS.runs
    frame = runs[-1].frame if runs else None
    if getattr(frame, "user_index", None) is not None:
        raise ModelError(
            f"th.observe({name!r}, ...) in {frame.where()}: the observed value is a "
            f"{type(value).__module__.partition('.')[0]} {type(value).__name__}, which the "
            "plate's index reads by label, not by position (y[i] with an index array); pass "
            "the data as an argument of the model (read by position) or index its "
            "y.to_numpy()")
    return np.asarray(value.to_numpy())


def observe(name, d, value) -> Any:
    """Condition on ``value`` having been drawn from ``d``; returns ``value``.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
    ...     th.observe("y", dist.Normal(mu, 1.0), 2.0)    # condition on y = 2
    >>> r = th.infer(m(), th.mh("mu", th.drift(1.0)), num_samples=3000, seed=0, progress=False)
    >>> bool(abs(r["mu"].mean() - 1.0) < 0.15)               # posterior N(1, 1/2)
    True
    """
    runs = EXECUTIONS.runs
    if not runs:
        _frame("observe")
    if value is None and getattr(runs[-1], "new_obs", None) is None:  # predictive: simulated
        raise ModelError(f"th.observe({name!r}, ...): the observed value is None; pass the "
                         "data (a number or an array), or use th.sample for a latent value "
                         "(None is accepted only by th.predictive)")
    t = type(value)
    if t is not float and t is not int and t is not NP_F64:  # (the usual scalars: neither)
        # (an array: its dtype's kind, without _is_complex's call)
        if value.dtype.kind == "c" if t is np.ndarray else _is_complex(value):
            raise ModelError(f"th.observe({name!r}, ...): the observed value is complex "
                             f"({_describe_complex(value)}); thrifty's distributions are real, "
                             "so observe the real and imaginary parts (value.real, value.imag) "
                             "as two sites, or the modulus")
        if t is not np.ndarray and hasattr(value, "to_numpy"):
            value = _by_position(name, value)
    try:
        return runs[-1].frame.observe(name, d, value)
    except AttributeError:  # (checked here, off the hot path)
        if not isinstance(d, Distribution):
            raise _not_a_distribution("th.observe", name, d) from None
        raise


def _not_a_distribution(what, name, d) -> ModelError:
    return ModelError(
        f"{what}({name!r}, ...): expected a distribution (e.g. dist.Normal(0.0, 1.0)), got "
        f"{type(d).__name__} {d!r}"
    )


def factor(name, log_weight) -> None:
    """Add ``log_weight`` to the log-density of the trace.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     x = th.sample("x", dist.Normal(0.0, 1.0))
    ...     th.factor("positive", 0.0 if x > 0 else -float("inf"))   # condition on x > 0
    >>> r = th.infer(m(), th.mh("x", th.drift(1.0)), num_samples=200, seed=0, progress=False,
    ...              init={"x": 1.0})
    >>> bool((r["x"] > 0).all())
    True
    """
    frame = _frame("factor")
    t = type(log_weight)
    if t is not float and t is not int and _is_complex(log_weight):
        raise ModelError(f"th.factor({name!r}, ...): the log-weight is complex "
                         f"({_describe_complex(log_weight)}); a log-weight is a real number")
    if t is not float and not is_foreign(log_weight):  # (a gradient run's arrays are numbers)
        what = non_numeric(log_weight)
        if what is not None:
            raise ModelError(f"th.factor({name!r}, ...): the log-weight must be a number or an "
                             f"array of numbers, got {what}")
    frame.factor(name, log_weight)


def deterministic(name, value) -> Any:
    """Record ``value`` (a function of the choices) in every sample; returns it.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     x = th.sample("x", dist.Normal(0.0, 1.0))
    ...     th.deterministic("x2", x * x)             # recorded with every draw
    >>> r = th.infer(m(), th.lmh(), num_samples=5, seed=0, progress=False)
    >>> bool((r["x2"] == r["x"] ** 2).all())
    True
    """
    return _frame("deterministic").deterministic(name, value)


def plate(name, size: int):
    """Conditionally independent elements ``0..size-1``: ``with th.plate("data", N) as i:``.

    ``i`` indexes the elements the engine executes: ``slice(0, size)`` for all of them (so
    ``X[i]`` copies nothing), a sorted integer array for a subset.  Sites inside the body have
    one value per executed element.  Values from inside the plate must not be used after it.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m(y):
    ...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
    ...     with th.plate("data", len(y)) as i:          # i: the executed elements
    ...         z = th.sample("z", dist.Normal(mu, 1.0))
    ...         th.observe("y", dist.Normal(z, 0.5), y[i])
    >>> th.simulate(m(np.zeros(4)), seed=0).values()["data.z"].shape
    (4,)
    """
    runs = EXECUTIONS.runs
    if not runs:
        _frame("plate")
    return runs[-1].frame.plate(name, size)  # (``_frame``, without its call)


def markov(name, step: Callable, length: int, init=None, *args):
    """A state-space chain of ``length`` steps; returns its states.

    ``step(t, prev, *args)`` samples/observes the choices of step ``t`` (addresses
    ``(name, t, ...)``) and returns the new state; ``prev`` is ``init`` at ``t = 0``.  The
    states come back as a read-only sequence (index, slice, iterate, ``len``, ``list(...)``,
    equality with a list) that a one-step update returns in O(1); inside a plate, as a list of
    arrays (one entry per executed element).

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def walk(T):
    ...     def step(t, prev):
    ...         return th.sample("x", dist.Normal(prev, 1.0))
    ...     return th.markov("s", step, T, 0.0)
    >>> tr = th.simulate(walk(5), seed=0)
    >>> len(tr.output), sorted(tr.values())
    (5, ['s.x'])
    """
    return _frame("markov").markov(name, step, length, init, args)


def mem(name, fn: Callable) -> Mem:
    """A memoized random function: ``f = th.mem("w", lambda k: dist.Normal(0, 1))``.

    ``fn(key)`` must return a distribution; ``f(key)`` draws at address ``(name, key)`` once
    per trace.  Inside a plate, ``f`` accepts an array of keys (one per element), and
    ``f(i)`` with the plate's index ``i`` reads each element's own key, its position.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def clusters():
    ...     mean = th.mem("mean", lambda k: dist.Normal(0.0, 10.0))   # one draw per key
    ...     return mean(1), mean(2), mean(1)
    >>> a, b, c = th.simulate(clusters(), seed=0).output
    >>> a == c, a == b
    (True, False)
    """
    frame = _frame("mem")
    prefix = getattr(frame, "prefix", None)
    if prefix is None:
        raise ModelError(f"th.mem({name!r}) must be defined outside plates")
    addr = prefix + frame.scope + as_name(name)
    fns = EXECUTIONS.runs[-1].mem_fns
    old = fns.get(addr)
    if old is not None and not _same_function(old, fn):
        raise ModelError(
            f"th.mem at {fmt(addr)} is defined twice in one execution with different functions: "
            "a memoized function is one table of values per name, and its keys would be drawn "
            "under whichever function read them first; give the two functions different names")
    fns[addr] = fn
    return Mem(addr, fn)


def _same_function(a, b) -> bool:
    """Whether two definitions of one memoized function are the same function: one object,
    equal callables (a bound method of one object), or one code with the same closure values and
    defaults (a helper that defines the mem, called twice)."""
    if a is b or a == b:
        return True
    if isinstance(a, functools.partial) and isinstance(b, functools.partial):
        return _same_function(a.func, b.func) and same_value(a.args, b.args) and same_value(
            a.keywords, b.keywords)
    code = getattr(a, "__code__", None)
    if code is None or code is not getattr(b, "__code__", None):
        return False
    cells = [(_contents(x), _contents(y)) for x, y in
             zip(a.__closure__ or (), b.__closure__ or ())]
    return all(same_value(x, y) for x, y in [*cells, (a.__defaults__, b.__defaults__),
                                             (a.__kwdefaults__, b.__kwdefaults__)])


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # (a name of the enclosing function not assigned yet)
        return _contents


def call(name, submodel, *args, **kwargs) -> Any:
    """Run ``submodel`` (a ``@th.model`` or plain function) with its names under ``name``.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def prior_scale():
    ...     return th.sample("s", dist.Gamma(2.0, 2.0))
    >>> @th.model
    ... def m():
    ...     s = th.call("hyper", prior_scale)        # its choice is at ("hyper", "s")
    ...     return th.sample("x", dist.Normal(0.0, s))
    >>> sorted(th.simulate(m(), seed=0).values())
    ['hyper.s', 'x']
    """
    frame = _frame("call")
    fn = submodel.fn if isinstance(submodel, Model) else submodel
    saved = frame.scope
    frame.scope = saved + as_name(name)
    try:
        return fn(*args, **kwargs)
    finally:
        frame.scope = saved
