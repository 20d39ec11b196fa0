"""The draws of a chain as *events*: what changed at which draw, materialised on demand.

Each recorded variable is a :class:`~thrifty.runtime.series.Series` of events (whole values,
and changes of some elements), held in typed arrays.  A chain that changes one element of a
10⁵-element plate per step records one small event per draw — O(draws + changes) memory, 33
bytes for a one-float change — instead of a copy of the plate per draw.
:meth:`Series.materialize` builds the dense ``(draws, *shape)`` array; :meth:`Series.moments`
gives per-element means and variances without it.  :class:`SparseDraws` is what
``Result.sparse(name)`` returns for a variable too large to keep dense; :class:`DrawStore` is
what the main process holds of one chain.
"""

from __future__ import annotations

import numpy as np

from thrifty.runtime.buffers import Buffer, Runs
from thrifty.runtime.series import Series

__all__ = ["DrawStore", "Series", "SparseDraws"]


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
    """What the main process holds of one chain: its series, and per draw the log-density
    (an array), the number of latent choices and the program output (held as runs: a value
    per change)."""

    def __init__(self):
        self.meta: dict = {}  # name → where the variable lives (for replaying outputs)
        self.unrecorded: set = set()  # latent variables that record=/exclude= left out
        self.series: dict[str, Series] = {}
        self._lp = Buffer(np.float64)
        self._n_latent = Runs()
        self._outputs = Runs(objects=True)
        self._stats: dict = {}  # name → Buffer of per-draw kernel statistics
        self.n = 0

    @property
    def lp(self) -> np.ndarray:
        """The log joint density of each draw (a view)."""
        return self._lp.view()

    @property
    def n_latent(self) -> np.ndarray:
        """The number of latent choices at each draw."""
        return self._n_latent.take(0, self.n)

    @property
    def stats(self) -> dict:
        """Per-draw kernel statistics (a gradient kernel's ``diverging``, ``tree_depth``,
        ...): name → array over the draws (NaN before a statistic's first draw)."""
        return {k: _padded(b.view(), self.n) for k, b in self._stats.items()}

    @property
    def outputs(self) -> list:
        """The program output of each draw (a new list of the recorded objects)."""
        return self._outputs.take(0, self.n)

    def extend(self, chunk: dict) -> None:
        """Append a chunk (a recorder's :meth:`~thrifty.runtime.recorder.Recorder.take`, or a
        :meth:`chunk` of another store)."""
        self.meta.update(chunk["meta"])
        self.unrecorded |= chunk.get("unrecorded", set())  # (absent from older checkpoints)
        for name, s in chunk["series"].items():
            mine = self.series.get(name)
            if mine is None:
                s._seal()
                self.series[name] = s  # its arrays are not shared with a writer: kept
            else:
                mine.extend(s)
        self._lp.extend(np.asarray(chunk["lp"], dtype=np.float64))
        self._n_latent.extend(chunk["n_latent"])
        self._outputs.extend(chunk["outputs"])
        for name, values in chunk.get("stats", {}).items():  # (absent from older checkpoints)
            buf = self._stats.get(name)
            if buf is None:
                buf = self._stats[name] = Buffer(np.float64)
                buf.extend(np.full(self.n, np.nan))
            buf.extend(np.asarray(values, dtype=np.float64))
        self.n += chunk["n"]
        for buf in self._stats.values():  # a statistic this chunk lacked: NaN
            if len(buf) < self.n:
                buf.extend(np.full(self.n - len(buf), np.nan))

    def chunk(self, a: int, b: int) -> dict:
        """Draws ``a ≤ d < b`` as a chunk for :meth:`extend` (what a checkpoint appends)."""
        series = {k: s.between(a, b) for k, s in self.series.items()}
        return {
            "meta": dict(self.meta),
            "unrecorded": set(self.unrecorded),
            "series": {k: s for k, s in series.items() if len(s)},
            "lp": self.lp[a:b],
            "n_latent": self._n_latent.take(a, b),
            "outputs": self._outputs.take(a, b),
            "stats": {k: v[a:b] for k, v in self.stats.items()},
            "n": b - a,
        }

    def prefix(self, n: int, lp: np.ndarray | None = None) -> DrawStore:
        """The first ``n`` draws, sharing this store's arrays (and holding ``lp``, the first
        ``n`` log-densities, when the caller has them already)."""
        out = DrawStore()
        out.meta = dict(self.meta)
        out.unrecorded = set(self.unrecorded)
        out.series = {k: s.prefix(n) for k, s in self.series.items()}
        out.series = {k: s for k, s in out.series.items() if len(s)}
        out._lp = Buffer.wrap(self.lp[:n] if lp is None else lp)
        out._n_latent = self._n_latent.prefix(n)
        out._outputs = self._outputs.prefix(n)
        out._stats = {k: Buffer.wrap(v[:n]) for k, v in self.stats.items()}
        out.n = min(n, self.n)
        return out

    def trim(self) -> None:
        """Drop the arrays' spare capacity (the chain records no more draws)."""
        for s in self.series.values():
            s.trim()
        self._lp.trim()
        self._n_latent.trim()
        self._outputs.trim()
        for b in self._stats.values():
            b.trim()

    def nbytes(self) -> int:
        """Bytes held for the draws: the series, ``lp``, the runs of ``n_latent`` and of the
        outputs (their references; the output objects are the program's)."""
        return (sum(s.nbytes() for s in self.series.values()) + self._lp.nbytes
                + self._n_latent.nbytes + self._outputs.nbytes
                + sum(b.nbytes for b in self._stats.values()))


def _padded(a: np.ndarray, n: int) -> np.ndarray:
    return a if len(a) >= n else np.concatenate([a, np.full(n - len(a), np.nan)])
