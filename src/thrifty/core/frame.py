"""The scalar executor: one execution of a block (the model body or one markov step).

A :class:`BlockFrame` executes a body site by site.  Latent sites go through the replay decision
(:mod:`thrifty.core.replay`, one member); observations, factors and deterministic values are
recorded as they come.  Plates, markov chains and mem reads are handed to the run, which knows
the node modules (so this module imports none of them).

``dirty`` says whether a value that precedes the current point of the body changed: program
order is the dependency graph, so a plate or chain met while the frame is dirty runs in full.
The one choice whose change leaves the frame clean is a hyperparameter owned by a coupled
process (:meth:`BlockFrame.sample_owned`): its value never reaches the model's code.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import ONE_PART, as_name, fmt
from thrifty.core.code_errors import not_numeric_observation
from thrifty.core.replay import SAMPLER_ERRORS, replay, sampler_error
from thrifty.core.trace import EMPTY_BLOCK, Block, Site
from thrifty.core.vocab import (
    DETERMINISTIC,
    FACTOR,
    INF,
    LATENT,
    NEG_INF,
    OBSERVED,
    check_dist,
    infinite_error,
    nan_error,
    non_numeric,
    outside_support,
    readonly,
    total,
)
from thrifty.errors import ModelError, NumericalError


class BlockFrame:
    """Executes one block; its sites' accounting (kept log-densities, fresh and stale
    choices, proposal terms) goes to the run as they execute, the old block's in
    :meth:`finalize`."""

    __slots__ = (
        "dirty",
        "lanes",
        "matched",
        "new",
        "old",
        "prefix",
        "run",
        "scope",
        "step_of",
    )

    def __init__(self, run, prefix: tuple, old, dirty: bool, step_of=None):
        self.run = run
        self.step_of = step_of  # (chain address, t) for a markov step
        self.prefix = prefix
        self.scope = ()
        self.old = old if old is not None else EMPTY_BLOCK
        self.new = Block()
        self.dirty = dirty
        self.lanes = run.lanes
        self.matched = 0  # old latent sites met again

    # -- names ----------------------------------------------------------------------------------
    def _local(self, name) -> tuple:
        local = ONE_PART.get(name) if type(name) is str else None  # (a name met before)
        if local is None:
            local = as_name(name)
        if self.scope:
            local = self.scope + local
        new = self.new
        if local in new.sites or local in new.plates or local in new.chains:
            raise ModelError(f"address {fmt(self.prefix + local)} is used twice in one execution")
        return local

    # -- primitives -----------------------------------------------------------------------------
    def sample(self, name, d):
        local = self._local(name)
        addr = self.prefix + local
        if d._error is not None:
            check_dist(d, addr, self.run)
        run = self.run
        targets = run.targets
        target = targets.get(addr) if targets is not None else None
        if target is not None:
            run.n_seen += 1
            self.dirty = True
        lanes = self.lanes
        lanes.addr = addr
        n_fresh = run.n_fresh
        old = self.old.value_lp(local)  # the accounting goes straight to the run
        if old is None:
            value, lp, changed = replay(lanes, d, None, None, target, run)
        else:
            self.matched += 1
            old_value, old_lp = old
            n_stale = run.n_stale
            value, lp, changed = replay(lanes, d, old_value, old_lp, target, run)
            if run.n_stale != n_stale:  # stale: out of the kept part of the old block
                run.lp_old -= old_lp
                run.note_stale(addr)
        if changed:
            self.dirty = True
        if run.n_fresh == n_fresh:
            run.lp_new += lp
        else:
            run.note_fresh(addr)
        if type(value) is np.ndarray:
            value = readonly(value.copy() if value is target else value)  # (init= arrays)
        new = self.new
        new.sites[local] = Site(value, lp, LATENT, d.is_discrete, d)
        new.lp += lp
        new.n_latent += 1
        return value

    def sample_owned(self, name, d) -> tuple:
        """A hyperparameter drawn by a coupled process (:mod:`thrifty.processes.base`): an
        ordinary latent choice, whose value the engine gives to the plate sites that sample the
        process (``run.owned``) and to nothing else — the process returns no value to the
        model's code — so its change leaves what follows clean: program order still holds.
        Returns its address."""
        dirty = self.dirty
        value = self.sample(name, d)
        self.dirty = dirty
        addr = self.prefix + (self.scope + as_name(name) if self.scope else as_name(name))
        self.run.owned[addr] = value
        return addr

    def observe(self, name, d, value):
        local = self._local(name)
        addr = self.prefix + local
        if d._error is not None:
            check_dist(d, addr, self.run)
        run = self.run
        if run.new_obs is not None:
            try:
                value = d.sample(run.rng, np.shape(value)[: np.ndim(value) - len(d.shape)])
            except SAMPLER_ERRORS as e:
                raise sampler_error(addr, d, e) from e
            run.new_obs[addr] = value
        elif run.obs_values is not None:
            value = run.obs_values.get(addr, value)
        try:
            lp = d.log_prob(value)
        except (ValueError, TypeError) as e:
            if non_numeric(value) is not None:
                raise not_numeric_observation(addr, value, run) from e
            raise
        if type(lp) is not float:
            lp = total(lp)
        if not lp > NEG_INF:
            if lp != lp:
                raise nan_error(addr, d, value)
            if not d.in_domain(value):
                raise outside_support(addr, d, value)
            run.note_impossible(addr, d, value)
        elif lp == INF:
            raise infinite_error(addr, d, value)
        new = self.new
        new.sites[local] = Site(value, lp, OBSERVED)
        new.lp += lp
        run.lp_new += lp
        if run.captured is not None:
            run.captured.append((addr, d, value, None))
        if run.stop is not None:
            run.observed(lp)
        return value

    def factor(self, name, log_weight):
        local = self._local(name)
        lp = total(log_weight)
        if lp != lp or lp == INF:
            raise NumericalError(f"factor at address {fmt(self.prefix + local)} is "
                                 f"{'NaN' if lp != lp else '+inf'} (a log-weight must be "
                                 "finite or -inf)")
        if lp == NEG_INF:
            self.run.note_impossible(self.prefix + local, None, None)
        self.new.sites[local] = Site(None, lp, FACTOR)
        self.new.lp += lp
        self.run.lp_new += lp
        if self.run.stop is not None:
            self.run.observed(lp)

    def deterministic(self, name, value):
        local = self._local(name)
        # an array is recorded as a copy: the model may reuse (and mutate) the buffer later
        kept = value.copy() if isinstance(value, np.ndarray) else value
        self.new.sites[local] = Site(kept, 0.0, DETERMINISTIC)
        return value

    def mem_read(self, mem, key):
        return self.run.mem_read_scalar(self, mem, key)

    def plate(self, name, size):
        return self.run.open_plate(self, self._local(name), size)

    def markov(self, name, step, length, init, args):
        return self.run.run_chain(self, self._local(name), step, length, init, args)

    # -- end of the block -----------------------------------------------------------------------
    def finalize(self) -> None:
        """Account for the old block: its kept part goes to ``lp_old``, the rest is stale."""
        old, new, run = self.old, self.new, self.run
        run.lp_old += old.lp
        if self.matched < old.n_latent:  # old latent sites not met again: stale
            for k in old.latent_names():
                s = new.sites.get(k)
                if s is None or s.kind != LATENT:
                    lp = old.value_lp(k)[1]
                    run.lp_old -= lp
                    run.lp_stale += lp
                    run.n_stale += 1
                    run.note_stale(self.prefix + k)
        old_plates, old_chains = old.plates, old.chains
        if old_plates:
            for k, node in old_plates.items():
                if k not in new.plates:
                    run.drop_node(node, self.prefix + k)
        if old_chains:
            for k, node in old_chains.items():
                if k not in new.chains:
                    run.drop_node(node, self.prefix + k)
        if new.mem_reads or old.mem_reads:
            run.account_block_reads(old, new, self.step_of)
