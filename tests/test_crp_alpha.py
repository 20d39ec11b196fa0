"""A change of a CRP's concentration α: O(1) when the CRP owns α, program order otherwise.

``th.CRP(alpha=dist.Gamma(...), name="alpha")`` draws α itself and hands it to no code of the
model, so an MH step on α re-scores the seating's Ewens probability and executes no element
(thrifty.processes.base).  With ``alpha = th.sample(...)``; ``th.CRP(alpha)`` the model holds α
and may use it anywhere — in the body, a derived value, a closure, a memoized function, an
attribute of an object — so the plate that follows re-runs in full (program order), and the
answer is exact whichever way α reaches the elements.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from test_exchangeable import NG, dpm, log_ewens
from thrifty import dist
from thrifty.core.locate import locate, make_targets, plan_for
from thrifty.core.run import RESCORE, Run
from thrifty.core.simulate import initialize
from thrifty.errors import ModelError
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


@th.model
def dpm_owned(x):
    crp = th.CRP(alpha=dist.Gamma(1.0, 1.0), name="alpha")
    feats = th.mem("feats", lambda k: th.collapsed.NormalGamma(*NG))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
    return z


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
    """Scaling of work: th.infer with MH on an owned α (alone, and in the DP mixture's cycle);
    with the model holding α, every step runs the N elements."""
    for n in (200, 20_000):
        x, z = clusters(n)
        kw = dict(num_samples=50, burn_in=0, seed=0, progress=False, init={"data.z": z})
        r = th.infer(dpm_owned(x), th.mh("alpha", th.drift(0.5)), **kw)
        s = r.stats[ALPHA]
        assert s["runs_per_step"] > 0.5 and s["elements_per_step"] == 0
        assert 0 < s["acceptance_rate"] < 1
        cycle = th.cycle([th.mh("alpha", th.drift(0.5)),
                          th.cycle([th.gibbs(th.one("data.z"))], repeats=3)])
        s = th.infer(dpm_owned(x), cycle, **kw).stats[ALPHA]
        assert s["runs_per_step"] > 0.5 and s["elements_per_step"] == 0
        s = th.infer(dpm(x, None), th.mh("alpha", th.drift(0.5)), **kw).stats[ALPHA]
        assert s["elements_per_step"] > 0.5 * n  # (a proposal α ≤ 0 stops before the plate)


def test_the_acceptance_ratio_is_the_ewens_difference_plus_the_prior():
    x, z = clusters(300)
    trace = initialize(dpm_owned(x), np.random.default_rng(1), init={"data.z": z})
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
def via_process(x):  # α read back from the process the model built with it
    _, crp, feats = _head()
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
        th.observe("y", dist.Normal(crp.alpha, 1.0), x[i])
    return z


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


@pytest.mark.parametrize("how", ["direct", "derived", "closure", "mem", "self", "process"])
def test_alpha_held_by_the_model_reruns_the_plate_and_is_exact(how):
    x, z = clusters(50, seed=4)
    prog = {"direct": direct, "derived": derived, "closure": closure, "mem": memo,
            "self": on_self, "process": via_process}[how](x)
    rng = np.random.default_rng(5)
    trace = initialize(prog, rng, init={"data.z": z})
    a = trace["alpha"]
    run = alpha_run(trace, a + 0.5)
    assert run.work_elements == len(x)
    zc = np.unique(trace.values()["data.z"], return_inverse=True)[1]
    want = (log_ewens(zc, a + 0.5) - log_ewens(zc, a)
            + stats.gamma.logpdf(a + 0.5, 2.0) - stats.gamma.logpdf(a, 2.0))
    if how in ("direct", "closure", "self", "process"):
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


@th.model
def owned(x):
    crp = th.CRP(alpha=dist.Gamma(2.0, 1.0), name="alpha")
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("y", dist.Normal(crp.alpha, 1.0), x[i])
    return z


KEPT = []


@th.model
def reused(x):
    crp = th.CRP(alpha=dist.Gamma(2.0, 1.0), name="alpha") if not KEPT else KEPT[0]
    KEPT.append(crp)
    with th.plate("data", len(x)):
        return th.sample("z", crp)


def test_an_owned_alpha_is_not_handed_to_the_model():
    """The process keeps α (no attribute holds its value: only its address), so no code of the
    model can read it; asking is an error that says how to hold α instead (an AttributeError
    too, so ``hasattr`` and ``getattr`` with a default behave as for any missing attribute)."""
    x, _ = clusters(20)
    with pytest.raises(ModelError,
                       match=r"alpha is drawn by the process at \('alpha',\).*th.sample"):
        th.simulate(owned(x), seed=0)
    crp = th.simulate(dpm_owned_handle(x), seed=0).output
    assert not any(isinstance(v, float) for v in vars(crp).values())
    # not an attribute it has: hasattr is False and getattr's default is given, as in Python
    assert not hasattr(crp, "alpha") and getattr(crp, "alpha", None) is None
    KEPT.clear()
    trace = th.simulate(reused(x), seed=0)  # a handle kept from another execution: refused
    with pytest.raises(ModelError, match="created in another execution"):
        th.infer(reused(x), th.mh("alpha", th.drift(0.5)), num_samples=2, seed=0,
                 progress=False, init=trace.values())
    KEPT.clear()


@th.model
def dpm_owned_handle(x):
    crp = th.CRP(alpha=dist.Gamma(2.0, 1.0), name="alpha")
    with th.plate("data", len(x)):
        th.sample("z", crp)
    return crp


def test_gradient_kernels_name_the_reason_they_do_not_take_an_owned_alpha():
    """The process is created in the body (where it may draw α); what keeps α from NUTS is that
    its density given the seating is the process's (NumPy state): the note of the default
    kernel and the error of a th.nuts given by hand say so, not "inside a plate"."""
    from thrifty.inference.default import default_kernel

    x, _ = clusters(8)
    why = r"CRP: the hyperparameter \('alpha',\) is drawn by the process, a coupled process"
    with pytest.raises(ModelError, match=why) as e:
        th.infer(dpm_owned(x), th.cycle([th.nuts("alpha"), th.gibbs("data.z")]), num_samples=2,
                 seed=0, progress=False)
    assert "inside a plate" not in str(e.value)
    said = default_kernel(dpm_owned(x))[1]
    assert "adaptive MH (th.drift()) to alpha (NUTS cannot differentiate" in said
    assert "drawn by the process, a coupled process" in said and "inside a plate" not in said
