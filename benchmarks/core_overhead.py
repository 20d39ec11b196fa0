"""Core overhead benchmark.

(a) LMH steps per second on the 3-state HMM of paper 001 §5 (kernel alone, and through
    ``th.infer`` with every draw recorded);
(b) seconds per Gibbs update of ONE plate element at N = 10³, 10⁴, 10⁵ (should not grow with N);
(c) thrifty ``mh`` with a drift proposal on Bayesian logistic regression (N = 10⁵, d = 10,
    vectorized plate) against a hand-written NumPy random-walk MH loop with the same proposal,
    timed in alternating rounds in this process: the ratio of seconds per step.

The heap is kept steady (``_common.steady_heap``): otherwise (c) swings from 0.5 to 1.5
depending on whether glibc page-faults NumPy's temporaries in, not on the code measured.

Writes ``benchmarks/results/core_overhead.json``.  Run: ``python benchmarks/core_overhead.py``.
"""

from __future__ import annotations

import time

import numpy as np

import thrifty as th
from _common import interleaved_ratio, seconds_per_call, steady_heap, write
from thrifty import dist
from thrifty.core.simulate import initialize
from thrifty.datasets import synthetic_logistic
from thrifty.models import hmm
from thrifty.models.logistic import logistic_regression


def bench_lmh_hmm(steps: int = 50_000) -> dict:
    rng = np.random.default_rng(0)
    trace = initialize(hmm(), rng)
    k = th.lmh()
    for _ in range(2000):
        k.step(trace, rng)
    t = seconds_per_call(lambda: k.step(trace, rng), steps)
    t0 = time.perf_counter()
    th.infer(hmm(), th.lmh(), num_samples=steps, seed=1, progress=False)
    wall = time.perf_counter() - t0
    return {
        "kernel_steps_per_second": 1.0 / t,
        "infer_steps_per_second_with_recording": steps / wall,
        "steps": steps,
    }


@th.model
def two_class_mixture(y):
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.5))
        th.observe("y", dist.Normal(2.0 * z - 1.0, 1.0), y[i])


def bench_gibbs_element(sizes=(1_000, 10_000, 100_000), updates: int = 3000) -> dict:
    out = {}
    for n in sizes:
        rng = np.random.default_rng(n)
        y = rng.normal(size=n) + np.where(rng.random(n) < 0.5, 1.0, -1.0)
        trace = initialize(two_class_mixture(y), rng)
        k = th.gibbs(th.one("data.z"))
        for _ in range(200):
            k.step(trace, rng)
        k.stats = type(k.stats)()
        t = seconds_per_call(lambda k=k, trace=trace, rng=rng: k.step(trace, rng), updates)
        out[str(n)] = {
            "seconds_per_update": t,
            "elements_executed_per_update": k.stats.elements / k.stats.steps,
        }
    small, large = out[str(sizes[0])], out[str(sizes[-1])]
    out["ratio_largest_to_smallest"] = large["seconds_per_update"] / small["seconds_per_update"]
    return out


def bench_mh_logistic(
    n: int = 100_000, d: int = 10, scale: float = 0.005, calls: int = 60, rounds: int = 15
):
    X, y, _ = synthetic_logistic(n, d, theta=0.3, seed=0)
    rng = np.random.default_rng(0)
    trace = initialize(logistic_regression(X, y), rng)
    k = th.mh("w", th.drift(scale))
    for _ in range(20):
        k.step(trace, rng)

    # The hand-written baseline: the same model, prior and proposal, written directly.
    yf = y.astype(float)

    def loglik(w):
        z = X @ w
        return float(np.sum(yf * z - (np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))))))

    state = {"w": trace["w"].copy()}
    state["lp"] = loglik(state["w"]) - 0.5 * state["w"] @ state["w"] / 0.1
    hrng = np.random.default_rng(1)

    def hand_step():
        w = state["w"]
        wp = w + scale * hrng.standard_normal(d)
        lp = loglik(wp) - 0.5 * wp @ wp / 0.1
        if np.log(hrng.random()) < lp - state["lp"]:
            state["w"], state["lp"] = wp, lp

    r = interleaved_ratio(lambda: k.step(trace, rng), hand_step, calls, rounds)
    return {
        "n": n,
        "d": d,
        "thrifty_seconds_per_step": r["a_seconds"],
        "numpy_seconds_per_step": r["b_seconds"],
        "ratio": r["ratio"],  # median over alternating rounds
        "ratio_range": [r["ratio_min"], r["ratio_max"]],
        "rounds": rounds,
        "acceptance_rate": k.stats.as_dict()["acceptance_rate"],
    }


def main() -> None:
    steady = steady_heap()
    # (c) first: the heap that (a) and (b) leave behind changes NumPy's allocation costs
    c = bench_mh_logistic()
    res = {
        "steady_heap": steady,
        "lmh_hmm": bench_lmh_hmm(),
        "gibbs_one_element": bench_gibbs_element(),
        "mh_logistic_vs_numpy": c,
    }
    a, b, c = res["lmh_hmm"], res["gibbs_one_element"], res["mh_logistic_vs_numpy"]
    print(
        f"(a) LMH on the HMM: {a['kernel_steps_per_second']:,.0f} steps/s (kernel), "
        f"{a['infer_steps_per_second_with_recording']:,.0f} steps/s (th.infer, recording)"
    )
    for n in ("1000", "10000", "100000"):
        print(
            f"(b) Gibbs on one element, N={int(n):>7,}: "
            f"{b[n]['seconds_per_update'] * 1e6:8.1f} µs/update, "
            f"{b[n]['elements_executed_per_update']:.1f} elements executed/update"
        )
    print(f"    ratio N=1e5 / N=1e3: {b['ratio_largest_to_smallest']:.2f}")
    print(
        f"(c) MH on logistic regression (N={c['n']:,}, d={c['d']}): thrifty "
        f"{c['thrifty_seconds_per_step'] * 1e3:.3f} ms/step, NumPy loop "
        f"{c['numpy_seconds_per_step'] * 1e3:.3f} ms/step, ratio {c['ratio']:.2f}"
    )
    print("wrote", write("core_overhead", res))


if __name__ == "__main__":
    main()
