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
step runs again (:mod:`thrifty.core.chain_run` decides which steps execute).

Inside a plate, a chain runs through the batched executor, one vectorized execution per step
over the plate's executed elements (:func:`run_batch_chain`); its sites are stored as
``(N, T, ...)`` columns over elements (:class:`ChainColumns`).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.chain_site import ChainSite, States
from thrifty.core.column import Column
from thrifty.core.node import Node, Update
from thrifty.core.vocab import LATENT

_NONE: dict = {}  # no nested nodes (never written)


class ChainNode(Node):
    """The stored state of one markov chain (see the module docstring)."""

    def __init__(self, addr: tuple, T: int):
        self.addr = addr
        self.T = T
        self.sites: dict[tuple, ChainSite] = {}  # in the order of first execution
        self.step_total = Column(np.zeros(T))  # per step: its sites and its nested nodes
        self._lp = 0.0  # Σ_t step_total[t], re-summed exactly every T updates
        self._updates = 0
        self.states = States.of([None] * T)  # immutable: shared by forks and outputs
        self.stamp = Column(np.zeros(T, dtype=np.int64))
        self.valid_from = 0
        self.n_stale = 0
        self.counts = Column(np.zeros(T, dtype=np.int64))  # latent choices per step
        self.n_latent = 0
        self._cum: np.ndarray | None = None
        self.nested: dict[int, tuple] = {}  # t → (plates, chains) of steps that have them
        self.reads: dict[int, list] = {}  # t → mem reads of steps that have them
        self._shape: tuple | None = None  # (latent site names, uniform) while the sites hold
        self._owned = True  # every column is owned (never shared with a fork): written in place

    @property
    def length(self) -> int:
        return self.T

    # -- the node interface -----------------------------------------------------------------
    def total_lp(self) -> float:
        return self._lp

    def latent_lp(self) -> float:
        out = 0.0
        for s in self.sites.values():
            if s.kind == LATENT:
                lp = s.lp.array()
                out += float(lp.sum() if s.present is None else lp[s.present.array()].sum())
        for plates, chains, _ in self.nested.values():
            for node in (*plates.values(), *chains.values()):
                out += node.latent_lp()
        return out

    def has_stale(self, mems=None, exact: bool = False) -> bool:
        if self.n_stale:
            return True
        for plates, chains, _ in self.nested.values():
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
        for name in ("step_total", "stamp", "counts"):
            setattr(out, name, getattr(self, name).share())
        out.nested = dict(self.nested)
        out.reads = dict(self.reads)
        self._owned = out._owned = False  # their columns are shared now
        return out

    # -- steps ------------------------------------------------------------------------------------
    def step_view(self, t: int) -> StepView:
        return StepView(self, t)

    def _shape_info(self) -> tuple:
        if self._shape is None:
            latent = [k for k, s in self.sites.items() if s.kind == LATENT]
            uniform = not self.nested and all(
                self.sites[k].present is None or self.sites[k].present.array().all()
                for k in latent
            )
            self._shape = (latent, uniform)
        return self._shape

    def uniform(self) -> bool:
        """Every step has the same latent sites and no nested node (selection by site, O(1)
        choice of a step)."""
        return self._shape_info()[1]

    def latent_sites(self) -> list:
        """Names of the latent sites, in the order of first execution."""
        return self._shape_info()[0]

    def step_lp(self, steps) -> np.ndarray:
        """Log-densities of the given steps (with their nested nodes)."""
        return self.step_total.take(np.asarray(steps, dtype=np.int64))

    def stale_steps(self, steps) -> np.ndarray:
        steps = np.asarray(steps, dtype=np.int64)
        if not self.n_stale:
            return steps[:0]
        return steps[self.stamp.take(steps) < self.valid_from]

    def stale_parts(self, mems=None) -> list:
        out = []
        if self.n_stale:
            out.append(("chain", self.addr, self.stale_steps(np.arange(self.T))))
        for plates, chains, _ in self.nested.values():
            for node in (*plates.values(), *chains.values()):
                if node.has_stale(mems):
                    out += node.stale_parts(mems)
        return out

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
        self._shape = None

    # -- commit ---------------------------------------------------------------------------------
    def resize(self, T: int) -> None:
        old = self.T
        self.sites = {k: s.resized(T) for k, s in self.sites.items()}
        for name in ("step_total", "stamp", "counts"):
            setattr(self, name, getattr(self, name).resized(T))
        self._owned = True  # resized columns are owned copies
        self.states = States.of((list(self.states) + [None] * T)[:T])
        for t in range(T, old):
            self.nested.pop(t, None)
            self.reads.pop(t, None)
        self._lp = float(self.step_total.array().sum())
        self._updates = 0
        self.n_latent = int(self.counts.array().sum())
        self._cum = None
        self._shape = None
        self.T = T

    def write_step(self, t: int, blk, clock: int) -> bool:
        """Write step ``t``'s executed block; returns whether the step's nested plates or
        chains are others than before (a change of the trace's layout)."""
        sites, bsites, owned = self.sites, blk.sites, self._owned
        for local, site in bsites.items():
            col = sites.get(local)
            if col is None:
                col = sites[local] = ChainSite.new(site, self.T)
                self._shape = None
            vals = col.values
            if owned and (vals is None or type(site.value) is col.pytype):
                # the usual case, written in place: a scalar value of the column's type
                if vals is not None:
                    vals.data[t] = site.value
                col.lp.data[t] = site.lp
                if col.dists is not None:
                    col.dists.data[t] = site.dist
                if col.present is not None:
                    col.present.data[t] = True
            else:
                col.write(t, site)
        if len(bsites) != len(sites):
            for local, col in sites.items():
                if local not in bsites:
                    col.absent(t)
                    if col.kind == LATENT:
                        self._shape = None
        reshaped = False  # (the step's plates or chains are not those it held)
        if blk.plates or blk.chains:
            if not self.nested:
                self._shape = None
            was = self.nested.get(t)
            reshaped = (was is None or was[0].keys() != blk.plates.keys()
                        or was[1].keys() != blk.chains.keys())
            self.nested[t] = (blk.plates, blk.chains, blk.lp)  # and the step's own sites' lp
            total = blk.total_lp()
            c = blk.total_latent()
        else:
            if t in self.nested:
                del self.nested[t]
                reshaped = True
                if not self.nested:
                    self._shape = None
            total = blk.lp
            c = blk.n_latent
        if blk.mem_reads:
            self.reads[t] = blk.mem_reads
        elif t in self.reads:
            del self.reads[t]
        st, counts, stamp = self.step_total, self.counts, self.stamp
        self._updates += 1
        if owned:  # no fork: write in place
            self._lp += total - st.data.item(t)
            st.data[t] = total
            stamp.data[t] = clock
            old = counts.data.item(t)
            if c != old:
                counts.data[t] = c
        else:
            self._lp += total - st.get(t)
            st.set(t, total)
            stamp.set(t, clock)
            old = counts.get(t)
            if c != old:
                counts.set(t, c)
        if c != old:
            self.n_latent += c - old
            self._cum = None
        if self._updates >= self.T:  # keep the running total exact (rounding does not pile up)
            self._lp = float(st.array().sum())
            self._updates = 0
        return reshaped



class StepView:
    """Step ``t`` of a :class:`ChainNode`, read like a :class:`~thrifty.core.trace.Block`."""

    __slots__ = ("chains", "lp", "mem_reads", "n_latent", "node", "plates", "t")

    def __init__(self, node: ChainNode, t: int):
        self.node, self.t = node, t
        nested = node.nested.get(t) if node.nested else None
        if nested is None:  # the step's total is its own sites' log-density
            self.plates = self.chains = _NONE
            st = node.step_total
            self.lp = st.data.item(t) if st.patch is None else st.get(t)
        else:
            self.plates, self.chains, self.lp = nested
        self.mem_reads = node.reads.get(t, ()) if node.reads else ()
        shape = node._shape or node._shape_info()  # the number of its own latent sites
        self.n_latent = len(shape[0]) if shape[1] else len(self.latent_names())

    def get_site(self, local):
        s = self.node.sites.get(local)
        if s is None or (s.present is not None and not s.present.get(self.t)):
            return None
        return s.site(self.t)

    def value_lp(self, local):
        """(value, log-density) of the latent site ``local`` at this step, or None."""
        s = self.node.sites.get(local)
        if s is None or s.kind != LATENT:
            return None
        t = self.t
        if s.present is not None and not s.present.get(t):
            return None
        vals, lps = s.values, s.lp
        if vals.patch is None and lps.patch is None and vals.data.ndim == 1:
            return vals.data.item(t), lps.data.item(t)
        return vals.get(t), lps.get(t)

    @property
    def sites(self) -> dict:
        return {k: s.site(self.t) for k, s in self.node.sites.items() if s.at(self.t)}

    def latent_names(self) -> list:
        node, t = self.node, self.t
        latent, uniform = node._shape_info()
        if uniform:
            return latent
        return [k for k in latent if node.sites[k].at(t)]

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


class DroppedStep:
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
            node = self.node
            if node.owner not in trace.tokens:  # shared with a fork: a copy-on-write clone
                node = trace.own(node)
                self.block.chains[self.local] = node
        T = self.length
        if node.T != T:
            node.resize(T)
        executed = self.blocks
        was_stale = 0
        if node.n_stale and not self.dirty and executed:
            steps = np.fromiter(executed, dtype=np.int64, count=len(executed))
            was_stale = int((node.stamp.take(steps) < node.valid_from).sum())
        names = len(node.sites)
        for t, blk in executed.items():
            if node.write_step(t, blk, clock):
                trace.layout += 1
        if len(node.sites) != names:  # (a site of a new name: a column)
            trace.layout += 1
        if self.fresh or len(self.states) == T:
            node.states = States.of(self.states[t] for t in range(T))
        else:
            node.states = node.states.committed(self.states)
        if len(executed) == T:
            node.normalize()
        if self.dirty:
            node.valid_from = clock
            node.n_stale = T - len(executed)
        else:
            node.n_stale -= was_stale
        if node.n_stale:
            trace.stale_nodes.add(node)
        elif trace.stale_nodes:
            trace.stale_nodes.discard(node)
        if trace.changes is not None:
            trace.changes.wrote(node, None if self.fresh or len(executed) == T else list(executed))
            if self.fresh:
                trace.changes.nodes_changed = True
