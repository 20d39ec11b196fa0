"""Parallel chains and BLAS threads: seconds per MH step of one chain, in worker processes.

Exact MH (``th.mh("w", th.drift(0.01))``) on ``logistic_regression`` with N = 10⁵ rows, d = 5
(one NumPy matrix-vector product per step), ``chains = cpu_count`` chains of ``steps`` steps:

* ``workers=1``: the chains one after the other in this process (the baseline);
* ``workers=cpu_count``, each worker's BLAS threads limited to its share of the cores (the
  default, ``thrifty.runtime.parallel.LIMIT_BLAS_THREADS``);
* the same without the limit: every worker's OpenBLAS starts one thread per core.

Reported: the kernel's seconds per step (``result.stats``) of each configuration over the
baseline, medians over ``rounds`` alternating rounds.  Writes
``benchmarks/results/parallel_chains.json``.  Run: ``python benchmarks/parallel_chains.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import thrifty as th
from _common import write
from thrifty.datasets import synthetic_logistic
from thrifty.models.logistic import logistic_regression
from thrifty.runtime import parallel


def per_step(prog, chains, workers, limit, steps) -> float:
    parallel.LIMIT_BLAS_THREADS = limit
    try:
        k = th.mh("w", th.drift(0.01))
        r = th.infer(prog, k, num_samples=steps, chains=chains, workers=workers, seed=0,
                     init={"w": np.ones(5)}, progress=False)  # fmt: skip
        return r.stats[k.label()]["seconds_per_step"]
    finally:
        parallel.LIMIT_BLAS_THREADS = True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="few steps (smoke run)")
    args = ap.parse_args()
    steps, rounds = (200, 1) if args.quick else (1500, 5)
    t0 = time.perf_counter()
    cpus = os.cpu_count() or 1
    X, y, _ = synthetic_logistic(100_000, 5, theta=1.0, seed=0)
    prog = logistic_regression(X, y)
    configs = {
        "sequential": (1, True),
        "parallel_limited": (cpus, True),
        "parallel_unlimited": (cpus, False),
    }
    times = {name: [] for name in configs}
    for _ in range(rounds):
        for name, (workers, limit) in configs.items():
            times[name].append(per_step(prog, cpus, workers, limit, steps))
    med = {name: statistics.median(v) for name, v in times.items()}
    ratios = {name: med[name] / med["sequential"] for name in configs}
    for name in configs:
        print(f"{name:20s} {med[name] * 1e3:7.3f} ms/step  ({ratios[name]:.2f}× sequential)")
    res = {
        "settings": {
            "N": 100_000, "d": 5, "chains": cpus, "steps": steps, "rounds": rounds,
            "quick": args.quick,
        },
        "seconds_per_step": med,
        "seconds_per_step_rounds": times,
        "ratio_over_sequential": ratios,
        "wall_seconds": time.perf_counter() - t0,
    }
    print("wrote", write("parallel_chains_quick" if args.quick else "parallel_chains", res))


if __name__ == "__main__":
    main()
