"""A change of a CRP's concentration α costs O(1), not O(N) (thrifty.core.reads).

The plate's elements read α only through the CRP, whose coupled state absorbs it: an MH step
on α re-scores the seating's Ewens probability and executes no element.  When α also reaches the
elements another way, the plate runs in full, as before.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from test_exchangeable import NG, dpm, log_ewens
from thrifty import dist
from thrifty.core.locate import locate, make_targets, plan_for
from thrifty.core.reads import Reads, snapshot
from thrifty.core.run import RESCORE, Run
from thrifty.core.simulate import initialize
from thrifty.models import dp_mixture

ALPHA = "mh('alpha', drift(0.5))"


def rescored(trace):
    """log p(x, y) of the trace's choices, computed afresh: a new trace built from its values
    (a rescoring run would not do: it re-scores the coupled states only where they change)."""
    run = Run(trace, np.random.default_rng(0), mode=RESCORE).execute()
    assert run.n_fresh == 0 and run.n_stale == 0
    values = trace.values()
    fresh = initialize(trace.program, 0, init=values, max_tries=1)
    assert fresh.values().keys() == values.keys()
    for k, v in values.items():
        np.testing.assert_array_equal(fresh.values()[k], v)
    return fresh.log_joint()


def alpha_run(trace, value):
    loc = locate(trace, ("alpha",))
    targets, vec = make_targets([loc], [value])
    return Run(trace, np.random.default_rng(0), targets=targets, vec=vec,
               plan=plan_for(trace, [loc])).execute()


def clusters(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 4, size=n)
    return rng.normal(3.0 * z, 1.0), z


def test_an_alpha_step_executes_no_element_whatever_n():
    """Scaling of work: th.infer with MH on α (alone, and in the DP mixture's cycle)."""
    for n in (200, 20_000):
        x, z = clusters(n)
        kw = dict(num_samples=50, burn_in=0, seed=0, progress=False, init={"data.z": z})
        r = th.infer(dpm(x, None), th.mh("alpha", th.drift(0.5)), **kw)
        s = r.stats[ALPHA]
        assert s["runs_per_step"] > 0.5 and s["elements_per_step"] == 0
        assert 0 < s["acceptance_rate"] < 1
        cycle = th.cycle([th.mh("alpha", th.drift(0.5)),
                          th.cycle([th.gibbs(th.one("data.z"))], repeats=3)])
        s = th.infer(dpm(x, None), cycle, **kw).stats[ALPHA]
        assert s["runs_per_step"] > 0.5 and s["elements_per_step"] == 0


def test_the_acceptance_ratio_is_the_ewens_difference_plus_the_prior():
    x, z = clusters(300)
    trace = initialize(dpm(x, None), np.random.default_rng(1), init={"data.z": z})
    a = trace["alpha"]
    run = alpha_run(trace, a * 1.7)
    assert run.work_elements == 0
    zc = np.unique(trace.values()["data.z"], return_inverse=True)[1]
    want = (log_ewens(zc, a * 1.7) - log_ewens(zc, a)
            + stats.gamma.logpdf(a * 1.7, 1.0) - stats.gamma.logpdf(a, 1.0))
    assert run.lp_new - run.lp_old == pytest.approx(want, abs=1e-9)
    run.commit()
    assert trace["alpha"] == a * 1.7
    assert trace.log_joint() == pytest.approx(rescored(trace), abs=1e-9)


def test_stored_log_densities_stay_exact_over_many_steps():
    """α steps (no element executed) interleaved with Gibbs label steps: the trace's stored
    log-joint equals a full re-execution's, at every check."""
    x, z = clusters(400, seed=2)
    prog = dp_mixture(x[:, None], np.zeros(1), 0.1, 3.0, np.eye(1))
    rng = np.random.default_rng(3)
    trace = initialize(prog, rng, init={"data.z": z})
    alpha, label = th.mh("alpha", th.drift(0.5)), th.gibbs(th.one("data.z"))
    seen = {trace["alpha"]}
    for it in range(30):
        for _ in range(5):
            trace = alpha.step(trace, rng)
        seen.add(trace["alpha"])
        for _ in range(5):
            trace = label.step(trace, rng)
        assert trace.known_log_joint() == pytest.approx(rescored(trace), abs=1e-8), it
    assert len(seen) > 10  # α moved
    assert alpha.stats.elements == 0


def _head():
    alpha = th.sample("alpha", dist.Gamma(2.0, 1.0))
    return alpha, th.CRP(alpha), th.mem("feats", lambda k: th.collapsed.NormalGamma(*NG))


@th.model
def direct(x):  # α read by the elements
    alpha, crp, feats = _head()
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
        th.observe("y", dist.Normal(alpha, 1.0), x[i])
    return z


@th.model
def derived(x):  # a value computed from α
    alpha, crp, feats = _head()
    scale = 1.0 + alpha
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
        th.observe("y", dist.Normal(0.0, scale), x[i])
    return z


@th.model
def closure(x):  # a function closing over α
    alpha, crp, feats = _head()
    loc = lambda: alpha  # noqa: E731
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
        th.observe("y", dist.Normal(loc(), 1.0), x[i])
    return z


@th.model
def memo(x):  # a memoized function whose distribution reads α
    alpha, crp, feats = _head()
    shift = th.mem("shift", lambda k: dist.Normal(alpha, 1.0))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
        th.observe("y", dist.Normal(shift(0), 1.0), x[i])
    return z


class Holder:
    """A model written Pyro-style: a choice kept on ``self``, read in the plate through it."""

    def body(self, x):
        alpha, crp, feats = _head()
        self.alpha = alpha
        with th.plate("data", len(x)) as i:
            z = th.sample("z", crp)
            th.observe("x", feats(z), x[i])
            th.observe("y", dist.Normal(self.alpha, 1.0), x[i])
        return z


_holder = Holder()


@th.model
def on_self(x):  # α reaches the elements as an attribute of an object that outlives the run
    return _holder.body(x)


@pytest.mark.parametrize("how", ["direct", "derived", "closure", "mem", "self"])
def test_alpha_reaching_the_elements_another_way_reruns_them(how):
    x, z = clusters(50, seed=4)
    prog = {"direct": direct, "derived": derived, "closure": closure, "mem": memo,
            "self": on_self}[how](x)
    rng = np.random.default_rng(5)
    trace = initialize(prog, rng, init={"data.z": z})
    a = trace["alpha"]
    run = alpha_run(trace, a + 0.5)
    assert run.work_elements == len(x)
    zc = np.unique(trace.values()["data.z"], return_inverse=True)[1]
    want = (log_ewens(zc, a + 0.5) - log_ewens(zc, a)
            + stats.gamma.logpdf(a + 0.5, 2.0) - stats.gamma.logpdf(a, 2.0))
    if how in ("direct", "closure", "self"):
        want += (stats.norm.logpdf(x, a + 0.5, 1.0) - stats.norm.logpdf(x, a, 1.0)).sum()
    elif how == "derived":
        want += (stats.norm.logpdf(x, 0.0, 1.5 + a) - stats.norm.logpdf(x, 0.0, 1.0 + a)).sum()
    elif how == "mem":
        s = trace["shift", 0]
        want += stats.norm.logpdf(s, a + 0.5, 1.0) - stats.norm.logpdf(s, a, 1.0)
    assert run.lp_new - run.lp_old == pytest.approx(want, abs=1e-8)
    run.commit()
    assert trace.log_joint() == pytest.approx(rescored(trace), abs=1e-9)
    k = th.mh("alpha", th.drift(0.5))
    for _ in range(100):
        trace = k.step(trace, rng)
    assert trace.log_joint() == pytest.approx(rescored(trace), abs=1e-8)
    st = k.stats  # every run that reached the plate ran it in full (α ≤ 0 stops a run before)
    assert st.elements % len(x) == 0 and st.elements >= len(x) * max(st.accepted, 1)


def test_snapshots_compare_values_not_objects():
    f = lambda a: (lambda: a)  # noqa: E731
    assert Reads({"f": snapshot(f(1.0))}).same(Reads({"f": snapshot(f(1.0))}))
    assert not Reads({"f": snapshot(f(1.0))}).same(Reads({"f": snapshot(f(2.0))}))
    assert Reads({"c": snapshot(th.CRP(1.0))}).same(Reads({"c": snapshot(th.CRP(3.0))}))
    assert not Reads({"d": snapshot(dist.Normal(0.0, 1.0))}).same(
        Reads({"d": snapshot(dist.Normal(0.0, 2.0))}))
    big = np.zeros(1 << 15)
    r = Reads({"x": snapshot(big), "s": snapshot(np.ones(3)), "o": snapshot(object())})
    back = pickle.loads(pickle.dumps(r))  # a checkpoint: no references kept
    assert not back.same(r) and back.values["s"].same(snapshot(np.ones(3)))


def test_a_body_whose_source_is_unknown_or_stale_is_run_in_full(tmp_path, monkeypatch):
    from thrifty.core.reads import body_names

    src = ("import thrifty as th\n\ndef m(x, crp, alpha):\n    a = 1\n"
           "    with th.plate('data', len(x)) as i:\n"
           "        z = th.sample('z', crp)\n    return z\n")
    path = tmp_path / "stale_model.py"
    path.write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stale_model

    code = stale_model.m.__code__
    assert body_names(code, 5) == {"th", "crp"}
    body_names.cache_clear()  # the file edited since: line 5 is now another statement's
    path.write_text(src.replace("    a = 1\n", "").replace("crp)\n", "crp)\n        q = alpha\n"))
    assert body_names(code, 5) is None
    body_names.cache_clear()
    exec(compile(src, "<no source>", "exec"), ns := {})
    assert body_names(ns["m"].__code__, 5) is None
