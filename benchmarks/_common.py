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


def steady_heap() -> bool:
    """Keep glibc from returning freed memory to the system after each large allocation.

    A vectorized step allocates temporaries of N floats.  By default glibc serves them with
    ``mmap`` (and page-faults them in) until a free raises its dynamic threshold — which
    happens, or not, depending on the allocation history of the process, so the same loop runs
    at 0.4 or 1.7 ms.  Fixed thresholds (the values of the environment variables
    ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_``, set here through ``mallopt``) make
    every run measure the code rather than the heap's history.  Returns whether they were set
    (glibc only)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name or platform.system() != "Linux":
        return False
    try:
        libc = ctypes.CDLL(name)
        m_trim, m_mmap = -1, -3  # mallopt parameters M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
        return bool(libc.mallopt(m_mmap, 2**28)) and bool(libc.mallopt(m_trim, 2**30))
    except (OSError, AttributeError):
        return False


STEADY_HEAP_ENV = {"MALLOC_MMAP_THRESHOLD_": str(2**28), "MALLOC_TRIM_THRESHOLD_": str(2**30)}


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


# -- the peer library in its own environment -----------------------------------------------------
PEER_VENV = Path(__file__).resolve().parent / ".peer-venv"
PEER_SCRIPT = Path(__file__).resolve().parent / "_peer_particles.py"
# particles 0.4 pins numpy<2, so it cannot share thrifty's environment; these are the versions the
# committed results were measured with (Python 3.11).
PEER_REQUIREMENTS = (
    "particles==0.4",
    "numpy==1.26.4",
    "scipy==1.11.4",
    "numba==0.68.1",
    "llvmlite==0.50.0",
    "scikit-learn==1.9.1",
    "joblib==1.6.0",
    "threadpoolctl==3.8.0",
)


def peer_python() -> str | None:
    """The Python of ``benchmarks/.peer-venv`` with the ``particles`` library, created (``python
    -m venv`` + pip, pinned ``PEER_REQUIREMENTS``) on first use; None (and a message) when it
    cannot be made, e.g. offline."""
    import subprocess
    import sys

    py = PEER_VENV / "bin" / "python"

    def works() -> bool:
        try:
            return py.exists() and subprocess.run(
                [str(py), "-c", "import particles.mcmc, particles.state_space_models"],
                capture_output=True, timeout=120, check=False,
            ).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    if works():
        return str(py)
    print(f"creating the peer environment {PEER_VENV} ({', '.join(PEER_REQUIREMENTS)})",
          flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(PEER_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PEER_REQUIREMENTS], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"  could not create the peer environment: {e}", flush=True)
        return None
    return str(py) if works() else None


def run_peer(py: str, npz: str | Path, tasks: list, timeout: float = 3600) -> dict:
    """Run ``_peer_particles.py`` under ``py`` on the data in ``npz``; its JSON answer."""
    import subprocess

    request = json.dumps({"npz": str(npz), "tasks": tasks})
    env = {**os.environ, **STEADY_HEAP_ENV, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    out = subprocess.run([py, str(PEER_SCRIPT)], input=request, capture_output=True, text=True,
                         timeout=timeout, check=False, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"peer failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)


def peer_cli(doc: str):
    """The command line of a benchmark with a peer library (``--quick``, ``--no-peer``); keeps
    the heap steady for the run."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--no-peer", action="store_true", help="skip the particles library")
    args = ap.parse_args()
    steady_heap()
    return args
