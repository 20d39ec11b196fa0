"""``thrifty demo``: a real inference job in under two minutes, checked against exact answers.

1. The 3-state HMM of paper 001 §5: LMH and enumerative Gibbs, posterior state marginals against
   forward–backward.
2. Bayesian logistic regression (paper 000 §4.1) on synthetic tall data: random-walk MH, with
   convergence diagnostics (ESS, R-hat) and the data-generating weights.

Prints summary tables and writes plots to the output directory.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import thrifty as th
from thrifty.datasets import synthetic_logistic
from thrifty.models import forward_backward, hmm
from thrifty.models.logistic import logistic_regression


def _marginals(z: np.ndarray, K: int = 3) -> np.ndarray:
    z = z.reshape(-1, z.shape[-1])
    return np.stack([(z == k).mean(axis=0) for k in range(K)], axis=1)


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
    r_lmh = th.infer(hmm(), th.lmh(), num_samples=steps, burn_in=steps // 10, chains=chains,
                     seed=seed, progress=False)
    t_lmh = time.perf_counter() - t0
    t0 = time.perf_counter()
    r_gibbs = th.infer(hmm(), th.gibbs("s"), num_samples=sweeps, burn_in=sweeps // 10,
                       chains=chains, seed=seed + 1, progress=False)
    t_gibbs = time.perf_counter() - t0
    m_lmh, m_gibbs = _marginals(r_lmh["s.z"]), _marginals(r_gibbs["s.z"])
    mae_lmh = float(np.abs(m_lmh - exact).mean())
    mae_gibbs = float(np.abs(m_gibbs - exact).mean())
    print(f"{'state':>5}  {'exact P(z=0,1,2)':>22}  {'LMH':>22}  {'Gibbs':>22}")
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

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2), sharey=True)
    t = np.arange(exact.shape[0])
    for k, ax in enumerate(axes):
        ax.plot(t, exact[:, k], "k-", lw=2, label="forward-backward")
        ax.plot(t, lmh[:, k], "o", ms=4, label="LMH")
        ax.plot(t, gibbs[:, k], "x", ms=5, label="Gibbs")
        ax.set_title(f"P(state = {k} | y)")
        ax.set_xlabel("t")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot: {path}")


def logistic_section(out: Path, n: int, draws: int, chains: int, seed: int) -> dict:
    _rule(f"2. Bayesian logistic regression (paper 000 §4.1): MH on N = {n:,}, d = 5")
    X, y, theta = synthetic_logistic(n, 5, theta=[1.0, -0.5, 0.25, 0.0, 0.75], seed=seed)
    t0 = time.perf_counter()
    r = th.infer(logistic_regression(X, y), th.mh("w", th.drift(0.02)), num_samples=draws,
                 burn_in=draws // 2, chains=chains, seed=seed, progress=False)
    elapsed = time.perf_counter() - t0
    summary = r.summary()
    summary.insert(0, "true", theta)
    cols = [c for c in ("true", "mean", "sd", "hdi_3%", "hdi_97%", "ess_bulk", "r_hat")
            if c in summary.columns]
    print(summary[cols].to_string(float_format=lambda v: f"{v:8.3f}"))
    acc = next(iter(r.stats.values()))
    rate = acc["acceptance_rate"] if isinstance(acc, dict) else np.nan
    print(f"{chains} chains × {draws:,} draws in {elapsed:.1f} s; acceptance rate {rate:.2f}")
    path = out / "logistic_trace.png"
    r.plot_trace(path=path)
    print(f"plot: {path}")
    return {"r_hat_max": float(summary["r_hat"].max())}


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
    }
    print(f"\ndone in {time.perf_counter() - t0:.0f} s")
    return res
