"""Inference programs: ``th.cycle`` and ``th.mixture`` (paper 000 Fig. 7)."""

from __future__ import annotations

import numpy as np

from thrifty._args import checked_keywords
from thrifty._context import EXECUTIONS
from thrifty.errors import ArgumentError
from thrifty.inference.kernel import Kernel


class _Composite(Kernel):
    """A kernel made of others: its statistics list theirs too, and its own step's info is the
    sum of its parts' (proposals, acceptances, runs, elements, markov steps)."""

    children: list

    def __init__(self):
        super().__init__()
        self.stats.composite = True

    def _part(self, k, trace, rng):
        layout = trace.layout
        trace, info = k.update(trace, rng)
        self.info.absorb(info)
        if trace.layout != layout:  # (a layout the next parts may run in: checked before them)
            watch = EXECUTIONS.layout_watch
            if watch is not None:
                watch(trace)
        return trace

    def kernels(self):
        out = [(self.label(), self)]
        for k in self.children:
            out += k.kernels()
        return _unique(out)


class Cycle(_Composite):
    """Apply each kernel in order, ``repeats`` times per step."""

    name = "cycle"

    def __init__(self, kernels, repeats: int = 1):
        super().__init__()
        self.children = list(kernels)
        bad = [j for j, k in enumerate(self.children) if not isinstance(k, Kernel)]
        if not self.children or bad:
            raise ArgumentError(
                "cycle: expected a non-empty list of kernels"
                + (f"; entry {bad[0]} is {self.children[bad[0]]!r}" if bad else ""))
        if isinstance(repeats, bool) or not isinstance(repeats, int | np.integer) or repeats < 1:
            raise ArgumentError(f"cycle: repeats must be an integer >= 1, got {repeats!r}")
        self.repeats = int(repeats)

    def _step(self, trace, rng):
        for _ in range(self.repeats):
            for k in self.children:
                trace = self._part(k, trace, rng)
        return trace

    def label(self) -> str:
        inner = ", ".join(k.label() for k in self.children)
        return f"cycle([{inner}]" + (f", repeats={self.repeats})" if self.repeats > 1 else ")")


class Mixture(_Composite):
    """Apply one kernel per step, chosen with the given probabilities."""

    name = "mixture"

    def __init__(self, weighted):
        super().__init__()
        pairs = list(weighted)
        if not pairs:
            raise ArgumentError("mixture: expected a non-empty list of (probability, kernel)")
        for j, pair in enumerate(pairs):
            if not (isinstance(pair, tuple | list) and len(pair) == 2
                    and isinstance(pair[0], int | float | np.number)
                    and not isinstance(pair[0], bool) and isinstance(pair[1], Kernel)):
                raise ArgumentError(
                    f"mixture: entry {j} is {pair!r}; expected (probability, kernel) pairs, "
                    "e.g. th.mixture([(0.9, th.mh('mu', th.drift(0.5))), (0.1, th.lmh())])")
        p = np.array([float(w) for w, _ in pairs])
        if not np.all(np.isfinite(p)) or np.any(p < 0) or not p.sum() > 0:
            raise ArgumentError(
                f"mixture: probabilities must be finite, >= 0 and not all 0, got {p}")
        self.probs = p / p.sum()
        self._cdf = np.cumsum(self.probs)
        self.children = [k for _, k in pairs]

    def _step(self, trace, rng):
        i = min(int(np.searchsorted(self._cdf, rng.random(), side="right")), len(self.children) - 1)
        return self._part(self.children[i], trace, rng)

    def label(self) -> str:
        inner = ", ".join(f"({p:.3g}, {k.label()})" for p, k in zip(self.probs, self.children))
        return f"mixture([{inner}])"


def _unique(pairs):
    seen: dict = {}
    out = []
    for label, k in pairs:
        if any(k is other for _, other in out):
            continue
        n = seen.get(label, 0)
        seen[label] = n + 1
        out.append((label if n == 0 else f"{label}#{n + 1}", k))
    return out


@checked_keywords
def cycle(kernels, repeats: int = 1) -> Cycle:
    """Run ``kernels`` one after the other, ``repeats`` times, as one step.

    >>> import thrifty as th
    >>> k = th.cycle([th.mh("mu", th.drift(0.5)), th.lmh()], repeats=2)
    >>> k.label()
    "cycle([mh('mu', drift(0.5)), lmh()], repeats=2)"
    """
    return Cycle(kernels, repeats)


def mixture(weighted) -> Mixture:
    """Each step, run one kernel of ``[(p1, k1), (p2, k2), ...]`` chosen with probability p_i.

    >>> import thrifty as th
    >>> k = th.mixture([(0.9, th.mh("mu", th.drift(0.5))), (0.1, th.lmh())])
    >>> k.label()
    "mixture([(0.9, mh('mu', drift(0.5))), (0.1, lmh())])"
    """
    return Mixture(weighted)
