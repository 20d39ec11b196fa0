"""The engine's design properties: forks copy on write, the recorder reads what changed, chains
are columns, selections do not expand chains.

Costs are asserted as counts of work (bytes copied, events recorded, groups expanded), never as
wall-clock time.  The recorder is checked draw by draw against ``trace.values()`` (the trace's
full state) on models with plates, markov chains (with nested plates), mem tables and choices
that exist only in some traces.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.core.locate import locate, make_targets, plan_for
from thrifty.core.run import RESCORE, Run
from thrifty.core.simulate import initialize
from thrifty.inference.kernel import Kernel
from thrifty.models import hmm

TRANS = np.array([[0.9, 0.1], [0.2, 0.8]])


@th.model
def big_plate(n):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", n) as i:
        u = th.sample("u", dist.Normal(mu, 1.0))
        th.observe("y", dist.Normal(u, 1.0), np.zeros(n)[i])


@th.model
def kitchen(y):
    """Top-level choices, a plate, a chain with a plate per step, a mem, a branch."""
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    k = th.sample("k", dist.Categorical(np.array([0.3, 0.3, 0.4])))
    w = th.mem("w", lambda key: dist.Normal(0.0, 2.0))
    w0, w1 = w(0), w(1)
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.3))
        th.observe("y", dist.Normal(mu + z + np.where(z == 1, w1, w0), 1.0), y[i])

    def step(t, prev):
        x = th.sample("x", dist.Categorical(np.array([0.5, 0.5]) if prev is None else TRANS[prev]))
        with th.plate("obs", 3) as j:
            th.observe("o", dist.Normal(float(x) + 0.1 * k, 1.0), np.full(3, 0.3)[j])
        return x

    th.markov("s", step, 5)
    if k == 2:
        th.sample("extra", dist.Gamma(2.0, 1.0))
    th.deterministic("total", mu + k)
    return mu


@th.model
def flat_chain(T):
    """A chain whose steps hold only sites; an observation at some steps only."""
    def step(t, prev):
        x = th.sample("x", dist.Normal(0.0 if prev is None else 0.8 * prev, 1.0))
        if t % 3 == 0:
            th.observe("o", dist.Normal(x, 1.0), 0.5)
        th.deterministic("x2", x * x)
        return x

    return th.markov("s", step, T)


def rescored(trace):
    run = Run(trace, np.random.default_rng(0), mode=RESCORE).execute()
    return run.lp_new


# -- forks ----------------------------------------------------------------------------------------
def one_element_update(trace, rng, e, value):
    loc = locate(trace, ("data", e, "u"))
    targets, vec = make_targets([loc], [value])
    return Run(trace, rng, targets=targets, vec=vec, plan=plan_for(trace, [loc])).execute()


def test_fork_copies_on_write_what_changes():
    rng = np.random.default_rng(0)
    trace = initialize(big_plate(100_000), rng)
    node = trace.root.plates[("data",)]
    data = node.sites[("u",)].values.data
    before = data.copy()
    fork = trace.fork()
    one_element_update(trace, rng, 17, 3.5).commit(fork)
    assert fork["data", 17, "u"] == 3.5 and trace["data", 17, "u"] == before[17]
    clone = fork.root.plates[("data",)]
    col = clone.sites[("u",)].values
    assert clone is not node and col.data is data  # the 10⁵ values are shared, not copied
    assert col.patch is not None and len(col.patch) == 1  # the one change is patched
    np.testing.assert_array_equal(data, before)  # the original's column is untouched
    # a second change to the fork costs one more patch entry, still no copy
    one_element_update(fork, rng, 5, -1.0).commit()
    assert fork.root.plates[("data",)] is clone and len(col.patch) == 2 and col.data is data
    assert fork.log_joint() == pytest.approx(rescored(fork), abs=1e-9)
    assert trace.log_joint() == pytest.approx(rescored(trace), abs=1e-9)


def test_forked_traces_evolve_independently():
    rng = np.random.default_rng(1)
    y = rng.normal(size=30)
    trace = initialize(kitchen(y), rng)
    fork = trace.fork()
    k1, k2 = th.lmh(), th.lmh()
    for _ in range(300):
        trace = k1.step(trace, rng)
        fork = k2.step(fork, rng)
    for t in (trace, fork):
        assert t.log_joint() == pytest.approx(rescored(t), abs=1e-8)
    a, b = trace.values(), fork.values()
    assert any(not np.array_equal(np.asarray(a[k]), np.asarray(b.get(k, np.nan))) for k in a)


def test_revert_and_become_restore_ownership():
    rng = np.random.default_rng(2)
    trace = initialize(big_plate(50), rng)
    node = trace.root.plates[("data",)]
    fork = trace.fork()
    assert not trace.owns(node) and not fork.owns(node)
    trace.revert(fork)
    assert trace.owns(node)  # a rejected provisional commit: in-place writes again
    fork = trace.fork()
    one_element_update(trace, rng, 3, 1.25).commit(fork)
    trace.become(fork)
    assert trace["data", 3, "u"] == 1.25 and trace.owns(trace.root.plates[("data",)])
    assert trace.owns(node)  # the pre-fork node is nobody else's now


def test_fork_cost_does_not_grow_with_the_plate():
    """A fork copies the trace's small state only: the same number of attributes and mem
    tables whatever N is (the benchmark times it: benchmarks/engine_scaling.py)."""
    sizes = []
    for n in (1_000, 1_000_000):
        trace = initialize(big_plate(n), np.random.default_rng(0))
        fork = trace.fork()
        shared = fork.root is trace.root and fork.root.plates[("data",)] is trace.root.plates[
            ("data",)
        ]
        sizes.append((len(fork.__dict__), len(fork.mems), shared))
    assert sizes[0] == sizes[1] and sizes[0][2]


# -- the recorder ---------------------------------------------------------------------------------
class Shared(list):
    """A list that ``th.infer``'s deep copy of the kernel leaves shared."""

    def __deepcopy__(self, memo):
        return self


class Capturing(Kernel):
    """Steps ``inner`` and keeps a copy of ``trace.values()`` after every step."""

    name = "capturing"

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.seen: list = Shared()

    def _step(self, trace, rng):
        trace = self.inner.step(trace, rng)
        self.seen.append(copy.deepcopy(trace.values()))
        return trace

    def kernels(self):
        return [(self.label(), self), *self.inner.kernels()]


def stacked(seen: list) -> dict:
    """Per-draw value dicts stacked the way results are: NaN where a value is absent."""
    names = dict.fromkeys(k for d in seen for k in d)
    out = {}
    for name in names:
        vals = [d.get(name) for d in seen]
        present = [v for v in vals if v is not None]
        shape = np.shape(present[0])
        arr = np.full((len(vals),) + shape, np.nan)
        for i, v in enumerate(vals):
            if v is not None:
                arr[i] = v
        out[name] = arr
    return out


def run_captured(program, kernel, n, **kw):
    cap = Capturing(kernel)
    r = th.infer(program, cap, num_samples=n, seed=3, progress=False, workers=1, **kw)
    return r, stacked(cap.seen)


KERNELS = {
    "lmh": lambda: th.lmh(),
    "gibbs-one": lambda: th.cycle([th.gibbs(th.one("data.z")), th.mh("mu", th.drift(0.3))]),
    "mixed": lambda: th.cycle(
        [th.lmh(), th.gibbs(th.one("s")), th.mh(th.one("w"), th.drift(0.5))]
    ),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_recorded_draws_equal_the_trace_at_each_draw(name):
    y = np.random.default_rng(0).normal(size=8)
    r, want = run_captured(kitchen(y), KERNELS[name](), 300)
    assert set(r.keys()) == set(want)
    for k, v in want.items():
        np.testing.assert_array_equal(np.asarray(r[k][0], dtype=float), v, err_msg=k)


def test_chain_with_sites_at_some_steps_and_deterministics():
    r, want = run_captured(flat_chain(12), th.mh(th.one("s"), th.drift(0.7)), 200)
    assert r["s.x"].shape == (1, 200, 12) and r["s.x2"].shape == (1, 200, 12)
    for k, v in want.items():
        np.testing.assert_array_equal(r[k][0], v, err_msg=k)


def test_sparse_and_dense_recording_agree():
    y = np.random.default_rng(4).normal(size=300)
    kernel = th.cycle([th.gibbs(th.one("data.z")), th.mh("mu", th.drift(0.2))])
    kw = dict(num_samples=400, chains=2, seed=5, progress=False, workers=1)
    dense = th.infer(kitchen(y), kernel, **kw)
    sparse = th.infer(kitchen(y), kernel, dense_bytes=0, **kw)
    assert dense.sparse("data.z") is None
    sp = sparse.sparse("data.z")
    assert sp is not None and sp.shape == dense["data.z"].shape
    np.testing.assert_array_equal(sparse["data.z"], dense["data.z"])
    a = dense["data.z"].astype(float)
    np.testing.assert_allclose(sp.mean(), a.mean(axis=(0, 1)), atol=1e-12)
    np.testing.assert_allclose(sp.var(), a.var(axis=(0, 1)), atol=1e-12)
    assert sp.nbytes < sp.dense_nbytes / 20  # events, not a copy per draw


def test_sparse_moments_pool_the_draws_of_a_variable_present_in_some_draws():
    @th.model
    def maybe(n):
        c = th.sample("c", dist.Bernoulli(probs=0.5))
        if c:
            with th.plate("p", n):
                th.sample("u", dist.Normal(1.0, 1.0))

    kw = dict(num_samples=300, chains=2, seed=0, progress=False, workers=1)
    r = th.infer(maybe(4), th.cycle([th.lmh("c"), th.mh("p.u", th.drift(0.5))]),
                 dense_bytes=0, **kw)
    dense = r["p.u"]
    assert np.isnan(dense).any() and not np.isnan(dense).all()
    np.testing.assert_allclose(r.sparse("p.u").mean(), np.nanmean(dense, axis=(0, 1)))
    np.testing.assert_allclose(r.sparse("p.u").var(), np.nanvar(dense, axis=(0, 1)), atol=1e-12)


def test_a_reused_deterministic_buffer_is_recorded_by_value():
    buffer = np.zeros(2)

    @th.model
    def m():
        x = th.sample("x", dist.Normal(0.0, 1.0))
        buffer[:] = (x, 2 * x)  # the same array object every execution
        th.deterministic("d", buffer)

    r = th.infer(m(), th.mh("x", th.drift(1.0)), num_samples=100, seed=0, progress=False)
    np.testing.assert_allclose(r["d"][0, :, 1], 2 * r["x"][0])


def test_recorded_bytes_do_not_grow_with_the_plate():
    """One-element Gibbs: the events recorded per draw are the same at N = 10³ and 10⁵ (the
    first draw holds the whole plate once)."""
    per_draw = []
    for n in (1_000, 100_000):
        y = np.where(np.random.default_rng(0).random(n) < 0.3, 2.0, -1.0)
        r = th.infer(kitchen(y), th.gibbs(th.one("data.z")), num_samples=300, seed=0,
                     progress=False, dense_bytes=0)
        s = r.sparse("data.z").chain(0)
        first = next(s.events())[2]  # the whole plate at the first draw
        per_draw.append((s.nbytes() - np.asarray(first).nbytes) / 300)
    assert per_draw[1] < 2 * per_draw[0] + 50, per_draw


def test_recorded_events_of_a_chain_do_not_grow_with_its_length():
    """MH on one step of a chain: each draw records the (at most two) steps it re-executed, at
    T = 100 as at T = 3,000 (after the first draw's whole chain)."""
    per_draw = []
    for T in (100, 3_000):
        r = th.infer(flat_chain(T), th.mh(th.one("s"), th.drift(0.5)), num_samples=300, seed=0,
                     progress=False, dense_bytes=0)
        s = r.sparse("s.x").chain(0)
        events = list(s.events())
        assert all(e is None or len(e) <= 2 for _, e, _ in events)
        per_draw.append((s.nbytes() - np.asarray(events[0][2]).nbytes) / 300)
    assert per_draw[1] < 1.5 * per_draw[0] + 50, per_draw


def test_record_and_exclude_choose_the_variables():
    y = np.zeros(6)
    r = th.infer(kitchen(y), th.lmh(), num_samples=20, seed=0, progress=False, record="mu")
    assert set(r.keys()) == {"mu"}
    r = th.infer(kitchen(y), th.lmh(), num_samples=20, seed=0, progress=False,
                 record=["mu", "s"], exclude="s.x")
    assert set(r.keys()) == {"mu"}
    r = th.infer(kitchen(y), th.lmh(), num_samples=20, seed=0, progress=False, exclude="data")
    assert "data.z" not in r and "mu" in r and "s.x" in r


@th.model
def sometimes_extra():
    b = th.sample("b", dist.Bernoulli(probs=0.3))
    if b:
        th.sample("extra", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(0.0, 1.0), 0.2)


def test_record_and_exclude_may_name_a_variable_the_initial_trace_lacks():
    """``extra`` exists only when b = 1, and the chain starts at b = 0: excluding it is
    accepted (prior simulations show it) and it is never recorded; a misspelt name is still
    refused, naming the variables seen (the initial trace's check alone refused both)."""
    kw = dict(num_samples=200, seed=0, init={"b": 0}, progress=False)
    r = th.infer(sometimes_extra(), th.lmh(), exclude="extra", **kw)
    assert r["b"].max() == 1 and set(r.keys()) == {"b"}
    with pytest.raises(ValueError, match=r"exclude='extr' names no variable .*b, extra"):
        th.infer(sometimes_extra(), th.lmh(), exclude="extr", **kw)


def test_log_joint_per_draw_is_the_trace_log_joint():
    class LogJoint(Capturing):
        def _step(self, trace, rng):
            trace = self.inner.step(trace, rng)
            self.seen.append(trace.log_joint())
            return trace

    cap = LogJoint(th.lmh())
    r = th.infer(kitchen(np.zeros(5)), cap, num_samples=200, seed=1, progress=False)
    np.testing.assert_allclose(r.sample_stats["lp"][0], cap.seen, rtol=1e-12, atol=1e-9)


@th.model
def logistic_with_eta(x, y):
    """A deterministic site in the plate of a subsampled likelihood: eta_i = w x_i."""
    w = th.sample("w", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        eta = th.deterministic("eta", w * x[i])
        th.observe("y", dist.Bernoulli(logits=eta), y[i])


@th.model
def glm_with_eta(x, y):
    w = th.sample("w", dist.MvNormal(np.zeros(2), np.eye(2)))
    with th.plate("data", len(y)) as i:
        th.deterministic("eta", x[i] @ w)
        th.observe("y", th.glm.logistic(x[i], w), y[i])


@th.model
def ar_with_deterministic(ys):
    phi = th.sample("phi", dist.Uniform(-1.0, 1.0))

    def step(t, prev):
        h = th.sample("h", dist.Normal(0.0 if prev is None else phi * prev, 1.0))
        th.deterministic("g", phi * h)
        th.observe("y", dist.Normal(h, 0.5), ys[t])
        return h

    th.markov("h", step, len(ys))


_RNG = np.random.default_rng(0)
_X = _RNG.normal(size=2000)
_Y = (_RNG.random(2000) < 1 / (1 + np.exp(-0.7 * _X))).astype(float)
LAZY_KERNELS = {  # id → (program, kernel, the deterministic site, its value from the draws)
    "subsampled_mh, a plate": (
        lambda: logistic_with_eta(_X, _Y),
        lambda: th.subsampled_mh("w", batch_size=50, epsilon=0.1, proposal=th.drift(0.02)),
        "data.eta", lambda r: r["w"][..., None] * _X),
    "smh, a plate": (
        lambda: glm_with_eta(np.c_[_X, np.ones_like(_X)], _Y), lambda: th.smh("w", order=1),
        "data.eta", lambda r: r["w"] @ np.c_[_X, np.ones_like(_X)].T),
    "subsampled_mh, chain steps": (
        lambda: ar_with_deterministic(_X[:300]),
        lambda: th.subsampled_mh("phi", batch_size=10, epsilon=0.1, proposal=th.drift(0.02)),
        "h.g", lambda r: r["phi"][..., None] * r["h.h"]),
}


@pytest.mark.parametrize("name", list(LAZY_KERNELS))
def test_deterministic_values_of_stale_elements_are_recorded_as_of_the_draw(name):
    """A lazy run leaves the elements and steps it does not execute stale (000 §3.5), their
    deterministic values computed under older values: each draw records them as of the draw
    (eta_i = w x_i at every draw; before, 59 of 60 draws held stale ones, off by up to 2.6),
    and recording them changes nothing of the chain."""
    program, kernel, site, expected = LAZY_KERNELS[name]
    kw = dict(num_samples=60, seed=1, progress=False)
    r = th.infer(program(), kernel(), **kw)
    np.testing.assert_allclose(r[site], expected(r), rtol=1e-12, atol=1e-12)
    unrecorded = th.infer(program(), kernel(), exclude=site, **kw)
    for k in unrecorded.keys():
        np.testing.assert_array_equal(r[k], unrecorded[k])
    np.testing.assert_array_equal(r.sample_stats["lp"], unrecorded.sample_stats["lp"])


# -- the choices a proposal creates and drops --------------------------------------------------
def test_fresh_and_stale_addresses_of_a_proposal():
    @th.model
    def branch(y):
        b = th.sample("b", dist.Bernoulli(probs=0.5))
        f = th.mem("f", lambda key: dist.Normal(0.0, 1.0))
        if b:
            th.sample("x", dist.Normal(0.0, 1.0))
            with th.plate("p", 4):
                th.sample("u", dist.Normal(0.0, 1.0))
        else:
            th.sample("y", dist.Gamma(2.0, 1.0))
        th.observe("o", dist.Normal(f(b), 1.0), y)

    rng = np.random.default_rng(0)
    trace = initialize(branch(0.3), rng, init={"b": 1})
    run = Run(trace, rng, targets={("b",): 0}).execute()
    fresh, stale = dict(run.fresh_choices), dict(run.stale_choices)
    assert fresh == {("y",): 1, ("f", 0): 1}
    assert stale == {("x",): 1, ("p",): 4, ("f", 1): 1}
    assert sum(fresh.values()) == run.n_fresh and sum(stale.values()) == run.n_stale
    run.commit()
    run = Run(trace, rng, targets={("b",): 1}).execute()
    assert dict(run.fresh_choices) == {("x",): 1, ("p", "*", "u"): 4, ("f", 1): 1}
    assert dict(run.stale_choices) == {("y",): 1, ("f", 0): 1}


# -- chains are columns; selections do not expand them ---------------------------------------------
def test_one_step_update_writes_two_steps_of_the_columns():
    rng = np.random.default_rng(0)
    trace = initialize(hmm(), rng)
    from thrifty.core.trace import ChangeLog

    trace.changes = ChangeLog()
    k = th.mh(th.one("s"))
    for _ in range(50):
        trace.changes.clear()
        trace = k.step(trace, rng)
        for _, members, _ in trace.changes.entries:
            assert members is not None and len(members) <= 2


def test_one_on_a_chain_picks_a_step_without_expanding():
    trace = initialize(flat_chain(3000), np.random.default_rng(0))
    cs = th.one("s").resolve(trace)
    assert len(cs.chain_groups) == 1 and cs.n_blocks() == 3000
    rng = np.random.default_rng(1)
    picked = {cs.pick_block(rng).scalars[0][1] for _ in range(4000)}
    assert cs._expanded is None  # no list of 3000 addresses was built
    assert len(picked) > 2000  # uniform over the steps
    assert th.ordered_range("s", 10, 19).resolve(trace).count == 10


# -- the batched executor runs any batch of members, not only plate elements --------------------
def test_batched_executor_runs_a_markov_step_over_particles():
    """What the particle methods need: ``step(t, prev)`` executed once over N particle states,
    latent and observation log-densities per particle kept apart (no plate involved)."""
    from thrifty import _context
    from thrifty.core.batch import BatchFrame

    class Particles(BatchFrame):
        def __init__(self, run, addr, n):
            super().__init__(run, None, (), None)
            self.init_members(n)
            self.addr = addr

        def member_addr(self, j, rel):
            return self.addr + (j,) + rel

        def generic(self, rel):
            return self.addr + ("*",) + rel

        generic_all = generic

    means = np.array([-1.0, 0.0, 2.0])

    def step(t, prev):
        z = th.sample("z", dist.Categorical(TRANS3[prev]))
        th.observe("y", dist.Normal(means[z], 1.0), 0.5)
        return z

    trace = initialize(big_plate(3), np.random.default_rng(0))
    run = Run(trace, np.random.default_rng(1))
    n = 20_000
    frame = Particles(run, ("s", 4), n)
    prev = np.random.default_rng(2).integers(0, 3, n)
    run.frame = frame
    _context.EXECUTIONS.runs.append(run)
    try:
        z = step(4, prev)
    finally:
        _context.EXECUTIONS.runs.pop()
    assert z.shape == (n,) and frame.lat_lp.shape == frame.obs_lp.shape == (n,)
    np.testing.assert_allclose(frame.lat_lp, np.log(TRANS3[prev, z]))
    np.testing.assert_allclose(frame.obs_lp, dist.Normal(means[z], 1.0).log_prob(0.5))
    assert frame.n_fresh == n  # no stored particle values: every member drew fresh
    # the transition is followed: the share of z = 2 given prev = 2 is TRANS3[2, 2]
    share = np.mean(z[prev == 2] == 2)
    se = np.sqrt(TRANS3[2, 2] * (1 - TRANS3[2, 2]) / np.sum(prev == 2))
    assert abs(share - TRANS3[2, 2]) < 4.5 * se


TRANS3 = np.array([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])


# -- a defect found on the way: block prior proposals of dependent choices -----------------------
P2 = np.array([[0.9, 0.1], [0.2, 0.8]])


@th.model
def binary_chain(L, observed):
    def step(t, prev):
        z = th.sample("z", dist.Categorical(np.array([0.5, 0.5]) if t == 0 else P2[prev]))
        if observed:
            th.observe("y", dist.Normal(1.0 * z, 1.0), 0.8)
        return z

    th.markov("s", step, L)


def exact_binary_chain(L):
    import itertools

    w = {}
    for zs in itertools.product([0, 1], repeat=L):
        p = 0.5 * np.prod([P2[a, b] for a, b in itertools.pairwise(zs)])
        w[zs] = p * np.prod([np.exp(-0.5 * (0.8 - z) ** 2) for z in zs])
    total = sum(w.values())
    return np.array([sum(p for zs, p in w.items() if zs[t]) / total for t in range(L)])


def test_block_prior_proposal_of_dependent_choices():
    """``th.mh("s")`` redraws every step from its prior given the *new* previous step; the
    reverse move redraws the old values given the old ones, so q_rev is their stored density.
    (The engine used the new parents for q_rev: with no observation the acceptance was 0.5
    instead of 1, and the marginals were off by 5 standard errors.)"""
    r = th.infer(binary_chain(3, False), th.mh("s"), num_samples=500, seed=0, progress=False)
    stats = next(v for k, v in r.stats.items() if k != "run")
    assert stats["acceptance_rate"] == 1.0  # posterior = prior: always accepted
    from thrifty.diagnostics._arviz import ess as az_ess

    r = th.infer(binary_chain(3, True), th.mh("s"), num_samples=20_000, chains=2, seed=1,
                 progress=False)
    z = r["s.z"].astype(float)
    want = exact_binary_chain(3)
    for t in range(3):
        a = z[:, :, t]
        se = np.sqrt(a.var() / az_ess(a))
        assert abs(a.mean() - want[t]) < 4.5 * se, (t, a.mean(), want[t], se)


# -- candidate lanes: one element's alternative values in one execution ----------------------------
@th.model
def lanes_model(y):
    mu = th.sample("mu", dist.Normal(np.zeros(4), 2.0))
    scale = th.mem("scale", lambda k: dist.Gamma(2.0, 2.0))
    th.deterministic("scales", np.array([scale(k) for k in range(4)]))  # every key exists
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Categorical(np.array([0.1, 0.2, 0.3, 0.4])))
        # a site of the element replayed under each lane's value; value 3 makes it impossible
        # when negative
        u = th.sample("u", dist.Uniform(np.where(z == 3, 0.0, -3.0), 3.0))
        th.observe("y", dist.Normal(mu[z] + 0.5 * u, scale(z)), y[i])

        def step(t, prev):
            return th.sample("s", dist.Normal(0.5 * prev + mu[z], 1.0))

        th.markov("c", step, 2, init=np.zeros(len(y[i])))


def test_candidate_lanes_weigh_each_value_as_a_strict_run_with_it_does():
    """The lanes of one execution give each value of an element the log-weight a strict run
    of the element with that value gives it (replayed sites, memoized keys, a chain inside the
    plate; −∞ for a value under which a replayed site is impossible): to 1e-10."""
    from thrifty.core.engine import (
        STRICT,
        Candidates,
        Plan,
        VecTarget,
        lane_lps,
        plan_elements,
        plate,
        propose,
    )

    y = np.array([0.3, -1.2, 2.5, 0.7, -0.4])
    trace = th.simulate(lanes_model(y), seed=2)
    p, rel, rng = ("data",), ("z",), np.random.default_rng(0)
    values = [0, 1, 2, 3]
    impossible = 0
    for e in range(len(y)):
        cur = int(plate(trace, p).values(rel, [e])[0])
        plan = plan_elements(trace, Plan(), p, np.array([e]))
        lanes = propose(trace, rng, vec={(p, rel): VecTarget(np.full(4, e), np.array(values))},
                        plan=plan, mode=STRICT, candidates=Candidates(p, e, 4))
        lp = lane_lps(lanes, p)
        # the element's sites replay strictly in lanes whatever the run's kind (no redraw)
        default = propose(trace, rng, vec={(p, rel): VecTarget(np.full(4, e), np.array(values))},
                          plan=plan, candidates=Candidates(p, e, 4))
        np.testing.assert_array_equal(lane_lps(default, p), lp)
        for v in values:
            if v == cur:
                continue
            run = propose(trace, rng, vec={(p, rel): VecTarget(np.array([e]), np.array([v]))},
                          plan=plan, mode=STRICT)
            want = run.log_weight if run.aborted is None else -np.inf
            if want == -np.inf:
                impossible += 1
                assert lp[v] == -np.inf
            else:
                assert lp[v] - lp[cur] == pytest.approx(want, abs=1e-10)
        with pytest.raises(RuntimeError, match="candidate"):
            lanes.commit()
    assert impossible > 0
