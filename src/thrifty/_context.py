"""Process-wide execution state shared by the distributions and the core.

``EXECUTIONS.runs`` is the calling thread's stack of active program executions
(``thrifty.core.run.Run``): the primitives forward to the frame of its last one.  It is kept per
thread — a program runs in the thread that executes it, so programs run at once by several
threads (two ``th.infer`` calls in a thread pool) never see each other's executions.
Distributions consult it only to decide whether an invalid parameter should raise at once
(outside a run) or be reported by ``th.sample``/``th.observe``, which know the address (inside a
run).
"""

from __future__ import annotations

import contextlib
import sys
import threading


class _Executions(threading.local):
    """Per thread: ``runs``, the stack of active executions, and ``layout_watch``: while a
    chain steps, what a composite kernel calls with the trace when one of its parts changed the
    trace's layout (``thrifty.runtime.chain``), else None."""

    def __init__(self):
        self.runs: list = []
        self.layout_watch = None


EXECUTIONS = _Executions()


def float64():
    """The context in which thrifty executes a program: when JAX is imported, its 64-bit types
    on for this thread while it lasts, so that model code written with ``jax.numpy`` computes
    in float64 as thrifty's densities do.  Scoped, not switched on for the process
    (``jax.config.update("jax_enable_x64", True)``), which breaks JAX code compiled before it
    (NumPyro's chains then receive float32 buffers where they expect float64)."""
    if "jax._src.config" not in sys.modules:  # (no JAX executed in the process: no model
        # code written with it.  ``sys.modules["jax"]`` alone is not enough: ArviZ registers a
        # lazy module there, which reading an attribute would import — a second's import for
        # every program that does not use JAX)
        return contextlib.nullcontext()
    return sys.modules["jax"].enable_x64(True)
