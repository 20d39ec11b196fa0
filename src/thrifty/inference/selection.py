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
*plate groups* (a site of many plate elements, kept as an index array, never as N tuples).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from thrifty.core.address import as_pattern, dotted
from thrifty.core.trace import Block
from thrifty.errors import SelectionError


@dataclass
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
class ChoiceSet:
    """Resolved selection: single addresses and plate groups, in execution order."""

    scalars: list = field(default_factory=list)
    groups: list = field(default_factory=list)
    scalar_blocks: list = field(default_factory=list)  # block key of each scalar (th.one)

    @property
    def count(self) -> int:
        return len(self.scalars) + sum(g.count for g in self.groups)

    def __bool__(self) -> bool:
        return self.count > 0

    def address(self, r: int) -> tuple:
        """The address of selected choice number ``r``."""
        if r < len(self.scalars):
            return self.scalars[r]
        r -= len(self.scalars)
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
            out.setdefault(("scalar", b), ChoiceSet()).scalars.append(a)
        for g in self.groups:
            for e in g.element_array().tolist():
                sub = out.setdefault(("element", g.plate_addr, e), ChoiceSet())
                sub.groups.append(PlateGroup(g.plate_addr, g.rel, g.size, np.array([e])))
        return list(out.values())

    def n_blocks(self) -> int:
        scal = len(set(self.scalar_blocks))
        per_plate: dict = {}
        for g in self.groups:
            if g.elems is None:
                per_plate[g.plate_addr] = None
            elif per_plate.get(g.plate_addr, ()) is not None:
                per_plate.setdefault(g.plate_addr, set()).update(g.elems.tolist())
        sizes = {g.plate_addr: g.size for g in self.groups}
        return scal + sum(sizes[p] if s is None else len(s) for p, s in per_plate.items())

    def pick_block(self, rng) -> ChoiceSet:
        """One block chosen uniformly (without materialising every plate element)."""
        n = self.n_blocks()
        scal_keys = list(dict.fromkeys(self.scalar_blocks))
        r = int(rng.random() * n)
        if r < len(scal_keys):
            key = scal_keys[r]
            sub = ChoiceSet()
            for a, b in zip(self.scalars, self.scalar_blocks):
                if b == key:
                    sub.scalars.append(a)
                    sub.scalar_blocks.append(b)
            return sub
        r -= len(scal_keys)
        plates: dict = {}
        for g in self.groups:
            plates.setdefault(g.plate_addr, []).append(g)
        for plate, gs in plates.items():
            full = any(g.elems is None for g in gs)
            elems = None if full else np.unique(np.concatenate([g.elems for g in gs]))
            count = gs[0].size if full else len(elems)
            if r < count:
                e = r if full else int(elems[r])
                sub = ChoiceSet()
                for g in gs:
                    if g.elems is None or e in g.elems:
                        sub.groups.append(PlateGroup(plate, g.rel, g.size, np.array([e])))
                return sub
            r -= count
        raise IndexError("block index out of range")


class Selection:
    """Base class; see the module docstring."""

    def resolve(self, trace) -> ChoiceSet:
        raise NotImplementedError

    def matches(self, addr: tuple, name: tuple) -> bool:
        """Whether a choice with this address / name is selected (used for fresh/stale counts)."""
        raise NotImplementedError

    def __or__(self, other):
        return Union([self, select(other)])


def _prefix(p: tuple, x: tuple) -> bool:
    return len(p) <= len(x) and x[: len(p)] == p


def _compatible(p: tuple, x: tuple) -> bool:
    k = min(len(p), len(x))
    return p[:k] == x[:k]


class Prefix(Selection):
    """Choices whose address or name starts with ``pattern``."""

    def __init__(self, pattern):
        self.pattern = as_pattern(pattern)

    def __repr__(self) -> str:
        return f"select({dotted(self.pattern)!r})"

    def matches(self, addr, name) -> bool:
        return _prefix(self.pattern, addr) or _prefix(self.pattern, name)

    def resolve(self, trace) -> ChoiceSet:
        out = ChoiceSet()
        _walk(trace.root, (), (), self.pattern, out)
        p = self.pattern
        for maddr, table in trace.mems.items():
            if _prefix(p, maddr):
                keys = [maddr + (k,) for k in table.values]
            elif _prefix(maddr, p) and len(p) == len(maddr) + 1 and p[-1] in table.values:
                keys = [p]
            else:
                keys = []
            out.scalars += keys
            out.scalar_blocks += keys
        return out


def _walk(block: Block, prefix: tuple, nprefix: tuple, p: tuple, out: ChoiceSet, step=None) -> None:
    for local in block.latent_names():
        if _prefix(p, prefix + local) or _prefix(p, nprefix + local):
            out.scalars.append(prefix + local)
            out.scalar_blocks.append(step if step is not None else prefix + local)
    for local, node in block.plates.items():
        paddr, pname = prefix + local, nprefix + local
        if not (_compatible(p, paddr) or _compatible(p, pname)):
            continue
        for rel in node.latent_names():
            rname = _strip_steps(node, rel)
            if _prefix(p, paddr) or _prefix(p, pname + rname):
                out.groups.append(PlateGroup(paddr, rel, node.size))
            elif _prefix(paddr, p) and len(p) > len(paddr):
                e = p[len(paddr)]
                if (
                    isinstance(e, (int, np.integer))
                    and 0 <= e < node.size
                    and (_prefix(p[len(paddr) + 1 :], rel))
                ):
                    out.groups.append(
                        PlateGroup(paddr, rel, node.size, np.array([int(e)], dtype=np.int64))
                    )
    for local, chain in block.chains.items():
        caddr, cname = prefix + local, nprefix + local
        if not (_compatible(p, caddr) or _compatible(p, cname)):
            continue
        for t, b in enumerate(chain.steps):
            _walk(b, caddr + (t,), cname, p, out, caddr + (t,))


def _strip_steps(node, rel: tuple) -> tuple:
    """The name form of an element-relative address (drop the step index of inner chains)."""
    for local in node.chains:
        k = len(local)
        if rel[:k] == local and len(rel) > k:
            return local + rel[k + 1 :]
    return rel


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
            raise ValueError(f"ordered_range: hi ({hi}) < lo ({lo})")

    def matches(self, addr, name) -> bool:
        k = len(self.chain)
        return (
            _prefix(self.chain, addr)
            and len(addr) > k
            and isinstance(addr[k], int)
            and self.lo <= addr[k] <= self.hi
        )

    def resolve(self, trace) -> ChoiceSet:
        out = ChoiceSet()
        found = _find_chain(trace.root, (), self.chain)
        if found is None:
            raise SelectionError(f"ordered_range: no markov chain at {self.chain!r}")
        chain, caddr = found
        for t in range(max(self.lo, 0), min(self.hi, chain.length - 1) + 1):
            _walk(chain.steps[t], caddr + (t,), caddr, caddr + (t,), out, caddr + (t,))
        return out

    def __repr__(self) -> str:
        return f"ordered_range({dotted(self.chain)!r}, {self.lo}, {self.hi})"


def _find_chain(block, prefix, addr):
    rel = addr[len(prefix) :]
    c = block.chains.get(rel)
    if c is not None:
        return c, addr
    for local, chain in block.chains.items():
        k = len(local)
        if rel[:k] == local and len(rel) > k and isinstance(rel[k], int) and rel[k] < chain.length:
            return _find_chain(chain.steps[rel[k]], prefix + local + (rel[k],), addr)
    return None


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
                    out.scalars.append(a)
                    out.scalar_blocks.append(b)
            out.groups += cs.groups
        return out

    def __repr__(self) -> str:
        return " | ".join(repr(p) for p in self.parts)


class Everything(Selection):
    """Every latent choice of the trace."""

    def matches(self, addr, name) -> bool:
        return True

    def resolve(self, trace) -> ChoiceSet:
        return Prefix(()).resolve(trace)

    def __repr__(self) -> str:
        return "everything"


def select(x) -> Selection:
    """Turn a pattern (str / tuple), a list of patterns, or a Selection into a Selection."""
    if isinstance(x, Selection):
        return x
    if isinstance(x, list):
        return Union(x)
    if isinstance(x, (str, tuple, int, np.integer)):
        return Prefix(x)
    raise TypeError(f"cannot make a selection from {x!r}")


def each(sel) -> Each:
    """Update each selected choice in turn (see :mod:`thrifty.inference.selection`)."""
    return Each(sel)


def one(sel) -> One:
    """Update one selected block, chosen uniformly, with the 1/#blocks correction."""
    return One(sel)


def ordered_range(chain, lo: int, hi: int) -> OrderedRange:
    """The choices of steps ``lo..hi`` (inclusive) of markov chain ``chain``."""
    return OrderedRange(chain, lo, hi)
