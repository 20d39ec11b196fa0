"""Whether the sequential test's reads pay at ``max_fraction``·N on the normal mean (paper 000 §3).

``subsampled.Budget`` keeps the budget at ``max_fraction``·N only while more than 40% of the
decisions settle within it.  Its docstring states the economics: with the budget held there, a
share f of the decisions settle; a decision reads sections costing R on average, and one that
does not settle costs a full pass P as well, so the reads pay when f·P > R.  This measures f
and R/P where the test reads most: the mean of normal data (the cheapest likelihood, N = 10⁶,
``plain_vs_exact.normal_case``: a random walk scaled to the posterior, from the mode), through
``th.infer`` with default recording:

* ``exact``: ``th.mh(site, th.drift(s))``, seconds per step = P (one full pass);
* ``held``: ``th.subsampled_mh(site, proposal=th.drift(s))`` with its budget held at
  ``max_fraction``·N (the rule's share set below 0, so it never falls): f = 1 −
  ``full_passes_per_step``, and R = its seconds per step − (1 − f)·P.

Rounds alternate the two kernels after an untimed warm-up; f and R/P are medians over
rounds.  (000 Fig. 5's fixed steps on the logistic model are measured by ``sublinearity.py``:
its ``fixed.default.ran_to_N_rate`` at 10⁶ is 1 − f, and ``seconds_mean`` against the exact
step gives R in the same way.)

Writes ``benchmarks/results/budget_economics.json``.
Run: ``python benchmarks/budget_economics.py`` (``--quick``: N = 10⁵, fewer rounds).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import thrifty as th  # noqa: E402
from _common import steady_heap, write  # noqa: E402
from plain_vs_exact import normal_case  # noqa: E402


def held(site, sd):
    k = th.subsampled_mh(site, proposal=th.drift(sd))
    k.budget.SHARE = -1.0  # (any share settled keeps max_fraction·N: held there)
    return k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1e5, 2 rounds of 50 steps")
    args = ap.parse_args()
    n, rounds, steps = (100_000, 2, 50) if args.quick else (1_000_000, 5, 200)
    steady_heap()
    prog, site, sd, init = normal_case(n)
    rows = []
    t_start = time.perf_counter()
    with warnings.catch_warnings():  # (first calls, caches: untimed)
        warnings.simplefilter("ignore")
        for k in (th.mh(site, th.drift(sd)), held(site, sd)):
            th.infer(prog, k, num_samples=20, seed=99, init=init, progress=False)
    for r in range(rounds):
        secs = {}
        for name in ("exact", "held"):
            k = th.mh(site, th.drift(sd)) if name == "exact" else held(site, sd)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (short chains' convergence warnings)
                res = th.infer(prog, k, num_samples=steps, seed=r, init=init, progress=False)
            secs[name] = (time.perf_counter() - t0) / steps
            if name == "held":
                f = 1.0 - res.stats[k.label()]["full_passes_per_step"]
        P = secs["exact"]
        R = secs["held"] - (1.0 - f) * P
        rows.append({"f": f, "P_seconds": P, "held_seconds": secs["held"], "R_over_P": R / P})
        print(f"round {r}: f = {f:.3f}, P = {P * 1e3:.2f} ms, held {secs['held'] * 1e3:.2f} ms, "
              f"R/P = {R / P:.2f}", flush=True)
    out = {
        "f_median": statistics.median(x["f"] for x in rows),
        "R_over_P_median": statistics.median(x["R_over_P"] for x in rows),
    }
    print(f"median f = {out['f_median']:.3f}, R/P = {out['R_over_P_median']:.2f} "
          f"(the reads pay when f > R/P)")
    path = write("budget_economics_quick" if args.quick else "budget_economics", {
        "settings": {"N": n, "rounds": rounds, "steps_per_round": steps,
                     "model": "normal_mean(y): mu ~ N(0, 2^2), y_i ~ N(mu, 1)",
                     "proposal": "th.drift(2.38 x posterior sd), start at the mode",
                     "quick": args.quick},
        "rounds": rows, **out, "wall_seconds": time.perf_counter() - t_start,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
