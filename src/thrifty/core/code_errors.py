"""Errors raised by the model's own code, given the context a user needs to fix them.

NumPy's messages say what failed but not where in the model: "The truth value of an array with
more than one element is ambiguous", or a matmul core-dimension mismatch when a prior vector has
the wrong length.  These wrap such errors (``ValueError``, ``TypeError``, ``IndexError``) into a
:class:`~thrifty.errors.ModelError` that names the plate being executed, the last choice made
before the failure (with its shape) and the usual fix; the original stays chained.
"""

from __future__ import annotations

import inspect

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.vocab import LATENT, non_numeric
from thrifty.errors import ModelError, ThriftyError

WRAPPED = (ValueError, TypeError, IndexError)

READ_BY_POSITION = ("data are read by position: pass NumPy arrays, lists of numbers, pandas or "
                    "xarray objects")


def arguments(program) -> dict:
    """The program's arguments by parameter name (positional ones as ``#0``, ``#1``, … when
    the signature cannot be bound)."""
    try:
        return dict(inspect.signature(program.fn).bind_partial(
            *program.args, **program.kwargs).arguments)
    except (TypeError, ValueError):
        return {**{f"#{j}": a for j, a in enumerate(program.args)}, **program.kwargs}


def data_arguments_note(program) -> str:
    """``"; argument 'y' is a list of str"`` for the program's arguments that are not read by
    position (dicts, lists of other objects than numbers), else ``""``."""
    notes = []
    for name, value in arguments(program).items():
        if isinstance(value, dict):
            notes.append(f"argument {name!r} is a dict")
        elif isinstance(value, (list, tuple)) and value and non_numeric(value) is not None:
            notes.append(f"argument {name!r} is a {type(value).__name__} of "
                         f"{type(value[0]).__name__}")
    return "; " + "; ".join(notes) if notes else ""


def converted_note(program) -> str:
    """``"; argument 'y' (pandas.Series) reaches the model as a NumPy array ..."`` for the program's
    arguments that were array-likes of other libraries (read by position), else ``""``."""
    conv = getattr(program, "converted", None)
    if not conv:
        return ""
    names = ", ".join(f"{name} ({kind})" for name, kind in conv.items())
    how = "es the model as a NumPy array" if len(conv) == 1 else " the model as NumPy arrays"
    return (f"; {names} reach{how} (data are read by position): index "
            f"{'it as an array' if len(conv) == 1 else 'them as arrays'} — y[i], not y.values[i], "
            "y.iloc[i] or y.loc[i]; a DataFrame's columns by position (df[:, j]), or pass each "
            "column as its own argument")


def converted_error(run, exc: AttributeError) -> ModelError | None:
    """A missing attribute of an array that reached the model in place of a pandas or xarray
    object (``y.values``, ``df.iloc``), with the note saying why; else None."""
    note = converted_note(run.trace.program)
    if not note or "'numpy.ndarray' object has no attribute" not in str(exc):
        return None
    return ModelError(f"the model code raised AttributeError: {exc}{_last_choice(run)}{note}")


def not_numeric_observation(addr, value, run) -> ModelError:
    """An observed value that is not numeric (strings, objects), naming the site and the
    program's arguments that are not read by position."""
    note = data_arguments_note(run.trace.program) if run is not None else ""
    return ModelError(
        f"observation {fmt(addr)}: the observed value is not numeric ({non_numeric(value)})"
        f"{note}. Observed values are numbers or arrays of numbers; {READ_BY_POSITION}"
    )


def _indexed_a_dict(exc: BaseException) -> bool:
    """Whether ``exc`` is what indexing a dict with a plate's index raises."""
    if isinstance(exc, KeyError) and exc.args:
        return isinstance(exc.args[0], (slice, np.ndarray))
    return isinstance(exc, TypeError) and "unhashable type: 'numpy.ndarray'" in str(exc)


def _indexed_a_sequence(exc: BaseException) -> bool:
    """Whether ``exc`` is what indexing a Python list or tuple with an integer array (a plate's
    index over a subset of its elements) raises."""
    return isinstance(exc, TypeError) and "only integer scalar arrays can be converted" in str(exc)


def _index_note(run, exc) -> str:
    """:func:`converted_note` for an array indexed by a label (``df["x"]``)."""
    return converted_note(run.trace.program) if isinstance(exc, IndexError) else ""


def _last_choice(run) -> str:
    addr = getattr(run.lanes, "addr", None)
    return f"; the last choice made before it was {fmt(addr)}" if addr else ""


def _last_in_plate(frame) -> str:
    """The last choice made inside the plate's body (its generic address), else the last one
    before the plate."""
    new = getattr(frame, "new", None) or {}
    for rel in reversed(list(new)):
        if getattr(new[rel], "kind", None) == LATENT:
            return f"; the last choice made before it was {fmt(frame.generic_all(rel))}"
    return _last_choice(frame.run)


READ_ONLY = ("the array is a value the engine keeps — a choice, a memoized value or a markov "
             "state — handed to the model read-only: written in place, it would change the "
             "trace behind the engine's back (and every later replay). Copy it first "
             "(x = x.copy()) and change the copy")


def _read_only(exc) -> bool:
    return isinstance(exc, ValueError) and "read-only" in str(exc)


OBS_KEYWORD = ("th.sample takes no obs=: condition on data with th.observe(name, d, value) "
               "(NumPyro's sample(name, d, obs=value))")


def _obs_keyword(exc) -> bool:
    return isinstance(exc, TypeError) and "sample() got an unexpected keyword argument 'obs'" \
        in str(exc)


def plate_code_error(frame, exc: BaseException) -> ModelError:
    """The error of the model code inside the plate executed by ``frame``."""
    where = f"plate {fmt(frame.addr)} ({frame.n} element(s) executed)"
    msg = str(exc)
    if _obs_keyword(exc):
        text = f"in {where}: {OBS_KEYWORD}{_last_in_plate(frame)}"
    elif _read_only(exc):
        text = f"in {where}: the model code wrote into a read-only array ({msg}); {READ_ONLY}"
    elif isinstance(exc, MemoryError):
        text = (f"plate {fmt(frame.addr)} of {frame.N} elements: executing its body over "
                f"{frame.n} element(s) ran out of memory (MemoryError: {msg}). A plate holds "
                "columns of one value per element for each site (8 bytes per element for a "
                "float), and its body runs over every element at once: use fewer elements (a "
                "plate of size N needs about 8·N bytes per site)")
    elif _indexed_a_dict(exc):
        program = frame.run.trace.program
        text = (f"in {where}: a dict was indexed by the plate's index ({type(exc).__name__}: "
                f"{msg}){data_arguments_note(program)}. The plate's index is a slice or an "
                f"array of positions, and {READ_BY_POSITION} (np.asarray(list(d.values())) "
                "for a dict d whose values are in element order)")
    elif _indexed_a_sequence(exc):
        text = (f"in {where}: the model code raised {type(exc).__name__}: {msg}"
                f"{_last_in_plate(frame)} — a Python list or tuple indexed by the plate's index"
                "? The index is slice(0, size) when every element runs, which a list takes, "
                "and an integer array of positions when kernels run a subset of the elements, "
                "which it does not: index a NumPy array (np.asarray(...)) instead. A program's "
                "list arguments of numbers reach the model as NumPy arrays; lists inside a "
                "dict or another container stay lists")
    elif "truth value of an array" in msg:
        text = (f"in {where}: a Python `if`, `and`, `or` or `while` tested a value with one "
                "entry per executed element (NumPy: truth value of an array is ambiguous)"
                f"{_last_in_plate(frame)}. "
                "The plate's body runs once for all its executed elements: use "
                "np.where(cond, a, b) or a mixture distribution so that each element takes its "
                "own branch")
    elif frame.n == 0:  # (the set-up's run of every plate on no element, or a kernel's)
        text = (f"in {where}: the model code raised {type(exc).__name__}: {msg}"
                f"{_last_in_plate(frame)}. With no element executed, the per-element values "
                "are empty arrays, and kernels run a plate on any subset of its elements, none "
                "included: the body must work on them (np.vectorize, for one, needs otypes= "
                "then)")
    else:
        text = (f"in {where}: the model code raised {type(exc).__name__}: {msg}"
                f"{_last_in_plate(frame)}{_index_note(frame.run, exc)}. "
                "Inside a plate, per-element values have one entry per executed element: index "
                "data and per-element parameters with the plate's index (x[i]), and check that "
                "the shapes of the choices used here match the data (e.g. a prior vector of "
                "the wrong length)")
    err = ModelError(text)
    err.in_plate = True
    return err


def step_code_error(frame, exc: BaseException, where: str) -> ModelError:
    """The error of the model code of a markov step executed by ``frame`` over a batch of
    particles (``where``: which step, chain and particles)."""
    last = ""
    for rel in reversed(list(frame.new)):
        if getattr(frame.new[rel], "kind", None) == LATENT:
            last = f"; the last choice made before it was {fmt(frame.acc.generic(frame.rel + rel))}"
            break
    if "truth value of an array" in str(exc):
        text = (f"in {where}: a Python `if`, `and`, `or` or `while` tested a value with one "
                f"entry per particle (NumPy: truth value of an array is ambiguous){last}. The "
                "particle methods (th.smc, th.pgibbs, th.pmmh) run each step once for all the "
                "particles: use np.where(cond, a, b) or a mixture distribution so that each "
                "particle takes its own branch")
    else:
        text = (f"in {where}: the model code raised {type(exc).__name__}: {exc}{last}. Over "
                "particles, a step's state and choices have a leading particle axis (as values "
                "in a plate body have one entry per element): write the step for an array of "
                "states")
    return ModelError(text)


def code_error(run, exc: BaseException) -> ModelError:
    """The error of the model code outside any plate."""
    if _obs_keyword(exc):
        return ModelError(f"{OBS_KEYWORD}{_last_choice(run)}")
    if _read_only(exc):
        return ModelError(f"the model code wrote into a read-only array ({exc})"
                          f"{_last_choice(run)}; {READ_ONLY}")
    if "truth value of an array" in str(exc):
        return ModelError(
            "a Python `if`, `and`, `or` or `while` tested an array (NumPy: truth value of an "
            f"array is ambiguous){_last_choice(run)}: a vector choice, or values sampled inside "
            "a plate and used after it (one entry per element). Test one entry, or reduce "
            "with .any() / .all(), or use np.where(cond, a, b) to choose per entry"
        )
    return ModelError(
        f"the model code raised {type(exc).__name__}: {exc}{_last_choice(run)}"
        f"{_index_note(run, exc)}. Check the "
        "shapes of the choices and data used there (e.g. a prior vector of the wrong length)"
    )


def wraps(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of the model's code that gets context."""
    return isinstance(exc, WRAPPED) and not isinstance(exc, ThriftyError)


def leave_with_error(frame, exc: BaseException) -> None:
    """A plate's body raised ``exc``: give an error of the model's code its context (raises),
    and mark thrifty's own errors as raised inside a plate."""
    if wraps(exc) or isinstance(exc, MemoryError) or _indexed_a_dict(exc):
        raise plate_code_error(frame, exc) from exc
    if isinstance(exc, ThriftyError) and not hasattr(exc, "in_plate"):
        exc.in_plate = True
