"""Markov chains inside a plate: one chain per element, vectorized over the elements.

``th.markov`` inside ``with th.plate(...)`` runs through the batched executor
(:mod:`thrifty.core.batch`): step ``t`` is executed once over the plate's executed elements,
``step(t, prev)`` receiving the array of their states (:func:`run_batch_chain`).  The plate node
stores each site of the chain as ``(N, T, ...)`` columns over its elements
(:class:`ChainColumns`), so writing the executed elements is one column write per site.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.batch import BatchFrame, MemberSite
from thrifty.core.column import Column, ColumnSite
from thrifty.core.sites import Chain
from thrifty.core.vocab import LATENT, chain_length
from thrifty.errors import ModelError


class _StepSite:
    """Step ``t`` of a site of :class:`ChainColumns`, read like a plate's column site."""

    __slots__ = ("dist", "dist_elems", "site", "t")

    def __init__(self, site, t, dist, dist_elems):
        self.site, self.t, self.dist, self.dist_elems = site, t, dist, dist_elems

    @property
    def kind(self):
        return self.site.kind

    @property
    def discrete(self):
        return self.site.discrete

    @property
    def lp(self) -> Column:
        return Column(self.site.lp.array()[:, self.t])

    @property
    def values(self) -> Column | None:
        v = self.site.values
        return None if v is None else Column(v.array()[:, self.t])

    member_dist = ColumnSite.member_dist

    def take(self, elems):
        v = self.site.values.take(elems)
        return v[self.t] if np.ndim(elems) == 0 else v[:, self.t]


class ChainColumns:
    """A markov chain inside a plate: per site, (N, T, ...) columns over the elements, the
    steps at which the site exists, and its distribution at each step."""

    def __init__(self, T: int):
        self.T = T
        self.sites: dict = {}  # rel → plate column site over (N, T, ...)
        self.present: dict = {}  # rel → (T,) bool
        self.dists: dict = {}  # rel → list of T distributions
        self.dist_elems = None  # the elements they were executed for (None: every element)

    @classmethod
    def build(cls, steps: list, size: int) -> ChainColumns:
        out = cls(len(steps))
        for rel in _rels(steps):
            present = np.array([rel in sf.new for sf in steps], dtype=bool)
            first = next(sf.new[rel] for sf in steps if rel in sf.new)
            vals, lps = _stack(steps, rel, present, size)
            out.sites[rel] = _ColSite(
                None if vals is None else Column(vals), Column(lps), first.kind, first.discrete
            )
            out.present[rel] = present
            out.dists[rel] = [sf.new[rel].dist if rel in sf.new else None for sf in steps]
        return out

    def write(self, steps: list, idx) -> None:
        for rel, site in self.sites.items():
            present = self.present[rel]
            vals, lps = _stack(steps, rel, present, None)
            if vals is not None and any(rel in sf.changed for sf in steps):
                site.values.put(idx, vals)
            site.lp.put(idx, lps)
            self.dists[rel] = [sf.new[rel].dist if rel in sf.new else None for sf in steps]
        self.dist_elems = idx

    def gather(self, idx) -> _Gathered:
        return _Gathered(self, idx)

    def step_sites(self, t: int) -> dict:
        """The sites of step ``t`` (none past the chain's end: a step a longer chain adds)."""
        return {rel: _StepSite(s, t, self.dists[rel][t], self.dist_elems)
                for rel, s in self.sites.items() if t < self.T and self.present[rel][t]}

    def step_site(self, t: int, rel: tuple):
        s = self.sites.get(rel)
        if s is None or not 0 <= t < self.T or not self.present[rel][t]:
            return None
        return _StepSite(s, t, self.dists[rel][t], self.dist_elems)

    def latent_names(self) -> list:
        rels = [rel for rel, s in self.sites.items() if s.kind == LATENT]
        return [(t, rel) for t in range(self.T) for rel in rels if self.present[rel][t]]

    def latent_lp(self) -> float:
        out = 0.0
        for rel, s in self.sites.items():
            if s.kind == LATENT:
                out += float(s.lp.array()[:, self.present[rel]].sum())
        return out

    def share(self) -> ChainColumns:
        out = ChainColumns(self.T)
        out.sites = {k: s.share() for k, s in self.sites.items()}
        out.present = dict(self.present)
        out.dists = dict(self.dists)
        out.dist_elems = self.dist_elems
        return out


class _ColSite:
    """A (N, T, ...) site of a chain inside a plate."""

    __slots__ = ("discrete", "kind", "lp", "values")

    def __init__(self, values, lp, kind, discrete):
        self.values, self.lp, self.kind, self.discrete = values, lp, kind, discrete

    def share(self) -> _ColSite:
        return _ColSite(
            None if self.values is None else self.values.share(),
            self.lp.share(),
            self.kind,
            self.discrete,
        )


def _rels(steps) -> list:
    return list(dict.fromkeys(rel for sf in steps for rel in sf.new))


def _stack(steps, rel, present, size):
    """(values (n, T, ...) or None, lp (n, T)) of ``rel`` over the steps (zeros where absent)."""
    n = steps[0].acc.n
    first = next(sf.new[rel] for sf in steps if rel in sf.new)
    T = len(steps)
    lps = np.zeros((n, T))
    vals = None
    if first.values is not None:
        v0 = np.asarray(first.values)
        vals = np.zeros((n, T) + v0.shape[1:], dtype=v0.dtype)
    for t, sf in enumerate(steps):
        s = sf.new.get(rel)
        if s is None:
            continue
        if s.lp is not None:
            lps[:, t] = s.lp
        if vals is not None:
            vals[:, t] = s.values
    return vals, lps


class _Gathered:
    """A chain's stored columns gathered at a plate's executed elements, step by step."""

    def __init__(self, cols: ChainColumns, idx):
        self.cols, self.idx = cols, idx
        self.T = cols.T
        self._cache: dict = {}

    def _get(self, rel):
        got = self._cache.get(rel)
        if got is None:
            s = self.cols.sites[rel]
            got = self._cache[rel] = (
                None if s.values is None else s.values.take(self.idx),
                s.lp.take(self.idx),
            )
        return got

    def step_store(self, t: int):
        return _StepStore(self, t)


class _StepStore:
    __slots__ = ("g", "t")

    def __init__(self, g, t):
        self.g, self.t = g, t

    def get(self, rel):
        cols, t = self.g.cols, self.t
        s = cols.sites.get(rel)
        if s is None or t >= cols.T or not cols.present[rel][t]:
            return None
        vals, lps = self.g._get(rel)
        return MemberSite(
            None if vals is None else vals[:, t], lps[:, t], s.kind, s.discrete, cols.dists[rel][t]
        )


def run_batch_chain(acc, local, step, length, init, args):
    """A chain inside a plate (the batched executor's policy of
    :func:`thrifty.core.sites.markov`): step ``t`` runs once over the executed elements (the
    batch's members), ``step(t, prev)`` receiving the array of their states; every step runs."""
    T = chain_length(acc.generic_all(local), length, step)
    old = acc.old_chain(local)
    if old is not None and old.T != T:
        acc.require_full(f"a chain of length {T} (was {old.T})", local)
    if isinstance(init, np.ndarray) and init.ndim and init.shape[0] != acc.n:
        raise ModelError(
            f"th.markov {fmt(acc.generic_all(local))} in {acc.where()}: its initial state has "
            f"shape {init.shape} for {acc.n} executed element(s) — inside a plate a chain's "
            "initial state is read per element, as data are: a scalar, or one row per element "
            "indexed with the plate's index (init[i], init of shape (elements, ...))"
        )
    return _BatchSteps(acc, local, old, T, init)


class _BatchSteps(Chain):
    """Every step, each over the plate's executed elements at once."""

    def __init__(self, acc, local, old, T, init):
        self.acc, self.local, self.old, self.T = acc, local, old, T
        self.prev, self.out, self.frames = init, [], []

    def first(self):
        return 0 if self.T else None

    def enter(self, t):
        acc = self.acc
        store = self.old.step_store(t) if self.old is not None else None
        sf = BatchFrame(acc.run, acc, self.local + (t,), store)
        sf.strict = acc.strict  # (candidate lanes: the element's steps replay strictly)
        return sf, self.prev

    def leave(self, t, frame, state):
        self.frames.append(frame)
        self.out.append(state)
        self.prev = state
        return t + 1 if t + 1 < self.T else None

    def states(self):
        self.acc.new_chains[self.local] = self.frames
        return self.out
