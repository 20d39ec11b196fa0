"""How far plain ``subsampled_mh`` at its defaults is from the exact posterior (paper 004 §3).

The sequential test decides with error ε; a decision it settles wrongly moves the chain where
exact MH would not, and the posterior it samples is wider than the exact one.  This measures
that width where the answer is known: the mean of normal data (y_i ~ N(μ, 1), μ ~ N(0, 2²),
N = 2·10⁵, one data set), whose posterior is N(Σy / (N + ¼), 1 / (N + ¼)).  For each kernel,
``chains`` independent chains through ``th.infer`` with default arguments (the default burn-in,
default recording), ``draws`` draws each, seeds 0, 1, …:

* ``exact``: ``th.mh("mu", th.drift())`` (the adapted random walk);
* ``subsampled``: ``th.subsampled_mh("mu")`` (ε = 0.01, the adaptive budget of
  ``subsampled.Budget``, its probes decided by exact MH);
* ``subsampled_eps_0.001``: the same at ε = 0.001.

Reported per kernel: the mean over chains of (chain sd / posterior sd) with its standard error,
the sd of all draws pooled (in posterior sds), and the z of each chain's mean against the
posterior mean with an ESS-based standard error (mean, sd, largest |z|).

Writes ``benchmarks/results/subsampled_accuracy.json`` (``_quick.json`` with ``--quick``).
Run: ``python benchmarks/subsampled_accuracy.py`` (``--quick``: 4 chains of 500 draws).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

import thrifty as th
from _common import write
from plain_vs_exact import normal_mean  # (μ ~ N(0, 2²), y_i ~ N(μ, 1))
from thrifty.diagnostics._arviz import ess

N = 200_000


KERNELS = {
    "exact": lambda: th.mh("mu", th.drift()),
    "subsampled": lambda: th.subsampled_mh("mu"),
    "subsampled_eps_0.001": lambda: th.subsampled_mh("mu", epsilon=0.001),
}


def chains_of(make, y, chains: int, draws: int) -> dict:
    prec = len(y) + 0.25
    mean, sd = float(y.sum()) / prec, prec ** -0.5
    ratios, zs, pooled = [], [], []
    t0 = time.perf_counter()
    for seed in range(chains):
        k = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (convergence warnings of short chains)
            r = th.infer(normal_mean(y), k, num_samples=draws, seed=seed, progress=False)
        x = np.asarray(r["mu"]).ravel()
        ratios.append(float(x.std() / sd))
        zs.append(float((x.mean() - mean) / (x.std() / math.sqrt(ess(x)))))
        pooled.append((x - mean) / sd)
    ratios, zs = np.array(ratios), np.array(zs)
    return {
        "sd_ratio_mean": float(ratios.mean()),
        "sd_ratio_se": float(ratios.std(ddof=1) / math.sqrt(len(ratios))),
        "sd_ratios": ratios.tolist(),
        "pooled_sd": float(np.concatenate(pooled).std()),
        "z_mean": float(zs.mean()),
        "z_sd": float(zs.std(ddof=1)),
        "z_max_abs": float(np.abs(zs).max()),
        "seconds": time.perf_counter() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 chains of 500 draws")
    args = ap.parse_args()
    chains, draws = (4, 500) if args.quick else (20, 2000)
    y = np.random.default_rng(12345).normal(0.7, 1.0, N)
    t0 = time.perf_counter()
    out = {}
    for name, make in KERNELS.items():
        out[name] = res = chains_of(make, y, chains, draws)
        print(f"{name:22s} sd ratio {res['sd_ratio_mean']:.3f} ± {res['sd_ratio_se']:.3f}, "
              f"pooled sd {res['pooled_sd']:.3f}, z mean {res['z_mean']:+.2f} sd "
              f"{res['z_sd']:.2f} max |z| {res['z_max_abs']:.2f}  ({res['seconds']:.0f} s)",
              flush=True)
    path = write("subsampled_accuracy_quick" if args.quick else "subsampled_accuracy", {
        "settings": {"N": N, "chains": chains, "draws": draws, "data": "normal(0.7, 1), seed 12345",
                     "model": "mu ~ N(0, 2^2), y_i ~ N(mu, 1)", "quick": args.quick},
        "kernels": out,
        "wall_seconds": time.perf_counter() - t0,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
