"""SMC for programs without markov chains: a generation per top-level observation (003 §3).

Programs with recursion and stochastic branching have no fixed sequence of steps to batch over.
Each particle is the list of its choices; generation k runs every particle's program from the
start, replaying its choices and drawing the new ones from their priors, until it has scored
its k-th observation (or factor) — that observation's likelihood is the particle's incremental
weight — then the particles are resampled when the ESS is low.  A particle whose program ends
before its k-th observation keeps its weight.  Cost: O(N·K²) site executions for K
observations (each generation replays the prefix); ``th.markov`` chains run as one batch per
step instead (:mod:`thrifty.inference.particles.smc`).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from thrifty._warn import user_stacklevel
from thrifty.core.engine import (
    replay_particle,
)
from thrifty.inference.numerics import resampling
from thrifty.inference.particles.generations import NoParticleLeft
from thrifty.inference.particles.smc_result import SMCResult


class ReplayWarning(UserWarning):
    """th.smc runs a program without markov chains by replaying prefixes (O(N·K²)).

    >>> import thrifty as th
    >>> issubclass(th.ReplayWarning, UserWarning)  # th.smc on a program without th.markov chains
    True
    """


def smc_replay(program, n: int, resample, ess_threshold: float, rng):

    t0 = time.perf_counter()
    scheme = resampling.scheme(resample)
    choices = [{} for _ in range(n)]
    extra = [{} for _ in range(n)]
    done = np.zeros(n, dtype=bool)
    log_w, log_z = np.zeros(n), 0.0
    ess, resampled = [], []
    sites = 0
    k = 0
    while not done.all():
        k += 1
        inc = np.zeros(n)
        for i in np.flatnonzero(~done):
            frame = replay_particle(program, rng, choices[i], k)
            if frame.paused:
                inc[i] = frame.inc
            else:
                done[i] = True  # ended before its k-th observation: weight unchanged
            choices[i], extra[i] = frame.choices, frame.extra
            sites += frame.sites
        new = log_w + inc
        top = resampling.log_sum_exp(new)
        if not top > -np.inf:
            raise NoParticleLeft(
                f"every particle has probability zero at observation {k}: no particle "
                "explains the data (more particles, or check the model)"
            )
        log_z += top - resampling.log_sum_exp(log_w)
        log_w = new
        w = resampling.normalize(log_w)
        ess.append(resampling.ess(w))
        if not done.all() and ess[-1] < ess_threshold * n:
            a = scheme(w, n, rng)
            choices = [choices[j] for j in a]
            extra = [extra[j] for j in a]
            done = done[a]
            log_w = np.zeros(n)
            resampled.append(True)
        else:
            resampled.append(False)
    warnings.warn(
        "th.smc: the program has no th.markov chain; each top-level observation is a "
        "generation and every particle replays its choices from the start (O(N·K²) site "
        "executions for K observations) — write a sequence as th.markov for the batched path",
        ReplayWarning,
        stacklevel=user_stacklevel(),
    )
    seconds = time.perf_counter() - t0
    return SMCResult(
        values=_collect(choices, extra),
        log_weights=log_w,
        log_evidence=float(log_z),
        ess=np.array(ess),
        resampled=np.array(resampled),
        seconds=seconds,
        stats={
            "particles": n,
            "generations": k,
            "resampling_events": int(sum(resampled)),
            "site_executions": sites,
            "seconds": seconds,
        },
    )


def _collect(choices: list, extra: list) -> dict:
    """name → one entry per particle: a numeric array when every particle has a number there,
    else an object array (None where a particle has no such choice)."""
    names: dict = {}
    for per in (choices, extra):
        for c in per:
            for addr in c:
                names.setdefault(addr, None)
    out = {}
    for addr in names:
        vals = [c.get(addr, e.get(addr)) for c, e in zip(choices, extra)]
        name = ".".join(map(str, addr))
        if all(v is not None and np.ndim(v) == 0 and not isinstance(v, str) for v in vals):
            out[name] = np.array(vals)
        else:
            arr = np.empty(len(vals), dtype=object)
            for j, v in enumerate(vals):
                arr[j] = v
            out[name] = arr
    return out


__all__ = ["ReplayWarning", "smc_replay"]
