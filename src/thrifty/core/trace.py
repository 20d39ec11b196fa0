"""The trace: what one execution of a program recorded, organised for incremental re-execution.

A trace is a tree of *blocks*.  The root block holds the top-level choices of the model body;
each markov step has its own block.  Blocks hold their sites (values and log-densities) and the
structured nodes created inside them: plates (:mod:`thrifty.core.plate`) and markov chains
(:mod:`thrifty.core.markov`).  Memoized random functions live in mem tables
(:mod:`thrifty.core.mem`) at the root.

Traces are changed only by :meth:`thrifty.core.run.Run.commit`; a run reads the trace it replays
and writes its own journal, so a rejected proposal costs nothing to undo.
"""

from __future__ import annotations

from typing import Any

import numpy as np

LATENT, OBSERVED, FACTOR, DETERMINISTIC = 0, 1, 2, 3


class Site:
    """One site of a scalar block: a latent choice, an observation, a factor or a recorded value."""

    __slots__ = ("discrete", "dist", "kind", "lp", "value")

    def __init__(self, value, lp: float, kind: int, discrete: bool = False, dist=None):
        self.value = value
        self.lp = lp
        self.kind = kind
        self.discrete = discrete
        self.dist = dist  # the distribution it was scored under (latent sites)

    def __repr__(self) -> str:
        kind = ("latent", "observed", "factor", "deterministic")[self.kind]
        return f"Site({kind}, value={self.value!r}, lp={self.lp:.4g})"


class Block:
    """Sites and structured nodes created by one execution of a body (model or markov step).

    ``lp`` is the sum of the log-densities of the block's own sites; nested plates and chains
    keep their own totals.  ``mem_reads`` lists the (table address, key) pairs the block read.
    """

    __slots__ = ("_latent", "chains", "lp", "mem_reads", "n_latent", "plates", "sites")

    def __init__(self):
        self.sites: dict[tuple, Site] = {}
        self.plates: dict[tuple, Any] = {}
        self.chains: dict[tuple, Any] = {}
        self.mem_reads: list = []
        self.lp = 0.0
        self.n_latent = 0
        self._latent: list | None = None

    def latent_names(self) -> list:
        """Local names of the latent sites, in execution order (cached; blocks are immutable)."""
        if self._latent is None:
            self._latent = [k for k, s in self.sites.items() if s.kind == LATENT]
        return self._latent

    def total_lp(self) -> float:
        """Log-density of the block and everything nested in it."""
        return (
            self.lp
            + sum(p.total_lp() for p in self.plates.values())
            + sum(c.total_lp() for c in self.chains.values())
        )

    def total_latent(self) -> int:
        return (
            self.n_latent
            + sum(p.n_latent for p in self.plates.values())
            + sum(c.n_latent for c in self.chains.values())
        )

    def has_stale(self, mems=None) -> bool:
        return any(p.has_stale(mems) for p in self.plates.values()) or any(
            c.has_stale(mems) for c in self.chains.values()
        )


EMPTY_BLOCK = Block()


class Trace:
    """One execution of a program: the root block, the mem tables and the program output.

    Attributes
    ----------
    program : the :class:`~thrifty.core.model.Program` that was run.
    root : the top-level :class:`Block`.
    mems : mem tables by address.
    output : the program's return value at this trace.
    clock : a counter advanced by every committed run; plate elements and markov steps record
        the clock at which their log-density was computed, so stale ones can be recognised.
    """

    def __init__(self, program):
        self.program = program
        self.root = EMPTY_BLOCK
        self.mems: dict[tuple, Any] = {}
        self.output = None
        self.output_full = True
        self._n_latent: int | None = None
        self.maybe_stale = False  # set by lazy (subsampling) commits; cleared by a full rescoring
        self.clock = 0
        self.structure = 0  # advanced by every commit that creates or drops choices
        self.obs_values: dict | None = None  # observed values replayed instead of the data (Geweke)

    # -- sizes and densities ------------------------------------------------------------------
    @property
    def n_latent(self) -> int:
        """Number of latent choices |x| (each plate element's site and each mem key counts once).

        Kept up to date by every commit (|x'| = |x| + fresh − stale), so reading it is O(1).
        """
        if self._n_latent is None:
            self._n_latent = self.root.total_latent() + sum(len(t) for t in self.mems.values())
        return self._n_latent

    def log_joint(self) -> float:
        """log p(x, y) of the trace.  Raises if some plate elements are stale (call refresh())."""
        if self.maybe_stale and self.has_stale():
            raise RuntimeError("the trace has stale plate elements; refresh them first")
        return self.root.total_lp() + sum(t.total_lp() for t in self.mems.values())

    def has_stale(self) -> bool:
        return self.root.has_stale(self.mems)

    # -- reading values -----------------------------------------------------------------------
    def __getitem__(self, addr):
        from thrifty.core.locate import get_value

        return get_value(self, addr)

    def values(self, include_deterministic: bool = True) -> dict[str, Any]:
        """The latent (and deterministic) values keyed by name; see :mod:`thrifty.core.address`."""
        from thrifty.core.locate import collect_values

        return collect_values(self, include_deterministic)

    def __repr__(self) -> str:
        return f"Trace({self.program!r}, {self.n_latent} latent choices)"


def same_value(a, b) -> bool:
    """Whether two state values are equal (identity first; arrays elementwise; tuples recursive)."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b))
        try:
            return bool(a == b)
        except (TypeError, ValueError):
            return False
    if ta is np.ndarray:
        return a.shape == b.shape and bool(np.array_equal(a, b))
    if ta is tuple or ta is list:
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False
