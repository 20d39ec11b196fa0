"""Checkpoint files of ``th.infer(..., checkpoint=path)``.

A checkpoint is two files.  ``path`` is one small pickle, written atomically (a temporary file,
then ``os.replace``); ``path + ".draws"`` is append-only: each write appends the chains' draws
recorded since the previous write (pickled :meth:`DrawStore.chunk`s) and the main file records
the byte ranges that belong to the run and the size of the draws file at that moment, so a
write costs what was recorded since the last one, and a kill at any point leaves the previous
checkpoint whole (bytes appended after it are cut off on resume).  Read back, the main file
holds::

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
from thrifty.runtime.draws import DrawStore

FORMAT = "thrifty-checkpoint"
VERSION = 4
SETTINGS = ("num_samples", "burn_in", "thin", "chains", "seed", "kernel", "program",
            "model_code", "data")


# -- fingerprints: a checkpoint never resumes a different run ----------------------------------
def _update_code(h, code) -> None:
    """The model's code, with the code of the functions defined inside it (steps, helpers)."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _update_code(h, c)
        else:
            h.update(repr(c).encode())


def _update_data(h, x, depth: int = 0) -> None:
    """Data by content: arrays by dtype, shape and bytes; containers recursively."""
    if depth > 20:
        h.update(b"<deep>")
    elif isinstance(x, np.ndarray):
        h.update(f"nd{x.dtype.str}{x.shape}".encode())
        if x.dtype == object:
            for v in x.ravel():
                _update_data(h, v, depth + 1)
        else:
            h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}{len(x)}".encode())
        for v in x:
            _update_data(h, v, depth + 1)
    elif isinstance(x, dict):
        h.update(f"dict{len(x)}".encode())
        for k in sorted(x, key=repr):
            h.update(repr(k).encode())
            _update_data(h, x[k], depth + 1)
    elif x is None or isinstance(x, (bool, int, float, complex, str, bytes, np.generic)):
        h.update(repr(x).encode())
    elif callable(x) and hasattr(x, "__code__"):
        _update_code(h, x.__code__)
    else:
        try:
            h.update(pickle.dumps(x, protocol=4))
        except Exception:  # unpicklable: its type and repr
            h.update(f"{type(x).__qualname__}:{x!r}".encode())


def fingerprint(program) -> dict:
    """Hashes of the model's code (with the functions defined inside it) and of the program's
    arguments (data by content) — computed once per run, stored in the checkpoint, compared on
    resume.  The kernel's configuration is compared through its label (selection, proposal,
    batch size, ε, …)."""
    import hashlib

    code = hashlib.sha256()
    fn = program.fn
    if hasattr(fn, "__code__"):
        _update_code(code, fn.__code__)
    else:
        code.update(repr(fn).encode())
    data = hashlib.sha256()
    _update_data(data, (program.args, program.kwargs))
    # arrays the model reads from its module or its closure (data not passed as arguments)
    names = getattr(getattr(fn, "__code__", None), "co_names", ())
    glob = getattr(fn, "__globals__", {})
    for name in names:
        if isinstance(glob.get(name), np.ndarray):
            data.update(name.encode())
            _update_data(data, glob[name])
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(v, np.ndarray):
            _update_data(data, v)
    return {"model_code": code.hexdigest()[:16], "data": data.hexdigest()[:16]}


def seed_key(ss: np.random.SeedSequence) -> tuple:
    return (ss.entropy, tuple(ss.spawn_key), ss.pool_size)


def seed_from_key(key: tuple) -> np.random.SeedSequence:
    entropy, spawn_key, pool_size = key
    return np.random.SeedSequence(entropy, spawn_key=spawn_key, pool_size=pool_size)


def _read_stores(path: str, data: dict) -> None:
    """Rebuild each chain's ``store`` from the byte ranges of the draws file."""
    ranges = [ch.pop("ranges") for ch in data["chains"]]
    stores = []
    with open(path + ".draws", "rb") if any(ranges) else _Nothing() as f:
        for rs in ranges:
            st = DrawStore()
            for off, _ in rs:
                f.seek(off)
                st.extend(pickle.load(f))
            stores.append(st)
    for ch, st in zip(data["chains"], stores):
        ch["store"] = st


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def read_checkpoint(path) -> dict | None:
    """The content of the checkpoint at ``path`` (None if there is no file), each chain's draws
    read back from the draws file."""
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
    data["_ranges"] = [list(ch["ranges"]) for ch in data["chains"]]
    try:
        _read_stores(path, data)
    except Exception as e:
        raise ValueError(
            f"the draws of checkpoint {path!r} ({path}.draws) cannot be read ({type(e).__name__}"
            f": {e}); remove both files or choose another checkpoint path"
        ) from e
    return data


def load_checkpoint(path, program=None) -> dict:
    """Read a checkpoint; with ``program``, each chain's snapshot gets ``trace`` and ``kernel``.

    >>> import os, tempfile, thrifty as th
    >>> from thrifty.models import hmm
    >>> path = os.path.join(tempfile.mkdtemp(), "run.ckpt")
    >>> _ = th.infer(hmm(), th.lmh(), num_samples=20, seed=0, progress=False, checkpoint=path)
    >>> saved = th.load_checkpoint(path)
    >>> saved["config"]["num_samples"], saved["chains"][0]["status"]
    (20, 'done')
    """
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


_WHAT = {"model_code": "the model's code differs",
         "data": "the data (the program's arguments) differ"}


def _show(name, value) -> str:
    if name == "seed":
        return f"seed entropy {value[0]}" + (f" spawn_key {value[1]}" if value[1] else "")
    return f"{name}={value!r}"


class Checkpoint:
    """Writes the run's state to ``path`` at most every ``every`` seconds (and when asked)."""

    def __init__(self, path, every: float, chains: int):
        self.path = os.fspath(path)
        self.draws_path = self.path + ".draws"
        self.every = float(every)
        self.config: dict = {}
        self.last_write = -math.inf  # the first write at the first tick: problems show at once
        self.persisted = [0] * chains  # draws of each chain in the draws file
        self.ranges: list[list] = [[] for _ in range(chains)]  # their byte ranges
        self.draws_size = 0  # the draws file's length at the last complete write

    def resume(self, saved: dict | None) -> None:
        """Continue the draws file of ``saved`` (bytes after its last complete write cut off),
        or start a new one."""
        if saved is not None:
            self.ranges = [list(r) for r in saved["_ranges"]]
            self.persisted = [ch["store"].n for ch in saved["chains"]]
            self.draws_size = saved["draws_size"]
        with open(self.draws_path, "ab") as f:
            f.truncate(self.draws_size)

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
                if name in _WHAT:
                    diffs.append(f"{_WHAT[name]} (fingerprint {a} in the checkpoint, {b} now)")
                else:
                    diffs.append(f"{name}: checkpoint has {_show(name, a)}, this call "
                                 f"{_show(name, b)}")
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
        with open(self.draws_path, "ab") as f:  # 1. append the draws since the last write
            for c, rec in enumerate(records):
                snap = rec.snapshot
                n = snap["n_recorded"] if snap is not None else 0
                if n > self.persisted[c]:
                    off = f.tell()
                    pickle.dump(rec.store.chunk(self.persisted[c], n), f,
                                protocol=pickle.HIGHEST_PROTOCOL)
                    self.ranges[c].append((off, f.tell() - off))
                    self.persisted[c] = n
            f.flush()
            os.fsync(f.fileno())
            self.draws_size = f.tell()
        for c, rec in enumerate(records):  # 2. the small main file, atomically
            snap = rec.snapshot
            done = snap is not None and snap["iteration"] >= total
            chains.append(
                {
                    "status": "done" if done else ("pending" if snap is None else "running"),
                    "iteration": snap["iteration"] if snap is not None else 0,
                    "ranges": list(self.ranges[c]),
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
            "draws_size": self.draws_size,
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
