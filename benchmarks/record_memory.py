"""Memory of recorded draws in the main process of ``th.infer``: bytes per draw.

Two programs, each step changing exactly one float (a prior-proposal MH step on an unobserved
choice is always accepted):

* ``plate_element``: ``th.mh(th.one("data.z"), th.prior())`` on a plate of N = 50,000 (large
  enough for the default ``dense_bytes`` to keep ``data.z`` as events in the result);
* ``top_level_float``: ``th.mh("mu", th.prior())`` on one top-level float.

Each configuration runs ``chains`` chains in worker processes (``workers = min(chains,
cpus)``) in a fresh Python process, at two run lengths; the reported bytes per draw are slopes
between the two lengths, so constant costs (imports, the first draw's whole plate) cancel:

* ``traced``: tracemalloc in the main process after the run, the result alive (workers do not
  trace); ``peak``: tracemalloc's peak during the run;
* ``rss``: the main process's resident set (``VmRSS``) after the run, the result alive, in a
  separate process without tracemalloc;
* ``store``: ``DrawStore.nbytes()`` of the chains (this checkout only);
* ``legacy``: in the same process as ``traced``, the bytes of the same draws rebuilt as the
  previous representation held them (per event a Python int, an index array and a value
  array or a Python float in three lists; per draw a Python float, int and output reference;
  passed through pickle, as they arrived from the workers).

The same measurements run on ``--rev`` (default ``732a3d5``, the revision before the typed
arrays; its ``src`` extracted with ``git archive`` into a temporary directory).  Writes
``benchmarks/results/record_memory.json`` and ``record_memory.png``.
Run: ``python benchmarks/record_memory.py [--chains 4] [--draws 5000 20000] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CASES = ("plate_element", "top_level_float")
PLATE = 50_000


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _program(case):
    import thrifty as th
    from thrifty import dist

    @th.model
    def plate_model(n):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", n):
            th.sample("z", dist.Normal(mu, 1.0))

    @th.model
    def scalar_model():
        th.sample("mu", dist.Normal(0.0, 1.0))

    if case == "plate_element":
        return plate_model(PLATE), th.mh(th.one("data.z"), th.prior())
    return scalar_model(), th.mh("mu", th.prior())


def _legacy(stores) -> list:
    """The draws of ``stores`` as the previous representation held them: lists of objects,
    unpickled (as they arrived from the workers; an unpickled one-element array takes ~600
    bytes, one built in place ~150)."""
    import pickle

    import numpy as np

    out = []
    for st in stores:
        for s in st.series.values():
            draws, elems, values = [], [], []
            for d, e, v in s.events():
                draws.append(int(d))
                elems.append(None if e is None else np.array(e))
                values.append(np.array(v) if isinstance(v, np.ndarray) else v)
            out.append((draws, elems, values))
        out.append(([float(x) for x in st.lp], [int(x) for x in st.n_latent], list(st.outputs)))
    return pickle.loads(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))


def one(case: str, draws: int, chains: int, trace: bool) -> dict:
    """One run in this process (a subprocess of :func:`main`)."""
    import thrifty as th

    program, kernel = _program(case)
    workers = min(chains, os.cpu_count() or 1)
    th.infer(program, kernel, num_samples=10, chains=chains, workers=workers, seed=1,
             progress=False)  # imports, caches
    gc.collect()
    out: dict = {}
    if trace:
        os.register_at_fork(after_in_child=tracemalloc.stop)
        tracemalloc.start()
    rss0 = _rss()
    t0 = time.perf_counter()
    r = th.infer(program, kernel, num_samples=draws, chains=chains, workers=workers, seed=0,
                 progress=False)
    out["seconds"] = time.perf_counter() - t0
    gc.collect()
    out["rss"] = _rss() - rss0
    stores = r._stores
    if hasattr(stores[0], "nbytes"):
        out["store"] = sum(st.nbytes() for st in stores)
    if trace:
        out["traced"], out["peak"] = tracemalloc.get_traced_memory()
        if hasattr(next(iter(stores[0].series.values())), "events"):
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            legacy = _legacy(stores)
            gc.collect()
            out["legacy"] = tracemalloc.get_traced_memory()[0] - before
            del legacy
        tracemalloc.stop()
    out["workers"] = r.stats["run"]["workers"]
    return out


def _run(src: Path, case, draws, chains, trace) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", case, str(draws),
           str(chains)] + (["--trace"] if trace else [])
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if res.returncode:
        raise RuntimeError(res.stderr)
    return json.loads(res.stdout.strip().splitlines()[-1])


def measure(src: Path, lengths, chains) -> dict:
    out = {}
    for case in CASES:
        runs = {n: {**_run(src, case, n, chains, True), "rss": _run(src, case, n, chains,
                                                                    False)["rss"]}
                for n in lengths}
        a, b = (runs[n] for n in lengths)
        per = (lengths[1] - lengths[0]) * chains
        out[case] = {
            "bytes_per_draw": {k: (b[k] - a[k]) / per for k in a if k in b and k != "workers"
                               and k != "seconds"},
            "runs": runs,
        }
        print(f"  {case:16s}", {k: round(v, 1) for k, v in out[case]["bytes_per_draw"].items()})
    return out


def _plot(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(CASES), figsize=(9, 3.5))
    for ax, case in zip(axes, CASES):
        labels, vals = [], []
        for who in ("before", "after"):
            per = res[who][case]["bytes_per_draw"]
            for k in ("traced", "rss"):
                labels.append(f"{who}\n{k}")
                vals.append(per[k])
        ax.bar(labels, vals, color=["tab:red", "tab:red", "tab:blue", "tab:blue"])
        ax.axhline(100, color="k", lw=0.8, ls="--")
        ax.set_title(case.replace("_", " "))
        ax.set_ylabel("main-process bytes per draw")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--one", nargs=3, metavar=("CASE", "DRAWS", "CHAINS"), help=argparse.SUPPRESS)
    ap.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, nargs=2, default=(5000, 20000))
    ap.add_argument("--rev", default="732a3d5", help="the revision to compare with")
    ap.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    args = ap.parse_args()
    if args.one:
        case, draws, chains = args.one
        print(json.dumps(one(case, int(draws), int(chains), args.trace)))
        return
    from _common import RESULTS, write

    lengths = (500, 2000) if args.quick else tuple(args.draws)
    t0 = time.perf_counter()
    res: dict = {"settings": {"chains": args.chains, "draws": lengths, "plate": PLATE,
                              "rev_before": args.rev, "quick": args.quick}}
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.rev, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        print(f"before ({args.rev}):")
        res["before"] = measure(Path(tmp) / "src", lengths, args.chains)
    print("after (this checkout):")
    res["after"] = measure(REPO / "src", lengths, args.chains)
    res["ratio_before_over_after"] = {
        case: {k: res["before"][case]["bytes_per_draw"][k] / res["after"][case]["bytes_per_draw"][k]
               for k in ("traced", "peak", "rss")}
        for case in CASES
    }
    res["wall_seconds"] = time.perf_counter() - t0
    name = "record_memory_quick" if args.quick else "record_memory"
    _plot(res, RESULTS / f"{name}.png")
    print("wrote", write(name, res))


if __name__ == "__main__":
    main()
