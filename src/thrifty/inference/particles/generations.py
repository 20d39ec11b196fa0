"""The driver of a particle run: generations of the chains, weights, resampling, ancestry.

The members of a particle batch are ``G × n``: ``n`` particles for each of ``G`` independent
*groups* — one group for a chain at the top level of the program, one per element for a chain
inside a plate (member ``g·n + j`` is particle ``j`` of element ``g``).  Each group has its own
weights, resampling and evidence (the evidence of the program is the product over groups).
:class:`Generations` is the policy of a chain (``chain`` → :class:`ChainGenerations`, which
:func:`thrifty.core.sites.markov` executes step by step), weighs the members by the step's
observations (``weigh``), resamples each group whose ESS is low, and remembers every
generation's choices and ancestors so that the particles' trajectories can be traced back
(``paths``, ``trajectories``).
"""

from __future__ import annotations

import operator
import weakref

import numpy as np

from thrifty.core.address import dotted, fmt
from thrifty.core.engine import (
    Chain,
    States,
    chain_length,
    free_step,
    frozen_state,
    groups,
    per_particle,
    plate_of,
    run_observed,
    run_step,
    step_failed,
    step_record,
    step_values,
    take,
    take_observed,
)
from thrifty.errors import ModelError, NumericalError
from thrifty.inference.numerics import resampling

_MAX, _SUM = np.maximum.reduce, np.add.reduce


class NoParticleLeft(NumericalError):
    """Every particle (of some group) has weight zero: the evidence estimate is 0."""


def check_outside(who: str, driver, run, k: int) -> None:
    """The observations outside the chains as the particle run weighed member ``k`` with them
    (``driver.observed``) against ``run``, the program executed with that member's trajectory
    alone: a particle is one execution of the program (003 §3).  They differ when the code
    outside the steps mixes the particles — reduces over every particle's states
    (``np.sum(states)``, ``np.mean``) where one execution reduces over the steps — so the
    particles were weighed by another program: an error naming the site."""
    scalar = run_observed(run)
    for local, lp in (driver.observed or {}).items():
        lp, want = np.ravel(lp), scalar.get(local)
        if want is None or len(lp) not in (1, driver.members) or (
                len(lp) > 1 and driver.G > 1):
            continue
        mine = float(lp[k] if len(lp) > 1 else lp[0])
        if mine == want or abs(mine - want) <= 1e-9 * (1.0 + abs(want)) or (
                mine != mine and want != want):
            continue
        raise ModelError(
            f"{who}: the particle run scored {fmt(local)} {mine} for a particle whose "
            f"trajectory, executed alone, scores it {want}: the code outside the chain's steps "
            "mixes the particles — there a state holds one value per particle, so a reduction "
            "over all of it (np.sum(states), np.mean(states)) adds up every particle's states "
            "where one execution adds up its steps. Reduce over the steps only (sum(states), "
            "np.asarray(states).sum(axis=0)), or observe it in the chain's last step")


class Generations:
    """Weighs, resamples and remembers the generations of a particle run (module docstring)."""

    ordered = True  # resampling returns each group's ancestors sorted (see resampling.grouped)
    evidence = True  # keeps log_z, the evidence estimate (False: a driver that never reads it)

    def __init__(self, n, resample, ess_threshold, rng):
        self.n, self.rng = n, rng
        self.resample = resampling.scheme(resample)
        self.threshold = float(ess_threshold)
        self.G = 1  # groups (fixed by the first chain)
        self.members = n  # G × n
        self.plate: tuple | None = None  # the plate of the chains (None: top level)
        self.started = False
        self.log_w = np.zeros(n)  # per member, since its group's last resampling
        self.log_z = 0.0
        self.weighed = self.log_w
        # log Σ of a resampled group's weights (all 1): read, never written in place
        self._log_n = np.array([np.log(n)])
        self._log_n.flags.writeable = False
        self.ess: list[float] = []  # per generation: the mean ESS over the groups
        self.resampled: list[int] = []  # per generation: the number of groups resampled
        # per generation: (plate, chain, t, {site: values (G·n, ...)}) and the ancestors the
        # NEXT generation's members were drawn from (None: none resampled)
        self.sites: list[tuple] = []
        self.ancestors: list[np.ndarray | None] = []
        self.outputs: list[ParticleStates] = []  # what the ended chains returned
        self.running = False  # a chain's steps are executing

    # per generation, its sites and states (:func:`~thrifty.core.engine.step_record`) — kept
    # when ``[]``, by the drivers whose drawn trajectory is written back into a trace
    records: list | None = None
    observed: dict | None = None  # the top-level observations, per member (run_particles)

    @property
    def log_w(self) -> np.ndarray:
        return self._log_w

    @log_w.setter
    def log_w(self, value: np.ndarray) -> None:
        # set, never changed in place: the row sums and weights below are kept for it
        self._log_w = value
        self._lse = self._W = None

    def _row_lse(self) -> np.ndarray:
        """log Σ exp of each group's log-weights (kept from the last weighing)."""
        if self._lse is None:
            self._lse = resampling.log_sum_exp_rows(self._log_w.reshape(self.G, self.n))
        return self._lse

    # -- weights ----------------------------------------------------------------------------
    def weigh(self, frame, addr) -> None:
        """Multiply the members' weights by the likelihood of what ``frame`` observed."""
        self._weigh_inc(take_observed(frame), addr)

    def _weigh_inc(self, inc, addr) -> None:
        """Multiply the members' weights by ``exp(inc)`` (per member; None: nothing)."""
        if inc is None:
            return
        log_w = self._log_w
        if len(inc) != len(log_w):  # observed outside the members (shared by all)
            if np.isnan(inc).any():
                raise NumericalError(f"a particle's log-weight is NaN at {fmt(addr)}")
            if np.ptp(inc) > 0:
                raise ModelError(f"observation {fmt(addr)} differs between particles outside "
                                 "the chains")
            self.log_z += float(inc[0])
            return
        if self.G == 1:  # one group (a chain at the top level): no rows
            return self._weigh_one(log_w + inc, addr)
        new = (log_w + inc).reshape(self.G, self.n)
        m = new.max(axis=1, keepdims=True)  # (NaN propagates)
        if not np.all(m > -np.inf):
            if np.isnan(m).any():
                raise NumericalError(f"a particle's log-weight is NaN at {fmt(addr)}")
            raise NoParticleLeft(
                f"every particle has probability zero after {fmt(addr)}: the observations "
                "cannot be explained by any particle (more particles, or check the model)"
            )
        e = np.exp(new - m)
        s = e.sum(axis=1, keepdims=True)
        top = (m + np.log(s))[:, 0]
        self.log_z += float((top - self._row_lse()).sum())
        self.log_w = new.ravel()
        self._lse, self._W = top, e / s

    def _weigh_one(self, new: np.ndarray, addr) -> None:
        """``_weigh_inc`` for one group: the same operations on the row, without the axis."""
        m = _MAX(new)  # (NaN propagates)
        if not m > -np.inf:
            if m != m:
                raise NumericalError(f"a particle's log-weight is NaN at {fmt(addr)}")
            raise NoParticleLeft(
                f"every particle has probability zero after {fmt(addr)}: the observations "
                "cannot be explained by any particle (more particles, or check the model)"
            )
        e = np.exp(new - m)
        s = _SUM(e)
        if self.evidence:
            top = m + np.log(s)
            self.log_z += float(top - self._row_lse()[0])
            self._lse = np.array([top])
        else:
            self._lse = None
        self._log_w = new  # (the log_w setter's work, in place: _lse and _W set here)
        e /= s  # (e is this call's own: normalised in place)
        self._W = e[None]

    def weights(self) -> np.ndarray:
        """Normalised weights per group, (G, n)."""
        if self._W is None:
            self._W = resampling.normalize_rows(self.log_w.reshape(self.G, self.n))
        return self._W

    def maybe_resample(self, allowed: bool) -> np.ndarray | None:
        """Record this generation's ESS; resample the groups whose ESS is below the threshold
        (if ``allowed``: not after the last step of a chain).  Returns flat ancestors or None."""
        W = self._W if self._W is not None else self.weights()
        self.weighed = self._log_w  # this generation's weights, before any reset
        if self.G == 1:  # one group (a chain at the top level): Python numbers
            w = W[0]
            ess1 = 1.0 / float(w.dot(w))  # (np.dot's product, without its dispatch)
            self.ess.append(ess1)
            low1 = allowed and ess1 < self.threshold * self.n
            self.resampled.append(int(low1))
            if not low1:
                return None
            a = resampling.grouped(self.resample, W, self.rng, self.ordered)
            self._log_w, self._W = np.zeros(self.n), None  # (the log_w setter's work)
            self._lse = self._log_n
            return a
        ess = 1.0 / np.add.reduce(W * W, axis=1)
        self.ess.append(float(np.add.reduce(ess)) / self.G)
        low = ess < self.threshold * self.n if allowed else np.zeros(self.G, dtype=bool)
        n_low = int(np.count_nonzero(low))
        self.resampled.append(n_low)
        if not n_low:
            return None
        a = resampling.grouped(self.resample, W, self.rng, self.ordered)
        if n_low < self.G:
            keep = np.repeat(~low, self.n)
            a[keep] = np.flatnonzero(keep)
        lse = np.where(low, np.log(self.n), self._row_lse())
        self.log_w = np.where(np.repeat(low, self.n), 0.0, self.log_w)
        self._lse = lse
        return a

    # -- a chain ------------------------------------------------------------------------------
    def begin_chain(self, frame, plate) -> None:
        """Fix the groups at the first chain; the members so far are uniform."""
        G = groups(frame)
        if self.started and (G != self.G or plate != self.plate):
            raise ModelError(
                "particle methods run the chains of one level: all at the top level or all in "
                "one plate"
            )
        if not self.started:
            if np.ptp(self.log_w) > 0:
                raise ModelError("particles were weighed differently before the first chain")
            self.G, self.plate, self.started = G, plate, True
            self.members = G * self.n
            self.log_w = np.zeros(self.members)

    def step_frame(self, frame, rel, t):
        return free_step(frame, rel)

    def choose_ancestors(self, frame, local, step, args, t, state, a):
        """Ancestors for generation t + 1 (conditional SMC overrides it)."""
        return a

    def chain(self, frame, local, step, length, init, args):
        """The chain ``local`` of ``frame``, generation by generation (:class:`Generations`'s
        policy of :func:`thrifty.core.sites.markov`)."""
        return ChainGenerations(self, frame, local, step, length, init, args)

    def first_generation(self, chain) -> int | None:
        """Before step 0: the members' weights by what they observed before the chain, and
        their initial state (one per member); the chain runs every step."""
        self.weigh(chain.frame, chain.local)  # observations before the chain
        chain.prev = per_particle(chain.init, self.members, per_member=chain.plate is not None)
        return 0 if chain.T else None

    def enter(self, chain, t: int):
        """Generation t's frame over the members, and their ``prev``."""
        return self.step_frame(chain.frame, chain.local + (t,), t), chain.prev

    def leave(self, chain, t: int, sf, state):
        """Generation t executed: weigh, remember, resample (not after the last step).
        Returns (the members' states, the next step's ``prev``: the states of their
        ancestors)."""
        frame, local = chain.frame, chain.local
        self.weigh(frame, local + (t,))
        self.sites.append((chain.plate, local, t, step_values(sf)))
        if self.records is not None:
            self.records.append(step_record(sf, state))
        a = self.choose_ancestors(frame, local, chain.step, chain.args, t, state,
                                  self.maybe_resample(t != chain.last))
        self.ancestors.append(a)
        if a is not None:
            self._reorder(local, a)
        return state, (state if a is None else take(state, a, self.members))

    def _reorder(self, local, a: np.ndarray) -> None:
        """The members were resampled (ancestors ``a``): the states the ended chains returned
        follow them; a state read outside the steps before (a value the program may keep, and
        that would keep the old order) is an error."""
        for out in self.outputs:
            if out.reads:
                raise ModelError(
                    f"the states of chain {dotted(out.chain)!r} were read outside its steps before "
                    f"chain {dotted(local)!r}, whose resampling reorders the particles: a value "
                    "computed from them would stay with the particles' old order. Read them in "
                    f"the steps of {dotted(local)!r} (pass them as an argument: th.markov(name, "
                    "step, T, init, states), and at t = 0 use them in place of init) or after "
                    "the last chain"
                )
            out.follow(a)

    def chain_states(self, chain) -> list:
        """What ``th.markov`` returns: the states along each member's ancestry, as the members
        are when they are read (:class:`ParticleStates`)."""
        return self._output(chain, self._lineage(chain.out))

    def _output(self, chain, lineage: list) -> ParticleStates:
        out = ParticleStates.of(lineage)
        out.bind(self, chain.local)
        self.outputs.append(out)
        return out

    def call_step(self, frame, sf, local, step, t, prev, args):
        """``step(t, prev, *args)`` executed by the step frame ``sf`` over the members outside
        the chain's own generations (conditional SMC's rescoring of a reference's suffix,
        :func:`~thrifty.core.particle_steps.run_step`); an error of the model's code names
        the step, the chain and the particles."""
        return run_step(frame, sf, step, t, prev, args, local, lambda: self.where(local, t))

    def where(self, local, t: int) -> str:
        plate = "" if self.plate is None else f" for each element of plate {fmt(self.plate)}"
        return f"step {t} of chain {fmt(local)} over {self.n} particles{plate}"

    # -- ancestry -----------------------------------------------------------------------------
    def _lineage(self, states: list, lo: int = 0, hi: int | None = None) -> list:
        """The chain's states along each current member's ancestry: its generations are its
        steps lo..hi (the last ones remembered), the members of the other steps keep their
        rows (conditional SMC on a block of steps: before it every member holds the
        reference's states, after it each member runs its own)."""
        hi = len(states) - 1 if hi is None else hi
        m, out = self.members, [None] * len(states)
        gens = self.ancestors[len(self.ancestors) - (hi - lo + 1):]
        idx = np.arange(m)
        for t in range(len(states) - 1, -1, -1):
            if lo <= t < hi and (a := gens[t - lo]) is not None:
                idx = a[idx]
            out[t] = take(states[t], idx, m)
        return out

    def _traced(self, idx: np.ndarray):
        """Per generation (newest first): (plate, chain, t, {site: values at the ancestors of
        the members ``idx``})."""
        m = self.members
        for g, at in reversed(list(enumerate(self.ancestry(idx)))):
            plate, chain, t, vals = self.sites[g]
            yield plate, chain, t, {k: take(v, at, m) for k, v in vals.items()}

    def ancestry(self, idx) -> list:
        """The members of each generation (oldest first) on the ancestry of the members
        ``idx`` of the last (an int or an index array)."""
        out = [idx] * len(self.sites)
        for g in range(len(self.sites) - 1, -1, -1):
            a = self.ancestors[g]
            if a is not None:
                idx = a[idx]
            out[g] = idx
        return out

    def trajectories(self, ks: np.ndarray) -> dict:
        """(plate, chain, t, site) → values (len(ks), ...) along the ancestry of the members
        ``ks`` (one per group)."""
        return {(plate, chain, t, k): v for plate, chain, t, vals in self._traced(ks)
                for k, v in vals.items()}

    def draw_final(self) -> np.ndarray:
        """One member per group, drawn from the group's final weights (flat indices)."""
        W = self.weights()
        u = self.rng.random((self.G, 1))
        j = np.minimum((u > np.cumsum(W, axis=1)).sum(axis=1), self.n - 1)
        return np.arange(self.G) * self.n + j

    def paths(self) -> dict:
        """Every generation's site values along each final member's ancestry, stacked over
        the steps of each chain: ``name → (n, T, ...)`` (top level) or ``(n, G, T, ...)``
        (a chain in a plate of G elements)."""
        by_name: dict = {}
        for plate, chain, t, vals in self._traced(np.arange(self.members)):
            for k, v in vals.items():
                name = ".".join(str(p) for p in (plate or ()) + chain + k)
                by_name.setdefault(name, []).append((t, v))
        out = {}
        for name, items in by_name.items():
            items.reverse()
            steps = [t for t, _ in items]
            if steps != list(range(len(steps))) or any(
                np.shape(v) != np.shape(items[0][1]) for _, v in items
            ):
                raise ModelError(f"site {name!r} is not present in every step of its chain; "
                                 "the particle methods need the same choices in every step")
            v = np.stack([np.asarray(v) for _, v in items], axis=1)  # (G·n, T, ...)
            if self.plate is not None:
                v = v.reshape((self.G, self.n) + v.shape[1:]).swapaxes(0, 1)
            out[name] = v
        return out

    def final_log_weights(self) -> np.ndarray:
        """(n,) at the top level, (n, G) for a plate's chains."""
        lw = self.log_w.reshape(self.G, self.n)
        return lw[0] if self.plate is None else lw.T.copy()


class ChainGenerations(Chain):
    """A chain of a particle run (the particle methods' policy of
    :func:`thrifty.core.sites.markov`): step t executes once over every member, in the frame
    the driver gives; between steps the driver weighs the members by what they observed,
    resamples the groups whose ESS is low and remembers the generation (003 §2–4)."""

    def __init__(self, driver: Generations, frame, local, step, length, init, args):
        self.driver, self.frame, self.local = driver, frame, local
        self.step, self.length, self.init, self.args = step, length, init, args
        self.out: list = []

    def first(self):
        driver, frame = self.driver, self.frame
        self.plate = plate_of(frame)
        driver.begin_chain(frame, self.plate)
        driver.running = True
        self.T = chain_length(self.local, self.length, self.step)
        self.last = self.T - 1  # (no resampling after the last generation)
        return driver.first_generation(self)

    def enter(self, t):
        return self.driver.enter(self, t)

    def leave(self, t, frame, state):
        state, self.prev = self.driver.leave(self, t, frame, frozen_state(state, self.local))
        self.out.append(state)
        return t + 1 if t + 1 < self.T else None

    def failed(self, frame, t, exc):
        step_failed(frame, exc, lambda: self.driver.where(self.local, t))

    def states(self):
        self.driver.running = False
        return self.driver.chain_states(self)


class ParticleStates(States):
    """What ``th.markov`` returns in a particle run: the chain's states along the ancestry of
    each member *as the members are when read*.  A later chain's resampling reorders the
    members (a particle is its whole history, 003 §3), and its steps — and the program after
    it — read the states of the particles they hold.  A state read outside the steps before a
    later chain resamples is refused then (:meth:`Generations._reorder`)."""

    __slots__ = ("_driver", "_idx", "_members", "chain", "reads")

    def bind(self, driver: Generations, chain: tuple) -> None:
        """The states of ``chain``, whose members are ``driver``'s (held weakly: the driver
        holds its outputs, and a cycle would keep every generation's arrays of a finished run
        until a full garbage collection)."""
        self._driver, self.chain = weakref.ref(driver), chain
        self._members = driver.members
        self._idx: np.ndarray | None = None  # per member now, its member when the chain ended
        self.reads: set = set()  # the steps whose states were read outside the steps

    def follow(self, a: np.ndarray) -> None:
        """The members were resampled with ancestors ``a``."""
        self._idx = a if self._idx is None else self._idx[a]

    def __getitem__(self, t):
        try:
            t = operator.index(t)
        except TypeError:
            return States.__getitem__(self, t)  # (a slice, an index array: state by state)
        v = States.__getitem__(self, t)
        driver = self._driver()
        if driver is None or not driver.running:
            self.reads.add(t + len(self) if t < 0 else t)
        return v if self._idx is None else take(v, self._idx, self._members)

    def __iter__(self):
        for t in range(len(self)):
            yield self[t]
