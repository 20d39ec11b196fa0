"""Checkpoint files of ``th.infer(..., checkpoint=path)``.

A checkpoint is two files of sealed blocks (:mod:`thrifty.runtime.sealed`: each checksummed
and authenticated with this user's key, its data in a NumPy archive read without pickle).
``path`` is one block, written atomically (a temporary file, then ``os.replace``);
``path + ".draws"`` is append-only: each write appends, per chain, one block of the draws
recorded since the previous write (:func:`draws_to_arrays`), and the main file records the
byte range and SHA-256 of every block that belongs to the run and the size of the draws file at
that moment.  A write costs what was recorded since the last one; a kill at any point leaves
the previous checkpoint whole (bytes appended after it are cut off on resume, a temporary file
left by a kill is removed).  The main file holds::

    {"format": "thrifty-checkpoint", "version": 6, "thrifty": <version>, "written": <time>,
     "config": {"num_samples", "burn_in", "thin", "chains", "seed": [entropy, spawn_key,
                pool_size], "program": <name>,
                "kernel": {"label": ..., "config": <Kernel.config(): every constructor
                           argument, exactly; a user kernel's code>},
                "record": {"record": [...] | None, "exclude": [...]},
                "model": {<item>: <digest>: the code of every function the model reaches, the
                          module-level values, closures and defaults they read, the
                          arguments — thrifty.fingerprint>},
                "init": <digest of the initial values>},
     "chains": [{"status": "pending" | "running" | "done" | ..., "iteration": <steps done>,
                 "ranges": [[offset, length, sha256], ...],
                 "snapshot": None | {"state": <bytes: pickle of (trace, kernel) without the
                                                program>,
                                     "rng_state": <bit_generator.state>, "needs_plates": bool,
                                     "iteration": int, "n_recorded": int,
                                     "recorded": [names present at the last draw],
                                     "stats": [[label, <Stats fields: the sampling
                                                steps', "burn_in" the burn-in's>]]}}, ...],
     "draws_size": int}

Version 6: the chains' statistics split into the burn-in and the sampling steps; a file of
another version is refused, saying so (:func:`~thrifty.runtime.sealed.unseal`).

A resume compares ``config`` with the call's and refuses any difference, saying what differs.
It restores each chain's trace, generator state and iteration, and runs the kernel passed to
``th.infer`` with the state its copy had reached (:func:`~thrifty.inference.configured.
restore_state`); the result is array-equal to an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import hashlib
import json
import math
import os
import time
import warnings

import numpy as np

from thrifty._args import checked_keywords
from thrifty._warn import user_stacklevel
from thrifty.errors import CheckpointError, CheckpointWarning
from thrifty.fingerprint import fingerprint_program, value_digest
from thrifty.inference.configured import shared_parts
from thrifty.inference.kernel import Stats
from thrifty.runtime.chain import ChainRecord, loads_state
from thrifty.runtime.draws import DrawStore, Series
from thrifty.runtime.sealed import (
    checkpoint_key,
    from_arrays,
    read_npz,
    seal,
    to_arrays,
    unseal,
    write_npz,
)

FORMAT = "thrifty-checkpoint"
VERSION = 6
SETTINGS = ("num_samples", "burn_in", "thin", "chains", "seed", "program", "init")


# -- what a resume compares ---------------------------------------------------------------------
def run_identity(program, kernel, keep, inits) -> dict:
    """The parts of a run's configuration that fingerprint it: the model (code and data), the
    kernel's full configuration, what is recorded and the initial values (a chain not started
    yet starts from them).  Warns (:class:`CheckpointWarning`) naming what cannot be
    fingerprinted."""
    items, unhashable = fingerprint_program(program)
    kcfg, more = kernel.config_and_warnings()
    shared = shared_parts(kernel)
    if shared:  # (th.cycle([k, k]) and th.cycle([k1, k2]): one configuration, two runs)
        kcfg["one object at"] = [", ".join(paths) for paths in shared]
    init, more_init = value_digest(inits, "init")
    unhashable = list(dict.fromkeys(unhashable + more + more_init))
    if unhashable:
        warnings.warn(
            "checkpoint: thrifty cannot fingerprint "
            + "; ".join(f"{_describe(item)}: {why}" for item, why in unhashable[:6])
            + (f" (and {len(unhashable) - 6} more)" if len(unhashable) > 6 else "")
            + ". A change to these will not be noticed when the checkpoint is resumed",
            CheckpointWarning,
            stacklevel=user_stacklevel(),
        )
    return _plain({
        "kernel": {"label": kernel.label(), "config": kcfg},
        "record": {"record": None if keep.record is None else [".".join(p) for p in keep.record],
                   "exclude": [".".join(p) for p in keep.exclude]},
        "model": items,
        "init": init,
    })


def _plain(x):
    """As JSON has it (tuples as lists): what is stored is what is compared."""
    return json.loads(json.dumps(x))


_KINDS = {"code": "function", "class": "class", "global": "module-level value",
          "closure": "closure variable", "defaults": "default arguments of",
          "kwdefaults": "keyword defaults of", "attributes": "attributes of function",
          "argument": "argument", "model": "the model"}


def _describe(item: str) -> str:
    kind, _, rest = item.partition(":")
    if kind == "closure":
        fn, _, var = rest.rpartition(":")
        rest = f"{var} of {fn}"
    return f"{_KINDS.get(kind, kind)} {rest}".strip()


def _model_diffs(old: dict, new: dict) -> list[str]:
    changed = [k for k in new if old.get(k) != new[k]] + [k for k in old if k not in new]
    code = [k for k in changed if k.split(":")[0] in ("code", "class")]
    data = [k for k in changed if k not in code]
    out = []
    for words, keys in (("the model's code differs", code),
                        ("the data (the program's arguments and the values its code reads) "
                         "differ", data)):
        if keys:
            shown = ", ".join(_describe(k) for k in keys[:5])
            out.append(f"{words}: {shown}" + (f" and {len(keys) - 5} more" if len(keys) > 5
                                              else ""))
    return out


def _first_diff(a, b, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if a.get(k) != b.get(k):
                return _first_diff(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_diff(x, y, f"{path}[{i}]")
    return f"{path}: {json.dumps(a)} in the checkpoint, {json.dumps(b)} now"


def _show(name, value) -> str:
    if name == "init":
        return f"initial values with fingerprint {str(value)[:12]}"
    if name == "seed":
        return f"seed entropy {value[0]}" + (f" spawn_key {value[1]}" if value[1] else "")
    return f"{name}={value!r}"


def seed_key(ss: np.random.SeedSequence) -> tuple:
    return (ss.entropy, tuple(ss.spawn_key), ss.pool_size)


def seed_from_key(key) -> np.random.SeedSequence:
    entropy, spawn_key, pool_size = key
    return np.random.SeedSequence(entropy, spawn_key=tuple(spawn_key), pool_size=pool_size)


# -- draws <-> arrays (the only place that knows a DrawStore chunk's layout) --------------------
def draws_to_arrays(chunk: dict) -> dict[str, np.ndarray]:
    """A chunk of draws (:meth:`DrawStore.chunk`) as named arrays, without pickle (values of
    types other than numbers, strings, arrays and containers of them are pickled inside the
    authenticated block)."""
    series = {}
    for name, s in chunk["series"].items():
        arrays = s.to_arrays()
        series[name] = {**arrays, "objects": list(arrays["objects"])}
    return to_arrays({"meta": chunk["meta"], "series": series,
                      "unrecorded": sorted(chunk.get("unrecorded", ()), key=repr),
                      "lp": np.asarray(chunk["lp"]), "n_latent": np.asarray(chunk["n_latent"]),
                      "outputs": list(chunk["outputs"]), "n": chunk["n"],
                      "stats": {k: np.asarray(v) for k, v in chunk.get("stats", {}).items()}})


def arrays_to_draws(arrays: dict) -> dict:
    """Inverse of :func:`draws_to_arrays` (arrays of an authenticated block only)."""
    tree = from_arrays(arrays)
    series = {}
    for name, arrs in tree["series"].items():
        objects = np.empty(len(arrs["objects"]), dtype=object)
        for i, v in enumerate(arrs["objects"]):
            objects[i] = v
        series[name] = Series.from_arrays({**arrs, "objects": objects})
    tree["series"] = series
    tree["unrecorded"] = set(tree.get("unrecorded", ()))
    tree["outputs"] = list(tree["outputs"])
    return tree


# -- reading ------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def engine_digest() -> str:
    """SHA-256 of thrifty's own source files (read once per process): a resume by other code
    — an upgrade, a local edit — is refused, as a resume of another model is."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
        h.update(os.path.relpath(path, root).encode())
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def read_main(path) -> dict | None:
    """The verified content of the main file at ``path`` (None if there is none)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    payload = unseal(data, b"MAIN", VERSION, checkpoint_key(create=False),
                     f"checkpoint {path!r}")
    main = from_arrays(read_npz(payload))
    if not isinstance(main, dict) or main.get("format") != FORMAT:
        raise CheckpointError(f"{path!r} is not a thrifty checkpoint")
    return main


def read_block(draws_path: str, rng, key: bytes, what: str) -> dict:
    """One chunk of draws: the block at ``rng = [offset, length, sha256]``, verified."""
    off, length, sha = rng
    with open(draws_path, "rb") as f:
        f.seek(off)
        data = f.read(length)
    if len(data) != length or hashlib.sha256(data).hexdigest() != sha:
        raise CheckpointError(
            f"{what}: the block at byte {off} of {draws_path!r} is damaged or missing (its "
            "checksum does not match the main file's); it cannot be resumed — remove the "
            "checkpoint and its .draws file, or choose another checkpoint path"
        )
    return arrays_to_draws(read_npz(unseal(data, b"DRAW", VERSION, key, what)))


def read_checkpoint(path) -> dict | None:
    """The content of the checkpoint at ``path`` (None if there is no file), every block
    verified, each chain's draws read back from the draws file."""
    path = os.fspath(path)
    main = read_main(path)
    if main is None:
        return None
    key = checkpoint_key(create=False)
    main["_ranges"] = [list(ch["ranges"]) for ch in main["chains"]]
    for c, ch in enumerate(main["chains"]):
        store = DrawStore()
        for rng in ch.pop("ranges"):
            store.extend(read_block(path + ".draws", rng, key, f"checkpoint {path!r}, chain {c}"))
        ch["store"] = store
        snap = ch["snapshot"]
        if snap is not None:
            snap["stats"] = [(label, _stats(fields)) for label, fields in snap["stats"]]
    return main


def _stats(fields: dict) -> Stats:
    """A chain's :class:`Stats` from its fields as written (``burn_in``'s too)."""
    burn = fields.get("burn_in")
    return Stats(**{**fields, "burn_in": None if burn is None else Stats(**burn)})


@checked_keywords
def load_checkpoint(path, program=None) -> dict:
    """Read a checkpoint; with ``program``, each chain's snapshot gets ``trace`` and ``kernel``.

    Every block is verified (checksum, then this user's key) before anything in it is read.

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


# -- writing ------------------------------------------------------------------------------------
class Checkpoint:
    """Writes the run's state to ``path`` at most every ``every`` seconds (and when asked)."""

    def __init__(self, path, every: float, chains: int):
        self.path = os.fspath(path)
        self.draws_path = self.path + ".draws"
        self.every = float(every)
        self.config: dict = {}
        self.last_write = -math.inf  # the first write at the first tick: problems show at once
        self.persisted = [0] * chains  # draws of each chain in the draws file
        self.ranges: list[list] = [[] for _ in range(chains)]  # their blocks
        self.draws_size = 0  # the draws file's length at the last complete write

    def resume(self, saved: dict | None) -> None:
        """Continue the draws file of ``saved`` (bytes after its last complete write cut off),
        or start a new one; remove temporary files a killed write left."""
        if saved is not None:
            self.ranges = [list(r) for r in saved["_ranges"]]
            self.persisted = [ch["store"].n for ch in saved["chains"]]
            self.draws_size = saved["draws_size"]
        with open(self.draws_path, "ab") as f:
            f.truncate(self.draws_size)
        for tmp in glob.glob(glob.escape(self.path) + ".tmp*"):
            pid = tmp[len(self.path) + 4:]
            if pid.isdigit() and not _alive(int(pid)):
                try:
                    os.remove(tmp)
                except OSError:
                    pass

    def check(self, saved: dict, config: dict, seed_given: bool) -> None:
        """Raise :class:`CheckpointError` if the configuration of ``saved`` differs from
        ``config`` (``seed`` only when ``seed_given``: with ``seed=None`` the run resumes with
        the checkpoint's seed), saying what differs."""
        old, new = saved["config"], _plain(config)
        diffs = []
        for name in SETTINGS:
            if name == "seed" and not seed_given:
                continue
            if old.get(name) != new.get(name):
                diffs.append(f"{name}: checkpoint has {_show(name, old.get(name))}, this call "
                             f"{_show(name, new.get(name))}")
        if saved.get("engine") != engine_digest():
            diffs.append(f"thrifty's own code differs (the checkpoint was written by thrifty "
                         f"{saved.get('thrifty')} of other source files: its draws would not be "
                         "those of one run)")
        diffs += _model_diffs(old.get("model", {}), new.get("model", {}))
        ok, nk = old.get("kernel", {}), new.get("kernel", {})
        a, b = ok.get("config"), nk.get("config")
        if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
            diffs.append(f"the kernel differs: the checkpoint's is {ok.get('label')}, this "
                         f"call's {nk.get('label')} ({_first_diff(a, b)})")
        if old.get("record") != new.get("record"):
            o, n = old.get("record") or {}, new.get("record") or {}
            diffs.append(f"what is recorded differs: the checkpoint has record={o.get('record')}"
                         f", exclude={o.get('exclude')}; this call record={n.get('record')}, "
                         f"exclude={n.get('exclude')}")
        if diffs:
            raise CheckpointError(
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
        key = checkpoint_key()
        with open(self.draws_path, "ab") as f:  # 1. append the draws since the last write
            for c, rec in enumerate(records):
                snap = rec.snapshot
                n = snap["n_recorded"] if snap is not None else 0
                if n > self.persisted[c]:
                    arrays = draws_to_arrays(rec.store.chunk(self.persisted[c], n))
                    block = seal(b"DRAW", VERSION, write_npz(arrays), key)
                    off = f.tell()
                    f.write(block)
                    self.ranges[c].append([off, len(block), hashlib.sha256(block).hexdigest()])
                    self.persisted[c] = n
            f.flush()
            os.fsync(f.fileno())
            self.draws_size = f.tell()
        chains = []
        for c, rec in enumerate(records):  # 2. the small main file, atomically
            snap = rec.snapshot
            done = snap is not None and snap["iteration"] >= total
            chains.append({
                "status": "done" if done else ("pending" if snap is None else "running"),
                "iteration": snap["iteration"] if snap is not None else 0,
                "ranges": [list(r) for r in self.ranges[c]],
                "snapshot": None if snap is None else {
                    **{k: snap[k] for k in ("state", "rng_state", "needs_plates", "iteration",
                                            "n_recorded", "recorded")},
                    "stats": [[label, dataclasses.asdict(s)] for label, s in snap["stats"]],
                },
            })
        from thrifty import __version__

        main = {"format": FORMAT, "version": VERSION, "thrifty": __version__,
                "engine": engine_digest(),
                "written": time.time(), "config": _plain(self.config), "chains": chains,
                "draws_size": self.draws_size}
        data = seal(b"MAIN", VERSION, write_npz(to_arrays(main)), key)
        tmp = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        self.last_write = time.monotonic()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (its temporary file may be in use); on Windows, where a
    signal 0 is not a probe, only this process counts."""
    if pid == os.getpid():
        return False  # ours, left by an earlier call that was killed: not in use
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, another user's
        return True
    return True
