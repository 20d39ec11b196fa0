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

import difflib
import time

import numpy as np

from thrifty._args import checked_keywords, int_arg
from thrifty.core.address import as_name, as_pattern, dotted, fmt
from thrifty.core.engine import (
    RESAMPLE,
    Trace,
    ZeroProbability,
    as_program,
    propose,
    run_particles,
)
from thrifty.errors import ArgumentError, ModelError
from thrifty.inference.particles.generations import Generations, NoParticleLeft, check_outside
from thrifty.inference.particles.smc_replay import smc_replay
from thrifty.inference.particles.smc_result import SMCResult


class _NotBatchable(Exception):
    """A latent choice outside the chains with no given value: not a batched particle run."""


_NO_CHAIN = ("th.smc: fixed= applies to programs with th.markov chains; this program has none "
             "(its particles draw every choice from the prior): drop fixed=")


def _unknown_fixed(unknown: list, outside: list) -> str:
    names = ", ".join(repr(dotted(k)) for k in unknown)
    close = [m for k in unknown
             for m in difflib.get_close_matches(dotted(k), [dotted(a) for a in outside], 1)]
    hint = f" (did you mean {', '.join(repr(m) for m in close)}?)" if close else ""
    return (f"th.smc: fixed= names {names}, not a latent choice outside the chains of the "
            f"program{hint}; those are: {', '.join(repr(dotted(a)) for a in outside) or 'none'}")


def _check_fixed(program, given_values: dict) -> None:
    """``fixed=`` lacks a latent choice outside the chains: raise an error naming it (and the
    keys of ``fixed`` that name nothing), or saying that the program has no chain.  One probe
    run over a particle, the missing choices drawn from their priors."""
    seen: list = []

    def given(local):
        seen.append(local)
        return given_values.get(local, RESAMPLE)

    rng = np.random.default_rng(0)
    driver = Generations(1, "multinomial", 0.0, rng)
    try:
        run_particles(Trace(program), rng, 1, given, driver)
    except Exception:  # the probe got no further: report what it saw
        pass
    if not driver.sites:
        raise ModelError(_NO_CHAIN)
    missing = ", ".join(fmt(a) for a in seen if a not in given_values)
    unknown = [k for k in given_values if k not in seen]
    extra = f"; {_unknown_fixed(unknown, seen)[len('th.smc: '):]}" if unknown else ""
    raise ModelError(
        f"th.smc: fixed= gives no value for {missing}, a latent choice outside the chains: "
        f"fixed= must give every such choice (the particles hold the chains' choices only){extra}"
    )


def _check_one(program, driver, given_values: dict) -> None:
    """Execute the program once with the first particle's trajectory (a top-level chain) and
    the fixed values, and compare its observations outside the chain with the particle run's
    (:func:`~thrifty.inference.particles.generations.check_outside`); on a generator of its
    own: the particles' draws are unchanged.  O(T), one execution."""
    if driver.plate is not None or not driver.observed:
        return
    targets = dict(given_values)
    for (_, chain, t, site), v in driver.trajectories(np.zeros(1, dtype=np.int64)).items():
        x = np.asarray(v[0])
        targets[chain + (t,) + site] = x.item() if x.ndim == 0 else x.copy()
    run = propose(Trace(program), np.random.default_rng(0), targets=targets)
    if run.aborted is None:
        check_outside("th.smc", driver, run, 0)


@checked_keywords
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
    Latent choices outside the chains must be given in ``fixed`` (address → value); the
    evidence is then p(y | fixed values) (their own prior density is not in it).

    A program without ``th.markov`` chains (recursion, stochastic branching: 003 §4) runs on the
    general path: a generation per top-level observation, each particle replaying its choices
    from the start — O(N·K²) site executions for K observations, with a
    :class:`~thrifty.inference.particles.smc_replay.ReplayWarning` saying so.

    >>> import numpy as np, thrifty as th
    >>> from thrifty.models.lds import lds, generate_lds
    >>> y, C, _ = generate_lds(T=20, D=2, r=0.5, seed=0)
    >>> res = th.smc(lds(y, C, 0.5, omega=4 * np.pi / 20, q=0.1), particles=200, seed=0)
    >>> res["x.z"].shape, bool(np.isfinite(res.log_evidence))
    ((200, 20, 2), True)
    """
    particles = int_arg("smc", "particles", particles)
    if isinstance(ess_threshold, bool) or not 0.0 <= ess_threshold <= 1.0:
        raise ArgumentError(f"smc: ess_threshold must be in [0, 1], got {ess_threshold!r}")
    program = as_program(program)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    given_values = {as_pattern(k) if isinstance(k, str) else as_name(k): v
                    for k, v in (fixed or {}).items()}
    asked: list = []  # the latent choices outside the chains, in program order

    def given(local):
        asked.append(local)
        if local not in given_values:
            raise _NotBatchable  # a choice outside any chain: the general path
        return given_values[local]

    t0 = time.perf_counter()
    driver = Generations(int(particles), resample, ess_threshold, rng)
    try:
        run_particles(Trace(program), rng, int(particles), given, driver)
    except ZeroProbability as e:
        raise ModelError(f"th.smc: the fixed value {e.value!r} of {fmt(e.addr)} has "
                         f"probability zero under {e.dist!r}") from None
    except _NotBatchable:
        if fixed:
            _check_fixed(program, given_values)
        if driver.sites:  # a chain ran before the choice: no general path for this program
            raise ModelError(
                f"th.smc: the latent choice {fmt(asked[-1])} comes after a markov chain; "
                "particles hold the chains' choices only — give it with fixed={name: value} "
                "(or update it with th.pmmh / th.pgibbs inside th.infer)") from None
        driver.sites = []
    if not driver.sites:  # no chain: a generation per top-level observation
        if fixed:
            raise ModelError(_NO_CHAIN)
        return smc_replay(program, int(particles), resample, ess_threshold, rng)
    unknown = [k for k in given_values if k not in asked]
    if unknown:
        raise ModelError(_unknown_fixed(unknown, asked))
    _check_one(program, driver, given_values)
    seconds = time.perf_counter() - t0
    return SMCResult(
        values=driver.paths(),
        log_weights=driver.final_log_weights(),
        log_evidence=float(driver.log_z),
        ess=np.array(driver.ess),
        resampled=np.array(driver.resampled),
        seconds=seconds,
        stats={
            "particles": int(particles),
            "generations": len(driver.sites),
            "resampling_events": int(sum(driver.resampled)),
            "groups": driver.G,
            "seconds": seconds,
        },
    )


__all__ = ["NoParticleLeft", "SMCResult", "smc"]
