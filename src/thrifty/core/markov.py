"""Markov chains: ``th.markov(name, step, length, init, *args)``, stored as columns over steps.

``step(t, prev, *args)`` samples and observes the choices of step ``t`` (addresses
``(name, t, ...)``) and returns the new state.  A :class:`ChainNode` stores each site of the
steps as a column over the T steps — values ``(T, ...)`` and log-densities ``(T,)`` — plus the
states, the clock of each step's execution, and (only for the steps that have them) nested
plates and chains and mem reads.  Reading, changing or recording one step costs O(1) in T.

When a choice of step ``t`` changes, the run re-executes step ``t`` (from a :class:`StepView` of
the stored columns); if its state changed it re-executes step ``t + 1``, and so on until a state
comes out as before — for a chain whose state is a sampled value, a local update touches steps
``t`` and ``t + 1`` only.  When something that precedes the chain in its block changed, every
step runs again.

Inside a plate, a chain runs through the batched executor, one vectorized execution per step
over the plate's executed elements (:func:`run_batch_chain`); its sites are stored as
``(N, T, ...)`` columns over elements (:class:`ChainColumns`).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.batch import BatchFrame, MemberSite
from thrifty.core.column import Column
from thrifty.core.frame import BlockFrame
from thrifty.core.node import Node, Update
from thrifty.core.trace import Site
from thrifty.core.vocab import LATENT, same_value
from thrifty.errors import ModelError


class _Sum:
    """A running sum with Neumaier compensation (a chain's total over 10⁵ one-step updates
    stays at the accuracy of a recomputation)."""

    __slots__ = ("c", "s")

    def __init__(self, s: float = 0.0):
        self.s, self.c = s, 0.0

    def add(self, x: float) -> None:
        s = self.s
        t = s + x
        if abs(s) >= abs(x):
            self.c += (s - t) + x
        else:
            self.c += (x - t) + s
        self.s = t

    @property
    def value(self) -> float:
        return self.s + self.c


def _value_column(value, T: int) -> Column:
    """An empty column of T steps for values like ``value`` (numeric, else objects)."""
    if type(value) in (int, float, bool) or isinstance(value, np.generic):
        return Column(np.zeros(T, dtype=np.asarray(value).dtype))
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return Column(np.zeros((T,) + value.shape, dtype=value.dtype))
    return Column(np.empty(T, dtype=object))


def _fits(col: Column, value) -> bool:
    data = col.data
    if data.dtype == object:
        return True
    if data.ndim == 1:
        return type(value) in (int, float, bool) or (
            isinstance(value, np.generic) and value.dtype.kind in "biuf"
        )
    return isinstance(value, np.ndarray) and value.shape == data.shape[1:]


def _as_objects(col: Column) -> Column:
    data = col.array()
    out = np.empty(len(data), dtype=object)
    for t in range(len(data)):
        out[t] = data[t].item() if data.ndim == 1 else data[t].copy()
    return Column(out)


class ChainSite:
    """One site of a markov chain over its steps: values, log-densities, distributions and
    (when the site is missing from some steps) a presence mask."""

    __slots__ = ("discrete", "dists", "kind", "lp", "present", "values")

    def __init__(self, kind, discrete, values, lp, dists, present=None):
        self.kind, self.discrete = kind, discrete
        self.values, self.lp, self.dists, self.present = values, lp, dists, present

    @classmethod
    def new(cls, site: Site, T: int, t: int) -> ChainSite:
        values = None if site.kind not in (0, 3) else _value_column(site.value, T)
        present = None
        if T > 1:
            present = Column(np.zeros(T, dtype=bool))
        return cls(site.kind, site.discrete, values, Column(np.zeros(T)),
                   Column(np.empty(T, dtype=object)), present)

    def write(self, t: int, site: Site) -> None:
        if self.values is not None:
            v = site.value
            if not _fits(self.values, v):
                self.values = _as_objects(self.values)
            self.values.put(t, v)
        self.lp.put(t, site.lp)
        self.dists.put(t, site.dist)
        if self.present is not None:
            self.present.put(t, True)

    def absent(self, t: int) -> None:
        if self.present is None:
            self.present = Column(np.ones(len(self.lp), dtype=bool))
        self.present.put(t, False)

    def at(self, t: int) -> bool:
        return self.present is None or bool(self.present.get(t))

    def site(self, t: int) -> Site:
        v = None if self.values is None else self.values.get(t)
        return Site(v, self.lp.get(t), self.kind, self.discrete, self.dists.get(t))

    def share(self) -> ChainSite:
        return ChainSite(
            self.kind,
            self.discrete,
            None if self.values is None else self.values.share(),
            self.lp.share(),
            self.dists.share(),
            None if self.present is None else self.present.share(),
        )

    def resized(self, T: int) -> ChainSite:
        old = len(self.lp)
        present = (self.present.resized(T) if self.present is not None
                   else Column(np.arange(T) < old))
        return ChainSite(
            self.kind,
            self.discrete,
            None if self.values is None else self.values.resized(T),
            self.lp.resized(T),
            self.dists.resized(T),
            present,
        )


class ChainNode(Node):
    """The stored state of one markov chain (see the module docstring)."""

    def __init__(self, addr: tuple, T: int):
        self.addr = addr
        self.T = T
        self.sites: dict[tuple, ChainSite] = {}  # in the order of first execution
        self.own_lp = Column(np.zeros(T))  # per step: its own sites
        self.step_total = Column(np.zeros(T))  # per step: with its nested nodes
        self._lp = _Sum()
        self.states: list = [None] * T
        self._states_owned = True
        self.stamp = Column(np.zeros(T, dtype=np.int64))
        self.valid_from = 0
        self.n_stale = 0
        self.counts = Column(np.zeros(T, dtype=np.int64))  # latent choices per step
        self.n_latent = 0
        self._cum: np.ndarray | None = None
        self.nested: dict[int, tuple] = {}  # t → (plates, chains) of steps that have them
        self.reads: dict[int, list] = {}  # t → mem reads of steps that have them

    @property
    def length(self) -> int:
        return self.T

    # -- the node interface -----------------------------------------------------------------
    def total_lp(self) -> float:
        return self._lp.value

    def latent_lp(self) -> float:
        out = 0.0
        for s in self.sites.values():
            if s.kind == LATENT:
                lp = s.lp.array()
                out += float(lp.sum() if s.present is None else lp[s.present.array()].sum())
        for plates, chains in self.nested.values():
            for node in (*plates.values(), *chains.values()):
                out += node.latent_lp()
        return out

    def has_stale(self, mems=None, exact: bool = False) -> bool:
        if self.n_stale:
            return True
        for plates, chains in self.nested.values():
            for node in (*plates.values(), *chains.values()):
                if node.has_stale(mems, exact):
                    return True
        return False

    def drop_reads(self, counts, addr) -> None:
        for t in list(self.reads) + [t for t in self.nested if t not in self.reads]:
            self.step_view(t).drop_reads(counts, addr + (t,))

    def clone(self) -> ChainNode:
        out = object.__new__(ChainNode)
        out.__dict__.update(self.__dict__)
        out.sites = {k: s.share() for k, s in self.sites.items()}
        for name in ("own_lp", "step_total", "stamp", "counts"):
            setattr(out, name, getattr(self, name).share())
        out._lp = _Sum(self._lp.value)
        out._states_owned = self._states_owned = False
        out.nested = dict(self.nested)
        out.reads = dict(self.reads)
        return out

    # -- steps ------------------------------------------------------------------------------------
    def step_view(self, t: int) -> StepView:
        return StepView(self, t)

    def uniform(self) -> bool:
        """Every step has the same sites and no nested node (selection and recording by site)."""
        return not self.nested and all(s.present is None for s in self.sites.values())

    def step_lp(self, steps) -> np.ndarray:
        """Log-densities of the given steps (with their nested nodes)."""
        return self.step_total.take(np.asarray(steps, dtype=np.int64))

    def stale_steps(self, steps) -> np.ndarray:
        steps = np.asarray(steps, dtype=np.int64)
        if not self.n_stale:
            return steps[:0]
        return steps[self.stamp.take(steps) < self.valid_from]

    def cumulative_latent(self) -> np.ndarray:
        """Cumulative numbers of latent choices per step (for uniform choice selection)."""
        if self._cum is None:
            self._cum = np.cumsum(self.counts.array())
        return self._cum

    def normalize(self) -> None:
        """After every step was written: drop presence masks that are all true."""
        for s in self.sites.values():
            if s.present is not None and s.present.array().all():
                s.present = None

    def latent_sites(self) -> list:
        return [k for k, s in self.sites.items() if s.kind == LATENT]

    # -- commit ---------------------------------------------------------------------------------
    def resize(self, T: int) -> None:
        old = self.T
        self.sites = {k: s.resized(T) for k, s in self.sites.items()}
        for name in ("own_lp", "step_total", "stamp", "counts"):
            setattr(self, name, getattr(self, name).resized(T))
        self.states = (list(self.states) + [None] * T)[:T]
        self._states_owned = True
        for t in range(T, old):
            self.nested.pop(t, None)
            self.reads.pop(t, None)
        self._lp = _Sum(float(self.step_total.array().sum()))
        self.n_latent = int(self.counts.array().sum())
        self._cum = None
        self.T = T

    def write_step(self, t: int, blk, clock: int) -> None:
        for local, site in blk.sites.items():
            col = self.sites.get(local)
            if col is None:
                col = self.sites[local] = ChainSite.new(site, self.T, t)
            col.write(t, site)
        if len(blk.sites) != len(self.sites):
            for local, col in self.sites.items():
                if local not in blk.sites:
                    col.absent(t)
        total = blk.total_lp()
        self._lp.add(total - self.step_total.get(t))
        self.step_total.put(t, total)
        self.own_lp.put(t, blk.lp)
        if blk.plates or blk.chains:
            self.nested[t] = (blk.plates, blk.chains)
        elif t in self.nested:
            del self.nested[t]
        if blk.mem_reads:
            self.reads[t] = blk.mem_reads
        elif t in self.reads:
            del self.reads[t]
        c = blk.total_latent()
        old = self.counts.get(t)
        if c != old:
            self.counts.put(t, c)
            self.n_latent += c - old
            self._cum = None
        self.stamp.put(t, clock)

    def set_state(self, t: int, state) -> None:
        if not self._states_owned:
            self.states = list(self.states)
            self._states_owned = True
        self.states[t] = state


class StepView:
    """Step ``t`` of a :class:`ChainNode`, read like a :class:`~thrifty.core.trace.Block`."""

    __slots__ = ("node", "t")

    def __init__(self, node: ChainNode, t: int):
        self.node, self.t = node, t

    def get_site(self, local):
        s = self.node.sites.get(local)
        if s is None or not s.at(self.t):
            return None
        return s.site(self.t)

    @property
    def sites(self) -> dict:
        return {k: s.site(self.t) for k, s in self.node.sites.items() if s.at(self.t)}

    def latent_names(self) -> list:
        t = self.t
        return [k for k, s in self.node.sites.items() if s.kind == LATENT and s.at(t)]

    @property
    def lp(self) -> float:
        return self.node.own_lp.get(self.t)

    @property
    def n_latent(self) -> int:
        return len(self.latent_names())

    @property
    def plates(self) -> dict:
        nested = self.node.nested.get(self.t)
        return nested[0] if nested else {}

    @property
    def chains(self) -> dict:
        nested = self.node.nested.get(self.t)
        return nested[1] if nested else {}

    @property
    def mem_reads(self) -> list:
        return self.node.reads.get(self.t, [])

    def nodes(self):
        yield from self.plates.items()
        yield from self.chains.items()

    # as a dropped node (a chain that became shorter)
    def total_lp(self) -> float:
        return self.node.step_total.get(self.t)

    def latent_lp(self) -> float:
        t = self.t
        lp = sum(s.lp.get(t) for s in self.node.sites.values() if s.kind == LATENT and s.at(t))
        return lp + sum(n.latent_lp() for _, n in self.nodes())

    def total_latent(self) -> int:
        return self.node.counts.get(self.t)

    def drop_reads(self, counts, prefix: tuple) -> None:
        chain, t = self.node.addr, self.t
        for maddr, key in self.mem_reads:
            counts.read(maddr, key, -1)
            counts.unread_step(maddr, chain, t, key)
        for local, node in self.nodes():
            node.drop_reads(counts, prefix + local)


class _DroppedStep:
    """A step beyond the new length of a chain, accounted as a dropped node."""

    def __init__(self, view: StepView):
        self.view = view
        self.n_latent = view.total_latent()

    def total_lp(self):
        return self.view.total_lp()

    def latent_lp(self):
        return self.view.latent_lp()

    def drop_reads(self, counts, addr):
        self.view.drop_reads(counts, addr)


# -- executing a chain ----------------------------------------------------------------------------
def _exec_step(run, addr, t, step, prev, args, old_block, dirty):
    frame = BlockFrame(run, addr + (t,), old_block, dirty, (addr, t))
    run.work_steps += 1
    saved = run.frame
    run.frame = frame
    try:
        state = step(t, prev, *args)
    finally:
        run.frame = saved
    frame.finalize()
    return frame.new, state


def _check(addr, length, step) -> int:
    if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)):
        raise ModelError(f"markov chain {fmt(addr)}: length must be an int, got {length!r}")
    if length < 0:
        raise ModelError(f"markov chain {fmt(addr)}: length must be >= 0, got {length}")
    if not callable(step):
        raise ModelError(f"markov chain {fmt(addr)}: step must be callable, got {step!r}")
    return int(length)


def run_chain(parent, local, step, length, init, args):
    """Execute (part of) a chain inside ``parent`` (a block frame); returns the list of states
    (a new list: O(T) pointer copies, the only O(T) work of a one-step update)."""
    run = parent.run
    addr = parent.prefix + local
    T = _check(addr, length, step)
    old = parent.old.chains.get(local)
    if parent.dirty and run.mode.lazy and old is not None and old.T == T:
        return _lazy_chain(parent, local, addr, old, step, init, args)
    if old is None or parent.dirty or old.T != T:
        blocks, states, prev = {}, [], init
        for t in range(T):
            ob = old.step_view(t) if old is not None and t < old.T else None
            blocks[t], prev = _exec_step(run, addr, t, step, prev, args, ob, True)
            states.append(prev)
        if old is not None:
            for t in range(T, old.T):
                run.drop_node(_DroppedStep(old.step_view(t)), addr + (t,))
        changed = (
            old is None
            or old.T != T
            or not all(same_value(a, b) for a, b in zip(states, old.states))
        )
        node = ChainNode(addr, T) if old is None else old
        upd = ChainUpdate(node, parent.new, local, blocks, dict(enumerate(states)), T,
                          parent.dirty, old is None)
    else:
        planned = run.plan.steps.get(addr)
        node = old
        if not planned:
            parent.new.chains[local] = old
            return list(old.states)
        old_states = old.states
        new_states: dict = {}
        blocks = {}
        todo = sorted(planned)
        k, changed, prev_changed = 0, False, False
        t = todo[0]
        while t is not None:
            prev = init if t == 0 else new_states.get(t - 1, old_states[t - 1])
            blocks[t], state = _exec_step(
                run, addr, t, step, prev, args, old.step_view(t), prev_changed
            )
            new_states[t] = state
            prev_changed = not same_value(state, old_states[t])
            changed |= prev_changed
            while k < len(todo) and todo[k] <= t:
                k += 1
            if prev_changed and t + 1 < T:
                t += 1
            else:
                prev_changed = False
                t = todo[k] if k < len(todo) else None
        states = list(old_states)
        for t, s in new_states.items():
            states[t] = s
        upd = ChainUpdate(node, parent.new, local, blocks, new_states, T, False, False)
    run.chain_frames[addr] = blocks
    run.updates.append(upd)
    parent.new.chains[local] = node
    if changed:
        parent.dirty = True
    return states


def _lazy_chain(parent, local, addr, old, step, init, args):
    """Something before the chain changed, and the run is lazy (subsampling): execute only the
    planned steps, each from its stored previous state (states held fixed), and leave the other
    steps stale.  The steps are the chain's local sections (paper 000 §3.1)."""
    run = parent.run
    run.sections.append(("chain", addr, old.T))
    blocks = {}
    for t in sorted(run.plan.steps.get(addr, ())):
        prev = init if t == 0 else old.states[t - 1]
        blocks[t], state = _exec_step(run, addr, t, step, prev, args, old.step_view(t), True)
        if not same_value(state, old.states[t]):
            raise ModelError(
                f"markov chain {fmt(addr)}: step {t} returned a different state when only the "
                "values before the chain changed; its steps are not separable sections "
                "(the state must be a sampled value, not computed from the changed choice)"
            )
    run.chain_frames[addr] = blocks
    run.updates.append(ChainUpdate(old, parent.new, local, blocks, {}, old.T, True, False))
    parent.new.chains[local] = old
    return list(old.states)


def stale_steps(node: ChainNode, steps) -> list:
    """The steps among ``steps`` whose log-density is out of date."""
    return node.stale_steps(steps).tolist()


class ChainUpdate(Update):
    """Writes the executed steps of a chain into its node on commit."""

    __slots__ = ("block", "blocks", "dirty", "fresh", "length", "local", "node", "states")

    def __init__(self, node, block, local, blocks, states, length, dirty, fresh):
        self.node, self.block, self.local = node, block, local
        self.blocks, self.states = blocks, states
        self.length, self.dirty, self.fresh = length, dirty, fresh

    def apply(self, trace, clock: int) -> None:
        if self.fresh:
            node = self.node
            node.owner = trace.tokens[0]
        else:
            node = trace.own(self.node)
            if node is not self.node:
                self.block.chains[self.local] = node
        T = self.length
        if node.T != T:
            node.resize(T)
        executed = self.blocks
        was_stale = 0
        if node.n_stale and not self.dirty and executed:
            steps = np.fromiter(executed, dtype=np.int64, count=len(executed))
            was_stale = int((node.stamp.take(steps) < node.valid_from).sum())
        for t, blk in executed.items():
            node.write_step(t, blk, clock)
        for t, s in self.states.items():
            node.set_state(t, s)
        if len(executed) == T:
            node.normalize()
        if self.dirty:
            node.valid_from = clock
            node.n_stale = T - len(executed)
        else:
            node.n_stale -= was_stale
        if node.n_stale:
            trace.stale_nodes.add(node)
        else:
            trace.stale_nodes.discard(node)
        if trace.changes is not None:
            if self.fresh or len(executed) == T:
                trace.changes.wrote(node, None)
            else:
                trace.changes.wrote(node, list(executed))
            if self.fresh:
                trace.changes.nodes_changed = True


# -- chains inside a plate ------------------------------------------------------------------------
class _StepSite:
    """Step ``t`` of a site of :class:`ChainColumns`, read like a plate's column site."""

    __slots__ = ("dist", "site", "t")

    def __init__(self, site, t, dist):
        self.site, self.t, self.dist = site, t, dist

    @property
    def kind(self):
        return self.site.kind

    @property
    def discrete(self):
        return self.site.discrete

    @property
    def lp(self) -> Column:
        return Column(self.site.lp.array()[:, self.t])

    @property
    def values(self) -> Column | None:
        v = self.site.values
        return None if v is None else Column(v.array()[:, self.t])

    def take(self, elems):
        v = self.site.values.take(elems)
        return v[self.t] if np.ndim(elems) == 0 else v[:, self.t]


class ChainColumns:
    """A markov chain inside a plate: per site, (N, T, ...) columns over the elements, the
    steps at which the site exists, and its distribution at each step."""

    def __init__(self, T: int):
        self.T = T
        self.sites: dict = {}  # rel → plate column site over (N, T, ...)
        self.present: dict = {}  # rel → (T,) bool
        self.dists: dict = {}  # rel → list of T distributions

    @classmethod
    def build(cls, steps: list, size: int) -> ChainColumns:
        out = cls(len(steps))
        for rel in _rels(steps):
            present = np.array([rel in sf.new for sf in steps], dtype=bool)
            first = next(sf.new[rel] for sf in steps if rel in sf.new)
            vals, lps = _stack(steps, rel, present, size)
            out.sites[rel] = _ColSite(
                None if vals is None else Column(vals), Column(lps), first.kind, first.discrete
            )
            out.present[rel] = present
            out.dists[rel] = [sf.new[rel].dist if rel in sf.new else None for sf in steps]
        return out

    def write(self, steps: list, idx) -> None:
        for rel, site in self.sites.items():
            present = self.present[rel]
            vals, lps = _stack(steps, rel, present, None)
            if vals is not None and any(rel in sf.changed for sf in steps):
                site.values.put(idx, vals)
            site.lp.put(idx, lps)
            self.dists[rel] = [sf.new[rel].dist if rel in sf.new else None for sf in steps]

    def gather(self, idx) -> _Gathered:
        return _Gathered(self, idx)

    def step_sites(self, t: int) -> dict:
        return {rel: _StepSite(s, t, self.dists[rel][t])
                for rel, s in self.sites.items() if self.present[rel][t]}

    def step_site(self, t: int, rel: tuple):
        s = self.sites.get(rel)
        if s is None or not 0 <= t < self.T or not self.present[rel][t]:
            return None
        return _StepSite(s, t, self.dists[rel][t])

    def latent_names(self) -> list:
        rels = [rel for rel, s in self.sites.items() if s.kind == LATENT]
        return [(t, rel) for t in range(self.T) for rel in rels if self.present[rel][t]]

    def latent_lp(self) -> float:
        out = 0.0
        for rel, s in self.sites.items():
            if s.kind == LATENT:
                out += float(s.lp.array()[:, self.present[rel]].sum())
        return out

    def share(self) -> ChainColumns:
        out = ChainColumns(self.T)
        out.sites = {k: s.share() for k, s in self.sites.items()}
        out.present = dict(self.present)
        out.dists = dict(self.dists)
        return out


class _ColSite:
    """A (N, T, ...) site of a chain inside a plate."""

    __slots__ = ("discrete", "kind", "lp", "values")

    def __init__(self, values, lp, kind, discrete):
        self.values, self.lp, self.kind, self.discrete = values, lp, kind, discrete

    def share(self) -> _ColSite:
        return _ColSite(
            None if self.values is None else self.values.share(),
            self.lp.share(),
            self.kind,
            self.discrete,
        )


def _rels(steps) -> list:
    return list(dict.fromkeys(rel for sf in steps for rel in sf.new))


def _stack(steps, rel, present, size):
    """(values (n, T, ...) or None, lp (n, T)) of ``rel`` over the steps (zeros where absent)."""
    n = steps[0].acc.n
    first = next(sf.new[rel] for sf in steps if rel in sf.new)
    T = len(steps)
    lps = np.zeros((n, T))
    vals = None
    if first.values is not None:
        v0 = np.asarray(first.values)
        vals = np.zeros((n, T) + v0.shape[1:], dtype=v0.dtype)
    for t, sf in enumerate(steps):
        s = sf.new.get(rel)
        if s is None:
            continue
        if s.lp is not None:
            lps[:, t] = s.lp
        if vals is not None:
            vals[:, t] = s.values
    return vals, lps


class _Gathered:
    """A chain's stored columns gathered at a plate's executed elements, step by step."""

    def __init__(self, cols: ChainColumns, idx):
        self.cols, self.idx = cols, idx
        self.T = cols.T
        self._cache: dict = {}

    def _get(self, rel):
        got = self._cache.get(rel)
        if got is None:
            s = self.cols.sites[rel]
            got = self._cache[rel] = (
                None if s.values is None else s.values.take(self.idx),
                s.lp.take(self.idx),
            )
        return got

    def step_store(self, t: int):
        return _StepStore(self, t)


class _StepStore:
    __slots__ = ("g", "t")

    def __init__(self, g, t):
        self.g, self.t = g, t

    def get(self, rel):
        cols, t = self.g.cols, self.t
        s = cols.sites.get(rel)
        if s is None or t >= cols.T or not cols.present[rel][t]:
            return None
        vals, lps = self.g._get(rel)
        return MemberSite(
            None if vals is None else vals[:, t], lps[:, t], s.kind, s.discrete, cols.dists[rel][t]
        )


def run_batch_chain(acc, local, step, length, init, args):
    """A chain inside a plate: step ``t`` runs once over the executed elements (the batch's
    members), ``step(t, prev)`` receiving the array of their states; returns the states."""
    run = acc.run
    T = _check(acc.generic_all(local), length, step)
    old = acc.old_chain(local)
    if old is not None and old.T != T:
        acc.require_full(f"a chain of length {T} (was {old.T})", local)
    states, prev = [], init
    steps = []
    for t in range(T):
        store = old.step_store(t) if old is not None else None
        sf = BatchFrame(run, acc, local + (t,), store)
        run.frame = sf
        try:
            prev = step(t, prev, *args)
        finally:
            run.frame = acc
        steps.append(sf)
        states.append(prev)
    acc.new_chains[local] = steps
    return states
