"""The draws of a chain as *events*: what changed at which draw, materialised on demand.

A recorded variable (a site name such as ``"w"``, ``"data.z"`` or ``"s.x"``) is a
:class:`Series` of events in draw order:

* ``(d, None, value)`` — from draw ``d`` on, the whole value is ``value`` (``None``: the
  variable does not exist in the trace, e.g. a choice that exists only in some traces);
* ``(d, idx, values)`` — at draw ``d``, the elements ``idx`` (plate elements, markov steps)
  changed to ``values``.

A chain that changes one element of a 10⁵-element plate per step records one small event per
draw — O(draws + changes) memory — instead of a copy of the plate per draw.
:meth:`Series.materialize` builds the dense ``(draws, *shape)`` array; :meth:`Series.moments`
gives per-element means and variances without it.  :class:`SparseDraws` is what
``Result.sparse(name)`` returns for a variable too large to keep dense.
"""

from __future__ import annotations

import numpy as np


def _numeric(v) -> bool:
    return isinstance(v, (int, float, np.number, bool, np.bool_)) or (
        isinstance(v, np.ndarray) and v.dtype.kind in "biuf"
    )


class Series:
    """Events of one recorded variable (see the module docstring)."""

    __slots__ = ("draws", "elems", "values")

    def __init__(self):
        self.draws: list[int] = []
        self.elems: list = []
        self.values: list = []

    def __len__(self) -> int:
        return len(self.draws)

    def set(self, d: int, value) -> None:
        self.draws.append(d)
        self.elems.append(None)
        self.values.append(value)

    def change(self, d: int, idx: np.ndarray, values) -> None:
        self.draws.append(d)
        self.elems.append(idx)
        self.values.append(values)

    def extend(self, other: Series) -> None:
        self.draws += other.draws
        self.elems += other.elems
        self.values += other.values

    def between(self, a: int, b: int) -> Series:
        """The events of draws ``a ≤ d < b``."""
        out = Series()
        if self.draws:
            i = int(np.searchsorted(self.draws, a, side="left"))
            k = int(np.searchsorted(self.draws, b, side="left"))
            out.draws, out.elems, out.values = (self.draws[i:k], self.elems[i:k],
                                                self.values[i:k])
        return out

    def prefix(self, n: int) -> Series:
        """The events of the first ``n`` draws."""
        out = Series()
        k = int(np.searchsorted(self.draws, n, side="left")) if self.draws else 0
        out.draws, out.elems, out.values = self.draws[:k], self.elems[:k], self.values[:k]
        return out

    # -- what the values look like ------------------------------------------------------------
    def _wholes(self) -> list:
        return [v for e, v in zip(self.elems, self.values) if e is None]

    def layout(self):
        """(shape, dtype, complete) of the dense form, or None when values vary in shape or
        are not numbers (then the dense form is an object array)."""
        wholes = self._wholes()
        present = [v for v in wholes if v is not None]
        if not present or not all(_numeric(v) for v in present):
            return None
        shapes = {np.shape(v) for v in present}
        if len(shapes) != 1:
            return None
        dtype = np.result_type(*[np.asarray(v).dtype for v in present[:64]])
        for e, v in zip(self.elems, self.values):
            if e is not None:
                dtype = np.result_type(dtype, np.asarray(v).dtype)
        complete = len(present) == len(wholes) and bool(self.draws) and self.draws[0] == 0
        return shapes.pop(), dtype, complete

    def dense_nbytes(self, n: int) -> int:
        lay = self.layout()
        if lay is None:
            return 0
        shape, dtype, complete = lay
        item = np.dtype(dtype if complete or dtype.kind == "f" else float).itemsize
        return n * int(np.prod(shape, dtype=np.int64)) * item

    # -- materialising ----------------------------------------------------------------------------
    def materialize(self, n: int, out: np.ndarray | None = None) -> np.ndarray:
        """The value at draws 0..n-1 as an array ``(n, *shape)`` (NaN where the variable is
        absent; an object array of per-draw values when shapes or types vary), written into
        ``out`` when given."""
        lay = self.layout()
        if lay is None:
            return self._objects(n)
        shape, dtype, complete = lay
        if not complete and dtype.kind != "f":
            dtype = np.dtype(float)
        if out is None:
            out = np.empty((n,) + shape, dtype=dtype)
        else:
            dtype = out.dtype
        cur = None
        prev = 0
        for d, e, v in zip(self.draws, self.elems, self.values):
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

    def _objects(self, n: int) -> np.ndarray:
        out = np.empty(n, dtype=object)
        cur = None
        prev = 0
        for d, e, v in zip(self.draws, self.elems, self.values):
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
        for dd, e, v in zip(self.draws, self.elems, self.values):
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
        s1 = np.zeros(shape)
        s2 = np.zeros(shape)
        since = np.zeros(shape[:1] if shape else (), dtype=np.int64)
        cur = None
        for d, e, v in zip(self.draws, self.elems, self.values):
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
        total = 0
        for e, v in zip(self.elems, self.values):
            total += 64 + (np.asarray(v).nbytes if v is not None else 0)
            if e is not None:
                total += np.asarray(e).nbytes
        return total


class SparseDraws:
    """A variable kept as events per chain (too large to keep dense; see the module doc).

    ``shape`` is the shape of the dense array ``(chains, draws, *value_shape)``;
    ``materialize()`` (or ``np.asarray``) builds it; ``mean()`` / ``var()`` give per-element
    moments over chains and draws without it; ``chain(c)`` is chain c's :class:`Series`.
    """

    def __init__(self, name: str, series: list[Series], n: int, value_shape: tuple, dtype):
        self.name = name
        self.series = series
        self.n = n
        self.value_shape = value_shape
        self.dtype = np.dtype(dtype)

    @property
    def shape(self) -> tuple:
        return (len(self.series), self.n) + self.value_shape

    @property
    def dense_nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes held by the events (an estimate)."""
        return sum(s.nbytes() for s in self.series)

    def chain(self, c: int) -> Series:
        return self.series[c]

    def materialize(self) -> np.ndarray:
        out = np.empty(self.shape, dtype=self.dtype)  # written in place: no second copy
        for c, s in enumerate(self.series):
            if len(s):
                s.materialize(self.n, out=out[c])
            else:
                out[c] = np.nan
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.materialize()
        return a if dtype is None else a.astype(dtype)

    def _pooled(self):
        sums = [s.sums(self.n) for s in self.series if len(s)]
        return tuple(sum(x[i] for x in sums) for i in range(3))

    def mean(self) -> np.ndarray:
        """Per-element posterior mean over every chain and draw (where the variable exists)."""
        s1, _, k = self._pooled()
        with np.errstate(invalid="ignore", divide="ignore"):
            return s1 / k

    def var(self) -> np.ndarray:
        """Per-element variance over every chain and draw (pooled, where it exists)."""
        s1, s2, k = self._pooled()
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = s1 / k
            return np.maximum(s2 / k - mean * mean, 0.0)

    def __repr__(self) -> str:
        mb = self.dense_nbytes / 2**20
        return (
            f"SparseDraws({self.name!r}, shape={self.shape}, dense {mb:.0f} MiB, "
            f"events {self.nbytes / 2**20:.1f} MiB)"
        )


class DrawStore:
    """What the main process holds of one chain: its series, log-densities, latent counts and
    outputs, draw by draw."""

    def __init__(self):
        self.meta: dict = {}  # name → where the variable lives (for replaying outputs)
        self.unrecorded: set = set()  # latent variables that record=/exclude= left out
        self.series: dict[str, Series] = {}
        self.lp: list = []
        self.n_latent: list = []
        self.outputs: list = []
        self.n = 0

    def extend(self, chunk: dict) -> None:
        self.meta.update(chunk["meta"])
        self.unrecorded |= chunk.get("unrecorded", set())  # (absent from older checkpoints)
        for name, s in chunk["series"].items():
            mine = self.series.get(name)
            if mine is None:
                self.series[name] = s
            else:
                mine.extend(s)
        self.lp += chunk["lp"]
        self.n_latent += chunk["n_latent"]
        self.outputs += chunk["outputs"]
        self.n += chunk["n"]

    def chunk(self, a: int, b: int) -> dict:
        """Draws ``a ≤ d < b`` as a chunk for :meth:`extend` (what a checkpoint appends)."""
        series = {k: s.between(a, b) for k, s in self.series.items()}
        return {
            "meta": dict(self.meta),
            "unrecorded": set(self.unrecorded),
            "series": {k: s for k, s in series.items() if len(s)},
            "lp": self.lp[a:b],
            "n_latent": self.n_latent[a:b],
            "outputs": self.outputs[a:b],
            "n": b - a,
        }

    def prefix(self, n: int) -> DrawStore:
        out = DrawStore()
        out.meta = dict(self.meta)
        out.unrecorded = set(self.unrecorded)
        out.series = {k: s.prefix(n) for k, s in self.series.items()}
        out.series = {k: s for k, s in out.series.items() if len(s)}
        out.lp, out.n_latent, out.outputs = self.lp[:n], self.n_latent[:n], self.outputs[:n]
        out.n = min(n, self.n)
        return out
