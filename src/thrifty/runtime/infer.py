"""``th.infer``: run MCMC chains and collect their draws."""

from __future__ import annotations

import copy

import numpy as np

from thrifty.core.model import as_program
from thrifty.core.simulate import initialize
from thrifty.runtime.result import Result, stack_draws


def infer(
    program,
    kernel,
    num_samples: int,
    burn_in: int = 0,
    thin: int = 1,
    chains: int = 1,
    seed=None,
    init: dict | None = None,
    progress: bool = True,
) -> Result:
    """Run ``chains`` MCMC chains of ``kernel`` on ``program`` (sequential first version)."""
    program = as_program(program)
    seeds = np.random.SeedSequence(seed).spawn(chains)
    per_chain, outputs, kstats = [], [], {}
    for c in range(chains):
        rng = np.random.default_rng(seeds[c])
        k = copy.deepcopy(kernel)
        trace = initialize(program, rng, init)
        draws, outs = [], []
        for it in range(burn_in + num_samples * thin):
            trace = k.step(trace, rng)
            if it >= burn_in and (it - burn_in + 1) % thin == 0:
                draws.append(trace.values())
                outs.append(trace.output)
        per_chain.append(draws)
        outputs.append(outs)
        for label, kk in k.kernels():
            kstats.setdefault(label, []).append(kk.stats.as_dict())
    return Result(stack_draws(per_chain), outputs, kstats, program=program)
