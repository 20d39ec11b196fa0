"""The Chinese restaurant process: an exchangeable random procedure with sufficient statistics.

With concentration α, the n-th customer sits at an occupied table k with probability
n_k / (n − 1 + α) and at a new table with probability α / (n − 1 + α); a seating (partition) of
n customers into tables of sizes n_1..n_K has the Ewens probability

    p = α^K Γ(α) Π_k Γ(n_k) / Γ(α + n).

The counts are the statistics (:class:`~thrifty.processes.base.Tables`): incorporating or
unincorporating one customer is O(1), a Gibbs step lists the K + 1 choices in O(K) (Neal 2000,
Alg. 3), and the joint under another α is O(1) from (α, K, n, Σ log Γ(n_k)) — which is how an MH
step on an α the process owns costs O(1) in the number of customers.
"""

from __future__ import annotations

import math

from thrifty.processes.base import Process, Tables, table_label_error


class CRPSeating(Tables):
    """The seating statistics of a CRP with ``params = (alpha,)``."""

    def weight(self, c: int) -> float:
        return c

    def new_weight(self) -> float:
        return self.params[0]

    def norm_shift(self) -> float:
        return self.params[0]

    def log_prob(self) -> float:
        """The Ewens log-probability of the seating, O(1):
        K log α + log Γ(α) − log Γ(α + n) + Σ_k log Γ(n_k)."""
        a = self.params[0]
        return len(self.counts) * math.log(a) + math.lgamma(a) - math.lgamma(a + self.n) + self._slg


class CRP(Process):
    """The Chinese restaurant process with concentration ``alpha``.

    Inside a model, ``th.sample("z", crp)`` in a plate gives each element a table label; the
    labels are coupled (exchangeable), so Gibbs on one label enumerates the occupied tables and
    a new one (:func:`thrifty.gibbs`), and updates of many labels (``th.gibbs`` or ``th.mh`` on
    ``"data.z"``) go one label at a time, never as if they were independent.

    ``alpha`` is a number (the model's value: ``th.CRP(alpha)`` after
    ``alpha = th.sample("alpha", ...)`` — a change of α then re-runs the plates that follow,
    O(N)) or a distribution the process draws α from at address ``name``
    (``th.CRP(alpha=dist.Gamma(1.0, 1.0), name="alpha")``) — an MH step on α then re-scores the
    seating in O(1), executing no element, because the process keeps α from the model's code
    (:mod:`thrifty.processes.base`).

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

    The statistics on their own:

    >>> s = th.CRP(1.0).state((1.0,))
    >>> for table in (0, 0, 1):
    ...     s.incorporate(table)
    >>> [(k, round(p, 3)) for k, p in s.predictive()]   # 2/4, 1/4 and α/4 = 1/4
    [(0, 0.5), (1, 0.25), (2, 0.25)]
    """

    param_names = ("alpha",)

    def __init__(self, alpha, *, name=None):
        super().__init__(name, alpha=alpha)

    @staticmethod
    def invalid(params: tuple) -> str | None:
        a = params[0]
        return None if a > 0 and math.isfinite(a) else f"alpha must be positive, got {a!r}"

    def state(self, params: tuple) -> CRPSeating:
        return CRPSeating(params)

    value_error = staticmethod(table_label_error)
