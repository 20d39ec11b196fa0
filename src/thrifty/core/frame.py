"""The scalar executor: one execution of a block (the model body or one markov step).

A :class:`BlockFrame` executes a body site by site, one member per site: its policy of the
primitives of :mod:`thrifty.core.sites` (latent sites through the replay decision of
:mod:`thrifty.core.replay`; observations, factors and deterministic values recorded as they
come).  Plates, markov chains and mem reads are handed to the run, which knows
the node modules (so this module imports none of them).

``dirty`` says whether a value that precedes the current point of the body changed: program
order is the dependency graph, so a plate or chain met while the frame is dirty runs in full.
The one choice whose change leaves the frame clean is a hyperparameter owned by a coupled
process (:meth:`BlockFrame.sample_owned`): its value never reaches the model's code.
"""

from __future__ import annotations

import numpy as np

from thrifty.core import sites
from thrifty.core.address import ONE_PART, as_name, fmt
from thrifty.core.replay import FRESH, REDRAWN, SET
from thrifty.core.trace import EMPTY_BLOCK, Block, Site
from thrifty.core.vocab import DETERMINISTIC, FACTOR, LATENT, OBSERVED, Unchanged, check_dist
from thrifty.errors import ModelError

_NUMBERS = (int, float)  # (a choice's Python value; arrays are not compared)


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
        "sink",
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
        self.sink = run  # the replay decision's accounting goes straight to the run
        self.matched = 0  # old latent sites met again

    # -- names ----------------------------------------------------------------------------------
    def site_name(self, name) -> tuple:
        local = ONE_PART.get(name) if type(name) is str else None  # (a name met before)
        if local is None:
            local = as_name(name)
        if self.scope:
            local = self.scope + local
        new = self.new
        if local in new.sites or local in new.plates or local in new.chains:
            raise ModelError(f"address {fmt(self.prefix + local)} is used twice in one execution")
        return local

    # -- the primitives (thrifty.core.sites) and this executor's policy of them -----------------
    sample = sites.sample
    observe = sites.observe
    factor = sites.factor
    deterministic = sites.deterministic
    sample_process = observe_process = None  # (a coupled process is sampled in plates)

    def site_lanes(self, local, d, what):
        """One member, addressed ``prefix + local`` (the run's lanes of choices: the last
        choice's address names errors raised after it; observations and factors have lanes of
        their own)."""
        lanes = self.lanes if what == "sample" else self.run.obs_lanes
        lanes.addr = addr = self.prefix + local
        if d is not None and d._error is not None:
            check_dist(d, addr, self.run)
        return lanes

    def site_stored(self, local, lanes):
        old = self.old.value_lp(local)
        if old is not None:
            self.matched += 1
        return old

    def stored_dist(self, local):
        """The distribution the stored value of ``local`` was drawn under (None: none)."""
        s = self.old.get_site(local)
        return None if s is None else s.dist

    def site_target(self, local, lanes):
        targets = self.run.targets
        target = targets.get(lanes.addr) if targets is not None else None
        if target is not None:
            self.run.n_seen += 1
            self.dirty = True
        return target

    def keep_latent(self, local, lanes, d, value, lp, status, old):
        """The site's log-density is kept (in the MH ratio) unless its value was drawn fresh;
        a redrawn value's old one leaves the kept part of the old block (stale)."""
        run = self.run
        if status < FRESH:
            run.lp_new += lp
        else:
            addr = lanes.addr
            if status == REDRAWN:
                run.lp_old -= old[1]
                run.note_stale(addr)
            run.note_fresh(addr)
        if status:
            if status == SET and run.identity and old is not None and (
                    type(value) in _NUMBERS and type(old[0]) is type(value)
                    and value == old[0] and lp == old[1]):
                raise Unchanged  # (the one proposed choice, its value and density as they are)
            self.dirty = True
        new = self.new
        new.sites[local] = Site(value, lp, LATENT, d.is_discrete, d)
        new.lp += lp
        new.n_latent += 1
        return value

    def keep_observed(self, local, lanes, d, value, lp, total):
        new = self.new
        new.sites[local] = Site(value, lp, OBSERVED if d is not None else FACTOR)
        new.lp += lp
        run = self.run
        run.lp_new += lp
        if run.stop is not None:
            run.observed(lp)

    def keep_value(self, local, value) -> None:
        # an array is recorded as a copy: the model may reuse (and mutate) the buffer later
        kept = value.copy() if isinstance(value, np.ndarray) else value
        self.new.sites[local] = Site(kept, 0.0, DETERMINISTIC)

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

    def mem_read(self, mem, key):
        return self.run.mem_read_scalar(self, mem, key)

    def plate(self, name, size):
        return self.run.open_plate(self, self.site_name(name), size)

    markov = sites.markov

    def chain(self, local, step, length, init, args):
        return self.run.run_chain(self, local, step, length, init, args)

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
