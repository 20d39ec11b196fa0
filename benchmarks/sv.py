"""Stochastic volatility (paper 000 §4.3): particle Gibbs with exact vs subsampled MH.

Model and data: ``thrifty.models.sv`` on ``generate_sv(B=200, T=5, φ=0.95, σ=0.1, seed=0)`` —
200 series of length 5, as in 000.  Inference program, through ``th.infer`` with default
recording:

    th.cycle([th.pgibbs("series.h", 10),          # PGAS on every series' states (one batch)
              K("phi", th.drift(0.02)),
              K("sigma2", th.drift(0.002))])

with K = ``th.mh`` (exact), ``th.subsampled_mh(batch_size=20, epsilon=1e-3)`` (000's ε; the
local sections are the 200 series — each a chain of 5 steps — not the individual steps, since
thrifty's sections of a global choice are the plate elements that read it) — whose default
``max_fraction`` (1/32: at most 7 of the 200 series, under one minibatch) makes every decision
exact MH's — or the same with ``max_fraction=1`` (the sequential test alone, 000's algorithm:
"test_alone").  000 gave the
states 10× the computation of the parameters; here one PGAS sweep of all 200 series costs
about 5× one exact MH step on φ, so the cycle is already dominated by the states.

Measured: ESS per second of φ and σ² (``arviz.ess`` over ``draws`` draws after ``burn_in``,
seconds = chain seconds of the run), alternating the two programs over ``rounds`` seeds;
reported: the medians and the ratio subsampled / exact (000 reports ≈ 2 for subsampled MH).
Also the posterior means of both (subsampled MH is approximate).

Run: ``python benchmarks/sv.py`` (≈ 3 min; ``--quick`` for a smoke test).  Writes
``benchmarks/results/sv.json`` and ``sv.png``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import thrifty as th
from _common import write
from thrifty.diagnostics._arviz import ess as az_ess
from thrifty.models import generate_sv, sv


def program(kind: str):
    if kind == "exact":
        def k(name, scale):
            return th.mh(name, th.drift(scale))
    else:
        fraction = 1.0 if kind == "test_alone" else None

        def k(name, scale):
            kw = {} if fraction is None else {"max_fraction": fraction}
            return th.subsampled_mh(name, batch_size=20, epsilon=1e-3, proposal=th.drift(scale),
                                    **kw)
    return th.cycle([th.pgibbs("series.h", 10), k("phi", 0.02), k("sigma2", 0.002)])


def run(kind: str, x, draws: int, burn_in: int, seed: int) -> dict:
    t0 = time.perf_counter()
    r = th.infer(sv(x), program(kind), num_samples=draws, burn_in=burn_in, seed=seed,
                 progress=False)
    wall = time.perf_counter() - t0
    secs = r.stats["run"]["chain_seconds"][0]
    out = {"seconds": secs, "wall_seconds": wall}
    for name in ("phi", "sigma2"):
        v = r[name][0]
        ess = az_ess(v[None])
        out[name] = {"mean": float(v.mean()), "sd": float(v.std()), "ess": ess,
                     "ess_per_second": ess / secs}
    labels = {k: v for k, v in r.stats.items() if k not in ("run",) and not k.startswith("cycle")}
    out["kernels"] = {k: {m: v[m] for m in ("seconds_per_step", "acceptance_rate") if m in v}
                      for k, v in labels.items()}
    return out


def main(quick: bool = False) -> dict:
    draws, burn_in, rounds = (300, 50, 1) if quick else (3000, 300, 3)
    x = generate_sv(B=200, T=5, seed=0)
    runs: dict = {"exact": [], "subsampled": [], "test_alone": []}
    for k in range(rounds):
        for kind in runs:
            runs[kind].append(run(kind, x, draws, burn_in, seed=k))
            r = runs[kind][-1]
            print(f"round {k} {kind:10}: {r['seconds']:6.1f} s, ESS/s φ "
                  f"{r['phi']['ess_per_second']:7.1f}"
                  f", σ² {r['sigma2']['ess_per_second']:7.1f}; means φ {r['phi']['mean']:.3f}"
                  f", σ² {r['sigma2']['mean']:.4f}")
    med = {kind: {name: statistics.median(r[name]["ess_per_second"] for r in rs)
                  for name in ("phi", "sigma2")} for kind, rs in runs.items()}
    ratio = {name: med["subsampled"][name] / med["exact"][name] for name in ("phi", "sigma2")}
    ratio_alone = {name: med["test_alone"][name] / med["exact"][name]
                   for name in ("phi", "sigma2")}
    for kind in runs:
        print(f"median ESS/s {kind}: φ {med[kind]['phi']:.1f}, σ² {med[kind]['sigma2']:.1f}")
    print(f"ratio subsampled / exact: φ {ratio['phi']:.2f}, σ² {ratio['sigma2']:.2f}; test alone "
          f"/ exact: φ {ratio_alone['phi']:.2f}, σ² {ratio_alone['sigma2']:.2f} "
          "(000 reports ≈ 2)")
    data = {"settings": {"B": 200, "T": 5, "draws": draws, "burn_in": burn_in, "rounds": rounds,
                         "particles": 10, "batch_size": 20, "epsilon": 1e-3},
            "runs": runs, "median_ess_per_second": med, "ratio_subsampled_over_exact": ratio,
            "ratio_test_alone_over_exact": ratio_alone}
    if not quick:
        write("sv", data)
        _plot(runs)
    return data


def _plot(runs: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from _common import RESULTS

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, name, label in zip(axes, ("phi", "sigma2"), ("φ", "σ²")):
        vals = [[r[name]["ess_per_second"] for r in runs[k]] for k in runs]
        ax.boxplot(vals)
        ax.set_xticks([1, 2, 3], ["exact MH", "subsampled MH", "test alone"])
        ax.set_ylabel(f"ESS/s of {label}")
    fig.suptitle("Stochastic volatility, 200 series × 5 steps (paper 000 §4.3)")
    fig.tight_layout()
    fig.savefig(RESULTS / "sv.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    main(p.parse_args().quick)
