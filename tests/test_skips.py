"""Every place the engine skips work, with its precondition broken on purpose.

``docs/architecture.md`` ("What the engine skips, and why") lists each skip and the invariant
that makes it sound.  Each test here breaks what a user might break — writes into values the
engine keeps, a markov state changed in place, data computed from a choice, a memoized value
carried into a plate by a buffer, GLM inputs that depend on another choice — and shows that the
engine still answers right (posterior against an exact answer: z on the mean with an ESS-based
standard error, |z| < 4.5, and KS p > 1e-4 on ESS-thinned draws) or refuses with an error
naming what to do.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import check_continuous
from thrifty import dist, glm
from thrifty.errors import ModelError
from thrifty.processes.collapsed import NormalGamma

Y = np.random.default_rng(1).normal(3.0, 1.0, 20)
PREC = 1 / 100 + len(Y)
MEAN, SD = Y.sum() / PREC, PREC**-0.5


def draws(prog, kernel, n=3000, seed=0, name="mu"):
    return th.infer(prog, kernel, num_samples=n, burn_in=500, seed=seed, progress=False)[name]


# -- values the engine keeps are read-only ---------------------------------------------------
@th.model
def writes_a_choice(y):
    w = th.sample("w", dist.MvNormal(np.zeros(2), 100.0 * np.eye(2)))
    w[1] = 0.0  # in place: would change the trace's value behind the engine's back
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(w[0] + w[1], 1.0), y[i])


@th.model
def writes_plate_values(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Normal(mu, 1.0))
        z[:] = mu
        th.observe("y", dist.Normal(z, 1.0), y[i])


@th.model
def writes_a_memoized_value(y):
    w = th.mem("w", lambda k: dist.MvNormal(np.zeros(2), np.eye(2)))
    v = w(0)
    v += 1.0
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(v[0], 1.0), y[i])


def _mutating_step(t, prev, y):
    x = th.sample("x", dist.Normal(prev[0], 1.0))
    prev[0] = x  # writes into the state the engine handed back
    th.observe("y", dist.Normal(x, 1.0), y[t])
    return prev


@th.model
def mutates_a_markov_state(y):
    th.markov("s", _mutating_step, len(y), np.zeros(1), y)


@pytest.mark.parametrize("model", [writes_a_choice, writes_plate_values,
                                   writes_a_memoized_value, mutates_a_markov_state])
def test_writing_into_a_kept_value_is_an_error_that_says_to_copy(model):
    kernel = th.lmh()
    with pytest.raises(ModelError, match=r"read-only.*Copy it first \(x = x.copy\(\)\)"):
        th.infer(model(Y[:5]), kernel, num_samples=50, seed=0, progress=False)


def test_init_arrays_and_returned_values_stay_the_users():
    """init= arrays are copied (the user's array stays writable); a model that copies a kept
    value before changing it gives the posterior of the model it says."""
    w0 = np.array([3.0, 0.0])

    @th.model
    def copies(y):
        w = th.sample("w", dist.MvNormal(np.zeros(2), 100.0 * np.eye(2))).copy()
        w[1] = 0.0
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(w[0] + w[1], 1.0), y[i])

    r = th.infer(copies(Y), th.mh("w", th.drift(0.5)), num_samples=3000, burn_in=500, seed=0,
                 progress=False, init={"w": w0})
    w0[0] = 1.0  # still the user's
    check_continuous(r["w"][..., 0], MEAN, SD, stats.norm(MEAN, SD).cdf, "w[0]")


# -- markov states: compared by value, kept by the engine ----------------------------------
BUF = np.zeros(1)


def _buffer_step(t, prev, y):
    x = th.sample("x", dist.Normal(0.0, 10.0))
    BUF[0] = x  # the same buffer returned at every step: the engine keeps its own copy
    th.observe("y", dist.Normal(x, 1.0), y[t])
    return BUF


def _list_step(t, prev, y):
    x = th.sample("x", dist.Normal(0.0, 1.0))
    return [x]


def test_a_state_buffer_reused_by_the_step_is_copied_and_a_list_state_is_refused():
    @th.model
    def reuses(y):
        th.markov("s", _buffer_step, len(y), None, y)

    prec = 1 / 100 + 1
    x = th.infer(reuses(Y[:4]), th.mh(th.one("s.x"), th.drift(1.0)), num_samples=4000,
                 burn_in=500, seed=0, progress=False)["s.x"]
    for t in range(4):  # x_t | y_t: N(y_t / prec, 1 / prec)
        m, s = Y[t] / prec, prec**-0.5
        check_continuous(x[..., t], m, s, stats.norm(m, s).cdf, f"s.x[{t}]")

    @th.model
    def lists(y):
        th.markov("s", _list_step, len(y), None, y)

    with pytest.raises(ModelError, match=r"markov chain \('s',\).*list.*tuple or an array"):
        th.simulate(lists(Y[:3]), seed=0)

    class Carrier(float):  # compared as a float: its attribute would change unseen
        pass

    def carrier_step(t, prev, y):
        x = th.sample("x", dist.Normal(0.0, 1.0))
        out = Carrier(0.0)
        out.mu = x
        return out

    @th.model
    def carries(y):
        th.markov("s", carrier_step, len(y), None, y)

    with pytest.raises(ModelError, match=r"markov chain \('s',\).*type Carrier.*no attributes"):
        th.simulate(carries(Y[:3]), seed=0)


def _ar1_step(t, prev, y):
    z = th.sample("z", dist.Normal(0.9 * prev, 1.0))
    th.observe("y", dist.Normal(z, 1.0), y[t])
    return z


_PBUF: dict = {}


def _ar1_buffer_step(t, prev, y):
    z = th.sample("z", dist.Normal(0.9 * prev, 1.0))
    th.observe("y", dist.Normal(z, 1.0), y[t])
    b = _PBUF.setdefault(np.shape(z), np.zeros(np.shape(z)))
    b[...] = z  # one buffer (over the particles) returned at every step
    return b


@th.model
def ar1(y, step):
    th.markov("x", step, len(y), 0.0, y)


def _writes_q_step(t, prev, q, y):
    z = th.sample("z", dist.Normal(q[0] * prev, 1.0))
    q[1] = 0.0  # writes into a top-level choice the particles share
    th.observe("y", dist.Normal(z, 1.0), y[t])
    return z


@th.model
def writes_a_shared_choice(y):
    q = th.sample("q", dist.MvNormal(np.full(2, 0.5), 0.01 * np.eye(2)))
    th.markov("x", _writes_q_step, len(y), 0.0, q, y)


def test_particle_runs_keep_their_own_states_and_hand_out_kept_values_read_only():
    """In particle runs (th.pgibbs, th.smc) a step that returns the same buffer at every step
    gives the draws of the inline step, to the bit: the engine keeps a copy of each state for
    the particles' ancestries (before, every kept state was the last step's, and PGAS's
    smoothed means were off by 0.94 on this chain).  A step writing into a shared top-level
    choice is an error that says to copy it."""
    y = Y[:12] - 3.0
    kw = dict(num_samples=200, burn_in=20, seed=0, progress=False)
    inline = th.infer(ar1(y, _ar1_step), th.pgibbs("x", 10), **kw)["x.z"]
    buffered = th.infer(ar1(y, _ar1_buffer_step), th.pgibbs("x", 10), **kw)["x.z"]
    np.testing.assert_array_equal(buffered, inline)
    a, b = th.smc(ar1(y, _ar1_step), 100, seed=1), th.smc(ar1(y, _ar1_buffer_step), 100, seed=1)
    assert a.log_evidence == b.log_evidence
    kernel = th.cycle([th.pgibbs("x", 10), th.mh("q", th.drift(0.05))])
    with pytest.raises(ModelError, match=r"read-only.*Copy it first \(x = x.copy\(\)\)"):
        th.infer(writes_a_shared_choice(y), kernel, **kw)


# -- collapsed observations computed from a choice ------------------------------------------
NG = (0.0, 1.0, 2.0, 2.0)


@th.model
def collapsed_shift(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("x", th.collapsed.NormalGamma(*NG), y[i] - mu)


def test_collapsed_statistics_follow_observations_that_depend_on_a_choice():
    """An element is moved in its cluster's statistics when its observed value changed, not
    only its key: here every value depends on μ, and no key ever changes."""
    y = np.random.default_rng(0).normal(2.0, 1.0, 30)
    grid = np.linspace(-4.0, 5.0, 3001)

    def log_ml(mu):
        f = NormalGamma(*NG)
        for v in y - mu:
            f.incorporate(v)
        return f.marginal_log_prob()

    lw = np.array([stats.norm.logpdf(g) + log_ml(g) for g in grid])
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = float(grid @ w)
    sd = float(np.sqrt(((grid - mean) ** 2) @ w))
    cdf = lambda v: np.interp(v, grid, np.cumsum(w))  # noqa: E731
    x = draws(collapsed_shift(y), th.mh("mu", th.drift(0.5)), n=4000)
    check_continuous(x, mean, sd, cdf, "mu")


# -- a memoized value carried into a plate by a buffer -------------------------------------
HOLD = {}


@th.model
def mem_through_a_buffer(y):
    f = th.mem("f", lambda k: dist.Normal(0.0, 10.0))
    HOLD["mu"] = f(0)  # read at the top level: a change dirties what follows
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(HOLD["mu"], 1.0), y[i])


def test_a_memoized_value_read_before_a_plate_reruns_it():
    x = draws(mem_through_a_buffer(Y), th.mh(("f", 0), th.drift(0.5)), name="f")
    check_continuous(x[..., 0] if x.ndim == 3 else x, MEAN, SD, stats.norm(MEAN, SD).cdf, "f")


# -- SMH: the inputs of its sections depend on another choice --------------------------------
def _scaled_logistic():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (rng.random(300) < 1 / (1 + np.exp(-(X @ np.array([1.0, -1.0]))))).astype(float)
    return X, y


@th.model
def scaled_inputs(X, y):
    s = th.sample("s", dist.Gamma(20.0, 20.0))
    w = th.sample("w", dist.MvNormal(np.zeros(2), 4.0 * np.eye(2)))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i] * s, w), y[i])


def _sections_X(kernel):
    st = kernel.sections if hasattr(kernel, "sections") else kernel.proxy._helper.sections
    return st.X


@pytest.mark.parametrize("w_kernel", [
    lambda: th.smh("w"),
    lambda: th.subsampled_mh("w", batch_size=50, epsilon=0.0, proposal=th.drift(0.3),
                             proxy="taylor"),
])
def test_glm_sections_whose_inputs_depend_on_another_choice(w_kernel):
    """SMH and the Taylor proxy keep each section's inputs from their set-up; here the inputs
    X·s change with s, moved by another kernel.  They see that the engine re-ran the plate's
    elements since, compare the data again and re-do the set-up where they differ: after every
    step, the inputs they use are X·s at the current s (exact check, 40 cycles in which s moves
    often), and a step that follows no change of s does not redo the set-up."""
    X, y = _scaled_logistic()
    rng = np.random.default_rng(3)
    trace = th.initialize(scaled_inputs(X, y), rng)
    k_s, k_w = th.mh("s", th.drift(0.1)), w_kernel()
    moves = 0
    for _ in range(40):
        s_before = trace["s"]
        trace = k_s.step(trace, rng)
        moves += trace["s"] != s_before
        trace = k_w.step(trace, rng)
        np.testing.assert_array_equal(_sections_X(k_w), X * trace["s"])
    assert moves >= 10
    st = (k_w.sections if hasattr(k_w, "sections") else k_w.proxy._helper.sections)
    for _ in range(5):  # s unchanged: the set-up stays
        trace = k_w.step(trace, rng)
        assert (k_w.sections if hasattr(k_w, "sections") else k_w.proxy._helper.sections) is st


@th.model
def scaled_cluster_inputs(X, y):
    s = th.sample("s", dist.Gamma(20.0, 20.0))
    crp = th.CRP(alpha=dist.Gamma(1.0, 1.0), name="alpha")
    w = th.mem("w", lambda k: dist.MvNormal(np.zeros(2), 4.0 * np.eye(2)))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", crp)
        th.observe("y", glm.logistic(X[i] * s, w(z)), y[i])


def test_the_per_table_proxy_follows_rows_that_depend_on_another_choice():
    """The per-table Taylor proxy keeps each element's row X_i·s; rows that move with s (every
    element executed when s moves) or with a per-element choice (one element executed) are
    followed from the plate's execution log, never trusted: after each step its rows are the
    program's.  (Its sums against the program's: test_mem_proxy.py.)"""
    X, y = _scaled_logistic()
    rng = np.random.default_rng(3)
    trace = th.initialize(scaled_cluster_inputs(X, y), rng,
                          init={"data.z": np.arange(len(y)) % 2})
    k_s, k_z = th.mh("s", th.drift(0.1)), th.gibbs(th.one("data.z"))
    k_w = th.subsampled_mh(th.one("w"), batch_size=50, epsilon=0.1, proposal=th.drift(0.3),
                           proxy="taylor")
    moves = 0
    for _ in range(30):
        s_before = trace["s"]
        trace = k_s.step(trace, rng)
        moves += trace["s"] != s_before
        for _ in range(3):
            trace = k_z.step(trace, rng)
            trace = k_w.step(trace, rng)
            np.testing.assert_array_equal(k_w.proxy._mem.X, X * trace["s"])
    assert moves >= 10


def test_a_commit_into_a_fork_leaves_the_original_collapsed_state_alone():
    """A provisional commit (LMH with a structure change, th.one) commits into a fork: the
    collapsed site's columns of keys and values are the original trace's, shared copy-on-write,
    so the fork's move of an element must not write through into the original."""
    from thrifty.core.locate import locate, make_targets, plan_for
    from thrifty.core.run import Run
    from thrifty.models import dp_mixture

    x = np.random.default_rng(0).normal(size=(30, 2))
    rng = np.random.default_rng(1)
    tr = th.initialize(dp_mixture(x, np.zeros(2), 0.1, 4.0, np.eye(2)), rng,
                       init={"data.z": np.zeros(30, dtype=int)})
    node = tr.root.plates[("data",)]
    loc = locate(tr, ("data", 3, "z"))
    targets, vec = make_targets([loc], [1])
    run = Run(tr, rng, targets=targets, vec=vec, plan=plan_for(tr, [loc])).execute()
    fork = tr.fork()
    run.commit(fork)
    keys = lambda t: t.root.plates[("data",)].procs[("x",)].keys.array()  # noqa: E731
    assert keys(tr)[3] == 0 and keys(fork)[3] == 1
    assert node.procs[("x",)].keys.array().sum() == 0


def test_a_proposal_of_the_present_value_stops_at_the_choice():
    """LMH, and MH from the prior, on a choice whose redraw is its present value (a category of
    one value) run none of the model's code after the choice and commit nothing: the move
    x' = x, accepted with probability 1 (001 Eq. 4).  The code after it is counted (a list the
    model body, or a plate's body, appends to: 200 steps appended 200 times before, the
    set-up's executions — the initial one and the checks of how plates are used — at most 14);
    the posterior of the other choice under a cycle with MH on it is exact
    (x | y ~ N(y/2, 1/2))."""
    SET_UP = 14  # executions of the model's code before the first step, at most
    seen = []

    @th.model
    def one_valued(y):
        k = th.sample("k", dist.Categorical(np.array([1.0])))
        seen.append(k)
        x = th.sample("x", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(x, 1.0), y)

    for kernel in (th.mh("k", th.prior()), th.lmh("k")):
        seen.clear()
        r = th.infer(one_valued(0.8), kernel, num_samples=200, seed=0, progress=False,
                     check=False)
        assert len(seen) <= SET_UP, kernel.label()
        assert r.stats[kernel.label()]["acceptance_rate"] == 1.0
    r = th.infer(one_valued(0.8), th.cycle([th.lmh("k"), th.mh("x", th.drift(1.0))]),
                 num_samples=3000, burn_in=200, seed=1, progress=False)
    check_continuous(r["x"], 0.4, 0.5**0.5, stats.norm(0.4, 0.5**0.5).cdf, "x")

    @th.model
    def one_valued_elements(y):
        with th.plate("data", len(y)) as i:
            k = th.sample("k", dist.Categorical(np.array([1.0])))
            seen.append(k)
            th.observe("y", dist.Normal(k, 1.0), y[i])

    seen.clear()
    r = th.infer(one_valued_elements(np.zeros(5)), th.lmh(), num_samples=200, seed=0,
                 progress=False, check=False)
    assert len(seen) <= SET_UP and r.stats["lmh()"]["acceptance_rate"] == 1.0
