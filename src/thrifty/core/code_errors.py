"""Errors raised by the model's own code, given the context a user needs to fix them.

NumPy's messages say what failed but not where in the model: "The truth value of an array with
more than one element is ambiguous", or a matmul core-dimension mismatch when a prior vector has
the wrong length.  These wrap such errors (``ValueError``, ``TypeError``, ``IndexError``) into a
:class:`~thrifty.errors.ModelError` that names the plate being executed, the last choice made
before the failure (with its shape) and the usual fix; the original stays chained.
"""

from __future__ import annotations

from thrifty.core.address import fmt
from thrifty.errors import ModelError, ThriftyError

WRAPPED = (ValueError, TypeError, IndexError)


def _last_choice(run) -> str:
    addr = getattr(run.lanes, "addr", None)
    return f"; the last choice made before it was {fmt(addr)}" if addr else ""


def plate_code_error(frame, exc: BaseException) -> ModelError:
    """The error of the model code inside the plate executed by ``frame``."""
    where = f"plate {fmt(frame.addr)} ({frame.n} element(s) executed)"
    msg = str(exc)
    if "truth value of an array" in msg:
        text = (f"in {where}: a Python `if`, `and`, `or` or `while` tested a value with one "
                "entry per executed element (NumPy: truth value of an array is ambiguous). "
                "The plate's body runs once for all its executed elements: use "
                "np.where(cond, a, b) or a mixture distribution so that each element takes its "
                "own branch")
    else:
        text = (f"in {where}: the model code raised {type(exc).__name__}: {msg}"
                f"{_last_choice(frame.run)}. "
                "Inside a plate, per-element values have one entry per executed element: index "
                "data and per-element parameters with the plate's index (x[i]), and check that "
                "the shapes of the choices used here match the data (e.g. a prior vector of "
                "the wrong length)")
    err = ModelError(text)
    err.in_plate = True
    return err


def code_error(run, exc: BaseException) -> ModelError:
    """The error of the model code outside any plate."""
    return ModelError(
        f"the model code raised {type(exc).__name__}: {exc}{_last_choice(run)}. Check the "
        "shapes of the choices and data used there (e.g. a prior vector of the wrong length)"
    )


def wraps(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of the model's code that gets context."""
    return isinstance(exc, WRAPPED) and not isinstance(exc, ThriftyError)


def leave_with_error(frame, exc: BaseException) -> None:
    """A plate's body raised ``exc``: give an error of the model's code its context (raises),
    and mark thrifty's own errors as raised inside a plate."""
    if wraps(exc):
        raise plate_code_error(frame, exc) from exc
    if isinstance(exc, ThriftyError) and not hasattr(exc, "in_plate"):
        exc.in_plate = True
