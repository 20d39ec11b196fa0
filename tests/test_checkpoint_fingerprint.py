"""A checkpoint never resumes a different run: new data, another N, an edited model body —
or anything the model reaches: helpers, module-level values, closures, defaults, sub-models —
or other record settings under the same path is an error saying what differs."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import numpy as np
import pytest

import thrifty as th
from thrifty import dist


@th.model
def normal_mean(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


def _run(prog, path, n=200):
    return th.infer(prog, th.mh("mu", th.drift(0.5)), num_samples=n, seed=0, progress=False,
                    checkpoint=str(path))


def test_new_data_under_the_same_checkpoint_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    y = np.random.default_rng(0).normal(size=50)
    first = _run(normal_mean(y), path)
    again = _run(normal_mean(y), path)  # same run: resumed, same draws
    np.testing.assert_array_equal(first["mu"], again["mu"])
    with pytest.raises(ValueError, match=r"the data .* differ.*start afresh"):
        _run(normal_mean(y + 5.0), path)
    with pytest.raises(ValueError, match=r"the data .* differ"):
        _run(normal_mean(y[:40]), path)  # another N


def test_a_checkpoint_of_other_thrifty_code_is_refused(tmp_path, monkeypatch):
    """An upgrade or a local edit of thrifty between the checkpoint and the resume: the draws
    would be of two engines, not of one run (the digest of thrifty's source files differs)."""
    path = tmp_path / "run.ckpt"
    y = np.zeros(10)
    first = _run(normal_mean(y), path)
    np.testing.assert_array_equal(first["mu"], _run(normal_mean(y), path)["mu"])  # same code
    monkeypatch.setattr("thrifty.runtime.checkpoint.engine_digest", lambda: "0" * 64)
    with pytest.raises(ValueError, match="thrifty's own code differs"):
        _run(normal_mean(y), path)


def test_an_edited_model_body_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    y = np.zeros(10)

    def body_a(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    def body_b(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu, 2.0), y[i])

    body_b.__name__ = body_a.__name__ = "same_name"
    _run(th.model(body_a)(y), path)
    with pytest.raises(ValueError, match="the model's code differs"):
        _run(th.model(body_b)(y), path)


# -- everything the model reaches (transitively) ------------------------------------------------
SOURCE = """
import threading

import thrifty as th
from thrifty import dist

import {consts}

SIGMA = {sigma}
LOCK = threading.Lock() if {lock} else None


def helper(mu, s={default}):
    return {expr}


@th.model
def sub(mu):
    th.sample("z", dist.Normal(mu, {sub_sd}))


@th.model
def model(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    th.call("s", sub, mu)
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(helper(mu) * {consts}.SCALE, SIGMA), y[i])
    if LOCK is not None:
        with LOCK:
            pass
"""
BASE = dict(sigma="1.0", default="1.0", expr="mu * s", sub_sd="1.0", scale="1.0", lock="False")


def _user_module(tmp_path, monkeypatch, name, **changes):
    """The user's module ``name`` as it is on disk now (written from SOURCE with ``changes``)
    and a module of constants it imports — imported afresh, as a new Python process would
    after the user edited the file."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    p = {**BASE, **changes}
    consts = f"{name}_consts"
    (tmp_path / f"{consts}.py").write_text(f"SCALE = {p['scale']}\n")
    (tmp_path / f"{name}.py").write_text(SOURCE.format(consts=consts, **p))
    for m in (name, consts):
        sys.modules.pop(m, None)
    importlib.invalidate_caches()
    mod = importlib.import_module(name)
    monkeypatch.delitem(sys.modules, name, raising=False)  # removed at the end of the test
    monkeypatch.delitem(sys.modules, consts, raising=False)
    return mod


@pytest.mark.parametrize(
    ("change", "value", "says"),
    [
        ("sigma", "3.0", r"the data .* differ: module-level value ckpt_sigma\.SIGMA"),
        ("expr", "mu * s * 1.5", r"the model's code differs: function ckpt_expr\.helper"),
        ("default", "2.0", r"the data .* differ: default arguments of ckpt_default\.helper"),
        ("sub_sd", "2.0", r"the model's code differs: function ckpt_sub_sd\.sub"),
        ("scale", "2.0", r"module-level value ckpt_scale_consts\.SCALE"),
    ],
)
def test_a_change_to_anything_the_model_reaches_is_refused(tmp_path, monkeypatch, change, value,
                                                           says):
    """A module-level helper the model calls, a module-level scalar, a default argument, the
    body of a th.call sub-model, a constant of another of the user's modules: each changed
    between two runs under one checkpoint is refused, naming what changed; unchanged, the
    run resumes."""
    name = f"ckpt_{change}"
    path = tmp_path / "run.ckpt"
    y = np.linspace(-1.0, 1.0, 8)
    first = _run(_user_module(tmp_path, monkeypatch, name).model(y), path, n=30)
    again = _run(_user_module(tmp_path, monkeypatch, name).model(y), path, n=30)
    assert "resumed" in again.notes[0]
    np.testing.assert_array_equal(first["mu"], again["mu"])
    with pytest.raises(ValueError, match=says):
        _run(_user_module(tmp_path, monkeypatch, name, **{change: value}).model(y), path, n=30)


def _module_from(tmp_path, monkeypatch, name, source):
    """The user's module ``name`` with ``source``, imported afresh (as by a new process)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / f"{name}.py").write_text(source)
    sys.modules.pop(name, None)
    importlib.invalidate_caches()
    mod = importlib.import_module(name)
    monkeypatch.setitem(sys.modules, name, mod)  # (importable while the test runs, only)
    return mod


def test_a_module_level_value_named_like_a_site_does_not_stop_a_resume(tmp_path, monkeypatch):
    """A site's name is a string the model passes, not a name its code reads: ``mu =
    r["mu"]`` after an interrupted run (a notebook's usual next line) used to make the resume
    fail with "module-level value mu differs"."""
    mod = _user_module(tmp_path, monkeypatch, "ckpt_named")
    path = tmp_path / "run.ckpt"
    y = np.linspace(-1.0, 1.0, 8)
    first = _run(mod.model(y), path, n=30)
    mod.mu = first["mu"]  # the draws, bound to the site's name after the run
    mod.s = "the sub-model's name, rebound"
    again = _run(mod.model(y), path, n=30)
    assert "resumed" in again.notes[0]
    np.testing.assert_array_equal(first["mu"], again["mu"])


LOOKUP_SOURCE = """
import sys

import thrifty as th
from thrifty import dist

SIGMA = {sigma}


def read(name):
    return {lookup}


@th.model
def model(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, read("SIGMA")), y[i])
"""


@pytest.mark.parametrize("lookup", ['globals()[name]', 'getattr(sys.modules[__name__], name)',
                                    'vars(sys.modules[__name__])[name]'])
def test_a_module_level_value_read_by_its_name_as_a_string_is_fingerprinted(
        tmp_path, monkeypatch, lookup):
    """A value the code reads by a string (``globals()["SIGMA"]``, ``getattr``, ``vars``) is
    part of the fingerprint, even when the string is in the model and the lookup in a helper
    walked after it: changed between two runs, the resume is refused."""
    name = "ckpt_lookup_" + str(abs(hash(lookup)) % 10**6)
    path = tmp_path / "run.ckpt"
    y = np.linspace(-1.0, 1.0, 8)
    src = LOOKUP_SOURCE.format(lookup=lookup, sigma="{sigma}")
    _run(_module_from(tmp_path, monkeypatch, name, src.format(sigma="1.0")).model(y), path, n=30)
    again = _run(_module_from(tmp_path, monkeypatch, name, src.format(sigma="1.0")).model(y),
                 path, n=30)
    assert "resumed" in again.notes[0]
    with pytest.raises(ValueError, match=rf"module-level value {name}\.SIGMA"):
        _run(_module_from(tmp_path, monkeypatch, name, src.format(sigma="3.0")).model(y), path,
             n=30)


def _closing_over(scale):
    @th.model
    def closure_model(y):
        mu = th.sample("mu", dist.Normal(0.0, scale))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    return closure_model


def test_a_changed_closure_value_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    y = np.zeros(5)
    _run(_closing_over(10.0)(y), path, n=20)
    _run(_closing_over(10.0)(y), path, n=20)  # the same value in a new closure: resumes
    with pytest.raises(ValueError, match=r"closure variable scale of .*closure_model"):
        _run(_closing_over(20.0)(y), path, n=20)


def test_what_cannot_be_fingerprinted_is_named_in_a_warning(tmp_path, monkeypatch):
    mod = _user_module(tmp_path, monkeypatch, "ckpt_lock", lock="True")
    with pytest.warns(UserWarning, match=r"cannot fingerprint module-level value "
                                         r"ckpt_lock\.LOCK: a _thread\.lock"):
        _run(mod.model(np.zeros(4)), tmp_path / "run.ckpt", n=10)


HASH_SEED_SCRIPT = """
import sys
import numpy as np
import thrifty as th
from thrifty import dist

NAMES = {"alpha", "beta", "gamma", "delta", "epsilon"}


@th.model
def sets(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    sd = 1.0 if "mu" in {"mu", "nu", "xi", "omicron"} and len(NAMES) == 5 else 2.0
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, sd), y[i])


r = th.infer(sets(np.zeros(5)), th.mh("mu", th.drift(0.5)), num_samples=20, seed=0,
             progress=False, checkpoint=sys.argv[1])
print(r.notes[0] if r.notes else "fresh")
"""


def test_a_resume_in_another_process_is_not_refused_for_set_order(tmp_path):
    """String sets iterate in an order that depends on the process's hash seed: the
    fingerprint must not (a constant frozenset in the model's code, a set global)."""
    script = tmp_path / "sets_model.py"
    script.write_text(HASH_SEED_SCRIPT)
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        p = subprocess.run([sys.executable, str(script), str(tmp_path / "run.ckpt")], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.strip().splitlines()[-1])
    assert outs[0] == "fresh" and outs[1].startswith("resumed")


# -- what is recorded ---------------------------------------------------------------------------
def test_a_resume_that_records_differently_is_refused(tmp_path):
    """record= / exclude= are part of what a resume compares: resuming with another selection
    would freeze a variable in one chain and leave it NaN in another."""
    path = tmp_path / "run.ckpt"
    kw = dict(num_samples=30, chains=2, workers=1, seed=0, progress=False, checkpoint=path)
    prog = normal_mean(np.zeros(5))
    k = th.mh("mu", th.drift(0.5))
    first = th.infer(prog, k, record="mu", **kw)
    np.testing.assert_array_equal(th.infer(prog, k, record="mu", **kw)["mu"], first["mu"])
    with pytest.raises(ValueError, match=r"what is recorded differs: the checkpoint has "
                                         r"record=\['mu'\].*this call record=None"):
        th.infer(prog, k, **kw)
    with pytest.raises(ValueError, match=r"what is recorded differs.*exclude=\['mu'\]"):
        th.infer(prog, k, record="mu", exclude="mu", **kw)


def test_a_resume_with_other_initial_values_is_refused(tmp_path):
    """A chain that had not started when the run stopped would start from the new values."""
    path = tmp_path / "run.ckpt"
    kw = dict(num_samples=20, chains=2, workers=1, seed=0, progress=False, checkpoint=path)
    prog, k = normal_mean(np.zeros(5)), th.mh("mu", th.drift(0.5))
    th.infer(prog, k, init={"mu": 1.0}, **kw)
    th.infer(prog, k, init={"mu": 1.0}, **kw)
    with pytest.raises(ValueError, match="init: checkpoint has initial values"):
        th.infer(prog, k, init={"mu": 2.0}, **kw)
