"""``core_overhead.py`` on this checkout and on an earlier revision, alternating, in one session.

The machines are shared and noisy, so the engine issue's "core_overhead (a)–(c) no worse than
before" is judged on ratios measured in one session: the script checks out ``--rev`` (default:
the commit before the engine rewrite) into a temporary git worktree, then runs that revision's
``core_overhead.py`` (with its own ``src`` on ``PYTHONPATH``) and this checkout's, alternately,
``--rounds`` times, and reports the median of each metric and the ratio new / old.

Metrics: (a) LMH steps per second on the HMM, kernel alone and through ``th.infer`` with
recording (higher is better); (b) seconds per Gibbs update of one plate element at N = 10³ and
10⁵ and their ratio; (c) seconds per ``th.mh`` step on logistic regression over the NumPy loop's
(lower is better).

Both revisions run with the same fixed glibc heap thresholds (``_common.steady_heap``): without
them (c) measures whether glibc page-faults NumPy's temporaries in (0.4 or 1.7 ms for the same
NumPy loop), which depends on the allocation history of the process, not on the engine.

Writes ``benchmarks/results/core_overhead_vs_<rev>.json``.
Run: ``python benchmarks/compare_revisions.py [--rev db65572] [--rounds 3]`` (a round runs both
scripts, about 3 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import STEADY_HEAP_ENV, write

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def metrics(path: Path) -> dict:
    d = json.loads(path.read_text())
    g = d["gibbs_one_element"]
    return {
        "a_kernel_steps_per_second": d["lmh_hmm"]["kernel_steps_per_second"],
        "a_infer_steps_per_second": d["lmh_hmm"]["infer_steps_per_second_with_recording"],
        "b_seconds_per_update_1e3": g["1000"]["seconds_per_update"],
        "b_seconds_per_update_1e5": g["100000"]["seconds_per_update"],
        "b_ratio_1e5_over_1e3": g["ratio_largest_to_smallest"],
        "c_ratio_to_numpy": d["mh_logistic_vs_numpy"]["ratio"],
    }


def run(tree: Path) -> dict:
    bench = tree / "benchmarks"
    result = bench / "results" / "core_overhead.json"
    # the same fixed glibc heap thresholds for both revisions (see _common.steady_heap; the
    # earlier revision's script does not set them itself)
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), **STEADY_HEAP_ENV)
    subprocess.run([sys.executable, "core_overhead.py"], cwd=bench, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return metrics(result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="db65572")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="thrifty-rev-"))
    old_tree = tmp / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), args.rev], cwd=REPO,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    saved = (HERE / "results" / "core_overhead.json").read_bytes()
    rows = {"old": [], "new": []}
    try:
        for r in range(args.rounds):
            for name, tree in (("old", old_tree), ("new", REPO)):
                rows[name].append(run(tree))
                print(f"round {r + 1} {name}: {rows[name][-1]}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
        (HERE / "results" / "core_overhead.json").write_bytes(saved)
    med = {
        k: {n: statistics.median(row[k] for row in rows[n]) for n in rows} for k in rows["new"][0]
    }
    out = {}
    for k, v in med.items():
        higher_better = "per_second" in k
        ratio = v["new"] / v["old"]
        out[k] = {
            "old": v["old"],
            "new": v["new"],
            "new_over_old": ratio,
            "no_worse": ratio >= 1.0 if higher_better else ratio <= 1.0,
        }
        print(f"{k:28s} old {v['old']:.4g}  new {v['new']:.4g}  new/old {ratio:.3f}")
    path = write(
        f"core_overhead_vs_{args.rev}",
        {"rev": args.rev, "rounds": args.rounds, "medians": out, "runs": rows},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
