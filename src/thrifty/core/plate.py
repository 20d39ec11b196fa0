"""Plates: conditionally independent elements, stored as columns over the elements.

``with th.plate("data", N) as i:`` runs its body once, vectorized over the element indices ``i``
chosen by the engine: every element (then ``i`` is ``slice(0, N)``, so ``X[i]`` is a view and
costs nothing), a minibatch, or one element (then ``i`` is a sorted integer array).  The body is
run by the batched executor (:mod:`thrifty.core.batch`) with the executed elements as members.

A :class:`PlateNode` keeps, for all N elements, a :class:`~thrifty.core.column.Column` of values
and of log-densities per site, the log-density of each element (``elem_lp``) and the clock at
which it was computed (``stamp``).  When something that precedes the plate changes in a *lazy*
run, ``valid_from`` advances: elements stamped earlier are *stale* (paper 000 §3.5) and are
rescored when next read (:meth:`thrifty.Kernel.execute`), never by a sweep after each step.
The node counts its stale elements (``n_stale``) so that "is anything stale?" costs O(1).
Executing k elements costs O(k) whatever N is.

Values produced inside a plate are local to it: code after the ``with`` block must not depend on
them (the engine may have run only some elements).  Markov chains may run inside a plate (one
chain per element, vectorized over the elements; :mod:`thrifty.core.plate_chain`).
"""

from __future__ import annotations

import math

import numpy as np

from thrifty.core import coupled, mem
from thrifty.core.address import fmt
from thrifty.core.batch import BatchFrame, MemberSite
from thrifty.core.code_errors import leave_with_error
from thrifty.core.column import Column, ColumnSite, write_sites
from thrifty.core.exec_log import ExecLog
from thrifty.core.locate import addressed_target
from thrifty.core.node import Node, Update
from thrifty.core.plate_chain import ChainColumns
from thrifty.core.plate_stale import StaleElements
from thrifty.core.vocab import LATENT, RESAMPLE, StaleRead, weak_run
from thrifty.errors import ModelError, SelectionError

_EMPTY = np.zeros(0, dtype=np.int64)
_FIRST = np.zeros(1, dtype=np.int64)  # the position of the one executed element


class PlateNode(StaleElements, Node):
    """The stored state of one plate (see the module docstring)."""

    obs_names: frozenset = frozenset()  # (a node pickled before it held them)

    def __init__(self, addr: tuple, size: int):
        self.addr = addr
        self.size = size
        self.sites: dict[tuple, ColumnSite] = {}
        self.chains: dict[tuple, ChainColumns] = {}  # markov chains inside: (N, T, ...) columns
        self.elem_lp = Column(np.zeros(size))
        self.stamp = Column(np.zeros(size, dtype=np.int64))  # clock of each element's execution
        self.full_clock = 0  # clock of the last execution of every element
        self.valid_from = 0
        self.lp_sum = 0.0
        self.n_latent_elem = 0
        self.mem_keys: dict[tuple, Column] = {}  # (mem address, call number) → keys
        self.n_stale = 0  # elements executed before ``valid_from``
        self.exec_clock = 0  # clock of the newest execution of any element (O(1) "since?")
        self.exec_log: ExecLog | None = None  # executions, newest first, once watched
        self.watch_obs: frozenset = frozenset()  # observations whose distributions they carry
        self.obs_names: frozenset = frozenset()  # observations executed so far, by name
        self.mem_stale = False  # some elements may have read a mem key changed since
        self.procs: dict = {}  # coupled sites (process draws, collapsed observations) → state
        self._latent: list | None = None

    # -- the node interface -----------------------------------------------------------------
    @property
    def n_latent(self) -> int:
        return self.size * self.n_latent_elem

    def total_lp(self) -> float:
        if self.procs:  # coupled sites: their joint log-densities (thrifty.core.coupled)
            return self.lp_sum + sum(p.log_prob() for p in self.procs.values())
        return self.lp_sum

    def latent_lp(self) -> float:
        out = sum(float(s.lp.array().sum()) for s in self.sites.values() if s.kind == LATENT)
        out += sum(p.log_prob() for p in self.procs.values() if p.latent)
        for cols in self.chains.values():
            out += cols.latent_lp()
        return out

    def drop_reads(self, counts, addr) -> None:
        for (maddr, _), keys in self.mem_keys.items():
            counts.read_many(maddr, keys.array(), -1)
            counts.forget_plate(maddr, addr)

    def clone(self) -> PlateNode:
        out = object.__new__(PlateNode)
        out.__dict__.update(self.__dict__)
        out.sites = {k: s.share() for k, s in self.sites.items()}
        out.chains = {k: c.share() for k, c in self.chains.items()}
        out.elem_lp = self.elem_lp.share()
        out.stamp = self.stamp.share()
        out.mem_keys = {k: c.share() for k, c in self.mem_keys.items()}
        out.procs = {k: p.fork() for k, p in self.procs.items()}  # (runs change copies)
        return out

    # -- addresses --------------------------------------------------------------------------------
    def latent_names(self) -> list[tuple]:
        """Addresses, relative to an element, of its latent choices (chain steps included)."""
        if self._latent is None:
            names = [k for k, s in self.sites.items() if s.kind == LATENT]
            for local, cols in self.chains.items():
                names += [local + (t,) + rel for t, rel in cols.latent_names()]
            self._latent = names
        return self._latent

    def site(self, rel: tuple):
        """The stored site at address ``rel`` relative to an element (``take``, ``kind``,
        ``discrete``, ``dist``), or None."""
        s = self.sites.get(rel)
        if s is not None:
            return s
        for local, cols in self.chains.items():
            k = len(local)
            if rel[:k] == local and len(rel) > k and isinstance(rel[k], int):
                return cols.step_site(rel[k], rel[k + 1 :])
        return None


class PlateContext:
    """The context manager returned by ``th.plate``; see :func:`thrifty.plate`."""

    __slots__ = ("frame", "local", "parent", "size")

    def __init__(self, parent, local, size):
        if type(size) is not int and (isinstance(size, (bool, np.bool_))
                                      or not isinstance(size, (int, np.integer))):
            raise ModelError(
                f"plate {fmt(parent.prefix + local)}: size must be an int, got {size!r}"
            )
        if size < 0:
            raise ModelError(f"plate {fmt(parent.prefix + local)}: size must be >= 0, got {size}")
        self.parent = parent
        self.local = local
        self.size = int(size)
        self.frame = None

    def __enter__(self):
        parent = self.parent
        run = parent.run
        addr = parent.prefix + self.local
        old = parent.old.plates.get(self.local)
        N = self.size
        lazy = run.mode.lazy
        fresh_node = old is None or old.size != N
        dirty = parent.dirty  # program order: something before the plate changed
        if fresh_node:
            idx = None
        else:
            planned = run.plan.plates.get(addr, _EMPTY)
            if dirty and not lazy:
                idx = None
            else:
                idx = planned if len(planned) < N else None
        cand = run.candidates
        lanes = cand is not None and cand.plate == addr
        if lanes:  # lanes of one element (vocab.Candidates) of a stored plate, nothing changed
            if fresh_node or dirty:
                raise RuntimeError(f"candidate lanes at plate {fmt(addr)}: new or changed before")
            idx = np.full(cand.k, cand.elem, dtype=np.int64)
        if run.fresh_reads and old is not None and (old.n_stale or old.mem_stale):
            _stop_before_stale(run, addr, old, None if fresh_node else idx[:1] if lanes else idx)
        frame = PlateFrame(run, parent, addr, self.local, old, idx, N, fresh_node, dirty)
        frame.lanes = frame.strict = lanes
        run.plate_frames[addr] = frame
        if dirty and lazy and not fresh_node:
            run.sections.append(("plate", addr, N))
        self.frame = frame
        run.frame = frame
        return frame.user_index

    def __exit__(self, exc_type, exc, tb):
        self.parent.run.frame = self.parent
        self.frame.finalize() if exc_type is None else leave_with_error(self.frame, exc)
        return False


class _OldElements:
    """The stored sites of a plate, gathered at the executed elements when first read."""

    __slots__ = ("idx", "node")

    def __init__(self, node, idx):
        self.node, self.idx = node, idx

    def get(self, local):
        s, idx = self.node.sites.get(local), self.idx
        return None if s is None else MemberSite(
            None if s.values is None else s.values.take(idx),
            None if s.lp is None else s.lp.take(idx), s.kind, s.discrete, s.dist)


def _stop_before_stale(run, addr, old, idx) -> None:
    bad = old.stale_elements(idx, run.trace.mems)
    if len(bad):  # an exact run stops before stale elements: its caller rescores them
        raise StaleRead([("plate", addr, bad)])


class PlateFrame(BatchFrame):
    """The frame of a plate body: executes element indices ``idx`` and journals the result."""

    run = weak_run()  # (and the enclosing block's sites, not its frame: no reference cycle)

    def __init__(self, run, parent, addr, local, old, idx, N, fresh_node, dirty):
        self.fresh_node = fresh_node
        self.N = N
        self.full = idx is None
        if idx is None:
            self.idx = slice(0, N)
            n = N
        else:
            self.idx = idx
            n = len(idx)
            run.full = False
        super().__init__(run, None, (), None if fresh_node else _OldElements(old, self.idx))
        self.init_members(n)
        self.coupled = {}
        self.parent_block = parent.new  # (the enclosing block's new sites, where the node goes)
        self.dirty = dirty  # did a value before the plate change? (program order)
        self.addr = addr
        self.local = local
        self.old_node = old
        self.user_index = self.idx
        self.watch = None if old is None or fresh_node else old.watch_obs
        self.watched = {}  # watched observation → (distribution, value), when met
        run.work_elements += n

    # -- members ----------------------------------------------------------------------------------
    def where(self) -> str:
        return f"plate {fmt(self.addr)}"

    def member_addr(self, j: int, rel: tuple) -> tuple:
        """Address of executed element number ``j`` (position in ``idx``) at ``rel``."""
        i = j if self.full else int(self.idx[j]) if self.n else "*"
        return self.addr + (i,) + rel

    elem_addr = member_addr

    def generic(self, rel: tuple) -> tuple:
        """``('data', '*', 'z')``-style address naming a site of every element."""
        if self.n == 1:
            return self.member_addr(0, rel)
        return self.addr + ("*",) + rel

    def generic_all(self, rel: tuple) -> tuple:
        return self.addr + ("*",) + rel

    def member_indices(self) -> np.ndarray:
        return np.arange(self.N)[self.idx] if self.full else self.idx

    def obs_key(self, rel):
        return (self.addr, rel)

    def take_members(self, stored):
        return stored[self.idx]

    def target_for(self, rel):
        run = self.run
        if vec := run.vec:
            tgt = vec.get(key := (self.addr, rel))
            if tgt is not None:
                run.vec_seen.add(key)
                if self.full and len(tgt.elems) > self.N and tgt.values is not RESAMPLE:
                    raise SelectionError(f"{len(tgt.elems)} values given to the {self.N} "
                                         f"elements of {fmt(self.generic_all(rel))}")
                return self.positions(tgt.elems), tgt.values
        if run.targets is not None:  # targets by address (init=)
            return addressed_target(self, rel)
        return None

    def positions(self, elems: np.ndarray) -> np.ndarray:
        """Where the elements ``elems`` are among the executed ones."""
        if self.full:
            return elems
        n = self.n
        if len(elems) == n:  # exactly these, in order (the usual case)
            if n == 1:
                if elems is self.idx or elems[0] == self.idx[0]:  # (the plan's own array)
                    return _FIRST
            elif np.array_equal(elems, self.idx):
                return np.arange(n)
        pos = np.searchsorted(self.idx, elems)
        if np.any(pos >= self.n) or np.any(self.idx[np.minimum(pos, self.n - 1)] != elems):
            raise RuntimeError("targets at plate elements that the run does not execute")
        return pos

    def require_full(self, what: str, rel: tuple) -> None:
        if not self.full:
            raise ModelError(
                f"plate {fmt(self.addr)}: {what} at {fmt(self.generic(rel))} appeared while "
                "running a subset of the elements; a plate's structure must not depend on its "
                "elements' values")

    def old_chain(self, local):
        """The stored chain ``local`` gathered at the executed elements (or None)."""
        if self.fresh_node:
            return None
        return None if (cols := self.old_node.chains.get(local)) is None else cols.gather(
            self.idx)

    def stored_member_dist(self, local, j: int):  # (a site of the body or of a chain step)
        """Executed element ``j``'s distribution of ``local`` in the trace the run replays."""
        if self.fresh_node:
            return None
        e = j if self.full else int(self.idx[j])
        if (s := self.old_node.site(local)) is not None and (d := s.member_dist(e)) is not None:
            return d  # (kept when the run that wrote element e executed it)
        return self.run.element_dist(self.addr, local, e, self.member_indices())

    def site_at(self, rel: tuple) -> MemberSite:
        """The site ``rel`` as this execution left it (values, log-densities, distribution over
        the executed elements)."""
        s = self.new.get(rel)
        if s is not None:
            return s
        for local, steps in self.new_chains.items():
            k = len(local)
            if rel[:k] == local and len(rel) > k:
                return steps[rel[k]].new[rel[k + 1 :]]
        raise KeyError(rel)

    @property
    def q_elem(self):
        return self.q

    # -- end of the plate body ------------------------------------------------------------------
    def _frames(self):
        """(old store, new frame) pairs of the plate body and each chain step."""
        yield (None if self.fresh_node else self.old_node.sites), self
        for local, steps in self.new_chains.items():
            old = None if self.fresh_node else self.old_node.chains.get(local)
            for t, sf in enumerate(steps):
                yield (None if old is None else old.step_sites(t)), sf

    def finalize(self) -> None:
        run = self.run
        self.elem_lp = self.total_member_lp()
        if self.lanes:  # candidate lanes: scored, never written (vocab.Candidates)
            self.parent_block.plates[self.local] = self.old_node
            return
        n_latent_elem = [s.kind for s in self.new.values()].count(LATENT)
        if self.new_chains:
            n_latent_elem += sum(
                1 for sfs in self.new_chains.values() for f in sfs for s in f.new.values()
                if s.kind == LATENT
            )
        if self.fresh_node:
            node = PlateNode(self.addr, self.N)
            write_sites(node.sites, self, self.idx, self.N, True)
            if self.obs_names:
                node.obs_names = frozenset(self.obs_names)
            for local, steps in self.new_chains.items():
                node.chains[local] = ChainColumns.build(steps, self.N)
            node.elem_lp = Column(self.elem_lp)
            node.lp_sum = self.lp_total
            node.n_latent_elem = n_latent_elem
            node.mem_keys = {k: Column(np.asarray(v).copy()) for k, v in self.mem_keys.items()}
            if self.coupled:
                coupled.install(node, self)
            if self.old_node is not None:
                run.drop_node(self.old_node, self.addr)
            update = NewPlate(node, self.parent_block, self.local)
        else:
            node = self.old_node
            stale = node.n_stale or node.mem_stale
            if self.full and not stale:
                old_lp = node.lp_sum
            else:
                old_lp = node.elem_lp.total_at(self.idx)
            if stale and not run.fresh_reads and node.any_stale(self.idx, run.trace.mems):
                old_lp = math.nan  # unknown: this run can rescore, not compare
            if (n_latent_elem != node.n_latent_elem or self.new_chains or node.chains
                    or self.new.keys() != node.sites.keys()):  # (else: the same sites)
                for st_lp, count, rel in self._check_structure(n_latent_elem):
                    self.lp_stale += st_lp
                    self.n_stale += count
                    self.note_stale(rel, count)
            run.lp_old += old_lp - self.lp_stale
            update = PlateUpdate(self, node, n_latent_elem)
        if self.coupled:
            coupled.account(self, run)
        if self.mem_keys or (self.old_node is not None and self.old_node.mem_keys):
            run.account_plate_reads(self, None if self.fresh_node else self.old_node)
        run.lp_new += self.lp_total - self.lp_fresh
        if self.n_fresh or self.n_stale:  # (choices created or dropped)
            run.n_fresh, run.lp_fresh = run.n_fresh + self.n_fresh, run.lp_fresh + self.lp_fresh
            run.n_stale, run.lp_stale = run.n_stale + self.n_stale, run.lp_stale + self.lp_stale
        if self.q_fwd or self.q_rev:  # (values redrawn from their prior)
            run.q_fwd, run.q_rev = run.q_fwd + self.q_fwd, run.q_rev + self.q_rev
        self.parent_block.plates[self.local] = node
        run.updates.append(update)

    def _check_structure(self, n_latent_elem):
        """Sites of the old plate not met again: stale (full runs) or an error (subsets)."""
        node = self.old_node
        out = []
        if n_latent_elem == node.n_latent_elem and self.new.keys() == node.sites.keys():
            # (the same sites and no chain: not called — finalize checks that first)
            if self.new_chains.keys() == node.chains.keys() and all(
                set(f.new) == set(o or ()) for o, f in self._frames() if f is not self
            ) and all(len(s) == node.chains[k].T for k, s in self.new_chains.items()):
                return out
        self.require_full("a change of the sites", ())
        for old_store, f in self._frames():
            for k, s in (old_store or {}).items():
                if k not in f.new and s.kind == LATENT:
                    out.append((float(s.lp.array().sum()), node.size, f.rel + k))
        for local, cols in node.chains.items():
            first = len(self.new_chains.get(local, ()))
            for t in range(first, cols.T):
                for rel, s in cols.step_sites(t).items():
                    if s.kind == LATENT:
                        out.append((float(s.lp.array().sum()), node.size, local + (t,) + rel))
        return out


class NewPlate(Update):
    """A plate created (or re-created at another size) by the run."""

    __slots__ = ("block", "local", "node")

    def __init__(self, node, block, local):
        self.node, self.block, self.local = node, block, local

    def apply(self, trace, clock: int) -> None:
        node = self.node
        node.owner = trace.tokens[0]
        node.full_clock = node.exec_clock = clock
        node.valid_from = clock
        trace.layout += 1  # (a new plate, or one of a new size: its sites may be new)
        if trace.changes is not None:
            trace.changes.nodes_changed = True


class PlateUpdate(Update):
    """Writes a plate frame's results into its node on commit."""

    __slots__ = ("frame", "n_latent_elem", "node")

    def __init__(self, frame, node, n_latent_elem):
        self.frame = frame
        self.node = node
        self.n_latent_elem = n_latent_elem

    def apply(self, trace, clock: int) -> None:
        f = self.frame
        node = trace.own(self.node)
        if node is not self.node:
            f.parent_block.plates[f.local] = node
        idx = f.idx
        restructured = (self.n_latent_elem != node.n_latent_elem
                        or f.new_chains.keys() != node.chains.keys())
        n, names = len(node.sites), tuple(node.sites) if f.full else None
        write_sites(node.sites, f, idx, node.size, f.full)  # (a full run may also drop columns)
        if restructured or len(node.sites) != n or (f.full and tuple(node.sites) != names):
            trace.layout += 1
        if f.obs_names and not f.obs_names <= node.obs_names:  # (an observation of a new name;
            node.obs_names = node.obs_names | f.obs_names  # names are kept once seen)
            trace.layout += 1
        if f.coupled or (f.full and node.procs):
            coupled.install(node, f)
        for local, steps in f.new_chains.items():
            cols = node.chains.get(local)
            if f.full or cols is None or cols.T != len(steps):
                node.chains[local] = ChainColumns.build(steps, node.size)
            else:
                cols.write(steps, idx)
        if f.full:
            for local in [k for k in node.chains if k not in f.new_chains]:
                del node.chains[local]
            node.n_latent_elem = self.n_latent_elem
            node.elem_lp.replace(f.elem_lp)
            node.lp_sum = f.lp_total
            node.full_clock = clock
            node.n_stale = 0
            node.mem_stale = False
            if f.dirty:
                node.valid_from = clock
        else:
            if f.dirty:  # what precedes the plate changed: unexecuted elements are stale
                node.valid_from = clock
                node.n_stale = node.size - f.n
                node.lp_sum = math.nan
            else:
                if node.n_stale:  # the stale elements among these are rescored now
                    was = np.maximum(node.stamp.take(idx), node.full_clock) < node.valid_from
                    node.n_stale -= int(was.sum())
                node.lp_sum += f.lp_total - node.elem_lp.total_at(idx)
            node.elem_lp.put(idx, f.elem_lp)
            node.stamp.put(idx, clock)
            if node.lp_sum != node.lp_sum and not node.n_stale and not node.mem_stale:
                node.lp_sum = float(node.elem_lp.array().sum())  # every element fresh again
        if f.full or f.n:
            node.exec_clock = clock
        if node.exec_log is not None:
            if f.full:
                node.exec_log = ExecLog(None, None, {})  # (replaces all before it)
            elif f.n or f.dirty:
                node.exec_log = ExecLog(node.exec_log, np.array(idx), f.watched, f.dirty)
        if restructured:
            node._latent = None
        if f.mem_keys or (f.full and node.mem_keys):  # (else: no key to write or drop)
            mem.write_plate_keys(node, f, idx)
        if node.n_stale or node.mem_stale:
            trace.stale_nodes.add(node)
        else:
            trace.stale_nodes.discard(node)
        if trace.changes is not None:
            keys = set(f.changed)
            for local, steps in f.new_chains.items():
                for sf in steps:
                    keys.update((local, rel) for rel in sf.changed)
            trace.changes.wrote(node, None if f.full else idx, keys)
