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


_PART_C = (
    "import json, sys; sys.path.insert(0, {bench!r}); "
    "from _common import steady_heap; steady_heap(); import core_overhead; "
    "print(json.dumps(core_overhead.bench_mh_logistic()['ratio']))"
)


def run_c(tree: Path) -> float:
    """Only (c), with this checkout's benchmark code on either revision's engine."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), **STEADY_HEAP_ENV)
    out = subprocess.run([sys.executable, "-c", _PART_C.format(bench=str(HERE))], env=env,
                         check=True, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return float(out.stdout.strip().splitlines()[-1])


def main_c(args, old_tree: Path) -> None:
    """``--part c``: paired alternations of (c), the noisiest of the three."""
    rows = {"old": [], "new": []}
    for r in range(args.rounds):
        for name, tree in (("old", old_tree), ("new", REPO)):
            rows[name].append(run_c(tree))
        print(f"round {r + 1}: old {rows['old'][-1]:.4f}  new {rows['new'][-1]:.4f}", flush=True)
    paired = [n / o for n, o in zip(rows["new"], rows["old"])]
    out = {"rev": args.rev, "rounds": args.rounds, "c_ratio_to_numpy": rows,
           "paired_new_over_old": paired, "mean_paired": statistics.mean(paired),
           "median_paired": statistics.median(paired)}
    print(f"(c) new/old per round: {[round(x, 3) for x in paired]}; mean "
          f"{out['mean_paired']:.3f}, median {out['median_paired']:.3f}")
    print(f"wrote {write(f'core_overhead_c_vs_{args.rev}', out)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="db65572")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--part", choices=["all", "c"], default="all",
                    help="c: only the MH-vs-NumPy ratio, with this checkout's benchmark code")
    args = ap.parse_args()
    if args.part == "c":
        tmp = Path(tempfile.mkdtemp(prefix="thrifty-rev-"))
        old_tree = tmp / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), args.rev],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            main_c(args, old_tree)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(tmp, ignore_errors=True)
        return
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
