"""The cost of an MH step on a DP mixture's concentration α against N, for both spellings.

Model: a DP mixture of 2-d Gaussians with a collapsed Normal–Inverse-Wishart per table
(:func:`thrifty.models.dp_mixture`) on :func:`thrifty.datasets.clustered_nonlinear`, labels
started at the six true clusters.  Kernel: ``th.mh("alpha", th.drift(0.5))`` through
``th.infer`` with default recording.

* **owned** — ``th.CRP(alpha=dist.Gamma(1, 1), name="alpha")``: the process draws α and gives it
  to no code of the model, so a step re-scores the Ewens joint in O(1) and executes no element;
* **held** — ``alpha = th.sample("alpha", ...)``; ``th.CRP(alpha)``: the model holds α, the plate
  after it re-runs at each change (program order), O(N) per step.

Reported: seconds per α step and plate elements executed per step at N = 1,000 and 20,000, and
the ratio N = 20,000 / N = 1,000 per spelling (criterion for the owned spelling: within 2×).
Both spellings are timed in the same process, interleaved.

Run: ``cd benchmarks && ../.venv/bin/python alpha_step.py``.
"""

from __future__ import annotations

import numpy as np

import thrifty as th
from _common import machine, steady_heap, write
from thrifty import dist

M0, K0, V0, S0 = np.zeros(2), 0.05, 4.0, np.eye(2)
SIZES = (1_000, 20_000)
STEPS = 1500


@th.model
def owned(x):
    crp = th.CRP(alpha=dist.Gamma(1.0, 1.0), name="alpha")
    feats = th.mem("feats", lambda k: th.collapsed.NormalInverseWishart(M0, K0, V0, S0))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
    return z


@th.model
def held(x):
    alpha = th.sample("alpha", dist.Gamma(1.0, 1.0))
    crp = th.CRP(alpha)
    feats = th.mem("feats", lambda k: th.collapsed.NormalInverseWishart(M0, K0, V0, S0))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
    return z


def six_clusters(x):
    angles = np.arange(6) * np.pi / 3
    centres = 4.0 * np.c_[np.cos(angles), np.sin(angles)]
    return np.argmin(((x[:, None, :] - centres) ** 2).sum(-1), axis=1)


def alpha_step(model, x, labels, steps, seed=0) -> dict:
    k = th.mh("alpha", th.drift(0.5))
    r = th.infer(model(x), k, num_samples=steps, burn_in=0, seed=seed, progress=False,
                 init={"data.z": labels})
    s = r.stats[k.label()]
    return {"seconds_per_step": s["seconds_per_step"],
            "elements_per_step": s["elements_per_step"],
            "acceptance_rate": s["acceptance_rate"]}


def main() -> dict:
    steady_heap()
    out: dict = {"machine": machine(), "steps": STEPS, "rounds": 3}
    for name in ("owned", "held"):
        out[name] = {}
    for n in SIZES:
        d = th.datasets.clustered_nonlinear(n, 10, seed=0)
        x = d.X_train[:, 1:]
        labels = six_clusters(x)
        rounds = {"owned": [], "held": []}
        for _ in range(out["rounds"]):  # interleaved: drift of a shared machine cancels
            for name, model in (("owned", owned), ("held", held)):
                steps = STEPS if name == "owned" else max(50, STEPS * 1000 // n)
                rounds[name].append(alpha_step(model, x, labels, steps))
        for name, rs in rounds.items():
            best = min(rs, key=lambda r: r["seconds_per_step"])
            out[name][n] = {**best, "seconds_per_step_rounds": [r["seconds_per_step"]
                                                                for r in rs]}
            print(f"{name:>5}, N = {n:>6}: {1e3 * best['seconds_per_step']:8.3f} ms per α step, "
                  f"{best['elements_per_step']:8.1f} elements per step, acceptance "
                  f"{best['acceptance_rate']:.2f}")
    for name in ("owned", "held"):
        ratio = out[name][SIZES[1]]["seconds_per_step"] / out[name][SIZES[0]]["seconds_per_step"]
        out[name]["ratio"] = ratio
        print(f"{name}: seconds per α step, N = {SIZES[1]} / N = {SIZES[0]}: {ratio:.2f}")
    out["owned"]["criterion"] = "ratio <= 2"
    out["owned"]["met"] = bool(out["owned"]["ratio"] <= 2.0)
    write("alpha_step", out)
    return out


if __name__ == "__main__":
    main()
