"""Kernels with a selection: the choices a kernel updates, resolved against the trace.

:class:`Selecting` resolves a kernel's selection (:mod:`thrifty.inference.selection`) once per
structure of the trace, tells a wrong name from a choice that exists only in some traces before
sampling, names its sites for messages, and adapts ``th.drift()`` during the burn-in.  The MH,
Gibbs, subsampled and SMH kernels derive from it.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.engine import (
    latent_names,
    plate_sizes,
    simulate_run,
)
from thrifty.errors import SelectionError
from thrifty.inference.kernel import Kernel
from thrifty.inference.selection import Selection, select


class Selecting(Kernel):
    """A kernel with a selection resolved against the trace (cached while its structure holds)."""

    def __init__(self, selection):
        super().__init__()
        self.selection: Selection = select(selection)
        self._cache = None
        self._matched = False

    def choices(self, trace):
        """The selected choices of ``trace``; ``None`` when a selection that matched before
        matches nothing now (a choice that exists only in some traces: the step is skipped).
        Resolved once per structure of the trace (cached on its uid and structure counter)."""
        key = (trace.uid, trace.structure)
        if self._cache is None or self._cache[0] != key:
            cs = self.selection.resolve(trace)
            if not cs:
                if not self._matched:
                    self.prepare(trace)
                cs = None
            self._matched = True
            self._cache = (key, cs)
        return self._cache[1]

    def prepare(self, trace) -> None:
        """Check, before sampling, that the selection names choices of the program: when it
        matches nothing in ``trace``, prior simulations (at most 20, off the chain's generator)
        tell a wrong name from a choice that exists only in some traces."""
        self._matched = True
        if self.selection is None:
            return
        for part in getattr(self.selection, "parts", ()):  # a list: each of its names
            if not part.resolve(trace) and not _exists_in_some_trace(part, trace):
                raise SelectionError(
                    f"{self.name}: {part!r} (in {self.selection!r}) selects no latent choice "
                    f"of the program; its latent choices are named {latent_names(trace)}")
        if self.selection.resolve(trace):
            return
        if not _exists_in_some_trace(self.selection, trace):
            empty = [".".join(map(str, a)) for a, size in plate_sizes(trace).items()
                     if size == 0]
            hint = (f" (plate(s) {', '.join(repr(e) for e in empty)} have 0 elements in this "
                    "program: their sites have no choices)") if empty else ""
            raise SelectionError(
                f"{self.name}: {self.selection!r} selects no latent choice of the "
                f"program; its latent choices are named {latent_names(trace)}{hint}"
            )

    def label(self) -> str:
        return f"{self.name}({self.selection!r})"

    def site_names(self) -> list[str]:
        """The selected sites (as last resolved), for messages: a site of many plate elements
        or markov steps once, with ``*`` for the index; at most 8, then ``...``."""
        cs = self._cache[1] if self._cache is not None else None
        if cs is None:
            return [] if self.selection is None else [repr(self.selection)]
        names = [fmt(g.plate_addr + ("*",) + g.rel) for g in cs.groups]
        names += [fmt(g.chain_addr + ("*",) + g.rel) for g in cs.chain_groups]
        names = [fmt(a) for a in cs._scalars[:8]] + names
        return names[:8] + (["..."] if len(names) > 8 or len(cs._scalars) > 8 else [])

    # -- adaptation of th.drift() during the burn-in -------------------------------------------
    @property
    def _adapts(self) -> bool:
        return getattr(getattr(self, "proposal", None), "adaptive", False)

    def _tune(self, on: bool) -> None:
        """Adapt ``th.drift()`` during the burn-in; at its end, report the frozen proposal in
        ``result.stats`` (``"proposal"``)."""
        if self.tuning and not on and self._adapts:
            self.proposal.freeze()
            self.stats.proposal = [self.proposal.describe()]
        self.tuning = on


def _exists_in_some_trace(selection, trace, tries: int = 20) -> bool:
    """Whether ``selection`` matches a choice of some prior simulation of the program (a
    choice that exists only in some traces, rather than a wrong name).  Uses its own seeded
    generator, so the chain's draws do not depend on it."""
    rng = np.random.default_rng(0)
    for _ in range(tries):
        try:
            sim, _ = simulate_run(trace.program, rng)
        except Exception:
            continue
        if selection.resolve(sim):
            return True
    return False


