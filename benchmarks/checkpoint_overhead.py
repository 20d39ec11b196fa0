"""What checkpoints cost: the run's fingerprint and the writes.

(a) The fingerprint of a program (its code, transitively, and its data) against hashing the
    data's bytes alone with SHA-256, at N = 10⁵, 10⁶, 10⁷ float64 values: the ratio stays
    near 1 — the walk over the code costs nothing next to the data, and both are O(N), once
    per run.
(b) ``th.infer`` on the HMM (LMH, 20 000 draws, 2 chains in this process) with a checkpoint
    written at every tick (``checkpoint_every=0``: sealed blocks, SHA-256 + HMAC) against the
    same run without a checkpoint, in alternating rounds: the ratio of wall times, and the
    bytes written per draw.

Writes ``benchmarks/results/checkpoint_overhead.json``.  Run:
``python benchmarks/checkpoint_overhead.py``.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import tempfile
import time

import numpy as np

import thrifty as th
from _common import machine, write
from thrifty import dist
from thrifty.fingerprint import fingerprint_program
from thrifty.models import hmm

SIGMA = 1.0


def _helper(mu):
    return mu / SIGMA


@th.model
def normal_mean(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(_helper(mu), 1.0), y[i])


def bench_fingerprint(rounds: int = 5) -> list:
    out = []
    for n in (10**5, 10**6, 10**7):
        y = np.random.default_rng(0).normal(size=n)
        prog = normal_mean(y)
        tf, th_ = [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            fingerprint_program(prog)
            tf.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            hashlib.sha256(memoryview(y).cast("B")).digest()
            th_.append(time.perf_counter() - t0)
        out.append({"n": n, "fingerprint_seconds": statistics.median(tf),
                    "sha256_of_data_seconds": statistics.median(th_),
                    "ratio": statistics.median(a / b for a, b in zip(tf, th_))})
        print(f"fingerprint N={n:>9,}: {out[-1]['fingerprint_seconds'] * 1e3:8.2f} ms, "
              f"ratio to SHA-256 of the data {out[-1]['ratio']:.2f}")
    return out


def bench_writes(rounds: int = 3, draws: int = 20_000) -> dict:
    kw = dict(num_samples=draws, chains=2, workers=1, seed=0, progress=False)
    with_ck, without, sizes = [], [], []
    for r in range(rounds):
        t0 = time.perf_counter()
        th.infer(hmm(), th.lmh(), **kw)
        without.append(time.perf_counter() - t0)
        path = os.path.join(tempfile.mkdtemp(), f"run{r}.ckpt")
        t0 = time.perf_counter()
        th.infer(hmm(), th.lmh(), checkpoint=path, checkpoint_every=0.0, **kw)
        with_ck.append(time.perf_counter() - t0)
        sizes.append(os.path.getsize(path + ".draws") + os.path.getsize(path))
    out = {"draws": 2 * draws, "seconds_without": statistics.median(without),
           "seconds_with_a_write_every_tick": statistics.median(with_ck),
           "ratio": statistics.median(a / b for a, b in zip(with_ck, without)),
           "bytes_per_draw": statistics.median(sizes) / (2 * draws)}
    print(f"th.infer with a checkpoint at every tick / without: {out['ratio']:.2f} "
          f"({out['bytes_per_draw']:.0f} bytes per draw on disk)")
    return out


if __name__ == "__main__":
    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp())  # not the user's real key
    data = {"machine": machine(), "fingerprint": bench_fingerprint(), "writes": bench_writes()}
    print("wrote", write("checkpoint_overhead", data))
