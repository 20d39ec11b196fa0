"""Selections: which choices a kernel updates.

* an address pattern — ``"w"``, ``("data", 17)``, ``"data.z"`` — selects every latent choice
  whose address, or whose *name* (the address without plate-element and markov-step indices),
  starts with the pattern: ``"s"`` selects every step of chain ``s``, ``("s", 3)`` step 3,
  ``"data.z"`` the site ``z`` of every element of plate ``data``;
* ``th.each(sel)`` — update the selected choices one at a time;
* ``th.one(sel)`` — update one *block* chosen uniformly (an element of a plate, a step of a
  chain, a key of a mem table, or a site), with the 1/#blocks correction;
* ``th.ordered_range(chain, lo, hi)`` — the choices of steps ``lo..hi`` of a markov chain.

A selection resolves against a trace to a :class:`ChoiceSet`: a list of single addresses plus
*plate groups* (a site of many plate elements, kept as an index array, never as N tuples) and
*chain groups* (a site of many steps of a markov chain whose steps all have the same sites).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from thrifty.core.address import as_pattern, dotted
from thrifty.core.engine import (
    starts_with,
    walk,
    walk_steps,
)
from thrifty.errors import ArgumentError, SelectionError
from thrifty.inference.configured import Configured


@dataclass(slots=True)  # (th.one makes one at every step)
class PlateGroup:
    """The site ``rel`` of elements ``elems`` (``None``: all) of the plate at ``plate_addr``."""

    plate_addr: tuple
    rel: tuple
    size: int
    elems: np.ndarray | None = None

    @property
    def count(self) -> int:
        return self.size if self.elems is None else len(self.elems)

    def element_array(self) -> np.ndarray:
        return np.arange(self.size) if self.elems is None else self.elems


@dataclass
class ChainGroup:
    """The site ``rel`` of steps ``steps`` (``None``: all T) of the markov chain at
    ``chain_addr`` — a site of a chain whose steps all have the same sites, kept as one group
    so that choosing a step costs O(1), not O(T)."""

    chain_addr: tuple
    rel: tuple
    T: int
    steps: np.ndarray | None = None

    @property
    def count(self) -> int:
        return self.T if self.steps is None else len(self.steps)

    def step_at(self, r: int) -> int:
        return r if self.steps is None else int(self.steps[r])

    def has(self, t: int) -> bool:
        return self.steps is None or bool(np.any(self.steps == t))


class ChoiceSet:
    """Resolved selection: single addresses, plate groups and chain groups, in execution order.

    ``scalars`` lists the single addresses (chain groups expanded, O(T), only when asked);
    ``count``, ``address(r)``, ``n_blocks()`` and ``pick_block(rng)`` never expand them.
    """

    __slots__ = ("_block_info", "_blocks", "_expanded", "_scalars", "chain_groups", "groups")

    def __init__(self, scalars=None, groups=None, scalar_blocks=None, chain_groups=None):
        self._scalars: list = list(scalars) if scalars else []
        self._blocks: list = list(scalar_blocks) if scalar_blocks else []
        self.groups: list = list(groups) if groups else []
        self.chain_groups: list = list(chain_groups) if chain_groups else []
        self._expanded = None
        self._block_info = None

    def add(self, addr, block) -> None:
        self._scalars.append(addr)
        self._blocks.append(block)
        self._expanded = self._block_info = None

    def add_plate(self, plate, rel, size, elems) -> None:
        self.groups.append(PlateGroup(plate, rel, size, elems))

    def add_chain(self, chain, rel, T, steps) -> None:
        self.chain_groups.append(ChainGroup(chain, rel, T, steps))

    def _expand(self):
        if self._expanded is None:
            scal, blocks = list(self._scalars), list(self._blocks)
            for chain, gs in _by_chain(self.chain_groups).items():
                steps = _union_steps(gs)
                for t in range(gs[0].T) if steps is None else steps.tolist():
                    for g in gs:
                        if g.has(t):
                            scal.append(chain + (t,) + g.rel)
                            blocks.append(chain + (t,))
            self._expanded = (scal, blocks)
        return self._expanded

    @property
    def scalars(self) -> list:
        return self._expand()[0] if self.chain_groups else self._scalars

    @property
    def scalar_blocks(self) -> list:
        return self._expand()[1] if self.chain_groups else self._blocks

    @property
    def count(self) -> int:
        return (
            len(self._scalars)
            + sum(g.count for g in self.groups)
            + sum(g.count for g in self.chain_groups)
        )

    def __bool__(self) -> bool:
        return self.count > 0

    def address(self, r: int) -> tuple:
        """The address of selected choice number ``r``."""
        if r < len(self._scalars):
            return self._scalars[r]
        r -= len(self._scalars)
        for g in self.chain_groups:
            if r < g.count:
                return g.chain_addr + (g.step_at(r),) + g.rel
            r -= g.count
        for g in self.groups:
            if r < g.count:
                e = int(r if g.elems is None else g.elems[r])
                return g.plate_addr + (e,) + g.rel
            r -= g.count
        raise IndexError(r)

    def blocks(self) -> list:
        """The blocks ``th.one`` chooses among: a site, a markov step, a mem key, or a plate
        element (all selected sites of that element)."""
        out: dict = {}
        for a, b in zip(self.scalars, self.scalar_blocks):
            out.setdefault(("scalar", b), ChoiceSet()).add(a, b)
        for g in self.groups:
            for e in g.element_array().tolist():
                sub = out.setdefault(("element", g.plate_addr, e), ChoiceSet())
                sub.groups.append(PlateGroup(g.plate_addr, g.rel, g.size, np.array([e])))
        return list(out.values())

    def _info(self):
        """(distinct scalar block keys, per plate (groups, elems or None, count), per chain
        (groups, steps or None, count)) — computed once per resolved selection."""
        if self._block_info is None:
            keys = list(dict.fromkeys(self._blocks))
            plates = []
            for plate, gs in _by_plate(self.groups).items():
                full = any(g.elems is None for g in gs)
                elems = None if full else np.unique(np.concatenate([g.elems for g in gs]))
                plates.append((plate, gs, elems, gs[0].size if full else len(elems)))
            chains = []
            for chain, gs in _by_chain(self.chain_groups).items():
                steps = _union_steps(gs)
                chains.append((chain, gs, steps, gs[0].T if steps is None else len(steps)))
            n = len(keys) + sum(p[3] for p in plates) + sum(c[3] for c in chains)
            self._block_info = (keys, plates, chains, n)
        return self._block_info

    def n_blocks(self) -> int:
        return self._info()[3]

    def pick_block(self, rng) -> ChoiceSet:
        """One block chosen uniformly (O(number of groups): no plate element or chain step is
        materialised)."""
        keys, plates, chains, n = self._info()
        r = int(rng.random() * n)
        if r < len(keys):
            key = keys[r]
            sub = ChoiceSet()
            for a, b in zip(self._scalars, self._blocks):
                if b == key:
                    sub.add(a, b)
            return sub
        r -= len(keys)
        for chain, gs, steps, count in chains:
            if r < count:
                t = r if steps is None else int(steps[r])
                sub = ChoiceSet()
                for g in gs:
                    if g.has(t):
                        sub.add(chain + (t,) + g.rel, chain + (t,))
                return sub
            r -= count
        for plate, gs, elems, count in plates:
            if r < count:
                e = r if elems is None else int(elems[r])
                sub = ChoiceSet()
                sub.groups = [PlateGroup(plate, g.rel, g.size, _one_int(e)) for g in gs
                              if g.elems is None or e in g.elems]
                return sub
            r -= count
        raise IndexError("block index out of range")


def _one_int(e: int) -> np.ndarray:
    """``np.array([e])`` of a Python int ``e`` (an element index), without the type discovery
    of a list's conversion (half the cost)."""
    out = np.empty(1, dtype=np.int64)
    out[0] = e
    return out


def _by_plate(groups) -> dict:
    out: dict = {}
    for g in groups:
        out.setdefault(g.plate_addr, []).append(g)
    return out


def _by_chain(groups) -> dict:
    out: dict = {}
    for g in groups:
        out.setdefault(g.chain_addr, []).append(g)
    return out


def _union_steps(gs):
    if any(g.steps is None for g in gs):
        return None
    return np.unique(np.concatenate([g.steps for g in gs]))


class Selection(Configured):
    """Base class; see the module docstring."""

    def resolve(self, trace) -> ChoiceSet:
        raise NotImplementedError

    def matches(self, addr: tuple, name: tuple) -> bool:
        """Whether a choice with this address / name is selected (used for fresh/stale counts)."""
        raise NotImplementedError

    def __or__(self, other):
        return Union([self, select(other)])


class Prefix(Selection):
    """Choices whose address or name starts with ``pattern``."""

    def __init__(self, pattern):
        self.pattern = as_pattern(pattern)

    def __repr__(self) -> str:  # as the user writes it: th.mh("w", ...) → mh('w', ...)
        return repr(dotted(self.pattern))

    def matches(self, addr, name) -> bool:
        return starts_with(self.pattern, addr) or starts_with(self.pattern, name)

    def resolve(self, trace) -> ChoiceSet:
        out = ChoiceSet()
        walk(trace, self.pattern, out)
        return out


class _Schedule(Selection):
    """The choices of ``inner``, with a schedule for the kernel (subclasses name it)."""

    word = ""

    def __init__(self, inner):
        self.inner = select(inner)

    def resolve(self, trace) -> ChoiceSet:
        return self.inner.resolve(trace)

    def matches(self, addr, name) -> bool:
        return self.inner.matches(addr, name)

    def __repr__(self) -> str:
        return f"{self.word}({self.inner!r})"


class Each(_Schedule):
    """Update the choices of ``inner`` one at a time."""

    word = "each"


class One(_Schedule):
    """Update one block of ``inner``, chosen uniformly."""

    word = "one"


class OrderedRange(Selection):
    """The choices of steps ``lo..hi`` (inclusive) of the markov chain at ``chain``."""

    def __init__(self, chain, lo: int, hi: int):
        self.chain = as_pattern(chain)
        self.lo, self.hi = int(lo), int(hi)
        if self.hi < self.lo:
            raise ArgumentError(f"ordered_range: hi ({hi}) < lo ({lo})")

    def matches(self, addr, name) -> bool:
        k = len(self.chain)
        return (
            starts_with(self.chain, addr)
            and len(addr) > k
            and isinstance(addr[k], int)
            and self.lo <= addr[k] <= self.hi
        )

    def resolve(self, trace) -> ChoiceSet:
        out = ChoiceSet()
        if not walk_steps(trace, self.chain, self.lo, self.hi, out):
            raise SelectionError(f"ordered_range: no markov chain at {self.chain!r} (ordered "
                                 "ranges select steps of a chain at the top level, not of one "
                                 "inside a plate)")
        return out

    def __repr__(self) -> str:
        return f"ordered_range({dotted(self.chain)!r}, {self.lo}, {self.hi})"


class Union(Selection):
    """Choices selected by any of ``parts``."""

    def __init__(self, parts):
        self.parts = [select(p) for p in parts]

    def matches(self, addr, name) -> bool:
        return any(p.matches(addr, name) for p in self.parts)

    def resolve(self, trace) -> ChoiceSet:
        out = ChoiceSet()
        seen = set()
        for p in self.parts:
            cs = p.resolve(trace)
            for a, b in zip(cs.scalars, cs.scalar_blocks):
                if a not in seen:
                    seen.add(a)
                    out.add(a, b)
            out.groups += cs.groups
        return out

    def __repr__(self) -> str:
        if all(isinstance(p, Prefix) for p in self.parts):
            return "[" + ", ".join(repr(p) for p in self.parts) + "]"
        return " | ".join(repr(p) for p in self.parts)


class Difference(Selection):
    """Choices selected by ``base`` and not by ``minus`` — found anew in every trace, so a
    choice that appears later (a varying structure) is selected too."""

    def __init__(self, base, minus):
        self.base, self.minus = select(base), select(minus)

    def matches(self, addr, name) -> bool:
        return self.base.matches(addr, name) and not self.minus.matches(addr, name)

    def resolve(self, trace) -> ChoiceSet:
        cs = self.base.resolve(trace)
        out = ChoiceSet()
        for a, b in zip(cs._scalars, cs._blocks):  # (chain groups kept whole: never O(T))
            if not self.minus.matches(a, _name(a)):
                out.add(a, b)
        out.groups = [g for g in cs.groups if not self.minus.matches(
            g.plate_addr + (0,) + g.rel, g.plate_addr + g.rel)]
        out.chain_groups = [g for g in cs.chain_groups if not self.minus.matches(
            g.chain_addr + (0,) + g.rel, g.chain_addr + g.rel)]
        return out

    def __repr__(self) -> str:
        return f"{self.base!r} - {self.minus!r}"


def _name(addr: tuple) -> tuple:
    """A choice's name: its address without the plate elements, chain steps and mem keys."""
    return tuple(p for p in addr if not isinstance(p, (int, np.integer)))


class Everything(Selection):
    """Every latent choice of the trace."""

    def matches(self, addr, name) -> bool:
        return True

    def resolve(self, trace) -> ChoiceSet:
        return Prefix(()).resolve(trace)

    def __repr__(self) -> str:
        return "everything"


def select(x) -> Selection:
    """Turn a pattern (str / tuple), a list of patterns, or a Selection into a Selection.

    >>> import thrifty as th
    >>> th.select(["mu", "data.z"])        # a list of patterns: their union
    ['mu', 'data.z']
    """
    if isinstance(x, Selection):
        return x
    if isinstance(x, list):
        return Union(x)
    if isinstance(x, (str, tuple, int, np.integer)):
        return Prefix(x)
    raise ArgumentError(f"cannot make a selection from {x!r}")


def each(sel) -> Each:
    """Update each selected choice in turn (see :mod:`thrifty.inference.selection`).

    >>> import thrifty as th
    >>> th.mh(th.each(["mu", "sigma"]), th.drift(0.5)).label()   # one proposal per choice in turn
    "mh(each(['mu', 'sigma']), drift(0.5))"
    """
    return Each(sel)


def one(sel) -> One:
    """Update one selected block, chosen uniformly, with the 1/#blocks correction.

    >>> import thrifty as th
    >>> th.mh(th.one("data.z"), th.drift(0.5)).label()   # one plate element per step
    "mh(one('data.z'), drift(0.5))"
    """
    return One(sel)


def ordered_range(chain, lo: int, hi: int) -> OrderedRange:
    """The choices of steps ``lo..hi`` (inclusive) of markov chain ``chain``.

    >>> import thrifty as th
    >>> th.ordered_range("x", 10, 20)                    # steps 10..19 of the chain x
    ordered_range('x', 10, 20)
    """
    return OrderedRange(chain, lo, hi)
