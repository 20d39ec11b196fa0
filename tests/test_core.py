"""The trace and incremental execution: replay, rescoring, plates, markov chains, mem tables.

The central invariant: after any sequence of committed proposals, the log-density the trace
caches equals a from-scratch re-execution, and each run's accounting (lp_new, lp_old, fresh,
stale) equals the change of the cached log-density.
"""

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.core.locate import choice_at, locate, make_targets, plan_for
from thrifty.core.run import LAZY, RESAMPLE, RESCORE, STRICT, Plan, Run
from thrifty.core.simulate import initialize

TRANS = np.array([[0.9, 0.1], [0.2, 0.8]])


@th.model
def kitchen_sink(y):
    """Top-level choices, a plate with two latents, a chain with a plate per step, a mem."""
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    k = th.sample("k", dist.Categorical(np.array([0.3, 0.3, 0.4])))
    w = th.mem("w", lambda key: dist.Normal(0.0, 2.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.3))
        u = th.sample("u", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu + z + 0.1 * u + w(z), 1.0), y[i])

    def step(t, prev):
        x = th.sample("x", dist.Categorical(np.array([0.5, 0.5]) if prev is None else TRANS[prev]))
        with th.plate("obs", 3) as j:
            th.observe("o", dist.Normal(float(x) + 0.1 * k, 1.0), np.full(3, 0.3)[j])
        return x

    s = th.markov("s", step, 6)
    th.deterministic("total", mu + k)
    return mu, s


def rescored(trace, rng):
    run = Run(trace, rng, mode=RESCORE).execute()
    assert run.n_fresh == 0 and run.n_stale == 0
    return run.lp_new


def random_local_moves(trace, rng, steps):
    for _ in range(steps):
        addr = choice_at(trace, int(rng.integers(trace.n_latent)))
        loc = locate(trace, addr)
        if loc.kind in ("site", "mem") and not loc.discrete:
            targets, vec = make_targets([loc], [loc.value + rng.normal()])
        else:
            targets, vec = make_targets([loc], [RESAMPLE])
        run = Run(trace, rng, targets=targets, vec=vec, plan=plan_for(trace, [loc])).execute()
        if not run.lp_new > -np.inf:
            continue  # an impossible proposal: a kernel would reject it
        before = trace.log_joint()
        run.commit()
        change = run.lp_new + run.lp_fresh - run.lp_old - run.lp_stale
        assert trace.log_joint() - before == pytest.approx(change, abs=1e-9), addr


def test_incremental_accounting_matches_rescoring(rng):
    y = rng.normal(size=7)
    trace = initialize(kitchen_sink(y), rng)
    random_local_moves(trace, rng, 1500)
    assert trace.log_joint() == pytest.approx(rescored(trace, rng), abs=1e-8)
    assert trace.n_latent == trace.root.total_latent() + sum(len(t) for t in trace.mems.values())


def test_values_and_names(rng):
    trace = initialize(kitchen_sink(np.zeros(4)), rng)
    v = trace.values()
    assert set(v) == {"mu", "k", "data.z", "data.u", "s.x", "total", "w.0", "w.1"} or set(v) <= {
        "mu",
        "k",
        "data.z",
        "data.u",
        "s.x",
        "total",
        "w.0",
        "w.1",
    }
    assert v["data.z"].shape == (4,) and v["s.x"].shape == (6,)
    assert trace["data", 2, "u"] == v["data.u"][2]
    assert trace["s", 3, "x"] == v["s.x"][3]
    assert v["total"] == pytest.approx(v["mu"] + v["k"])


def test_plate_element_update_is_O1(rng):
    """A change at one element executes one element, whatever the plate size."""
    work = []
    for n in (100, 10_000):
        trace = initialize(kitchen_sink(np.zeros(n)), rng)
        loc = locate(trace, ("data", n // 2, "u"))
        targets, vec = make_targets([loc], [0.5])
        run = Run(trace, rng, targets=targets, vec=vec, plan=plan_for(trace, [loc])).execute()
        run.commit()
        work.append((run.work_elements, run.work_steps))
    assert work[0] == work[1] == (1, 0)


def test_markov_local_update_touches_t_and_t_plus_1(rng):
    trace = initialize(kitchen_sink(np.zeros(3)), rng)
    old = trace["s", 2, "x"]
    loc = locate(trace, ("s", 2, "x"))
    targets, _ = make_targets([loc], [1 - old])
    run = Run(trace, rng, targets=targets, plan=plan_for(trace, [loc])).execute()
    assert run.work_steps == 2  # steps 2 and 3; step 3's state is its own replayed choice
    # the plates inside steps 2 and 3 (3 elements each): program order — step 3 follows the
    # changed state of step 2 — whatever the body reads; not 'data'
    assert run.work_elements == 6
    run.commit()
    assert trace["s", 2, "x"] == 1 - old


def test_global_change_reexecutes_what_follows(rng):
    trace = initialize(kitchen_sink(np.zeros(5)), rng)
    loc = locate(trace, ("mu",))
    targets, _ = make_targets([loc], [0.25])
    run = Run(trace, rng, targets=targets, plan=plan_for(trace, [loc])).execute()
    assert run.work_steps == 6  # program order is the dependency graph: the chain follows 'mu'
    # program order: every plate after mu re-runs — 'data' and the plates of the six steps
    assert run.work_elements == 5 + 6 * 3
    run = Run(trace, rng, targets={("k",): (trace["k"] + 1) % 3}).execute()
    assert run.work_steps == 6 and run.work_elements == 5 + 6 * 3  # k precedes 'data' too
    run.commit()
    assert trace.log_joint() == pytest.approx(rescored(trace, rng), abs=1e-8)


def test_chain_reexecuted_when_a_value_before_it_changes(rng):
    trace = initialize(kitchen_sink(np.zeros(2)), rng)
    loc = locate(trace, ("k",))
    targets, _ = make_targets([loc], [(loc.value + 1) % 3])
    run = Run(trace, rng, targets=targets, plan=plan_for(trace, [loc])).execute()
    assert run.work_steps == 6


def test_lazy_plan_leaves_stale_elements_and_refresh_fixes_them(rng):
    y = rng.normal(size=50)
    trace = initialize(kitchen_sink(y), rng)
    plan = Plan()
    plan.add_elements(("data",), [3, 7])
    run = Run(trace, rng, targets={("mu",): 1.5}, plan=plan, mode=LAZY).execute()
    assert run.work_elements == 2  # only the minibatch runs under the new mu
    run.commit()
    node = trace.root.plates[("data",)]
    stale = node.stale_elements()
    assert len(stale) == 48 and 3 not in stale and 7 not in stale
    assert trace.maybe_stale and trace.has_stale()
    with pytest.raises(RuntimeError, match="stale"):
        trace.log_joint()
    run = Run(trace, rng, mode=RESCORE).execute()
    run.commit()
    assert not trace.has_stale()
    assert trace.log_joint() == pytest.approx(rescored(trace, rng), abs=1e-9)


def test_mem_readers_and_sections(rng):
    @th.model
    def clusters(y, assign):
        w = th.mem("w", lambda k: dist.Normal(0.0, 3.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(w(assign[i]), 1.0), y[i])

    assign = np.array([0, 1, 0, 2, 1, 0])
    trace = initialize(clusters(rng.normal(size=6), assign), rng)
    table = trace.mems[("w",)]
    assert sorted(table.values) == [0, 1, 2]
    assert table.readers(0) == {("data",): pytest.approx(np.array([0, 2, 5]))}
    assert table.refs == {0: 3, 1: 2, 2: 1}
    loc = locate(trace, ("w", 1))
    plan = plan_for(trace, [loc])
    assert plan.plates[("data",)].tolist() == [1, 4]
    targets, _ = make_targets([loc], [0.7])
    run = Run(trace, rng, targets=targets, plan=plan).execute()
    assert run.work_elements == 2
    run.commit()
    assert trace["w", 1] == 0.7


def test_unread_mem_key_leaves_the_trace(rng):
    @th.model
    def m():
        f = th.mem("f", lambda k: dist.Normal(0.0, 1.0))
        b = th.sample("b", dist.Bernoulli(probs=0.5))
        return f(b)

    trace = initialize(m(), rng)
    b = trace["b"]
    run = Run(trace, rng, targets={("b",): 1 - b}).execute()
    assert run.n_fresh == 1 and run.n_stale == 1  # f(1-b) drawn, f(b) dropped
    run.commit()
    assert list(trace.mems[("f",)].values) == [1 - b]


def test_structure_change_fresh_and_stale(rng):
    @th.model
    def branch():
        b = th.sample("b", dist.Bernoulli(probs=0.5))
        if b:
            th.sample("x", dist.Normal(0.0, 1.0))
            th.sample("x2", dist.Normal(0.0, 1.0))
        else:
            th.sample("y", dist.Gamma(2.0, 1.0))

    trace = initialize(branch(), rng, init={"b": 1})
    assert trace.n_latent == 3
    run = Run(trace, rng, targets={("b",): 0}).execute()
    assert (run.n_fresh, run.n_stale) == (1, 2)
    run.commit()
    assert trace.n_latent == 2 and "y" in trace.values()


def test_out_of_support_replay_is_redrawn_only_where_the_reverse_move_redraws_it(rng):
    @th.model
    def nested():
        k = th.sample("k", dist.DiscreteUniform(1, 3))
        return th.sample("j", dist.DiscreteUniform(0, k))

    @th.model
    def apart():
        k = th.sample("k", dist.DiscreteUniform(1, 3))
        return th.sample("j", dist.DiscreteUniform(2 * k, 2 * k + 1))

    # j = 3 is outside {0, 1}: a new j in {0, 1} is inside {0..3}, where the reverse move
    # (k back to 3) keeps it — no way back to j = 3: the proposal is rejected
    trace = initialize(nested(), rng, init={"k": 3, "j": 3})
    run = Run(trace, rng, targets={("k",): 1}).execute()
    assert run.aborted is not None and run.log_weight == -np.inf
    # supports that move apart: the new j in {2, 3} is outside {6, 7}, the reverse move
    # redraws it as this one did: fresh and stale (001 §2)
    trace = initialize(apart(), rng, init={"k": 3, "j": 6})
    run = Run(trace, rng, targets={("k",): 1}).execute()
    assert run.aborted is None and run.n_fresh == 1 and run.n_stale == 1
    strict = Run(initialize(nested(), rng, init={"k": 3, "j": 3}), rng, targets={("k",): 1},
                 mode=STRICT).execute()
    assert strict.lp_new == -np.inf  # strict runs score it


def test_vectorized_markov_inside_plate(rng):
    @th.model
    def sv(n, T):
        phi = th.sample("phi", dist.Beta(5.0, 1.0))
        with th.plate("series", n):

            def step(t, prev):
                loc = 0.0 if prev is None else phi * prev
                h = th.sample("h", dist.Normal(loc, 0.3))
                th.observe("x", dist.Normal(0.0, np.exp(h / 2)), 0.1)
                return h

            th.markov("h", step, T)

    trace = initialize(sv(4, 5), rng)
    v = trace.values()
    assert v["series.h.h"].shape == (4, 5)
    assert trace.n_latent == 1 + 20
    loc = locate(trace, ("series", 2, "h", 3, "h"))
    assert loc.kind == "element" and loc.elem == 2
    random_local_moves(trace, rng, 300)
    assert trace.log_joint() == pytest.approx(rescored(trace, rng), abs=1e-8)


def test_recursion_and_call(rng):
    @th.model
    def geom(p, k=0):
        if th.sample(("flip", k), dist.Bernoulli(probs=p)):
            return 1
        return 1 + geom.fn(p, k + 1)

    @th.model
    def outer():
        return th.call("g", geom, 0.5)

    trace = initialize(outer(), rng)
    n = trace.output
    assert trace.n_latent == n
    assert trace["g", "flip", n - 1] == 1


def test_simulate_is_reproducible():
    y = np.zeros(5)
    a = th.simulate(kitchen_sink(y), seed=3).values()
    b = th.simulate(kitchen_sink(y), seed=3).values()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_plate_index_is_a_view_for_all_elements(rng):
    seen = []

    @th.model
    def m(X):
        with th.plate("data", len(X)) as i:
            seen.append(i)
            th.sample("z", dist.Normal(X[i], 1.0))

    trace = initialize(m(np.arange(5.0)), rng)
    assert seen[-1] == slice(0, 5)
    loc = locate(trace, ("data", 3, "z"))
    _, vec = make_targets([loc], [RESAMPLE])
    Run(trace, rng, vec=vec, plan=plan_for(trace, [loc])).execute()
    assert seen[-1].tolist() == [3]
