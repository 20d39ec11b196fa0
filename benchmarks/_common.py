"""Shared helpers for the benchmark scripts: timing ratios in one process, result files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
    }


def seconds_per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def interleaved_ratio(a, b, calls: int, rounds: int = 7) -> dict:
    """Time ``a`` and ``b`` in alternating rounds; report medians and the median of ratios.

    Alternating in one process cancels most of the drift of a shared, noisy machine.
    """
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(seconds_per_call(a, calls))
        tb.append(seconds_per_call(b, calls))
    ratios = [x / y for x, y in zip(ta, tb)]
    return {
        "a_seconds": statistics.median(ta),
        "b_seconds": statistics.median(tb),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
    }


def write(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {"benchmark": name, "machine": machine(), **data}
    path.write_text(json.dumps(data, indent=2, default=float) + "\n")
    return path
