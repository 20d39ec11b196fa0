"""Exceptions raised by thrifty.  Every message names the address or argument at fault."""

from __future__ import annotations


class ThriftyError(Exception):
    """Base class of thrifty's errors."""


class DistributionError(ThriftyError, ValueError):
    """Invalid distribution parameters, or a value outside a distribution's support."""


class ModelError(ThriftyError):
    """The program is malformed: shape mismatches in plates, duplicate addresses, misuse."""


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
