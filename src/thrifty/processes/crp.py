"""The Chinese restaurant process as an exchangeable random procedure with sufficient statistics.

With concentration α, the n-th customer sits at an occupied table k with probability
n_k / (n − 1 + α) and at a new table with probability α / (n − 1 + α); a seating (partition) of
n customers into tables of sizes n_1..n_K has the Ewens probability

    p = α^K Γ(α) Π_k Γ(n_k) / Γ(α + n).

The counts are the statistics: ``incorporate`` / ``unincorporate`` of one customer are O(1), and
``predictive`` lists the K + 1 choices of a Gibbs step in O(K) (Neal 2000, Alg. 3).  Table
labels are arbitrary integers: a new table gets the smallest label never used.

In a model, ``crp = th.CRP(alpha)`` makes the procedure and ``th.sample("z", crp)`` inside a
plate draws one table label per element; the engine keeps the seating in the plate's node
(:mod:`thrifty.core.coupled`) and scores a changed label by its predictive given the others.
"""

from __future__ import annotations

import math


class CRP:
    """The Chinese restaurant process with concentration ``alpha``, and its seating statistics.

    Inside a model, ``th.sample("z", th.CRP(alpha))`` in a plate gives each element a table
    label; the labels are coupled (exchangeable), so Gibbs on one label enumerates the occupied
    tables and a new one (:func:`thrifty.gibbs`), and updates of many labels (``th.gibbs`` or
    ``th.mh`` on ``"data.z"``) go one label at a time, never as if they were independent.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def seating(n):
    ...     crp = th.CRP(1.5)
    ...     with th.plate("guests", n):
    ...         return th.sample("table", crp)
    >>> labels = th.simulate(seating(6), seed=0).output
    >>> len(labels), int(labels[0])
    (6, 0)

    Standalone, it is the statistics themselves:

    >>> crp = CRP(1.0)
    >>> for table in (0, 0, 1):
    ...     crp.incorporate(table)
    >>> [(k, round(p, 3)) for k, p in crp.predictive()]   # 2/4, 1/4 and α/4 = 1/4
    [(0, 0.5), (1, 0.25), (2, 0.25)]
    """

    coupled = True  # its draws are exchangeable, not independent (the engine's marker)
    latent = True  # as a plate node's state: the joint of latent choices (the labels)
    is_discrete = True
    batch_shape = event_shape = shape = ()

    def __init__(self, alpha: float):
        try:
            a = float(alpha)
        except (TypeError, ValueError):
            raise TypeError(f"CRP: alpha must be a positive number, got {alpha!r}") from None
        # invalid parameters: an error when the model is first run, a rejected proposal later
        # (the engine's rule for distributions: thrifty.core.vocab.check_dist)
        ok = a > 0 and math.isfinite(a)
        self._error = None if ok else f"alpha must be positive, got {alpha!r}"
        self.alpha = a
        self.counts: dict[int, int] = {}
        self.n = 0
        self.next_label = 0
        self._slg = 0.0  # Σ_k log Γ(n_k), kept by incorporate/unincorporate

    def __repr__(self) -> str:
        return f"CRP(alpha={self.alpha:.4g})"

    def copy(self) -> CRP:
        """The same seating (O(K)): a run changes a copy, never the trace's statistics."""
        out = object.__new__(CRP)
        out.__dict__.update(self.__dict__)
        out.counts = dict(self.counts)
        return out

    def _reads_key(self) -> tuple:
        """What a plate body that reads this CRP depends on (:mod:`thrifty.core.reads`): its
        seating, not α — the plate's coupled site absorbs α (its joint, Ewens, is re-scored
        under a new α in O(1); no element changes)."""
        return (self.n, tuple(self.counts.items()))

    def fork(self) -> CRP:
        """The state a forked trace's node keeps: itself (a run changes a copy, never the
        committed seating)."""
        return self

    def incorporate(self, table: int) -> None:
        c = self.counts.get(table, 0)
        if c:
            self._slg += math.log(c)  # log Γ(c + 1) − log Γ(c)
        self.counts[table] = c + 1
        self.n += 1
        if table >= self.next_label:
            self.next_label = table + 1

    def unincorporate(self, table: int) -> None:
        c = self.counts[table] - 1
        if c:
            self.counts[table] = c
            self._slg -= math.log(c)
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

    def log_prob(self, value=None) -> float:
        """The Ewens log-probability of the current seating, O(1):
        K log α + log Γ(α) − log Γ(α + n) + Σ_k log Γ(n_k)."""
        if value is not None:
            from thrifty.errors import ModelError

            raise ModelError(
                "a th.CRP draw outside a plate: its labels are coupled, so draw them inside a "
                'plate, one per element (with th.plate("data", N): z = th.sample("z", crp))'
            )
        a = self.alpha
        return len(self.counts) * math.log(a) + math.lgamma(a) - math.lgamma(a + self.n) + self._slg

    def sample(self, rng) -> int:
        """A table for the next customer (not incorporated)."""
        u = rng.random() * (self.n + self.alpha)
        for k, c in self.counts.items():
            u -= c
            if u < 0:
                return k
        return self.next_label
