"""Table-label updates of a DP mixture: the candidates scored in one execution in lanes against
one run per candidate (paper 000 §4.2, Fig. 7 top; Neal 2000, Alg. 3 and 8).

``th.gibbs(th.one("data.z"))`` on a CRP label weighs K candidates — the occupied tables and a
new one.  It scores them in *one* execution of the element in K lanes (each lane: the CRP's
predictive of its table given the other labels, the table's collapsed feature predictive, the
logistic term under the table's weights; :class:`thrifty.core.engine.Candidates`) and commits
the drawn table by a second run.  The baseline, defined here with the same engine interface,
is the update as it was written before: one run of the element per candidate other than the
current one, the drawn candidate's run committed.  Both kernels draw from the same full
conditional (``tests/test_exchangeable.py`` checks the lanes' weights against one run per
candidate to 1e-9) and use the generator alike (the new table's weights, then the Gumbel
draws), so with the same seed their chains are *identical* — checked here on every round.

Models on :func:`thrifty.datasets.clustered_nonlinear` (N = 10,000 training points, six
clusters), each started from k-means labels (``STARTS`` clusters: K ≈ 10 candidates):

* ``joint_dpm`` — collapsed NIW features and memoized logistic weights per table (Alg. 8);
* ``dp_mixture`` — collapsed NIW features only (Alg. 3);
* ``finite_mixture_K10`` — ten Normal components, labels ``Categorical(10)`` (an enumerated
  support: K = 10 candidates), N = 10,000 points drawn around 0, 3, …, 27.

Each round runs ``steps`` updates through ``th.infer`` (default recording) with each kernel,
interleaved with the same seed; reported: medians over rounds of seconds per update, the
ratio per candidate over lanes (the criterion: ≥ 3 at K ≈ 10), the mean number of tables in
the draws and of candidates (tables + 1), and whether the two kernels' draws were identical.

Run: ``cd benchmarks && ../.venv/bin/python label_update.py`` (``--quick``: fewer steps).
Writes ``results/label_update.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import thrifty as th
from _common import machine, steady_heap, write
from thrifty import dist
from thrifty.inference.mcmc.gibbs import Gibbs
from thrifty.models import dp_mixture, joint_dpm

M0, K0, V0, S0, SIG_W = np.zeros(2), 0.05, 4.0, np.eye(2), 10.0


class PerCandidate(Gibbs):
    """The baseline: one run of the element per candidate other than the current one."""

    def _pick_lanes(self, trace, view, rel, e, values, cur, rng, mode):
        plate = view.addr
        plan = view.plan(np.array([e]))
        self._pick(trace, rng, values, cur, plan, plate + (e,) + rel, (plate, rel),
                   plan.plates[plate], mode)


@th.model
def finite_mixture(y, k):
    """Ten Normal components (means drawn), labels with a finite support."""
    mu = th.sample("mu", dist.Normal(np.zeros(k), 5.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Categorical(np.full(k, 1.0 / k)))
        th.observe("y", dist.Normal(mu[z], 1.0), y[i])


def programs(n: int) -> dict:
    """Each model with its start and its number of candidates (None: the tables + 1).  The
    DP mixtures start from k-means labels on the features, as many clusters as keep the mean
    number of candidates near 10 over a round (the JointDPM opens tables faster: a new
    table's weights drawn from their prior fit some points better); the finite mixture from
    labels drawn uniformly."""
    from scipy.cluster.vq import kmeans2

    d = th.datasets.clustered_nonlinear(n, 100, seed=0)
    rng = np.random.default_rng(0)
    y = rng.normal(3.0 * rng.integers(0, 10, n), 1.0)
    start = {k: kmeans2(d.X_train[:, 1:], k, seed=0, minit="++")[1] for k in (STARTS.values())}
    return {
        "joint_dpm": (joint_dpm(d.X_train, d.y_train, M0, K0, V0, S0, SIG_W),
                      start[STARTS["joint_dpm"]], None),
        "dp_mixture": (dp_mixture(d.X_train[:, 1:], M0, K0, V0, S0), start[STARTS["dp_mixture"]],
                       None),
        "finite_mixture_K10": (finite_mixture(y, 10), rng.integers(0, 10, n), 10),
    }


STARTS = {"joint_dpm": 4, "dp_mixture": 9}  # k-means clusters of the start


def one(prog, kernel, z0, steps: int, seed: int) -> tuple:
    """Seconds per update, mean number of tables, mean number of candidates, the draws.

    Seconds per update: the difference of two ``th.infer`` runs (``steps`` and ``steps // 5``
    updates, the same seed) over the difference of their updates, so that the fixed costs of a
    run (the initial trace of 10,000 points, the check after the first and the last step) do
    not count as per-update cost."""
    def timed(n):
        t0 = time.perf_counter()
        r = th.infer(prog, kernel, num_samples=n, burn_in=0, seed=seed, init={"data.z": z0},
                     progress=False)
        return time.perf_counter() - t0, r

    short = steps // 5
    t_short, _ = timed(short)
    t_long, r = timed(steps)
    dt = (t_long - t_short) / (steps - short)
    z = np.asarray(r["data.z"])[0]
    tables = np.array([len(np.unique(row)) for row in z[:: max(1, steps // 200)]])
    # candidates: the occupied tables and a new one (none for an element alone at its table)
    return dt, float(tables.mean()), float(tables.mean() + 1), z


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    args = ap.parse_args()
    steady_heap()
    rounds, steps = (3, 300) if args.quick else (5, 1000)
    t_start = time.perf_counter()
    out = {}
    for name, (prog, z0, k) in programs(10_000).items():
        lanes, per = [], []
        for r in range(rounds):
            lanes.append(one(prog, th.gibbs(th.one("data.z")), z0, steps, r))
            per.append(one(prog, PerCandidate(th.one("data.z")), z0, steps, r))
        ratios = [b[0] / a[0] for a, b in zip(lanes, per)]
        out[name] = {
            "lanes_seconds_per_update": statistics.median(a[0] for a in lanes),
            "per_candidate_seconds_per_update": statistics.median(b[0] for b in per),
            "speedup": statistics.median(ratios),
            "speedup_rounds": ratios,
            "mean_candidates": k or statistics.mean(a[2] for a in lanes),
            "mean_tables_lanes": statistics.mean(a[1] for a in lanes),
            "mean_tables_per_candidate": statistics.mean(b[1] for b in per),
            "identical_draws": all(np.array_equal(a[3], b[3]) for a, b in zip(lanes, per)),
        }
        o = out[name]
        print(f"{name:>18}: lanes {o['lanes_seconds_per_update'] * 1e3:6.2f} ms/update, one run "
              f"per candidate {o['per_candidate_seconds_per_update'] * 1e3:6.2f} ms/update, "
              f"speed-up {o['speedup']:.2f}x at K ≈ {o['mean_candidates']:.1f}; identical "
              f"draws: {o['identical_draws']}", flush=True)
    res = {
        "machine": machine(),
        "settings": {"rounds": rounds, "steps_per_round": steps, "N": 10_000,
                     "start_kmeans_clusters": STARTS, "quick": args.quick,
                     "timing": "difference of the wall seconds of two th.infer runs (default "
                               "recording; steps and steps // 5) / difference of updates"},
        **out,
        "wall_seconds": time.perf_counter() - t_start,
    }
    print("wrote", write("label_update_quick" if args.quick else "label_update", res))


if __name__ == "__main__":
    main()
