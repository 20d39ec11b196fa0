"""Running inference: chains, seeds, progress, interruption, checkpoints, results."""

from thrifty.runtime.checkpoint import load_checkpoint
from thrifty.runtime.infer import InterruptedWarning, infer
from thrifty.runtime.result import Result

__all__ = ["InterruptedWarning", "Result", "infer", "load_checkpoint"]
