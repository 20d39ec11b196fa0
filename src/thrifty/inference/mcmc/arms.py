"""The arms of adaptive LMH (paper 001 §3): one per random-choice instance of the trace.

Each arm i has a reward r_i and a count c_i (001 Alg. 3) and the weight of its upper confidence
bound (001 Eq. 17)

    W_i = r_i / c_i + C · sqrt(log Σ_j c_j / c_i).

The global term log Σ_j c_j changes at every adaptation, so the weights are kept as two parts
over the arms of the current trace, a_i = r_i / c_i and b_i = 1 / sqrt(c_i), each in a sum tree
(a Fenwick tree): ΣW = Σa + C·sqrt(L)·Σb, and an arm is drawn ∝ W by choosing the a-part with
probability Σa/ΣW, then an arm ∝ a_i (or ∝ b_i) — O(log n) per draw and per changed arm.

The arrays hold one position per latent choice of the current trace (top-level and markov-step
sites, plate elements, mem keys), built in one pass when the kernel first sees a trace; a
proposal that creates or drops choices adds and removes their positions (``add`` / ``remove``,
O(log n) each), so it costs O(changes · log n), not O(n).  Statistics are keyed by address, so a
choice that leaves the trace keeps them and resumes them when its address returns.  A new arm
starts at r = c = 1 (001 Alg. 2 line 1: W⁰ constant).
"""

from __future__ import annotations

import math

import numpy as np


class SumTree:
    """Fenwick tree over n non-negative values: point update, append, swap-remove, total and
    prefix search.  Its capacity doubles when full (append: O(log n) amortised)."""

    __slots__ = ("cap", "n", "sum", "tree", "values")

    def __init__(self, values: np.ndarray, cap: int | None = None):
        values = np.asarray(values, dtype=float)
        self.n = len(values)
        self.cap = max(self.n, 1) if cap is None else cap
        vals = np.zeros(self.cap)
        vals[: self.n] = values
        self.values = vals.tolist()  # Python floats: point reads and writes without numpy
        tree = np.concatenate([[0.0], vals])
        for i in range(1, self.cap + 1):  # O(n) construction
            j = i + (i & -i)
            if j <= self.cap:
                tree[j] += tree[i]
        self.tree = tree.tolist()
        self.sum = float(values.sum())

    def set(self, i: int, value: float) -> None:
        values = self.values
        delta = value - values[i]
        values[i] = value
        self.sum += delta
        i += 1
        tree, cap = self.tree, self.cap
        while i <= cap:
            tree[i] += delta
            i += i & -i

    def append(self, value: float) -> None:
        if self.n == self.cap:  # full: rebuild at twice the capacity
            self.__init__(np.asarray(self.values[: self.n]), 2 * self.cap)
        self.n += 1
        self.set(self.n - 1, value)

    def remove(self, i: int) -> None:
        """Move the last value to position ``i`` and drop the last position."""
        last = self.n - 1
        if i != last:
            self.set(i, self.values[last])
        self.set(last, 0.0)
        self.n = last

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
        self.frozen = False  # weights fixed (freeze_after): a new address leaves ΣC unchanged

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
            self.created = getattr(self, "created", 0) + 1  # arms ever made (new addresses)
            if getattr(self, "frozen", False):  # (the exploration term stays: the weights
                return s  # are then a fixed function of the address, the kernel fixed)
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

    def add(self, addr) -> None:
        """A choice that entered the trace becomes an arm (its saved statistics, if its address
        was seen before): O(log n)."""
        r, c = self.stats(addr)[:2]
        self.pos[addr] = len(self.addrs)
        self.addrs.append(addr)
        self.a.append(r / c)
        self.b.append(1.0 / math.sqrt(c))

    def remove(self, addr) -> None:
        """A choice that left the trace stops being an arm (its statistics are kept): the last
        arm takes its position, O(log n)."""
        i = self.pos.pop(addr)
        last = self.addrs.pop()
        if last != addr:
            self.addrs[i] = last
            self.pos[last] = i
        self.a.remove(i)
        self.b.remove(i)

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
