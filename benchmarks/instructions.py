"""Machine instructions per step of a ``constant_factor.py`` update, per Python function.

Wall-clock ratios (``constant_factor.py``) are the measure of record, but on a shared machine
they move by ±15% with the load, which hides the 1–3% that one change to the engine's constant
factor makes.  The number of instructions the interpreter executes does not depend on the
load: this script counts them with valgrind's callgrind, instrumenting only the steps of
``th.infer`` (two runs of different lengths; their difference, per step, leaves out the set-up),
and attributes them to Python functions through CPython's perf trampolines (``python -X perf``
writes each function's trampoline address to ``/tmp/perf-<pid>.map``; a trampoline's inclusive
count is its function's).  Use it to compare two revisions of the engine on one update
(``--src`` points at another tree's ``src``); confirm a gain on the wall clock when the machine
is quiet.

Check mode is off in these runs (``check=False``): its schedule follows the wall clock (a fixed
share of the chain's time, by design), so it would make the counts depend on the load.  The
chain loop's tick (progress, checkpoints, the draws' flush: every ``TICK`` seconds) is
stretched by valgrind's slowdown, so that its work weighs per step as in a run without it.
Before the counted runs the set-up's garbage is collected and what lives is frozen
(``gc.freeze``): a full collection costs as much as everything alive, and one that fell in
one run of the two and not the other moved a count by 6% (LMH: 347,843 per step, and
326,642 for the same code with the heap frozen); young collections still count, as in any run.

Needs valgrind (``callgrind_control`` on the PATH) and CPython ≥ 3.12.  A 2,000-step count
takes about a minute per run under valgrind.

Run: ``python benchmarks/instructions.py gibbs`` (``lmh``, ``chain``, ``pgas``: per sweep;
``--steps``, ``--top``, ``--src``).  Writes ``benchmarks/results/instructions_<update>.json``.
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPDATES = ("gibbs", "lmh", "chain", "pgas")
WARM_UP = 200
SLOWDOWN = 50  # about how much slower a step runs under callgrind


def _child(which: str, steps: int) -> None:
    """Under valgrind: the update's steps, instrumented; nothing else."""
    sys.path.insert(0, str(HERE))
    import functools

    import constant_factor as cf
    import thrifty.runtime.chain as chain_loop

    cf.th.infer = functools.partial(cf.th.infer, check=False)
    chain_loop.TICK *= SLOWDOWN  # (per-tick work weighs as much per step as without valgrind)
    if which == "gibbs":
        y = cf.mixture_data(100_000)
        run = functools.partial(cf.gibbs_thrifty, y)
    elif which == "chain":
        w = cf.walk_data(1000)
        run = functools.partial(cf.chain_thrifty, w)
    elif which == "pgas":
        run = functools.partial(cf.pgas_thrifty, cf.lds_data())
    else:
        run = cf.lmh_thrifty
    run(WARM_UP if which != "pgas" else 5, 1)
    import gc

    gc.collect()  # (the set-up's garbage gone and what lives frozen: a full collection, whose
    gc.freeze()  # cost is that of everything alive, falls in neither run by chance)

    def instrument(on: bool) -> None:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
                       capture_output=True, check=True)

    instrument(True)
    run(steps, 1)
    instrument(False)


def _count(which: str, steps: int, src: Path, out: Path) -> tuple[int, dict]:
    """(instructions in the instrumented steps, {function: inclusive instructions})."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(src)}
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=yes",
         f"--callgrind-out-file={out}", sys.executable, "-X", "perf", __file__, "--child",
         which, "--steps", str(steps)],
        env=env, capture_output=True, text=True,
    )
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    m = re.search(r"Collected : ([\d,]+)", proc.stderr)
    pid = re.search(r"==(\d+)==", proc.stderr).group(1)
    perf_map = Path(f"/tmp/perf-{pid}.map")
    per_fn = _by_function(out, perf_map)
    perf_map.unlink(missing_ok=True)
    return int(m.group(1).replace(",", "")), per_fn


def _by_function(out: Path, perf_map: Path) -> dict:
    entries = []
    for line in perf_map.read_text().splitlines():
        start, size, name = line.split(" ", 2)
        entries.append((int(start, 16), int(size, 16), name.removeprefix("py::")))
    entries.sort()
    starts = [e[0] for e in entries]
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                          capture_output=True, text=True, check=True).stdout
    cost: dict = defaultdict(int)
    for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\?\?\?:0x([0-9a-f]+) \[\?\?\?\]", text, re.M):
        c, addr = int(m.group(1).replace(",", "")), int(m.group(2), 16)
        j = bisect.bisect_right(starts, addr) - 1
        if j >= 0 and addr < entries[j][0] + entries[j][1]:
            name = entries[j][2]
            cost[name] = max(cost[name], c)  # (a recursive function: its outermost call)
    return cost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("update", choices=UPDATES)
    ap.add_argument("--steps", type=int, default=None, help="2000 (pgas: 40 sweeps)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--src", type=Path, default=HERE.parent / "src")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return _child(args.update, args.steps)
    steps = args.steps or (40 if args.update == "pgas" else 2000)
    short, long_ = steps // 2, steps
    with tempfile.TemporaryDirectory() as tmp:
        n_a, fn_a = _count(args.update, short, args.src, Path(tmp) / "a.out")
        n_b, fn_b = _count(args.update, long_, args.src, Path(tmp) / "b.out")
    per_step = (n_b - n_a) / (long_ - short)
    rows = sorted(((name, (fn_b[name] - fn_a.get(name, 0)) / (long_ - short)) for name in fn_b),
                  key=lambda r: -r[1])
    print(f"{args.update}: {per_step:,.0f} instructions per step ({args.src})")
    for name, c in rows[: args.top]:
        print(f"{c:10,.0f}  {name}")
    sys.path.insert(0, str(HERE))
    from _common import machine, write

    write(f"instructions_{args.update}", {
        "update": args.update, "src": str(args.src), "steps": [short, long_],
        "instructions_per_step": per_step,
        "inclusive_per_step": {name: round(c) for name, c in rows[: args.top]},
        "machine": machine(),
    })


if __name__ == "__main__":
    main()
