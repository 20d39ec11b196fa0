"""The interface of the structured nodes of a trace: plates, markov chains and mem tables.

The engine never tells nodes apart by type.  Every node answers:

* ``n_latent`` — its number of latent choices (|x| counts each plate element's site once);
* ``total_lp()`` — its log-density, O(1) (a running total kept by its commits; NaN while some
  of its elements or steps are stale);
* ``latent_lp()`` — the log-density of its latent choices (when it leaves the trace);
* ``has_stale(mems, exact=False)`` — whether some elements/steps are stale: O(1) and
  conservative by default, exact on request;
* ``stale_parts(mems)`` — which ones (a vectorized scan), to rescore exactly those;
* ``drop_reads(counts, addr)`` — it leaves the trace: its mem reads no longer count;
* ``clone()`` — a copy-on-write copy for a forked trace (columns shared, :mod:`.column`);
* ``owner`` — the token of the trace allowed to change it in place (:mod:`.trace`).

A run changes a node only through a journal entry (an :class:`Update`) that
:meth:`~thrifty.core.run.Run.commit` applies with the trace's clock.
"""

from __future__ import annotations


class Node:
    """Base class of plate, chain and mem-table nodes (see the module docstring)."""

    owner = None
    n_latent: int = 0

    def total_lp(self) -> float:
        raise NotImplementedError

    def latent_lp(self) -> float:
        raise NotImplementedError

    def has_stale(self, mems=None, exact: bool = False) -> bool:
        return False

    def stale_parts(self, mems=None) -> list:
        """Its stale elements or steps (nested nodes' too), as ``(kind, address, items)``
        (:class:`~thrifty.core.vocab.StaleRead`); O(its size), vectorized."""
        return []

    def drop_reads(self, counts, addr: tuple) -> None:
        pass

    def clone(self) -> Node:
        raise NotImplementedError


class Update:
    """A journal entry: what one run does to one node, applied only if the run is committed."""

    __slots__ = ()

    def apply(self, trace, clock: int) -> None:
        raise NotImplementedError
