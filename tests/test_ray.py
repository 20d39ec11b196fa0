"""Chains as Ray tasks (``th.infer(..., executor="ray")``) on a local Ray instance.

Skipped when Ray is not installed (``pip install 'thrifty[ray]'``; ``make test`` installs it).
Same seeds give the same draws as ``workers=1``; Ctrl-C (SIGINT to the driver's process group,
from outside) returns the draws so far and the checkpoint resumes to exactly the uninterrupted
draws; a worker killed mid-run gives a partial
result naming the chain (never a hang).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.models import hmm

ray = pytest.importorskip("ray")
HERE = Path(__file__).resolve().parent


def test_ctrl_c_and_checkpoint_resume_under_ray(tmp_path):
    # (first in the module: its own Ray instance runs before the module's starts)
    # Ctrl-C as a terminal sends it: SIGINT to the driver's whole process group (Ray's own
    # processes included), once both chains have run for a while
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "THRIFTY_TEST_MARK_DIR": str(marks)}
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "ray_script.py"), str(tmp_path / "ck.pkl")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while len(list(marks.iterdir())) < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "the chains did not start under Ray"
            time.sleep(0.1)
        time.sleep(0.3)  # (each chain has sent ticks by its mark, at step 100)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    n = out["num_samples"]
    assert out["interrupted"] and 0 < out["draws"] < n
    assert all(0 < k < n for k in out["chain_draws"])  # each chain's draws so far
    # both chains saw the stop request at a report (not cancelled after the grace period)
    assert any(re.search(r"chain 0: \d+ draws \(stopped\), chain 1: \d+ draws \(stopped\)", w)
               for w in out["warnings"]), out["warnings"]
    assert "2 chains: " in stderr  # the progress bar ran
    # the resumed run continues from the checkpoint (fewer steps) to the uninterrupted draws
    assert not out["resumed_interrupted"] and out["equal"]
    assert 0 < out["resumed_steps"] < out["straight_steps"]
    assert out["main_equal"]  # a model and a kernel defined in the script (__main__)


@pytest.fixture(scope="module")
def local_ray():
    # the workers import this test module (its models pickle by reference to it): Ray's
    # processes inherit PYTHONPATH from this one (as a runtime_env, it would make Ray start
    # workers of their own for it, beside the ones it starts at ray.init)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join([str(HERE), *sys.path]))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@th.model
def plated(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Normal(mu, 1.0))
        th.observe("y", dist.Normal(z, 0.5), y[i])


def test_same_draws_as_one_worker(local_ray):
    y = np.linspace(-1, 2, 12)
    k = th.cycle([th.mh("mu", th.drift(0.5)), th.mh("data.z", th.drift(0.5))])
    for prog, kern in ((hmm(), th.lmh()), (plated(y), k)):
        a = th.infer(prog, kern, num_samples=500, chains=3, seed=5, progress=False,
                     executor="ray")
        b = th.infer(prog, kern, num_samples=500, chains=3, seed=5, progress=False, workers=1)
        assert a.stats["run"]["start_method"] == "ray"
        for name in b.keys():
            np.testing.assert_array_equal(a[name], b[name])
        np.testing.assert_array_equal(a.sample_stats["lp"], b.sample_stats["lp"])


def test_statistics_and_the_zero_acceptance_warning_as_in_this_process(local_ray):
    """The kernels' statistics come back from the Ray tasks as from chains run here (the
    sampling steps', the burn-in's under "burn_in"), and a kernel that accepted none of its
    burn-in proposals (drift(1e6) on a choice of posterior sd ≈ 0.3) warns."""
    from test_runtime import counts

    y = np.linspace(-1, 2, 12)
    k = th.cycle([th.mh("mu", th.drift(1e6)), th.mh("data.z", th.drift(0.5))])
    kw = dict(num_samples=60, burn_in=100, chains=2, seed=5, progress=False)
    said = (r"mh\('mu', drift\(1000000\.0\)\) accepted none of its 100 proposals during the "
            r"burn-in of chains 0, 1")
    with pytest.warns(th.ZeroAcceptanceWarning, match=said):
        a = th.infer(plated(y), k, executor="ray", **kw)
    with pytest.warns(th.ZeroAcceptanceWarning, match=said):
        b = th.infer(plated(y), k, workers=1, **kw)
    assert counts(a.stats) == counts(b.stats)
    assert a.stats["mh('mu', drift(1000000.0))"]["burn_in"]["accepted"] == 0


def test_executor_object_and_bad_executor(local_ray):
    r = th.infer(hmm(), th.lmh(), num_samples=50, chains=2, seed=0, progress=False,
                 executor=th.RayExecutor(), workers=1)  # one task at a time
    assert r["s.z"].shape == (2, 50, 18)
    with pytest.raises(ValueError, match="executor"):
        th.infer(hmm(), th.lmh(), num_samples=5, progress=False, executor="dask")


@th.model
def reports_pid(path):
    try:  # the first execution in any worker names its process (test instrumentation)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
    except FileExistsError:
        pass
    th.sample("x", dist.Normal(0.0, 1.0))


class SlowMH(th.Kernel):
    def __init__(self):
        super().__init__()
        self.inner = th.mh("x", th.drift(1.0))

    def step(self, trace, rng):
        time.sleep(0.002)
        return self.inner.step(trace, rng)

    def kernels(self):
        return self.inner.kernels()

    def label(self):
        return self.inner.label()


HANG = 600  # seconds: a hang guard, never reached by a run that returns (about 3 s alone; the
# surviving chain's 1,000 steps of at least 2 ms take longer on a loaded machine, so no bound on
# the wall clock of a run that does return is asserted)


def test_killed_worker_gives_a_partial_result_not_a_hang(local_ray, tmp_path):
    pid_file = tmp_path / "pid"
    killed_at = []

    def kill_first_worker():
        for _ in range(3000):
            if pid_file.exists() and pid_file.read_text():
                time.sleep(0.3)  # let it send some draws (ticks every 0.1 s), of 2 s at least
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
                killed_at.append(time.perf_counter())
                return
            time.sleep(0.05)

    threading.Thread(target=kill_first_worker, daemon=True).start()
    out = {}

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["r"] = th.infer(reports_pid(str(pid_file)), SlowMH(), num_samples=1000,
                                chains=2, seed=0, progress=False, executor="ray")

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(HANG)
    assert killed_at, "the worker was not killed"
    assert not runner.is_alive(), f"th.infer did not return within {HANG} s of its start"
    r = out["r"]
    assert len(r.failed_chains) == 1
    (_c, why), = r.failed_chains.items()
    assert "Ray task of chain" in why
    assert r.num_chains == 1 and r.num_draws == 1000  # the other chain's draws come back
