"""``thrifty demo``: a real inference job in under two minutes, checked against exact answers.

1. The 3-state HMM of paper 001 §5: LMH and enumerative Gibbs, posterior state marginals against
   forward–backward.
2. Bayesian logistic regression (paper 000 §4.1): random-walk MH, with convergence diagnostics
   (ESS, R-hat) and the data-generating weights.
3. The point of the project — a tall data set (N = 10⁵): exact MH, subsampled MH (papers 000,
   004; plain, and with Taylor-proxy control variates) and exact subsampled MH (SMH, paper 002)
   side by side: seconds per step, likelihood
   terms per step, ESS per second and agreement of the posteriors.
4. Particle Gibbs on the linear dynamical system of paper 003: PGAS and iterated conditional SMC
   with 10 particles against the Kalman smoother — the ESS of each state as a function of t —
   and the SMC evidence estimate against the exact likelihood.

Prints summary tables and writes plots to the output directory.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

import thrifty as th
from thrifty.datasets import synthetic_logistic
from thrifty.diagnostics.kalman import kalman_filter, rts_smoother
from thrifty.models import forward_backward, generate_lds, hmm, lds, lds_matrices
from thrifty.models.logistic import laplace, logistic_regression


def _marginals(z: np.ndarray, K: int = 3) -> np.ndarray:
    z = z.reshape(-1, z.shape[-1])
    return np.stack([(z == k).mean(axis=0) for k in range(K)], axis=1)


def _infer(*args, **kwargs):
    """``th.infer``; a Ctrl-C, after which it returns the draws so far, ends the demo (its
    tables and timings are those of complete runs)."""
    r = th.infer(*args, **kwargs)
    if r.interrupted:
        raise KeyboardInterrupt
    return r


def _rule(title: str) -> None:
    print()
    print(title)
    print("-" * len(title))


def hmm_section(out: Path, steps: int, chains: int, seed: int) -> dict:
    _rule("1. Hidden Markov model (paper 001 §5): LMH and Gibbs vs forward-backward")
    exact = forward_backward()
    T = exact.shape[0]
    sweeps = max(steps // T, 1)
    t0 = time.perf_counter()
    r_lmh = _infer(hmm(), th.lmh(), num_samples=steps, burn_in=steps // 10, chains=chains,
                  seed=seed, progress=False)
    t_lmh = time.perf_counter() - t0
    t0 = time.perf_counter()
    r_gibbs = _infer(hmm(), th.gibbs("s"), num_samples=sweeps, burn_in=sweeps // 10,
                    chains=chains, seed=seed + 1, progress=False)
    t_gibbs = time.perf_counter() - t0
    m_lmh, m_gibbs = _marginals(r_lmh["s.z"]), _marginals(r_gibbs["s.z"])
    mae_lmh = float(np.abs(m_lmh - exact).mean())
    mae_gibbs = float(np.abs(m_gibbs - exact).mean())
    print("Rows: time step t of the 18-step chain. Columns: the posterior probabilities of the")
    print("hidden state z_t being 0, 1, 2 — exact (forward-backward), then estimated by LMH and")
    print("by Gibbs.")
    print(f"{'t':>5}  {'exact P(z_t=0,1,2)':>22}  {'LMH':>22}  {'Gibbs':>22}")
    for t in (0, 1, 6, 12, T - 1):
        fmt = lambda p: " ".join(f"{x:6.3f}" for x in p)  # noqa: E731
        print(f"{t:>5}  {fmt(exact[t]):>22}  {fmt(m_lmh[t]):>22}  {fmt(m_gibbs[t]):>22}")
    print(f"LMH  : {chains} chains × {steps:,} steps in {t_lmh:5.1f} s "
          f"({chains * steps / t_lmh:,.0f} steps/s), mean |error| = {mae_lmh:.4f}")
    print(f"Gibbs: {chains} chains × {sweeps:,} sweeps ({T} updates each) in {t_gibbs:5.1f} s, "
          f"mean |error| = {mae_gibbs:.4f}")
    _plot_hmm(out / "hmm_marginals.png", exact, m_lmh, m_gibbs)
    return {"mae_lmh": mae_lmh, "mae_gibbs": mae_gibbs}


def _plot_hmm(path: Path, exact, lmh, gibbs) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5), sharey=True, layout="constrained")
    t = np.arange(exact.shape[0])
    for k, ax in enumerate(axes):
        ax.plot(t, exact[:, k], "k-", lw=2, label="forward-backward")
        ax.plot(t, lmh[:, k], "o", ms=4, label="LMH")
        ax.plot(t, gibbs[:, k], "x", ms=5, label="Gibbs")
        ax.set_title(f"P(state = {k} | y)")
        ax.set_xlabel("time step t")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are integers
    # below the panels: a legend inside one would cover some of its points
    axes[0].figure.legend(*axes[0].get_legend_handles_labels(), fontsize=8,
                          loc="outside lower center", ncols=3)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot: {path}")


def logistic_section(out: Path, n: int, draws: int, chains: int, seed: int) -> dict:
    _rule(f"2. Bayesian logistic regression (paper 000 §4.1): MH on N = {n:,}, d = 5")
    X, y, theta = synthetic_logistic(n, 5, theta=[1.0, -0.5, 0.25, 0.0, 0.75], seed=seed)
    t0 = time.perf_counter()
    r = _infer(logistic_regression(X, y), th.mh("w", th.drift(0.02)), num_samples=draws,
              burn_in=draws // 2, chains=chains, seed=seed, progress=False)
    elapsed = time.perf_counter() - t0
    summary = r.summary()
    summary.insert(0, "true", theta)
    summary["ess_bulk"] = summary["ess_bulk"].round().astype(int)
    cols = [c for c in ("true", "mean", "sd", "hdi_3%", "hdi_97%", "eti89_lb", "eti89_ub",
                      "ess_bulk", "r_hat")
            if c in summary.columns]
    print("Posterior of the 5 coefficients (rows) against the values that generated the data:")
    print("mean, sd, 89% credible interval, effective sample size, R-hat (≈ 1: chains agree).")
    print(summary[cols].to_string(float_format=lambda v: f"{v:8.3f}"))
    acc = next(iter(r.stats.values()))
    rate = acc["acceptance_rate"] if isinstance(acc, dict) else np.nan
    print(f"{chains} chains × {draws:,} draws in {elapsed:.1f} s; acceptance rate {rate:.2f}")
    path = out / "logistic_trace.png"
    r.plot_trace(path=path)
    print(f"plot: {path}")
    return {"r_hat_max": float(summary["r_hat"].max())}


def tall_section(out: Path, n: int, draws: dict, seed: int) -> dict:
    from thrifty.diagnostics._arviz import ess as az_ess

    d = 5
    _rule(f"3. Tall data (N = {n:,}, d = {d}): exact MH vs subsampled MH vs SMH")
    X, y, _ = synthetic_logistic(n, d, theta=1.0, seed=seed)
    mode, cov = laplace(X, y, 0.1)
    scale = 2.38 / np.sqrt(d) * np.sqrt(np.diag(cov)).mean()  # the usual random-walk scaling
    prog = logistic_regression(X, y)
    kernels = {
        "exact MH": th.mh("w", th.drift(scale)),
        "subsampled MH (ε=0.01)": th.subsampled_mh(
            "w", batch_size=500, epsilon=0.01, proposal=th.drift(scale)
        ),
        "subsampled MH + proxy": th.subsampled_mh(
            "w", batch_size=100, epsilon=0.01, proposal=th.drift(scale), proxy="taylor"
        ),
        "SMH-2 (exact)": th.smh("w", order=2),
    }
    rows, samples = {}, {}
    for name, k in kernels.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings():  # (runs sized to compare ESS/s, shown in the table:
            warnings.simplefilter("ignore", th.ConvergenceWarning)  # the slow ones have little)
            r = _infer(prog, k, num_samples=draws[name], burn_in=draws[name] // 10, chains=2,
                      seed=seed, init={"w": mode}, progress=False)
        wall = time.perf_counter() - t0
        st = r.stats[k.label()]
        w = r["w"]
        ess = az_ess(w[..., 0])
        terms = st.get("terms_per_step", st.get("sections_evaluated_per_step",
                                                st["elements_per_step"]))
        rows[name] = {
            "ms/step": 1e3 * st["seconds_per_step"],
            "terms/step": terms,
            "acceptance": st["acceptance_rate"],
            "ESS/s (w0)": ess / wall,
            "mean w0": float(w[..., 0].mean()),
        }
        samples[name] = w[..., 0].ravel()
    ref_mean, ref_sd = mode[0], float(np.sqrt(cov[0, 0]))
    print("Per kernel: milliseconds per step, likelihood terms evaluated per step (of N), "
          "acceptance rate,")
    print("effective samples of w0 per second, and the error of the posterior mean of w0 in "
          "posterior sd.")
    print(f"{'':24} {'ms/step':>8} {'terms/step':>11} {'accept':>7} {'ESS/s (w0)':>11} "
          f"{'(mean−mode)/sd':>15}")
    for name, row in rows.items():
        z = (row["mean w0"] - ref_mean) / ref_sd
        terms = row["terms/step"]
        terms = f"{terms:11,.0f}" if terms >= 10 else f"{terms:11.2f}"
        print(f"{name:24} {row['ms/step']:8.3f} {terms} "
              f"{row['acceptance']:7.2f} {row['ESS/s (w0)']:11.1f} {z:15.2f}")
    base = rows["exact MH"]["ESS/s (w0)"]
    print("ESS/s relative to exact MH: "
          + ", ".join(f"{k} {v['ESS/s (w0)'] / base:.1f}×" for k, v in rows.items()))
    print("(posterior reference: Laplace approximation at the mode; subsampled MH is approximate"
          " — see benchmarks/results/austerity_risk.json for its bias and cost)")
    _plot_tall(out / "tall_data.png", samples, rows, ref_mean, ref_sd)
    return rows


def _plot_tall(path: Path, samples, rows, mean, sd) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    grid = np.linspace(mean - 4 * sd, mean + 4 * sd, 200)
    axes[0].plot(grid, np.exp(-0.5 * ((grid - mean) / sd) ** 2) / (sd * np.sqrt(2 * np.pi)),
                 "k-", lw=2, label="Laplace approx.")
    for name, s in samples.items():
        axes[0].hist(s, bins=40, density=True, histtype="step", lw=1.5, label=name)
    axes[0].set_title("posterior of w[0]")
    axes[0].legend(fontsize=7)
    names = list(rows)
    pos = np.arange(len(names))[::-1]  # horizontal bars: the names never overlap
    axes[1].barh(pos, [rows[n]["ESS/s (w0)"] for n in names],
                 color=[f"C{j}" for j in range(len(names))])
    axes[1].set_xscale("log")
    axes[1].set_yticks(pos)
    axes[1].set_yticklabels(names, fontsize=8)
    axes[1].set_xlabel("effective samples of w[0] per second (log scale)")
    axes[1].set_title("sampling efficiency")
    axes[0].set_xlabel("w[0]")
    axes[0].set_ylabel("density")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot: {path}")


def particle_section(out: Path, T: int, sweeps: int, seed: int) -> dict:
    _rule(f"4. Particle Gibbs on the LDS of paper 003 (T = {T}, 10 particles, ω and q known)")
    from thrifty.diagnostics._arviz import ess as az_ess

    r = 0.1
    y, C, _ = generate_lds(T=T, D=4, r=r, seed=seed)
    omega, q = 4 * np.pi / T, 0.1
    mats = lds_matrices(C, r, omega, q)
    means, _ = rts_smoother(y, *mats)
    prog = lds(y, C, r, omega=omega, q=q)
    ess, secs, err = {}, {}, {}
    for label, AS in (("PGAS", True), ("CSMC", False)):
        t0 = time.perf_counter()
        res = _infer(prog, th.pgibbs("x", 10, ancestor_sampling=AS), num_samples=sweeps,
                    burn_in=20, seed=seed, progress=False)
        secs[label] = time.perf_counter() - t0
        x = res["x.z"][0, :, :, 0]  # first coordinate of each state
        # a state that never moved has no meaningful ESS (ArviZ reports n): count it as 1
        ess[label] = np.array([az_ess(x[None, :, t]) if np.ptp(x[:, t]) > 0 else 1.0
                               for t in range(T)])
        err[label] = float(np.abs(x.mean(axis=0) - means[:, 0]).max())
    ts = [0, T // 4, T // 2, T - 1]
    print(f"ESS of z_t[0] over {sweeps} sweeps (t = time step):")
    print(f"{'':6}" + "".join(f"{'t=' + str(t):>9}" for t in ts) + f"{'s/sweep':>10}"
          f"{'max |mean − Kalman|':>21}")
    for label in ess:
        print(f"{label:6}" + "".join(f"{ess[label][t]:9.0f}" for t in ts)
              + f"{secs[label] / (sweeps + 20) * 1e3:8.1f} ms{err[label]:21.3f}")
    print("PGAS mixes evenly along the chain; iterated CSMC's early states barely move "
          "(path degeneracy, 003 Fig. 1).")
    ll, _, _ = kalman_filter(y, *mats)
    est = [th.smc(prog, particles=200, seed=seed + k).log_evidence for k in range(20)]
    print(f"th.smc, 200 particles: log Ẑ = {np.mean(est):.2f} (sd {np.std(est):.2f} over 20 "
          f"runs; log Ẑ is biased low, Ẑ is unbiased); exact log p(y) = {ll:.2f}")
    path = out / "pgas_ess.png"
    _plot_ess(path, ess)
    return {"ess": {k: v.tolist() for k, v in ess.items()}, "seconds": secs,
            "log_evidence": est, "exact_log_evidence": ll}


def _plot_ess(path: Path, ess: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for label, v in ess.items():
        ax.plot(v, label=f"{label}, 10 particles")
    ax.set_yscale("log")
    ax.set_xlabel("time step t")
    ax.set_ylabel("ESS of z_t[0]")
    ax.set_title("Particle Gibbs on the LDS (paper 003, Fig. 1)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot: {path}")


def run_demo(out: str | Path = "demo_output", quick: bool = False, seed: int = 0) -> dict:
    """Run the demo; ``quick`` shrinks it for tests."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(f"thrifty {th.__version__} demo — results and plots in {out}/")
    res = {
        "hmm": hmm_section(out, steps=4000 if quick else 30_000, chains=2 if quick else 4,
                           seed=seed),
        "logistic": logistic_section(out, n=2000 if quick else 20_000,
                                     draws=300 if quick else 3000, chains=2 if quick else 4,
                                     seed=seed),
        "tall": tall_section(
            out, n=5_000 if quick else 100_000,
            draws={"exact MH": 300 if quick else 3000,
                   "subsampled MH (ε=0.01)": 200 if quick else 1500,
                   "subsampled MH + proxy": 1000 if quick else 10_000,
                   "SMH-2 (exact)": 1000 if quick else 20_000},
            seed=seed,
        ),
        "particles": particle_section(out, T=20 if quick else 50,
                                      sweeps=100 if quick else 400, seed=seed),
    }
    print(f"\ndone in {time.perf_counter() - t0:.0f} s")
    return res
