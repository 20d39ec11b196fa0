"""Provisional commits: commit a run, look at the new trace, and undo if needed.

Used only when a kernel needs a count over the *proposed* trace (``th.one`` / ``th.lmh(sel)``
after a proposal that created or dropped choices); the copy costs the size of the trace.
"""

from __future__ import annotations

import copy


def provisional_commit(trace, run):
    """Commit ``run`` and return a function that restores the trace to its previous state."""
    memo = {id(trace.program): trace.program}
    saved = copy.deepcopy({k: v for k, v in trace.__dict__.items() if k != "program"}, memo)
    run.commit()

    def undo() -> None:
        trace.__dict__.update(saved)

    return undo
