"""Variance of the SMC evidence log Ẑ vs the number of particles, with ``particles`` as peer.

Model and data: the LDS of ``pgas_lds.py`` (``thrifty.models.lds``, T = 100, D = 4, r = 0.5,
q = 0.1, ω = 4π/T, ``generate_lds(..., seed=0)``; the choice of D and r is explained there)
with every parameter known, so log Z = log p(y) is exact from
``thrifty.diagnostics.kalman.kalman_filter``.

For N ∈ {10, 30, 100, 300, 1000} particles, ``repeats`` (100) independent runs of

* thrifty: ``th.smc(lds(y, C, r, omega=ω, q=q), particles=N, seed=s)`` (bootstrap proposal,
  systematic resampling when ESS < N/2), its ``log_evidence``;
* the peer: the ``particles`` library's bootstrap filter, ``particles.SMC(fk=
  particles.state_space_models.Bootstrap(ssm=LDS, data=y), N=N, resampling="systematic")``
  (its default ``ESSrmin=0.5``: the same algorithm), its ``logLt`` (``_peer_particles.py``, in
  ``benchmarks/.peer-venv``, see ``pgas_lds.py``);

reported per N and library: mean and sd of log Ẑ − log Z, the mean of Ẑ/Z with its standard
error (Ẑ is unbiased, so it should be 1 within a few SE; the mean is dominated by rare large
values at small N), and particle-steps per second (N·T / seconds of one run: thrifty's
``SMCResult.seconds``, the peer's timing around ``SMC.run()``; medians over runs).  The runs
alternate between the libraries in ``rounds`` (4) blocks of repeats/rounds runs per N.
Both libraries implement the same estimator, so their sds should agree within sampling error
(the standard error of an sd from n runs is about sd/√(2(n−1))).

Writes ``benchmarks/results/smc_evidence.json`` and ``.png`` (sd of log Ẑ vs N, log–log, both
libraries; the bias of log Ẑ; particle-steps per second).  Run (from ``benchmarks/``):
``python smc_evidence.py`` (about 20 seconds; ``--quick``: N ∈ {10, 100}, 10 runs each, written to
``smc_evidence_quick.*``).
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

import thrifty as th
from _common import RESULTS, peer_cli, peer_python, run_peer, write
from thrifty.diagnostics.kalman import kalman_filter
from thrifty.models.lds import generate_lds, lds, lds_matrices

T, D, R, Q = 100, 4, 0.5, 0.1
OMEGA = 4 * np.pi / T


def summary(log_z_hat, log_z, seconds, n) -> dict:
    d = np.asarray(log_z_hat) - log_z
    ratio = np.exp(d)
    k = len(d)
    return {
        "runs": k,
        "mean_log_ratio": float(d.mean()),
        "sd_log_ratio": float(d.std(ddof=1)),
        "se_sd_log_ratio": float(d.std(ddof=1) / math.sqrt(2 * (k - 1))),
        "mean_ratio": float(ratio.mean()),
        "se_mean_ratio": float(ratio.std(ddof=1) / math.sqrt(k)),
        "seconds_per_run": float(np.median(seconds)),
        "particle_steps_per_second": float(n * T / np.median(seconds)),
        "log_ratio": d.tolist(),
    }


def main() -> None:
    args = peer_cli(__doc__)
    q = args.quick
    name = "smc_evidence_quick" if q else "smc_evidence"
    ns = (10, 100) if q else (10, 30, 100, 300, 1000)
    repeats, rounds = (10, 2) if q else (100, 4)
    per_round = repeats // rounds
    t_start = time.perf_counter()

    y, C, _ = generate_lds(T=T, D=D, r=R, q=Q, seed=0)
    log_z = kalman_filter(y, *lds_matrices(C, R, OMEGA, Q))[0]
    program = lds(y, C, R, omega=OMEGA, q=Q)
    print(f"LDS T={T}, D={D}, r={R}: Kalman log Z = {log_z:.3f}", flush=True)
    py = None if args.no_peer else peer_python()
    ours = {n: ([], []) for n in ns}
    peer = {n: ([], []) for n in ns}
    versions = None
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "lds.npz"
        np.savez(npz, y=y, C=C, r=R, q=Q, omega=OMEGA)
        th.smc(program, particles=10, seed=0)  # warm-up
        for i in range(rounds):
            for n in ns:
                for j in range(per_round):
                    res = th.smc(program, particles=n, seed=10_000 * n + i * per_round + j)
                    ours[n][0].append(res.log_evidence)
                    ours[n][1].append(res.seconds)
            if py is not None:
                tasks = [{"kind": "bootstrap", "N": n, "repeats": per_round,
                          "seed": 10_000 * n + i} for n in ns]
                ans = run_peer(py, npz, tasks)
                versions = ans["versions"]
                for task in ans["results"]:
                    peer[task["N"]][0].extend(task["log_evidence"])
                    peer[task["N"]][1].extend(task["seconds"])
            print(f"  round {i + 1}/{rounds} done ({time.perf_counter() - t_start:.0f} s)",
                  flush=True)

    out = {"thrifty": {}, "particles": {}}
    print(f"\n{'N':>6} {'library':<10} {'mean logẐ−logZ':>15} {'sd':>7} {'mean Ẑ/Z ± se':>16} "
          f"{'particle-steps/s':>17}")
    for n in ns:
        for lib, store in (("thrifty", ours), ("particles", peer)):
            if not store[n][0]:
                continue
            s = summary(store[n][0], log_z, store[n][1], n)
            out[lib][str(n)] = s
            print(f"{n:6d} {lib:<10} {s['mean_log_ratio']:15.3f} {s['sd_log_ratio']:7.3f} "
                  f"{s['mean_ratio']:8.3f} ± {s['se_mean_ratio']:5.3f} "
                  f"{s['particle_steps_per_second']:17,.0f}")
    comparison = {}
    if out["particles"]:
        for n in ns:
            a, b = out["thrifty"][str(n)], out["particles"][str(n)]
            comparison[str(n)] = {
                "sd_ratio_thrifty_over_particles": a["sd_log_ratio"] / b["sd_log_ratio"],
                "speed_ratio_thrifty_over_particles": a["particle_steps_per_second"]
                / b["particle_steps_per_second"],
            }
        print("\nthrifty / particles: " + ", ".join(
            f"N={n}: sd ×{c['sd_ratio_thrifty_over_particles']:.2f}, "
            f"speed ×{c['speed_ratio_thrifty_over_particles']:.2f}"
            for n, c in comparison.items()))
    slopes = {lib: float(np.polyfit(np.log(ns), np.log([v[str(n)]["sd_log_ratio"] for n in ns]),
                                    1)[0]) for lib, v in out.items() if v}
    res = {
        "quick": q,
        "settings": {"T": T, "D": D, "r": R, "q": Q, "omega": OMEGA, "data_seed": 0,
                     "particles": list(ns), "repeats": repeats, "rounds": rounds,
                     "resampling": "systematic, when ESS < N/2 (both libraries)"},
        "kalman_log_z": log_z,
        "results": out,
        "thrifty_over_particles": comparison,
        "sd_log_slope_in_N": slopes,
        "peer_versions": versions,
        "wall_seconds": time.perf_counter() - t_start,
    }
    print("log–log slope of sd(log Ẑ) in N: " + ", ".join(
        f"{k} {v:.2f}" for k, v in slopes.items()) + " (−0.5 asymptotically)")
    print(f"total {res['wall_seconds']:.0f} s")
    print("wrote", write(name, res))
    plot(res, RESULTS / f"{name}.png")
    print("wrote", RESULTS / f"{name}.png")


def plot(res, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    ns = np.array(res["settings"]["particles"], float)
    for lib, style in (("thrifty", "o-"), ("particles", "s--")):
        v = res["results"].get(lib)
        if not v:
            continue
        sd = np.array([v[str(int(n))]["sd_log_ratio"] for n in ns])
        se = np.array([v[str(int(n))]["se_sd_log_ratio"] for n in ns])
        axes[0].errorbar(ns, sd, yerr=2 * se, fmt=style, capsize=3, label=lib)
        bias = [v[str(int(n))]["mean_log_ratio"] for n in ns]
        axes[1].semilogx(ns, bias, style, label=lib)
        speed = [v[str(int(n))]["particle_steps_per_second"] for n in ns]
        axes[2].loglog(ns, speed, style, label=lib)
    v = res["results"]["thrifty"]
    sd0 = v[str(int(ns[-1]))]["sd_log_ratio"]
    axes[0].plot(ns, sd0 * np.sqrt(ns[-1] / ns), "k:", lw=1, label="∝ N^(−1/2)")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_title("sd of log Ẑ − log Z (±2 se)")
    axes[1].axhline(0, color="k", lw=0.8)
    axes[1].set_title("mean of log Ẑ − log Z")
    axes[2].set_title("particle-steps per second")
    for ax in axes:
        ax.set_xlabel("particles N")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    s = res["settings"]
    fig.suptitle(f"Bootstrap filter on the LDS (T={s['T']}, D={s['D']}, r={s['r']}), "
                 f"{s['repeats']} runs per N, Kalman log Z = {res['kalman_log_z']:.2f}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
