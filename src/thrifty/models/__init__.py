"""Ready-made models from the papers."""

from thrifty.models.hmm import forward_backward, hmm

__all__ = ["forward_backward", "hmm"]
