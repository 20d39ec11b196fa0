"""Checkpoints are appended, not rewritten, and a kill at any moment —
during a write included — leaves a checkpoint that resumes to the draws of an uninterrupted run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import thrifty as th
from thrifty.models import hmm
from thrifty.runtime.checkpoint import read_block, read_main
from thrifty.runtime.sealed import checkpoint_key

SCRIPT = Path(__file__).with_name("checkpoint_script.py")
KW = dict(num_samples=5_000, thin=3, chains=2, workers=1, seed=3, progress=False)


def test_each_write_appends_only_the_new_draws(tmp_path):
    path = tmp_path / "run.ckpt"
    r = th.infer(hmm(), th.lmh(), num_samples=3000, chains=2, workers=1, seed=0,
                 progress=False, checkpoint=str(path), checkpoint_every=0.0)
    main = read_main(path)
    size = os.path.getsize(str(path) + ".draws")
    assert main["draws_size"] == size
    key = checkpoint_key()
    for c, ch in enumerate(main["chains"]):
        ranges = ch["ranges"]
        assert len(ranges) > 3  # many writes, each a separate block
        assert ranges[0][0] == 0 or c > 0
        ns = [read_block(str(path) + ".draws", rng, key, "test")["n"] for rng in ranges]
        assert sum(ns) == r.num_draws and all(n > 0 for n in ns)  # no draw written twice
    spans = sorted(rng[:2] for ch in main["chains"] for rng in ch["ranges"])
    assert sum(length for _, length in spans) == size  # the file is only appended to
    assert os.path.getsize(path) < 64 * 1024  # the main file stays small


def _runs(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL, fork")
def test_kills_during_checkpoint_writes_resume_to_the_same_draws(tmp_path):
    """Three SIGKILLs of a run that checkpoints at every tick (so most kills land in or near a
    write), each at a random moment 0–0.3 s (about three ticks) after the run has appended its
    first draws, then a resume: the draws equal an uninterrupted run's."""
    path = tmp_path / "run.ckpt"
    draws = Path(str(path) + ".draws")
    delays = np.random.default_rng(5).uniform(0.0, 0.3, size=3)
    p = subprocess.Popen([sys.executable, str(SCRIPT), str(path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ended = []
    try:
        for d in delays:
            size = draws.stat().st_size if draws.exists() else 0
            p.stdin.write("run\n")
            p.stdin.flush()
            line = p.stdout.readline()
            assert line.startswith("started"), line
            child = int(line.split()[1])
            deadline = time.monotonic() + 120
            while not (draws.exists() and draws.stat().st_size > size) and _runs(child):
                assert time.monotonic() < deadline, "the run wrote no checkpoint"
                time.sleep(0.005)  # until it has written
            time.sleep(d)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            ended.append(int(p.stdout.readline().split()[1]))
    finally:
        _, err = p.communicate(timeout=60)  # (closes its stdin: it exits)
    # each run was killed mid-run, not ended by itself
    assert all(os.WIFSIGNALED(s) and os.WTERMSIG(s) == signal.SIGKILL for s in ended), err
    done = [ch["iteration"] for ch in read_main(path)["chains"]]
    assert 0 < sum(done) < 2 * 3 * KW["num_samples"]  # the checkpoint holds a part of the run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed = th.infer(hmm(), th.lmh(), checkpoint=str(path), checkpoint_every=0.0, **KW)
        straight = th.infer(hmm(), th.lmh(), **KW)
    assert "resumed" in resumed.notes[0]
    np.testing.assert_array_equal(resumed["s.z"], straight["s.z"])
    np.testing.assert_array_equal(resumed.sample_stats["lp"], straight.sample_stats["lp"])
