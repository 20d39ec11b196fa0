"""A markov chain's steps written from columns: the trajectory a particle method drew (003 §4).

Conditional SMC executes each step of a chain once over its particles
(:mod:`thrifty.core.particles`): a generation's sites hold every member's value and
log-density — observations too — and its distributions one entry per member.  The trajectory of
the particle that particle Gibbs draws is the rows of the generations along that particle's
ancestry: the values, log-densities and states a run of that trajectory alone computes, and
each step's distribution constructed from the member's own parameters
(:meth:`~thrifty.distributions.base.Distribution.member`).  A run given these columns
(``Run(written={chain: columns})``) writes them into the chain's node in one commit, without
executing the T steps again; what follows the chain in the program runs as usual, from the
new states.

Only what the node stores of its steps can be written so: :func:`trajectory` returns None when a
family cannot construct its entries, and :func:`fits` is False when the node's columns do not
take the values as they are (another type or shape, a site present in other steps than the
node's, nested plates or chains, mem reads).  The caller then executes the trajectory
instead (targets for every step).
"""

from __future__ import annotations

import functools

import numpy as np

from thrifty.core.chain_site import ChainSite, States
from thrifty.core.column import Column, LazyColumn
from thrifty.core.node import Update
from thrifty.core.vocab import DETERMINISTIC, LATENT
from thrifty.errors import ModelError


class StepRecord:
    """One generation of a particle run: its sites over the frame's rows (``site.values[r]``,
    ``site.lp[r]``, ``site.dist`` with one entry per row), ``rows[j]`` the row of member j
    (None: row j), and which latent sites the step's state is: ``(False, name)`` when the step
    returned that site's value, ``(True, names)`` for a tuple of them, None otherwise."""

    __slots__ = ("rows", "sites", "state_of")

    def __init__(self, sites: dict, rows, state_of):
        self.sites, self.rows, self.state_of = sites, rows, state_of


def state_sites(sites: dict, state):
    """The latent sites whose values the step returned as its state (see :class:`StepRecord`):
    the state is then each member's row of those values, as a run of that member alone returns
    it; anything else (a value computed from them, a dict) is not written from columns."""
    if type(state) is tuple:
        keys = [_site_of(sites, x) for x in state]
        return None if any(k is None for k in keys) else (True, keys)
    k = _site_of(sites, state)
    return None if k is None else (False, k)


def _site_of(sites: dict, x):
    """The latent site whose values are the array ``x`` (None: none)."""
    if type(x) is np.ndarray:
        for k, s in sites.items():
            if s.kind == LATENT and s.values is x:
                return k
    return None


class WrittenSite:
    """One site of a written chain: values ``(T, ...)`` (latent and recorded sites),
    log-densities ``(T,)``, each step's distribution (latent sites: ``(d, r)``, entry r of the
    step's distribution d — constructed when the column is first read — or ``(d, None)``, d
    itself) and the steps that have the site (``present``; None: every step)."""

    __slots__ = ("discrete", "dists", "kind", "lp", "present", "values")

    def __init__(self, kind, discrete, values, lp, dists, present):
        self.kind, self.discrete = kind, discrete
        self.values, self.lp, self.dists, self.present = values, lp, dists, present


class WrittenChain:
    """The T steps of one trajectory as columns: ``sites`` (name → :class:`WrittenSite`), the
    steps' ``states`` and their log-densities ``totals`` (T,)."""

    __slots__ = ("sites", "states", "totals")

    def __init__(self, sites: dict, states: list, totals: np.ndarray):
        self.sites, self.states, self.totals = sites, states, totals

    @property
    def T(self) -> int:
        return len(self.states)


def _rows(values) -> list:
    """Each step's value as a run of the trajectory holds it: Python numbers, or read-only
    arrays of their own (never views of a column that later steps write in place)."""
    if values.ndim == 1:
        return values.tolist()
    rows = [v.copy() for v in values]
    for v in rows:
        v.setflags(write=False)  # (the flags object's setter, without the object)
    return rows


def trajectory(records: list, members) -> WrittenChain | None:
    """The chain's columns along one trajectory: member ``members[g]`` of generation g (the
    drawn particle's ancestry), or None when the generations' sites cannot be written as
    columns (see the module docstring)."""
    T = len(records)
    rows = []
    for rec, j in zip(records, members):
        if rec.state_of is None:
            return None
        rows.append(j if rec.rows is None else rec.rows.item(j))
    names: dict = {}  # site → (kind, discrete) of its first step, in the order of the steps
    for rec in records:
        for k, s in rec.sites.items():
            if k not in names:
                names[k] = (s.kind, bool(s.discrete))
    sites = {}
    totals = np.zeros(T)
    for k, (kind, discrete) in names.items():
        at = [rec.sites.get(k) for rec in records]  # (None: a step without the site)
        w = _column(at, rows, kind)
        if w is None:
            return None
        lp, values, dists = w
        totals += lp
        sites[k] = WrittenSite(kind, discrete, values, lp, dists,
                               None if None not in at else np.array([s is not None for s in at]))
    rows_of: dict = {}  # site → its rows (made once)
    states = []
    for t, rec in enumerate(records):
        several, of = rec.state_of
        for k in of if several else (of,):
            if k not in rows_of:
                rows_of[k] = _rows(sites[k].values)
        states.append(tuple(rows_of[k][t] for k in of) if several else rows_of[of][t])
    return WrittenChain(sites, states, totals)


def _column(at: list, rows: list, kind):
    """(log-densities (T,), values (T, ...) or None, distributions or None) of one site along
    the trajectory (``at``: the site in each step, None where a step has none), or None when
    they cannot be written as a column (sites of another kind, values of several types or
    shapes, a family that cannot construct its entries).  One pass over the steps."""
    valued = kind == LATENT or kind == DETERMINISTIC
    lps, kept, dtype = [], [], None
    for s, r in zip(at, rows):
        if s is None:
            lps.append(0.0)
            kept.append(None)
            continue
        if s.kind != kind:
            return None
        lp = s.lp
        lps.append(0.0 if lp is None else lp.item(r))  # (recorded: None)
        if valued:
            v = s.values
            if dtype is None:
                dtype = v.dtype
            elif v.dtype != dtype:
                return None  # (values of several types: an object column's)
            kept.append(v[r])
    lp = np.array(lps)
    if not valued:
        return lp, None, None
    if dtype.kind == "O":  # (values of several types: an object column's)
        return None
    if len(kept) != len(rows):  # (a step without the site: zeros of the others' shape)
        fill = np.zeros_like(next(v for v in kept if v is not None))
        kept = [fill if v is None else v for v in kept]
    try:  # (one array of the rows; rows of several shapes are refused)
        values = np.array(kept)
    except ValueError:
        return None  # (values of several shapes: an object column's)
    if kind != LATENT:
        return lp, values, None
    dists = []  # (d, r): entry r of the step's d, made when first read; (d, None): d itself
    for s, r in zip(at, rows):
        if s is None:
            dists.append((None, None))
            continue
        d = s.dist
        if d is None or d.coupled:
            return None
        if s.values.shape[1:] == tuple(d.batch_shape) + tuple(d.event_shape):
            dists.append((d, None))  # (a member's value has all its axes: shared parameters)
        elif not d.has_member(r):
            return None  # (a family that cannot construct its entries)
        else:  # (invalid parameters: constructed now, as their error is raised now)
            dists.append((d, r) if d._error is None else (d.member(r), None))
    return lp, values, dists


def _entries(dists: list) -> np.ndarray:
    """The distributions of a written site's steps from its ``(d, r)`` pairs (:func:`_column`):
    entry r of d, d itself (r None), or None (a step without the site)."""
    return np.fromiter((d if r is None else d.member(r) for d, r in dists), dtype=object,
                       count=len(dists))  # (fromiter: no probe of each entry as a sequence)


def fits(node, w: WrittenChain) -> bool:
    """Whether the chain ``node`` stores its steps as the columns of ``w`` (the same sites in
    every step, values of the columns' types and shapes, no nested node or mem read)."""
    if node.T != w.T or node.nested or node.reads or node.sites.keys() != w.sites.keys():
        return False
    for k, col in node.sites.items():
        s = w.sites[k]
        if col.kind != s.kind or (col.kind == LATENT and bool(col.discrete) != s.discrete):
            return False
        every = np.ones(node.T, dtype=bool)
        if not np.array_equal(every if col.present is None else col.present.array(),
                              every if s.present is None else s.present):
            return False
        if col.values is not None:
            data = col.values.data
            if (s.values is None or data.dtype == object or s.values.dtype != data.dtype
                    or s.values.shape != data.shape):
                return False
    return True


def writable(trace, chain: tuple, w: WrittenChain) -> bool:
    """Whether the top-level chain ``chain`` of ``trace`` takes the columns ``w`` as they are."""
    node = trace.root.chains.get(chain)
    return node is not None and fits(node, w)


def write_chain(parent, local: tuple, addr: tuple, old, T: int, w: WrittenChain) -> States:
    """``th.markov`` in a run given the chain's columns: journal them, execute no step."""
    if old is None or old.T != T or not fits(old, w):
        raise ModelError(
            f"markov chain {'.'.join(map(str, addr))}: the trajectory drawn by the particles "
            "no longer fits the chain (its length or sites changed between the particle run "
            "and the run that writes it)"
        )
    run = parent.run
    run.lp_old += old.total_lp()
    run.lp_new += float(w.totals.sum())
    run.updates.append(WrittenUpdate(old, parent.new, local, w))
    parent.new.chains[local] = old
    parent.dirty = True  # (what follows the chain reads its new states)
    return States.of(w.states)


class WrittenUpdate(Update):
    """Writes a :class:`WrittenChain` into its node on commit: new columns, every step fresh."""

    __slots__ = ("block", "local", "node", "written")

    def __init__(self, node, block, local, written: WrittenChain):
        self.node, self.block, self.local, self.written = node, block, local, written

    def apply(self, trace, clock: int) -> None:
        node = self.node
        if node.owner not in trace.tokens:  # shared with a fork: a copy-on-write clone
            node = trace.own(node)
            self.block.chains[self.local] = node
        w, T = self.written, node.T
        for k, col in node.sites.items():
            s = w.sites[k]
            dists = None
            if col.dists is not None:  # (each step's, made when first read: few read them)
                dists = LazyColumn(functools.partial(_entries, s.dists))
            node.sites[k] = ChainSite(
                col.kind, col.discrete, None if col.values is None else Column(s.values),
                Column(s.lp), dists, None if s.present is None else Column(s.present.copy()),
                col.pytype)
        node.step_total = Column(w.totals.copy())
        node._lp = float(w.totals.sum())
        node._updates = 0
        node.stamp = Column(np.full(T, clock, dtype=np.int64))
        node.counts = Column(node.counts.array().copy())
        node._owned = True  # every column is a new array of its own
        node.states = States.of(w.states)
        node.valid_from = clock
        node.n_stale = 0
        node._shape = None
        if trace.stale_nodes:
            trace.stale_nodes.discard(node)
        if trace.changes is not None:
            trace.changes.wrote(node, None)
