"""JointDPM (paper 000 §4.2, Fig. 6c–d): exact MH against subsampled MH on one cluster's
logistic weights, and the cost of one table-label update against N.

Model: :func:`thrifty.models.joint_dpm` on :func:`thrifty.datasets.clustered_nonlinear`
(10,000 training and 1,000 test points, six clusters of 2-d features each with its own logistic
boundary); NIW(m0 = 0, k0 = 0.05, v0 = 4, S0 = I) per cluster, w ~ N(0, 10² I) (the clusters'
best weights have intercepts up to 14: one logistic regression per true cluster reaches 0.85 test
accuracy, a single one 0.51).  Inference program of 000 Fig. 7 (top)::

    cycle([mh("alpha", drift(0.5)),
           cycle([gibbs(one("data.z"))], repeats=STEP_Z),
           cycle([<w kernel> on one("w") with drift(0.5)], repeats=step_w)])

with three w kernels: ``mh`` (exact), ``subsampled_mh(batch_size=100, epsilon=0.3)`` and the
same with ``proxy="taylor"`` (per-cluster Taylor proxies,
:mod:`thrifty.inference.subsampling.mem_proxy`). 000 uses drift 0.1 on its data; here the intercepts
are larger, so 0.5.  As in 000 §4.2, each chain balances the time spent on the w's and on the
labels: a pilot of 30 cycles measures the seconds of a z step and of a w step, and step_w = STEP_Z ×
(z step / w step) — a faster w kernel makes more w steps per cycle.  (000 fixes the w's and tunes
step_z; here a z step costs more than an exact w step, so the w's are repeated instead.)  Each chain
runs through ``th.infer`` with default recording for about the same wall time, keeping every
thin-th cycle's draw (at most ``KEPT_DRAWS``); draw t is placed at t × (the chain's wall time / its
draws).

Reported per chain: test accuracy of the predictive averaged over the draws so far (the
predictive of a draw: p(z = k | x) ∝ n_k · NIW-predictive_k(x) and α · prior-predictive(x) for a
new table, times σ(x·w_k), with 1/2 for the new table), the number of clusters, seconds per
cycle, per w step and per z step; the time each subsampled chain needs to reach the exact
chain's final accuracy and the ratio (000 reports ≈ 10×).  PNG: accuracy against time, clusters
against time, and the decision boundaries of the last draw of the proxy chain (Fig. 6c).

All chains start from the same k-means labels (10 clusters on the features); their weights are
drawn from the prior.  Second part: seconds per w step alone, exact against the proxy, at
N = 10³, 10⁴, 10⁵ (clusters of ~N/6 points).  Third part: seconds per ``gibbs(one("data.z"))``
step through ``th.infer`` on a DP mixture at N = 10³ and 10⁵ with the same six-cluster start
(the criterion: within 2×).

Run: ``cd benchmarks && ../.venv/bin/python joint_dpm.py`` (``--quick``: 2,000 points, shorter).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import thrifty as th
from _common import RESULTS, write
from thrifty.models import dp_mixture, joint_dpm
from thrifty.processes.collapsed import NormalInverseWishart

M0, K0, V0, S0, SIG_W = np.zeros(2), 0.05, 4.0, np.eye(2), 10.0
W_DRIFT = 0.5
STEP_Z = 2
# draws kept per chain (every thin-th cycle's): a draw's labels are 10⁴ numbers, so the array of
# 10⁵ draws would be 8 GB — as many cycles as a 400 s chain now makes
KEPT_DRAWS = 4000
W_KERNELS = {
    "exact MH": lambda: th.mh(th.one("w"), th.drift(W_DRIFT)),
    "subsampled MH (ε = 0.3)": lambda: th.subsampled_mh(
        th.one("w"), batch_size=100, epsilon=0.3, proposal=th.drift(W_DRIFT)),
    "subsampled MH (ε = 0.3, Taylor proxy)": lambda: th.subsampled_mh(
        th.one("w"), batch_size=100, epsilon=0.3, proposal=th.drift(W_DRIFT), proxy="taylor"),
}


def kernel(w_kernel, step_z, step_w):
    return th.cycle([th.mh("alpha", th.drift(0.5)),
                     th.cycle([th.gibbs(th.one("data.z"))], repeats=step_z),
                     th.cycle([w_kernel], repeats=step_w)])


def kmeans_labels(d, k=10, seed=0):
    """The chains' start: k-means (k = 10, more than the six true clusters) on the features."""
    from scipy.cluster.vq import kmeans2

    return kmeans2(d.X_train[:, 1:], k, seed=seed, minit="++")[1]


def balance(prog, make_w, seed, init, pilot=30):
    """step_w with as much time on the w's as on the labels (000 §4.2), and the seconds of one
    cycle so balanced, from a pilot run of ``pilot`` cycles."""
    w = make_w()
    r = th.infer(prog, kernel(w, STEP_Z, 10), num_samples=pilot, seed=seed + 1000,
                 progress=False, init=init)
    cz = r.stats["gibbs(one('data.z'))"]["seconds_per_step"]
    cw = r.stats[w.label()]["seconds_per_step"]
    step_w = max(1, round(STEP_Z * cz / cw))
    return step_w, STEP_Z * cz + step_w * cw


def predictive_accuracy(X, z, w_keys, w_vals, alpha, Xte, yte):
    """p(y = 1 | x) of each test point under one draw (see the module docstring)."""
    feats = Xte[:, 1:]
    logp, py = [], []
    for k in np.unique(z):
        c = NormalInverseWishart(M0, K0, V0, S0)
        for x in X[z == k, 1:]:
            c.incorporate(x)
        logp.append(np.log((z == k).sum()) + np.array([c.predictive_log_prob(x) for x in feats]))
        w = w_vals[w_keys.index(int(k))]
        py.append(1.0 / (1.0 + np.exp(-Xte @ w)))
    c = NormalInverseWishart(M0, K0, V0, S0)
    logp.append(np.log(alpha) + np.array([c.predictive_log_prob(x) for x in feats]))
    py.append(np.full(len(Xte), 0.5))
    logp = np.array(logp)
    p = np.exp(logp - logp.max(0))
    p /= p.sum(0)
    return (p * np.array(py)).sum(0)


def run_chain(name, d, budget, seed, evals):
    prog = joint_dpm(d.X_train, d.y_train, M0, K0, V0, S0, SIG_W)
    init = {"data.z": kmeans_labels(d)}
    step_w, cycle = balance(prog, W_KERNELS[name], seed, init)
    cycles = max(evals, int(budget / cycle))
    thin = max(1, cycles // KEPT_DRAWS)  # (every draw holds all the labels: see KEPT_DRAWS)
    num = cycles // thin
    w_kernel = W_KERNELS[name]()
    k = kernel(w_kernel, STEP_Z, step_w)
    t0 = time.perf_counter()
    r = th.infer(prog, k, num_samples=num, thin=thin, burn_in=0, seed=seed, progress=False,
                 init=init)
    wall = time.perf_counter() - t0
    z = r["data.z"][0]
    alpha = r["alpha"][0]
    at = np.unique(np.linspace(0, num - 1, evals).astype(int))
    probs, acc, clusters = [], [], []
    for t in at:
        keys, vals = w_at(r, t)
        p = predictive_accuracy(d.X_train, z[t], keys, vals, alpha[t], d.X_test, d.y_test)
        probs.append(p)
        avg = np.mean(probs, axis=0)
        acc.append(float(np.mean((avg > 0.5) == d.y_test)))
        clusters.append(len(np.unique(z[t])))
    stats = r.stats
    w_label = w_kernel.label()
    return {
        "name": name,
        "step_w": step_w,
        "draws": num,
        "thin": thin,
        "wall_seconds": wall,
        "seconds_per_cycle": wall / (num * thin),
        "w_seconds_per_step": stats[w_label]["seconds_per_step"],
        "w_acceptance": stats[w_label]["acceptance_rate"],
        "z_seconds_per_step": stats["gibbs(one('data.z'))"]["seconds_per_step"],
        "alpha_seconds_per_step": stats["mh('alpha', drift(0.5))"]["seconds_per_step"],
        "draw": at.tolist(),
        "time": (at * wall / num).tolist(),
        "accuracy": acc,
        "clusters": clusters,
        "last": (z[-1], *w_at(r, num - 1)),
    }


def w_at(r, t):
    """The mem keys of ``w`` present at draw ``t`` and their values (``w.<key>`` variables,
    NaN where the key was not in the trace)."""
    keys, vals = [], []
    for name in r.keys():
        if name.startswith("w."):
            v = r[name][0, t]
            if not np.isnan(v).any():
                keys.append(int(name[2:]))
                vals.append(v)
    return keys, np.array(vals)


def time_to(res, target):
    for t, a in zip(res["time"], res["accuracy"]):
        if a >= target:
            return t
    return float("nan")


LEVELS = (0.65, 0.70, 0.75, 0.78, 0.80)


def levels(res) -> list[dict]:
    """Seconds each chain needs to reach each accuracy level, and exact / subsampled."""
    out = []
    for lv in LEVELS:
        t = {r["name"]: time_to(r, lv) for r in res}
        t0 = t[res[0]["name"]]
        out.append({"accuracy": lv, "seconds": t,
                    "ratio": {n: t0 / v if v > 0 else float("nan") for n, v in t.items()}})
    return out


def summarize(out: dict) -> None:
    """Print the comparison (also from a stored JSON: ``--summarize``)."""
    res = out["chains"]
    for r in res:
        print(f"{r['name']:>38}: final accuracy {r['accuracy'][-1]:.3f}, "
              f"{r['clusters'][-1]} clusters (mean {np.mean(r['clusters']):.1f}), step_w "
              f"{r['step_w']}, {r['draws'] * r.get('thin', 1)} cycles in "
              f"{r['wall_seconds']:.0f} s, w step "
              f"{1e3 * r['w_seconds_per_step']:.2f} ms (acceptance {r['w_acceptance']:.2f}), "
              f"z step {1e3 * r['z_seconds_per_step']:.2f} ms, alpha step "
              f"{1e3 * r['alpha_seconds_per_step']:.2f} ms")
    print(f"time to the exact chain's final accuracy {out['target_accuracy']:.3f}:")
    for n, t in out["time_to_target"].items():
        ratio = out["time_to_target"][res[0]["name"]] / t if t > 0 else float("nan")
        print(f"{n:>38}: {t:7.0f} s (exact / this: {ratio:.2f})")
    for row in levels(res):
        print(f"accuracy {row['accuracy']:.2f}: " + ", ".join(
            f"{n.split(' (')[-1].rstrip(')') if '(' in n else n} {t:.0f} s "
            f"(x{row['ratio'][n]:.2f})" for n, t in row["seconds"].items()))


def w_step_scaling(seed=0, steps=1500):
    """Seconds per step on one("w") alone, exact against the Taylor proxy, at N = 10³, 10⁴,
    10⁵ from the six-cluster start (clusters of ~N/6 points): what subsampling saves grows with
    a cluster's size.  The proxy's O(N) set-up is amortised over the steps."""
    out = {}
    for n in (1_000, 10_000, 100_000):
        d = th.datasets.clustered_nonlinear(n, 10, seed=seed)
        prog = joint_dpm(d.X_train, d.y_train, M0, K0, V0, S0, SIG_W)
        row = {}
        for name in ("exact MH", "subsampled MH (ε = 0.3, Taylor proxy)"):
            k = W_KERNELS[name]()
            r = th.infer(prog, k, num_samples=steps, burn_in=100, seed=seed, progress=False,
                         init={"data.z": six_clusters(d)})
            row[name] = r.stats[k.label()]["seconds_per_step"]
        row["ratio"] = row["exact MH"] / row["subsampled MH (ε = 0.3, Taylor proxy)"]
        out[n] = row
        print(f"w step, N = {n:>7}: exact {1e3 * row['exact MH']:.3f} ms, Taylor proxy "
              f"{1e3 * row['subsampled MH (ε = 0.3, Taylor proxy)']:.3f} ms (exact / proxy "
              f"{row['ratio']:.2f})")
    return out


def six_clusters(d):
    angles = np.arange(6) * np.pi / 3
    centres = 4.0 * np.c_[np.cos(angles), np.sin(angles)]
    return np.argmin(((d.X_train[:, None, 1:] - centres) ** 2).sum(-1), axis=1)


def z_update_scaling(seed=0):
    out = {}
    for n in (1_000, 100_000):
        d = th.datasets.clustered_nonlinear(n, 10, seed=seed)
        labels = six_clusters(d)
        prog = dp_mixture(d.X_train[:, 1:], M0, K0, V0, S0, alpha=1.0)
        k = th.gibbs(th.one("data.z"))
        r = th.infer(prog, k, num_samples=2000, burn_in=200, seed=seed, progress=False,
                     init={"data.z": labels})
        s = r.stats[k.label()]
        out[n] = {"seconds_per_step": s["seconds_per_step"], "runs_per_step": s["runs_per_step"],
                  "elements_per_step": s["elements_per_step"]}
        print(f"z update, N = {n:>7}: {1e3 * s['seconds_per_step']:.3f} ms/step, "
              f"{s['runs_per_step']:.2f} runs of {s['elements_per_step'] / s['runs_per_step']:.0f}"
              " element each")
    out["ratio"] = out[100_000]["seconds_per_step"] / out[1_000]["seconds_per_step"]
    print(f"ratio N=10^5 / N=10^3: {out['ratio']:.2f} (criterion <= 2)")
    return out


def plot(res, d, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5), constrained_layout=True)
    for r in res:
        ax[0].plot(r["time"], r["accuracy"], label=r["name"])
        ax[1].plot(r["time"], r["clusters"], label=r["name"])
    ax[0].set(xlabel="seconds", ylabel="test accuracy (averaged predictive)",
              title="Fig. 6d: accuracy against time")
    ax[1].set(xlabel="seconds", ylabel="clusters", title="number of clusters")
    for a in ax[:2]:
        a.legend(loc="best")
    z, keys, vals = res[-1]["last"]
    g = np.linspace(-8, 8, 120)
    G = np.array([[1.0, a, b] for b in g for a in g])
    p = predictive_accuracy(d.X_train, np.asarray(z), keys, np.asarray(vals), 1.0, G,
                            np.zeros(len(G)))
    ax[2].contourf(g, g, p.reshape(len(g), len(g)), levels=20, cmap="RdBu_r", alpha=0.7)
    ax[2].scatter(d.X_test[:, 1], d.X_test[:, 2], c=d.y_test, s=4, cmap="RdBu_r",
                  edgecolors="none")
    ax[2].set(title="Fig. 6c: p(y = 1 | x), last draw (Taylor proxy)", xlabel="x₁", ylabel="x₂")
    fig.savefig(path, dpi=110)


def name(seed: int, quick: bool = False) -> str:
    base = "joint_dpm_quick" if quick else "joint_dpm"
    return base if seed == 1 else f"{base}_seed{seed}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--summarize", action="store_true", help="print the stored results")
    ap.add_argument("--seed", type=int, default=1, help="the chains' seed (results of seeds "
                    "other than 1 go to joint_dpm_seed<k>.json/png)")
    a = ap.parse_args()
    if a.summarize:
        import json

        summarize(json.loads((RESULTS / f"{name(a.seed, a.quick)}.json").read_text()))
        return
    n_train, budget = (2_000, 40.0) if a.quick else (10_000, 400.0)
    d = th.datasets.clustered_nonlinear(n_train, 1_000, seed=0)
    res = [run_chain(n, d, budget, a.seed, 40) for n in W_KERNELS]
    target = res[0]["accuracy"][-1]
    scaling = z_update_scaling()
    w_scaling = w_step_scaling()
    plot(res, d, RESULTS / f"{name(a.seed, a.quick)}.png")
    for r in res:
        r.pop("last")
    out = {
        "n_train": n_train, "budget_seconds": budget, "step_z": STEP_Z, "w_drift": W_DRIFT,
        "sig_w": SIG_W, "chains": res, "target_accuracy": target,
        "time_to_target": {r["name"]: time_to(r, target) for r in res},
        "time_to_levels": levels(res), "z_update": {str(k): v for k, v in scaling.items()},
        "w_step": {str(k): v for k, v in w_scaling.items()},
    }
    summarize(out)
    out["seed"] = a.seed
    write(name(a.seed, a.quick), out)


if __name__ == "__main__":
    main()
