"""The arms of adaptive LMH (paper 001 §3): one per random-choice instance of the trace.

Each arm i has a reward r_i and a count c_i (001 Alg. 3) and the weight of its upper confidence
bound (001 Eq. 17)

    W_i = r_i / c_i + C · sqrt(log Σ_j c_j / c_i).

The global term log Σ_j c_j changes at every adaptation, so the weights are kept as two parts
over the arms of the current trace, a_i = r_i / c_i and b_i = 1 / sqrt(c_i), each in a sum tree
(a Fenwick tree): ΣW = Σa + C·sqrt(L)·Σb, and an arm is drawn ∝ W by choosing the a-part with
probability Σa/ΣW, then an arm ∝ a_i (or ∝ b_i) — O(log n) per draw and per changed arm.

The arrays are aligned with the trace's latent choices in the order of its resolved selection
(:class:`~thrifty.inference.selection.ChoiceSet`: top-level and markov-step sites, plate
elements, mem keys); statistics are keyed by address, so a choice that leaves the trace keeps
them and resumes them when its address returns.  A new arm starts at r = c = 1 (001 Alg. 2
line 1: W⁰ constant).
"""

from __future__ import annotations

import math

import numpy as np


class SumTree:
    """Fenwick tree over n non-negative values: point update, total and prefix search."""

    __slots__ = ("n", "sum", "tree", "values")

    def __init__(self, values: np.ndarray):
        values = np.asarray(values, dtype=float)
        self.values = values.tolist()  # Python floats: point reads and writes without numpy
        self.n = len(self.values)
        tree = np.concatenate([[0.0], values])
        for i in range(1, self.n + 1):  # O(n) construction
            j = i + (i & -i)
            if j <= self.n:
                tree[j] += tree[i]
        self.tree = tree.tolist()
        self.sum = float(values.sum())

    def set(self, i: int, value: float) -> None:
        values = self.values
        delta = value - values[i]
        values[i] = value
        self.sum += delta
        i += 1
        tree, n = self.tree, self.n
        while i <= n:
            tree[i] += delta
            i += i & -i

    def total(self) -> float:
        return self.sum

    def find(self, u: float) -> int:
        """The index i with prefix(i) ≤ u < prefix(i + 1) (u in [0, total))."""
        pos, tree, n = 0, self.tree, self.n
        step = 1 << (n.bit_length() - 1) if n else 0
        while step:
            nxt = pos + step
            if nxt <= n and tree[nxt] <= u:
                pos = nxt
                u -= tree[nxt]
            step >>= 1
        return min(pos, n - 1)


class Arms:
    """Rewards and counts of the random choices, and sampling ∝ W (module docstring)."""

    def __init__(self, exploration: float, name_of=None, by_name: dict | None = None):
        self.C = float(exploration)
        self.name_of = name_of  # address → site name, for per-name totals in ``by_name``
        self.by_name = by_name if by_name is not None else {}  # name → [.., .., Σr, Σc]
        # address → [r, c, its name's totals, times selected, times accepted] of every arm seen
        self.saved: dict = {}
        self.total_count = 0.0  # Σ_j c_j over all arms ever seen
        self.scale = 0.0  # C · sqrt(log max(Σ_j c_j, 1)), updated with total_count
        self.addrs: list = []  # the current trace's arms, in order
        self.pos: dict = {}  # address → position in ``addrs``
        self.a = self.b = None

    def __setstate__(self, state):  # checkpoints written before ``scale`` was cached
        self.__dict__.update(state)
        if "scale" not in state:
            self._count(0.0)

    # -- the arms of a trace ----------------------------------------------------------------------
    def stats(self, addr) -> list:
        s = self.saved.get(addr)
        if s is None:
            name = None if self.name_of is None else self.name_of(addr)
            tally = self.by_name.setdefault(name, [0, 0, 0.0, 0.0])
            s = self.saved[addr] = [1.0, 1.0, tally, 0, 0]
            self._count(1.0)
            tally[2] += 1.0
            tally[3] += 1.0
        return s

    def align(self, addrs: list) -> None:
        """Make ``addrs`` (a trace's choices) the current arms: O(n)."""
        self.addrs = list(addrs)
        self.pos = {a: i for i, a in enumerate(self.addrs)}
        rc = np.array([self.stats(a)[:2] for a in self.addrs], dtype=float).reshape(-1, 2)
        self.a = SumTree(rc[:, 0] / rc[:, 1])
        self.b = SumTree(1.0 / np.sqrt(rc[:, 1]))

    def _count(self, w: float) -> None:
        self.total_count += w
        self.scale = self.C * math.sqrt(math.log(max(self.total_count, 1.0)))

    def _scale(self) -> float:
        return self.scale

    def weight(self, addr) -> float:
        s = self.saved.get(addr)
        r, c = (1.0, 1.0) if s is None else s[:2]
        return r / c + self.scale / math.sqrt(c)

    def total_weight(self) -> float:
        """ΣW over the current arms."""
        return self.a.sum + self.scale * self.b.sum

    def weights_of(self, addrs) -> float:
        """ΣW over ``addrs`` (the arms of a proposed trace)."""
        return sum(self.weight(a) for a in addrs)

    def draw(self, rng) -> int:
        """The position of an arm drawn with probability W_i / ΣW (001 Eq. 5)."""
        scale = self.scale
        sa, sb = self.a.sum, scale * self.b.sum
        u = rng.random() * (sa + sb)
        if u < sa:
            return self.a.find(u)
        return self.b.find((u - sa) / scale)

    # -- adaptation (001 Alg. 3) ------------------------------------------------------------------
    def reward(self, addr, w: float) -> None:
        """r_m ← r_m + w, c_m ← c_m + w."""
        s = self.saved.get(addr) or self.stats(addr)
        s[0] += w
        s[1] += w
        self._count(w)
        tally = s[2]
        tally[2] += w
        tally[3] += w
        self._refresh(addr, s)

    def charge(self, addr, w: float) -> None:
        """c_k ← c_k + w (the output did not change)."""
        s = self.saved.get(addr) or self.stats(addr)
        s[1] += w
        self._count(w)
        s[2][3] += w
        self._refresh(addr, s)

    def _refresh(self, addr, s) -> None:
        i = self.pos.get(addr)
        if i is not None:
            self.a.set(i, s[0] / s[1])
            self.b.set(i, 1.0 / math.sqrt(s[1]))
