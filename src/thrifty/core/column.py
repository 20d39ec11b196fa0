"""Columns: the ``(size, ...)`` arrays that plates and markov chains store, shared between forks.

A node of a trace keeps one value (and one log-density) per plate element or per markov step in
a :class:`Column`.  Reading and writing go through :meth:`Column.take` and :meth:`Column.put`
so that a column can be *shared* copy-on-write by the nodes of forked traces:

* an *owned* column writes into its array in place (the usual case: no fork);
* a *shared* column (the clone of a node after :meth:`thrifty.core.trace.Trace.fork`) never
  writes into the array it shares; it keeps the values it changed in a small ``patch``
  ``{element: value}`` and copies the array only once the patch holds ``size / 16`` entries —
  so a fork followed by k changes costs O(k), amortised, whatever the size of the plate.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.vocab import total

_MISSING = object()
_I64 = np.dtype(np.int64)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _one(idx) -> bool:
    """Whether ``idx`` names one element (an int), not a slice or an index array."""
    return not isinstance(idx, slice) and np.ndim(idx) == 0


def _scalar(v):
    """A NumPy scalar as the Python scalar it came from (values replayed to user code)."""
    return v.item() if isinstance(v, np.generic) else v


class Column:
    """One value per element (leading axis), owned or shared copy-on-write (module docstring)."""

    __slots__ = ("data", "owned", "patch")

    def __init__(self, data: np.ndarray, owned: bool = True):
        self.data = data
        # a read-only array (a value handed to the model read-only) is shared: copied on write
        self.owned = owned and data.flags.writeable
        self.patch: dict | None = None

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def empty_like(cls, values, size: int) -> Column:
        """A zero column of ``size`` elements shaped and typed like one element of ``values``
        (an array with a leading element axis)."""
        v = np.asarray(values)
        return cls(np.zeros((size,) + v.shape[1:], dtype=v.dtype))

    @classmethod
    def of(cls, values) -> Column:
        """A column owning ``values`` (no copy: the caller gives the array away)."""
        return cls(np.asarray(values))

    def share(self) -> Column:
        """A copy-on-write clone (O(patch)): neither column writes into the shared array."""
        self.owned = False
        out = Column(self.data, owned=False)
        if self.patch:
            out.patch = dict(self.patch)
        return out

    # -- reading --------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def dtype(self):
        return self.data.dtype

    def take(self, idx):
        """The values at ``idx`` (a slice, an index array, or an int)."""
        out = self.data[idx]
        if self.patch:
            out = self._patched(idx, out)
        return out

    def get(self, i: int):
        """The value of element ``i`` (a Python scalar for scalar elements)."""
        if self.patch:
            v = self.patch.get(i, _MISSING)
            if v is not _MISSING:
                return _scalar(v)
        data = self.data
        return data.item(i) if data.ndim == 1 else data[i]

    def total_at(self, idx) -> float:
        """The sum of the (scalar) values at ``idx`` (a slice or an index array), a float."""
        data = self.data
        if type(idx) is np.ndarray and len(idx) == 1 and not self.patch and data.ndim == 1:
            return data.item(idx.item())  # (one element: its entry, the number the sum gives)
        return total(self.take(idx))

    def set(self, i: int, value) -> None:
        """Write one element whose type fits the column (no dtype promotion)."""
        if self.owned:
            self.data[i] = value
        else:
            self.put(i, value)

    def array(self) -> np.ndarray:
        """Every element (read-only use: the array may be shared)."""
        if self.patch:
            self._own()
        return self.data

    def frozen(self) -> np.ndarray:
        """Every element, as a read-only view: for values handed to a run, which marks what it
        hands to the model read-only (:func:`~thrifty.core.vocab.readonly`) — on the view, not
        on the array this column may write in place."""
        view = self.array().view()
        view.flags.writeable = False
        return view

    def _patched(self, idx, out):
        p = self.patch
        if isinstance(idx, slice):
            start, stop, _ = idx.indices(len(self.data))
            out = out.copy()
            for k, v in p.items():
                if start <= k < stop:
                    out[k - start] = v
            return out
        if _one(idx):
            v = p.get(int(idx), _MISSING)
            return out if v is _MISSING else v
        idx = np.asarray(idx)
        if len(idx) <= len(p):
            for j, e in enumerate(idx.tolist()):
                v = p.get(e, _MISSING)
                if v is not _MISSING:
                    out[j] = v
            return out
        keys = np.fromiter(p.keys(), dtype=np.int64, count=len(p))
        order = np.argsort(keys)
        keys = keys[order]
        pos = np.minimum(np.searchsorted(keys, idx), len(keys) - 1)
        hit = np.flatnonzero(keys[pos] == idx)
        if len(hit):
            vals = list(p.values())
            for j, k in zip(hit.tolist(), order[pos[hit]].tolist()):
                out[j] = vals[k]
        return out

    # -- writing --------------------------------------------------------------------------------
    def _own(self) -> None:
        data = self.data.copy()
        if self.patch:
            for k, v in self.patch.items():
                data[k] = v
        self.data, self.patch, self.owned = data, None, True

    def _fit(self, values) -> None:
        """Promote the column's dtype when ``values`` do not fit it (ints receiving floats,
        float32 receiving float64: an element's value is stored as it was scored; strings
        longer than the column's, as memoized keys "k10" after "k9": NumPy would cut them)."""
        dt = self.data.dtype
        v = np.asarray(values)
        if v.dtype != dt and ((dt.kind in "iubf" and v.dtype.kind not in "OUS")
                              or (dt.kind in "US" and v.dtype.kind == dt.kind)):
            new = np.result_type(dt, v.dtype)
            if new != dt:
                self._own()
                self.data = self.data.astype(new)

    def put(self, idx, values) -> None:
        """Write ``values`` at ``idx`` (a slice, a sorted index array, or an int)."""
        dt = self.data.dtype
        if (dt.kind in "iubUS" or (dt.itemsize < 8 and dt.kind == "f")) and not (
                (type(values) is np.ndarray and values.dtype is dt)  # (nothing to promote)
                or (type(values) is int and dt is _I64 and _I64_MIN <= values <= _I64_MAX)):
            self._fit(values)
        if not self.owned:
            n = (
                len(range(*idx.indices(len(self.data))))
                if isinstance(idx, slice)
                else 1
                if np.ndim(idx) == 0
                else len(idx)
            )
            if n + len(self.patch or ()) > max(8, len(self.data) // 16):
                self._own()
            else:
                self._put_patch(idx, values)
                return
        if self.data.dtype.kind == "O" and not _one(idx):
            for j, e in enumerate(np.arange(len(self.data))[idx].tolist()):
                self.data[e] = values[j]
            return
        self.data[idx] = values

    def _put_patch(self, idx, values) -> None:
        p = self.patch
        if p is None:
            p = self.patch = {}
        if _one(idx):
            p[int(idx)] = values.copy() if isinstance(values, np.ndarray) else values
            return
        elems = np.arange(len(self.data))[idx] if isinstance(idx, slice) else np.asarray(idx)
        if self.data.dtype == object:
            for j, e in enumerate(elems.tolist()):
                p[e] = values[j]
            return
        v = np.broadcast_to(np.asarray(values, dtype=self.data.dtype),
                            (len(elems),) + self.data.shape[1:])
        for j, e in enumerate(elems.tolist()):
            p[e] = v[j].copy() if v.ndim > 1 else v[j]

    def replace(self, values) -> None:
        """Take ``values`` (every element, the caller's own array) as the column's content."""
        data = np.asarray(values)
        self.data, self.patch, self.owned = data, None, data.flags.writeable

    def resized(self, size: int) -> Column:
        """An owned copy with ``size`` elements (zeros beyond the old ones)."""
        data = self.array()
        out = np.zeros((size,) + data.shape[1:], dtype=data.dtype)
        m = min(size, len(data))
        out[:m] = data[:m]
        return Column(out)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        state = "owned" if self.owned else f"shared, {len(self.patch or ())} patched"
        return f"Column({self.data.dtype}{list(self.data.shape)}, {state})"

    def __getstate__(self):
        if self.owned:
            return self.data
        data = self.data.copy()  # a shared array is pickled as this column's own copy
        for k, v in (self.patch or {}).items():
            data[k] = v
        return data

    def __setstate__(self, data):
        self.data, self.patch, self.owned = data, None, True


_DATA = Column.data  # (the slot that holds a column's array)


class LazyColumn(Column):
    """A column whose array is made when first used (``make()``: an array of its own), and
    which is then a plain :class:`Column`: one that is written whole and seldom read — the
    distributions of a chain's steps written from a particle's trajectory
    (:mod:`thrifty.core.written`), which a sweep of particle Gibbs writes every time and only
    some kernels ever read."""

    __slots__ = ()

    def __init__(self, make):
        _DATA.__set__(self, make)
        self.owned, self.patch = True, None

    @property
    def data(self) -> np.ndarray:
        data = _DATA.__get__(self, Column)()
        self.data = data
        return data

    @data.setter
    def data(self, value) -> None:
        _DATA.__set__(self, value)
        self.__class__ = Column  # (made, or replaced: a plain column from now on)

    def __reduce__(self):  # (pickled, copied: as the column it is once made)
        return Column, (self.data,)


class ColumnSite:
    """One site over a plate's elements: a column of values and a column of log-densities."""

    __slots__ = ("discrete", "dist", "dist_elems", "kind", "lp", "values")

    def __init__(self, values: Column | None, lp: Column | None, kind, discrete=False, dist=None,
                 dist_elems=None):
        self.values = values
        self.lp = lp
        self.kind = kind
        self.discrete = discrete
        self.dist = dist  # the distribution of the last execution (its family, its support)
        # the elements ``dist`` was executed for (None: every element, in order) — what a
        # support read from it holds for (:meth:`thrifty.core.sections.PlateView.support_of`)
        self.dist_elems = dist_elems

    def take(self, elems):
        return self.values.take(elems)

    def member_dist(self, e: int):
        """Element ``e``'s own distribution as the last run that executed every element, or
        ``e``, gave it (an entry of ``dist``; ``dist`` itself when its parameters are shared by
        the elements); None when that run did not execute ``e`` or the family cannot say."""
        d, have = self.dist, self.dist_elems
        if d is None:
            return None
        if have is not None:
            pos = int(np.searchsorted(have, e))
            if pos == len(have) or have[pos] != e:
                return None
            e = pos
        bs = d.batch_shape
        if not bs or bs[0] not in (self.lp.size if have is None else len(have), 1):
            return d  # (parameters shared by the elements)
        return d.member(e)

    def share(self) -> ColumnSite:
        return ColumnSite(
            None if self.values is None else self.values.share(),
            None if self.lp is None else self.lp.share(),
            self.kind,
            self.discrete,
            self.dist,
            self.dist_elems,
        )


def write_sites(store: dict, frame, idx, size: int, full: bool) -> None:
    """Write a plate frame's new site values and log-densities at ``idx`` into ``store`` (site
    name → :class:`ColumnSite`); ``full``: the frame ran every element."""
    if full:
        for k in [k for k in store if k not in frame.new]:
            del store[k]
    for k, s in frame.new.items():
        cur = store.get(k)
        if cur is None or cur.kind != s.kind:
            values = None if s.values is None else Column.empty_like(s.values, size)
            lp = Column(np.zeros(size)) if s.lp is not None else None
            cur = store[k] = ColumnSite(values, lp, s.kind, s.discrete)
            changed = True
        else:
            changed = k in frame.changed
        cur.dist, cur.dist_elems = s.dist, None if full else idx
        if changed and s.values is not None:
            if full:  # the execution's arrays are its own: keep them
                cur.values.replace(np.asarray(s.values))
            else:
                cur.values.put(idx, s.values)
        if s.lp is not None:
            if full:
                cur.lp.replace(s.lp)
            else:
                cur.lp.put(idx, s.lp)
