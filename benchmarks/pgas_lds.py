"""003 Fig. 1–2 on the LDS: PGAS vs iterated CSMC, smoothing the states, with ``particles`` as peer.

Model and data: ``thrifty.models.lds`` (003 §5: 2-d rotation by ω = 4π/T, transition noise
q·I, q = 0.1, z_{−1} = (1, 0)), T = 100, data from ``generate_lds(T, D, r=r, seed=0)``; ω and
q fixed at the truth, so the kernels smooth the states alone.  **D = 4, r = 0.5** instead of
003's D = 36, r = 0.01: with 36 dims of noise sd 0.1 the bootstrap weights of a step fall on one
particle (the likelihood of one step spans e^{hundreds}), so every bootstrap-proposal method
here — thrifty's and the peer's — is stuck with any affordable N and there would be nothing to
compare.  At D = 4, r = 0.5 one step's observations are about as informative as the transition
(precision ‖C‖²/r ≈ 16 vs 1/q = 10): the bootstrap filter works, yet path degeneracy is strong
enough that iterated CSMC needs hundreds of particles to move z_t for small t, which is the
effect of 003 Fig. 1–2 (a pilot: CSMC-10 never moves z_t for t ≤ 50, CSMC-300 does, PGAS-10
does everywhere).

1. ESS vs t.  thrifty: ``th.infer(lds(y, C, r, omega, q), th.pgibbs("x", N,
   ancestor_sampling=...), num_samples=S, burn_in=B, seed=s)`` — PGAS with N = 10 and
   iterated CSMC (``ancestor_sampling=False``) with N = 10, 50, 100, 300.  Peer: the
   ``particles`` library's ``particles.mcmc.CSMC`` iterated as its ``ParticleGibbs`` does
   (``_peer_particles.py``; the library has no ancestor sampling), N = 10, 50, 100, 300, with
   resampling at every step (``ESSrmin=1``, the same algorithm as thrifty's CSMC: multinomial
   resampling every step) and, as a second peer row, the library's default ``ESSrmin=0.5``
   (adaptive resampling, which ``ParticleGibbs`` uses).  For each run: ``arviz.ess`` of the S
   draws of z_t[0] of the one chain, for every t (a chain that never moves has ESS 1 — arviz
   returns S for a constant series), and the update rate (fraction of sweeps that change
   z_t[0]).  S = 500, B = 50, ``restarts`` seeds (3); medians over seeds.  ESS per second =
   ESS / (S × seconds per sweep of that run); thrifty's seconds per sweep are
   ``stats["run"]["chain_seconds"] / steps`` (the sampling loop with recording, burn-in
   included), the peer's the S kept sweeps (trajectory extraction and storing included).  The
   posterior means and variances are checked against the RTS smoother (median over t of
   |mean − exact| / sd and of variance / exact variance, per restart).
2. Seconds per sweep, thrifty CSMC vs peer CSMC (N = 100, T = 100, ESSrmin=1): ``rounds`` (5)
   alternating rounds of K = 100 sweeps each in this process and in one peer subprocess per
   round; ratio thrifty / peer per round, median.  Target: ≤ 2.  Also stored: the ratio with
   thrifty's kernel time alone (``stats[label]["seconds_per_step"]``, recording excluded).
3. Scaling of thrifty's PGAS sweep in N ∈ {10, 100, 1000} and T ∈ {100, 1000} (data
   ``generate_lds(T, D, r=r, seed=0)`` per T, ω = 4π/T): chain_seconds / steps, sizes
   alternated in 3 rounds, medians; least-squares log–log slopes in N at each T and in T at each
   N.  Target: every slope ≤ 1.15.

A bug found with this script, fixed in thrifty: conditional resampling drew the N ancestors
with *sorted* uniforms and overwrote the first — the smallest — with the reference's, so the
N − 1 free ancestors were not iid from the weights and the kernel overdispersed the posterior
(PGAS-5 on the LDS, T = 20: smoothed variances 1.14× the RTS values).  ``th.pgibbs`` now
permutes each group's draws first (``tests/test_particles.py`` checks the variances).  The
``particles`` library 0.4 (``CSMC.resample_move``) has the same flaw: its CSMC variance ratios
in ``median_var_ratio_vs_rts`` show the effect at this setting.

The peer runs in ``benchmarks/.peer-venv`` (``particles`` 0.4 pins numpy<2; created on first use
with pinned versions, see ``_common.PEER_REQUIREMENTS``); the data go to it in a temporary
``.npz`` and its numbers come back as JSON on stdout.  Without the peer environment the thrifty
parts still run.

Writes ``benchmarks/results/pgas_lds.json`` and ``.png`` (ESS per sweep vs t, log y; ESS per
second vs t).  Run (from ``benchmarks/``): ``python pgas_lds.py`` (about 5 minutes;
``--quick``: a smoke test of about a minute, written to ``pgas_lds_quick.*``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import thrifty as th
from _common import RESULTS, peer_cli, peer_python, run_peer, write
from thrifty.diagnostics._arviz import ess as az_ess
from thrifty.diagnostics.kalman import rts_smoother
from thrifty.models.lds import generate_lds, lds, lds_matrices

D, R, Q = 4, 0.5, 0.1
CSMC_NS = (10, 50, 100, 300)
PGAS_N = 10


def omega_of(T: int) -> float:
    return 4 * np.pi / T


def data(T: int):
    y, C, z = generate_lds(T=T, D=D, r=R, q=Q, seed=0)
    return y, C, z


def ess_per_t(x: np.ndarray) -> np.ndarray:
    """arviz ESS of each column of x (draws × T); a column that never changes has ESS 1."""
    out = np.empty(x.shape[1])
    for t in range(x.shape[1]):
        col = x[:, t]
        out[t] = 1.0 if np.ptp(col) < 1e-12 else az_ess(col)
    return out


def update_rate(x: np.ndarray) -> np.ndarray:
    return (np.diff(x, axis=0) != 0).mean(axis=0)


def thrifty_run(program, n, ancestor_sampling, sweeps, burn_in, seed) -> dict:
    r = th.infer(program, th.pgibbs("x", n, ancestor_sampling=ancestor_sampling),
                 num_samples=sweeps, burn_in=burn_in, seed=seed, progress=False)
    run = r.stats["run"]
    label = next(k for k in r.stats if k != "run")
    return {
        "draws": np.asarray(r["x.z"])[0, :, :, 0],
        "means": np.asarray(r["x.z"])[0].mean(axis=0),
        "seconds_per_sweep": float(sum(run["chain_seconds"])) / run["steps"],
        "kernel_seconds_per_sweep": float(r.stats[label]["seconds_per_step"]),
        "reference_ancestor_changes_per_sweep": r.stats[label].get(
            "reference_ancestor_changes_per_step"),
    }


def summarize(runs: list, sweeps: int, exact) -> dict:
    ms, sd = exact
    ess = np.array([ess_per_t(r["draws"]) for r in runs])
    sps = np.array([r["seconds_per_sweep"] for r in runs])
    ess_s = ess / (sweeps * sps[:, None])
    err = [float(np.median(np.abs(r["draws"].mean(axis=0) - ms[:, 0]) / sd)) for r in runs]
    var = [float(np.median(r["draws"].var(axis=0) / sd**2)) for r in runs]
    out = {
        "ess": np.median(ess, axis=0).tolist(),
        "ess_per_sweep": (np.median(ess, axis=0) / sweeps).tolist(),
        "ess_per_second": np.median(ess_s, axis=0).tolist(),
        "ess_restarts": ess.tolist(),
        "update_rate": np.median([update_rate(r["draws"]) for r in runs], axis=0).tolist(),
        "seconds_per_sweep": float(np.median(sps)),
        "seconds_per_sweep_restarts": sps.tolist(),
        "median_abs_z_vs_rts": err,
        "median_var_ratio_vs_rts": var,
    }
    for k in ("kernel_seconds_per_sweep", "reference_ancestor_changes_per_sweep"):
        if runs[0].get(k) is not None:
            out[k] = float(np.median([float(r[k]) for r in runs]))
    return out


def ess_vs_t(T, sweeps, burn_in, seeds, py, npz) -> dict:
    y, C, _ = data(T)
    program = lds(y, C, R, omega=omega_of(T), q=Q)
    ms, Ps = rts_smoother(y, *lds_matrices(C, R, omega_of(T), Q))
    exact = (ms, np.sqrt(Ps[:, 0, 0]))
    methods = [(f"thrifty PGAS-{PGAS_N}", PGAS_N, True)] + [
        (f"thrifty CSMC-{n}", n, False) for n in CSMC_NS]
    runs: dict = {m[0]: [] for m in methods}
    peer_runs: dict = {}
    versions = None
    for seed in seeds:
        for name, n, anc in methods:
            t0 = time.perf_counter()
            runs[name].append(thrifty_run(program, n, anc, sweeps, burn_in, seed))
            print(f"  seed {seed} {name:<18} {time.perf_counter() - t0:6.1f} s", flush=True)
        if py is None:
            continue
        tasks = [{"kind": "csmc", "N": n, "ess_min": e, "sweeps": sweeps, "burn_in": burn_in,
                  "seed": seed, "draws": True} for e in (1.0, 0.5) for n in CSMC_NS]
        t0 = time.perf_counter()
        ans = run_peer(py, npz, tasks)
        versions = ans["versions"]
        for task in ans["results"]:
            tag = "" if task["ess_min"] == 1.0 else ", ESSrmin 0.5"
            name = f"particles CSMC-{task['N']}{tag}"
            peer_runs.setdefault(name, []).append({
                "draws": np.asarray(task["draws"]),
                "seconds_per_sweep": task["seconds_per_sweep"],
            })
        print(f"  seed {seed} particles (8 runs)  {time.perf_counter() - t0:6.1f} s", flush=True)
    out = {name: summarize(rs, sweeps, exact) for name, rs in {**runs, **peer_runs}.items()}
    return {"methods": out, "peer_versions": versions}


def sweep_ratio(program, n, sweeps, rounds, py, npz) -> dict:
    """thrifty CSMC-n vs the peer's CSMC-n (ESSrmin=1): alternating rounds, seconds per sweep."""
    ta, tb, tk = [], [], []
    for i in range(rounds):
        r = thrifty_run(program, n, False, sweeps, 0, 100 + i)
        ta.append(r["seconds_per_sweep"])
        tk.append(r["kernel_seconds_per_sweep"])
        ans = run_peer(py, npz, [{"kind": "csmc", "N": n, "ess_min": 1.0, "sweeps": sweeps,
                                  "burn_in": 0, "seed": 100 + i, "draws": False}])
        tb.append(ans["results"][0]["seconds_per_sweep"])
        print(f"  round {i}: thrifty {ta[-1] * 1e3:.2f} ms/sweep, particles "
              f"{tb[-1] * 1e3:.2f} ms/sweep, ratio {ta[-1] / tb[-1]:.2f}", flush=True)
    ratios = [a / b for a, b in zip(ta, tb)]
    return {
        "N": n,
        "sweeps_per_round": sweeps,
        "thrifty_seconds_per_sweep": statistics.median(ta),
        "particles_seconds_per_sweep": statistics.median(tb),
        "ratio": statistics.median(ratios),
        "ratio_rounds": ratios,
        "thrifty_kernel_seconds_per_sweep": statistics.median(tk),
        "ratio_kernel_alone": statistics.median(a / b for a, b in zip(tk, tb)),
        "target": 2.0,
        "pass": bool(statistics.median(ratios) <= 2.0),
    }


def slope(xs, ys) -> float:
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def scaling(ns, ts, sweeps_at, rounds) -> dict:
    programs = {}
    for T in ts:
        y, C, _ = data(T)
        programs[T] = lds(y, C, R, omega=omega_of(T), q=Q)
    per = {(n, T): [] for T in ts for n in ns}
    for i in range(rounds):
        for T in ts:
            for n in ns:
                r = thrifty_run(programs[T], n, True, sweeps_at[T], 1, 200 + i)
                per[(n, T)].append(r["seconds_per_sweep"])
    sec = {(n, T): statistics.median(v) for (n, T), v in per.items()}
    for T in ts:
        print(f"  T={T:5d}: " + ", ".join(f"N={n}: {sec[(n, T)] * 1e3:8.2f} ms/sweep" for n in ns))
    slopes_n = {str(T): slope(ns, [sec[(n, T)] for n in ns]) for T in ts}
    slopes_t = {str(n): slope(ts, [sec[(n, T)] for T in ts]) for n in ns}
    worst = max([*slopes_n.values(), *slopes_t.values()])
    print("  slopes in N (per T): " + ", ".join(f"T={k}: {v:.2f}" for k, v in slopes_n.items()))
    print("  slopes in T (per N): " + ", ".join(f"N={k}: {v:.2f}" for k, v in slopes_t.items()))
    return {
        "N": list(ns),
        "T": list(ts),
        "sweeps": {str(T): sweeps_at[T] for T in ts},
        "rounds": rounds,
        "seconds_per_sweep": {f"N={n},T={T}": sec[(n, T)] for T in ts for n in ns},
        "seconds_per_sweep_rounds": {f"N={n},T={T}": per[(n, T)] for T in ts for n in ns},
        "slope_in_N": slopes_n,
        "slope_in_T": slopes_t,
        "max_slope": worst,
        "target": 1.15,
        "pass": bool(worst <= 1.15),
    }


STYLE = {
    "thrifty PGAS-10": ("k", "-", 2.0),
    "thrifty CSMC-10": ("C0", "-", 1.2),
    "thrifty CSMC-50": ("C1", "-", 1.2),
    "thrifty CSMC-100": ("C2", "-", 1.2),
    "thrifty CSMC-300": ("C3", "-", 1.2),
    "particles CSMC-10": ("C0", "--", 1.0),
    "particles CSMC-50": ("C1", "--", 1.0),
    "particles CSMC-100": ("C2", "--", 1.0),
    "particles CSMC-300": ("C3", "--", 1.0),
}


def plot(res, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = res["ess_vs_t"]["methods"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    for ax, key, ylabel in ((axes[0], "ess_per_sweep", "ESS per sweep of z_t[0]"),
                            (axes[1], "ess_per_second", "ESS per second of z_t[0]")):
        for name, m in methods.items():
            if name not in STYLE:
                continue
            c, ls, lw = STYLE[name]
            t = np.arange(1, len(m[key]) + 1)
            sps = m["seconds_per_sweep"] * 1e3
            ax.semilogy(t, m[key], color=c, ls=ls, lw=lw, label=f"{name} ({sps:.1f} ms/sweep)")
        ax.set_xlabel("t")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=7, loc="lower right")
    s = res["settings"]
    fig.suptitle(
        f"LDS T={s['T']}, D={s['D']}, r={s['r']} (ω, q fixed): {s['sweeps']} sweeps after "
        f"{s['burn_in']}, median of {len(s['seeds'])} restarts; thrifty solid, particles "
        f"(ESSrmin=1) dashed", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def headline(res) -> None:
    m = res["ess_vs_t"]["methods"]
    T = res["settings"]["T"]
    print(f"\nESS of z_t[0] (of {res['settings']['sweeps']} draws), median over restarts")
    print(f"  {'method':<32} {'t=1':>7} {'t=T/2':>7} {'t=T':>7}  {'ms/sweep':>8}  ESS/s t=1")
    for name, v in m.items():
        e = v["ess"]
        print(f"  {name:<32} {e[0]:7.1f} {e[T // 2 - 1]:7.1f} {e[-1]:7.1f}  "
              f"{v['seconds_per_sweep'] * 1e3:8.2f}  {v['ess_per_second'][0]:8.1f}  "
              f"var/RTS {statistics.median(v['median_var_ratio_vs_rts']):.2f}")


def main() -> None:
    args = peer_cli(__doc__)
    q = args.quick
    name = "pgas_lds_quick" if q else "pgas_lds"
    T = 100
    sweeps, burn_in = (60, 10) if q else (500, 50)
    seeds = [0] if q else [0, 1, 2]
    t_start = time.perf_counter()
    py = None if args.no_peer else peer_python()
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "lds.npz"
        y, C, _ = data(T)
        np.savez(npz, y=y, C=C, r=R, q=Q, omega=omega_of(T))
        print(f"1. ESS vs t (T={T}, D={D}, r={R}; {sweeps} sweeps after {burn_in})", flush=True)
        ess = ess_vs_t(T, sweeps, burn_in, seeds, py, npz)
        ratio = None
        if py is not None:
            print("2. seconds per sweep, CSMC-100: thrifty vs particles", flush=True)
            program = lds(y, C, R, omega=omega_of(T), q=Q)
            ratio = sweep_ratio(program, 100, 20 if q else 100, 2 if q else 5, py, npz)
    print("3. PGAS sweep scaling in N and T", flush=True)
    scale = scaling((10, 100, 1000), (100, 1000), {100: 3 if q else 20, 1000: 1 if q else 4},
                    1 if q else 3)
    res = {
        "quick": q,
        "settings": {"T": T, "D": D, "r": R, "q": Q, "omega": omega_of(T), "data_seed": 0,
                     "sweeps": sweeps, "burn_in": burn_in, "seeds": seeds,
                     "pgas_particles": PGAS_N, "csmc_particles": list(CSMC_NS)},
        "ess_vs_t": ess,
        "sweep_ratio_csmc100": ratio,
        "scaling_pgas": scale,
        "notes": [
            "t is 1-based in the summaries (t=1 is the first state z_0 of the model).",
            "ESS: arviz.ess of one chain's draws of z_t[0]; a chain that never moves counts 1.",
            "particles CSMC rows without a tag resample every step (ESSrmin=1), as thrifty's "
            "CSMC; the 'ESSrmin 0.5' rows use the library's default adaptive resampling.",
            "thrifty's seconds per sweep include recording the draws (th.infer's loop); the "
            "peer's include extracting and storing the trajectory.",
            "particles 0.4's conditional resampling overwrites the first (smallest) of sorted "
            "multinomial draws with the reference's (thrifty did too until this was found, and "
            "now permutes the draws first): see the module docstring and "
            "median_var_ratio_vs_rts.",
        ],
        "wall_seconds": time.perf_counter() - t_start,
    }
    headline(res)
    if ratio:
        print(f"\nseconds per sweep thrifty/particles (CSMC-100, T=100): {ratio['ratio']:.2f} "
              f"(≤ 2: {'PASS' if ratio['pass'] else 'FAIL'})")
    print(f"PGAS scaling: max log–log slope {scale['max_slope']:.2f} (≤ 1.15: "
          f"{'PASS' if scale['pass'] else 'FAIL'})")
    print(f"total {res['wall_seconds']:.0f} s")
    print("wrote", write(name, res))
    plot(res, RESULTS / f"{name}.png")
    print("wrote", RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
