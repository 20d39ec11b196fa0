"""Exceptions raised by thrifty.  Every message names the address or argument at fault."""

from __future__ import annotations


class ThriftyError(Exception):
    """Base class of thrifty's errors."""


class DistributionError(ThriftyError, ValueError):
    """Invalid distribution parameters, or a value outside a distribution's support."""


class ModelError(ThriftyError):
    """The program is malformed: shape mismatches in plates, duplicate addresses, misuse."""


class OwnedParameterError(ModelError, AttributeError):
    """A process's own hyperparameter read by the model's code (``crp.alpha`` of
    ``th.CRP(alpha=dist.Gamma(1, 1), name="alpha")``): the process does not hand it out.  An
    ``AttributeError`` too, so ``hasattr(crp, "alpha")`` is False."""


class SelectionError(ThriftyError, KeyError):
    """A selection names no choice of the trace, or a choice a kernel cannot update."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not want that
        return str(self.args[0]) if self.args else ""


class RecordingError(ThriftyError, ValueError):
    """The recorded draws lack what is asked of them (latent variables that ``record=`` or
    ``exclude=`` left out, needed to replay a draw)."""


class InitializationError(ThriftyError):
    """No trace with finite probability was found (an impossible model or initial values)."""


class NumericalError(ThriftyError, FloatingPointError):
    """A log-density evaluated to NaN."""


class CheckpointError(ThriftyError, ValueError):
    """A checkpoint cannot be resumed: it belongs to another run (other settings, model, data or
    kernel), it is damaged, of an earlier format, or not authenticated by this user's key."""


class CheckpointWarning(UserWarning):
    """Something a run depends on cannot be fingerprinted for its checkpoint (a lock, an open
    file, ...): a change to it would not be noticed on resume."""


class ArgumentError(ThriftyError, ValueError, TypeError):
    """An invalid argument of a thrifty function (``th.smc(particles=True)``,
    ``th.drift(inf)``, ``to_arviz(coords="abc")``): the message names the function and the
    argument.  It is a ``ValueError`` and a ``TypeError``, as the checks it replaces were."""


class CheckError(ThriftyError):
    """Check mode (``th.infer(..., check=...)``): what the incremental engine holds disagrees
    with a full execution of the program at the same values.  ``discrepancies`` lists them
    (:class:`thrifty.core.check.Discrepancy`), each naming its node and site."""

    def __init__(self, message: str, discrepancies: tuple = ()):
        super().__init__(message)
        self.discrepancies = tuple(discrepancies)

    def __reduce__(self):  # pickles with its discrepancies (errors cross worker processes)
        return (type(self), (str(self), self.discrepancies))


class NotDifferentiable(ModelError):
    """A gradient kernel's block cannot be differentiated: the model's code gave a value that
    depends on the block to a NumPy-only function or to Python control flow (``traced``), or a
    family whose density is written for NumPy only met it.

    >>> from thrifty.errors import ModelError, NotDifferentiable
    >>> issubclass(NotDifferentiable, ModelError)
    True
    """

    traced = False
    where = ""  # (traced) where in the model's code: "the model's code (file, line)"
