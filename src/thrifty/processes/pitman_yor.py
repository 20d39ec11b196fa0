"""The Pitman–Yor process (two-parameter Chinese restaurant), a coupled process in one file.

With discount 0 ≤ d < 1 and concentration α > −d, the n-th customer sits at an occupied table
k with probability (n_k − d) / (n − 1 + α) and at a new table with probability
(α + d K) / (n − 1 + α); a seating of n customers at K tables of sizes n_1..n_K has the
exchangeable partition probability (Pitman 1995)

    p = Π_{i=1}^{K−1} (α + i d) / (α + 1)_{n−1} · Π_k (1 − d)_{n_k − 1},

with (x)_m = Γ(x + m) / Γ(x) the rising factorial.  d = 0 is the CRP.  Both hyperparameters may
be owned by the process (drawn at ``(name, "discount")`` and ``(name, "alpha")`` when both are
distributions, at ``(name,)`` when one is): a change of them re-scores the seating — O(1) for α,
O(K) for d — executing no element (:mod:`thrifty.processes.base`).
"""

from __future__ import annotations

import math

from thrifty.processes.base import Process, Tables, table_label_error


class PitmanYorSeating(Tables):
    """The seating statistics of a Pitman–Yor process with ``params = (discount, alpha)``."""

    @property
    def discount(self) -> float:
        return self.params[0]

    def weight(self, c: int) -> float:
        return c - self.params[0]

    def new_weight(self) -> float:
        d, a = self.params
        return a + d * len(self.counts)

    def norm_shift(self) -> float:
        return self.params[1]

    def log_prob(self) -> float:
        """log p of the seating: Σ_{i<K} log(α + i d) − log (α + 1)_{n−1}
        + Σ_k [log Γ(n_k − d) − log Γ(1 − d)], in O(1) from (d, α, K, n, Σ_k log Γ(n_k − d))."""
        d, a = self.params
        K, n = len(self.counts), self.n
        if n == 0:
            return 0.0
        if d > 0:  # Π_{i=1}^{K−1} (α + i d) = d^{K−1} Γ(α/d + K) / Γ(α/d + 1)
            tables = (K - 1) * math.log(d) + math.lgamma(a / d + K) - math.lgamma(a / d + 1)
        else:
            tables = (K - 1) * math.log(a)
        rising = math.lgamma(a + n) - math.lgamma(a + 1)
        return tables - rising + self._slg - K * math.lgamma(1.0 - d)


class PitmanYor(Process):
    """The Pitman–Yor process with ``discount`` d ∈ [0, 1) and concentration ``alpha`` > −d.

    Used like :class:`~thrifty.processes.CRP` — ``th.sample("z", py)`` in a plate gives each
    element a table label — with heavier-tailed table sizes (K grows as n^d).

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def seating(n):
    ...     py = th.PitmanYor(0.5, alpha=dist.Gamma(2.0, 1.0), name="alpha")
    ...     with th.plate("guests", n):
    ...         return th.sample("table", py)
    >>> t = th.simulate(seating(8), seed=0)
    >>> len(t.output), t["alpha"] > 0
    (8, True)
    """

    param_names = ("discount", "alpha")

    def __init__(self, discount, alpha, *, name=None):
        super().__init__(name, discount=discount, alpha=alpha)

    @staticmethod
    def invalid(params: tuple) -> str | None:
        d, a = params
        if not 0.0 <= d < 1.0:
            return f"discount must be in [0, 1), got {d!r}"
        if not (a > -d and math.isfinite(a)):
            return f"alpha must be finite and > -discount, got alpha={a!r}, discount={d!r}"
        return None

    def state(self, params: tuple) -> PitmanYorSeating:
        return PitmanYorSeating(params)

    value_error = staticmethod(table_label_error)
