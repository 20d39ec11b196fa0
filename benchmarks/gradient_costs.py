"""What a gradient kernel costs through ``th.infer``: compilation and seconds per transition.

* ``chain_states`` — NUTS on a, q and the T states of the linear-Gaussian SSM of
  ``nuts_numpyro.py`` (the block the default kernel assigns), T = 20, 50, 100: the wall time
  of a first call with a new program (10 + 10 transitions: compilation, set-up), and seconds
  per transition of a second call of the same program (1,000 + 1,000 transitions, the
  compiled loop reused);
* ``eight_schools`` — the same two numbers for eight schools (NUTS alone: up to 64
  transitions per compiled call), and both again with LLVM's optimisations forced on
  (``CHEAP_FLOPS`` / ``MANY_OPS`` set so that no density counts as cheap), in 3 interleaved
  rounds after the chain-state runs have warmed JAX up (medians): what compiling the loop
  without them saves and costs;
* ``in_a_cycle`` — NUTS on mu in ``th.cycle([th.nuts("mu"), th.gibbs("data.z")])`` (a
  mixture, 5 points), seconds per NUTS step from ``result.stats`` (one compiled call and one
  program run writing the trace per step).

Run: ``cd benchmarks && ../.venv/bin/python gradient_costs.py``.  Writes
``results/gradient_costs.json``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import thrifty as th
import thrifty.inference.gradient.hmc as hmc
from _common import write
from nuts_numpyro import S8, Y8, schools, ssm, ssm_data
from thrifty import dist

ROUNDS = 3


@th.model
def mixture(y):
    mu = th.sample("mu", dist.Normal(0.0, 3.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.5))
        th.observe("y", dist.Normal(mu * z, 1.0), y[i])


def first_and_per_transition(make, sel) -> dict:
    prog = make()
    t0 = time.perf_counter()
    th.infer(prog, th.nuts(sel), num_samples=10, burn_in=10, seed=0, progress=False)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    th.infer(prog, th.nuts(sel), num_samples=1000, burn_in=1000, seed=1, progress=False)
    return {"first_call_seconds": first,
            "seconds_per_transition": (time.perf_counter() - t0) / 2000}


def main() -> None:
    out: dict = {"chain_states": {}}
    for T in (20, 50, 100):
        y = ssm_data(T=T)
        out["chain_states"][f"T{T}"] = first_and_per_transition(lambda y=y: ssm(y),
                                                                ["a", "q", "s.x"])
        print("chain states", T, out["chain_states"][f"T{T}"], flush=True)
    sel = ["mu", "tau", "school.eta"]
    rounds: dict = {"without_llvm_optimisations": [], "with_llvm_optimisations": []}
    saved = hmc.CHEAP_FLOPS, hmc.MANY_OPS
    for _ in range(ROUNDS):  # (interleaved; the first call of the process warms JAX up above)
        rounds["without_llvm_optimisations"].append(
            first_and_per_transition(lambda: schools(Y8, S8), sel))
        hmc.CHEAP_FLOPS, hmc.MANY_OPS = -1, 10**12  # (every density with LLVM's passes)
        try:
            rounds["with_llvm_optimisations"].append(
                first_and_per_transition(lambda: schools(Y8, S8), sel))
        finally:
            hmc.CHEAP_FLOPS, hmc.MANY_OPS = saved
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in rounds.items()}
    cheap, full = med["without_llvm_optimisations"], med["with_llvm_optimisations"]
    out["eight_schools"] = {
        "rounds": rounds, "median": med,
        "first_call_saved_seconds": full["first_call_seconds"] - cheap["first_call_seconds"],
        "per_transition_added_seconds": (cheap["seconds_per_transition"]
                                         - full["seconds_per_transition"])}
    print("eight schools", out["eight_schools"], flush=True)
    prog = mixture(np.array([2.8, 3.1, -0.2, 0.4, 2.5]))
    kernel = th.cycle([th.nuts("mu"), th.gibbs("data.z")])
    th.infer(prog, kernel, num_samples=10, burn_in=10, seed=0, progress=False)  # (compiles)
    r = th.infer(prog, kernel, num_samples=2000, burn_in=500, seed=1, progress=False)
    out["in_a_cycle"] = {"nuts_seconds_per_step": r.stats["nuts('mu')"]["seconds_per_step"]}
    print("in a cycle", out["in_a_cycle"], flush=True)
    write("gradient_costs", out)


if __name__ == "__main__":
    main()
