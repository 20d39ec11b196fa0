"""Checkpoint files of ``th.infer(..., checkpoint=path)``.

A checkpoint is one pickle (written atomically: a temporary file, then ``os.replace``) of::

    {"format": "thrifty-checkpoint", "version": 1, "thrifty": <version>, "written": <time>,
     "config": {"num_samples", "burn_in", "thin", "chains", "seed": (entropy, spawn_key,
                pool_size), "kernel": <label>, "program": <name>},
     "chains": [{"status": "pending" | "running" | "done" | ...,
                 "iteration": <kernel steps done>,
                 "store": <DrawStore: per variable, its events (what changed at which draw),
                           and per draw the log-density, latent count and output>,
                 "snapshot": None | {"state": <bytes: pickle of (trace, kernel) without the
                                                program>,
                                     "rng_state": <bit_generator.state>, "needs_plates": bool,
                                     "iteration": int, "n_recorded": int,
                                     "stats": [(label, Stats)]}}, ...]}

The draws of a chain are those recorded up to its snapshot, so the file is consistent: resuming
a chain restores its trace and kernel (the current program reattached), its generator state and
iteration, and continues; the result is array-equal to an uninterrupted run.  Reading the file
with plain :func:`pickle.load` needs no program; :func:`load_checkpoint` also unpickles the
traces and kernels for a given program.
"""

from __future__ import annotations

import math
import os
import pickle
import time

import numpy as np

from thrifty.runtime.chain import ChainRecord, loads_state

FORMAT = "thrifty-checkpoint"
VERSION = 2
SETTINGS = ("num_samples", "burn_in", "thin", "chains", "seed", "kernel", "program")


def seed_key(ss: np.random.SeedSequence) -> tuple:
    return (ss.entropy, tuple(ss.spawn_key), ss.pool_size)


def seed_from_key(key: tuple) -> np.random.SeedSequence:
    entropy, spawn_key, pool_size = key
    return np.random.SeedSequence(entropy, spawn_key=spawn_key, pool_size=pool_size)


def read_checkpoint(path) -> dict | None:
    """The content of the checkpoint file at ``path`` (None if there is no file)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
    except Exception as e:
        raise ValueError(
            f"checkpoint {path!r} cannot be read ({type(e).__name__}: {e}); remove it or choose "
            "another checkpoint path"
        ) from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path!r} is not a thrifty checkpoint; choose another checkpoint path")
    if data.get("version") != VERSION:
        raise ValueError(
            f"checkpoint {path!r} has format version {data.get('version')}; this thrifty "
            f"reads version {VERSION}"
        )
    return data


def load_checkpoint(path, program=None) -> dict:
    """Read a checkpoint; with ``program``, each chain's snapshot gets ``trace`` and ``kernel``."""
    from thrifty.core.model import as_program

    data = read_checkpoint(path)
    if data is None:
        raise FileNotFoundError(path)
    if program is not None:
        program = as_program(program)
        for ch in data["chains"]:
            snap = ch.get("snapshot")
            if snap is not None:
                snap["trace"], snap["kernel"] = loads_state(snap["state"], program)
    return data


def _show(name, value) -> str:
    if name == "seed":
        return f"seed entropy {value[0]}" + (f" spawn_key {value[1]}" if value[1] else "")
    return f"{name}={value!r}"


class Checkpoint:
    """Writes the run's state to ``path`` at most every ``every`` seconds (and when asked)."""

    def __init__(self, path, every: float):
        self.path = os.fspath(path)
        self.every = float(every)
        self.config: dict = {}
        self.last_write = -math.inf  # the first write at the first tick: problems show at once

    def check(self, saved: dict, config: dict, seed_given: bool) -> None:
        """Raise if the configuration of ``saved`` differs from ``config`` (``seed`` only when
        ``seed_given``: with ``seed=None`` the run resumes with the checkpoint's seed)."""
        old = saved["config"]
        diffs = []
        for name in SETTINGS:
            if name == "seed" and not seed_given:
                continue
            a, b = old.get(name), config.get(name)
            if a != b:
                diffs.append(f"{name}: checkpoint has {_show(name, a)}, this call {_show(name, b)}")
        if diffs:
            raise ValueError(
                f"checkpoint {self.path!r} was written by a run with other settings — "
                + "; ".join(diffs)
                + ". Call th.infer with the checkpoint's settings to resume it, or use another "
                "checkpoint path (or delete the file) to start afresh"
            )

    @staticmethod
    def records(saved: dict) -> list[ChainRecord]:
        out = []
        for ch in saved["chains"]:
            rec = ChainRecord()
            rec.snapshot = ch["snapshot"]
            rec.store = ch["store"]
            rec.iteration = ch["iteration"]
            rec.status = "done" if ch["status"] == "done" else "pending"
            if rec.snapshot is not None:
                rec.set_stats(rec.snapshot["stats"])
            out.append(rec)
        return out

    def due(self) -> bool:
        return time.monotonic() - self.last_write >= self.every

    def write(self, records: list[ChainRecord], total: int) -> None:
        chains = []
        for rec in records:
            snap = rec.snapshot
            n = snap["n_recorded"] if snap is not None else 0
            done = snap is not None and snap["iteration"] >= total
            chains.append(
                {
                    "status": "done" if done else ("pending" if snap is None else "running"),
                    "iteration": snap["iteration"] if snap is not None else 0,
                    "store": rec.store.prefix(n),
                    "snapshot": snap,
                }
            )
        from thrifty import __version__

        data = {
            "format": FORMAT,
            "version": VERSION,
            "thrifty": __version__,
            "written": time.time(),
            "config": self.config,
            "chains": chains,
        }
        tmp = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.last_write = time.monotonic()
