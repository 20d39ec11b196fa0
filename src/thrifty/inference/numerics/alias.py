"""Walker's alias method: O(n) set-up, O(1) per draw from a fixed discrete distribution.

The table has one column per outcome i: with probability ``prob[i]`` column i yields i, else
``alias[i]``.  A draw picks a column uniformly and flips that column's coin, so
``P(i) = (prob[i] + Σ_{j: alias[j] = i} (1 − prob[j])) / n``.

Construction (Vose's pairing, vectorised).  Scale the weights to ``q = n·w/Σw`` (mean 1).  Each
*small* outcome (q < 1) is topped up by one *large* outcome (q ≥ 1), which gives away 1 − q_small.
Vose pairs them one at a time; here a whole round is done with cumulative sums: lay the smalls'
deficits ``1 − q`` end to end and the larges' excesses ``q − 1`` end to end (equal totals), and
give each small to the large whose excess interval contains the *start* of its deficit interval.
A large ``j`` then gives at most ``e_j + d_last`` (its excess plus the deficit of the last small
assigned to it), so it keeps ``q_j ≥ 1 − d_last = q_last ≥ 0``; larges left below 1 are the smalls
of the next round.  Rounds repeat while they are large; the few outcomes left (or a long chain of
larges each emptied by one small) finish with Vose's scalar loop.  Outcomes left over by rounding
get ``prob = 1``.
"""

from __future__ import annotations

import numpy as np

_VECTOR_MIN = 256  # below this many smalls, finish with the scalar loop


class AliasTable:
    """Sample indices ``0..n-1`` with probabilities proportional to ``weights`` (≥ 0, finite)."""

    __slots__ = ("alias", "n", "prob", "total")

    def __init__(self, weights):
        w = np.asarray(weights, dtype=float).reshape(-1)
        if np.any(~np.isfinite(w)) or np.any(w < 0):
            raise ValueError("alias table: weights must be finite and non-negative")
        self.n = n = len(w)
        self.total = float(w.sum())
        self.prob = np.ones(n)
        self.alias = np.arange(n, dtype=np.int64)
        if n == 0 or self.total <= 0:
            return
        q = w * (n / self.total)
        prob, alias = self.prob, self.alias
        small = np.flatnonzero(q < 1.0)
        large = np.flatnonzero(q >= 1.0)
        rounds = 0
        while len(small) >= _VECTOR_MIN and len(large) and rounds < 64:
            rounds += 1
            d = 1.0 - q[small]
            starts = np.cumsum(d) - d
            ends = np.cumsum(q[large] - 1.0)
            j = np.minimum(np.searchsorted(ends, starts, side="right"), len(large) - 1)
            prob[small] = q[small]
            alias[small] = large[j]
            q[large] -= np.bincount(j, weights=d, minlength=len(large))
            now_small = q[large] < 1.0
            small = large[now_small]
            large = large[~now_small]
        small_l, large_l = small.tolist(), large.tolist()
        ql = q  # scalar loop (Vose)
        while small_l and large_l:
            s = small_l.pop()
            g = large_l[-1]
            prob[s] = ql[s]
            alias[s] = g
            ql[g] += ql[s] - 1.0
            if ql[g] < 1.0:
                small_l.append(large_l.pop())
        # whatever is left has q = 1 up to rounding
        for i in small_l + large_l:
            prob[i] = 1.0
            alias[i] = i

    def probabilities(self) -> np.ndarray:
        """The distribution the table samples (for checks): O(n)."""
        n = self.n
        p = self.prob.copy()
        p += np.bincount(self.alias, weights=1.0 - self.prob, minlength=n)
        return p / n

    def sample(self, rng, size: int) -> np.ndarray:
        """``size`` independent draws (int64 array)."""
        if self.n == 0 or self.total <= 0:
            raise ValueError("alias table: cannot sample from an empty or all-zero distribution")
        u = rng.random(size) * self.n
        j = u.astype(np.int64)
        np.minimum(j, self.n - 1, out=j)
        return np.where(u - j < self.prob[j], j, self.alias[j])

    def __repr__(self) -> str:
        return f"AliasTable(n={self.n}, total={self.total:.6g})"
