"""Executing a chain in a block: the block executor's policies of
:func:`thrifty.core.sites.markov` (which steps of a :class:`~thrifty.core.markov.ChainNode` a run
executes, each in a :class:`~thrifty.core.frame.BlockFrame` over the stored step).

Every step runs when the chain is new, changes length, or something before it in its block
changed (program order is the dependency graph); a local update runs the planned steps and
those a changed state reaches (001 §2); a lazy run executes the planned steps as sections and
leaves the others stale (000 §3.1); a trajectory drawn by particles is written as columns
(:mod:`thrifty.core.written`) with no step executed.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.chain_site import States
from thrifty.core.frame import BlockFrame
from thrifty.core.markov import ChainNode, ChainUpdate, DroppedStep, StepView
from thrifty.core.sites import Chain
from thrifty.core.vocab import StaleRead, chain_length, frozen_state, same_value
from thrifty.core.written import write_chain
from thrifty.errors import ModelError

_NOTHING = object()


# -- executing a chain: the block executor's policies of thrifty.core.sites.markov ---------------
def run_chain(parent, local, step, length, init, args):
    """The chain ``local`` of the block frame ``parent``: which of its steps this run executes,
    in which frames (:func:`thrifty.core.sites.markov` executes them)."""
    run = parent.run
    addr = parent.prefix + local
    T = chain_length(addr, length, step)
    old = parent.old.chains.get(local)
    if run.written is not None and addr in run.written:  # a drawn trajectory, as columns
        return _Done(write_chain(parent, local, addr, old, T, run.written[addr]))
    if parent.dirty and run.mode.lazy and old is not None and old.T == T:
        return _Sections(parent, local, addr, old, old.T, init)
    if run.fresh_reads and old is not None and old.n_stale:
        _check_fresh(run, addr, old, T, parent.dirty)
    if old is None or parent.dirty or old.T != T:
        return _Every(parent, local, addr, old, T, init)
    planned = run.plan.steps.get(addr)
    if not planned:
        parent.new.chains[local] = old
        return _Done(old.states)
    return _Local(parent, local, addr, old, T, init, planned)


class _Steps(Chain):
    """What the block executor's chain policies share: step ``t`` executes in a
    :class:`BlockFrame` over the stored step ``t`` (a :class:`StepView`), and the executed
    steps' blocks are journaled for the commit (:class:`ChainUpdate`)."""

    def __init__(self, parent, local, addr, old, T: int, init, planned=None):
        self.parent, self.local, self.addr, self.old = parent, local, addr, old
        self.run = parent.run
        self.T, self.init = T, init
        self.planned = planned  # (a local update's planned steps)
        self.blocks: dict = {}

    def step_frame(self, t: int, old_block, dirty: bool) -> BlockFrame:
        self.run.work_steps += 1
        return BlockFrame(self.run, self.addr + (t,), old_block, dirty, (self.addr, t))

    def close(self, t: int, frame, state):
        """Step ``t`` executed: its block kept, its state frozen (the engine keeps it)."""
        frame.finalize()
        self.blocks[t] = frame.new
        return frozen_state(state, self.addr)

    def journal(self, node, upd, states, changed: bool):
        run, parent = self.run, self.parent
        run.chain_frames[self.addr] = self.blocks
        run.updates.append(upd)
        parent.new.chains[self.local] = node
        if changed:
            parent.dirty = True
        return states


class _Done(Chain):
    """No step executes: the chain's states as they are (or as written from columns)."""

    def __init__(self, states):
        self._states = states

    def first(self):
        return None

    def states(self):
        return self._states


class _Every(_Steps):
    """Every step, in order: the chain's first execution, a change of length, or a change of
    something before the chain in its block (program order is the dependency graph)."""

    def first(self):
        self.prev, self.out = self.init, []
        return 0 if self.T else None

    def enter(self, t):
        old = self.old
        ob = old.step_view(t) if old is not None and t < old.T else None
        return self.step_frame(t, ob, True), self.prev

    def leave(self, t, frame, state):
        self.prev = state = self.close(t, frame, state)
        self.out.append(state)
        return t + 1 if t + 1 < self.T else None

    def states(self):
        old, T, states, run = self.old, self.T, self.out, self.run
        if old is not None:
            for t in range(T, old.T):
                run.drop_node(DroppedStep(old.step_view(t)), self.addr + (t,))
        changed = (
            old is None
            or old.T != T
            or not all(same_value(a, b) for a, b in zip(states, old.states))
        )
        node = ChainNode(self.addr, T) if old is None else old
        upd = ChainUpdate(node, self.parent.new, self.local, self.blocks, dict(enumerate(states)),
                          T, self.parent.dirty, old is None)
        return self.journal(node, upd, States.of(states), changed)


class _Local(_Steps):
    """A local update (001 §2): the planned steps, each from the stored previous state, and
    the steps after one whose state changed, until a state comes out as before."""

    def first(self):
        planned = self.planned
        self.todo = todo = sorted(planned) if len(planned) > 1 else list(planned)
        self.k = 0
        self.changed = self.prev_changed = False
        self.chunks = self.old.states._chunks  # committed states: read without the sequence
        self.new_states: dict = {}  # protocol
        return todo[0]

    def enter(self, t):
        if t == 0:
            prev = self.init
        else:
            prev = self.new_states.get(t - 1, _NOTHING)
            if prev is _NOTHING:
                prev = self.chunks[(t - 1) >> 6][(t - 1) & 63]
        old = self.old  # a stale step (000 §3.5) runs its plates and chains in full: what it
        # holds was computed before a value it reads changed, as if that value had changed now
        dirty = self.prev_changed or (old.n_stale and old.stamp.get(t) < old.valid_from)
        return self.step_frame(t, StepView(old, t), dirty), prev

    def leave(self, t, frame, state):
        self.new_states[t] = state = self.close(t, frame, state)
        old_state = self.chunks[t >> 6][t & 63]
        self.prev_changed = changed = state is not old_state and not same_value(state, old_state)
        self.changed |= changed
        todo, k = self.todo, self.k
        while k < len(todo) and todo[k] <= t:
            k += 1
        self.k = k
        if changed and t + 1 < self.T:
            t += 1
            if self.run.fresh_reads and self.old.n_stale and t not in self.planned:
                _check_continuation(self.old, self.addr, t)
            return t
        self.prev_changed = False
        return todo[k] if k < len(todo) else None

    def states(self):
        old = self.old
        upd = ChainUpdate(old, self.parent.new, self.local, self.blocks, self.new_states,
                          self.T, False, False)
        return self.journal(old, upd, old.states.with_new(self.new_states), self.changed)


class _Sections(_Steps):
    """Something before the chain changed, and the run is lazy (subsampling): only the planned
    steps execute, each from its stored previous state (states held fixed), and the other
    steps are left stale.  The steps are the chain's local sections (paper 000 §3.1)."""

    def first(self):
        run = self.run
        run.sections.append(("chain", self.addr, self.T))
        self.todo = sorted(run.plan.steps.get(self.addr, ()))
        self.k = 0
        return self.todo[0] if self.todo else None

    def enter(self, t):
        prev = self.init if t == 0 else self.old.states[t - 1]
        return self.step_frame(t, self.old.step_view(t), True), prev

    def leave(self, t, frame, state):
        state = self.close(t, frame, state)
        if not same_value(state, self.old.states[t]):
            raise ModelError(
                f"markov chain {fmt(self.addr)}: step {t} returned a different state when only "
                "the values before the chain changed; its steps are not separable sections "
                "(the state must be a sampled value, not computed from the changed choice)"
            )
        self.k += 1
        return self.todo[self.k] if self.k < len(self.todo) else None

    def states(self):
        old = self.old
        upd = ChainUpdate(old, self.parent.new, self.local, self.blocks, {}, old.T, True, False)
        return self.journal(old, upd, old.states, False)


def _check_fresh(run, addr, old, T, dirty) -> None:
    """A run with ``fresh_reads`` (an exact kernel's) stops before executing stale steps: every
    step when the chain runs in full (or is resized), else its planned steps."""
    if dirty or old.T != T:
        bad = old.stale_steps(np.arange(old.T))
    else:
        bad = old.stale_steps(sorted(run.plan.steps.get(addr, ())))
    if len(bad):
        raise StaleRead([("chain", addr, bad)])


def _check_continuation(old, addr, t) -> None:
    """A changed state carries the run on to step ``t``: stop there if it is stale (and name
    the stale steps of the next few, which a changed state may reach too)."""
    bad = old.stale_steps(np.arange(t, min(t + 16, old.T)))
    if len(bad) and bad[0] == t:
        raise StaleRead([("chain", addr, bad)])
