"""What the Laplace start of ``th.mh("w", th.drift())`` costs on a tall logistic regression.

Before the first draw, an adapted random walk moves its chain to a draw from the Laplace
approximation at the mode (``thrifty/inference/proposals/laplace_start.py``).  This script times
that start at N = 10⁵, d = 10 (``synthetic_logistic``, w ~ N(0, 0.1·I)), in one process, in
alternating rounds, against two baselines on the same data:

* **numpy_newton** — a hand-written Newton's method in NumPy for the mode and the Laplace
  covariance (``thrifty.models.logistic.laplace``: the floor for a fit on the full data);
* **before** — the start as it was at ``--rev`` (default ``732a3d5``: BFGS on finite
  differences, each evaluation one execution of the program), loaded from git into this
  process.

Two models: ``glm`` — the observations as ``glm.logistic(X[i], w)`` (``thrifty.models.
logistic_regression``), where the start is Newton on the data with the family's derivatives;
``bernoulli`` — the same likelihood written ``dist.Bernoulli(logits=X[i] @ w)``, which thrifty
cannot see is a GLM: BFGS on executions, now bounded (``MAX_EXECUTIONS_PER_DIM``,
``MAX_ELEMENTS``).  Reported per model and version: median seconds over the rounds, program
executions and plate elements executed (in units of N), Newton passes over X, and the ratios
before / now and now / numpy_newton.  The start draws from N(mode, H⁻¹), so its result is
compared with NumPy's mode in posterior sds.

Writes ``benchmarks/results/laplace_start.json``.
Run: ``cd benchmarks && ../.venv/bin/python laplace_start.py [--rounds 3] [--n 100000] [--d 10]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
import types
from pathlib import Path

import numpy as np

import thrifty as th
from _common import write
from thrifty import dist
from thrifty.core.run import Run
from thrifty.core.simulate import initialize
from thrifty.datasets import synthetic_logistic
from thrifty.inference.proposals.laplace_start import laplace_start
from thrifty.models.logistic import laplace, logistic_regression

REPO = Path(__file__).resolve().parent.parent


@th.model
def bernoulli_regression(X, y):
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), 0.1 * np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Bernoulli(logits=X[i] @ w), y[i])


def old_start(rev: str):
    """``laplace_start`` as it was at ``rev`` (its module source from git, run here)."""
    src = subprocess.run(
        ["git", "show", f"{rev}:src/thrifty/inference/proposals/laplace_start.py"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout
    module = types.ModuleType(f"laplace_start_{rev}")
    exec(compile(src, module.__name__, "exec"), module.__dict__)
    return module.laplace_start


class Counter:
    """Executions of the program and plate elements they executed (every ``Run``)."""

    def __init__(self):
        self.runs = self.elements = 0
        self._execute = Run.execute
        counter = self

        def counting(run):
            out = counter._execute(run)
            counter.runs += 1
            counter.elements += run.work_elements
            return out

        Run.execute = counting

    def reset(self):
        self.runs = self.elements = 0


def one_start(program, start_fn, counter, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    trace = initialize(program, rng)
    k = th.mh("w", th.drift())
    k.prepare_all(trace)
    counter.reset()
    t0 = time.perf_counter()
    start_fn(k, trace, rng, {})
    seconds = time.perf_counter() - t0
    cost = k.stats.start[0] if k.stats.start else {}
    return {
        "seconds": seconds,
        "executions": counter.runs,
        "elements": counter.elements,
        "newton_passes": cost.get("newton_passes"),
        "method": cost.get("method", "bfgs (before)"),
        "w": np.asarray(trace["w"], dtype=float),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rev", default="732a3d5")
    args = ap.parse_args()
    n, d = args.n, args.d
    X, y, _ = synthetic_logistic(n, d, seed=0)
    mode, cov = laplace(X, y)
    sd = np.sqrt(np.diag(cov))
    before = old_start(args.rev)
    counter = Counter()
    programs = {"glm": logistic_regression(X, y), "bernoulli": bernoulli_regression(X, y)}
    versions = {"now": laplace_start, "before": before}
    runs: dict = {(m, v): [] for m in programs for v in versions}
    numpy_seconds = []
    for r in range(args.rounds):
        t0 = time.perf_counter()
        laplace(X, y)
        numpy_seconds.append(time.perf_counter() - t0)
        for m, prog in programs.items():
            for v, fn in versions.items():
                runs[(m, v)].append(one_start(prog, fn, counter, seed=r))
                last = runs[(m, v)][-1]
                print(f"round {r}: {m:9s} {v:6s} {last['seconds']:8.3f} s, "
                      f"{last['executions']} executions", flush=True)
    t_numpy = statistics.median(numpy_seconds)
    out: dict = {"n": n, "d": d, "rounds": args.rounds, "before_rev": args.rev,
                 "numpy_newton_seconds": t_numpy, "models": {}}
    for m in programs:
        res = {}
        for v in versions:
            rs = runs[(m, v)]
            res[v] = {
                "seconds": statistics.median(x["seconds"] for x in rs),
                "executions": statistics.median(x["executions"] for x in rs),
                "elements_over_n": statistics.median(x["elements"] for x in rs) / n,
                "newton_passes": rs[0]["newton_passes"],
                "method": rs[0]["method"],
                "start_minus_mode_in_sds_max": max(
                    float(np.max(np.abs(x["w"] - mode) / sd)) for x in rs),
            }
        res["before_over_now"] = res["before"]["seconds"] / res["now"]["seconds"]
        res["now_over_numpy_newton"] = res["now"]["seconds"] / t_numpy
        out["models"][m] = res
    print(f"\nN = {n}, d = {d}: NumPy Newton {t_numpy:.3f} s")
    for m, res in out["models"].items():
        for v in versions:
            x = res[v]
            print(f"{m:9s} {v:6s} {x['seconds']:8.3f} s  {x['executions']:6.0f} executions  "
                  f"{x['elements_over_n']:7.1f} N elements  newton passes {x['newton_passes']}  "
                  f"start within {x['start_minus_mode_in_sds_max']:.1f} sds of the mode")
        print(f"{m:9s} before/now {res['before_over_now']:.1f}x, "
              f"now/numpy_newton {res['now_over_numpy_newton']:.2f}x")
    path = write("laplace_start", out)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
