"""A checkpoint compares the kernel's full configuration — every constructor argument, exactly,
and a user kernel's code — and the resumed chain runs the kernel passed to ``th.infer`` with
the state the saved one had reached (draws equal to an uninterrupted run's)."""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np
import pytest

import thrifty as th
from shared_models import ar_chain
from test_runtime import ARMED, Interrupting
from thrifty import dist, glm
from thrifty.models import hmm

X, Y, _ = th.datasets.synthetic_logistic(300, 2, seed=0)


@th.model
def logistic(X, y):
    w = th.sample("w", dist.MvNormal(np.zeros(2), np.eye(2)))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], w), y[i])


USER_KERNEL = """
import thrifty as th


class Repeat(th.Kernel):
    def __init__(self, inner, extra=0):
        super().__init__()
        self.inner, self.extra = inner, extra

    def _step(self, trace, rng):
        for _ in range({times} + self.extra):
            trace = self.inner.step(trace, rng)
        return trace

    def kernels(self):
        return self.inner.kernels()

    def label(self):
        return self.inner.label()
"""


@pytest.fixture
def user_kernel(tmp_path, monkeypatch):
    """``user_kernel(times)``: the class ``Repeat`` of the user's module as the file is now
    (``times``: an edit of its body), imported afresh; its label is its inner kernel's, so a
    label cannot tell two versions apart."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.delitem(sys.modules, "users_kernels", raising=False)

    def load(times: int):
        (tmp_path / "users_kernels.py").write_text(USER_KERNEL.format(times=times))
        sys.modules.pop("users_kernels", None)
        importlib.invalidate_caches()
        return importlib.import_module("users_kernels").Repeat

    yield load
    sys.modules.pop("users_kernels", None)


def _mh():
    return th.mh("w", th.drift(0.2))


CHANGES = {
    "subsampled_mh k0": (lambda u: th.subsampled_mh("w", 50, 0.05, th.drift(0.2), k0=1),
                         lambda u: th.subsampled_mh("w", 50, 0.05, th.drift(0.2), k0=2)),
    "smh theta_hat": (lambda u: th.smh("w", theta_hat=[0.5, 0.5]),
                      lambda u: th.smh("w", theta_hat=[0.5, 0.6])),
    "smh scale": (lambda u: th.smh("w", proposal="random_walk", scale=1.0),
                  lambda u: th.smh("w", proposal="random_walk", scale=1.5)),
    "smh fallback": (lambda u: th.smh("w", fallback=50.0),
                     lambda u: th.smh("w", fallback=60.0)),
    "mixture probabilities": (
        lambda u: th.mixture([(0.3, _mh()), (0.7, th.lmh())]),
        lambda u: th.mixture([(0.3000001, _mh()), (0.6999999, th.lmh())])),
    "adaptive_lmh exploration": (lambda u: th.adaptive_lmh(0.5),
                                 lambda u: th.adaptive_lmh(0.5000001)),
    "a user kernel's argument": (lambda u: u(1)(_mh()), lambda u: u(1)(_mh(), extra=1)),
    "a user kernel's code": (lambda u: u(1)(_mh()), lambda u: u(2)(_mh())),
}


@pytest.mark.parametrize("what", list(CHANGES))
def test_a_resume_with_another_kernel_configuration_is_refused(tmp_path, user_kernel, what):
    """Settings a label omits or rounds (k0, θ̂, SMH's scale and fallback, mixture
    probabilities, AdLMH's exploration), a user kernel's arguments and its code."""
    a, b = CHANGES[what]
    assert a(user_kernel).label() == b(user_kernel).label()  # a label cannot tell them apart
    path = tmp_path / "run.ckpt"
    kw = dict(num_samples=5, seed=0, progress=False, checkpoint=path)
    first = th.infer(logistic(X, Y), a(user_kernel), **kw)
    again = th.infer(logistic(X, Y), a(user_kernel), **kw)  # the same kernel resumes
    np.testing.assert_array_equal(again["w"], first["w"])
    with pytest.raises(ValueError, match="the kernel differs"):
        th.infer(logistic(X, Y), b(user_kernel), **kw)


STATEFUL = {  # kernels that adapt or cache while running: resumed bit for bit
    "adaptive_lmh": (hmm, lambda: th.adaptive_lmh(), "s.z"),
    "mh drift() in a cycle": (lambda: logistic(X, Y),
                              lambda: th.cycle([th.mh("w", th.drift()), th.lmh()]), "w"),
    "smh": (lambda: logistic(X, Y), lambda: th.smh("w"), "w"),
    "subsampled_mh taylor": (lambda: logistic(X, Y),
                             lambda: th.subsampled_mh("w", 50, 0.05, th.drift(0.1),
                                                      proxy="taylor"), "w"),
    "pmmh": (lambda: ar_chain(6), lambda: th.pmmh("phi", 8, th.drift(0.3)), "h.h"),
    "pmmh refreshed in a cycle": (lambda: ar_chain(6), lambda: th.cycle(
        [th.pmmh("phi", 8, th.drift(0.3)), th.pgibbs("h", 8)]), "h.h"),
}


@pytest.mark.parametrize("name", list(STATEFUL))
def test_a_resumed_kernel_continues_with_its_saved_state(tmp_path, monkeypatch, name):
    prog, make, var = STATEFUL[name]
    kw = dict(num_samples=150, burn_in=100, chains=2, seed=3, workers=1, progress=False)
    straight = th.infer(prog(), make(), **kw)
    path = tmp_path / "run.ckpt"
    monkeypatch.setenv(ARMED, "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = th.infer(prog(), Interrupting(make(), after=170, how="raise"), checkpoint=path,
                        checkpoint_every=0.0, **kw)
    assert part.interrupted
    resumed = th.infer(prog(), Interrupting(make(), after=170, how="raise"), checkpoint=path,
                       **kw)
    assert "resumed" in resumed.notes[0]
    np.testing.assert_array_equal(resumed[var], straight[var])
    np.testing.assert_array_equal(resumed.sample_stats["lp"], straight.sample_stats["lp"])


def test_restore_state_keeps_the_kernel_passed_and_takes_the_saved_state():
    """The configured parts (kernels, proposals, selections) stay the objects of the kernel
    passed; what the saved kernel learnt (statistics, adapted proposals) is taken over."""
    from thrifty.inference.configured import restore_state

    rng = np.random.default_rng(0)
    saved = th.cycle([th.mh("w", th.drift()), th.lmh()])
    saved.set_tuning(True)
    trace = th.initialize(logistic(X, Y), rng)
    for _ in range(50):
        trace = saved.step(trace, rng)
    mine = th.cycle([th.mh("w", th.drift()), th.lmh()])
    mh, proposal = mine.children[0], mine.children[0].proposal
    restore_state(mine, saved)
    assert mine.children[0] is mh and mh.proposal is proposal and mh.selection is not \
        saved.children[0].selection
    assert mh.stats is saved.children[0].stats and mh.stats.steps == 50
    assert proposal.adapters is saved.children[0].proposal.adapters and proposal.adapters
    assert mine.config() == saved.config()


def test_a_kernel_built_from_a_generator_is_configured_and_copied(tmp_path):
    """The constructor arguments are recorded as the constructor saw them: a generator of
    kernels is made a list first (a record of the spent generator could be neither compared
    nor copied for the chains)."""
    k = th.cycle(th.mh(s, th.drift(0.3)) for s in ("w",))
    assert k.config() == th.cycle([th.mh("w", th.drift(0.3))]).config()
    path = tmp_path / "run.ckpt"
    first = th.infer(logistic(X, Y), k, num_samples=5, seed=0, progress=False, checkpoint=path)
    again = th.infer(logistic(X, Y), th.cycle([th.mh("w", th.drift(0.3))]), num_samples=5,
                     seed=0, progress=False, checkpoint=path)
    np.testing.assert_array_equal(again["w"], first["w"])


def test_a_kernel_that_shares_a_part_is_not_resumed_by_one_with_separate_parts(tmp_path):
    """``th.cycle([k, k])`` steps one kernel twice — one adaptation of ``th.drift()``, one set
    of statistics — and ``th.cycle([k1, k2])`` two: equal configurations of two runs (other
    draws).  A resume of one by the other was accepted, and gave the draws of neither."""
    def shared():
        k = th.mh("w", th.drift())
        return th.cycle([k, k])

    def separate():
        return th.cycle([th.mh("w", th.drift()), th.mh("w", th.drift())])

    assert shared().config() == separate().config()
    kw = dict(num_samples=5, burn_in=20, seed=0, progress=False)
    for first, then in ((shared, separate), (separate, shared)):
        path = tmp_path / f"{first.__name__}.ckpt"
        done = th.infer(logistic(X, Y), first(), checkpoint=path, **kw)
        again = th.infer(logistic(X, Y), first(), checkpoint=path, **kw)  # fresh objects
        np.testing.assert_array_equal(again["w"], done["w"])
        with pytest.raises(ValueError, match=r"the kernel differs: .*\(one object at: .*"
                                             r"args\.kernels\[0\], args\.kernels\[1\]"):
            th.infer(logistic(X, Y), then(), checkpoint=path, **kw)
