"""What check mode costs (``th.infer(check=...)``, :mod:`thrifty.core.check`).

(a) One check — the program executed from scratch at the trace's values, then compared node by
    node — against one full rescoring run of the same trace (``Run(mode=RESCORE)``, what any
    full execution costs), on Bayesian logistic regression (d = 5) at N = 10³, 10⁴, 10⁵ and on
    an AR(1) chain of T = 10², 10³ steps: the ratio of seconds per call, in alternating rounds.
(b) A whole ``th.infer`` run with the default ``check="auto"`` (checks after steps 1, 10, 100,
    1000 and the last, and whenever the steps since the last check took 1/0.03 times what it
    took) against ``check=False``: MH on logistic regression at N = 10⁴, 2,000
    steps, one chain — the ratio of wall times, alternating runs.  And ``check=True`` (a check
    after every step) against ``check=False`` over 200 steps: the price of debugging mode.

Writes ``benchmarks/results/check_mode.json``.  Run: ``python benchmarks/check_mode.py``.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import thrifty as th
from _common import interleaved_ratio, steady_heap, write
from thrifty import dist
from thrifty.core.check import check_trace
from thrifty.core.run import RESCORE, Run
from thrifty.datasets import synthetic_logistic
from thrifty.models.logistic import logistic_regression


@th.model
def ar_chain(ys):
    phi = th.sample("phi", dist.Uniform(-1.0, 1.0))

    def step(t, prev):
        h = th.sample("h", dist.Normal(phi * prev, 0.5))
        th.observe("x", dist.Normal(h, 0.3), ys[t])
        return h

    return th.markov("h", step, len(ys), 0.0)


def one_check_vs_full_run() -> dict:
    out = {}
    cases = [(f"logistic_N={n}", logistic_regression(*synthetic_logistic(n, 5, seed=0)[:2]))
             for n in (1_000, 10_000, 100_000)]
    cases += [(f"ar_chain_T={t}", ar_chain(np.random.default_rng(0).normal(size=t)))
              for t in (100, 1_000)]
    for name, program in cases:
        rng = np.random.default_rng(0)
        trace = th.initialize(program, rng)
        assert check_trace(trace) == []
        r = interleaved_ratio(lambda t=trace: check_trace(t),
                              lambda t=trace, g=rng: Run(t, g, mode=RESCORE).execute(),
                              calls=3, rounds=5)
        out[name] = {"check_seconds": r["a_seconds"], "full_run_seconds": r["b_seconds"],
                     "ratio": r["ratio"], "ratio_min": r["ratio_min"],
                     "ratio_max": r["ratio_max"]}
        print(f"{name:>18}: check {r['a_seconds'] * 1e3:8.2f} ms, full run "
              f"{r['b_seconds'] * 1e3:8.2f} ms, ratio {r['ratio']:.2f}")
    return out


def _wall(program, kernel, steps, check) -> float:
    t0 = time.perf_counter()
    th.infer(program, kernel, num_samples=steps, seed=0, progress=False, workers=1, check=check)
    return time.perf_counter() - t0


def infer_overhead(rounds: int = 5) -> dict:
    X, y, _ = synthetic_logistic(10_000, 5, seed=0)
    program = logistic_regression(X, y)
    kernel = th.mh("w", th.drift(0.02))
    out = {}
    for label, check, steps in (("auto", "auto", 2_000), ("every_step", True, 200)):
        on, off = [], []
        for _ in range(rounds):
            on.append(_wall(program, kernel, steps, check))
            off.append(_wall(program, kernel, steps, False))
        ratios = [a / b for a, b in zip(on, off)]
        out[label] = {"steps": steps, "seconds_checked": statistics.median(on),
                      "seconds_unchecked": statistics.median(off),
                      "ratio": statistics.median(ratios), "ratio_min": min(ratios),
                      "ratio_max": max(ratios)}
        print(f"th.infer check={check!r:>6} over {steps} steps: {statistics.median(on):.2f} s "
              f"vs {statistics.median(off):.2f} s unchecked, ratio {statistics.median(ratios):.3f}")
    return out


if __name__ == "__main__":
    steady_heap()
    results = {"one_check_vs_full_run": one_check_vs_full_run(),
               "infer_overhead_logistic_N=10000": infer_overhead()}
    print(write("check_mode", results))
