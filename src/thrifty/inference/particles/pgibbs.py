"""Particle Gibbs over a markov chain: iterated conditional SMC and PGAS (paper 003 §4).

One step of ``th.pgibbs("x", particles=N)`` runs conditional SMC over the chain ``x`` with the
trace's current trajectory as the *reference* particle (index 0), the other choices of the trace
held fixed, then sets the chain to the trajectory of one particle drawn from the final weights —
an always-accepted Gibbs update of the whole chain (Andrieu, Doucet & Holenstein 2010).

Each generation t:

1. the N particles' step ``step(t, prev)`` runs as one batch (:mod:`thrifty.core.particles`);
   particle 0 takes the reference's choices, the others are drawn from the prior;
2. weights w_t^i = likelihood of the step's observations;
3. the N − 1 free particles draw their ancestors from w_t (multinomial); the reference's
   ancestor is 0 (iterated CSMC), or, with ``ancestor_sampling=True`` (PGAS, 003 §4.4), drawn
   with weights ``w_t^l · p(x_{t+1:}^ref | x_{≤t}^l)`` — the reference's suffix rescored under
   each particle's prefix: steps t+1, t+2, … executed once over all particles with the
   reference's choices pinned, until every particle's state equals the reference's state
   (one step when the state is the step's sampled value, the usual case).

Cost per sweep: O(N·T) array work (PGAS: O(N·T·k), k the steps until the states coincide) and
one scalar re-execution of the chain to write the new trajectory into the trace.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from thrifty._args import checked_keywords, int_arg
from thrifty.core.address import as_pattern, fmt
from thrifty.core.engine import (
    Plan,
    VecTarget,
    chain_references,
    conditional_step,
    fused_step,
    member_lps,
    parts,
    pinned_step,
    rebuilt,
    run_particles,
    same_value,
    step_record,
    step_values,
    take,
    take_member_lp,
    take_observed,
    top_choice,
    trajectory,
    writable,
)
from thrifty.errors import ArgumentError, ModelError, NumericalError, SelectionError
from thrifty.inference.kernel import Kernel
from thrifty.inference.numerics import resampling
from thrifty.inference.particles.generations import Generations, check_outside
from thrifty.inference.selection import OrderedRange

_MAX, _ALL, _CUMSUM = np.maximum.reduce, np.logical_and.reduce, np.add.accumulate

# PGAS runs a generation and the references' rescoring as one execution up to this many
# members (LDS of 003 §5, T = 100: a sweep 9% faster at N = 10, 18% slower at N = 1,000)
FUSE_MAX_MEMBERS = 256


class Conditional(Generations):
    """Conditional SMC: member 0 of each group is pinned to the reference trajectory
    (``refs[t][site]``: the G references' values at step t); always resamples, multinomially."""

    ordered = False  # the ancestors in the order drawn: iid, so one may be overwritten
    evidence = False  # (a conditional run's weights estimate no evidence)

    def __init__(self, n, rng, refs, ancestor_sampling, steps=None):
        super().__init__(n, resampling.multinomial, 1.0, rng)
        self.refs = refs
        self.ancestor_sampling = ancestor_sampling
        self._ref_ancestors: list = []  # per generation, the references' drawn ancestors
        self.lo, self.hi = steps if steps is not None else (0, len(refs) - 1)

    @property
    def ancestor_changes(self) -> int:
        """How many of the references' drawn ancestors (003 §4.4) were not the reference
        itself, over the generations and groups (counted once, at the end of the run)."""
        drawn = self._ref_ancestors
        if not drawn:
            return 0
        return int(np.count_nonzero(np.concatenate(drawn) != np.tile(self.ref_members,
                                                                     len(drawn))))

    def first_generation(self, chain):
        """Conditional SMC on every step, or on steps lo..hi only: the steps before run with
        the reference's choices (the members' states are the reference's), the steps after
        weigh the final members by the reference's suffix under their states (003 §4.4's
        rescoring)."""
        chain.fused = None  # (the pending ancestors of a fused generation: enter → leave)
        chain.suffix = None
        if (self.lo, self.hi) != (0, len(self.refs) - 1):
            chain.last = self.hi
            chain.suffix = np.zeros(self.members)
        return super().first_generation(chain)

    def chain_states(self, chain) -> list:
        if chain.suffix is None:
            return super().chain_states(chain)
        self.log_w = self.log_w + chain.suffix  # p(reference's suffix | each member's prefix)
        return self._output(chain, self._lineage(chain.out, self.lo, self.hi))

    def _pinned(self, frame, local, step, args, s, prev):
        """Step s with every member taking the reference's choices; (state, lat + obs lp,
        whether the state is known to be the reference's in every member: see
        :func:`_pinned_state`)."""
        take_member_lp(frame)
        pf = pinned_step(frame, local + (s,), self.refs[s], self.n)
        state = self.call_step(frame, pf, local, step, s, prev, args)
        return state, take_member_lp(frame), _pinned_state(step_record(pf, state))

    def step_frame(self, frame, rel, t):
        return conditional_step(frame, rel, self.refs[t], self.n)

    last_pinned = False  # the last step's state is its choices' values (:func:`_pinned_state`)

    def weigh(self, frame, addr) -> None:
        """:meth:`Generations.weigh`; with ancestor sampling, what the program observes after
        the chain must not depend on the reference's ancestors: 003 §4.4's weights rescore
        the chain's steps only.  It may read the last state when that state is the last
        step's choices (the reference's own whatever its ancestors)."""
        inc = take_observed(frame)
        if self.ancestor_sampling and self.outputs and inc is not None and (
                len(inc) == self.members and np.ptp(inc.reshape(self.G, self.n), axis=1).any()):
            for out in self.outputs:
                if out.reads - ({len(out) - 1} if self.last_pinned else set()):
                    steps = ", ".join(map(str, sorted(out.reads)))
                    raise ModelError(
                        "pgibbs: the program observes after the chain "
                        f"{'.'.join(map(str, out.chain))!r} what its particles weigh "
                        f"differently, having read the chain's states at step(s) {steps}: "
                        "ancestor sampling (PGAS, 003 §4.4) rescores the reference's suffix in "
                        "the chain's steps, not what the program does after the chain; "
                        "observe it in the chain's last step, or use "
                        "ancestor_sampling=False")
        self._weigh_inc(inc, addr)

    def choose_ancestors(self, frame, local, step, args, t, state, a):
        if a is None:  # after the last step (or no resampling)
            return None
        # the N − 1 free particles need N − 1 iid ancestors: the draws come unsorted
        # (``ordered = False``; sorted ones would lose their smallest to the reference's)
        ref = self.ref_members
        a[ref] = ref  # with ancestor sampling, drawn by the next generation (``_fused``)
        if self.ancestor_sampling:
            self._pending = (state, a, self.weighed)  # (log-weights are never changed in place)
        return a

    _pending = None  # (states at t, ancestors of t + 1, w_t) until generation t + 1 draws

    def begin_chain(self, frame, plate) -> None:
        super().begin_chain(frame, plate)
        self.ref_members = np.arange(self.G) * self.n  # the references: each group's first
        self.ref_members.flags.writeable = False

    def enter(self, chain, t):
        frame, local = chain.frame, chain.local
        if t < self.lo or t > self.hi:  # outside the range: the reference's choices, pinned
            take_member_lp(frame)
            return pinned_step(frame, local + (t,), self.refs[t], self.n), chain.prev
        pend, self._pending = self._pending, None
        if pend is None:
            return super().enter(chain, t)
        before, a, log_w = pend
        # a chain in a plate reads its elements' data through the plate's index, one entry per
        # member: the members cannot double there; over many members the doubled arrays cost
        # more than the execution they save
        fuse = chain.plate is None and self.members <= FUSE_MAX_MEMBERS
        both = _stack(chain.prev, before, self.members) if fuse else None
        if both is None:  # the reference's ancestor first, by a step of its own
            ref = self.ref_members
            a[ref] = j = self._ancestors(frame, local, chain.step, chain.args, t - 1, before,
                                         log_w)
            self._ref_ancestors.append(j)
            chain.prev = take(before, a, self.members)
            return super().enter(chain, t)
        chain.fused = (a, log_w)
        return fused_step(frame, local + (t,), self.refs[t], self.n), both

    def leave(self, chain, t, sf, state):
        if t == len(self.refs) - 1:
            self.last_pinned = _pinned_state(step_record(sf, state))
        if t < self.lo or t > self.hi:
            lp = take_member_lp(chain.frame)
            if t > self.hi:
                chain.suffix += lp
            return state, state
        if chain.fused is None:
            return super().leave(chain, t, sf, state)
        (a, log_w), chain.fused = chain.fused, None
        return self._fused(chain, t, sf, state, a, log_w)

    def _fused(self, chain, t, sf, state2, a, log_w):
        """Generation t and the reference's ancestor at t (003 §4.4) from one execution over
        2m members (:func:`~thrifty.core.particle_steps.fused_step`): the generation's members
        and the references rescored under the states before resampling; the reference member
        of each group then takes the rows of its drawn ancestor."""
        n, G, m = self.n, self.G, self.members
        frame, local, step, args = chain.frame, chain.local, chain.step, chain.args
        lat, obs = member_lps(sf)
        for part in (lat, obs):
            if part is not None:
                log_w = log_w + part[m:]
        rec = step_record(sf, state2)  # (its rows: set once the ancestors are drawn)
        if not _pinned_state(rec):  # the rescored references' states may differ: go on
            after = take(state2, slice(m, 2 * m), 2 * m)  # (a view)
            if not _coalesced(after, G, n):
                for s in range(t + 1, len(self.refs)):
                    after, lp, same = self._pinned(frame, local, step, args, s, after)
                    log_w = log_w + lp
                    if same or _coalesced(after, G, n):
                        break
        ref = self.ref_members
        j = self._draw_ancestor(log_w)
        a[ref] = j
        self._ref_ancestors.append(j)
        idx = np.arange(m)
        idx[ref] = m + j
        state = take(state2, idx, 2 * m)
        if type(state) is np.ndarray:  # read-only, as run_step keeps a state (and the site
            state.setflags(write=False)  # whose values the state is holds the same rows)
        self._weigh_inc(None if obs is None else obs[idx], local + (t,))
        self.sites.append((chain.plate, local, t, {
            k: state if v is state2 else take(v, idx, 2 * m) for k, v in step_values(sf).items()
        }))
        if self.records is not None:
            rec.rows = idx
            self.records.append(rec)
        nxt = self.choose_ancestors(frame, local, step, args, t, state,
                                    self.maybe_resample(t != chain.last))
        self.ancestors.append(nxt)
        return state, (state if nxt is None else take(state, nxt, m))

    def _ancestors(self, frame, local, step, args, t, state, log_w) -> np.ndarray:
        """Each reference's ancestor at t + 1: w_t^l · p(reference's suffix | prefix l)."""
        n, G = self.n, self.G
        log_w = log_w.copy()
        prev = state
        for s in range(t + 1, len(self.refs)):
            prev, lp, same = self._pinned(frame, local, step, args, s, prev)
            log_w += lp
            if same or _coalesced(prev, G, n):
                break  # within each group every prefix gives the same state: the rest is common
        return self._draw_ancestor(log_w)

    def _draw_ancestor(self, log_w) -> np.ndarray:
        """Per group, a member drawn with weights ∝ exp(log_w) (flat indices)."""
        n, G = self.n, self.G
        if G == 1:  # one reference: its ancestor by one search of the unnormalised weights
            m = _MAX(log_w)
            if not m > -np.inf:
                raise NumericalError("pgibbs: every particle of a group has weight zero, the "
                                     "reference's too (its trajectory is impossible)")
            c = _CUMSUM(np.exp(log_w - m)).tolist()  # (ufunc methods: no NumPy wrappers)
            u = self.rng.random()  # (the same uniform as the rows' random((G, 1)))
            # (searchsorted's left insertion point, on the same doubles: bisect_left)
            return np.array([min(bisect_left(c, u * c[-1]), n - 1)])
        W = resampling.normalize_rows(log_w.reshape(G, n))
        u = self.rng.random((G, 1))
        j = np.minimum((u > np.cumsum(W, axis=1)).sum(axis=1), n - 1)
        return np.arange(G) * n + j


def _stack(a, b, m: int):
    """The members' states ``a`` followed by ``b`` (arrays with a leading axis of m, and
    tuples / lists / dicts of them; other values shared when equal); None when they do not
    stack."""
    if isinstance(a, np.ndarray) and a.ndim and a.shape[0] == m:
        if not (isinstance(b, np.ndarray) and b.shape == a.shape):
            return None
        return np.concatenate([a, b])
    if isinstance(a, (tuple, list, dict, MappingProxyType)) and type(b) is type(a) and (
            len(a) == len(b) and (not isinstance(a, Mapping) or a.keys() == b.keys())):
        both = [_stack(x, y, m) for x, y in zip(parts(a), parts(b))]
        return None if any(p is None for p in both) else rebuilt(a, both)
    return a if same_value(a, b) else None


def _pinned_state(rec) -> bool:
    """Whether a step whose members hold their group's reference choices, replayed strictly
    (a pinned step, the rescored half of a fused one), returned as its state the values of its
    latent sites (``rec.state_of``, :func:`~thrifty.core.engine.step_record`): then within each
    group every member's state is the reference's, whatever the members' states before — the
    ancestor weights of 003 §4.4 need no further step, and the states no comparison."""
    return rec.state_of is not None


def _coalesced(states, G: int, n: int) -> bool:
    """Within each group, every member's state is the same."""
    if isinstance(states, np.ndarray) and states.dtype != object and states.ndim:
        if G == 1:  # (one group: the members' rows against the first)
            return bool(_ALL(states == states[:1], axis=None))
        s = states.reshape((G, n) + states.shape[1:])
        return bool(_ALL(s == s[:, :1], axis=None))
    members = [_member(states, i) for i in range(G * n)]
    return all(same_value(members[g * n + j], members[g * n])
               for g in range(G) for j in range(1, n))


def _member(state, i):
    if isinstance(state, np.ndarray) and state.ndim:
        return state[i]
    if isinstance(state, (tuple, list, dict, MappingProxyType)):
        return rebuilt(state, [_member(s, i) for s in parts(state)])
    return state


def write_trajectories(kernel, trace, rng, driver, targets=None) -> None:
    """Set the chains to one trajectory per group drawn from the final weights (and the
    choices in ``targets``), by one execution committed into ``trace``: a top-level chain's
    trajectory written as columns from the generations' rows (003 §4: the particle's values,
    log-densities and states as its run computed them; :mod:`thrifty.core.written`), else
    executed step by step with every step's choices given."""
    ks = driver.draw_final()
    written = _columns(trace, driver, ks)
    if written is not None:
        run = kernel.execute(trace, rng, targets=targets, written=written)
        if run.aborted is not None:  # cannot happen: nothing it executes changed
            raise ModelError(f"{kernel.name}: the drawn trajectory has probability zero: "
                             f"{run.aborted}")
        check_outside(kernel.name, driver, run, int(ks[0]))
        run.commit()
        return
    targets = dict(targets or {})
    vec, plan = {}, Plan()
    elems = np.arange(driver.G)
    for (plate, chain, t, site), v in driver.trajectories(ks).items():
        if plate is None:
            x = np.asarray(v[0])
            targets[chain + (t,) + site] = x.item() if x.ndim == 0 else x.copy()
            plan.add_step(chain, t)
        else:
            vec[(plate, chain + (t,) + site)] = VecTarget(elems, np.asarray(v))
    if driver.plate is not None:
        plan.add_elements(driver.plate, elems)
    run = kernel.execute(trace, rng, targets=targets, vec=vec, plan=plan)
    if run.aborted is not None:  # cannot happen for trajectories the particles drew
        raise ModelError(f"{kernel.name}: the drawn trajectory has probability zero: "
                         f"{run.aborted}")
    check_outside(kernel.name, driver, run, int(ks[0]))
    run.commit()


class PGibbs(Kernel):
    """Particle Gibbs on one markov chain; see :func:`pgibbs`."""

    name = "pgibbs"

    def __init__(self, chain, particles: int, ancestor_sampling: bool, resample: str):
        Kernel.__init__(self)
        particles = int_arg("pgibbs", "particles", particles, 2)
        if not isinstance(ancestor_sampling, (bool, np.bool_)):  # ("no" is truthy: PGAS)
            raise ArgumentError(f"pgibbs: ancestor_sampling must be True or False, got "
                                f"{ancestor_sampling!r}")
        if resample != "multinomial":
            raise ArgumentError(
                f"pgibbs: resample={resample!r} — conditional resampling is implemented for "
                "'multinomial' only (conditional systematic resampling needs its own scheme)"
            )
        self.steps = None
        if isinstance(chain, OrderedRange):
            chain, self.steps = chain.chain, (chain.lo, chain.hi)
        self.chain = as_pattern(chain)
        self.particles = int(particles)
        self.ancestor_sampling = bool(ancestor_sampling)

    def label(self) -> str:
        kind = "PGAS" if self.ancestor_sampling else "CSMC"
        sel = repr(".".join(map(str, self.chain)))
        if self.steps is not None:
            sel = f"ordered_range({sel}, {self.steps[0]}, {self.steps[1]})"
        return f"pgibbs({sel}, {self.particles}, {kind})"

    def prepare(self, trace) -> None:
        self._references(trace)

    def _references(self, trace):
        """(plate or None, chain, T, refs) of the selected chain
        (:func:`~thrifty.core.sections.chain_references`)."""
        return chain_references(trace, self.chain, "pgibbs")

    def _step(self, trace, rng):
        plate, chain, T, refs = self._references(trace)
        if self.steps is not None and not 0 <= self.steps[0] <= self.steps[1] < T:
            raise SelectionError(f"pgibbs: steps {self.steps[0]}..{self.steps[1]} are not in "
                                 f"the chain's 0..{T - 1}")
        n = self.particles
        driver = _Target(n, rng, refs, self.ancestor_sampling, plate, chain, self.steps)
        if plate is None and self.steps is None:  # (a whole top-level chain: written back
            driver.records = []  # from the generations' rows)

        def given(local):
            vl = top_choice(trace, local)
            if vl is None:
                raise ModelError(f"pgibbs: the trace has no value at {fmt(local)}")
            return vl[0]

        run_particles(trace, rng, n, given, driver)
        write_trajectories(self, trace, rng, driver)
        st = self.info
        st.proposed += 1
        st.accepted += 1
        st.count("particles", n)
        st.count("generations", T if self.steps is None else self.steps[1] - self.steps[0] + 1)
        st.count("resampling_events", sum(driver.resampled))
        if driver.ess:  # (a chain of no steps has no generation)
            st.count("mean_ess", float(np.mean(driver.ess)))  # per generation, over the groups
        if self.ancestor_sampling:
            st.count("reference_ancestor_changes", driver.ancestor_changes / driver.G)
        st.chain_steps += n * T * driver.G
        return trace


class _Target(Conditional):
    """Conditional SMC on the selected chain; any other chain is an error."""

    def __init__(self, n, rng, refs, ancestor_sampling, plate, chain, steps):
        super().__init__(n, rng, refs, ancestor_sampling, steps)
        self.target = (plate, chain)

    def chain(self, frame, local, step, length, init, args):
        here = (getattr(frame, "plate_addr", None), local)
        if here != self.target:
            raise ModelError(
                f"pgibbs({'.'.join(map(str, (self.target[0] or ()) + self.target[1]))!r}): the "
                f"program has another markov chain {'.'.join(map(str, (here[0] or ()) + local))!r}"
                "; particle Gibbs updates one chain with the rest held fixed, which is not "
                "supported for programs with several chains yet"
            )
        return super().chain(frame, local, step, length, init, args)


@checked_keywords
def pgibbs(chain, particles: int = 10, ancestor_sampling: bool = True,
           resample: str = "multinomial") -> PGibbs:
    """Particle Gibbs on the markov chain ``chain`` (003): PGAS by default, iterated
    conditional SMC with ``ancestor_sampling=False``.  ``chain`` names a top-level chain
    (``"x"``) or a chain inside a top-level plate (``"series.h"``: one conditional SMC per
    element, all run as one batch).  Always accepts; compose with other kernels for the
    parameters (``th.cycle([th.pgibbs("x", 10), th.mh("q", ...)])``).

    The chain's step must accept a leading particle axis on ``prev`` (as :func:`thrifty.smc`).

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models.lds import lds, generate_lds
    >>> y, C, _ = generate_lds(T=10, D=2, r=0.5, seed=0)
    >>> r = th.infer(lds(y, C, 0.5, omega=4 * np.pi / 10, q=0.1), th.pgibbs("x", 10),
    ...              num_samples=50, seed=0, progress=False)
    >>> r["x.z"].shape
    (1, 50, 10, 2)
    """
    return PGibbs(chain, particles, ancestor_sampling, resample)


def _columns(trace, driver, ks) -> dict | None:
    """{chain: its drawn trajectory as columns}, or None when it cannot be written so (a chain
    in a plate, several chains, a part of a chain, sites the chain's columns do not take)."""
    if driver.plate is not None or not driver.records or len(ks) != 1:
        return None
    chains = {chain for _, chain, _, _ in driver.sites}
    if len(chains) != 1 or len(driver.records) != len(driver.sites):
        return None
    (chain,) = chains
    w = trajectory(driver.records, [int(j) for j in driver.ancestry(int(ks[0]))])
    return {chain: w} if w is not None and writable(trace, chain, w) else None


__all__ = ["PGibbs", "pgibbs"]
