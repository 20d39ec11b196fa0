"""The trace: what one execution of a program recorded, organised for incremental re-execution.

A trace is a tree of *blocks* and *nodes*.  The root :class:`Block` holds the top-level sites of
the model body and the structured nodes created in it; every node implements the small
:class:`~thrifty.core.node.Node` interface:

* a plate (:mod:`thrifty.core.plate`) stores its sites as columns over its elements;
* a markov chain (:mod:`thrifty.core.markov`) stores its sites as columns over its steps;
* memoized random functions live in mem tables (:mod:`thrifty.core.mem`) at the root.

Blocks are immutable: every execution of a body makes a new one.  Nodes are changed only by
:meth:`thrifty.core.run.Run.commit`; a run reads the trace it replays and writes a journal, so a
rejected proposal costs nothing to undo.

**Forks.**  :meth:`Trace.fork` returns a second trace sharing every block and node with this one
in O(number of mem tables).  A node may be changed in place only by a trace that *owns* it (its
``owner`` token is one of the trace's ``tokens``); after a fork neither trace owns the shared
nodes, so the first commit that changes one clones it (O(its number of sites); its columns are
shared copy-on-write, :mod:`thrifty.core.column`).  A fork thus costs O(what it later changes).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from thrifty.core.vocab import DETERMINISTIC, LATENT, OBSERVED, same_value  # noqa: F401

_UIDS = itertools.count(1)


class Token:
    """An ownership token: a node may be changed in place by the traces holding its owner."""

    __slots__ = ("__weakref__",)

    def __repr__(self) -> str:
        return f"Token({id(self):#x})"


class Site:
    """One site of a block: a latent choice, an observation, a factor or a recorded value."""

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
        self.mem_reads: list | tuple = ()  # a list from the block's first mem read on
        self.lp = 0.0
        self.n_latent = 0
        self._latent: list | None = None

    def get_site(self, local) -> Site | None:
        return self.sites.get(local)

    def value_lp(self, local):
        """(value, log-density) of the latent site ``local``, or None."""
        s = self.sites.get(local)
        if s is None or s.kind != LATENT:
            return None
        return s.value, s.lp

    def latent_names(self) -> list:
        """Local names of the latent sites, in execution order (cached; blocks are immutable)."""
        if self._latent is None:
            self._latent = [k for k, s in self.sites.items() if s.kind == LATENT]
        return self._latent

    def nodes(self):
        """(local name, node) of the plates and chains created in the block."""
        yield from self.plates.items()
        yield from self.chains.items()

    def total_lp(self) -> float:
        """Log-density of the block and everything nested in it (O(number of nodes))."""
        lp = self.lp
        for node in self.plates.values():
            lp += node.total_lp()
        for node in self.chains.values():
            lp += node.total_lp()
        return lp

    def latent_lp(self) -> float:
        lp = sum(s.lp for s in self.sites.values() if s.kind == LATENT)
        return lp + sum(node.latent_lp() for _, node in self.nodes())

    def total_latent(self) -> int:
        return self.n_latent + sum(node.n_latent for _, node in self.nodes())

    def drop_reads(self, counts, prefix: tuple) -> None:
        """This block leaves the trace: its mem reads (and its nodes' reads) no longer count."""
        for maddr, key in self.mem_reads:
            counts.read(maddr, key, -1)
        for local, node in self.nodes():
            node.drop_reads(counts, prefix + local)


EMPTY_BLOCK = Block()


class ChangeLog:
    """What the commits of a trace changed since a recorder last looked (see
    :mod:`thrifty.runtime.recorder`): ``(node, members, keys)`` triples — the plate elements or
    markov steps written (``None``: all of them) and the sites whose values changed (``None``:
    any) — and whether nodes were created or dropped."""

    __slots__ = ("entries", "nodes_changed")

    def __init__(self):
        self.entries: list = []
        self.nodes_changed = False

    def wrote(self, node, members, keys=None) -> None:
        self.entries.append((node, members, keys))

    def extend(self, other: ChangeLog) -> None:
        self.entries += other.entries
        self.nodes_changed |= other.nodes_changed

    def clear(self) -> None:
        self.entries = []
        self.nodes_changed = False


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
    structure : a counter advanced by every commit that creates or drops choices.
    uid : a number unique to this trace object in this process (forks and unpickled traces get
        their own), for caches of kernels.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     return th.sample("mu", dist.Normal(0.0, 1.0))
    >>> tr = th.simulate(m(), seed=0)     # a Trace: the choices of one execution
    >>> tr["mu"] == tr.output, tr.n_latent
    (True, 1)
    """

    def __init__(self, program):
        self.program = program
        self.root = EMPTY_BLOCK
        self.mems: dict[tuple, Any] = {}
        self.output = None
        self.output_full = True
        self._n_latent: int | None = None
        self.clock = 0
        self.structure = 0  # counts the commits that created or dropped latent choices
        # counts the commits that changed the trace's layout: which sites exist (of any kind:
        # an observation that appears with a branch too), nodes, columns of nodes
        self.layout = 0
        self.obs_values: dict | None = None  # observed values replayed instead of the data
        self.stale_nodes: set = set()  # nodes that may hold stale elements or steps
        # mem addresses whose function gives collapsed families → the site observing them
        self.collapsed_mems: dict = {}
        self.tokens: tuple = (Token(),)
        self.changes: ChangeLog | None = None
        self.uid = next(_UIDS)
        self._base = None  # (parent, parent tokens before the fork, after) of a fork

    def blank(self) -> Trace:
        """A new, empty trace of this trace's program, over the observed values it holds in
        place of the data (a full execution into it rebuilds everything)."""
        out = Trace(self.program)
        out.obs_values = self.obs_values
        return out

    # -- ownership and forks ------------------------------------------------------------------
    def owns(self, node) -> bool:
        return node.owner in self.tokens

    def own(self, node):
        """``node`` if this trace may change it in place, else its copy-on-write clone."""
        if node.owner in self.tokens:
            return node
        clone = node.clone()
        clone.owner = self.tokens[0]
        if node in self.stale_nodes:
            self.stale_nodes.discard(node)
            self.stale_nodes.add(clone)
        return clone

    def fork(self) -> Trace:
        """A trace with the same state, sharing blocks and nodes copy-on-write (module doc)."""
        child = object.__new__(Trace)
        child.__dict__.update(self.__dict__)
        child.mems = dict(self.mems)
        child.stale_nodes = set(self.stale_nodes)
        child.uid = next(_UIDS)
        child.changes = None if self.changes is None else ChangeLog()
        saved = self.tokens
        self.tokens = (Token(),)
        child.tokens = (Token(),)
        child._base = (self, saved, self.tokens)
        return child

    def become(self, fork: Trace) -> None:
        """Take the state of ``fork`` (a fork of this trace, now discarded): the provisional
        commit it holds becomes this trace's."""
        base = fork._base
        log = self.changes
        uid = self.uid
        sole = base is not None and base[0] is self and self.tokens is base[2]
        self.__dict__.update(fork.__dict__)
        self.uid = uid
        self._base = None
        if sole:  # no other fork of the pre-fork state: nobody else holds its nodes now
            self.tokens = fork.tokens + base[1]
        if log is not None:
            if fork.changes is not None:
                log.extend(fork.changes)
            else:
                log.nodes_changed = True
            self.changes = log

    def revert(self, fork: Trace) -> None:
        """Discard ``fork`` (a fork of this trace): this trace owns its nodes again."""
        base = fork._base
        if base is not None and base[0] is self and self.tokens is base[2]:
            self.tokens = base[1]
        fork._base = None

    # -- sizes and densities ------------------------------------------------------------------
    @property
    def n_latent(self) -> int:
        """Number of latent choices |x| (each plate element's site and each mem key counts once).

        Kept up to date by every commit (|x'| = |x| + fresh − stale), so reading it is O(1).
        """
        if self._n_latent is None:
            self._n_latent = self.root.total_latent() + sum(len(t) for t in self.mems.values())
        return self._n_latent

    @property
    def maybe_stale(self) -> bool:
        """Whether some plate elements or markov steps may be stale (O(1))."""
        return bool(self.stale_nodes)

    def _total(self) -> float:
        lp = self.root.total_lp()
        if self.mems:
            lp += sum(t.total_lp() for t in self.mems.values())
        return lp

    def log_joint(self) -> float:
        """log p(x, y) of the trace.  Raises if some plate elements are stale (refresh them)."""
        if self.stale_nodes and self.has_stale():
            raise RuntimeError("the trace has stale plate elements; refresh them first")
        return self._total()

    def known_log_joint(self) -> float:
        """log p(x, y), or NaN when elements may be stale — O(number of top-level nodes), the
        per-draw statistic of ``th.infer``."""
        return math.nan if self.stale_nodes else self._total()

    def has_stale(self) -> bool:
        """Whether some elements or steps are stale (exact: checks the candidate nodes)."""
        for node in list(self.stale_nodes):
            if not node.has_stale(self.mems, exact=True):
                self.stale_nodes.discard(node)
        return bool(self.stale_nodes)

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

    # -- pickling (checkpoints) -----------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state["changes"] = None
        state["_base"] = None
        return state

    def __setstate__(self, state):
        state["collapsed_mems"] = dict.fromkeys(state.get("collapsed_mems", ()))
        state.setdefault("layout", 0)
        self.__dict__.update(state)
        self.uid = next(_UIDS)
