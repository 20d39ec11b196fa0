"""Markov chains: ``th.markov(name, step, length, init, *args)``.

``step(t, prev, *args)`` samples and observes the choices of step ``t`` (addresses
``(name, t, ...)``) and returns the new state.  A :class:`ChainNode` keeps one block per step and
the states.  When a choice of step ``t`` changes, the run re-executes step ``t``; if its state
changed it re-executes step ``t + 1``, and so on until a state comes out as before — for a
chain whose state is a sampled value, a local update touches steps ``t`` and ``t + 1`` only.  When
something that precedes the chain in its block changed, every step runs again.

Inside a plate, a chain runs vectorized over the plate's elements (see :mod:`thrifty.core.plate`).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.run import BlockFrame
from thrifty.core.trace import LATENT, Block, same_value
from thrifty.errors import ModelError


def block_latent_lp(block: Block) -> float:
    lp = sum(s.lp for s in block.sites.values() if s.kind == LATENT)
    return lp + sum(n.latent_lp() for n in (*block.plates.values(), *block.chains.values()))


class ChainNode:
    """The stored state of one markov chain: a :class:`Block` and a state per step."""

    def __init__(self):
        self.steps: list[Block] = []
        self.states: list = []
        self.stamp = np.zeros(0, dtype=np.int64)
        self.valid_from = 0
        self.counts = np.zeros(0, dtype=np.int64)  # latent choices per step
        self.n_latent = 0
        self._cum: np.ndarray | None = None
        self._lp: float | None = None  # cached total log-density (reset by every update)

    @property
    def length(self) -> int:
        return len(self.steps)

    def total_lp(self) -> float:
        if self._lp is None:
            self._lp = sum(b.total_lp() for b in self.steps)
        return self._lp

    def latent_lp(self) -> float:
        return sum(block_latent_lp(b) for b in self.steps)

    def has_stale(self, mems=None) -> bool:
        return bool(np.any(self.stamp < self.valid_from)) or any(
            b.has_stale(mems) for b in self.steps
        )

    def cumulative_latent(self) -> np.ndarray:
        """Cumulative numbers of latent choices per step (for uniform choice selection)."""
        if self._cum is None:
            self._cum = np.cumsum(self.counts)
        return self._cum


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


def run_chain(parent: BlockFrame, local, step, length, init, args):
    """Execute (part of) a chain inside ``parent``; returns the list of states."""
    run = parent.run
    addr = parent.prefix + local
    if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)):
        raise ModelError(f"markov chain {fmt(addr)}: length must be an int, got {length!r}")
    if length < 0:
        raise ModelError(f"markov chain {fmt(addr)}: length must be >= 0, got {length}")
    if not callable(step):
        raise ModelError(f"markov chain {fmt(addr)}: step must be callable, got {step!r}")
    T = int(length)
    old = parent.old.chains.get(local)
    if parent.dirty and run.plan.lazy and old is not None and old.length == T:
        return _lazy_chain(parent, local, addr, old, step, init, args)
    if old is None or parent.dirty or old.length != T:
        blocks, states, prev = {}, [], init
        for t in range(T):
            ob = old.steps[t] if old is not None and t < old.length else None
            blocks[t], prev = _exec_step(run, addr, t, step, prev, args, ob, True)
            states.append(prev)
        if old is not None:
            for t in range(T, old.length):
                run.drop_node(_BlockAsNode(old.steps[t]), addr + (t,))
        changed = (
            old is None
            or old.length != T
            or not all(same_value(a, b) for a, b in zip(states, old.states))
        )
        node = ChainNode() if old is None else old
        run.chain_frames[addr] = blocks
        run.chain_updates.append(_ChainUpdate(node, blocks, states, T, parent.dirty))
    else:
        planned = run.plan.steps.get(addr)
        node = old
        if not planned:
            parent.new.chains[local] = old
            return list(old.states)
        states = list(old.states)
        blocks = {}
        todo = sorted(planned)
        k, changed, prev_changed = 0, False, False
        t = todo[0]
        while t is not None:
            prev = init if t == 0 else states[t - 1]
            blocks[t], state = _exec_step(
                run, addr, t, step, prev, args, old.steps[t], prev_changed
            )
            states[t] = state
            prev_changed = not same_value(state, old.states[t])
            changed |= prev_changed
            while k < len(todo) and todo[k] <= t:
                k += 1
            if prev_changed and t + 1 < T:
                t += 1
            else:
                prev_changed = False
                t = todo[k] if k < len(todo) else None
        run.chain_frames[addr] = blocks
        run.chain_updates.append(_ChainUpdate(node, blocks, states, T, False))
    parent.new.chains[local] = node
    if changed:
        parent.dirty = True
    return states


def _lazy_chain(parent, local, addr, old, step, init, args):
    """Something before the chain changed, and the run is lazy (subsampling): execute only the
    planned steps, each from its stored previous state (states held fixed), and leave the other
    steps stale.  The steps are the chain's local sections (paper 000 §3.1)."""
    run = parent.run
    run.sections.append(("chain", addr, old.length))
    blocks = {}
    for t in sorted(run.plan.steps.get(addr, ())):
        prev = init if t == 0 else old.states[t - 1]
        blocks[t], state = _exec_step(run, addr, t, step, prev, args, old.steps[t], True)
        if not same_value(state, old.states[t]):
            raise ModelError(
                f"markov chain {fmt(addr)}: step {t} returned a different state when only the "
                "values before the chain changed; its steps are not separable sections "
                "(the state must be a sampled value, not computed from the changed choice)"
            )
    run.chain_frames[addr] = blocks
    run.chain_updates.append(_ChainUpdate(old, blocks, old.states, old.length, True))
    parent.new.chains[local] = old
    return list(old.states)


def stale_steps(node: ChainNode, steps) -> list:
    """The steps among ``steps`` whose log-density is out of date."""
    return [t for t in steps if node.stamp[t] < node.valid_from]


class _BlockAsNode:
    """Adapter so a dropped step block can be accounted like a dropped node."""

    def __init__(self, block):
        self.block = block
        self.n_latent = block.total_latent()

    def total_lp(self):
        return self.block.total_lp()

    def latent_lp(self):
        return block_latent_lp(self.block)


class _ChainUpdate:
    __slots__ = ("blocks", "dirty", "length", "node", "states")

    def __init__(self, node, blocks, states, length, dirty):
        self.node = node
        self.blocks = blocks
        self.states = states
        self.length = length
        self.dirty = dirty

    def apply(self, clock: int) -> None:
        node = self.node
        T = self.length
        if node.length != T:
            node.steps = (node.steps + [None] * T)[:T]
            m = min(T, len(node.stamp))
            node.stamp = np.concatenate([node.stamp[:m], np.zeros(T - m, dtype=np.int64)])
            node.counts = np.concatenate([node.counts[:m], np.zeros(T - m, dtype=np.int64)])
            node._cum = None
        counts = node.counts
        for t, blk in self.blocks.items():
            node.steps[t] = blk
            node.stamp[t] = clock
            c = blk.total_latent()
            if counts[t] != c:
                counts[t] = c
                node._cum = None
        if self.dirty:
            node.valid_from = clock
        node.states = self.states
        node.n_latent = int(node.counts.sum())
        node._lp = None
