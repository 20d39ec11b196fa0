"""Stale elements are rescored when a run reads them, never by a sweep (paper 000 §3.5).

Subsampling kernels leave plate elements and markov steps stale after an accepted step.  An exact
kernel's run rescores exactly the stale elements or steps it executes (a run planned on them)
before comparing: a one-element step stays O(1) in N, a run that reaches no stale plate rescores
nothing, and every decision is the one made on a fully rescored trace.
"""

import copy

import numpy as np
import pytest

import thrifty as th
from shared_models import ar_chain
from thrifty import dist
from thrifty.core.locate import find_plate, trace_chain
from thrifty.core.run import RESCORE, Run
from thrifty.core.simulate import initialize
from thrifty.datasets import synthetic_logistic
from thrifty.models import joint_dpm
from thrifty.models.logistic import logistic_regression


@th.model
def effects(X, y):
    """Logistic regression with a random effect and a discrete shift per element, a scale that
    every element reads and a choice no element reads (program order is the dependency graph:
    a choice before a plate makes its run execute every element)."""
    s = th.sample("s", dist.Gamma(4.0, 4.0))
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        u = th.sample("u", dist.Normal(0.0, s))
        b = th.sample("b", dist.Bernoulli(probs=0.5))
        th.observe("y", dist.Bernoulli(logits=X[i] @ w + u + b - 0.5), y[i])
    c = th.sample("c", dist.Normal(0.0, 1.0))  # after the plate: its runs execute no element
    th.observe("yc", dist.Normal(c, 1.0), 0.3)


def assert_same_values(trace, ref) -> None:
    a, b = trace.values(include_deterministic=False), ref.values(include_deterministic=False)
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), key


def rescored_lp(trace) -> float:
    return Run(trace, np.random.default_rng(0), mode=RESCORE).execute().lp_new


def stale_trace(n=2000, seed=0):
    """An ``effects`` trace after accepted subsampled steps on ``w`` (most elements stale)."""
    X, y, _ = synthetic_logistic(n, 2, seed=seed)
    rng = np.random.default_rng(seed)
    trace = initialize(effects(X, y), rng)
    sub = th.subsampled_mh("w", 50, 0.2, th.drift(0.05), max_fraction=1.0)
    while sub.stats.accepted < 2:
        sub.step(trace, rng)
    assert find_plate(trace, ("data",)).n_stale > n // 2
    return trace, rng


# -- work ------------------------------------------------------------------------------------------
def dpm_z_work(n: int) -> float:
    d = th.datasets.clustered_nonlinear(n, 10, seed=0)
    prog = joint_dpm(d.X_train, d.y_train, np.zeros(2), 0.05, 4.0, np.eye(2), 10.0)
    gz = th.gibbs(th.one("data.z"))
    sub = th.subsampled_mh(th.one("w"), 100, 0.3, th.drift(0.5), max_fraction=1.0)
    k = th.cycle([th.cycle([gz], repeats=25), th.cycle([sub], repeats=10)])
    r = th.infer(prog, k, num_samples=6, burn_in=0, seed=0, progress=False)
    s = r.stats[gz.label()]
    assert r.stats[sub.label()]["acceptance_rate"] > 0.2  # it leaves readers stale
    return s["elements_per_step"]


def test_gibbs_on_one_label_stays_o1_after_subsampled_steps_jointdpm():
    small, large = dpm_z_work(2000), dpm_z_work(20_000)
    # one lane of the element per candidate table, one more to commit (plus the stale element,
    # rescored): the number of tables grows slowly with N; a sweep would give ~N/25 more per
    # step (800 at N = 20000)
    assert large < 60 and large / small < 2.0, (small, large)


def test_label_lanes_after_subsampled_steps_agree_with_full_executions():
    """Label updates scored in lanes, between subsampled steps that leave elements stale (the
    lanes run stops before a stale element, which is rescored first): the check mode compares
    the incremental trace with a full execution after every step (with seed 0 new tables are
    opened: their weights, drawn by a lanes run, must be counted as new choices when the
    commit creates them — the check fails at step 15 if they are not)."""
    d = th.datasets.clustered_nonlinear(300, 10, seed=0)
    prog = joint_dpm(d.X_train, d.y_train, np.zeros(2), 0.05, 4.0, np.eye(2), 10.0)
    sub = th.subsampled_mh(th.one("w"), 50, 0.3, th.drift(0.5))
    k = th.cycle([th.mh("alpha", th.drift(0.5)), th.cycle([th.gibbs(th.one("data.z"))],
                                                         repeats=3), sub])
    r = th.infer(prog, k, num_samples=80, burn_in=0, seed=0, check=True, progress=False)
    assert r.stats[sub.label()]["acceptance_rate"] > 0.2  # it leaves readers stale


def local_step_work(n: int) -> float:
    X, y, _ = synthetic_logistic(n, 2, seed=1)
    local = th.mh(th.one("data.u"), th.drift(0.5))
    sub = th.subsampled_mh("w", 100, 0.2, th.drift(0.05), max_fraction=1.0)
    k = th.cycle([sub, local])
    r = th.infer(effects(X, y), k, num_samples=60, burn_in=0, seed=1, progress=False)
    assert r.stats[sub.label()]["acceptance_rate"] > 0.2
    return r.stats[local.label()]["elements_per_step"]


def test_mh_on_one_element_stays_o1_after_subsampled_steps():
    small, large = local_step_work(2000), local_step_work(20_000)
    assert small <= 3 and large <= 3, (small, large)  # the element, rescored first if stale


def test_runs_that_reach_no_stale_plate_rescore_nothing():
    trace, rng = stale_trace()
    k = th.mh("c", th.drift(0.5))
    for _ in range(5):
        k.step(trace, rng)
    assert k.stats.elements == 0 and trace.maybe_stale


def test_a_run_of_the_whole_plate_rescores_only_the_stale_elements():
    trace, rng = stale_trace()
    node = find_plate(trace, ("data",))
    stale = len(node.stale_elements(None, trace.mems))
    k = th.mh("s", th.prior())  # every element reads s: the run executes the whole plate
    k.step(trace, rng)
    assert k.stats.elements == stale + 2000  # the stale ones, then the run (not 2 × 2000)
    assert not find_plate(trace, ("data",)).n_stale


# -- exactness -------------------------------------------------------------------------------------
EXACT_KERNELS = {
    "mh one element": lambda: th.mh(th.one("data.u"), th.drift(0.5)),
    "mh every element": lambda: th.mh("data.u", th.drift(0.5)),
    "mh global read by every element": lambda: th.mh("s", th.drift(0.3)),
    "mh global read by none": lambda: th.mh("c", th.drift(0.5)),
    "gibbs one element": lambda: th.gibbs(th.one("data.b")),
    "lmh": lambda: th.lmh(),
    "adaptive lmh": lambda: th.adaptive_lmh(),
}


@pytest.mark.parametrize("name", list(EXACT_KERNELS))
def test_decisions_are_those_on_a_fully_rescored_trace(name):
    trace, rng = stale_trace(n=600)
    ref = copy.deepcopy(trace)
    Run(ref, np.random.default_rng(0), mode=RESCORE).execute().commit()
    assert not ref.has_stale()
    k, k_ref = EXACT_KERNELS[name](), EXACT_KERNELS[name]()
    for seed in range(15):
        k.step(trace, np.random.default_rng(seed))
        k_ref.step(ref, np.random.default_rng(seed))
        assert_same_values(trace, ref)
    assert k.stats.accepted == k_ref.stats.accepted
    if name == "mh global read by none":
        assert k.stats.runs == k_ref.stats.runs and k.stats.elements == 0
    else:  # some of its runs met stale elements: rescored first
        assert k.stats.runs > k_ref.stats.runs
    k.refresh(trace, rng)  # planned on the stale elements only
    assert not trace.has_stale()
    assert trace.log_joint() == pytest.approx(ref.log_joint(), rel=1e-10, abs=1e-8)
    assert trace.log_joint() == pytest.approx(rescored_lp(trace), rel=1e-10, abs=1e-8)


def test_mixed_run_log_joint_equals_a_full_rescore():
    X, y, _ = synthetic_logistic(1500, 2, seed=3)
    rng = np.random.default_rng(3)
    trace = initialize(effects(X, y), rng)
    ks = [th.subsampled_mh("w", 50, 0.2, th.drift(0.05), max_fraction=1.0),
          th.mh(th.one("data.u"), th.drift(0.5)),
          th.gibbs(th.one("data.b")), th.mh("s", th.drift(0.2)), th.mh("c", th.drift(0.5))]
    for _ in range(40):
        for k in ks:
            k.step(trace, rng)
    assert ks[0].stats.accepted > 0
    node = find_plate(trace, ("data",))
    full = Run(trace, np.random.default_rng(0), mode=RESCORE).execute()
    fresh = np.setdiff1d(np.arange(1500), node.stale_elements(None, trace.mems))
    # elements not stale hold their exact log-density
    np.testing.assert_allclose(node.elem_lp.take(fresh),
                               full.plate_frames[("data",)].elem_lp[fresh], rtol=1e-12)
    ks[1].refresh(trace, rng)
    assert trace.log_joint() == pytest.approx(full.lp_new, rel=1e-10)


def test_stale_markov_steps_are_rescored_when_read():
    rng = np.random.default_rng(0)
    trace = initialize(ar_chain(300), rng)
    sub = th.subsampled_mh("phi", batch_size=30, epsilon=0.2, proposal=th.drift(0.05),
                           max_fraction=1.0)
    while sub.stats.accepted < 2:
        sub.step(trace, rng)
    assert trace_chain(trace, ("h",)).n_stale > 100
    ref = copy.deepcopy(trace)
    Run(ref, np.random.default_rng(0), mode=RESCORE).execute().commit()
    k, k_ref = th.lmh(), th.lmh()
    for seed in range(40):
        k.step(trace, np.random.default_rng(seed))
        k_ref.step(ref, np.random.default_rng(seed))
        assert_same_values(trace, ref)
    assert k.stats.runs > k_ref.stats.runs  # some stale steps were read, and rescored first
    # one choice's steps (and those a changed state reaches): not the 300 of a sweep per step
    assert k.stats.chain_steps < 40 * 30
    k.refresh(trace, rng)
    assert trace.log_joint() == pytest.approx(ref.log_joint(), rel=1e-10)
    assert trace.log_joint() == pytest.approx(rescored_lp(trace), rel=1e-10)


def test_logistic_regression_local_kernel_after_taylor_proxy():
    X, y, _ = synthetic_logistic(3000, 2, seed=4)
    rng = np.random.default_rng(4)
    trace = initialize(logistic_regression(X, y), rng)
    k = th.subsampled_mh("w", 100, 0.05, th.drift(0.02), proxy="taylor")
    k.start(trace, rng, {})
    while k.stats.accepted == 0:
        k.step(trace, rng)
    assert trace.maybe_stale
    exact = th.mh("w", th.drift(0.02))  # the whole plate: rescore the stale elements, compare
    ref = copy.deepcopy(trace)
    Run(ref, np.random.default_rng(0), mode=RESCORE).execute().commit()
    k_ref = th.mh("w", th.drift(0.02))
    for seed in range(5):
        exact.step(trace, np.random.default_rng(seed))
        k_ref.step(ref, np.random.default_rng(seed))
        assert_same_values(trace, ref)
    assert not trace.has_stale()
    assert trace.log_joint() == pytest.approx(rescored_lp(trace), rel=1e-10)


@pytest.mark.parametrize("sel", ["s", "data.u"])
def test_gradient_kernel_writes_after_subsampled_steps(sel):
    """NUTS computes its transitions from the compiled density, then writes the draw with one
    run; on a trace with stale elements that run must rescore them first (000 §3.5), else its
    stored log-density is unknown and the write is refused — the chain did not move after
    every accepted subsampled step (65% of NUTS steps in a cycle with subsampled_mh)."""
    pytest.importorskip("jax")
    trace, _ = stale_trace(n=600)
    ref = copy.deepcopy(trace)
    Run(ref, np.random.default_rng(0), mode=RESCORE).execute().commit()
    start = np.copy(trace.values()[sel])
    k, k_ref = th.nuts(sel), th.nuts(sel)
    for seed in range(3):
        k.step(trace, np.random.default_rng(seed))
        k_ref.step(ref, np.random.default_rng(seed))
        assert_same_values(trace, ref)
    assert not np.array_equal(trace.values()[sel], start)
    assert k.stats.extra.get("refused_at_boundary", 0) == 0


@th.model
def steps_with_plates(D):
    """A chain whose steps hold a plate reading a choice before the chain."""
    w = th.sample("w", dist.Normal(0.0, 1.0))

    def step(t, prev):
        x = th.sample("x", dist.Normal(0.0 if prev is None else 0.5 * prev, 1.0))
        with th.plate("obs", D.shape[1]) as j:
            th.observe("o", dist.Normal(w * x, 1.0), D[t][j])
        return x

    th.markov("s", step, D.shape[0])


def test_a_stale_step_rescored_runs_its_plates_in_full():
    """A lazy run changes w and executes step 1: the other steps are stale, their plates'
    densities of the old w.  Rescoring them (a run planned on the stale steps) must run each
    step's plate in full — as if w had changed before it — not only its planned elements (none):
    the log-joint then equals a full execution's (it was 37.6 higher: the plates' old terms)."""
    from thrifty.core.locate import locate, make_targets, plan_steps
    from thrifty.core.vocab import LAZY, Plan
    from thrifty.inference.kernel import Kernel

    D = np.random.default_rng(0).normal(size=(300, 5))
    rng = np.random.default_rng(0)
    tr = initialize(steps_with_plates(D), rng)
    targets, vec = make_targets([locate(tr, ("w",))], [float(tr["w"]) + 0.1])
    plan = plan_steps(tr, Plan(), ("s",), [1])
    Run(tr, rng, targets=targets, vec=vec, plan=plan, mode=LAZY).execute().commit()
    Kernel().refresh(tr, rng)
    full = copy.deepcopy(tr)
    Run(full, rng, mode=RESCORE).execute().commit()
    assert not tr.has_stale()
    assert tr.log_joint() == pytest.approx(full.log_joint(), abs=1e-9)


@th.model
def glm_steps(X, Y):
    """A chain whose steps hold GLM plates reading the weights before the chain."""
    w = th.sample("w", dist.MvNormal(np.zeros(2), np.eye(2)))

    def step(t, prev):
        x = th.sample("x", dist.Normal(0.0 if prev is None else 0.5 * prev, 1.0))
        with th.plate("obs", X.shape[1]) as j:
            th.observe("o", th.glm.logistic(X[t][j], w), Y[t][j])
        return x

    th.markov("s", step, X.shape[0])


@pytest.mark.parametrize("with_mh", [False, True])
def test_smh_on_weights_read_in_chain_steps_passes_check_mode(with_mh):
    """SMH's lazy runs leave steps stale with their plates; MH on one step then reads a stale
    one.  Check mode after every step finds the trace equal to a full execution wherever it is
    not stale: a stale step's nested plates are not compared (they were, and check mode
    reported them), and a step MH reads is rescored with its plates (it was not: the MH ratio
    then used the plate's terms of an older w)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5, 2))
    Y = (rng.random((40, 5)) < 0.5).astype(float)
    k = th.smh("w", order=1)
    if with_mh:
        k = th.cycle([k, th.mh(th.one("s"), th.drift(0.5))])
    r = th.infer(glm_steps(X, Y), k, num_samples=20, seed=1, progress=False, check=True)
    assert r["s.x"].shape == (1, 20, 40)
