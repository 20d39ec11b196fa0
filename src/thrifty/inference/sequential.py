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
with ε = 0 every decision equals exact MH's for the same u.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import stdtr


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


class LazyPermutation:
    """Sections drawn without replacement, a batch at a time, in O(batch) time: uniform
    candidates minus duplicates and those already drawn (a membership mask of size N that the
    caller may reuse across tests — :meth:`release` clears only what was drawn); once more than
    half are drawn, the rest is permuted; small populations are permuted up front.  With
    ``unit``, draws happen in units of that size, so ``take(a + b)`` equals ``take(a)`` followed
    by ``take(b)`` when a is a multiple of the unit."""

    SMALL = 4096

    def __init__(self, N: int, rng: np.random.Generator, unit: int | None = None, mask=None):
        self.N = N
        self.rng = rng
        self.k = 0
        self.unit = unit
        self.perm = rng.permutation(N) if N <= self.SMALL else None
        self.mask = None
        if self.perm is None:
            self.mask = mask if mask is not None and len(mask) == N else np.zeros(N, dtype=bool)
        self.drawn: list = []

    def take(self, m: int) -> np.ndarray:
        if self.unit and m > self.unit:
            parts = []
            while m > 0 and self.k < self.N:
                parts.append(self._take(min(self.unit, m)))
                m -= len(parts[-1])
            return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return self._take(m)

    def release(self) -> None:
        """Clear the membership mask (O(drawn)) so it can be reused."""
        if self.mask is not None:
            for part in self.drawn:
                self.mask[part] = False
        self.drawn = []

    def _take(self, m: int) -> np.ndarray:
        k, N = self.k, self.N
        m = min(m, N - k)
        self.k = k + m
        if self.perm is None and 2 * (k + m) > N:  # most will be drawn: permute the rest
            rest = np.flatnonzero(~self.mask)
            self.perm = np.concatenate([np.zeros(k, dtype=np.int64), self.rng.permutation(rest)])
            self.release()
        if self.perm is not None:
            return self.perm[k : k + m]
        mask = self.mask
        out = np.zeros(0, dtype=np.int64)
        while len(out) < m:
            need = m - len(out)
            cand = self.rng.integers(0, N, size=need + 8 + need // 4)
            cand = cand[~mask[cand]]
            order = np.argsort(cand, kind="stable")
            sc = cand[order]
            first = np.ones(len(sc), dtype=bool)
            first[1:] = sc[1:] != sc[:-1]
            cand = cand[np.sort(order[first])][:need]  # distinct, in order of appearance
            mask[cand] = True
            out = np.concatenate([out, cand])
        self.drawn.append(out)
        return out


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
) -> TestOutcome:
    """Decide μ > μ0 from minibatches of the l_i (see the module docstring).

    ``evaluate(idx)`` returns l_i for the section indices ``idx`` (0 ≤ i < N).  With
    ``growth > 1`` the minibatches are evaluated in chunks of k0, k0·growth, … minibatches per
    call: the test sees the same minibatches and reaches the same decision, in O(log) calls
    (worth it when a call has a fixed cost, like executing a program).  ``mask``: a reusable
    all-False boolean array of length N (saves allocating one per test).

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
    perm = LazyPermutation(N, rng, unit=batch_size, mask=mask)
    n, mean, m2, batches = 0, 0.0, 0.0, 0
    buffer = np.zeros(0)
    chunk = float(k0)
    evaluated = calls = 0
    while True:
        if len(buffer) == 0:  # evaluate the next chunk of minibatches in one call
            idx = perm.take(batch_size * max(int(chunk), 1))
            buffer = np.asarray(evaluate(idx), dtype=float)
            if buffer.shape != idx.shape:
                raise ValueError(f"evaluate returned {buffer.shape} values for {idx.shape}")
            evaluated += len(idx)
            calls += 1
            chunk *= growth
        l, buffer = buffer[:batch_size], buffer[batch_size:]
        m = len(l)
        bmean = float(l.mean())
        bm2 = float(((l - bmean) ** 2).sum())
        total = n + m  # merge the batch into the running mean and sum of squares (Chan et al.)
        delta = bmean - mean
        mean += delta * m / total
        m2 += bm2 + delta * delta * n * m / total
        n = total
        batches += 1
        if n >= N:
            perm.release()
            return TestOutcome(mean > mu0, n, batches, True, mean, 0.0, evaluated, calls)
        if batches < k0 or n < 2:
            continue
        s_l = math.sqrt(max(m2, 0.0) / (n - 1))
        if s_l == 0.0:
            continue  # 000 §3: no test on equal values; keep drawing
        s = s_l / math.sqrt(n) * math.sqrt(1.0 - (n - 1) / (N - 1))
        t = (mean - mu0) / s
        p = 2.0 * float(stdtr(n - 1, -abs(t)))  # two-sided: 2 (1 − F_{n−1}(|t|))
        if p < epsilon:
            perm.release()
            return TestOutcome(mean > mu0, n, batches, False, mean, p, evaluated, calls)
