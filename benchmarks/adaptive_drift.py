"""Adapted ``th.drift()`` against a random walk with one common scale, on the Bayesian linear
regression of scikit-learn's diabetes data.

Model: intercept + the 10 raw features (``load_diabetes(scaled=False)``: age in years, BMI, blood
pressure, serum measurements), w ~ N(0, 10·σ²·I), σ² ~ InvGamma(2, 2), y ~ N(Xw, σ²) — 12
coordinates whose posterior scales differ by orders of magnitude and whose correlations reach
the value printed as ``max_posterior_correlation``.

* adapted: ``th.mh(["w", "sigma2"], th.drift())`` — one block, its covariance and scale adapted
  during the burn-in (``thrifty/inference/proposals/adapt.py``), fixed after it;
* common scale: ``th.mh(["w", "sigma2"], th.drift(s))`` with s chosen on a grid by the best
  minimum ESS per draw in short pilot runs (the best any one scale can do), then run as long —
  started at the exact posterior mean (``init``), a favour: from a prior draw its chains do not
  reach the posterior within the burn-in (the adapted kernel starts itself near the mode by
  default, ``thrifty/inference/proposals/laplace_start.py``).

Both: 4 chains, 20,000 burn-in steps, 20,000 draws.  Reported: acceptance, ESS per draw (minimum
and median over the 12 coordinates, ArviZ bulk ESS), seconds per step, and the posterior means
against the exact Normal–InvGamma posterior (z with ESS-based standard errors).  The criterion
is a ratio of ESS per draw ≥ 5.

Run: ``cd benchmarks && ../.venv/bin/python adaptive_drift.py`` (``--quick``: shorter runs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import thrifty as th
from _common import RESULTS, write
from thrifty import dist
from thrifty.diagnostics._arviz import ess


def data():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)  # the raw features (years, mg/dl, …)
    return np.c_[np.ones(len(X)), X], y


@th.model
def regression(X, y):
    s2 = th.sample("sigma2", dist.InverseGamma(2.0, 2.0))
    d = X.shape[1]
    w = th.sample("w", dist.MvNormal(np.zeros(d), 10.0 * s2 * np.eye(d)))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(X[i] @ w, np.sqrt(s2)), y[i])


def exact(X, y):
    """Posterior means and sds of (w, σ²) (Normal–InvGamma conjugacy)."""
    n, d = X.shape
    prec = X.T @ X + np.eye(d) / 10.0
    V = np.linalg.inv(prec)
    m = V @ X.T @ y
    a, b = 2.0 + n / 2.0, 2.0 + 0.5 * (y @ y - m @ prec @ m)
    s2_mean = b / (a - 1)
    s2_sd = np.sqrt(b**2 / ((a - 1) ** 2 * (a - 2)))
    w_sd = np.sqrt(np.diag(V) * s2_mean * (a - 1) / (a - 2))  # marginal t: scale² · ν/(ν − 2)
    corr = V / np.sqrt(np.outer(np.diag(V), np.diag(V)))
    return np.r_[m, s2_mean], np.r_[w_sd, s2_sd], float(np.abs(corr - np.eye(d)).max())


def summarize(r, label, mean, sd) -> dict:
    x = np.concatenate([r["w"], r["sigma2"][..., None]], axis=-1)  # (chains, draws, 12)
    draws = x.shape[0] * x.shape[1]
    # a chain that never moved has no ESS worth the name (ArviZ reports n): count it as 1
    e = np.array([ess(x[..., j]) if np.ptp(x[..., j]) > 0 else 1.0 for j in range(x.shape[-1])])
    z = (x.mean(axis=(0, 1)) - mean) / (sd / np.sqrt(e))
    st = r.stats[label]
    return {"acceptance": st["acceptance_rate"], "seconds_per_step": st["seconds_per_step"],
            "ess_per_draw_min": float(e.min() / draws),
            "ess_per_draw_median": float(np.median(e) / draws),
            "ess": e.round(1).tolist(), "max_abs_z": float(np.abs(z).max()),
            "proposal": st.get("proposal")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    burn, draws, chains = (8000, 4000, 2) if args.quick else (20_000, 20_000, 4)
    pilot = 2000 if args.quick else 5000
    X, y = data()
    mean, sd, max_corr = exact(X, y)
    prog = regression(X, y)
    t0 = time.perf_counter()
    k = th.mh(["w", "sigma2"], th.drift())
    adapted = summarize(th.infer(prog, k, num_samples=draws, burn_in=burn, chains=chains, seed=0,
                                 progress=False), k.label(), mean, sd)
    start = {"w": mean[:-1], "sigma2": mean[-1]}
    grid = {}
    for s in np.geomspace(0.01, 100.0, 13):
        kk = th.mh(["w", "sigma2"], th.drift(float(s)))
        r = th.infer(prog, kk, num_samples=pilot, burn_in=burn, chains=2, seed=1, progress=False,
                     init=start)
        grid[float(s)] = summarize(r, kk.label(), mean, sd)
    best = max(grid, key=lambda s: grid[s]["ess_per_draw_min"])
    kk = th.mh(["w", "sigma2"], th.drift(best))
    common = summarize(th.infer(prog, kk, num_samples=draws, burn_in=burn, chains=chains, seed=0,
                                progress=False, init=start), kk.label(), mean, sd)
    res = {
        "draws": draws, "burn_in": burn, "chains": chains, "max_posterior_correlation": max_corr,
        "adapted": adapted, "common_scale": {"scale": best, **common},
        "pilot_grid": {f"{s:.3g}": {k2: v[k2] for k2 in ("acceptance", "ess_per_draw_min",
                                                         "ess_per_draw_median")}
                       for s, v in grid.items()},
        "ratio_ess_per_draw_min": adapted["ess_per_draw_min"] / common["ess_per_draw_min"],
        "ratio_ess_per_draw_median": adapted["ess_per_draw_median"]
        / common["ess_per_draw_median"],
        "ratio_seconds_per_step": adapted["seconds_per_step"] / common["seconds_per_step"],
        "wall_seconds": time.perf_counter() - t0,
    }
    for name in ("adapted", "common_scale"):
        v = res[name]
        print(f"{name:13} acceptance {v['acceptance']:.3f}  ESS/draw min "
              f"{v['ess_per_draw_min']:.4f} median {v['ess_per_draw_median']:.4f}  "
              f"max |z| vs exact {v['max_abs_z']:.2f}")
    print(f"common scale chosen: {best:.3g}; ESS/draw ratio adapted/common: min "
          f"{res['ratio_ess_per_draw_min']:.1f}×, median {res['ratio_ess_per_draw_median']:.1f}×;"
          f" seconds per step ratio {res['ratio_seconds_per_step']:.2f}")
    plot(res, RESULTS / f"adaptive_drift{'_quick' if args.quick else ''}.png")
    print(write(f"adaptive_drift{'_quick' if args.quick else ''}", res))


def plot(res, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"w{j}" for j in range(11)] + ["σ²"]
    fig, ax = plt.subplots(figsize=(9, 3.4), layout="constrained")
    x = np.arange(len(names))
    n = res["draws"] * res["chains"]
    ax.bar(x - 0.2, np.array(res["adapted"]["ess"]) / n, 0.4, label="adapted th.drift()")
    ax.bar(x + 0.2, np.array(res["common_scale"]["ess"]) / n, 0.4,
           label=f"common scale {res['common_scale']['scale']:.3g} (best on a grid)")
    ax.set_xticks(x)
    ax.set_xticklabels(names)
    ax.set_yscale("log")
    ax.set_ylabel("ESS per draw")
    ax.set_title("Diabetes regression: random-walk MH on (w, σ²) as one block")
    fig.legend(fontsize=8, loc="outside lower center", ncols=2)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
