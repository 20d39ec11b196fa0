"""The sequential test of approximate MH (paper 000 Alg. 2 = paper 004 Alg. 1).

An MH step accepts iff  μ > μ0,  with μ the mean of N per-section log-ratios l_i and
μ0 = (log u − global log-ratio) / N.  Rather than computing all N terms, draw minibatches of
sections without replacement and stop as soon as a Student-t test is confident:

    n drawn so far, sample mean μ̂, sample sd s_l,
    s = s_l / √n · √(1 − (n − 1)/(N − 1))          (finite-population correction)
    t = (μ̂ − μ0) / s,   p = 2 (1 − F_{n−1}(|t|))    (F: Student-t cdf, n − 1 degrees of freedom)
    stop when p < ε; accept iff μ̂ > μ0.

p is the two-sided p-value, as the project's specification of the test says.  Paper 004 Alg. 1
(and Venture's code) stop when the one-tailed δ = 1 − F_{n−1}(|t|) is below ε — half of p — so
their ε corresponds to 2ε here; the two-sided test is the more conservative at a given ε
(fewer wrong decisions when the l_i are skewed, 000 §3.3).  When s_l = 0 the test
is not run (a batch of equal values says nothing about the others) — keep drawing.  After the
first ``k0`` batches only (Venture's k0).  When all N sections are used the decision is exact:
with ε = 0 every decision equals exact MH's for the same u (and, since it can
only stop at N, the test reads all N sections in one call).

A budget ``max_n < N`` stops the test undecided once it has drawn ``max_n`` sections, or
earlier — from an eighth of the budget on — once it would need twice the budget if μ̂ − μ0 and
s_l kept their values (n* = 1 / ((μ̂ − μ0)² / (z s_l)² + 1/N) > 2 max_n, z the normal quantile
of 1 − ε/2) (``TestOutcome.decided`` is False): the caller then takes exact MH's decision from
all N terms.
That keeps the test's error bound — a decision taken on all the data is exact MH's, with no
error — and bounds the cost when the log-ratios are as noisy as the decision is close: reading
sections one random minibatch at a time costs several times more per section than one pass
over the whole data, so past a fraction of N the full pass is the cheaper way to decide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtr


@dataclass
class TestOutcome:
    """Decision of :func:`sequential_test` and what it cost."""

    accept: bool
    n: int  # sections the test used
    batches: int
    exact: bool  # ran to N (the decision of exact MH)
    mean: float  # μ̂
    p_value: float  # δ at the stop (0 when exact)
    evaluated: int = 0  # sections evaluated (≥ n when minibatches are evaluated in chunks)
    calls: int = 0  # calls of ``evaluate``
    decided: bool = True  # False: the budget ``max_n`` ran out first (``accept`` is meaningless)


class LazyPermutation:
    """Sections drawn without replacement, any number at a time, in O(count) time, for a
    population of N (a membership mask of size N that the caller may reuse across tests —
    :meth:`release` clears only what was drawn).

    :meth:`take` returns ``(idx, order)``: ``idx[order]`` is the next ``m`` sections of a
    uniformly random permutation.  Populations up to ``SMALL`` are permuted up front
    (``order`` is None: ``idx`` is already in permutation order).  Larger ones draw each chunk
    as a *sorted* uniform subset of the sections not drawn yet — the distinct values among the
    order statistics of i.i.d. uniform draws (cumulated exponential spacings, no sort), those
    drawn before removed, thinned to ``m`` by a uniform choice — and ``order`` a uniform
    random order of it: by symmetry the subset is uniform among the m-subsets of what is left,
    so ``idx[order]`` continues a uniform permutation, while the caller can read the data in
    increasing position (gathers far cheaper than at random positions).  Once more than half
    are drawn, the rest is permuted."""

    SMALL = 4096

    def __init__(self, N: int, rng: np.random.Generator, mask=None):
        self.N = N
        self.rng = rng
        self.k = 0
        self.perm = rng.permutation(N) if N <= self.SMALL else None
        self.mask = None
        if self.perm is None:
            self.mask = mask if mask is not None and len(mask) == N else np.zeros(N, dtype=bool)
        self.drawn: list = []

    def release(self) -> None:
        """Clear the membership mask (O(drawn)) so it can be reused."""
        if self.mask is not None:
            for part in self.drawn:
                self.mask[part] = False
        self.drawn = []

    def take(self, m: int) -> tuple[np.ndarray, np.ndarray | None]:
        k, N = self.k, self.N
        m = min(m, N - k)
        self.k = k + m
        if self.perm is None and 2 * (k + m) > N:  # most will be drawn: permute the rest
            rest = np.flatnonzero(~self.mask)
            self.perm = np.concatenate([np.zeros(k, dtype=np.int64), self.rng.permutation(rest)])
            self.release()
        if self.perm is not None:
            return self.perm[k : k + m], None
        parts, got = [], 0
        while got < m:  # more than once only when the draws held too few distinct new values
            part = self._sorted_subset(m - got, N - k - got)
            self.mask[part] = True
            self.drawn.append(part)
            parts.append(part)
            got += len(part)
        out = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
        return out, self.rng.permutation(m)

    def _sorted_subset(self, m: int, left: int) -> np.ndarray:
        """A sorted uniform subset of at most ``m`` of the ``left`` sections not in the mask
        (exactly ``m`` unless the i.i.d. draws held too few distinct new values)."""
        rng, N = self.rng, self.N
        draws = int(m * N / left * 1.05) + 16  # expected distinct new values ≥ m
        s = np.cumsum(rng.standard_exponential(draws + 1))
        vals = np.minimum((s[:-1] * (N / s[-1])).astype(np.int64), N - 1)  # sorted i.i.d.
        new = np.empty(len(vals), dtype=bool)
        new[0] = True
        np.not_equal(vals[1:], vals[:-1], out=new[1:])
        vals = vals[new]
        vals = vals[~self.mask[vals]]
        if len(vals) > m:  # a uniform m-subset of a uniform subset, still sorted: the
            keep = np.ones(len(vals), dtype=bool)  # complement of a uniform subset of the few
            keep[rng.choice(len(vals), len(vals) - m, replace=False)] = False  # extra ones
            vals = vals[keep]
        return vals


def _hopeless(gap: float, s_l: float, N: int, budget: int, epsilon: float) -> bool:
    """Whether the test, if μ̂ − μ0 and s_l kept their values, would need more than ``budget``
    sections: |t| reaches the normal quantile z of 1 − ε/2 when
    n* = 1 / (gap² / (z s_l)² + 1/N)  (the finite-population correction included)."""
    if epsilon <= 0 or not s_l > 0:
        return epsilon <= 0  # ε = 0 decides at N only
    z = float(ndtri(1.0 - epsilon / 2))
    return 1.0 / (gap * gap / (z * s_l) ** 2 + 1.0 / N) > budget


def sequential_test(
    mu0: float,
    evaluate: Callable[[np.ndarray], np.ndarray],
    N: int,
    batch_size: int,
    epsilon: float,
    rng: np.random.Generator,
    k0: int = 1,
    growth: float = 1.0,
    mask: np.ndarray | None = None,
    max_n: int | None = None,
) -> TestOutcome:
    """Decide μ > μ0 from minibatches of the l_i (see the module docstring).

    ``evaluate(idx)`` returns l_i for the section indices ``idx`` (0 ≤ i < N).  With
    ``growth > 1`` the minibatches are evaluated in chunks of k0, k0·growth, … minibatches per
    call, and the test is applied at every minibatch boundary of a chunk at once (the decision
    is the one minibatch-by-minibatch testing would reach on the same draws), in O(log) calls —
    worth it when a call has a fixed cost, like executing a program.  ``mask``: a reusable
    all-False boolean array of length N (saves allocating one per test).  ``max_n``: draw at
    most this many sections, and return ``decided=False`` if the test has not stopped by then
    (the last chunk is cut to fit; ``None`` or ≥ N: no budget).

    >>> import numpy as np
    >>> l = np.random.default_rng(0).normal(0.3, 1.0, size=100_000)
    >>> out = sequential_test(0.0, lambda idx: l[idx], len(l), 100, 0.01,
    ...                       np.random.default_rng(1))
    >>> out.accept, out.n < len(l)
    (True, True)
    """
    if N < 1:
        raise ValueError(f"sequential_test: N must be >= 1, got {N}")
    if batch_size < 1:
        raise ValueError(f"sequential_test: batch_size must be >= 1, got {batch_size}")
    if not 0 <= epsilon < 1:
        raise ValueError(f"sequential_test: epsilon must be in [0, 1), got {epsilon}")
    budget = N if max_n is None else max(min(int(max_n), N), 1)
    perm = LazyPermutation(N, rng, mask=mask)
    n, mean, m2, batches = 0, 0.0, 0.0, 0  # what the test has seen (Chan's running moments)
    chunk = float(max(k0, 1))
    if epsilon == 0 and budget == N:  # p < 0 never holds: the test decides at N only, so
        chunk = float(-(-N // batch_size))  # all N sections are read in one call
    evaluated = calls = 0
    while True:
        idx, order = perm.take(min(batch_size * max(int(chunk), 1), budget - perm.k))
        l = np.asarray(evaluate(idx), dtype=float)
        if l.shape != idx.shape:
            raise ValueError(f"evaluate returned {l.shape} values for {idx.shape} sections")
        if order is not None:  # the chunk in its random order (see LazyPermutation)
            l = l[order]
        evaluated += len(l)
        calls += 1
        chunk *= growth
        # moments after each minibatch boundary of the chunk, merged with what came before
        ends = np.minimum(np.arange(1, -(-len(l) // batch_size) + 1) * batch_size, len(l))
        d = l - mean
        S = np.cumsum(d)[ends - 1]  # sums of the shifted values up to each boundary
        Q = np.cumsum(d * d)[ends - 1]
        c = ends.astype(float)
        tot = n + c
        means = mean + S / tot
        m2s = m2 + Q - S * S / tot  # Σ(x − mean_new)² = m2 + Σd² − (Σd)²/tot
        nb = batches + np.arange(1, len(ends) + 1)
        exact = tot >= N
        with np.errstate(divide="ignore", invalid="ignore"):
            s_l = np.sqrt(np.maximum(m2s, 0.0) / (tot - 1))
            s = s_l / np.sqrt(tot) * np.sqrt(np.maximum(1.0 - (tot - 1) / (N - 1), 0.0))
            t = (means - mu0) / s
            p = 2.0 * stdtr(tot - 1, -np.abs(t))  # two-sided: 2 (1 − F_{n−1}(|t|))
        # 000 §3: no test before k0 batches, nor on equal values (s_l = 0); exact at n = N
        testable = (nb >= k0) & (tot >= 2) & (s_l > 0) & ~exact
        stop = exact | (testable & (p < epsilon))
        if stop.any():
            j = int(np.argmax(stop))
            perm.release()
            return TestOutcome(
                bool(means[j] > mu0), int(tot[j]), int(nb[j]), bool(exact[j]),
                float(means[j]), 0.0 if exact[j] else float(p[j]), evaluated, calls,
            )
        n, mean, m2, batches = int(tot[-1]), float(means[-1]), float(m2s[-1]), int(nb[-1])
        if n >= budget or (budget < N and 8 * n >= budget and _hopeless(
            mean - mu0, float(s_l[-1]), N, 2 * budget, epsilon
        )):  # the budget ran out, or the test would need twice as much
            perm.release()
            return TestOutcome(
                bool(mean > mu0), n, batches, False, mean, float(p[-1]), evaluated, calls,
                decided=False,
            )
