"""The latent choices of a trace that an address pattern names: what selections resolve to.

A pattern selects every latent choice whose address, or whose *name* (the address without
plate-element and markov-step indices), starts with it (:mod:`thrifty.inference.selection`).
:func:`walk` goes over the trace once and reports to a *sink* — an object with

* ``add(addr, block)``: a single choice (a site of the body or of a markov step with steps of
  different sites, a key of a mem table) and the block ``th.one`` would choose it in;
* ``add_plate(plate, rel, size, elems)``: the site ``rel`` of a plate's elements ``elems``
  (None: all of them) — never one entry per element;
* ``add_chain(chain, rel, T, steps)``: the site ``rel`` of a chain's steps ``steps`` (None: all
  T), for a chain whose steps all have the same sites — never one entry per step.

:func:`walk_steps` does the same for steps ``lo..hi`` of one chain (``th.ordered_range``).

>>> import thrifty as th
>>> from thrifty import dist
>>> @th.model
... def m():
...     th.sample("mu", dist.Normal(0.0, 1.0))
...     with th.plate("data", 4):
...         th.sample("z", dist.Bernoulli(probs=0.5))
>>> class Sink:
...     def __init__(self): self.seen = []
...     def add(self, addr, block): self.seen.append(("site", addr))
...     def add_plate(self, plate, rel, size, elems): self.seen.append(("plate", plate, rel, size))
...     def add_chain(self, chain, rel, T, steps): self.seen.append(("chain", chain, rel, T))
>>> sink = Sink()
>>> walk(th.simulate(m(), seed=0), (), sink)
>>> sink.seen
[('site', ('mu',)), ('plate', ('data',), ('z',), 4)]
"""

from __future__ import annotations

import numpy as np


def starts_with(p: tuple, x: tuple) -> bool:
    """Whether the address ``x`` starts with the pattern ``p``."""
    return len(p) <= len(x) and x[: len(p)] == p


def compatible(p: tuple, x: tuple) -> bool:
    """Whether one of ``p`` and ``x`` starts with the other."""
    k = min(len(p), len(x))
    return p[:k] == x[:k]


def walk(trace, p: tuple, sink) -> None:
    """Report the latent choices of ``trace`` selected by the pattern ``p`` to ``sink``, in
    execution order, then the selected keys of its mem tables."""
    _walk(trace.root, (), (), p, sink)
    for maddr, table in trace.mems.items():
        if starts_with(p, maddr):
            keys = [maddr + (k,) for k in table.values]
        elif starts_with(maddr, p) and len(p) == len(maddr) + 1 and p[-1] in table.values:
            keys = [p]
        else:
            keys = []
        for k in keys:
            sink.add(k, k)


def walk_steps(trace, chain: tuple, lo: int, hi: int, sink) -> bool:
    """Report the latent choices of steps ``lo..hi`` of the markov chain at ``chain`` (clipped
    to its steps); False when the trace has no chain there."""
    found = _find_chain(trace.root, (), chain)
    if found is None:
        return False
    node, caddr = found
    lo, hi = max(lo, 0), min(hi, node.T - 1)
    if node.uniform():
        if hi >= lo:
            _chain_groups(node, caddr, caddr, caddr, sink, np.arange(lo, hi + 1))
        return True
    for t in range(lo, hi + 1):
        _walk(node.step_view(t), caddr + (t,), caddr, caddr + (t,), sink, caddr + (t,))
    return True


def _walk(block, prefix: tuple, nprefix: tuple, p: tuple, sink, step=None) -> None:
    for local in block.latent_names():
        if starts_with(p, prefix + local) or starts_with(p, nprefix + local):
            sink.add(prefix + local, step if step is not None else prefix + local)
    for local, node in block.plates.items():
        paddr, pname = prefix + local, nprefix + local
        if not (compatible(p, paddr) or compatible(p, pname)):
            continue
        for rel in node.latent_names():
            rname = _strip_steps(node, rel)
            if starts_with(p, paddr) or starts_with(p, pname + rname):
                sink.add_plate(paddr, rel, node.size, None)
            else:
                e = _index(p, paddr, node.size, rel)
                if e is not None:
                    sink.add_plate(paddr, rel, node.size, np.array([e], dtype=np.int64))
    for local, chain in block.chains.items():
        caddr, cname = prefix + local, nprefix + local
        if not (compatible(p, caddr) or compatible(p, cname)):
            continue
        if chain.uniform():  # one group per site: O(number of sites), not O(T)
            _chain_groups(chain, caddr, cname, p, sink)
            continue
        for t in range(chain.T):
            _walk(chain.step_view(t), caddr + (t,), cname, p, sink, caddr + (t,))


def _chain_groups(chain, caddr, cname, p, sink, steps=None) -> None:
    for rel in chain.latent_sites():
        if starts_with(p, cname + rel) or starts_with(p, caddr):  # every step
            sink.add_chain(caddr, rel, chain.T, steps)
        else:
            t = _index(p, caddr, chain.T, rel)
            if t is not None and (steps is None or t in steps):
                sink.add_chain(caddr, rel, chain.T, np.array([t], dtype=np.int64))


def _index(p: tuple, addr: tuple, size: int, rel: tuple):
    """The element or step index ``i`` when the pattern ``p`` is ``addr + (i,)`` followed by
    a prefix of ``rel`` (``0 <= i < size``), else None."""
    if not (starts_with(addr, p) and len(p) > len(addr)):
        return None
    i = p[len(addr)]
    if isinstance(i, (int, np.integer)) and 0 <= i < size and starts_with(p[len(addr) + 1:], rel):
        return int(i)
    return None


def _strip_steps(node, rel: tuple) -> tuple:
    """The name form of an element-relative address (drop the step index of inner chains)."""
    for local in node.chains:
        k = len(local)
        if rel[:k] == local and len(rel) > k:
            return local + rel[k + 1 :]
    return rel


def _find_chain(block, prefix, addr):
    rel = addr[len(prefix) :]
    c = block.chains.get(rel)
    if c is not None:
        return c, addr
    for local, chain in block.chains.items():
        k = len(local)
        if rel[:k] == local and len(rel) > k and isinstance(rel[k], int) and rel[k] < chain.T:
            return _find_chain(chain.step_view(rel[k]), prefix + local + (rel[k],), addr)
    return None
