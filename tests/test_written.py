"""Particle Gibbs writes its drawn trajectory into the trace as columns (paper 003 §4).

The trace a columnar write-back leaves must be the trace a step-by-step execution of the same
trajectory leaves: the same values, log-densities (to rounding: batch and scalar arithmetic),
distributions, states and log-joint, and a trace a full execution of the program agrees with.
Where the columns cannot be written as the chain stores them, the trajectory is executed."""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
import thrifty.core.chain_run as chain_run
import thrifty.inference.particles.pgibbs as pgibbs
from thrifty import dist
from thrifty.core.check import check_trace
from thrifty.models import hmm
from thrifty.models.lds import generate_lds, lds


@th.model
def sv(y):
    """Scalar states, a recorded value and a factor in each step, an observation of the last
    state after the chain."""
    phi = th.sample("phi", dist.Uniform(-1.0, 1.0))

    def step(t, prev):
        h = th.sample("h", dist.Normal(phi * prev, 0.5))
        th.deterministic("vol", np.exp(h / 2))
        th.factor("pen", -0.01 * h**2)
        th.observe("y", dist.Normal(0.0, np.exp(h / 2)), y[t])
        return h

    hs = th.markov("x", step, len(y), 0.0)
    th.observe("last", dist.Normal(hs[-1], 1.0), 0.3)


@th.model
def mv_walk(y):
    """A step whose family cannot construct one particle's entry (MvNormal): executed."""

    def step(t, prev):
        z = th.sample("z", dist.MvNormal(prev, np.eye(2)))
        th.observe("y", dist.Normal(z, 1.0), y[t])
        return z

    th.markov("x", step, len(y), np.zeros(2))


W6 = np.linspace(0.1, 0.6, 6)  # as many entries as the tests' particles


@th.model
def shared_array_state(y):
    """A state holding an array shared by every particle, as long as the particle batch: not a
    sampled value, so the trajectory is executed (a per-particle axis cannot be told from it)."""

    def step(t, prev):
        h = th.sample("h", dist.Normal(0.9 * prev[0], 1.0))
        th.observe("y", dist.Normal(h, 1.0), y[t])
        return (h, W6)

    s = th.markov("x", step, len(y), (0.0, W6))
    return s[-1][1]


@th.model
def dict_state(y):
    """A dict state (iterated CSMC runs it; a dict is not a sampled value: executed)."""

    def step(t, prev):
        h = th.sample("h", dist.Normal(0.9 * prev["h"], 1.0))
        th.observe("y", dist.Normal(h, 1.0), y[t])
        return {"h": h}

    s = th.markov("x", step, len(y), {"h": 0.0})
    th.observe("last", dist.Normal(s[-1]["h"], 1.0), 0.2)


@th.model
def tuple_state(y):
    """A tuple of two sampled values as the state: written from their rows."""

    def step(t, prev):
        a = th.sample("a", dist.Normal(0.9 * prev[0], 1.0))
        b = th.sample("b", dist.Normal(0.5 * prev[1] + a, 1.0))
        th.observe("y", dist.Normal(a + b, 1.0), y[t])
        return (a, b)

    return th.markov("x", step, len(y), (0.0, 0.0))


@th.model
def ragged(y):
    """A recorded list, and a latent whose shape depends on t: rows of several shapes (an
    object column), executed."""

    def step(t, prev):
        z = th.sample("z", dist.Normal(np.asarray(prev)[..., None] + np.zeros(1 + t % 2), 1.0))
        th.deterministic("pair", [z.sum(-1), 2 * z.sum(-1)])
        th.observe("y", dist.Normal(z.sum(-1), 1.0), y[t])
        return z.sum(-1)

    th.markov("x", step, len(y), 0.0)


@th.model
def thirds(y):
    """Categorical rows that sum to 1 only within the families' tolerance (0.3333333 × 3): each
    step's entry is built from the row it was given, not renormalised."""
    A = np.array([[0.3333333, 0.3333333, 0.3333333], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])

    def step(t, prev):
        z = th.sample("z", dist.Categorical(A[prev]))
        th.observe("y", dist.Normal(np.array([-1.0, 0.0, 1.0])[z], 1.0), y[t])
        return z

    th.markov("x", step, len(y), 0)


def _programs():
    y, C, _ = generate_lds(T=12, D=3, seed=0)
    rng = np.random.default_rng(1)
    return {
        "lds": (lds(y, C, 0.5), "x"),
        "hmm": (hmm(), "s"),
        "sv": (sv(rng.normal(size=15)), "x"),
        "mv": (mv_walk(rng.normal(size=(8, 2))), "x"),
        "tuple": (tuple_state(rng.normal(size=10)), "x"),
        "thirds": (thirds(rng.normal(size=10)), "x"),
        "shared": (shared_array_state(rng.normal(size=10)), "x"),
        "ragged": (ragged(rng.normal(size=10)), "x"),
    }


PROGRAMS = _programs()


def _stepped(program, chain, columns: bool, monkeypatch, steps: int = 3, **kw):
    trace = th.simulate(program, seed=3)
    kernel = th.pgibbs(chain, 6, **kw)
    rng = np.random.default_rng(5)
    with monkeypatch.context() as m:
        if not columns:
            m.setattr(pgibbs, "_columns", lambda *a: None)
        for _ in range(steps):
            kernel.step(trace, rng)
    return trace


def _same_chain(a, b) -> None:
    assert a.sites.keys() == b.sites.keys()
    for k in a.sites:
        sa, sb = a.sites[k], b.sites[k]
        assert sa.kind == sb.kind and bool(sa.discrete) == bool(sb.discrete)
        at = np.ones(a.T, dtype=bool) if sa.present is None else sa.present.array()
        np.testing.assert_array_equal(
            at, np.ones(b.T, dtype=bool) if sb.present is None else sb.present.array())
        if sa.values is not None:
            va, vb = sa.values.array(), sb.values.array()
            assert va.dtype == vb.dtype and va.shape == vb.shape
            np.testing.assert_array_equal(va[at], vb[at])
        np.testing.assert_allclose(sa.lp.array()[at], sb.lp.array()[at], rtol=1e-12,
                                   atol=1e-12)
        if sa.dists is not None:  # each step's distribution scores its value as stored
            assert ([repr(d) for d in sa.dists.array()[at]]
                    == [repr(d) for d in sb.dists.array()[at]])
            for t in np.flatnonzero(at):
                v, lp = sa.site(t).value, sa.lp.array()[t]
                for d in (sa.dists.array()[t], sb.dists.array()[t]):
                    assert float(np.sum(d.log_prob(v))) == pytest.approx(lp, rel=1e-12,
                                                                         abs=1e-12)
    np.testing.assert_allclose(a.step_total.array(), b.step_total.array(), rtol=1e-12,
                               atol=1e-12)
    assert a.total_lp() == pytest.approx(b.total_lp(), rel=1e-12, abs=1e-12)
    assert len(a.states) == len(b.states)
    for x, y in zip(a.states, b.states):  # the same values, types and read-only arrays
        assert _types(x) == _types(y)
        for u, v in zip(x if type(x) is tuple else (x,), y if type(y) is tuple else (y,)):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
            if type(u) is np.ndarray:
                assert not u.flags.writeable and u.base is None  # (never a column's view)
    np.testing.assert_array_equal(a.counts.array(), b.counts.array())


def _types(x):
    return tuple(map(type, x)) if type(x) is tuple else type(x)


@pytest.mark.parametrize("name", ["lds", "hmm", "sv", "tuple", "thirds"])
def test_columns_leave_the_trace_an_execution_leaves(name, monkeypatch):
    program, chain = PROGRAMS[name]
    written = []
    real = chain_run.write_chain
    monkeypatch.setattr(chain_run, "write_chain", lambda *a: written.append(1) or real(*a))
    a = _stepped(program, chain, True, monkeypatch)
    assert len(written) == 3  # every sweep wrote its trajectory as columns
    b = _stepped(program, chain, False, monkeypatch)
    assert len(written) == 3  # (the executed write-back: no columns)
    _same_chain(a.root.chains[(chain,)], b.root.chains[(chain,)])
    assert a.log_joint() == pytest.approx(b.log_joint(), rel=1e-12, abs=1e-10)
    assert check_trace(a) == []
    assert a.output == b.output or np.allclose(np.asarray(list(a.output or [])),
                                               np.asarray(list(b.output or [])))


@pytest.mark.parametrize("name", ["mv", "shared", "ragged", "dict"])
def test_what_columns_cannot_say_is_executed(name, monkeypatch):
    """A family without entries (MvNormal), a state that is not the step's sampled values (a
    shared array as long as the batch; a dict), rows of several shapes: executed, and right."""
    if name == "dict":
        program, chain, kw = dict_state(np.linspace(-1, 1, 10)), "x", {
            "ancestor_sampling": False}
    else:
        (program, chain), kw = PROGRAMS[name], {}
    written = []
    real = chain_run.write_chain
    monkeypatch.setattr(chain_run, "write_chain", lambda *a: written.append(1) or real(*a))
    a = _stepped(program, chain, True, monkeypatch, **kw)
    assert written == []
    assert check_trace(a) == []
    if name == "shared":
        np.testing.assert_array_equal(a.output, W6)


def test_a_written_chain_is_not_shared_with_a_fork(monkeypatch):
    """A fork taken before the write-back keeps the old trajectory (copy-on-write)."""
    program, chain = PROGRAMS["sv"]
    trace = th.simulate(program, seed=3)
    fork = trace.fork()
    before = trace.root.chains[(chain,)].sites[("h",)].values.array().copy()
    th.pgibbs(chain, 6).step(trace, np.random.default_rng(5))
    np.testing.assert_array_equal(fork.root.chains[(chain,)].sites[("h",)].values.array(),
                                  before)
    assert check_trace(fork) == [] and check_trace(trace) == []
    assert not np.array_equal(trace.root.chains[(chain,)].sites[("h",)].values.array(), before)


def test_one_entry_of_each_family():
    """``Distribution.member`` builds entry j from its parameters: the entry's log-density is
    the batch's j-th; shared parameters give the distribution itself."""
    x = np.array([0.3, 1.2, 2.0])
    cases = [
        dist.Normal(np.array([0.0, 1.0, 2.0]), 1.5),
        dist.Gamma(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.5, 2.0])),
        dist.StudentT(3.0, np.array([0.0, 1.0, 2.0]), 2.0),
        dist.Beta(np.array([1.0, 2.0, 3.0]), 2.0),
        dist.HalfNormal(np.array([1.0, 2.0, 3.0])),
        dist.Poisson(np.array([1.0, 2.0, 3.0])),
        dist.Bernoulli(np.array([0.1, 0.5, 0.9])),
        dist.Bernoulli(logits=np.array([-1.0, 0.0, 1.0])),
        dist.Binomial(np.array([3.0, 4.0, 5.0]), np.array([0.1, 0.5, 0.9])),
        dist.Categorical(np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])),
        dist.Categorical(logits=np.array([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]])),
    ]
    for d in cases:
        v = np.array([0, 1, 1]) if d.is_discrete else x
        lp = d.log_prob(v)
        for j in range(3):
            e = d.member(j)
            assert e is not None and tuple(e.batch_shape) == (), d
            assert d.has_member(j), d
            assert e.log_prob(v[j].item()) == pytest.approx(lp[j], rel=1e-12), (d, j)
    shared = dist.Normal(0.0, 1.0)
    assert shared.member(2) is shared and shared.has_member(2)
    assert dist.MvNormal(np.zeros((3, 2)), np.eye(2)).member(0) is None
    assert not dist.MvNormal(np.zeros((3, 2)), np.eye(2)).has_member(0)


def test_a_subclass_that_does_not_say_how_it_is_built_has_no_entries():
    """A user's subclass with its own constructor inherits no ``member``: its trajectories are
    executed."""

    class UnitNormal(dist.Normal):
        def __init__(self, mu):
            super().__init__(mu, 1.0)

    assert UnitNormal(np.zeros(3)).member(1) is None
    assert not UnitNormal(np.zeros(3)).has_member(1)
    assert UnitNormal(0.0).member(0) is not None  # (shared parameters: itself)
    assert UnitNormal(0.0).has_member(0)


def test_a_written_chain_makes_its_steps_distributions_when_first_read(monkeypatch):
    """A PGAS sweep writes the drawn trajectory's distributions as a column made when first
    read (most sweeps' are never read): unmade after the sweep, then a plain column holding
    what an execution of the trajectory holds (``_same_chain``); pickled or copied unmade, the
    column it would be."""
    import copy
    import pickle

    from thrifty.core.column import Column, LazyColumn

    program, chain = PROGRAMS["lds"]
    trace = _stepped(program, chain, True, monkeypatch, steps=1)
    col = trace.root.chains[(chain,)].sites[("z",)]
    assert type(col.dists) is LazyColumn
    copies = [pickle.loads(pickle.dumps(col.dists)), copy.deepcopy(col.dists)]
    assert type(col.dists) is Column  # (made by the copies)
    for c in copies:
        assert type(c) is Column
        assert [repr(d) for d in c.array()] == [repr(d) for d in col.dists.array()]
    executed = _stepped(program, chain, False, monkeypatch, steps=1)
    _same_chain(trace.root.chains[(chain,)], executed.root.chains[(chain,)])
    lazy = LazyColumn(lambda: np.arange(3.0))
    lazy.put(1, 5.0)  # (a write makes it first)
    assert type(lazy) is Column and lazy.array().tolist() == [0.0, 5.0, 2.0]
