"""What writing the families' array paths against the array API cost the NumPy path:
``log_prob`` of nine families on a Python float, 10 values and 100,000 values, on this checkout
and on a revision before the change (``--before``, default ba73240), each in its own process
(``git worktree`` of that revision), alternating, 3 rounds, best of 5 repeats per round; glibc's
heap thresholds fixed (``_common.STEADY_HEAP_ENV``) so that large temporaries do not measure
page faults.  Reports per case the two times and their ratio (after / before).

Run: ``cd benchmarks && ../.venv/bin/python array_api_overhead.py``.  Writes
``results/array_api_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import STEADY_HEAP_ENV, write

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import sys, timeit, json, numpy as np
sys.path.insert(0, sys.argv[1] + "/src")
from thrifty import dist
rng = np.random.default_rng(0)
out = {}
cases = [("Gamma", dist.Gamma(2.0, 1.5), "pos"), ("Beta", dist.Beta(2.0, 3.0), "unit"),
         ("LogNormal", dist.LogNormal(0.0, 1.0), "pos"),
         ("HalfNormal", dist.HalfNormal(1.0), "pos"),
         ("Exponential", dist.Exponential(1.0), "pos"), ("Normal", dist.Normal(0.0, 1.0), "real"),
         ("Uniform", dist.Uniform(0.0, 2.0), "pos"), ("Poisson", dist.Poisson(2.0), "count"),
         ("Bernoulli", dist.Bernoulli(logits=0.3), "bit")]
for name, d, kind in cases:
    for n in (10, 100_000):
        v = {"pos": rng.random(n) + 0.1, "unit": rng.random(n), "real": rng.normal(size=n),
             "count": rng.poisson(2.0, n), "bit": rng.integers(0, 2, n)}[kind]
        k = 200 if n == 10 else 5
        out[f"{name}:{n}"] = min(timeit.repeat(lambda: d.log_prob(v), number=k, repeat=5)) / k
    s = 1 if kind in ("count", "bit") else 1.5
    t = timeit.repeat(lambda: d.log_prob(s), number=20000, repeat=5)
    out[f"{name}:scalar"] = min(t) / 20000
print(json.dumps(out))
"""


def run(tree: Path) -> dict:
    env = {**os.environ, **STEADY_HEAP_ENV}
    p = subprocess.run([sys.executable, "-c", CHILD, str(tree)], capture_output=True, text=True,
                       env=env, check=True)
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="ba73240")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old),
                        args.before], check=True)
        try:
            rounds = [(run(old), run(ROOT)) for _ in range(args.rounds)]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=True)
    rows = {}
    for k in rounds[0][0]:
        before = min(r[0][k] for r in rounds)
        after = min(r[1][k] for r in rounds)
        rows[k] = {"before_us": before * 1e6, "after_us": after * 1e6, "ratio": after / before}
        print(f"{k:20s} before {before * 1e6:9.2f} µs  after {after * 1e6:9.2f} µs  "
              f"ratio {after / before:5.2f}")
    ratios = sorted(r["ratio"] for r in rows.values())
    summary = {"min": ratios[0], "median": ratios[len(ratios) // 2], "max": ratios[-1]}
    print("ratios:", summary)
    write("array_api_overhead", {"before": args.before, "cases": rows, "ratios": summary})


if __name__ == "__main__":
    main()
