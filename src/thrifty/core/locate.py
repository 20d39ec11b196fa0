"""Finding choices in a trace: addresses → locations, plans, targets, and recorded values.

Blocks and markov steps are read through the block interface (``get_site``, ``latent_names``,
``plates``, ``chains``; a step of a chain is a :class:`~thrifty.core.markov.StepView`), plates
through their column sites (``site(rel)`` with ``get``/``take``).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import dotted, fmt
from thrifty.core.vocab import DETERMINISTIC, LATENT, RESAMPLE, Plan, VecTarget
from thrifty.errors import ModelError


class Location:
    """Where a choice lives.

    ``kind`` is ``"site"`` (in the model body or a markov step), ``"element"`` (a site of one
    plate element, possibly inside a chain of that element) or ``"mem"`` (a memoized key).
    ``steps`` lists the enclosing markov steps as (chain address, t), outermost first;
    ``dist`` is the distribution the choice was last scored under.
    """

    __slots__ = (
        "addr", "discrete", "dist", "elem", "kind", "mem_addr", "plate_addr", "rel", "steps",
        "value",
    )

    def __init__(self, kind, addr, value, discrete, steps=None, plate_addr=None, elem=None,
                 rel=None, mem_addr=None, dist=None):
        self.kind, self.addr, self.value, self.discrete = kind, addr, value, discrete
        self.steps = [] if steps is None else steps
        self.plate_addr, self.elem, self.rel = plate_addr, elem, rel
        self.mem_addr, self.dist = mem_addr, dist

    def __repr__(self) -> str:
        return f"Location({self.kind}, {self.addr!r}, value={self.value!r})"


def locate(trace, addr) -> Location | None:
    """The :class:`Location` of the latent choice at ``addr``, or ``None``."""
    addr = tuple(addr)
    loc = _in_block(trace.root, (), addr, [])
    if loc is not None:
        return loc
    table = trace.mems.get(addr[:-1])
    if table is not None and addr[-1] in table.values:
        return Location(
            "mem",
            addr,
            table.values[addr[-1]],
            table.discrete,
            mem_addr=addr[:-1],
            dist=table.dist.get(addr[-1]),
        )
    return None


def _in_block(block, prefix: tuple, addr: tuple, steps: list) -> Location | None:
    rel = addr[len(prefix) :]
    s = block.get_site(rel)
    if s is not None:
        if s.kind != LATENT:
            return None
        return Location("site", addr, s.value, s.discrete, list(steps), dist=s.dist)
    for k in range(1, len(rel)):
        head = rel[:k]
        node = block.plates.get(head)
        if node is not None:
            elem, inner = rel[k], rel[k + 1 :]
            if not isinstance(elem, (int, np.integer)) or not 0 <= elem < node.size:
                return None
            site = node.site(inner)
            if site is None or site.kind != LATENT:
                return None
            return Location(
                "element",
                addr,
                site.take(int(elem)),
                site.discrete,
                list(steps),
                plate_addr=prefix + head,
                elem=int(elem),
                rel=inner,
                dist=site.dist,
            )
        chain = block.chains.get(head)
        if chain is not None:
            t = rel[k]
            if not isinstance(t, (int, np.integer)) or not 0 <= t < chain.T:
                return None
            t, caddr = int(t), prefix + head
            if not chain.nested:  # no step holds plates or chains: a site of its columns
                col = chain.sites.get(rel[k + 1 :])
                if col is None or col.kind != LATENT or not col.at(t):
                    return None
                return _step_site(col, addr, t, [*steps, (caddr, t)])
            return _in_block(chain.step_view(t), caddr + (t,), addr, [*steps, (caddr, t)])
    return None


def plan_for(trace, locations, plan: Plan | None = None) -> Plan:
    """The plan that re-executes what a change at ``locations`` can affect."""
    plan = plan if plan is not None else Plan()
    for loc in locations:
        for chain, t in loc.steps:
            plan.add_step(chain, t)
        if loc.kind == "element":
            plan.add_elements(loc.plate_addr, [loc.elem])
        elif loc.kind == "mem":
            table = trace.mems[loc.mem_addr]
            key = loc.addr[-1]
            for plate, elems in table.readers(key).items():
                plan.add_elements(plate, elems)
                for chain, t in enclosing_steps(trace, plate):
                    plan.add_step(chain, t)
            for chain, steps in table.step_reader_steps(key).items():
                for t in steps:
                    plan.add_step(chain, t)
                    for c2, t2 in enclosing_steps(trace, chain):
                        plan.add_step(c2, t2)
    return plan


def enclosing_steps(trace, addr) -> list:
    """The markov steps (chain address, t) enclosing the node at ``addr``."""
    out, block, prefix = [], trace.root, ()
    rel = addr
    while rel:
        for k in range(1, len(rel)):
            chain = block.chains.get(rel[:k])
            if chain is not None and isinstance(rel[k], int) and rel[k] < chain.T:
                out.append((prefix + rel[:k], rel[k]))
                prefix = prefix + rel[: k + 1]
                block, rel = chain.step_view(rel[k]), rel[k + 1 :]
                break
        else:
            break
    return out


def make_targets(locations, values) -> tuple[dict, dict]:
    """Split (location, value) pairs into scalar targets and per-plate vector targets."""
    targets, vec = {}, {}
    grouped: dict = {}
    for loc, v in zip(locations, values):
        if loc.kind == "element":
            grouped.setdefault((loc.plate_addr, loc.rel), []).append((loc.elem, v))
        else:
            targets[loc.addr] = v
    for key, pairs in grouped.items():
        pairs.sort(key=lambda p: p[0])
        elems = np.array([p[0] for p in pairs], dtype=np.int64)
        vals = [p[1] for p in pairs]
        vec[key] = VecTarget(elems, RESAMPLE if vals[0] is RESAMPLE else np.asarray(vals))
    return targets, vec


# -- enumerating choices --------------------------------------------------------------------------
def choice_at(trace, r: int) -> tuple:
    """The address of latent choice number ``r`` (0 ≤ r < trace.n_latent), in a fixed order."""
    return locate_choice(trace, r).addr


def locate_choice(trace, r: int) -> Location:
    """The :class:`Location` of latent choice number ``r`` (``choice_at`` and ``locate`` in
    one walk: LMH's uniform choice)."""
    found, r = _block_choice(trace.root, (), r, [])
    if found is not None:
        return found
    for addr, table in trace.mems.items():
        if r < len(table):
            return locate(trace, addr + (list(table.values)[r],))
        r -= len(table)
    raise IndexError("choice index out of range")


def _step_site(col, addr: tuple, t: int, steps: list) -> Location:
    """The latent site of step ``t`` stored in the chain column ``col``: its value and
    distribution read from the columns (no :class:`~thrifty.core.trace.Site` made)."""
    return Location("site", addr, col.values.get(t), col.discrete, steps, dist=col.dists.get(t))


def _block_choice(block, prefix: tuple, r: int, steps: list):
    names = block.latent_names()
    if r < len(names):
        local = names[r]
        s = block.get_site(local)
        return Location("site", prefix + local, s.value, s.discrete, steps, dist=s.dist), 0
    r -= len(names)
    for local, node in block.plates.items():
        n = node.n_latent
        if r < n:
            elem, j = divmod(r, node.n_latent_elem)
            rel = node.latent_names()[j]
            site = node.site(rel)
            return Location(
                "element",
                prefix + local + (elem,) + rel,
                site.take(elem),
                site.discrete,
                steps,
                plate_addr=prefix + local,
                elem=elem,
                rel=rel,
                dist=site.dist,
            ), 0
        r -= n
    for local, chain in block.chains.items():
        n = chain.n_latent
        if r < n:
            caddr = prefix + local
            if chain.uniform():  # the same latent sites in every step: O(1)
                sites = chain.latent_sites()
                t, j = divmod(r, len(sites))
                return _step_site(chain.sites[sites[j]], caddr + (t,) + sites[j], t,
                                  [*steps, (caddr, t)]), 0
            cum = chain.cumulative_latent()
            t = int(np.searchsorted(cum, r, side="right"))
            r2 = r - (int(cum[t - 1]) if t else 0)
            return _block_choice(chain.step_view(t), caddr + (t,), r2, [*steps, (caddr, t)])
        r -= n
    return None, r


# -- values -------------------------------------------------------------------------------------
def get_value(trace, addr):
    addr = tuple(addr) if isinstance(addr, tuple) else (addr,)
    loc = locate(trace, addr)
    if loc is not None:
        return loc.value
    s = trace.root.sites.get(addr)
    if s is not None:
        return s.value
    raise KeyError(f"no choice at address {addr!r}")


def collect_values(trace, include_deterministic: bool = True) -> dict:
    """Latent (and deterministic) values keyed by dotted name; chains stack along steps.

    O(size of the trace): for reading a trace, not for recording draws (the recorder of
    ``th.infer`` reads only what changed, :mod:`thrifty.runtime.recorder`).
    """
    out: dict = {}
    collect_block(trace.root, (), out, include_deterministic)
    for addr, table in trace.mems.items():
        for key, value in table.values.items():
            a = addr + (key,)
            if a in out:  # (th.sample(("w", 1)) beside th.mem("w") read at 1)
                same_name(dotted(a), a, a)
            out[a] = value
    named, where = {}, {}
    for k, v in out.items():
        name = dotted(k)
        if name in named:  # (keys 1 and "1" of one mem)
            same_name(name, where[name], k)
        named[name], where[name] = v, k
    return named


def same_name(name: str, a: tuple, b: tuple):
    """Raise for two choices whose addresses ``a`` and ``b`` both read ``name`` (a name joins
    the address parts with "."): one would silently stand for the other in the values, draws,
    summaries and replays."""
    if a == b:
        raise ModelError(f"the address {fmt(a)} names two choices (a key of the memoized "
                         f"function {fmt(a[:-1])} and another choice): rename one")
    raise ModelError(
        f"the choices {fmt(a)} and {fmt(b)}: two choices would both be named {name!r} (a name "
        "joins the address parts with '.'): give them names that differ, e.g. memoized keys of "
        "one type (1 or '1', not both)")


def _keep(kind, det) -> bool:
    return kind == LATENT or (det and kind == DETERMINISTIC)


def collect_block(block, prefix: tuple, out: dict, det: bool) -> None:
    for local, s in block.sites.items():
        if _keep(s.kind, det):
            out[prefix + local] = s.value
    for local, node in block.plates.items():
        for k, s in node.sites.items():
            if _keep(s.kind, det) and s.values is not None:
                out[prefix + local + k] = s.values.array().copy()
        for c, cols in node.chains.items():
            for rel, s in cols.sites.items():
                if _keep(s.kind, det) and s.values is not None and cols.present[rel].all():
                    out[prefix + local + c + rel] = s.values.array().copy()
    for local, chain in block.chains.items():
        if chain.uniform():  # the common case: the same sites in every step
            for k, s in chain.sites.items():
                if _keep(s.kind, det) and s.values is not None:
                    data = s.values.array()
                    out[prefix + local + k] = (
                        _stack(list(data)) if data.dtype == object else data.copy()
                    )
            continue
        per_step = []
        for t in range(chain.T):
            d: dict = {}
            collect_block(chain.step_view(t), (), d, det)
            per_step.append(d)
        keys = dict.fromkeys(k for d in per_step for k in d)
        for k in keys:
            out[prefix + local + k] = _stack([d.get(k) for d in per_step])


def _stack(vals: list):
    """Stack per-step values; steps without the value get NaN (or None for non-numbers)."""
    t0 = type(vals[0]) if vals else None
    if (t0 is int or t0 is float) and all(type(v) is t0 for v in vals):
        return np.array(vals)
    present = [v for v in vals if v is not None]
    shapes = {np.shape(v) for v in present}
    if len(shapes) == 1 and all(np.isscalar(v) or isinstance(v, np.ndarray) for v in present):
        if len(present) == len(vals):
            return np.asarray(vals)
        shape = shapes.pop()
        arr = np.full((len(vals),) + shape, np.nan)
        for i, v in enumerate(vals):
            if v is not None:
                arr[i] = v
        return arr
    out = np.empty(len(vals), dtype=object)
    for i, v in enumerate(vals):
        out[i] = v
    return out


def find_plate(trace, plate_addr, steps=None):
    """The :class:`~thrifty.core.plate.PlateNode` at ``plate_addr`` (``steps``: the markov
    steps enclosing it, when known — :func:`enclosing_steps`)."""
    block, prefix = trace.root, ()
    for chain, t in enclosing_steps(trace, plate_addr) if steps is None else steps:
        block, prefix = trace_chain(trace, chain).step_view(t), chain + (t,)
    node = block.plates.get(plate_addr[len(prefix) :])
    if node is None:
        raise KeyError(f"no plate at {plate_addr!r}")
    return node


def trace_chain(trace, chain_addr):
    """The :class:`~thrifty.core.markov.ChainNode` at ``chain_addr``."""
    block, prefix = trace.root, ()
    for c, t in enclosing_steps(trace, chain_addr):
        block, prefix = block.chains[c[len(prefix) :]].step_view(t), c + (t,)
    return block.chains[chain_addr[len(prefix) :]]


def plan_elements(trace, plan: Plan, plate_addr, elems, steps=None) -> Plan:
    """Add plate elements (and the markov steps enclosing the plate, ``steps`` when known) to
    ``plan``."""
    plan.add_elements(plate_addr, elems)
    for chain, t in enclosing_steps(trace, plate_addr) if steps is None else steps:
        plan.add_step(chain, t)
    return plan


def plan_steps(trace, plan: Plan, chain_addr, steps) -> Plan:
    """Add markov steps (and the steps enclosing their chain) to ``plan``."""
    for t in np.asarray(steps).tolist():
        plan.add_step(chain_addr, t)
    for chain, t in enclosing_steps(trace, chain_addr):
        plan.add_step(chain, t)
    return plan


# A plate of at least WHOLE_PLATE_SIZE elements with at least WHOLE_PLATE_SHARE of them stale is
# rescored whole: once its arrays outgrow the CPU caches, executing elements at scattered
# positions costs about ten times as much per element as one pass over the plate.
WHOLE_PLATE_SHARE = 1 / 8
WHOLE_PLATE_SIZE = 1 << 14


def stale_plan(trace, parts) -> Plan:
    """The plan that rescores the stale ``parts`` — ``(kind, address, items)`` of
    :class:`~thrifty.core.vocab.StaleRead` — and nothing else (with no targets nothing before
    them changes, so a run with this plan executes only them: O(their number)).  A large plate
    (:data:`WHOLE_PLATE_SIZE`) with at least :data:`WHOLE_PLATE_SHARE` of its elements stale is
    planned whole, one contiguous pass (rescoring a fresh element with nothing changed gives
    the log-density it has)."""
    plan = Plan()
    for kind, addr, items in parts:
        if kind == "plate":
            size = find_plate(trace, addr).size
            if size >= WHOLE_PLATE_SIZE and len(items) >= WHOLE_PLATE_SHARE * size:
                items = np.arange(size)
            plan_elements(trace, plan, addr, items)
        else:
            plan_steps(trace, plan, addr, items)
    return plan


def stale_parts(trace) -> list:
    """Every stale plate element and markov step of ``trace``, as ``(kind, address, items)``:
    one vectorized scan of each node in ``trace.stale_nodes`` (O(its size)), none of the
    others."""
    parts, seen = [], set()
    for node in list(trace.stale_nodes):
        find = find_plate if hasattr(node, "stale_elements") else trace_chain
        try:
            current = find(trace, node.addr)
        except (KeyError, IndexError):
            current = None
        if current is not node:  # no longer in the trace (replaced or dropped)
            trace.stale_nodes.discard(node)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if current.has_stale(trace.mems):
            parts += current.stale_parts(trace.mems)
    return parts


def addressed_target(frame, rel):
    """The targets of a plate frame at site ``rel`` given by address (``init=``): the site of
    every element (``"data.z"`` → an array over the plate's elements) or single elements
    (``("data", 3, "z")``); ``(positions, values)`` or None.  Counts them as seen."""
    run, targets, addr = frame.run, frame.run.targets, frame.addr
    k = len(addr)
    whole = targets.get(addr + rel)
    if whole is not None:
        run.n_seen += 1
        if whole is RESAMPLE:
            return np.arange(frame.n), whole
        values = np.asarray(whole)
        if values.ndim == 0 or values.shape[0] != frame.N:
            raise ModelError(
                f"the value given for {fmt(addr + rel)} has shape {values.shape}; it sets the "
                f"site of every element of plate {fmt(addr)}, so its leading axis must have "
                f"length {frame.N}"
            )
        return np.arange(frame.n), values if frame.full else values[frame.idx]
    by = frame.__dict__.get("_by_rel")
    if by is None:  # the element targets of this plate, once per frame
        by = {}
        for a, v in targets.items():
            if len(a) > k + 1 and a[:k] == addr and isinstance(a[k], (int, np.integer)):
                by.setdefault(a[k + 1:], []).append((int(a[k]), v))
        frame._by_rel = by
    items = by.get(rel)
    if not items:
        return None
    items.sort(key=lambda item: item[0])
    elems = np.array([e for e, _ in items])
    bad = elems[(elems < 0) | (elems >= frame.N)]
    if len(bad):
        raise ModelError(f"plate {fmt(addr)} has {frame.N} elements; a value was given for "
                         f"element {int(bad[0])}")
    run.n_seen += len(items)
    return frame.positions(elems), np.asarray([v for _, v in items])
