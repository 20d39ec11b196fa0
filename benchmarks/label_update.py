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
candidate to 1e-9).

Models on :func:`thrifty.datasets.clustered_nonlinear` (N = 10,000 training points, six
clusters), started from k-means labels with 10 clusters (K ≈ 11 candidates):

* ``joint_dpm`` — collapsed NIW features and memoized logistic weights per table (Alg. 8);
* ``dp_mixture`` — collapsed NIW features only (Alg. 3).

Each round runs ``steps`` updates through ``th.infer`` (default recording) with each kernel,
interleaved; reported: medians over rounds of seconds per update, the ratio per candidate over
lanes (the criterion: ≥ 3 at K ≈ 10), the mean number of candidates, and the mean number of
tables of each kernel's draws (same answers: the two chains are different draws of one
conditional, so these agree within noise, not exactly).

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
from thrifty.core.engine import Plan, VecTarget, plan_elements
from thrifty.core.engine import plate as plate_view
from thrifty.inference.mcmc.gibbs import Gibbs
from thrifty.models import dp_mixture, joint_dpm

M0, K0, V0, S0, SIG_W = np.zeros(2), 0.05, 4.0, np.eye(2), 10.0


class PerCandidate(Gibbs):
    """The baseline: one run of the element per candidate other than the current one."""

    def _coupled(self, trace, plate, rel, e, rng):
        view = plate_view(trace, plate)
        cur = int(view.values(rel, [e])[0])
        elems = np.array([e])
        plan = plan_elements(trace, Plan(), plate, elems)
        self._pick(view.candidates(rel, cur), cur, lambda v: self.execute(
            trace, rng, vec={(plate, rel): VecTarget(elems, np.array([v]))}, plan=plan), rng)


def programs(n: int):
    d = th.datasets.clustered_nonlinear(n, 100, seed=0)
    from scipy.cluster.vq import kmeans2

    z0 = kmeans2(d.X_train[:, 1:], 10, seed=0, minit="++")[1]
    return z0, {
        "joint_dpm": joint_dpm(d.X_train, d.y_train, M0, K0, V0, S0, SIG_W),
        "dp_mixture": dp_mixture(d.X_train[:, 1:], M0, K0, V0, S0),
    }


def one(prog, kernel, z0, steps: int, seed: int) -> tuple[float, float, float]:
    """Seconds per update, mean number of tables, mean number of candidates."""
    t0 = time.perf_counter()
    r = th.infer(prog, kernel, num_samples=steps, burn_in=0, seed=seed, init={"data.z": z0},
                 progress=False)
    dt = (time.perf_counter() - t0) / steps
    z = np.asarray(r["data.z"])[0]
    tables = np.array([len(np.unique(row)) for row in z[:: max(1, steps // 200)]])
    # candidates: the occupied tables and a new one (none for an element alone at its table)
    return dt, float(tables.mean()), float(tables.mean() + 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    args = ap.parse_args()
    steady_heap()
    rounds, steps = (3, 300) if args.quick else (5, 2000)
    t_start = time.perf_counter()
    z0, progs = programs(10_000)
    out = {}
    for name, prog in progs.items():
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
            "mean_candidates": statistics.mean(a[2] for a in lanes),
            "mean_tables_lanes": statistics.mean(a[1] for a in lanes),
            "mean_tables_per_candidate": statistics.mean(b[1] for b in per),
        }
        o = out[name]
        print(f"{name:>10}: lanes {o['lanes_seconds_per_update'] * 1e3:6.2f} ms/update, one run "
              f"per candidate {o['per_candidate_seconds_per_update'] * 1e3:6.2f} ms/update, "
              f"speed-up {o['speedup']:.2f}x at K ≈ {o['mean_candidates']:.1f}; tables "
              f"{o['mean_tables_lanes']:.2f} vs {o['mean_tables_per_candidate']:.2f}",
              flush=True)
    res = {
        "machine": machine(),
        "settings": {"rounds": rounds, "steps_per_round": steps, "N": 10_000,
                     "start": "k-means labels, 10 clusters", "quick": args.quick,
                     "timing": "wall seconds of th.infer (default recording) / updates"},
        **out,
        "wall_seconds": time.perf_counter() - t_start,
    }
    print("wrote", write("label_update_quick" if args.quick else "label_update", res))


if __name__ == "__main__":
    main()
