"""Particle batches: a program body executed once over N particles (the batched executor).

A :class:`ParticleFrame` is the root frame of a particle run.  The program's top-level code runs
once; its ``th.markov`` chains are handed to a *driver* (:mod:`thrifty.inference.particles.smc`)
that runs each step ``step(t, prev)`` once on the array of the N particles' states, in a
:class:`~thrifty.core.batch.BatchFrame` whose sites hold one value per particle, and weighs and
resamples the particles between steps.  Observed values are the same for every particle (they
broadcast against the particles' parameters).

Latent choices outside the chains are not particles: their values are *given* — by the trace a
particle kernel updates (``th.pgibbs``: the current global parameters), or by ``fixed=`` of
``th.smc`` — and scored once, shared by all particles.
"""

from __future__ import annotations

from functools import lru_cache
from types import MappingProxyType

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.batch import BatchFrame, MemberSite
from thrifty.core.replay import ScalarLanes
from thrifty.core.vocab import (
    LATENT,
    RESAMPLE,
    check_dist,
    take_rows,
)
from thrifty.errors import ModelError


class ParticleFrame(BatchFrame):
    """The root frame of a run over ``n`` particles (see the module docstring).

    ``given(local)`` returns the value of a latent choice outside the chains, or ``RESAMPLE`` to
    draw it from its prior (or raises); a given value outside the support raises
    :class:`~thrifty.core.vocab.ZeroProbability`;
    ``driver.chain(frame, local, step, length, init, args)`` is the policy of a chain
    (:func:`thrifty.core.sites.markov`): generation by generation.
    """

    prefix = ()  # the frame's address prefix (for th.mem's address)
    proposal_terms = False
    keeps_observed = True  # (the top-level observations: what one particle's execution gives)
    shared_data = True  # (the particles of one program: its data are every particle's)

    def __init__(self, run, n: int, given, driver):
        BatchFrame.__init__(self, run, None, (), None)
        self.init_members(n)
        self.given = given
        self.driver = driver
        self.shared_lp = 0.0  # latent choices outside the chains (the same for every particle)
        self._drawn = _Drawn()  # their replay decisions' accounting (fresh: RESAMPLE)

    # -- members --------------------------------------------------------------------------------
    def member_addr(self, j: int, rel: tuple) -> tuple:
        return rel

    def generic(self, rel: tuple) -> tuple:
        return rel

    generic_all = generic

    def member_indices(self) -> np.ndarray:
        return np.arange(self.n)

    def obs_key(self, rel: tuple):
        return rel

    def take_members(self, stored):
        return stored

    def where(self) -> str:
        return "a particle batch"

    def check_observed_shape(self, rel, d, value) -> None:
        """Observed values are shared by the particles: any shape that broadcasts."""

    # -- choices outside the chains: this frame's policy of th.sample --------------------------
    sample_process = None  # (one lane shared by the particles, as in a block)

    def site_lanes(self, local, d, what):
        """A choice outside the chains is one scalar lane, shared by the particles (its
        observations and factors are the batch's)."""
        if what != "sample":
            return BatchFrame.site_lanes(self, local, d, what)
        if d._error is not None:
            check_dist(d, local, self.run)
        self._dist = d  # (its given value's shape is checked in site_target)
        return ScalarLanes(local, self.run.rng, False, self.run)

    def site_stored(self, local, lanes):
        return None

    def site_target(self, local, lanes):
        """Its value given (a target: scored, −∞ → ZeroProbability) or ``RESAMPLE`` (drawn from
        the prior: a fresh choice whose density is the proposal's, ``prior_drawn_lp``).  A value
        of one particle's shape under parameters with the particles' axis is a choice that reads
        what the particles hold (a chain's states): an error saying so."""
        target = self.given(local)
        d, n = self._dist, self.n
        bs = d.batch_shape
        if target is not RESAMPLE and n > 1 and len(bs) and bs[0] == n and (
                np.shape(target) != tuple(bs) + tuple(d.event_shape)):
            raise ModelError(
                f"choice {fmt(local)} outside the chains has parameters with an axis of the {n} "
                f"particles ({d!r}): it reads what the particles hold, such as a chain's states. "
                "Particle methods keep one value of a choice outside the chains, shared by the "
                "particles: move the choice into the chain's steps (the last one, to read the "
                "last state), or update the chain with th.lmh / th.mh instead")
        return target

    @property
    def sink(self):
        return self._drawn

    @property
    def prior_drawn_lp(self) -> float:
        """Of the shared choices, the log-density of those drawn from their priors."""
        return self._drawn.lp_fresh

    def keep_latent(self, local, lanes, d, value, lp, status, old):
        self.shared_lp += lp
        self.new[local] = MemberSite(value, lp, LATENT, d.is_discrete, d)
        return value

    def chain(self, local, step, length, init, args):
        """A chain of the particle run: generation by generation (the driver's policy)."""
        return self.driver.chain(self, local, step, length, init, args)

    def plate(self, name, size):
        return ParticlePlate(self, self.site_name(name), size)

    def mem_read(self, mem, keys):
        raise ModelError("th.mem in a particle run is not supported by the particle methods yet")


class _Drawn:
    """The accounting of one shared choice's replay decision (fresh: drawn from the prior)."""

    __slots__ = ("lp_fresh", "lp_stale", "n_fresh", "n_stale", "q_fwd", "q_rev")

    def __init__(self):
        self.n_fresh = self.n_stale = 0
        self.lp_fresh = self.lp_stale = self.q_fwd = self.q_rev = 0.0


class ParticlePlate:
    """``th.plate`` in a particle run: the body runs once over size × n members (n particles
    per element), its index ``i`` repeating each element n times; chains in the body are
    handed to the driver with one group of particles per element."""

    def __init__(self, root: ParticleFrame, local: tuple, size: int):
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
            raise ModelError(f"plate {fmt(local)}: size must be an int, got {size!r}")
        self.root, self.local, self.size = root, local, int(size)

    def __enter__(self):
        root = self.root
        self.frame = PlateParticles(root.run, root, self.local, self.size)
        root.run.frame = self.frame
        return np.repeat(np.arange(self.size), root.n)

    def __exit__(self, kind, exc, tb):
        self.root.run.frame = self.root
        if kind is None:
            self.root.driver.weigh(self.frame, self.local)  # observed after the chains
        return False


class PlateParticles(BatchFrame):
    """The body of a plate in a particle run (members: element-major, n particles each)."""

    proposal_terms = False

    def __init__(self, run, root: ParticleFrame, addr: tuple, size: int):
        BatchFrame.__init__(self, run, None, (), None)
        self.init_members(size * root.n)
        self.root, self.plate_addr, self.groups, self.per = root, addr, size, root.n
        self.driver = root.driver

    def member_addr(self, j: int, rel: tuple) -> tuple:
        return self.plate_addr + (j // self.per,) + rel

    def generic(self, rel: tuple) -> tuple:
        return self.plate_addr + ("*",) + rel

    generic_all = generic

    def member_indices(self) -> np.ndarray:
        return np.repeat(np.arange(self.groups), self.per)

    def obs_key(self, rel: tuple):
        return (self.plate_addr, rel)

    def take_members(self, stored):
        return np.asarray(stored)[self.member_indices()]

    def where(self) -> str:
        return f"plate {fmt(self.plate_addr)} of a particle batch"

    def shape_note(self) -> str:
        return (f". (The particle methods — th.pgibbs, th.smc, th.pmmh — run the code after a "
                f"chain once for all {self.per} particles: this plate's body over its elements × "
                f"{self.per} particles, its index repeating each element per particle, and "
                "values computed from the chain's states hold one entry per particle — "
                "list(states) gives arrays of particles. Observe data that depend on the "
                "states inside the chain's step, y[t] at step t, where each particle reads its "
                "own state)")

    sample_process = None  # (a latent choice here is refused by site_lanes, whatever its family)

    def site_lanes(self, local, d, what):
        if what == "sample":
            raise ModelError(
                f"{fmt(self.plate_addr + ('*',) + local)}: a latent choice of a plate element "
                "outside its chain; the particle methods hold the chains' choices only"
            )
        return BatchFrame.site_lanes(self, local, d, what)

    def chain(self, local, step, length, init, args):
        """A chain of the particle run: generation by generation (the driver's policy)."""
        return self.driver.chain(self, local, step, length, init, args)

    def mem_read(self, mem, keys):
        raise ModelError("th.mem in a particle run is not supported by the particle methods yet")


class StepFrame(BatchFrame):
    """One step of a chain over the particles: sites — observations too — hold one value
    (and log-density) per particle."""

    keeps_observed = True

    def __init__(self, run, root: ParticleFrame, rel: tuple):
        BatchFrame.__init__(self, run, root, rel, None)

    def mem_read(self, mem, keys):
        raise ModelError("th.mem in a particle run is not supported by the particle methods yet")


class ConditionalStep(StepFrame):
    """Step t over the members of conditional SMC (paper 003 §4): member g·per of each group
    takes its reference's choices ``ref[site]`` (the G references' values) — a target of
    theirs — and the others are drawn from the prior (the replay decision's given values)."""

    def __init__(self, run, root, rel, ref: dict, per: int):
        StepFrame.__init__(self, run, root, rel)
        self.ref, self.per = ref, per
        self.ref_values = ref

    def target(self, rel):
        local = rel[len(self.rel):]
        if local not in self.ref:
            raise ModelError(
                f"pgibbs: the reference trajectory has no choice {fmt(rel)} (the steps' "
                "choices must be the same in every step)"
            )
        return np.arange(0, self.acc.n, self.per), self.ref[local]


class PinnedStep(StepFrame):
    """Step t with every member holding its group's reference choices as its stored values,
    replayed strictly: the latent log-density per member is the reference's transition under
    that member's state (003 §4.4's rescoring of the reference's suffix; −∞ where the
    reference is impossible)."""

    strict = True

    def __init__(self, run, root, rel, ref: dict, per: int):
        StepFrame.__init__(self, run, root, rel)
        self.old = _Reference(rel, ref, per)
        self.ref_values = ref


class FusedStep(BatchFrame):
    """Step t of conditional SMC with ancestor sampling (003 §4.4) in one execution over 2m
    members: members 0..m−1 are the generation's (the free ones drawn from the prior, member
    g·per of each group holding its reference's choices), members m..2m−1 hold every group's
    reference choices replayed strictly under the members' states *before* resampling — the
    terms p(reference | each candidate ancestor) of the reference's ancestor.  A frame of its
    own members and totals (``lat_lp``, ``obs_lp`` over 2m); addresses and errors name the
    member j mod m of ``root``, a chain at the top level (its observations are shared by the
    members; a plate's chains read per-member data through the plate's index, which does not
    double)."""

    strict = True
    keeps_observed = True
    proposal_terms = False

    def __init__(self, run, root, rel, ref: dict, per: int):
        BatchFrame.__init__(self, run, None, rel, None)
        m = root.n
        self.init_members(2 * m)
        self.root, self.m = root, m
        self.old = _Reference(rel, ref, per, copies=2)
        self.ref_values = ref
        self._free = _free_members(m, per)  # drawn afresh: all but the references
        self.shared_data = root.shared_data  # (a plate's chains read per-member data)

    def target(self, rel):
        return self._free, RESAMPLE

    def member_addr(self, j: int, rel: tuple) -> tuple:
        return self.root.member_addr(j % self.m, rel)

    def generic(self, rel: tuple) -> tuple:
        return self.root.generic(rel)

    def generic_all(self, rel: tuple) -> tuple:
        return self.root.generic_all(rel)

    def member_indices(self) -> np.ndarray:
        return np.tile(self.root.member_indices(), 2)

    def obs_key(self, rel: tuple):
        return self.root.obs_key(rel)

    def take_members(self, stored):  # (a top-level chain's observations: shared by all)
        return self.root.take_members(stored)

    def where(self) -> str:
        return self.root.where()

    def check_observed_shape(self, rel, d, value) -> None:
        self.root.check_observed_shape(rel, d, value)

    def mem_read(self, mem, keys):
        raise ModelError("th.mem in a particle run is not supported by the particle methods yet")


class _Reference:
    """The stored values of a pinned step's members: each group's reference choices."""

    __slots__ = ("copies", "per", "ref", "rel")

    def __init__(self, rel, ref: dict, per: int, copies: int = 1):
        self.rel, self.ref, self.per, self.copies = rel, ref, per, copies

    def get(self, local):
        v = self.ref.get(local)
        if v is None:
            raise ModelError(
                f"pgibbs: the reference trajectory has no choice {fmt(self.rel + local)}")
        v = np.asarray(v)
        v = take_rows(v, _group_rows(len(v), self.per, self.copies))  # (a copy of its own)
        return MemberSite(v, _zeros(len(v)), LATENT)


# (index arrays a step frame reads, never writes: made once per shape of the batch)
@lru_cache(maxsize=64)
def _free_members(m: int, per: int) -> np.ndarray:
    """The members 0..m−1 that are not their group's first (the references)."""
    free = np.flatnonzero(np.arange(m) % per)
    free.flags.writeable = False
    return free


@lru_cache(maxsize=64)
def _zeros(m: int) -> np.ndarray:
    """The stored log-densities of a pinned step's members: read by no one (a strict replay
    neither redraws nor drops a stored value), zeros."""
    z = np.zeros(m)
    z.flags.writeable = False
    return z


@lru_cache(maxsize=64)
def _group_rows(G: int, per: int, copies: int) -> np.ndarray:
    """Per member of ``copies`` × G groups of ``per``, the row of its group."""
    rows = np.tile(np.arange(G).repeat(per), copies)
    rows.flags.writeable = False
    return rows


def take(state, idx: np.ndarray, n: int):
    """A particle state reindexed by ancestors ``idx``: arrays with a leading particle axis,
    and tuples (named ones too) / lists / dicts of them — a dict as the engine keeps a state,
    a read-only mapping (:func:`~thrifty.core.vocab.frozen_state`); anything else is shared by
    the particles."""
    if type(state) is np.ndarray:  # (the usual state: take_rows' work, without its call)
        if not (state.ndim and state.shape[0] == n):
            return state
        if state.ndim > 1 and type(idx) is np.ndarray and idx.dtype.kind in "iu":
            return state.take(idx, axis=0)
        return state[idx]
    if isinstance(state, np.ndarray):
        return take_rows(state, idx) if state.ndim and state.shape[0] == n else state
    if isinstance(state, (tuple, list, dict, MappingProxyType)):
        return rebuilt(state, [take(s, idx, n) for s in parts(state)])
    return state


def parts(state) -> list:
    """The entries of a tuple / list / dict state (a dict's values, in key order)."""
    return list(state.values() if isinstance(state, (dict, MappingProxyType)) else state)


def rebuilt(state, items: list):
    """A state of the kind of ``state`` (tuple, named tuple, list, dict, read-only mapping)
    holding ``items`` in place of its :func:`parts`."""
    if isinstance(state, (dict, MappingProxyType)):
        d = dict(zip(state.keys(), items))
        return MappingProxyType(d) if type(state) is MappingProxyType else d
    return type(state)(*items) if hasattr(state, "_fields") else type(state)(items)


def per_particle(init, n: int, per_member: bool = False):
    """The initial state given to step 0, with a leading particle axis (arrays and numbers).
    ``per_member``: a chain inside a plate, where an array with a leading axis of the ``n``
    members is already one state per member (``init[i]`` with the plate's index, which repeats
    each element once per particle) and is kept as it is."""
    if init is None:
        return None
    if per_member and isinstance(init, np.ndarray) and init.ndim and init.shape[0] == n:
        return init
    if isinstance(init, (tuple, list, dict)):  # (a named tuple too: see rebuilt)
        return rebuilt(init, [per_particle(s, n, per_member) for s in parts(init)])
    a = np.asarray(init)
    if a.dtype == object:
        return init
    return np.broadcast_to(a, (n,) + a.shape).copy()
