"""The Chinese restaurant process as an exchangeable random procedure with sufficient statistics.

With concentration α, the n-th customer sits at an occupied table k with probability
n_k / (n − 1 + α) and at a new table with probability α / (n − 1 + α); a seating (partition) of
n customers into tables of sizes n_1..n_K has the Ewens probability

    p = α^K Γ(α) Π_k Γ(n_k) / Γ(α + n).

The counts are the statistics: ``incorporate`` / ``unincorporate`` of one customer are O(1), and
``predictive`` lists the K + 1 choices of a Gibbs step in O(K) (Neal 2000, Alg. 3).  Table
labels are arbitrary integers: a new table gets the smallest label never used.

Status: the building block of issue 10.  ``th.sample("z", crp)`` inside a plate needs the
engine's support for coupled plate sites, which does not exist yet.
"""

from __future__ import annotations

import math


class CRP:
    """Seating statistics of a Chinese restaurant process with concentration ``alpha``.

    >>> crp = CRP(1.0)
    >>> for table in (0, 0, 1):
    ...     crp.incorporate(table)
    >>> [(k, round(p, 3)) for k, p in crp.predictive()]   # 2/4, 1/4 and α/4 = 1/4
    [(0, 0.5), (1, 0.25), (2, 0.25)]
    """

    def __init__(self, alpha: float):
        if not alpha > 0:
            raise ValueError(f"CRP: alpha must be positive, got {alpha!r}")
        self.alpha = float(alpha)
        self.counts: dict[int, int] = {}
        self.n = 0
        self.next_label = 0

    def incorporate(self, table: int) -> None:
        self.counts[table] = self.counts.get(table, 0) + 1
        self.n += 1
        self.next_label = max(self.next_label, table + 1)

    def unincorporate(self, table: int) -> None:
        c = self.counts[table] - 1
        if c:
            self.counts[table] = c
        else:
            del self.counts[table]
        self.n -= 1

    def predictive(self) -> list[tuple[int, float]]:
        """(table, probability) for the occupied tables and a new one."""
        z = self.n + self.alpha
        out = [(k, c / z) for k, c in self.counts.items()]
        out.append((self.next_label, self.alpha / z))
        return out

    def predictive_log_prob(self, table: int) -> float:
        c = self.counts.get(table, 0)
        return math.log((c if c else self.alpha) / (self.n + self.alpha))

    def log_prob(self) -> float:
        """The Ewens log-probability of the current seating."""
        a = self.alpha
        return (len(self.counts) * math.log(a) + math.lgamma(a) - math.lgamma(a + self.n)
                + sum(math.lgamma(c) for c in self.counts.values()))

    def sample(self, rng) -> int:
        """A table for the next customer (not incorporated)."""
        u = rng.random() * (self.n + self.alpha)
        for k, c in self.counts.items():
            u -= c
            if u < 0:
                return k
        return self.next_label
