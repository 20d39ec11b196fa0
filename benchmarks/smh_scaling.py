"""SMH scaling benchmark (paper 002): likelihood terms per step, acceptance and ESS/s vs n.

Tall logistic regression as in 002: x_ij ~ N(0, 1), θ = 1, d = 10 (``synthetic_logistic``),
prior w ~ N(0, I), n ∈ {2¹⁰, …, 2²⁰}.  Kernels:

* SMH-1 and SMH-2 (``thrifty.inference.subsampling.smh``), each with the random-walk proposal
(preconditioned,
  scale 2.38/√d, i.e. ∝ n^{-1/2}) and the π̂-reversible proposal (ρ = 0), with the default
  ("local") bound; SMH-2 reversible also with 002's ℓ1 bound and the "metric" bound, to compare
  bounds on the same chain design;
* full-data MH, two ways: ``th.mh("w", th.drift(s))`` with s_j = 2.38/√d × the Laplace posterior
  sd of w_j ("full-mh"), and a full-data MH step with SMH's preconditioned random walk
  (``smh(..., proposal="random_walk", fallback=0)``: every step is the exact full-data MH step,
  "full-mh-precond").  The headline ratio uses the better of the two.

Every chain starts at θ̂ (the mode found by SMH's set-up) and is stepped directly (no recording
overhead).  Reported per n and kernel: likelihood terms evaluated per step (full MH: n),
acceptance rate, seconds per step, ESS of θ₀ (ArviZ bulk ESS) per step and per second of
sampling, and SMH's one-off set-up seconds.  Full MH is slow at large n: its seconds per step and
ESS per step come from shorter runs (``MH_STEPS``); SMH's from ``SMH_STEPS`` steps; both in this
process.  The headline is the ratio of ESS/s of θ₀, SMH-2 reversible over full MH, at n = 2²⁰.

Writes ``benchmarks/results/smh_scaling.{json,png}``.  Run: ``python benchmarks/smh_scaling.py``
(``--quick`` for a smaller sweep).
"""

from __future__ import annotations

import os

# Single-threaded BLAS for every kernel: on a small shared machine the threaded matrix-vector
# product of OpenBLAS is up to 15x slower than one thread at n = 2^16 (measured), which would make
# full-data MH look worse than it is.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import thrifty as th  # noqa: E402
from _common import RESULTS, write  # noqa: E402
from thrifty import dist, glm  # noqa: E402
from thrifty.core.simulate import initialize  # noqa: E402
from thrifty.datasets import synthetic_logistic  # noqa: E402
from thrifty.diagnostics._arviz import ess as az_ess  # noqa: E402
from thrifty.inference.subsampling.smh import smh  # noqa: E402

D = 10
SMH_STEPS = 8000
SMH_BURN = 500
MH_BURN = 300


def mh_steps(n: int) -> int:
    return 6000 if n <= 1 << 14 else 3000 if n <= 1 << 17 else 2000


@th.model
def tall_logistic(X, y):
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], w), y[i])
    return w


KERNELS = {
    "smh1-rw": dict(order=1, proposal="random_walk"),
    "smh1-rev": dict(order=1, proposal="reversible"),
    "smh2-rw": dict(order=2, proposal="random_walk"),
    "smh2-rev": dict(order=2, proposal="reversible"),
    "smh2-rev-metric": dict(order=2, proposal="reversible", bound="metric"),
    "smh2-rev-l1": dict(order=2, proposal="reversible", bound="l1"),
}


def ess0(x) -> float:
    return az_ess(np.asarray(x)[None, :])


def run_chain(kernel, trace, rng, burn: int, steps: int) -> dict:
    t0 = time.perf_counter()
    kernel.step(trace, rng)  # the set-up (SMH: θ̂, sums, alias tables) happens here
    setup = time.perf_counter() - t0
    for _ in range(burn):
        kernel.step(trace, rng)
    b_steps, b_acc, b_prop = kernel.stats.steps, kernel.stats.accepted, kernel.stats.proposed
    b_extra = dict(kernel.stats.extra)
    w0 = np.empty(steps)
    t0 = time.perf_counter()
    for j in range(steps):
        kernel.step(trace, rng)
        w0[j] = trace.root.sites[("w",)].value[0]
    secs = (time.perf_counter() - t0) / steps
    st = kernel.stats
    extra = {k: (v - b_extra.get(k, 0)) / steps for k, v in st.extra.items()}
    e = ess0(w0)
    return {
        "setup_seconds": setup,
        "seconds_per_step": secs,
        "acceptance": (st.accepted - b_acc) / max(st.proposed - b_prop, 1),
        "steps": st.steps - b_steps,
        "terms_per_step": extra.get("terms"),
        "poisson_rate_per_step": extra.get("poisson_rate"),
        "fallbacks_per_step": extra.get("fallbacks"),
        "ess_theta0": e,
        "ess_per_step": e / steps,
        "ess_per_second": e / steps / secs,
        "ess_per_second_incl_setup": e / (steps * secs + setup),
        "mean_theta0": float(w0.mean()),
    }


def bench_n(n: int, seed: int = 0) -> dict:
    X, y, _ = synthetic_logistic(n, D, theta=1.0, seed=seed)
    prog = tall_logistic(X, y)
    probe = smh("w")
    info = probe.setup_info(initialize(prog, seed))
    theta_hat = info["theta_hat"]
    sd = np.sqrt(np.diag(np.linalg.inv(info["precision"])))
    out = {"n": n}
    for name, kw in KERNELS.items():
        trace = initialize(prog, seed, init={"w": theta_hat.copy()})
        out[name] = run_chain(
            smh("w", **kw), trace, np.random.default_rng(seed + 1), SMH_BURN, SMH_STEPS
        )
    trace = initialize(prog, seed, init={"w": theta_hat.copy()})
    mh = th.mh("w", th.drift(2.38 / np.sqrt(D) * sd))
    res = run_chain(mh, trace, np.random.default_rng(seed + 2), MH_BURN, mh_steps(n))
    res["terms_per_step"] = float(n)
    out["full-mh"] = res
    trace = initialize(prog, seed, init={"w": theta_hat.copy()})
    full = smh("w", proposal="random_walk", fallback=0)
    out["full-mh-precond"] = run_chain(
        full, trace, np.random.default_rng(seed + 3), MH_BURN, mh_steps(n)
    )
    return out


def plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in rows]
    names = [*KERNELS, "full-mh", "full-mh-precond"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    for name in names:
        style = {"full-mh": "k--", "full-mh-precond": "k:"}.get(name, "-o")
        t = [max(r[name]["terms_per_step"], 1e-3) for r in rows]
        axes[0].loglog(ns, t, style, label=name, ms=3)
        axes[1].semilogx(ns, [r[name]["acceptance"] for r in rows], style, label=name, ms=3)
        axes[2].loglog(ns, [r[name]["ess_per_second"] for r in rows], style, label=name, ms=3)
    axes[0].set_title("likelihood terms evaluated per step")
    axes[1].set_title("acceptance rate")
    axes[2].set_title("ESS of θ₀ per second")
    for ax in axes:
        ax.set_xlabel("n")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("SMH on tall logistic regression (d = 10, θ = 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    quick = "--quick" in sys.argv
    exps = range(10, 15) if quick else range(10, 21)
    rows = []
    for e in exps:
        row = bench_n(1 << e)
        rows.append(row)
        s2 = row["smh2-rev"]
        mh = max(row["full-mh"], row["full-mh-precond"], key=lambda r: r["ess_per_second"])
        print(
            f"n = 2^{e:<2}: terms/step "
            + ", ".join(f"{k} {row[k]['terms_per_step']:.3g}" for k in KERNELS)
            + f" | acc smh2-rev {s2['acceptance']:.3f} | ESS/s θ₀ smh2-rev "
            f"{s2['ess_per_second']:.4g}, full MH {mh['ess_per_second']:.4g} "
            f"(ratio {s2['ess_per_second'] / mh['ess_per_second']:.4g})",
            flush=True,
        )
    last = rows[-1]
    best_mh = max(last["full-mh"]["ess_per_second"], last["full-mh-precond"]["ess_per_second"])
    headline = {
        "n": last["n"],
        "ess_per_second_ratio_smh2_rev_over_best_full_mh": last["smh2-rev"]["ess_per_second"]
        / best_mh,
        "ess_per_second_ratio_smh2_rev_over_full_mh": last["smh2-rev"]["ess_per_second"]
        / last["full-mh"]["ess_per_second"],
        "ess_per_second_ratio_smh2_rev_over_full_mh_precond": last["smh2-rev"]["ess_per_second"]
        / last["full-mh-precond"]["ess_per_second"],
        "smh2_rev_terms_per_step": last["smh2-rev"]["terms_per_step"],
    }
    near_1e5 = min(rows, key=lambda r: abs(r["n"] - 100_000))
    headline["terms_per_step_near_1e5"] = {
        "n": near_1e5["n"],
        **{k: near_1e5[k]["terms_per_step"] for k in KERNELS},
    }
    print("headline:", headline)
    path = write(
        "smh_scaling",
        {"d": D, "rows": rows, "headline": headline, "smh_steps": SMH_STEPS, "quick": quick},
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    plot(rows, RESULTS / "smh_scaling.png")
    print("wrote", path, "and", RESULTS / "smh_scaling.png")


if __name__ == "__main__":
    main()
