"""Worker faults: a crashed worker does not discard the other
chains' draws; a hanging worker and one Ctrl-C return within 5 s; workers exit when the main
process is killed."""

from __future__ import annotations

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
from thrifty import dist

SCRIPT = Path(__file__).with_name("workers_script.py")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


class Crashy(th.Kernel):
    """MH on mu; the first chain to reach step 30 raises or exits (os._exit)."""

    name = "crashy"

    def __init__(self, flag, how):
        th.Kernel.__init__(self)
        self.flag, self.how = flag, how
        self.inner = th.mh("mu", th.drift(0.5))

    def _step(self, trace, rng):
        if self.inner.stats.steps == 30:
            try:
                os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL))
                if self.how == "exit":
                    os._exit(3)
                raise RuntimeError("boom in one chain")
            except FileExistsError:
                pass
        return self.inner.step(trace, rng)


@th.model
def m():
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(mu, 1.0), 0.5)


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_crashed_worker_keeps_the_other_chains_draws(tmp_path, how):
    flag = str(tmp_path / "flag")
    with pytest.warns(th.InterruptedWarning, match="chain .* failed"):
        r = th.infer(m(), Crashy(flag, how), num_samples=200, chains=3, workers=3, seed=0,
                     progress=False)
    assert len(r.failed_chains) == 1
    (bad,) = r.failed_chains
    assert bad not in r.chain_ids and len(r.chain_ids) == 2
    # the survivors' draws are those of a run in which no chain fails (same per-chain seeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = th.infer(m(), Crashy(flag, how), num_samples=200, chains=3, workers=1, seed=0,
                        progress=False)  # the flag exists: nothing fails
    for k, c in enumerate(r.chain_ids):
        np.testing.assert_array_equal(r["mu"][k], full["mu"][c])


def _start(mode, tmp_path):
    p = subprocess.Popen([sys.executable, str(SCRIPT), mode, str(tmp_path / "flag")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    line = p.stdout.readline()
    assert line.startswith("pid"), line + p.stderr.read()
    return p


def _children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True).stdout
    return [int(x) for x in out.split()]


def _wait_children(pid, n, timeout=20.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        kids = _children(pid)
        if len(kids) >= n:
            return kids
        time.sleep(0.1)
    raise AssertionError(f"workers did not start: {_children(pid)}")


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")  # a zombie is gone


def test_a_hanging_worker_and_one_ctrl_c_return_within_5_s(tmp_path):
    p = _start("hang", tmp_path)
    _wait_children(p.pid, 2)
    deadline = time.monotonic() + 30
    while not (tmp_path / "flag").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the other chain makes draws; the hanging one is stuck
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 5.0, err
    assert "draws" in out, err
    assert int(out.split("draws")[1].split()[0]) > 0  # the draws came back


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses ps --ppid and /proc")
def test_workers_exit_when_the_main_process_is_killed(tmp_path):
    p = _start("long", tmp_path)
    kids = _wait_children(p.pid, 2)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    deadline = time.monotonic() + 10.0
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(k) for k in kids), [k for k in kids if _alive(k)]


def test_no_worker_is_forked_once_jax_has_started(tmp_path):
    """Once a gradient kernel has started JAX's runtime (threads: a fork could deadlock),
    chains of any kernel are spawned when workers is given, else run in the process, with the
    same draws and no warning about forking a multi-threaded process."""
    pytest.importorskip("jax")
    out = subprocess.run([sys.executable, str(SCRIPT), "after_jax", str(tmp_path / "flag")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-4:] == ["spawn", "in-process", "True", "0"], out.stdout


def test_draws_do_not_depend_on_workers_for_blas_heavy_kernels():
    """Issue 12, defect 4: th.smh's set-up and steps use BLAS; with more threads in the main
    process than in a worker, sums differed (max |Δw| = 0.06).  Every chain now gets the same
    BLAS thread limit wherever it runs."""
    from thrifty.datasets import synthetic_logistic
    from thrifty.models import logistic_regression

    X, y, _ = synthetic_logistic(50_000, 10, seed=0)
    prog = logistic_regression(X, y, prior_var=10.0)
    a = th.infer(prog, th.smh("w"), num_samples=100, chains=2, workers=1, seed=0,
                 progress=False)
    b = th.infer(prog, th.smh("w"), num_samples=100, chains=2, workers=2, seed=0,
                 progress=False)
    np.testing.assert_array_equal(a["w"], b["w"])


@th.model
def scaled():
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    s = th.sample("s", dist.HalfNormal(1.0))
    th.observe("y", dist.Normal(mu, s), 0.5)


@pytest.mark.parametrize("workers", [1, 2])
def test_an_initial_value_outside_the_support_is_an_error_whatever_the_workers(workers):
    """One chain's ``init=`` value outside its support raises the error naming the address in
    worker processes as in this process (it was a warning and a result without that chain)."""
    with pytest.raises(th.errors.InitializationError, match=r"\('s',\) is outside the support"):
        th.infer(scaled(), th.lmh(), num_samples=50, chains=2, workers=workers, seed=0,
                 progress=False, init=[{"mu": 0.0}, {"s": -3.0}])
