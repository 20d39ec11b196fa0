"""The events of one recorded variable, held in typed arrays.

A recorded variable (a site name such as ``"w"``, ``"data.z"`` or ``"s.x"``) is a
:class:`Series` of events in draw order:

* ``(d, None, value)`` — from draw ``d`` on, the whole value is ``value`` (``None``: the
  variable does not exist in the trace, e.g. a choice that exists only in some traces);
* ``(d, idx, values)`` — at draw ``d``, the elements ``idx`` (plate elements, markov steps)
  changed to ``values``.

Memory is what the events hold, not Python objects per event.  Per event, the draw (int64),
a kind (int8) and an offset (int64); then, by kind:

* ``CHANGE``: the element indices (int64) and their values, appended to two typed arrays;
* ``ROW``, ``BOOL``, ``INT``, ``FLOAT``: a whole value of at most
  :data:`~thrifty.runtime.buffers.LARGE` bytes — a NumPy number or array, or a Python
  ``bool`` / ``int`` / ``float`` (read back as that type) — as one row of a typed array;
* ``OBJECT``, ``OBJ_CHANGE``: anything else (``None``, non-numbers, arrays of another shape or
  dtype, a whole plate column), kept as its Python object.

A draw that changes one float of a plate records 33 bytes; a draw that changes a top-level
scalar, 25.  Events are first appended to a Python list (a list append per event, in the
sampling loop) and moved into the arrays in bulk when the series is read, pickled or extended
(:meth:`Series._seal`).
"""

from __future__ import annotations

import sys

import numpy as np

from thrifty.runtime.buffers import LARGE, Buffer, storable

CHANGE, ROW, BOOL, INT, FLOAT, OBJECT, OBJ_CHANGE = range(7)
_PY = {BOOL: bool, INT: int, FLOAT: float}
_F8 = np.dtype(np.float64)
_ONE = (1,)
_PY_DTYPE = {float: _F8, int: np.dtype(np.int64), bool: np.dtype(np.bool_)}
_UNKNOWN = object()
_BLOCK = 4096  # events turned into Python objects at a time when reading
_FEW = 16  # element changes of at most this many elements are gathered into one block


def _numeric(v) -> bool:
    return isinstance(v, (int, float, np.number, bool, np.bool_)) or (
        isinstance(v, np.ndarray) and v.dtype.kind in "biuf"
    )


def _whole_kind(v) -> int:
    t = type(v)
    if t is float:
        return FLOAT
    if t is int:
        return INT if -(2**63) <= v < 2**63 else OBJECT
    if t is bool:
        return BOOL
    if isinstance(v, (np.ndarray, np.generic)) and storable(v.dtype) and v.nbytes <= LARGE:
        return ROW
    return OBJECT


class Series:
    """Events of one recorded variable (see the module docstring).

    >>> s = Series()
    >>> s.set(0, np.zeros(3)); s.change(2, np.array([1]), np.array([5.0]))
    >>> s.materialize(4)
    array([[0., 0., 0.],
           [0., 0., 0.],
           [0., 5., 0.],
           [0., 5., 0.]])
    """

    __slots__ = ("_at", "_d", "_idx", "_k", "_lay", "_log", "_obj", "_row", "_val")

    def __init__(self):
        self._d = Buffer(np.int64)  # per event: its draw
        self._k = Buffer(np.int8)  # per event: its kind
        self._at = Buffer(np.int64)  # per event: its offset in _idx/_val, _row or _obj
        self._idx = Buffer(np.int64)  # CHANGE: element indices
        self._val = Buffer()  # CHANGE: element values (rows aligned with _idx)
        self._row = Buffer()  # ROW, BOOL, INT, FLOAT: whole values
        self._obj: list = []  # OBJECT: whole values; OBJ_CHANGE: (indices, values)
        self._log: list = []  # events not yet moved into the arrays
        self._lay = _UNKNOWN

    def __len__(self) -> int:
        return len(self._d) + len(self._log)

    def set(self, d: int, value) -> None:
        """From draw ``d`` on the whole value is ``value`` (None: absent)."""
        self._log.append((d, None, value))

    def change(self, d: int, idx: np.ndarray, values) -> None:
        """At draw ``d`` the elements ``idx`` changed to ``values``."""
        self._log.append((d, idx, values))

    def change_one(self, d: int, i: int, value) -> None:
        """At draw ``d`` element ``i`` (an int) changed to ``value``, a Python float, int or
        bool (an element of a float64, int64 or bool column): :meth:`change` without two arrays
        per event."""
        self._log.append((d, i, value))

    def change_few(self, d: int, idx: list, values: list) -> None:
        """At draw ``d`` the elements ``idx`` (a sorted list of distinct ints, at most
        ``_FEW``) changed to ``values``, Python floats, ints or bools (of a float64, int64 or
        bool column): :meth:`change` without two arrays per event."""
        self._log.append((d, idx, values))

    # -- moving events into the arrays ------------------------------------------------------------
    def _seal(self) -> None:
        log = self._log
        if not log:
            return
        self._log = []
        self._lay = _UNKNOWN
        kinds, ats = [], []
        row, obj, val = self._row, self._obj, self._val
        # one-element changes with values of the stored dtype and row shape (one plate element
        # or markov step per draw: the usual case) are gathered and pushed as one block
        one_i: list = []
        one_v: list = []
        vd, vs = val.dtype, val.shape  # the value buffer's dtype and row shape (None: untyped)
        scalar = vs == () and vd is not None  # (the buffer takes one-number rows)
        for _, e, v in log:
            te = type(e)
            if te is int:  # change_one: a number
                if scalar and _PY_DTYPE.get(type(v)) is vd:
                    kinds.append(CHANGE)
                    ats.append(len(self._idx) + len(one_i))
                    one_i.append(e)
                    one_v.append(v)
                    continue
                e, v = np.array([e], dtype=np.int64), np.array([v])  # (the general path)
            elif te is list:  # change_few: numbers
                if scalar and all(_PY_DTYPE.get(type(x)) is vd for x in v):
                    kinds.append(CHANGE)
                    ats.append(len(self._idx) + len(one_i))
                    one_i.extend(e)
                    one_v.extend(v)
                    continue
                e, v = np.array(e, dtype=np.int64), np.array(v)  # (the general path)
            elif (vd is not None and te is np.ndarray and e.shape == _ONE
                    and type(v) is np.ndarray and v.dtype is vd and v.shape[1:] == vs
                    and v.shape[:1] == _ONE):
                kinds.append(CHANGE)
                ats.append(len(self._idx) + len(one_i))
                one_i.append(e[0])
                one_v.append(v[0])
                continue
            elif (vd is not None and te is np.ndarray and e.ndim == 1 and len(e) <= _FEW
                    and e.dtype.kind == "i" and type(v) is np.ndarray and v.dtype is vd
                    and v.shape[1:] == vs and v.shape[:1] == e.shape
                    and 8 * len(e) + v.nbytes <= LARGE):
                # a few elements (a markov step and the next): gathered too (the general path
                # below would push the same rows as a block of their own)
                kinds.append(CHANGE)
                ats.append(len(self._idx) + len(one_i))
                one_i.extend(e.tolist())
                one_v.extend(v)
                continue
            if one_i:  # (before anything else is pushed: the offsets stay in order)
                self._push_ones(one_i, one_v, vd)
                one_i, one_v = [], []
            if e is None:
                kind = _whole_kind(v)
                at = None
                if kind == FLOAT and row.dtype == _F8 and row.shape == ():
                    at = row.push(v)
                elif kind != OBJECT and row.accepts(np.asarray(v)):
                    at = row.push(v)
                if at is None:
                    kind, at = OBJECT, len(obj)
                    obj.append(v)
            else:
                idx = np.asarray(e, dtype=np.int64)
                vals = np.asarray(v)
                if (
                    idx.nbytes + vals.nbytes <= LARGE
                    and vals.shape[:1] == idx.shape
                    and val.accepts(vals, block=True)
                ):
                    kind, at = CHANGE, self._idx.push_block(idx)
                    val.push_block(vals)
                    vd, vs = val.dtype, val.shape
                    scalar = vs == () and vd is not None
                else:
                    kind, at = OBJ_CHANGE, len(obj)
                    obj.append((idx, v))
            kinds.append(kind)
            ats.append(at)
        if one_i:
            self._push_ones(one_i, one_v, vd)
        self._d.extend(np.fromiter((e[0] for e in log), dtype=np.int64, count=len(log)))
        self._k.extend(np.array(kinds, dtype=np.int8))
        self._at.extend(np.array(ats, dtype=np.int64))
        self._idx.flush()
        self._val.flush()
        self._row.flush()

    def _push_ones(self, idx: list, values: list, dtype) -> None:
        """One-element changes (elements, values of the value buffer's dtype), as one block."""
        self._idx.push_block(np.array(idx, dtype=np.int64))
        self._val.push_block(np.array(values, dtype=dtype))

    def extend(self, other: Series) -> None:
        """Append the events of ``other`` (all at or after this series' last draw)."""
        self._seal()
        other._seal()
        if not len(other):
            return
        rows, vals = other._row.view(), other._val.view()
        if (len(rows) and not self._row.accepts(rows, block=True)) or (
            len(vals) and not self._val.accepts(vals, block=True)
        ):  # values of another layout: event by event (the ones that fit go into the arrays)
            for d, e, v in other.events():
                self._log.append((d, e, v))
            self._seal()
            return
        self._lay = _UNKNOWN
        base = np.array([len(self._idx), *[len(self._row)] * 4, *[len(self._obj)] * 2])
        kinds = other._k.view()
        self._d.extend(other._d.view())
        self._k.extend(kinds)
        self._at.extend(other._at.view() + base[kinds])
        self._idx.extend(other._idx.view())
        if len(vals):
            self._val.extend(vals)
        if len(rows):
            self._row.extend(rows)
        self._obj += other._obj

    # -- reading ----------------------------------------------------------------------------------
    @property
    def draws(self) -> np.ndarray:
        """The draw of each event (nondecreasing), a read-only view."""
        self._seal()
        v = self._d.view()[:]
        v.flags.writeable = False
        return v

    def events(self):
        """``(d, idx or None, value)`` for each event in order.  Arrays are views into the
        series: copy one before modifying it.  Whole values recorded as Python scalars come
        back as the same type; NumPy values with the series' dtype."""
        self._seal()
        n = len(self._d)
        if not n:
            return
        draws, kinds, at = self._d.view(), self._k.view(), self._at.view()
        idx, val, row, obj = self._idx.view(), self._val.view(), self._row.view(), self._obj
        ch = np.flatnonzero(kinds == CHANGE)  # a CHANGE's elements end where the next's start
        ch_stop = np.r_[at[ch][1:], len(idx)]
        for lo in range(0, n, _BLOCK):  # Python lists of one block at a time
            hi = min(n, lo + _BLOCK)
            i, j = np.searchsorted(ch, (lo, hi))
            stop = np.zeros(hi - lo, dtype=np.int64)
            stop[ch[i:j] - lo] = ch_stop[i:j]
            r0, rowl = 0, []  # the block's Python scalars (their rows are consecutive)
            py = at[lo:hi][(kinds[lo:hi] >= BOOL) & (kinds[lo:hi] <= FLOAT)]
            if len(py):
                r0 = int(py[0])
                rowl = row[r0 : int(py[-1]) + 1].tolist()
            for d, k, a, b in zip(draws[lo:hi].tolist(), kinds[lo:hi].tolist(),
                                  at[lo:hi].tolist(), stop.tolist()):
                if k == CHANGE:
                    yield d, idx[a:b], val[a:b]
                elif k == ROW:
                    yield d, None, row[a]
                elif k == OBJECT:
                    yield d, None, obj[a]
                elif k == OBJ_CHANGE:
                    yield (d, *obj[a])
                else:
                    yield d, None, _PY[k](rowl[a - r0])

    def _cut(self, i: int, k: int) -> Series:
        """The events ``i ≤ j < k``, sharing this series' arrays (views)."""
        self._seal()
        out = Series()
        if k <= i:
            return out
        kinds, at = self._k.view(), self._at.view()
        kk, aa = kinds[i:k], at[i:k]
        lo = [0, 0, 0]  # first offset of the CHANGE, row and object events
        hi = [0, 0, 0]
        for f, sel in enumerate((kk == CHANGE, (kk >= ROW) & (kk <= FLOAT), kk >= OBJECT)):
            if sel.any():
                mine = aa[sel]
                lo[f], hi[f] = int(mine[0]), int(mine[-1]) + 1
        if lo[0] != hi[0]:  # the elements run to the next CHANGE event's
            later = np.flatnonzero(kinds[k:] == CHANGE)
            hi[0] = int(at[k + later[0]]) if len(later) else len(self._idx)
        base = np.array([lo[0], *[lo[1]] * 4, *[lo[2]] * 2])
        out._d = self._d.slice(i, k)
        out._k = self._k.slice(i, k)
        out._at = Buffer.wrap(aa - base[kk] if base.any() else aa)
        out._idx = self._idx.slice(lo[0], hi[0])
        out._val = self._val.slice(lo[0], hi[0])
        out._row = self._row.slice(lo[1], hi[1])
        out._obj = self._obj[lo[2] : hi[2]]
        return out

    def between(self, a: int, b: int) -> Series:
        """The events of draws ``a ≤ d < b`` (views of this series' arrays)."""
        d = self.draws
        return self._cut(int(np.searchsorted(d, a, side="left")),
                         int(np.searchsorted(d, b, side="left")))

    def prefix(self, n: int) -> Series:
        """The events of the first ``n`` draws (views of this series' arrays)."""
        return self._cut(0, int(np.searchsorted(self.draws, n, side="left")))

    # -- what the values look like ----------------------------------------------------------------
    def layout(self):
        """(shape, dtype, complete) of the dense form, or None when values vary in shape or
        are not numbers (then the dense form is an object array)."""
        self._seal()
        if self._lay is _UNKNOWN:
            self._lay = self._layout()
        return self._lay

    def _layout(self):
        kinds, at = self._k.view(), self._at.view()
        if not len(kinds):
            return None
        shapes, dtypes, absent = set(), [], False
        if ((kinds >= ROW) & (kinds <= FLOAT)).any():
            shapes.add(self._row.shape)
            dtypes.append(self._row.dtype)
        for j in np.flatnonzero(kinds == OBJECT):
            v = self._obj[at[j]]
            if v is None:
                absent = True
            elif not _numeric(v):
                return None
            else:
                shapes.add(np.shape(v))
                dtypes.append(np.asarray(v).dtype)
        if len(shapes) != 1:
            return None
        if (kinds == CHANGE).any():
            dtypes.append(self._val.dtype)
        for j in np.flatnonzero(kinds == OBJ_CHANGE):
            dtypes.append(np.asarray(self._obj[at[j]][1]).dtype)
        complete = not absent and int(self._d.view()[0]) == 0
        return shapes.pop(), np.result_type(*dtypes), complete

    def dense_nbytes(self, n: int) -> int:
        lay = self.layout()
        if lay is None:
            return 0
        shape, dtype, complete = lay
        item = np.dtype(dtype if complete or dtype.kind == "f" else float).itemsize
        return n * int(np.prod(shape, dtype=np.int64)) * item

    # -- materialising ----------------------------------------------------------------------------
    def _runs(self, n: int):
        """For a series of whole numeric rows only: (first draw, rows per event, draws each
        event lasts up to ``n``) — or None."""
        kinds = self._k.view()
        if not len(kinds) or not ((kinds >= ROW) & (kinds <= FLOAT)).all():
            return None
        d = np.minimum(self._d.view(), n)
        return int(d[0]), self._row.view()[self._at.view()], np.diff(np.r_[d, n])

    def materialize(self, n: int, out: np.ndarray | None = None) -> np.ndarray:
        """The value at draws 0..n-1 as an array ``(n, *shape)`` (NaN where the variable is
        absent; an object array of per-draw values when shapes or types vary), written into
        ``out`` when given."""
        lay = self.layout()
        if lay is None:
            return self.objects(n)
        shape, dtype, complete = lay
        if not complete and dtype.kind != "f":
            dtype = np.dtype(float)
        if out is None:
            out = np.empty((n,) + shape, dtype=dtype)
        else:
            dtype = out.dtype
        runs = self._runs(n)
        if runs is not None:  # whole values only: one repeat
            first, rows, reps = runs
            if first:
                out[:first] = np.nan
            out[first:] = np.repeat(rows, reps, axis=0)
            return out
        cur = None
        prev = 0
        for d, e, v in self.events():
            if d >= n:
                break
            if d > prev:
                out[prev:d] = np.nan if cur is None else cur
                prev = d
            if e is None:
                cur = None if v is None else np.array(v, dtype=dtype)
            else:
                cur[e] = v
        if prev < n:
            out[prev:n] = np.nan if cur is None else cur
        return out

    def objects(self, n: int) -> np.ndarray:
        """The value at draws 0..n-1 as an object array of ``n`` per-draw values (None where
        the variable is absent)."""
        out = np.empty(n, dtype=object)
        cur = None
        prev = 0
        for d, e, v in self.events():
            if d >= n:
                break
            for i in range(prev, d):
                out[i] = cur
            prev = max(prev, d)
            if e is None:
                cur = v
            else:
                cur = np.array(cur)
                cur[e] = v
        for i in range(prev, n):
            out[i] = cur
        return out

    def value_at(self, d: int):
        """The value at draw ``d`` (O(events before d))."""
        cur = None
        for dd, e, v in self.events():
            if dd > d:
                break
            if e is None:
                cur = None if v is None else np.array(v)
            else:
                cur[e] = v
        return cur

    def sums(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per element, over draws 0..n-1 where the variable exists: Σ value, Σ value² and the
        number of draws — without the dense array: O(events + elements × whole values)."""
        lay = self.layout()
        if lay is None or not lay[2]:
            a = self.materialize(n).astype(float)
            ok = ~np.isnan(a)
            return np.where(ok, a, 0).sum(0), np.where(ok, a * a, 0).sum(0), ok.sum(0)
        shape = lay[0]
        runs = self._runs(n)
        if runs is not None:
            _, rows, reps = runs
            rows = rows.astype(float)
            w = reps.reshape((-1,) + (1,) * len(shape))
            return (w * rows).sum(0), (w * rows * rows).sum(0), np.full(shape, n)
        s1 = np.zeros(shape)
        s2 = np.zeros(shape)
        since = np.zeros(shape[:1] if shape else (), dtype=np.int64)
        cur = None
        for d, e, v in self.events():
            if d >= n:
                break
            if e is None:
                if cur is not None:
                    w = d - since
                    w = w.reshape(w.shape + (1,) * (len(shape) - w.ndim))
                    s1 += w * cur
                    s2 += w * cur * cur
                cur = np.array(v, dtype=float)
                since = np.full_like(since, d)
            else:
                w = (d - since[e]).reshape((-1,) + (1,) * (len(shape) - 1))
                s1[e] += w * cur[e]
                s2[e] += w * cur[e] * cur[e]
                cur[e] = v
                since[e] = d
        w = n - since
        w = w.reshape(w.shape + (1,) * (len(shape) - w.ndim))
        s1 += w * cur
        s2 += w * cur * cur
        return s1, s2, np.full(shape, n)

    def moments(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per-element mean and variance over the draws 0..n-1 where the variable exists."""
        s1, s2, k = self.sums(n)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = s1 / k
            return mean, np.maximum(s2 / k - mean * mean, 0.0)

    def nbytes(self) -> int:
        """Bytes held by the events: the arrays (spare capacity included) and, for values
        kept as objects, their arrays or Python size."""
        total = sum(b.nbytes for b in (self._d, self._k, self._at, self._idx, self._val,
                                       self._row))
        total += sys.getsizeof(self._obj) + sys.getsizeof(self._log)
        for v in self._obj:
            for part in v if type(v) is tuple else (v,):
                total += (part.nbytes + 112 if isinstance(part, np.ndarray)
                          else sys.getsizeof(part))
        return total + 64 * len(self._log)

    def trim(self) -> None:
        """Drop the arrays' spare capacity (when no more events will come)."""
        self._seal()
        for b in (self._d, self._k, self._at, self._idx, self._val, self._row):
            b.trim()

    # -- as plain arrays (checkpoints) ------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The events as arrays: ``draw``, ``kind``, ``at`` (per event), ``elements``,
        ``values`` (CHANGE), ``rows`` (whole values) and ``objects`` (an object array: the
        values kept as Python objects).  :meth:`from_arrays` is the inverse."""
        self._seal()
        objects = np.empty(len(self._obj), dtype=object)
        for i, v in enumerate(self._obj):
            objects[i] = v
        return {"draw": self._d.view(), "kind": self._k.view(), "at": self._at.view(),
                "elements": self._idx.view(), "values": self._val.view(),
                "rows": self._row.view(), "objects": objects}

    @classmethod
    def from_arrays(cls, arrays: dict) -> Series:
        """The series of :meth:`to_arrays` (the arrays are used, not copied)."""
        s = cls()
        s._d = Buffer.wrap(np.asarray(arrays["draw"], dtype=np.int64))
        s._k = Buffer.wrap(np.asarray(arrays["kind"], dtype=np.int8))
        s._at = Buffer.wrap(np.asarray(arrays["at"], dtype=np.int64))
        s._idx = Buffer.wrap(np.asarray(arrays["elements"], dtype=np.int64))
        s._val = Buffer.wrap(arrays["values"]) if len(arrays["values"]) else Buffer()
        s._row = Buffer.wrap(arrays["rows"]) if len(arrays["rows"]) else Buffer()
        s._obj = list(arrays["objects"])
        return s

    def __getstate__(self):
        return self.to_arrays()

    def __setstate__(self, state):
        other = Series.from_arrays(state)
        for name in Series.__slots__:
            setattr(self, name, getattr(other, name))
