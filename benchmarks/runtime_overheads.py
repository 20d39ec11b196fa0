"""Two costs of ``th.infer`` around the kernels, measured in one process.

1. The convergence check after the draws (``thrifty.runtime.convergence``) at its bound — 64
   elements of 4 chains × 1,000 draws — and on 16 elements of 4 chains × 100,000 draws
   (thinned to 4,000 draws), against ArviZ's own rank R-hat and bulk ESS on the same draws
   (the check's values equal theirs: ``tests/test_convergence.py``).
2. The garbage collector's share of a one-element Gibbs step on a mixture's labels (N = 10⁵,
   ``constant_factor.py``'s update): CPU seconds per step with the collector on and off,
   alternating.  A run that is a reference cycle is freed by the collector's passes; a plate
   frame holds its run weakly (``thrifty.core.batch.WeakRun``) so that none is.

Writes ``benchmarks/results/runtime_overheads.json``.  Run: ``python
benchmarks/runtime_overheads.py`` (about a minute).
"""

from __future__ import annotations

import gc
import statistics
import time
import warnings
from types import SimpleNamespace

import numpy as np

import thrifty as th
from _common import write
from constant_factor import mixture, mixture_data
from thrifty.runtime.convergence import check_convergence


def _seconds(f, repeats: int = 5) -> float:
    f()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def convergence_cost() -> dict:
    from arviz_stats.base import array_stats

    rng = np.random.default_rng(0)
    out = {}
    for label, (chains, draws, k) in {"64 elements, 4 x 1,000 draws": (4, 1000, 64),
                                      "16 elements, 4 x 100,000 draws": (4, 100_000, 16)}.items():
        x = rng.normal(size=(chains, draws, k))
        result = SimpleNamespace(samples={"x": x}, num_chains=chains, num_draws=draws)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check = _seconds(lambda r=result: check_convergence(r))
            y = np.moveaxis(x, 2, 0)
            arviz = _seconds(lambda y=y: (array_stats.rhat(y), array_stats.ess(y, method="bulk")),
                             repeats=2)
        out[label] = {"check_seconds": check, "arviz_rank_seconds": arviz}
        print(f"convergence check, {label}: {1e3 * check:.1f} ms "
              f"(ArviZ's rank R-hat + bulk ESS on the same draws: {1e3 * arviz:.0f} ms)")
    return out


def collector_share(steps: int = 5000, rounds: int = 3) -> dict:
    y = mixture_data(100_000)
    kernel = th.gibbs(th.one("data.z"))
    th.infer(mixture(y), kernel, num_samples=200, seed=0, progress=False)
    on, off = [], []
    for _ in range(rounds):
        for store, enabled in ((on, True), (off, False)):
            if not enabled:
                gc.disable()
            t0 = time.process_time()
            th.infer(mixture(y), kernel, num_samples=steps, seed=1, progress=False)
            store.append((time.process_time() - t0) / steps)
            gc.enable()
    res = {"collector_on_seconds_per_step": statistics.median(on),
           "collector_off_seconds_per_step": statistics.median(off)}
    res["share"] = 1 - res["collector_off_seconds_per_step"] / res[
        "collector_on_seconds_per_step"]
    print(f"one-element Gibbs, N = 1e5: {1e6 * res['collector_on_seconds_per_step']:.1f} µs/step "
          f"with the collector, {1e6 * res['collector_off_seconds_per_step']:.1f} without "
          f"(its share {100 * res['share']:.1f}%)")
    return res


if __name__ == "__main__":
    path = write("runtime_overheads", {"convergence_check": convergence_cost(),
                                       "gibbs_garbage_collector": collector_share()})
    print(f"wrote {path}")
