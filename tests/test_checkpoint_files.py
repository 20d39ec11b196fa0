"""Checkpoint files never run code, never accept damage, and clean up after a kill.

Every block (the main file, each chunk of the draws file) carries a SHA-256 and an HMAC with
this user's key, checked before anything in it is parsed; draws and metadata are read without
pickle; the pickled trace snapshots are loaded only from authenticated blocks."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

import thrifty as th
from thrifty.models import hmm

KW = dict(num_samples=300, chains=2, workers=1, seed=1, progress=False)


def _checkpoint(path):
    """A complete checkpoint of several blocks per chain (a write at every tick)."""
    return th.infer(hmm(), th.lmh(), checkpoint=path, checkpoint_every=0.0, **KW)


def _resume(path):
    return th.infer(hmm(), th.lmh(), checkpoint=path, **KW)


# -- damage ---------------------------------------------------------------------------------------
DAMAGED = r"damaged|not a thrifty checkpoint|not written with this user's checkpoint key"


def test_every_single_byte_flip_is_refused(tmp_path):
    """Bytes flipped at 40 places (ends, headers, random places; one bit of a float's exponent
    among them) of the main file and of the draws file: each resume is refused with a clear
    error — never a resume with other draws — and the intact checkpoint still resumes."""
    path = tmp_path / "run.ckpt"
    draws = tmp_path / "run.ckpt.draws"
    full = _checkpoint(path)
    rng = np.random.default_rng(0)
    accepted = []  # (file, byte, what happened) of every flip not refused clearly
    for f in (path, draws):
        original = f.read_bytes()
        n = len(original)
        where = [0, 3, 8, 13, 20, 30, n // 2, n - 40, n - 33, n - 1,
                 *rng.integers(0, n, size=10)]
        for k, i in enumerate(where):
            damaged = bytearray(original)
            damaged[i] ^= 0x40 if k % 2 else 0xFF  # one exponent-like bit, or the whole byte
            f.write_bytes(bytes(damaged))
            for load in (_resume, th.load_checkpoint):
                try:
                    load(path)
                    accepted.append((f.name, int(i), f"{load.__name__}: accepted"))
                except Exception as e:  # a CheckpointError (a ValueError) saying what is wrong
                    if not (isinstance(e, ValueError) and re.search(DAMAGED, str(e))):
                        accepted.append((f.name, int(i), f"{load.__name__}: {e!r}"))
        f.write_bytes(original)
    assert accepted == []
    again = _resume(path)
    np.testing.assert_array_equal(again["s.z"], full["s.z"])


def test_a_truncated_draws_file_is_refused_and_bytes_after_the_last_write_are_ignored(tmp_path):
    path = tmp_path / "run.ckpt"
    draws = tmp_path / "run.ckpt.draws"
    full = _checkpoint(path)
    original = draws.read_bytes()
    draws.write_bytes(original + b"\x00partial block of a write that was killed")
    np.testing.assert_array_equal(_resume(path)["s.z"], full["s.z"])  # cut off, as after a kill
    draws.write_bytes(original[: len(original) - 100])
    with pytest.raises(ValueError, match="damaged or missing"):
        _resume(path)


# -- no code runs from a checkpoint -------------------------------------------------------------
class _CreatesFile:
    """Unpickled, it creates a file: what a crafted pickle could do."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_crafted_pickle_as_the_main_file_runs_no_code(tmp_path):
    """A pickle (as checkpoints of earlier versions were) is refused without being loaded."""
    path, marker = tmp_path / "run.ckpt", tmp_path / "pwned"
    path.write_bytes(pickle.dumps({"format": "thrifty-checkpoint", "version": 4,
                                   "payload": _CreatesFile(marker)}))
    with pytest.raises(ValueError, match="earlier thrifty"):
        _resume(path)
    with pytest.raises(ValueError, match="earlier thrifty"):
        th.load_checkpoint(path)
    assert not marker.exists()


def test_a_crafted_draws_file_runs_no_code(tmp_path):
    path, marker = tmp_path / "run.ckpt", tmp_path / "pwned"
    _checkpoint(path)
    (tmp_path / "run.ckpt.draws").write_bytes(pickle.dumps(_CreatesFile(marker)) * 100)
    with pytest.raises(ValueError, match="damaged"):
        _resume(path)
    with pytest.raises(ValueError, match="damaged"):
        th.load_checkpoint(path)
    assert not marker.exists()


def test_a_forged_block_is_refused_before_its_pickles_are_loaded(tmp_path):
    """A block with a valid checksum but written without this user's key (an attacker's): its
    content is never parsed, so a pickled value in it never runs."""
    from thrifty.runtime.checkpoint import VERSION
    from thrifty.runtime.sealed import seal, to_arrays, write_npz

    path, marker = tmp_path / "run.ckpt", tmp_path / "pwned"
    tree = {"format": "thrifty-checkpoint", "version": VERSION, "x": _CreatesFile(marker)}
    path.write_bytes(seal(b"MAIN", VERSION, write_npz(to_arrays(tree)), b"k" * 32))
    with pytest.raises(ValueError, match="not written with this user's checkpoint key"):
        _resume(path)
    with pytest.raises(ValueError, match="not written with this user's checkpoint key"):
        th.load_checkpoint(path)
    assert not marker.exists()


def test_a_checkpoint_of_another_user_is_refused_unless_their_key_is_here(tmp_path,
                                                                            monkeypatch):
    path = tmp_path / "run.ckpt"
    mine = tmp_path / "config-mine"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(mine))
    full = _checkpoint(path)
    key = mine / "thrifty" / "checkpoint.key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-theirs"))
    with pytest.raises(ValueError, match="no checkpoint key"):
        _resume(path)
    _checkpoint(tmp_path / "theirs.ckpt")  # now they have a key of their own: still refused
    with pytest.raises(ValueError, match="not written with this user's checkpoint key"):
        _resume(path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(mine))
    np.testing.assert_array_equal(_resume(path)["s.z"], full["s.z"])


# -- a kill during a write ---------------------------------------------------------------------
def test_a_temporary_file_left_by_a_killed_write_is_removed_on_resume(tmp_path):
    path = tmp_path / "run.ckpt"
    _checkpoint(path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f"run.ckpt.tmp{dead}"
    stale.write_bytes(b"half a main file")
    live = tmp_path / f"run.ckpt.tmp{os.getppid()}"  # a process that still runs: left alone
    live.write_bytes(b"being written")
    _resume(path)
    assert not stale.exists() and live.exists()


def test_the_checkpoint_modules_docstring_examples_run():
    import doctest

    from thrifty import fingerprint
    from thrifty.inference import configured
    from thrifty.runtime import checkpoint, sealed

    for module in (fingerprint, configured, checkpoint, sealed):
        result = doctest.testmod(module, verbose=False, report=False)
        assert result.failed == 0, module.__name__
