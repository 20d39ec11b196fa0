"""Growable typed arrays: how recorded draws are held in memory.

A :class:`Buffer` is an array of *rows* of one shape and one numeric dtype that grows at its
end (capacity ×1.5), with rows not yet copied in kept in a small Python list until the next
read (:meth:`Buffer.flush`): appending one row costs a list append, and a draw that changes one
float of a plate costs 8 bytes of values, not a NumPy array object (~100 bytes) per event.

A row is accepted only when it is stored exactly: same row shape, and a dtype that holds the
buffer's rows and the new row without loss (``bool → int64 → float64`` while the integers are
below 2⁵³; ``float32 → float64``).  :meth:`Buffer.accepts` says whether a value fits; the
caller keeps a value that does not as a Python object instead (:mod:`thrifty.runtime.draws`).
"""

from __future__ import annotations

import numpy as np

#: A value above this many bytes is kept as its own array rather than copied into a buffer (a
#: whole plate column: no capacity slack, no copy when the buffer grows).
LARGE = 4096


def storable(dtype: np.dtype) -> bool:
    """Whether a buffer may hold this dtype (bools, integers up to int64, floats)."""
    return dtype.kind in "bif" or (dtype.kind == "u" and dtype.itemsize < 8)


def _exact(a: np.ndarray, dtype: np.dtype) -> bool:
    """Whether ``a`` converts to ``dtype`` and back without changing a value."""
    if a.dtype == dtype:
        return True
    with np.errstate(all="ignore"):
        back = a.astype(dtype).astype(a.dtype)
    return bool(np.array_equal(back, a, equal_nan=a.dtype.kind == "f"))


class Buffer:
    """Rows of one shape and numeric dtype (see the module docstring).

    >>> b = Buffer()
    >>> b.accepts(np.asarray(1.5)) and b.push(1.5), b.accepts(np.asarray(2)) and b.push(2)
    (0, 1)
    >>> b.view()
    array([1.5, 2. ])
    """

    __slots__ = ("_a", "_n", "_pending", "_rows")

    def __init__(self, dtype=None, shape: tuple = ()):
        self._a = None if dtype is None else np.empty((0, *shape), dtype=dtype)
        self._n = 0
        self._pending: list = []  # rows (or blocks of rows) not yet copied into _a
        self._rows = 0  # rows in _pending

    @classmethod
    def wrap(cls, a: np.ndarray) -> Buffer:
        """A buffer holding the rows of ``a`` (not copied: the next append reallocates)."""
        b = cls()
        b._a, b._n = a, len(a)
        return b

    def slice(self, lo: int, hi: int) -> Buffer:
        """A buffer holding rows ``lo:hi`` of this one (a view: see :meth:`wrap`)."""
        self.flush()
        return Buffer() if self._a is None else Buffer.wrap(self._a[lo:hi])

    def __len__(self) -> int:
        return self._n + self._rows

    @property
    def dtype(self):
        return None if self._a is None else self._a.dtype

    @property
    def shape(self):
        """The shape of one row (None while the buffer is empty and untyped)."""
        return None if self._a is None else self._a.shape[1:]

    def accepts(self, value: np.ndarray, block: bool = False) -> bool:
        """Whether ``value`` (one row, or with ``block`` a block of rows) is stored exactly;
        promotes the buffer's dtype when that is what it takes (a lossless promotion)."""
        dtype, shape = value.dtype, value.shape[1:] if block else value.shape
        if not storable(dtype):
            return False
        if self._a is None:
            self._a = np.empty((0, *shape), dtype=dtype)
            return True
        if shape != self._a.shape[1:]:
            return False
        if dtype == self._a.dtype:
            return True
        new = np.result_type(self._a.dtype, dtype)
        if not storable(new) or not _exact(value, new):
            return False
        if new != self._a.dtype:
            self.flush()
            if not _exact(self._a[: self._n], new):
                return False
            self._a = self._a.astype(new)
        return True

    def push(self, value) -> int:
        """Append one row (accepted before); returns its index."""
        self._pending.append(value)
        self._rows += 1
        return len(self) - 1

    def push_block(self, block: np.ndarray) -> int:
        """Append a block of rows (accepted before); returns the index of its first row."""
        start = len(self)
        if len(block):
            self._pending.append(_Block(block))
            self._rows += len(block)
        return start

    def _stack(self) -> np.ndarray:
        rows, dtype = self._pending, self._a.dtype
        if not any(type(r) is _Block for r in rows):
            return np.array(rows, dtype=dtype).reshape((len(rows), *self._a.shape[1:]))
        return np.concatenate(
            [r.a if type(r) is _Block else np.asarray(r, dtype=dtype)[None] for r in rows]
        ).astype(dtype, copy=False)

    def flush(self) -> None:
        """Copy the pending rows into the array."""
        if not self._rows:
            return
        new = self._stack()
        self._pending, self._rows = [], 0
        self.extend(new)

    def extend(self, rows: np.ndarray) -> None:
        """Append ``rows`` (accepted before) now."""
        self.flush()
        k = len(rows)
        if not k:
            return
        need = self._n + k
        if need > len(self._a):
            grown = np.empty((max(need, len(self._a) * 3 // 2, 8), *self._a.shape[1:]),
                             dtype=self._a.dtype)
            grown[: self._n] = self._a[: self._n]
            self._a = grown
        self._a[self._n : need] = rows
        self._n = need

    def view(self) -> np.ndarray:
        """The rows, a view (empty float array while untyped)."""
        self.flush()
        return np.empty(0) if self._a is None else self._a[: self._n]

    def trim(self) -> None:
        """Drop the spare capacity."""
        self.flush()
        if self._a is not None and len(self._a) > self._n:
            self._a = self._a[: self._n].copy()

    @property
    def nbytes(self) -> int:
        """Bytes held (spare capacity included; pending rows counted at their stored size)."""
        if self._a is None:
            return 0
        row = self._a.dtype.itemsize * int(np.prod(self._a.shape[1:], dtype=np.int64))
        return self._a.nbytes + self._rows * row


class Runs:
    """A per-draw sequence held as runs: the first draw and the value of each run.

    ``objects=False``: integers, a run per change of value; ``objects=True``: any objects, a
    run per change of identity (a program output that stays the same object, ``None`` included,
    costs nothing per draw).

    >>> r = Runs()
    >>> r.extend([3, 3, 3, 4]); r.extend([4, 3])
    >>> r.take(0, len(r)), r.runs
    (array([3, 3, 3, 4, 4, 3]), 3)
    """

    __slots__ = ("_n", "_start", "_values")

    def __init__(self, objects: bool = False):
        self._start = Buffer(np.int64)
        self._values = [] if objects else Buffer(np.int64)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def runs(self) -> int:
        return len(self._start)

    def _last(self):
        if not len(self._start):
            return _NONE
        if type(self._values) is list:
            return self._values[-1]
        return int(self._values.view()[-1])

    def extend(self, values) -> None:
        """Append the values of the next draws."""
        n0 = self._n
        self._n += len(values)
        if type(self._values) is list:
            last = self._last()
            for i, v in enumerate(values):
                if v is not last:
                    self._start.push(n0 + i)
                    self._values.append(v)
                    last = v
            return
        a = np.asarray(values, dtype=np.int64)
        if not len(a):
            return
        last = self._last()
        new = np.flatnonzero(np.r_[last is _NONE or a[0] != last, a[1:] != a[:-1]])
        self._start.extend(new + n0)
        self._values.extend(a[new])

    def take(self, a: int, b: int):
        """The values of draws ``a ≤ d < b`` (an array, or a list for objects)."""
        b = min(b, self._n)
        if b <= a:
            return [] if type(self._values) is list else np.empty(0, dtype=np.int64)
        start = self._start.view()
        i = int(np.searchsorted(start, a, side="right")) - 1
        k = int(np.searchsorted(start, b, side="left"))
        reps = np.diff(np.r_[np.maximum(start[i:k], a), b])
        if type(self._values) is list:
            out: list = []
            for v, r in zip(self._values[i:k], reps.tolist()):
                out += [v] * r
            return out
        return np.repeat(self._values.view()[i:k], reps)

    def prefix(self, n: int) -> Runs:
        """The first ``n`` draws (sharing this one's arrays)."""
        out = Runs(objects=type(self._values) is list)
        k = int(np.searchsorted(self._start.view(), n, side="left"))
        out._start = self._start.slice(0, k)
        out._values = self._values[:k] if type(self._values) is list else self._values.slice(0, k)
        out._n = min(n, self._n)
        return out

    def trim(self) -> None:
        self._start.trim()
        if type(self._values) is not list:
            self._values.trim()

    @property
    def nbytes(self) -> int:
        """Bytes held (for objects: the references, not the objects)."""
        v = self._values
        return self._start.nbytes + (8 * len(v) if type(v) is list else v.nbytes)


_NONE = object()


class _Block:
    """A block of rows among the pending rows of a :class:`Buffer`."""

    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a
