"""Plain subsampled MH against exact MH with an efficient proposal (paper 000 §3, §4.1).

With a proposal scaled to the posterior, most MH decisions are close: the log-ratios l_i are as
noisy as Σ l_i is near log u, and the sequential test has to read most of the data.  Reading
sections in random minibatches costs several times more per section than one pass over the
whole plate, so the test alone costs several exact MH steps.  ``th.subsampled_mh`` therefore
stops the test after a budget of sections — at most ``max_fraction``·N (default 1/32), falling
to one minibatch while few decisions settle within it (``subsampled.Budget``) — and takes exact
MH's decision from one full pass.  This benchmark measures seconds per step through
``th.infer`` (default arguments and recording: no burn-in with a fixed drift, so the budget's
adaptation is inside the timed steps; wall time of the whole call over its steps) for

* ``exact``: ``th.mh(site, th.drift(s))``;
* ``subsampled``: ``th.subsampled_mh(site, proposal=th.drift(s))`` (defaults: ε = 0.01,
  minibatches of 100, ``max_fraction`` = 1/32);
* ``test_alone``: the same with ``max_fraction=1`` (the sequential test up to all N, 000 Alg. 2),

with s = 2.38/√d × the posterior sd of each coordinate (Laplace for the logistic models),
every chain started at the posterior mode.  Rounds interleave the kernels in this process; the
ratio is the median over rounds of (subsampled seconds / exact seconds) in the same round.
Data, N = 10⁶: the 2-feature set of 000 Fig. 5a (``two_feature``, logistic, d = 3), a
10-feature tall logistic regression (``synthetic_logistic``, d = 10), and the mean of normal
data (y_i ~ N(μ, 1), μ ~ N(0, 2²), d = 1) — the cheapest likelihood, whose full pass costs
least against a section read in a minibatch.

Short runs: the normal mean again, 10 runs of 100 steps with different seeds, exact and
subsampled alternating — the budget's first decisions, read at ``max_fraction``·N before it
adapts, weigh more in a short run, and how long the budget takes to fall varies with the seed.

Writes ``benchmarks/results/plain_vs_exact.json``.
Run: ``python benchmarks/plain_vs_exact.py`` (``--quick``: N = 10⁵, fewer rounds).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # the same single-threaded BLAS for every kernel

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import thrifty as th  # noqa: E402
from _common import machine, steady_heap, write  # noqa: E402
from thrifty import dist  # noqa: E402
from thrifty.datasets import synthetic_logistic, two_feature  # noqa: E402
from thrifty.models.logistic import laplace, logistic_regression  # noqa: E402

PRIOR_VAR = 0.1


def kernels(site, sd) -> dict:
    return {
        "exact": th.mh(site, th.drift(sd)),
        "subsampled": th.subsampled_mh(site, proposal=th.drift(sd)),
        "test_alone": th.subsampled_mh(site, proposal=th.drift(sd), max_fraction=1.0),
    }


@th.model
def normal_mean(y):
    mu = th.sample("mu", dist.Normal(0.0, 2.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


def logistic_case(X, y):
    """(program, site, proposal sd, init) of a logistic regression started at its mode."""
    mode, cov = laplace(X, y, PRIOR_VAR)
    sd = 2.38 / np.sqrt(X.shape[1]) * np.sqrt(np.diag(cov))
    return logistic_regression(X, y, PRIOR_VAR), "w", sd, {"w": mode}


def normal_case(n: int):
    y = np.random.default_rng(0).normal(1.0, 1.0, n)
    post_sd = (n + 0.25) ** -0.5  # (the conjugate posterior of μ)
    return normal_mean(y), "mu", 2.38 * post_sd, {"mu": float(y.sum() / (n + 0.25))}


def measure(prog, site, sd, init, rounds: int, steps: int) -> dict:
    secs = {name: [] for name in kernels(site, sd)}
    stats = {name: [] for name in secs}
    for r in range(rounds):
        for name, k in kernels(site, sd).items():
            t0 = time.perf_counter()
            res = th.infer(prog, k, num_samples=steps, seed=r, init=init, progress=False)
            secs[name].append((time.perf_counter() - t0) / steps)
            stats[name].append(res.stats[k.label()])
    out = {"proposal_sd": np.atleast_1d(sd).tolist(), "kernels": {}}
    for name in secs:
        keys = [k for k, v in stats[name][0].items() if isinstance(v, (int, float))]
        out["kernels"][name] = {
            "seconds_per_step": statistics.median(secs[name]),
            "seconds_per_step_rounds": secs[name],
            **{k: float(np.mean([s[k] for s in stats[name]])) for k in keys},
        }
    for name in ("subsampled", "test_alone"):
        ratios = [a / b for a, b in zip(secs[name], secs["exact"])]
        out[f"ratio_{name}_over_exact"] = statistics.median(ratios)
        out[f"ratio_{name}_over_exact_rounds"] = ratios
    return out


def short_runs(prog, site, sd, init, seeds: int, steps: int) -> dict:
    """Runs of ``steps`` steps, one per seed, exact and subsampled alternating: the budget's
    first decisions, read at ``max_fraction``·N before it adapts, weigh more in a short run."""
    ratios = []
    for seed in range(seeds):
        t = {}
        for name in ("exact", "subsampled"):
            k = kernels(site, sd)[name]
            t0 = time.perf_counter()
            th.infer(prog, k, num_samples=steps, seed=100 + seed, init=init, progress=False)
            t[name] = time.perf_counter() - t0
        ratios.append(t["subsampled"] / t["exact"])
    return {"steps": steps, "seeds": seeds, "ratios": ratios,
            "median": statistics.median(ratios), "max": max(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 1e5, 3 rounds")
    args = ap.parse_args()
    # runs of a few hundred steps from the mode are for timing, not for estimates
    warnings.filterwarnings("ignore", category=th.ConvergenceWarning)
    steady_heap()
    n = 100_000 if args.quick else 1_000_000
    rounds, steps = (3, 50) if args.quick else (5, 200)
    t_start = time.perf_counter()
    cases = {
        "two_feature_d3": lambda: logistic_case(*two_feature(n, seed=0)[:2]),
        "synthetic_d10": lambda: logistic_case(*synthetic_logistic(n, 10, seed=0)[:2]),
        "normal_mean_d1": lambda: normal_case(n),
    }
    res = {
        "benchmark": "plain_vs_exact",
        "machine": machine(),
        "settings": {
            "N": n,
            "rounds": rounds,
            "steps_per_round": steps,
            "model": "logistic_regression(X, y, prior_var=0.1); normal_mean(y)",
            "proposal": "th.drift(2.38/sqrt(d) * posterior sd), start at the mode",
            "timing": "wall seconds of th.infer (default recording) / steps",
            "quick": args.quick,
        },
        "data": {},
    }
    for name, case in cases.items():
        r = measure(*case(), rounds, steps)
        res["data"][name] = r
        ks = r["kernels"]
        print(
            f"{name} N={n:,}: exact {ks['exact']['seconds_per_step'] * 1e3:.2f} ms/step, "
            f"subsampled {ks['subsampled']['seconds_per_step'] * 1e3:.2f} ms "
            f"(ratio {r['ratio_subsampled_over_exact']:.2f}, full passes "
            f"{ks['subsampled'].get('full_passes_per_step', 0):.2f}/step, acc "
            f"{ks['subsampled']['acceptance_rate']:.2f}), test alone "
            f"{ks['test_alone']['seconds_per_step'] * 1e3:.2f} ms "
            f"(ratio {r['ratio_test_alone_over_exact']:.2f}, "
            f"{ks['test_alone']['sections_per_step']:.0f} sections/step)",
            flush=True,
        )
    short = short_runs(*normal_case(n), 3 if args.quick else 10, 100)
    res["short_runs_normal_mean"] = short
    print(
        f"normal_mean_d1, runs of {short['steps']} steps, {short['seeds']} seeds: subsampled / "
        f"exact median {short['median']:.2f}, max {short['max']:.2f} "
        f"({', '.join(f'{r:.2f}' for r in short['ratios'])})",
        flush=True,
    )
    res["criteria"] = {
        "subsampled_over_exact_le_1.5": all(
            r["ratio_subsampled_over_exact"] <= 1.5 for r in res["data"].values()
        )
    }
    res["wall_seconds"] = time.perf_counter() - t_start
    print("wrote", write("plain_vs_exact_quick" if args.quick else "plain_vs_exact", res))


if __name__ == "__main__":
    main()
