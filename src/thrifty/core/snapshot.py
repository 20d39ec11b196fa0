"""Provisional commits: commit a run into a fork of the trace, look at it, keep it or not.

Used when a kernel needs a count over the *proposed* trace (``th.one`` / ``th.lmh(sel)`` after a
proposal that created or dropped choices).  The fork shares everything with the trace
copy-on-write (:meth:`thrifty.core.trace.Trace.fork`), so the cost is what the run changes.
"""

from __future__ import annotations


def provisional_commit(trace, run):
    """Commit ``run`` into a fork of ``trace`` and return the fork; then call
    ``trace.become(fork)`` to keep it or ``trace.revert(fork)`` to drop it."""
    fork = trace.fork()
    run.commit(fork)
    return fork
