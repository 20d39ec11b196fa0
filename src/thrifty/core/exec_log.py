"""Execution logs: which elements of a plate the engine executed, and what they computed.

A kernel that keeps data computed by a plate's body (each element's glm row, say) may trust it
only as long as the engine has not executed the element again.  The engine says when it has:
a watched :class:`~thrifty.core.plate.PlateNode` appends one :class:`ExecLog` entry per commit
that executed some of its elements, carrying the distribution and value of the watched
observations as that execution computed them.
"""

from __future__ import annotations

import numpy as np

_NONE = np.zeros(0, dtype=np.int64)


class ExecLog:
    """One entry of a plate's log of executions: elements ``idx`` (``None``: every element;
    empty: a mark) were executed, and ``obs`` maps each watched observation the execution met
    (its address relative to an element) to its ``(distribution, value)`` there (none for
    every element: a watcher of all the rows sets up again from the trace); ``dirty``
    when the elements not executed were left stale (something before the plate changed in a
    lazy run), so that what they compute may differ now.  Entries are immutable and linked
    newest first, so a cloned node shares its history, and an entry of every element has no
    predecessor: it replaces what came before.  A kernel that keeps per-element data computed
    by the plate's body (:mod:`thrifty.inference.subsampling.mem_proxy`) reads the entries newer
    than the one it saw last — O(executed elements), never a scan — and never trusts data the engine
    re-ran without telling it."""

    __slots__ = ("dirty", "idx", "obs", "prev")

    def __init__(self, prev, idx, obs: dict, dirty: bool = False):
        self.prev, self.idx, self.obs, self.dirty = prev, idx, obs, dirty


def watch_plate(node, obs_rel: tuple) -> ExecLog:
    """Start logging ``node``'s executions, each with the distribution and value of its
    observation ``obs_rel`` (relative to an element) besides those already watched, and return
    a fresh mark: the entries newer than it are the executions from now on."""
    node.watch_obs = node.watch_obs | {obs_rel}
    node.exec_log = ExecLog(node.exec_log, _NONE, {})
    return node.exec_log

