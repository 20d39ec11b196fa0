"""Sequential Monte Carlo over a program's markov chains (paper 003 §3): ``th.smc``.

Generations are the steps of the program's ``th.markov`` chains.  N particles run as one batch
(:mod:`thrifty.core.particles`): ``step(t, prev)`` is called once per t on the array of the N
particles' states, each particle's new choices drawn from the prior (the bootstrap proposal),
and its weight multiplied by the likelihood of the step's observations.  Between steps the
particles are resampled when the effective sample size falls below ``ess_threshold · N``.  The
evidence estimate is the product over generations of the weighted mean incremental weight,

    Ẑ = ∏_t Σ_i W_{t−1}^i · w_t^i,      W_{t−1} the normalised weights before step t,

unbiased for p(y) (Del Moral 2004); ``log_evidence`` is log Ẑ.  One sweep costs O(N·T) array
work.  Observations outside the chains weigh the particles at the next generation boundary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from thrifty import _context
from thrifty.core.address import as_name, fmt
from thrifty.core.model import as_program
from thrifty.core.particles import ParticleFrame, StepFrame, per_particle, take
from thrifty.core.run import Run
from thrifty.core.trace import Trace
from thrifty.core.vocab import DETERMINISTIC, LATENT, ZeroProbability, chain_length
from thrifty.errors import ModelError, NumericalError
from thrifty.inference import resampling
from thrifty.inference.smc_replay import smc_replay


class _NotBatchable(Exception):
    """A latent choice outside the chains with no given value: not a batched particle run."""


class NoParticleLeft(NumericalError):
    """Every particle has weight zero: the evidence estimate is 0."""


class _Generations:
    """The driver of a particle run: weighs, resamples and remembers the generations."""

    def __init__(self, n, resample, ess_threshold, rng):
        self.n, self.rng = n, rng
        self.resample = resampling.scheme(resample)
        self.threshold = float(ess_threshold)
        self.log_w = np.zeros(n)  # since the last resampling
        self.log_z = 0.0
        self.ess: list[float] = []
        self.resampled: list[bool] = []
        # per generation: (chain address, t, {site: values (n, ...)}) and the ancestors that
        # the NEXT generation's particles were drawn from (None: no resampling)
        self.sites: list[tuple] = []
        self.ancestors: list[np.ndarray | None] = []

    def weigh(self, frame: ParticleFrame, addr) -> None:
        inc = frame.obs_lp
        frame.obs_lp = frame.lat_lp = None
        if inc is None:
            return
        if np.isnan(inc).any():
            raise NumericalError(f"a particle's log-weight is NaN at {fmt(addr)}")
        new = self.log_w + inc
        top = resampling.log_sum_exp(new)
        if not top > -np.inf:
            raise NoParticleLeft(
                f"every particle has probability zero after {fmt(addr)}: the observations "
                "cannot be explained by any particle (more particles, or check the model)"
            )
        self.log_z += top - resampling.log_sum_exp(self.log_w)
        self.log_w = new

    def maybe_resample(self, allowed: bool) -> np.ndarray | None:
        """Record the ESS of this generation; resample if it is below the threshold (and
        ``allowed``: not after the last step of a chain)."""
        w = resampling.normalize(self.log_w)
        ess = resampling.ess(w)
        self.ess.append(ess)
        if allowed and ess < self.threshold * self.n:
            self.resampled.append(True)
            self.log_w = np.zeros(self.n)
            return self.resample(w, self.n, self.rng)
        self.resampled.append(False)
        return None

    def chain(self, frame: ParticleFrame, local, step, length, init, args):
        run, n = frame.run, self.n
        T = chain_length(local, length, step)
        self.weigh(frame, local)  # observations before the chain
        prev = per_particle(init, n)
        states = []
        for t in range(T):
            sf = StepFrame(run, frame, local + (t,))
            run.frame = sf
            try:
                state = step(t, prev, *args)
            finally:
                run.frame = frame
            self.weigh(frame, local + (t,))
            self.sites.append((local, t, {k: s.values for k, s in sf.new.items()
                                          if s.kind in (LATENT, DETERMINISTIC)}))
            states.append(state)
            a = self.maybe_resample(t < T - 1)
            self.ancestors.append(a)
            prev = state if a is None else take(state, a, n)
        return self._lineage(states)

    def _lineage(self, states: list) -> list:
        """The chain's states along each current particle's ancestry."""
        n, out = self.n, [None] * len(states)
        idx = np.arange(n)
        k = len(self.ancestors)
        for t in range(len(states) - 1, -1, -1):
            k -= 1
            a = self.ancestors[k]
            if a is not None and t < len(states) - 1:
                idx = a[idx]
            out[t] = take(states[t], idx, n)
        return out

    def trajectory(self, k: int) -> dict:
        """address → value of every chain choice along the ancestry of final particle ``k``
        (values as one trajectory's execution holds them: Python scalars, arrays)."""
        out, i = {}, k
        for g in range(len(self.sites) - 1, -1, -1):
            a = self.ancestors[g]
            if a is not None:
                i = int(a[i])
            chain, t, vals = self.sites[g]
            for local, v in vals.items():
                v = np.asarray(v)[i] if np.ndim(v) else v
                v = np.asarray(v)
                out[chain + (t,) + local] = v.item() if v.ndim == 0 else v.copy()
        return out

    def paths(self) -> dict:
        """Every generation's site values along each final particle's ancestry, stacked over
        the steps of each chain: ``name → (n, T, ...)``."""
        n, idx = self.n, np.arange(self.n)
        per_step: list = [None] * len(self.sites)
        for g in range(len(self.sites) - 1, -1, -1):
            a = self.ancestors[g]
            if a is not None:
                idx = a[idx]
            chain, t, vals = self.sites[g]
            per_step[g] = (chain, t, {k: take(v, idx, n) for k, v in vals.items()})
        by_name: dict = {}
        for chain, t, vals in per_step:
            for k, v in vals.items():
                by_name.setdefault(".".join(str(p) for p in chain + k), []).append((t, v))
        out = {}
        for name, items in by_name.items():
            steps = [t for t, _ in items]
            if steps == list(range(len(steps))) and all(
                np.shape(v) == np.shape(items[0][1]) for _, v in items
            ):
                out[name] = np.stack([np.asarray(v) for _, v in items], axis=1)
            else:  # a site present in some steps only: one entry per step
                for t, v in items:
                    out[name.replace(".", f".{t}.", 1) if "." in name else f"{name}.{t}"] = v
        return out


def run_particles(trace, rng, n: int, given, driver) -> ParticleFrame:
    """Execute ``trace``'s program once over ``n`` particles (its chains generation by
    generation through ``driver``); returns the root frame (``shared_lp``: the given choices)."""
    run = Run(trace, rng)
    frame = ParticleFrame(run, n, given, driver)
    run.frame = frame
    program = trace.program
    _context.RUNS.append(run)
    try:
        program.fn(*program.args, **program.kwargs)
    finally:
        _context.RUNS.pop()
        run.frame = None
    driver.weigh(frame, ("<end>",))  # observations after the last chain
    return frame


@dataclass
class SMCResult:
    """Weighted particles from :func:`smc`.

    ``values[name]`` is ``(particles, T, ...)`` for a site of a chain (the particles' whole
    trajectories, along their ancestry); ``weights`` are normalised; ``log_evidence`` is log Ẑ;
    ``ess[g]`` and ``resampled[g]`` per generation (after weighing).
    """

    values: dict
    log_weights: np.ndarray
    log_evidence: float
    ess: np.ndarray
    resampled: np.ndarray
    seconds: float
    stats: dict = field(default_factory=dict)

    @property
    def weights(self) -> np.ndarray:
        return resampling.normalize(self.log_weights)

    @property
    def particles(self) -> int:
        return len(self.log_weights)

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            raise KeyError(f"no site {name!r}; the sites are {sorted(self.values)}") from None

    def mean(self, name: str) -> np.ndarray:
        """The weighted mean of ``name`` over the particles."""
        return np.tensordot(self.weights, np.asarray(self[name], dtype=float), axes=1)


def smc(
    program,
    particles: int = 100,
    resample: str = "systematic",
    ess_threshold: float = 0.5,
    fixed: dict | None = None,
    seed=None,
) -> SMCResult:
    """Sequential Monte Carlo over the program's ``th.markov`` chains, with the evidence.

    ``particles`` particles run as one batch: the chain's ``step(t, prev)`` receives the array of
    the particles' states (leading axis of length ``particles``; ``init`` is broadcast) and must
    work on it as plate bodies do (parameters with a leading particle axis).  ``resample`` is
    ``"systematic"`` (default), ``"stratified"``, ``"residual"`` or ``"multinomial"``;
    resampling happens when the ESS is below ``ess_threshold · particles`` (1.0: every step).
    Latent choices outside the chains must be given in ``fixed`` (address → value).

    A program without ``th.markov`` chains (recursion, stochastic branching: 003 §4) runs on the
    general path: a generation per top-level observation, each particle replaying its choices
    from the start — O(N·K²) site executions for K observations, with a
    :class:`~thrifty.inference.smc_replay.ReplayWarning` saying so.

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models.lds import lds, generate_lds
    >>> y, C, _ = generate_lds(T=20, D=2, r=0.5, seed=0)
    >>> res = th.smc(lds(y, C, 0.5, omega=4 * np.pi / 20, q=0.1), particles=200, seed=0)
    >>> res["x.z"].shape, bool(np.isfinite(res.log_evidence))
    ((200, 20, 2), True)
    """
    if not isinstance(particles, (int, np.integer)) or particles < 1:
        raise ValueError(f"particles must be a positive int, got {particles!r}")
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must be in [0, 1], got {ess_threshold!r}")
    program = as_program(program)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    given_values = {as_name(k): v for k, v in (fixed or {}).items()}

    def given(local):
        if local not in given_values:
            raise _NotBatchable  # a choice outside any chain: the general path
        return given_values[local]

    t0 = time.perf_counter()
    driver = _Generations(int(particles), resample, ess_threshold, rng)
    try:
        run_particles(Trace(program), rng, int(particles), given, driver)
    except ZeroProbability as e:
        raise ModelError(f"th.smc: the fixed value {e.value!r} of {fmt(e.addr)} has "
                         f"probability zero under {e.dist!r}") from None
    except _NotBatchable:
        driver.sites = []
    if not driver.sites:  # no chain: a generation per top-level observation
        if fixed:
            raise ModelError("th.smc: fixed= applies to programs with th.markov chains")
        return smc_replay(program, int(particles), resample, ess_threshold, rng)
    seconds = time.perf_counter() - t0
    return SMCResult(
        values=driver.paths(),
        log_weights=driver.log_w,
        log_evidence=float(driver.log_z),
        ess=np.array(driver.ess),
        resampled=np.array(driver.resampled),
        seconds=seconds,
        stats={
            "particles": int(particles),
            "generations": len(driver.sites),
            "resampling_events": int(sum(driver.resampled)),
            "seconds": seconds,
        },
    )


__all__ = ["NoParticleLeft", "SMCResult", "smc"]
