"""Approximate Gibbs on a dense binary MRF (paper 004 §6.3, Fig. 8).

D binary variables, one potential ψ_abc for every triple (``thrifty.models.mrf.dense_mrf``),
log ψ ~ N(0, 0.02).  Exact Gibbs (``th.gibbs("x")``) against approximate Gibbs with the
sequential test (``th.austerity_gibbs("x", batch_size, ε)``) for ε ∈ {0.01, 0.05, 0.1, 0.15,
0.2, 0.25}.  Error (004 Eq. 12): the L1 distance between the empirical joint distribution of 5
variables (from the samples drawn up to kernel time t, one sample per sweep over the D
variables) and the exact one, averaged over M random 5-subsets.

* Error vs time at D = 20 (1,140 potentials, 171 per variable): the exact joint distribution
  is computed by enumerating all 2²⁰ states, so the reference has no Monte Carlo error.  The
  paper's D = 100 (161,700 potentials, 4,851 per variable) would need a long exact-Gibbs run as
  the reference and hours of sampling here.  Batches of 20 keep the paper's ratio of batch to
  factors per variable (500 / 4,851 ≈ 0.10; 20 / 171 ≈ 0.12): a batch of 500 would exceed the
  171 factors and make every test exact.  Each method runs ``chains`` chains from the same
  seeded prior draws for a fixed budget of kernel time, the methods alternating.
* Cost per sweep at the paper's scale, D = 100 with batches of 500: seconds per sweep and
  factors evaluated per variable update (a few sweeps per method, no error curve).

Writes ``benchmarks/results/mrf_gibbs.json`` and ``.png``.
Run: ``python benchmarks/mrf_gibbs.py`` (``--quick``: D = 12, short chains, no D = 100 part).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import thrifty as th
from _common import RESULTS, write
from thrifty.core.simulate import initialize
from thrifty.models.mrf import dense_mrf, random_potentials

EPSILONS = (0.01, 0.05, 0.1, 0.15, 0.2, 0.25)
SUBSET = 5


def joint_distribution(D, triples, log_psi, chunk=8192) -> np.ndarray:
    """P(x) for all 2^D states; state s has x_i = bit (D − 1 − i) of s, so
    ``p.reshape([2] * D)`` has variable i on axis i."""
    shifts = np.arange(D)[::-1]
    logp = np.empty(2**D)
    rows = np.arange(len(triples))
    for a in range(0, 2**D, chunk):
        s = np.arange(a, min(a + chunk, 2**D))
        x = ((s[:, None] >> shifts) & 1).astype(np.int8)
        code = 4 * x[:, triples[:, 0]] + 2 * x[:, triples[:, 1]] + x[:, triples[:, 2]]
        logp[a : a + len(s)] = log_psi[rows, code].sum(axis=1)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def subset_marginals(p, D, subsets) -> np.ndarray:
    """(M, 32) exact joint of each sorted 5-subset; cell = Σ_k x_{s_k} 2^(4−k)."""
    P = p.reshape([2] * D)
    out = np.empty((len(subsets), 2**SUBSET))
    for m, s in enumerate(subsets):
        other = tuple(i for i in range(D) if i not in set(s.tolist()))
        out[m] = P.sum(axis=other).reshape(-1)
    return out


def state(trace, D) -> np.ndarray:
    values = trace.mems[("x",)].values
    return np.array([values[i] for i in range(D)], dtype=np.int8)


def run_chain(prog, kernel, D, budget, seed):
    rng = np.random.default_rng(seed)
    trace = initialize(prog, rng)
    times, xs = [], []
    spent = 0.0
    while spent < budget:
        t0 = time.perf_counter()
        kernel.step(trace, rng)
        spent += time.perf_counter() - t0
        times.append(spent)
        xs.append(state(trace, D))
    return np.array(times), np.array(xs), kernel.stats.as_dict()


def error_curve(runs, subsets, exact, grid) -> np.ndarray:
    """004 Eq. 12 at each time of ``grid``, averaged over chains."""
    weights = 2 ** np.arange(SUBSET)[::-1]
    total = np.zeros(len(grid))
    for times, xs in runs:
        codes = np.stack([xs[:, s] @ weights for s in subsets], axis=1)  # (samples, M)
        out = np.full(len(grid), np.nan)
        for g, n in enumerate(np.searchsorted(times, grid, side="right")):
            if n == 0:
                continue
            err = 0.0
            for m in range(len(subsets)):
                emp = np.bincount(codes[:n, m], minlength=2**SUBSET) / n
                err += np.abs(emp - exact[m]).sum()
            out[g] = err / len(subsets)
        total += out
    return total / len(runs)


def time_to(grid, curve, level):
    below = np.flatnonzero(curve <= level)
    return float(grid[below[0]]) if len(below) else math.nan


def error_vs_time(D, batch, chains, budget, n_subsets, seed=0) -> dict:
    t0 = time.perf_counter()
    triples, log_psi = random_potentials(D, seed=seed)
    prog = dense_mrf(D, triples, log_psi)
    p = joint_distribution(D, triples, log_psi)
    rng = np.random.default_rng(seed + 1)
    subsets = [np.sort(rng.choice(D, SUBSET, replace=False)) for _ in range(n_subsets)]
    exact = subset_marginals(p, D, subsets)
    P = p.reshape([2] * D)
    single = np.array([P.sum(axis=tuple(j for j in range(D) if j != i))[1] for i in range(D)])
    t_ref = time.perf_counter() - t0
    print(
        f"[D={D}] {len(triples):,} potentials, {(D - 1) * (D - 2) // 2} per variable; exact "
        f"joint by enumeration of 2^{D} states ({t_ref:.1f} s); batch {batch}",
        flush=True,
    )
    methods = [("exact", 0.0)] + [(f"eps={e:g}", e) for e in EPSILONS]
    runs = {name: [] for name, _ in methods}
    stats = {name: [] for name, _ in methods}
    for r in range(chains):
        order = methods if r % 2 == 0 else methods[::-1]
        for name, eps in order:
            k = th.gibbs("x") if name == "exact" else th.austerity_gibbs("x", batch, eps)
            times, xs, st = run_chain(prog, k, D, budget, seed + 10 + r)
            runs[name].append((times, xs))
            stats[name].append(st)
    grid = np.geomspace(budget / 300, budget, 50)
    curves = {name: error_curve(runs[name], subsets, exact, grid) for name, _ in methods}
    finals = {name: float(c[-1]) for name, c in curves.items()}
    level = max(finals.values())
    rows = {}
    for name, eps in methods:
        xs = np.concatenate([x for _, x in runs[name]])
        sweeps = [len(t) for t, _ in runs[name]]
        st = stats[name]
        rows[name] = {
            "epsilon": eps,
            "sweeps_per_chain": sweeps,
            "seconds_per_sweep": float(np.mean([budget / s for s in sweeps])),
            "factors_per_update": float(
                np.mean([s.get("sections_per_step", 0.0) for s in st]) / D
                if name != "exact"
                else (D - 1) * (D - 2) / 2
            ),
            "flip_rate": float(np.mean([s["acceptance_rate"] for s in st]))
            if name != "exact"
            else float(np.mean(np.abs(np.diff(xs.astype(int), axis=0)).sum(axis=1)) / D),
            "final_error": finals[name],
            "time_to_level": time_to(grid, curves[name], level),
            "max_single_marginal_error": float(np.max(np.abs(xs.mean(axis=0) - single))),
        }
    for name in rows:
        rows[name]["time_ratio_exact_over_this"] = (
            rows["exact"]["time_to_level"] / rows[name]["time_to_level"]
        )
    print(
        "  method     sweeps/chain  ms/sweep  factors/update  flips   final error  "
        "t(e*) s  exact/this  max |P(x_i=1) err|"
    )
    for name, row in rows.items():
        print(
            f"  {name:<10} {np.mean(row['sweeps_per_chain']):>12.0f} "
            f"{row['seconds_per_sweep'] * 1e3:9.2f} {row['factors_per_update']:15.1f} "
            f"{row['flip_rate']:6.3f}   {row['final_error']:.4f}     {row['time_to_level']:6.2f}"
            f"  {row['time_ratio_exact_over_this']:10.2f}  {row['max_single_marginal_error']:.4f}"
        )
    print(f"  e* = {level:.4f} (the largest final error: every method reaches it)", flush=True)
    return {
        "D": D,
        "potentials": len(triples),
        "factors_per_variable": (D - 1) * (D - 2) // 2,
        "batch_size": batch,
        "chains": chains,
        "budget_seconds": budget,
        "subsets": n_subsets,
        "reference": "exact enumeration of all 2^D states",
        "grid_seconds": grid.tolist(),
        "curves": {name: c.tolist() for name, c in curves.items()},
        "error_level": level,
        "error_level_rule": "largest final error over the methods",
        "by_method": rows,
        "wall_seconds": time.perf_counter() - t0,
    }


def cost_per_sweep(D, batch, sweeps, seed=0, model=dense_mrf) -> dict:
    """Seconds per sweep and factors per update at the paper's scale (no error curve)."""
    t0 = time.perf_counter()
    triples, log_psi = random_potentials(D, seed=seed)
    prog = model(D, triples, log_psi)
    rng = np.random.default_rng(seed)
    trace = initialize(prog, rng)
    th.gibbs("x").step(trace, rng)  # warm-up sweep
    out = {}
    print(
        f"[D={D}] cost per sweep ({model.__name__}), {len(triples):,} potentials, batch {batch}:",
        flush=True,
    )
    for name, eps in [("exact", 0.0)] + [(f"eps={e:g}", e) for e in EPSILONS]:
        k = th.gibbs("x") if name == "exact" else th.austerity_gibbs("x", batch, eps)
        per = []
        for _ in range(sweeps):
            t1 = time.perf_counter()
            k.step(trace, rng)
            per.append(time.perf_counter() - t1)
        st = k.stats.as_dict()
        out[name] = {
            "seconds_per_sweep": float(np.median(per)),
            "seconds_per_sweep_all": per,
            "factors_per_update": st.get("sections_per_step", (D - 1) * (D - 2) / 2 * D) / D,
            "runs_per_update": st["runs_per_step"] / D,
        }
        print(
            f"  {name:<10} {out[name]['seconds_per_sweep']:7.2f} s/sweep  "
            f"{out[name]['factors_per_update']:7.0f} factors/update  "
            f"{out[name]['runs_per_update']:5.1f} executions/update",
            flush=True,
        )
    for name in out:
        out[name]["speedup_over_exact"] = (
            out["exact"]["seconds_per_sweep"] / out[name]["seconds_per_sweep"]
        )
    return {
        "D": D,
        "model": model.__name__,
        "potentials": len(triples),
        "batch_size": batch,
        "sweeps": sweeps,
        "by_method": out,
        "wall_seconds": time.perf_counter() - t0,
    }


def plot(res, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ev = res["error_vs_time"]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    a = ax[0]
    for name, curve in ev["curves"].items():
        row = ev["by_method"][name]
        style = "k-" if name == "exact" else "-"
        label = ("exact Gibbs" if name == "exact" else name.replace("eps", "ε")) + (
            f", T={int(np.mean(row['sweeps_per_chain']))}"
        )
        a.loglog(ev["grid_seconds"], curve, style, label=label)
    a.set_xlabel("kernel time (s)")
    a.set_ylabel("mean L1 error, 5-variable marginals")
    a.set_title(
        f"D={ev['D']} ({ev['potentials']:,} potentials), batch {ev['batch_size']}, "
        "exact reference (004 Fig. 8)",
        fontsize=9,
    )
    a.legend(fontsize=7)
    a = ax[1]
    if "cost_at_paper_scale" in res:
        c = res["cost_at_paper_scale"]
        names = list(c["by_method"])
        vals = [c["by_method"][n]["seconds_per_sweep"] for n in names]
        pos = np.arange(len(names))
        a.bar(pos, vals, width=0.6, color="C0")
        a.set_xticks(range(len(names)))
        a.set_xticklabels([n.replace("eps", "ε") for n in names], rotation=30, fontsize=8)
        a.set_ylabel("seconds per sweep")
        a.set_title(
            f"cost per sweep at D={c['D']} ({c['potentials']:,} potentials), batch "
            f"{c['batch_size']}",
            fontsize=9,
        )
    else:
        a.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="D = 12, short chains (smoke run)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.quick:
        ev = error_vs_time(D=12, batch=6, chains=1, budget=1.5, n_subsets=50)
        cost = None
    else:
        ev = error_vs_time(D=20, batch=20, chains=2, budget=20.0, n_subsets=200)
        cost = cost_per_sweep(D=100, batch=500, sweeps=2)
    res = {
        "settings": {
            "model": "dense_mrf(D, *random_potentials(D, variance=0.02, seed=0))",
            "epsilons": EPSILONS,
            "error": "004 Eq. 12: mean over random 5-subsets of the L1 distance between the "
            "empirical and exact joint distributions",
            "quick": args.quick,
        },
        "error_vs_time": ev,
        "wall_seconds": None,
    }
    if cost is not None:
        res["cost_at_paper_scale"] = cost
    res["wall_seconds"] = time.perf_counter() - t0
    name = "mrf_gibbs_quick" if args.quick else "mrf_gibbs"
    print("wrote", write(name, res))
    plot(res, RESULTS / f"{name}.png")
    print("wrote", RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
