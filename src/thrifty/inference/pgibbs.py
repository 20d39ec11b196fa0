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

import numpy as np

from thrifty.core.address import as_name, fmt
from thrifty.core.batch import BatchFrame
from thrifty.core.particles import StepFrame, per_particle, take
from thrifty.core.vocab import LATENT, NEG_INF, Plan, chain_length, same_value
from thrifty.errors import ModelError, SelectionError
from thrifty.inference import resampling
from thrifty.inference.kernel import Kernel
from thrifty.inference.smc import _Generations, run_particles


class _ConditionalStep(StepFrame):
    """Step t over the particles; particle 0 takes the reference's choices."""

    def __init__(self, run, root, rel, ref: dict):
        StepFrame.__init__(self, run, root, rel)
        self.ref = ref

    def sample(self, name, d):
        value = BatchFrame.sample(self, name, d)
        local = self.scope + as_name(name) if self.scope else as_name(name)
        if local not in self.ref:
            raise ModelError(
                f"pgibbs: the reference trajectory has no choice {fmt(self.rel + local)} "
                "(the steps' choices must be the same in every step)"
            )
        value[0] = self.ref[local]  # the batch's own array (fresh draws)
        return value


class _PinnedStep(StepFrame):
    """Step t over the particles with every particle taking the reference's choices: its
    latent log-density per particle is the reference's transition under that particle's
    state (strict: a choice the reference does not have is an error)."""

    def __init__(self, run, root, rel, ref: dict):
        StepFrame.__init__(self, run, root, rel)
        self.ref = ref

    def sample(self, name, d):
        local = self._local(name)
        rel = self.rel + local
        if local not in self.ref:
            raise ModelError(f"pgibbs: the reference trajectory has no choice {fmt(rel)}")
        v = np.asarray(self.ref[local])
        acc = self.acc
        lp = acc.member_lp(d.log_prob(v), rel, "sample")
        acc._add("lat_lp", lp, float(lp.sum()))
        return np.broadcast_to(v, (acc.n,) + v.shape).copy()


class _Conditional(_Generations):
    """Conditional SMC over one chain (the others are not particles)."""

    def __init__(self, n, rng, target, refs, ref_states, ancestor_sampling):
        super().__init__(n, resampling.multinomial, 1.0, rng)
        self.target, self.refs, self.ref_states = target, refs, ref_states
        self.ancestor_sampling = ancestor_sampling
        self.ancestor_changes = 0

    def chain(self, frame, local, step, length, init, args):
        if local != self.target:
            raise ModelError(
                f"pgibbs({fmt(self.target)}): the program has another markov chain "
                f"{fmt(local)}; particle Gibbs updates one chain with the rest held fixed, "
                "which is not supported for programs with several chains yet"
            )
        run, n = frame.run, self.n
        T = chain_length(local, length, step)
        self.weigh(frame, local)
        prev = per_particle(init, n)
        states = []
        for t in range(T):
            sf = _ConditionalStep(run, frame, local + (t,), self.refs[t])
            run.frame = sf
            try:
                state = step(t, prev, *args)
            finally:
                run.frame = frame
            self.weigh(frame, local + (t,))
            self.sites.append((local, t, {k: s.values for k, s in sf.new.items()
                                          if s.kind == LATENT}))
            states.append(state)
            a = None
            if t < T - 1:
                w = resampling.normalize(self.log_w)
                self.ess.append(resampling.ess(w))
                self.resampled.append(True)
                a = self.resample(w, n, self.rng)
                a[0] = 0
                if self.ancestor_sampling:
                    a[0] = self._ancestor(frame, local, step, args, t, state)
                    self.ancestor_changes += a[0] != 0
                self.log_w = np.zeros(n)
            else:
                self.ess.append(resampling.ess(resampling.normalize(self.log_w)))
                self.resampled.append(False)
            self.ancestors.append(a)
            prev = state if a is None else take(state, a, n)
        return self._lineage(states)

    def _ancestor(self, frame, local, step, args, t, state) -> int:
        """The reference's ancestor at t + 1: w_t^l · p(reference's suffix | prefix l)."""
        run, n = frame.run, self.n
        log_w = self.log_w.copy()
        prev = state
        saved_obs, saved_lat = frame.obs_lp, frame.lat_lp
        for s in range(t + 1, len(self.refs)):
            frame.obs_lp = frame.lat_lp = None
            pf = _PinnedStep(run, frame, local + (s,), self.refs[s])
            run.frame = pf
            try:
                prev = step(s, prev, *args)
            finally:
                run.frame = frame
            log_w += frame.total_member_lp()
            if _all_equal(prev, self.ref_states[s], n):
                break  # every particle's state is the reference's: the rest is common
        frame.obs_lp, frame.lat_lp = saved_obs, saved_lat
        if not resampling.log_sum_exp(log_w) > NEG_INF:
            return 0
        return int(self.rng.choice(n, p=resampling.normalize(log_w)))


def _all_equal(states, ref, n: int) -> bool:
    """Every particle's state equals the reference state ``ref``."""
    if isinstance(states, np.ndarray) and states.dtype != object and states.ndim:
        r = np.asarray(ref)
        return r.dtype != object and r.shape == states.shape[1:] and bool(np.all(states == r))
    return all(same_value(_member(states, i), ref) for i in range(n))


def _member(state, i):
    if isinstance(state, np.ndarray) and state.ndim:
        return state[i]
    if isinstance(state, (tuple, list)):
        return type(state)(_member(s, i) for s in state)
    return state


class PGibbs(Kernel):
    """Particle Gibbs on one markov chain; see :func:`pgibbs`."""

    name = "pgibbs"

    def __init__(self, chain, particles: int, ancestor_sampling: bool, resample: str):
        Kernel.__init__(self)
        if not isinstance(particles, (int, np.integer)) or particles < 2:
            raise ValueError(f"pgibbs: particles must be an int >= 2, got {particles!r}")
        if resample != "multinomial":
            raise ValueError(
                f"pgibbs: resample={resample!r} — conditional resampling is implemented for "
                "'multinomial' only (conditional systematic resampling needs its own scheme)"
            )
        self.chain = as_name(chain)
        self.particles = int(particles)
        self.ancestor_sampling = bool(ancestor_sampling)

    def label(self) -> str:
        kind = "PGAS" if self.ancestor_sampling else "CSMC"
        return f"pgibbs({'.'.join(map(str, self.chain))!r}, {self.particles}, {kind})"

    def prepare(self, trace) -> None:
        self._node(trace)

    def _node(self, trace):
        node = trace.root.chains.get(self.chain)
        if node is None:
            raise SelectionError(
                f"pgibbs: no top-level markov chain {'.'.join(map(str, self.chain))!r}; the "
                f"program's chains are {['.'.join(map(str, k)) for k in trace.root.chains]}"
            )
        if not node.uniform():
            raise SelectionError(
                f"pgibbs: the chain {fmt(self.chain)} has steps with different choices or "
                "nested nodes; particle Gibbs needs the same choices in every step"
            )
        return node

    def _step(self, trace, rng):
        node = self._node(trace)
        names = node.latent_sites()
        cols = {k: node.sites[k].values.array() for k in names}
        refs = [{k: cols[k][t] for k in names} for t in range(node.T)]
        ref_states = list(node.states)
        n = self.particles
        driver = _Conditional(n, rng, self.chain, refs, ref_states, self.ancestor_sampling)

        def given(local):
            vl = trace.root.value_lp(local)
            if vl is None:
                raise ModelError(f"pgibbs: the trace has no value at {fmt(local)}")
            return vl[0]

        run_particles(trace, rng, n, given, driver)
        k = int(rng.choice(n, p=resampling.normalize(driver.log_w)))
        paths = driver.paths()
        self._write(trace, rng, {k2: paths[".".join(map(str, self.chain + k2))][k]
                                 for k2 in names})
        st = self.stats
        st.proposed += 1
        st.accepted += 1
        st.count("particles", n)
        st.count("generations", node.T)
        st.count("resampling_events", sum(driver.resampled))
        if self.ancestor_sampling:
            st.count("reference_ancestor_changes", driver.ancestor_changes)
        st.chain_steps += n * node.T
        return trace

    def _write(self, trace, rng, path: dict) -> None:
        """Set the chain's choices to ``path`` (site → (T, ...)) by one execution."""
        targets, plan = {}, Plan()
        for k, values in path.items():
            for t, v in enumerate(values):
                v = np.asarray(v)
                targets[self.chain + (t,) + k] = v.item() if v.ndim == 0 else v
                plan.add_step(self.chain, t)
        run = self.execute(trace, rng, targets=targets, plan=plan)
        if run.aborted is not None:  # cannot happen for a trajectory the particles drew
            raise ModelError(f"pgibbs: the drawn trajectory has probability zero: {run.aborted}")
        run.commit()


def pgibbs(chain, particles: int = 10, ancestor_sampling: bool = True,
           resample: str = "multinomial") -> PGibbs:
    """Particle Gibbs on the top-level markov chain ``chain`` (003): PGAS by default,
    iterated conditional SMC with ``ancestor_sampling=False``.  Always accepts; compose with
    other kernels for the parameters (``th.cycle([th.pgibbs("x", 10), th.mh("q", ...)])``).

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


__all__ = ["PGibbs", "pgibbs"]
