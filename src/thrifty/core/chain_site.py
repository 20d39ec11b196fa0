"""The storage of a markov chain's steps: its sites as columns, its states in chunks.

A :class:`ChainSite` holds a site's values ``(T, ...)`` (numbers in a numeric column; other
values, or values of varying shapes, in an object column), log-densities ``(T,)``, the
distribution of each step, and — when the site is missing from some steps — a presence mask.
Writing one step is a few array stores (:meth:`ChainSite.write`).  :class:`States` holds the
states returned by the steps.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from thrifty.core.column import Column
from thrifty.core.trace import Site
from thrifty.core.vocab import DETERMINISTIC, LATENT, same_value


def _value_column(value, T: int) -> Column:
    """An empty column of T steps for values like ``value`` (numeric, else objects)."""
    if type(value) in (int, float, bool) or isinstance(value, np.generic):
        return Column(np.zeros(T, dtype=np.asarray(value).dtype))
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return Column(np.zeros((T,) + value.shape, dtype=value.dtype))
    return Column(np.empty(T, dtype=object))


def _fits(col: Column, value) -> bool:
    data = col.data
    if data.dtype == object:
        return True
    if data.ndim == 1:
        return type(value) in (int, float, bool) or (
            isinstance(value, np.generic) and value.dtype.kind in "biuf"
        )
    return isinstance(value, np.ndarray) and value.shape == data.shape[1:]


def _as_objects(col: Column) -> Column:
    data = col.array()
    out = np.empty(len(data), dtype=object)
    for t in range(len(data)):
        out[t] = data[t].item() if data.ndim == 1 else data[t].copy()
    return Column(out)


class ChainSite:
    """One site of a markov chain over its steps: values, log-densities, distributions and
    (when the site is missing from some steps) a presence mask."""

    __slots__ = ("discrete", "dists", "kind", "lp", "present", "pytype", "values")

    def __init__(self, kind, discrete, values, lp, dists, present=None, pytype=None):
        self.kind, self.discrete = kind, discrete
        self.values, self.lp, self.dists, self.present = values, lp, dists, present
        self.pytype = pytype  # the Python type of scalar values that fit ``values`` as they are

    @classmethod
    def new(cls, site: Site, T: int) -> ChainSite:
        values = pytype = None
        if site.kind in (LATENT, DETERMINISTIC):
            values = _value_column(site.value, T)
            if type(site.value) in (int, float, bool) and values.data.ndim == 1:
                pytype = type(site.value)
        present = Column(np.zeros(T, dtype=bool)) if T > 1 else None
        dists = Column(np.empty(T, dtype=object)) if site.kind == LATENT else None
        return cls(site.kind, site.discrete, values, Column(np.zeros(T)), dists, present, pytype)

    def write(self, t: int, site: Site) -> None:
        vals, lp, dists = self.values, self.lp, self.dists
        if vals is not None:
            v = site.value
            if type(v) is self.pytype and vals.owned:
                vals.data[t] = v
            else:
                if not _fits(vals, v):
                    self.values = vals = _as_objects(vals)
                    self.pytype = None
                vals.put(t, v)
        if lp.owned:
            lp.data[t] = site.lp
        else:
            lp.set(t, site.lp)
        if dists is not None:  # latent sites: the distribution each step was scored under
            if dists.owned:
                dists.data[t] = site.dist
            else:
                dists.set(t, site.dist)
        present = self.present
        if present is not None:
            if present.owned:
                present.data[t] = True
            else:
                present.set(t, True)

    def absent(self, t: int) -> None:
        if self.present is None:
            self.present = Column(np.ones(len(self.lp), dtype=bool))
        self.present.set(t, False)

    def at(self, t: int) -> bool:
        return self.present is None or self.present.get(t)

    def site(self, t: int) -> Site:
        vals, lp, dists = self.values, self.lp, self.dists
        d = None if dists is None else dists.get(t)
        if lp.patch is None and (vals is None or vals.patch is None):
            v = None if vals is None else (vals.data.item(t) if vals.data.ndim == 1
                                           else vals.data[t])
            return Site(v, lp.data.item(t), self.kind, self.discrete, d)
        v = None if vals is None else vals.get(t)
        return Site(v, lp.get(t), self.kind, self.discrete, d)

    def share(self) -> ChainSite:
        return ChainSite(
            self.kind,
            self.discrete,
            None if self.values is None else self.values.share(),
            self.lp.share(),
            None if self.dists is None else self.dists.share(),
            None if self.present is None else self.present.share(),
            self.pytype,
        )

    def resized(self, T: int) -> ChainSite:
        old = len(self.lp)
        present = (self.present.resized(T) if self.present is not None
                   else Column(np.arange(T) < old))
        return ChainSite(
            self.kind,
            self.discrete,
            None if self.values is None else self.values.resized(T),
            self.lp.resized(T),
            None if self.dists is None else self.dists.resized(T),
            present,
            self.pytype,
        )


_CHUNK = 64


class States(Sequence):
    """The states of a markov chain: an immutable sequence, what ``th.markov`` returns.

    Stored as a tuple of chunks of 64 states, so a run that re-executes a few steps returns
    the chain's states in O(1) (the stored chunks plus its own new states) and a commit writes
    them in O(64 + T/64) — never a copy of T states per step.  Reads like a list (indexing,
    slicing, iteration, ``len``, equality with a list); ``list(states)`` makes one.
    """

    __slots__ = ("_chunks", "_n", "_over")

    def __init__(self, chunks: tuple, n: int, over: dict | None = None):
        self._chunks, self._n, self._over = chunks, n, over

    @classmethod
    def of(cls, values) -> States:
        values = list(values)
        chunks = tuple(tuple(values[i : i + _CHUNK]) for i in range(0, len(values), _CHUNK))
        return cls(chunks, len(values))

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, t):
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(self._n))]
        try:
            t = operator.index(t)
        except TypeError:
            idx = np.asarray(t)
            if idx.ndim == 1 and idx.dtype.kind in "iu":
                return [self[int(i)] for i in idx]
            raise TypeError(
                f"markov states are indexed by an int, a slice or an array of ints, not {t!r} "
                "(list(states) gives a list)"
            ) from None
        if t < 0:
            t += self._n
        if not 0 <= t < self._n:
            raise IndexError("state index out of range")
        over = self._over
        if over and t in over:
            return over[t]
        return self._chunks[t >> 6][t & (_CHUNK - 1)]

    def __iter__(self):
        over = self._over
        if not over:
            for chunk in self._chunks:
                yield from chunk
            return
        for i in range(self._n):
            yield self[i]

    def with_new(self, new: dict) -> States:
        """These states with the steps of ``new`` replaced (a view for one run: O(1))."""
        return States(self._chunks, self._n, new) if new else self

    def committed(self, new: dict) -> States:
        """These states with the steps of ``new`` written into the chunks (O(64 + T/64))."""
        if not new:
            return self
        chunks = self._chunks
        if len(new) == 1:  # one step (a one-site update that left the next state alone)
            ((t, state),) = new.items()
            c, j = t >> 6, t & (_CHUNK - 1)
            chunk = chunks[c]
            if chunk[j] is state:
                return self
            return States(chunks[:c] + (chunk[:j] + (state,) + chunk[j + 1 :],) + chunks[c + 1 :],
                          self._n)
        by_chunk: dict = {}
        for t, state in new.items():
            c, j = t >> 6, t & (_CHUNK - 1)
            if chunks[c][j] is not state:  # (a re-executed step often returns the same state)
                by_chunk.setdefault(c, []).append((j, state))
        if not by_chunk:
            return self
        if len(by_chunk) == 1:  # the usual few-step update: one chunk, tuple slices
            ((c, items),) = by_chunk.items()
            chunk = list(chunks[c])
            for j, state in items:
                chunk[j] = state
            return States(chunks[:c] + (tuple(chunk),) + chunks[c + 1 :], self._n)
        outer = list(chunks)
        for c, items in by_chunk.items():
            chunk = list(outer[c])
            for j, state in items:
                chunk[j] = state
            outer[c] = tuple(chunk)
        return States(tuple(outer), self._n)

    def __eq__(self, other) -> bool:
        if not isinstance(other, (Sequence, np.ndarray)) or len(other) != self._n:
            return False
        return all(same_value(a, b) for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other) -> list:
        return list(self) + list(other)

    def __radd__(self, other) -> list:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self):
        return (States.of, (list(self),))
