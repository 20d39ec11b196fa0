"""Particle methods: resampling schemes, th.smc over markov chains (evidence, filtering, lineage).

Thresholds: χ² tests at p > 1e-3; z-tests at |z| < 4 (Bonferroni over the few tests in a
function, each p ≈ 6e-5 two-sided); fixed seeds throughout.
"""

from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

import thrifty as th
from thrifty import dist
from thrifty.diagnostics.kalman import kalman_filter, rts_smoother
from thrifty.errors import ModelError
from thrifty.inference.numerics import resampling
from thrifty.models import hmm
from thrifty.models.hmm import INITIAL, MEANS, OBSERVATIONS, TRANSITIONS
from thrifty.models.lds import generate_lds, lds, lds_matrices


# -- resampling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(resampling.SCHEMES))
def test_resampling_is_unbiased(name):
    """Each particle's expected number of offspring is n·w_i: Pearson χ² of the total offspring
    over R repeats against nR·w (exact for multinomial; the other schemes have smaller
    variance, so the test is conservative for them but still detects bias)."""
    rng = np.random.default_rng(1)
    w = np.array([0.02, 0.38, 0.1, 0.3, 0.2])
    n, R = 7, 20_000
    fn = resampling.scheme(name)
    totals = np.zeros(len(w))
    for _ in range(R):
        a = fn(w, n, rng)
        assert len(a) == n and np.all(np.diff(a) >= 0) and a.min() >= 0 and a.max() < len(w)
        totals += np.bincount(a, minlength=len(w))
    p = stats.chisquare(totals, n * R * w).pvalue
    assert p > 1e-3, (name, totals / R, n * w, p)


def test_low_variance_schemes_keep_the_integer_part():
    rng = np.random.default_rng(2)
    w = np.array([0.05, 0.45, 0.2, 0.3])
    for fn in (resampling.systematic, resampling.residual):
        for _ in range(200):
            counts = np.bincount(fn(w, 10, rng), minlength=4)
            assert np.all(counts >= np.floor(10 * w)) and np.all(counts <= np.ceil(10 * w))


def test_unknown_scheme_is_named():
    with pytest.raises(ValueError, match="resample='nope'"):
        resampling.scheme("nope")


# -- th.smc: evidence ----------------------------------------------------------------------------
T_LDS, D_LDS, R_LDS = 20, 2, 0.5
OMEGA, Q = 4 * np.pi / T_LDS, 0.1


@pytest.fixture(scope="module")
def lds_data():
    y, C, _ = generate_lds(T=T_LDS, D=D_LDS, r=R_LDS, seed=0)
    return y, C


def _z_ratio_test(log_z_hats, log_z):
    r = np.exp(np.asarray(log_z_hats) - log_z)
    z = (r.mean() - 1.0) / (r.std(ddof=1) / np.sqrt(len(r)))
    assert abs(z) < 4, (r.mean(), r.std(), z)


def test_smc_evidence_is_unbiased_on_the_lds(lds_data):
    """Mean of Ẑ/Z over 300 runs of 50 particles is 1 within its Monte Carlo error (Z: Kalman)."""
    y, C = lds_data
    ll, _, _ = kalman_filter(y, *lds_matrices(C, R_LDS, OMEGA, Q))
    prog = lds(y, C, R_LDS, omega=OMEGA, q=Q)
    _z_ratio_test([th.smc(prog, particles=50, seed=s).log_evidence for s in range(300)], ll)


def _hmm_log_evidence():
    """log p(y) of the 3-state HMM by the forward algorithm (states 0..17, y at 1..16)."""
    ys = OBSERVATIONS
    la = np.log(INITIAL)
    for t in range(1, len(ys) + 2):
        la = logsumexp(la[:, None] + np.log(TRANSITIONS), axis=0)
        if t <= len(ys):
            la = la + stats.norm.logpdf(ys[t - 1], MEANS, 1.0)
    return float(logsumexp(la))


@pytest.mark.parametrize("resample", ["systematic", "multinomial"])
def test_smc_evidence_is_unbiased_on_the_hmm(resample):
    ll = _hmm_log_evidence()
    _z_ratio_test(
        [th.smc(hmm(), particles=30, resample=resample, seed=s).log_evidence for s in range(300)],
        ll,
    )


# -- th.smc: filtering and lineage ---------------------------------------------------------------
def test_smc_filter_matches_kalman_at_the_last_step(lds_data):
    y, C = lds_data
    mats = lds_matrices(C, R_LDS, OMEGA, Q)
    _, fm, fP = kalman_filter(y, *mats)
    res = th.smc(lds(y, C, R_LDS, omega=OMEGA, q=Q), particles=20_000, seed=3)
    assert res["x.z"].shape == (20_000, T_LDS, 2)
    ess = res.ess[-1]
    for k in range(2):
        se = np.sqrt(fP[-1][k, k] / ess)
        assert abs(res.mean("x.z")[-1][k] - fm[-1][k]) < 4 * se
    # the smoothed mean at t = 0 from the ancestral paths (degenerate but consistent)
    ms, _ = rts_smoother(y, *mats)
    assert np.all(np.abs(res.mean("x.z")[0] - ms[0]) < 1.0)


@th.model
def walk(ys):
    def step(t, prev):
        z = th.sample("z", dist.Normal(0.0, 1.0))
        s = th.deterministic("s", prev + z)
        th.observe("y", dist.Normal(s, 0.5), ys[t])
        return s

    return th.markov("x", step, len(ys), 0.0)


def test_paths_follow_each_particles_ancestry():
    """With resampling at every step, every stored path is one particle's history:
    s_t = s_{t−1} + z_t along the path."""
    ys = np.cumsum(np.random.default_rng(0).normal(size=15))
    res = th.smc(walk(ys), particles=500, ess_threshold=1.0, seed=0)
    assert res.stats["resampling_events"] == 14
    s, z = res["x.s"], res["x.z"]
    np.testing.assert_allclose(s[:, 0], z[:, 0])
    np.testing.assert_allclose(s[:, 1:], s[:, :-1] + z[:, 1:])


def test_one_step_execution_per_generation():
    """The N particles run as one batch: step(t, prev) is called T times, not N·T."""
    calls = []

    @th.model
    def counted(ys):
        def step(t, prev):
            calls.append(t)
            z = th.sample("z", dist.Normal(prev, 1.0))
            th.observe("y", dist.Normal(z, 1.0), ys[t])
            return z

        return th.markov("x", step, len(ys), 0.0)

    th.smc(counted(np.zeros(12)), particles=1000, seed=0)
    assert calls == list(range(12))


def test_globals_must_be_given_and_are_shared(lds_data):
    y, C = lds_data
    with pytest.raises(ModelError, match=r"'omega'.*fixed="):
        th.smc(lds(y, C, R_LDS), particles=10, seed=0)
    a = th.smc(lds(y, C, R_LDS), particles=100, fixed={"omega": OMEGA, "q": Q}, seed=4)
    b = th.smc(lds(y, C, R_LDS, omega=OMEGA, q=Q), particles=100, seed=4)
    assert a.log_evidence == b.log_evidence
    np.testing.assert_array_equal(a["x.z"], b["x.z"])


def test_smc_rejects_bad_arguments(lds_data):
    y, C = lds_data
    prog = lds(y, C, R_LDS, omega=OMEGA, q=Q)
    with pytest.raises(ValueError, match="particles"):
        th.smc(prog, particles=0)
    with pytest.raises(ValueError, match="ess_threshold"):
        th.smc(prog, particles=10, ess_threshold=2.0)

    @th.model
    def no_chain():
        th.observe("y", dist.Normal(0.0, 1.0), 0.3)

    with pytest.warns(th.ReplayWarning):  # no chain: the general path (exact here)
        r = th.smc(no_chain(), particles=10)
    assert r.log_evidence == pytest.approx(stats.norm.logpdf(0.3))


def test_docstring_examples_run():
    import doctest
    import importlib

    for name in ("thrifty.inference.numerics.resampling", "thrifty.inference.particles.smc",
                 "thrifty.models.lds", "thrifty.diagnostics.kalman"):
        mod = importlib.import_module(name)
        result = doctest.testmod(mod, verbose=False, report=False)
        assert result.attempted > 0 and result.failed == 0, name


Counted = namedtuple("Counted", "z c")


@th.model
def counted_hmm(kind, start=False):
    """hmm()'s chain whose state is a pair (z_t, the number of steps in state 1 so far) kept
    as a tuple, a named tuple or a dict (the engine keeps a dict state as a read-only mapping);
    ``start``: the chain is given the initial state (0, 0) of that kind, else None."""
    ys = OBSERVATIONS

    def step(t, prev):
        z0, c0 = (None, 0) if prev is None else (prev["z"], prev["c"]) if kind == "dict" else prev
        z = th.sample("z", dist.Categorical(INITIAL if t == 0 else TRANSITIONS[z0]))
        if 1 <= t <= len(ys):
            th.observe("y", dist.Normal(MEANS[z], 1.0), ys[t - 1])
        c = th.deterministic("c", c0 + (z == 1))
        return {"dict": {"z": z, "c": c}, "named": Counted(z, c)}.get(kind, (z, c))

    init = {"dict": {"z": 0, "c": 0}, "named": Counted(0, 0)}.get(kind, (0, 0))
    th.markov("s", step, len(ys) + 2, init if start else None)


@pytest.fixture(scope="module")
def tuple_state_runs():
    """The runs of counted_hmm with a tuple state that the dict and named-tuple runs of the
    tests below must repeat (the same seeds), shared by their parametrizations."""
    return {
        "start": (th.smc(counted_hmm("tuple", True), particles=5, ess_threshold=1.0, seed=0),
                  th.infer(counted_hmm("tuple", True), th.pgibbs("s", 3), num_samples=60,
                           seed=2, progress=False)),
        "smc": [th.smc(counted_hmm("tuple"), particles=5, ess_threshold=1.0, seed=s)
                for s in range(5)],
        "pgibbs": {AS: th.infer(counted_hmm("tuple"), th.pgibbs("s", 3, ancestor_sampling=AS),
                                num_samples=60, seed=2, progress=False) for AS in (True, False)},
    }


@pytest.mark.parametrize("kind", ["dict", "named"])
def test_a_given_initial_state_of_any_kind_reaches_every_particle(kind, tuple_state_runs):
    """The initial state a chain is given, copied to each particle: a named tuple raised
    TypeError (``Counted.__new__() missing 1 required positional argument``: it was rebuilt
    from a generator) in th.smc and th.pgibbs, and so in th.infer's default kernel for such a
    chain (PGAS); a dict or named tuple now makes the same draws as a tuple (same seeds)."""
    a, a_pg = tuple_state_runs["start"]
    b = th.smc(counted_hmm(kind, True), particles=5, ess_threshold=1.0, seed=0)
    assert b.log_evidence == a.log_evidence
    np.testing.assert_array_equal(b["s.z"], a["s.z"])
    b = th.infer(counted_hmm(kind, True), th.pgibbs("s", 3), num_samples=60, seed=2,
                 progress=False)
    np.testing.assert_array_equal(b["s.z"], a_pg["s.z"])
    np.testing.assert_array_equal(b["s.c"], np.cumsum(b["s.z"] == 1, axis=2))


@pytest.mark.parametrize("kind", ["dict", "named"])
def test_dict_and_named_tuple_states_follow_each_particles_ancestry(kind, tuple_state_runs):
    """Resampling reindexes every entry of a tuple, named tuple or dict state (003 §3: a
    particle's state is its own history): along every stored path the count c_t is the number
    of z_s = 1 up to t, and th.smc and th.pgibbs (PGAS and CSMC) make the same draws as with a
    tuple state (same seeds).  A dict state kept its entries unresampled: Ẑ/Z averaged
    1.10 ± 0.03 (z = 3.9, 2,000 runs of 3 particles on a 5-step HMM) and CSMC's smoothing
    marginals were off by 16–20 standard errors; a named tuple raised TypeError."""
    for s, a in enumerate(tuple_state_runs["smc"]):
        b = th.smc(counted_hmm(kind), particles=5, ess_threshold=1.0, seed=s)
        assert b.log_evidence == a.log_evidence
        np.testing.assert_array_equal(b["s.c"], np.cumsum(b["s.z"] == 1, axis=1))
        np.testing.assert_array_equal(b["s.z"], a["s.z"])
    for AS, a in tuple_state_runs["pgibbs"].items():
        b = th.infer(counted_hmm(kind), th.pgibbs("s", 3, ancestor_sampling=AS), num_samples=60,
                     seed=2, progress=False)
        np.testing.assert_array_equal(b["s.z"], a["s.z"])
        np.testing.assert_array_equal(b["s.c"], np.cumsum(b["s.z"] == 1, axis=2))


Walked = namedtuple("Walked", "x n")


@th.model
def counted_walk(named: bool, in_plate: bool = False):
    """A random walk whose state (x_t, t) starts at a tuple or named-tuple ``init``, alone or
    as the chain of each of two plate elements."""
    ys = np.array([[0.3, -0.4, 0.9], [1.1, 0.2, -0.6]])
    make = Walked if named else (lambda x, n: (x, n))

    def step(t, prev, row):
        x = th.sample("x", dist.Normal(prev[0], 1.0))
        th.observe("y", dist.Normal(x, 0.5), ys[row, t])
        return make(x, prev[1] + 1)

    if in_plate:
        with th.plate("g", 2) as i:
            th.markov("c", step, 3, make(0.0, 0), i)
    else:
        th.markov("c", step, 3, make(0.0, 0), 0)


@pytest.mark.parametrize("in_plate", [False, True])
def test_a_named_tuple_initial_state_runs_in_particle_methods(in_plate):
    """The initial state is given one entry per particle whatever its kind: a named tuple
    ``init`` raised TypeError (its class was called with one generator argument) in th.smc,
    th.pgibbs and th.pmmh.  The draws are those of the same chain with a tuple state."""
    chain = "g.c" if in_plate else "c"
    a, b = (th.smc(counted_walk(k, in_plate), particles=5, seed=3) for k in (False, True))
    assert b.log_evidence == a.log_evidence
    np.testing.assert_array_equal(b[chain + ".x"], a[chain + ".x"])
    a, b = (th.infer(counted_walk(k, in_plate), th.pgibbs(chain, 3), num_samples=20, seed=2,
                     progress=False) for k in (False, True))
    np.testing.assert_array_equal(b[chain + ".x"], a[chain + ".x"])


def test_the_evidence_with_fixed_values_is_of_the_observations_given_them():
    """th.smc with fixed={"s": 0.7} on a plate of three random walks (named-tuple states, each
    step observed with noise s): log Ẑ estimates log p(y | s) — the sum of the three walks'
    Kalman log-likelihoods — not log p(y, s) (0.47 lower here, the half-normal density of s).
    z-test of the mean of log Ẑ over 6 runs of 2,000 particles, |z| < 4 (its bias,
    −Var/2 ≈ −0.002, is far below the standard error)."""
    ys = np.array([[0.1, 0.3, -0.2, 0.5], [1.0, 0.8, 1.1, 0.2], [0.0, -0.5, 0.4, 0.3]])

    @th.model
    def walks():
        s = th.sample("s", dist.HalfNormal(1.0))
        with th.plate("g", 3) as i:
            def step(t, prev):
                x = th.sample("x", dist.Normal(prev.x, 1.0))
                th.observe("y", dist.Normal(x, s), ys[i, t])
                return Walked(x, prev.n + 1)

            th.markov("c", step, 4, Walked(0.0, 0))

    one = np.eye(1)
    exact = sum(kalman_filter(y[:, None], one, one, one, 0.49 * one, np.zeros(1))[0] for y in ys)
    le = np.array([th.smc(walks(), particles=2000, fixed={"s": 0.7}, seed=k).log_evidence
                   for k in range(6)])
    z = (le.mean() - exact) / (le.std(ddof=1) / np.sqrt(len(le)))
    assert abs(z) < 4, (le.mean(), exact, z)


YA, YB = np.array([0.3, -1.2, 0.8]), np.array([2.0, -2.5, 0.4])
A2, P2, MU2 = np.array([[0.8, 0.2], [0.3, 0.7]]), np.array([0.6, 0.4]), np.array([-1.0, 1.0])


@th.model
def two_chains(closure=False):
    """Chain b's observations read chain a's states (passed as an argument, or — ``closure`` —
    a value computed from them before b); an observation after both reads both."""
    def step_a(t, prev):
        z = th.sample("z", dist.Categorical(P2 if t == 0 else A2[prev]))
        th.observe("y", dist.Normal(MU2[z], 1.0), YA[t])
        return z

    xs = th.markov("a", step_a, 3)
    m = MU2[xs[-1]] if closure else 0.0

    def step_b(t, prev, xs):
        z = th.sample("z", dist.Categorical(P2 if t == 0 else A2[prev]))
        th.deterministic("d", xs[t])
        th.observe("y", dist.Normal(MU2[z] + 2 * MU2[xs[t]] + m, 0.7), YB[t])
        return z

    zs = th.markov("b", step_b, 3, None, xs)
    th.observe("end", dist.Normal(MU2[xs[0]] + MU2[zs[-1]], 1.0), 0.5)


def _two_chains_log_evidence():
    import itertools

    def chain_lp(z, ys, shift, sd):
        return (np.log(P2[z[0]]) + sum(np.log(A2[z[t - 1], z[t]]) for t in (1, 2))
                + stats.norm.logpdf(ys, MU2[list(z)] + shift, sd).sum())

    return logsumexp([
        chain_lp(a, YA, 0.0, 1.0) + chain_lp(b, YB, 2 * MU2[list(a)], 0.7)
        + stats.norm.logpdf(0.5, MU2[a[0]] + MU2[b[-1]], 1.0)
        for a in itertools.product([0, 1], repeat=3) for b in itertools.product([0, 1], repeat=3)
    ])


def test_a_later_chain_reads_an_earlier_chains_states_along_each_particles_ancestry():
    """th.markov's states in a particle run follow the later chains' resampling (a particle is
    its whole history, 003 §3): chain b's steps and the observation after it read the states
    of chain a of the particles they hold — along every stored path b's record of a's state
    is a's state, and Ẑ/Z of 800 runs of 3 particles (resampling at every step) is 1 within
    4 standard errors (exact Z by enumerating the 64 paths).  They kept the order of a's end:
    the paths disagreed in most runs and Ẑ/Z was 0.75 ± 0.04 (z = −6.6, 3,000 runs).  A value
    computed from a's states before b resamples cannot follow it: refused, naming both."""
    for s in range(10):
        r = th.smc(two_chains(), particles=4, ess_threshold=1.0, seed=s)
        np.testing.assert_array_equal(r["b.d"], r["a.z"])
    _z_ratio_test([th.smc(two_chains(), particles=3, ess_threshold=1.0, seed=s).log_evidence
                   for s in range(800)], _two_chains_log_evidence())
    with pytest.raises(ModelError, match="chain 'a' were read outside its steps before chain 'b'"):
        th.smc(two_chains(closure=True), particles=4, ess_threshold=1.0, seed=0)


# -- th.pgibbs: particle Gibbs (CSMC) and PGAS ---------------------------------------------------
T_PG = 15


@pytest.fixture(scope="module")
def pg_runs():
    y, C, _ = generate_lds(T=T_PG, D=2, r=0.5, seed=1)
    omega = 4 * np.pi / T_PG
    ms, Ps = rts_smoother(y, *lds_matrices(C, 0.5, omega, Q))
    out = {}
    for AS in (True, False):
        r = th.infer(lds(y, C, 0.5, omega=omega, q=Q), th.pgibbs("x", 10, ancestor_sampling=AS),
                     num_samples=1500, burn_in=100, seed=5, progress=False)
        out[AS] = r
    return out, ms, Ps


@pytest.mark.parametrize("AS", [True, False], ids=["PGAS", "CSMC"])
def test_pgibbs_marginals_match_the_rts_smoother(pg_runs, AS):
    """z-tests of the state means at t = 0, T/2, T−1 (both coordinates) against the RTS
    smoother, standard errors from the ESS; 6 tests, |z| < 3.5 (Bonferroni, ≈ 0.3 % overall)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    runs, ms, Ps = pg_runs
    x = runs[AS]["x.z"][0]
    assert x.shape == (1500, T_PG, 2)
    for t in (0, T_PG // 2, T_PG - 1):
        for k in range(2):
            ess = az_ess(x[None, :, t, k])
            z = (x[:, t, k].mean() - ms[t][k]) / np.sqrt(Ps[t][k, k] / ess)
            assert abs(z) < 3.5, (AS, t, k, z, ess)


def test_pgas_ess_is_flat_in_t(pg_runs):
    """PGAS with 10 particles: the ESS of the first state is at least half the last one's (003
    Fig. 1); iterated CSMC collapses at small t (printed, not asserted)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    runs, _, _ = pg_runs
    ess = {AS: [az_ess(runs[AS]["x.z"][0][None, :, t, 0]) for t in (0, T_PG - 1)]
           for AS in runs}
    print("ESS at t=0, t=T-1: PGAS", ess[True], "CSMC", ess[False])
    assert ess[True][0] >= 0.5 * ess[True][1]
    stats_ = runs[True].stats
    label = next(k for k in stats_ if k.startswith("pgibbs"))
    assert stats_[label]["particles_per_step"] == 10
    assert stats_[label]["reference_ancestor_changes_per_step"] > 0


@th.model
def ar1(ys):
    def step(t, prev):
        h = th.sample("h", dist.Normal(0.8 * prev, 1.0))
        th.observe("y", dist.Normal(h, 0.7), ys[t])
        return h

    return th.markov("h", step, len(ys), 0.0)


@pytest.mark.parametrize("AS", [True, False], ids=["PGAS", "CSMC"])
def test_pgibbs_geweke(AS):
    from thrifty.diagnostics import geweke

    g = geweke(ar1(np.zeros(4)), th.pgibbs("h", 5, ancestor_sampling=AS), num_samples=3000,
               seed=7)
    assert g.z and g.min_p > 1e-3 / len(g.z), g


def test_pgibbs_composes_with_mh_and_names_its_errors():
    y, C, _ = generate_lds(T=10, D=2, r=0.5, seed=2)
    prog = lds(y, C, 0.5, omega=4 * np.pi / 10)
    k = th.cycle([th.pgibbs("x", 8), th.mh("q", th.drift(0.03))])
    r = th.infer(prog, k, num_samples=200, seed=0, progress=False)
    assert r["q"].shape == (1, 200) and np.all(r["q"] > 0)
    assert len(np.unique(r["x.z"][0, :, 0, 0])) > 20  # the chain moves
    with pytest.raises(th.errors.SelectionError,
                       match=r"no markov chain 'nope'.*chains are \['x'\]"):
        th.infer(prog, th.pgibbs("nope", 8), num_samples=5, seed=0, progress=False)
    with pytest.raises(ValueError, match="multinomial"):
        th.pgibbs("x", 8, resample="systematic")

    @th.model
    def sometimes():  # a choice in the even steps only
        def step(t, prev):
            z = th.sample("z", dist.Normal(prev, 1.0))
            if t % 2 == 0:
                th.sample("e", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(z, 1.0), 0.5)
            return z

        th.markov("x", step, 6, 0.0)

    with pytest.raises(th.errors.SelectionError,
                       match=r"chain 'x' its site 'x.e' is not present in every step"):
        th.infer(sometimes(), th.pgibbs("x", 5), num_samples=5, seed=0, progress=False)

    @th.model
    def plate_in_step():  # the same choices in every step, and a plate in each
        def step(t, prev):
            z = th.sample("z", dist.Normal(prev, 1.0))
            with th.plate("obs", 3) as i:
                th.observe("y", dist.Normal(z, 1.0), np.full(3, 0.5)[i])
            return z

        th.markov("x", step, 4, 0.0)

    with pytest.raises(th.errors.SelectionError,
                       match=r"step 0 of the chain 'x' holds a plate of its own \(x\.0\.obs\)"
                             r".*trailing axis"):
        th.infer(plate_in_step(), th.pgibbs("x", 5), num_samples=5, seed=0, progress=False)

    @th.model
    def plate_after_the_chain(y):  # the states read by a plate after the chain
        xs = th.markov("x", lambda t, prev: th.sample("z", dist.Normal(prev, 1.0)), len(y), 0.0)
        xs = np.asarray(list(xs))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(xs[i], 1.0), y[i])

    with pytest.raises(ModelError, match=r"code after a chain once for all 5 particles.*"
                                         r"inside the chain's step"):
        th.infer(plate_after_the_chain(np.zeros(4)), th.pgibbs("x", 5), num_samples=5, seed=0,
                 progress=False)


@th.model
def observed_after_the_chain(t_read):
    """A 4-step HMM and an observation after the chain of its state at step ``t_read``."""
    def step(t, prev):
        z = th.sample("z", dist.Categorical(P2 if t == 0 else A2[prev]))
        th.observe("y", dist.Normal(MU2[z], 1.0), YA.tolist()[t % 3])
        return z

    xs = th.markov("s", step, 4)
    th.observe("end", dist.Normal(MU2[xs[t_read]], 1.0), 1.0)


@pytest.mark.parametrize("t_read", [0, 3])
def test_pgas_refuses_an_observation_after_the_chain_that_the_ancestors_change(t_read):
    """PGAS's ancestor weights (003 §4.4) rescore the reference's suffix in the chain's steps:
    an observation after the chain of its state at step 0 depends on the reference's drawn
    ancestors and is refused (it was left out: P(z_0 = 1 | y) 0.50 against 0.83, z = −28); iterated
    CSMC weighs it at the end and is exact.  The last state, the last step's choice, is the
    reference's own whatever its ancestors: PGAS is exact with it.  z-tests of P(z_t = 1)
    against enumeration, ESS-based standard errors, Bonferroni over the 4 steps."""
    import itertools

    from stat_helpers import cell_z, z_threshold

    ys = np.array([YA.tolist()[t % 3] for t in range(4)])
    paths = np.array(list(itertools.product([0, 1], repeat=4)))
    lp = np.array([np.log(P2[z[0]]) + np.log(A2[z[:-1], z[1:]]).sum()
                   + stats.norm.logpdf(ys, MU2[z], 1.0).sum()
                   + stats.norm.logpdf(1.0, MU2[z[t_read]], 1.0) for z in paths])
    exact = np.exp(lp - logsumexp(lp)) @ paths
    AS = t_read == 3
    r = th.infer(observed_after_the_chain(t_read), th.pgibbs("s", 3, ancestor_sampling=AS),
                 num_samples=1500, burn_in=100, seed=3, progress=False)
    z = cell_z([r["s.z"][0, :, t] == 1 for t in range(4)], exact)
    assert np.abs(z).max() < z_threshold(4), (AS, z)
    if not AS:
        with pytest.raises(ModelError, match=r"observes after the chain 's' .* step\(s\) 0: "
                                             "ancestor sampling"):
            th.infer(observed_after_the_chain(0), th.pgibbs("s", 3), num_samples=5, seed=0,
                     progress=False)


def test_conditional_smc_on_a_block_of_steps_returns_the_states_of_each_particles_ancestry():
    """th.pgibbs(th.ordered_range(...)) (iterated CSMC on steps 0..2, then 2..3): what th.markov
    returns for the observation after the chain is each particle's states along its ancestry
    (it was each generation's members in their order, not the particles' histories: P(z_1 = 1)
    0.30 against 0.59, largest |z| 10.9 over the steps, 3,000 draws).  z-tests of P(z_t = 1)
    against enumeration, ESS-based standard errors, Bonferroni over the 4 steps."""
    import itertools

    from stat_helpers import cell_z, z_threshold

    ys = np.array([YA.tolist()[t % 3] for t in range(4)])
    paths = np.array(list(itertools.product([0, 1], repeat=4)))
    lp = np.array([np.log(P2[z[0]]) + np.log(A2[z[:-1], z[1:]]).sum()
                   + stats.norm.logpdf(ys, MU2[z], 1.0).sum()
                   + stats.norm.logpdf(1.0, MU2[z[1]], 1.0) for z in paths])
    blocks = [th.pgibbs(th.ordered_range("s", lo, hi), 3, ancestor_sampling=False)
              for lo, hi in ((0, 2), (2, 3))]
    r = th.infer(observed_after_the_chain(1), th.cycle(blocks), num_samples=1500, burn_in=100,
                 seed=3, progress=False)
    z = cell_z([r["s.z"][0, :, t] == 1 for t in range(4)], np.exp(lp - logsumexp(lp)) @ paths)
    assert np.abs(z).max() < z_threshold(4), z


# -- th.pmmh ---------------------------------------------------------------------------------------
@functools.cache
def _kalman_grid_posterior_of_q():
    """The data of the PMMH test and q | y on a grid of 1,200 values (computed once)."""
    T, r = 20, 0.5
    y, C, _ = generate_lds(T=T, D=2, r=r, seed=0)
    omega = 4 * np.pi / T
    qs = np.linspace(0.005, 0.6, 1200)
    lp = np.array([kalman_filter(y, *lds_matrices(C, r, omega, q))[0]
                   + dist.Gamma(10.0, 100.0).log_prob(q) for q in qs])
    w = np.exp(lp - lp.max())
    w /= w.sum()
    for a in (y, C, qs, w):
        a.flags.writeable = False
    return y, C, omega, qs, w


@pytest.mark.parametrize("proposal", ["drift", "prior"])
def test_pmmh_matches_the_kalman_grid_posterior_of_q(proposal):
    """q | y on a grid from the exact Kalman likelihood × Gamma(10, 100) prior; z-tests of the
    PMMH means of q and q² with ESS-based standard errors, |z| < 3.5 (2 tests per run)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    r = 0.5
    y, C, omega, qs, w = _kalman_grid_posterior_of_q()
    prop = th.drift(0.04) if proposal == "drift" else th.prior()
    res = th.infer(lds(y, C, r, omega=omega), th.pmmh("q", 60, prop), num_samples=2000,
                   burn_in=200, seed=11, progress=False)
    q = res["q"][0]
    for f in (lambda v: v, lambda v: v**2):
        exact = float((w * f(qs)).sum())
        sd = float(np.sqrt((w * (f(qs) - exact) ** 2).sum()))
        ess = az_ess(f(q)[None])
        z = (f(q).mean() - exact) / (sd / np.sqrt(ess))
        assert abs(z) < 3.5, (proposal, z, ess)
    label = next(k for k in res.stats if k.startswith("pmmh"))
    assert 0.1 < res.stats[label]["acceptance_rate"] < 0.95
    # the chain's states are updated with θ (a trajectory drawn from the particles)
    assert len(np.unique(res["x.z"][0, :, 0, 0])) > 50


Y_MIX, OFFSETS = np.array([1.3, -0.9, 1.6]), np.array([-1.0, 0.0, 1.0])
P_M, P_K = np.array([0.2, 0.3, 0.5]), np.array([0.3, 0.4, 0.3])


@th.model
def sticky_offsets():
    """A 3-step binary chain observed with two discrete offsets m and k."""
    m = th.sample("m", dist.Categorical(P_M))
    k = th.sample("k", dist.Categorical(P_K))

    def step(t, prev):
        z = th.sample("z", dist.Bernoulli(0.5 if prev is None else np.where(prev == 1, 0.8, 0.2)))
        th.observe("y", dist.Normal(2.0 * z - 1.0 + OFFSETS[m] + 0.5 * OFFSETS[k], 0.6), Y_MIX[t])
        return z

    th.markov("s", step, len(Y_MIX), None)


def test_pmmh_cycled_with_a_kernel_that_changes_the_trace_keeps_the_posterior():
    """th.pmmh("m", 2) in a cycle with Gibbs on k: after k changed, the kept estimate Ẑ(m) came
    from particles of the old state, and a new SMC sweep would be Monte Carlo within
    Metropolis; PMMH refreshes it by conditional SMC with the chain's trajectory as the
    reference (Andrieu, Doucet & Holenstein 2010, §4).  z-tests of P(m = j) and P(k = j)
    against enumeration (9 × 8 paths), ESS-based standard errors, Bonferroni over the 6 cells
    (stat_helpers).  Re-estimating by a new sweep gave P(m = 0) = 0.13 against 0.025 and
    P(k = 2) = 0.36 against 0.28 (z = 13.4 and 7.8, 3,000 draws)."""
    from stat_helpers import cell_z, z_threshold

    lp = np.array([[np.log(P_M[m] * P_K[k]) + logsumexp([
        np.log(0.5) + np.log(np.where(np.diff(z) == 0, 0.8, 0.2)).sum()
        + stats.norm.logpdf(Y_MIX, 2.0 * np.array(z) - 1.0 + OFFSETS[m] + 0.5 * OFFSETS[k],
                            0.6).sum()
        for z in np.ndindex(2, 2, 2)]) for k in range(3)] for m in range(3)])
    w = np.exp(lp - logsumexp(lp))
    r = th.infer(sticky_offsets(), th.cycle([th.pmmh("m", 2, th.prior()), th.gibbs("k")]),
                 num_samples=3000, burn_in=100, seed=4, progress=False)
    z = np.concatenate([cell_z([r["m"][0] == j for j in range(3)], w.sum(1)),
                        cell_z([r["k"][0] == j for j in range(3)], w.sum(0))])
    assert np.abs(z).max() < z_threshold(6), z
    assert r.stats[next(k for k in r.stats if k.startswith("pmmh"))]["refreshes_per_step"] > 0


@th.model
def offset_with_a_child():
    """m (updated by PMMH) is the parent of s, a choice outside the chain PMMH does not update."""
    m = th.sample("m", dist.Categorical(P_M))
    s = th.sample("s", dist.Normal(OFFSETS[m], 0.3))

    def step(t, prev):
        z = th.sample("z", dist.Bernoulli(0.5 if prev is None else np.where(prev == 1, 0.8, 0.2)))
        th.observe("y", dist.Normal(2.0 * z - 1.0 + 0.5 * OFFSETS[m] + s, 0.6), Y_MIX[t])
        return z

    th.markov("c", step, len(Y_MIX), None)


def test_pmmh_with_prior_proposals_weighs_the_choices_it_does_not_update():
    """th.pmmh("m", th.prior()) with s ~ N(offset(m), 0.3) held at 0.5: the prior proposal
    cancels p(m) only, and the ratio keeps p(s | m') / p(s | m) (000 Eq. 2–4: s absorbs the
    change of m).  z-tests of P(m = j | s, y) against enumeration, ESS-based standard errors,
    Bonferroni over the 3 cells.  Without the factor P(m = 0) was 0.24 against 5e-6 (z = 1,922)."""
    from stat_helpers import cell_z, z_threshold

    lp = np.array([np.log(P_M[m]) + stats.norm.logpdf(0.5, OFFSETS[m], 0.3) + logsumexp([
        np.log(0.5) + np.log(np.where(np.diff(z) == 0, 0.8, 0.2)).sum()
        + stats.norm.logpdf(Y_MIX, 2.0 * np.array(z) - 1.0 + 0.5 * OFFSETS[m] + 0.5, 0.6).sum()
        for z in np.ndindex(2, 2, 2)]) for m in range(3)])
    r = th.infer(offset_with_a_child(), th.pmmh("m", 20, th.prior()), num_samples=1000,
                 init={"s": 0.5}, seed=0, progress=False)
    z = cell_z([r["m"][0] == j for j in range(3)], np.exp(lp - logsumexp(lp)))
    assert np.abs(z).max() < z_threshold(3), z


# -- th.smc on programs without chains: a generation per top-level observation -------------------
YS_BRANCH = [0.3, 1.4, 2.9, 2.2]
P_D = np.array([0.5, 0.3, 0.2])


@th.model
def branching(ys):
    """Recursion (a geometric prior) and stochastic branching (003 §4-style control flow)."""

    def geo(k):
        if th.sample(("g", k), dist.Bernoulli(0.6)):
            return k
        return geo(k + 1)

    x = float(geo(0))
    for j, y in enumerate(ys):
        if th.sample(("c", j), dist.Bernoulli(0.5)):
            x = x + th.sample(("d", j), dist.Categorical(P_D))
        th.observe(("y", j), dist.Normal(x, 1.0), y)
    return x


def _branching_log_evidence(ys):
    """By enumeration: the geometric truncated at 60 (tail 0.4⁶⁰), 4^K branch/increment paths
    (all the paths' log-densities at once)."""
    import itertools

    opts = np.array(list(itertools.product([-1, 0, 1, 2], repeat=len(ys))))  # −1: no branch
    lp_opts = len(ys) * np.log(0.5) + np.where(opts < 0, 0.0, np.log(P_D)[opts]).sum(axis=1)
    x = np.cumsum(np.maximum(opts, 0), axis=1)  # each path's increments so far
    g = np.arange(60)
    lg = g * np.log(0.4) + np.log(0.6)
    ll = stats.norm.logpdf(np.asarray(ys), g[:, None, None] + x[None], 1.0).sum(axis=2)
    return float(logsumexp(lg[:, None] + lp_opts[None] + ll))


def test_smc_evidence_is_unbiased_with_stochastic_control_flow():
    ll = _branching_log_evidence(YS_BRANCH)
    with pytest.warns(th.ReplayWarning, match="O\\(N·K²\\)"):
        first = th.smc(branching(YS_BRANCH), particles=30, seed=0)
    assert first.stats["generations"] == len(YS_BRANCH) + 1  # + the programs' ends
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", th.ReplayWarning)
        log_z = [th.smc(branching(YS_BRANCH), particles=30, seed=s).log_evidence
                 for s in range(300)]
    _z_ratio_test(log_z, ll)


def test_replay_refuses_what_it_cannot_replay():
    """The general path replays a particle's choices by address: plates, mem and a chain after
    choices outside it are refused by name."""
    import warnings

    @th.model
    def with_plate():
        with th.plate("data", 3) as i:
            th.observe("y", dist.Normal(0.0, 1.0), np.zeros(3)[i])

    @th.model
    def with_mem():
        f = th.mem("f", lambda k: dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(f(0), 1.0), 0.3)

    @th.model
    def with_chain_after():
        s = th.sample("s", dist.Gamma(2.0, 2.0))
        th.observe("y0", dist.Normal(0.0, s), 0.1)

        def step(t, prev):
            return th.sample("x", dist.Normal(0.0 if prev is None else prev, s))

        th.markov("walk", step, 3)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", th.ReplayWarning)
        with pytest.raises(ModelError, match=r"plate 'data'.*sample, observe, factor"):
            th.smc(with_plate(), particles=5, seed=0)
        with pytest.raises(ModelError, match=r"th\.mem"):
            th.smc(with_mem(), particles=5, seed=0)
        with pytest.raises(ModelError, match=r"markov chain 'walk'.*'s'"):
            th.smc(with_chain_after(), particles=5, seed=0)


def test_replay_cost_is_reported_and_quadratic_in_observations():
    """Site executions: each generation replays the prefix, so K = 8 observations cost about
    (8/4)² = 4× the site executions of K = 4 (between 2.5× and 5.5×: the geometric prefix and
    the random branches add noise), for the same number of particles."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", th.ReplayWarning)
        s4 = th.smc(branching(YS_BRANCH), particles=200, seed=1).stats["site_executions"]
        s8 = th.smc(branching(YS_BRANCH * 2), particles=200, seed=1).stats["site_executions"]
    assert 2.5 < s8 / s4 < 5.5, (s4, s8)


# -- chains inside a plate: one group of particles per element, all in one batch ------------------
@th.model
def ar_plate(Y, phi=0.8, sig=1.0, tau=0.7):
    B, T = Y.shape
    with th.plate("series", B) as i:

        def step(t, prev):
            h = th.sample("h", dist.Normal(phi * prev, sig))
            th.observe("y", dist.Normal(h, tau), Y[i, t])
            return h

        th.markov("h", step, T, 0.0)


def _ar_kalman(y):
    return (y[:, None], 0.8 * np.eye(1), np.eye(1), np.eye(1), 0.49 * np.eye(1), np.zeros(1))


Y_PLATE = np.random.default_rng(0).normal(size=(3, 6))


def test_smc_over_a_plate_of_chains():
    """Each element has its own particles and weights; Ẑ = ∏ Ẑ_b is unbiased for ∏ Z_b."""
    ll = sum(kalman_filter(*_ar_kalman(y))[0] for y in Y_PLATE)
    r = th.smc(ar_plate(Y_PLATE), particles=400, seed=0)
    assert r["series.h.h"].shape == (400, 3, 6) and r.weights.shape == (400, 3)
    assert r.stats["groups"] == 3
    _z_ratio_test([th.smc(ar_plate(Y_PLATE), particles=30, seed=s).log_evidence
                   for s in range(300)], ll)


def test_pgibbs_on_a_plate_of_chains_matches_the_smoother():
    """PGAS on every element's chain at once: z-tests of the state means of each element at
    t = 0 and T−1 against the RTS smoother (6 tests, |z| < 3.5)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    res = th.infer(ar_plate(Y_PLATE), th.pgibbs("series.h", 10), num_samples=1500, burn_in=50,
                   seed=3, progress=False)
    h = res["series.h.h"][0]
    assert h.shape == (1500, 3, 6)
    for b in range(3):
        ms, Ps = rts_smoother(*_ar_kalman(Y_PLATE[b]))
        for t in (0, 5):
            ess = az_ess(h[None, :, b, t])
            z = (h[:, b, t].mean() - ms[t, 0]) / np.sqrt(Ps[t, 0, 0] / ess)
            assert abs(z) < 3.5, (b, t, z, ess)


@th.model
def ar_plate_init(Y, init):
    """``ar_plate`` with each element's chain started at its own state ``init[i]``."""
    B, T = Y.shape
    with th.plate("series", B) as i:

        def step(t, prev):
            h = th.sample("h", dist.Normal(0.8 * prev, 1.0))
            th.observe("y", dist.Normal(h, 0.7), Y[i, t])
            return h

        th.markov("h", step, T, init[i])


def test_pgibbs_on_a_plate_of_chains_started_per_element_matches_the_smoother():
    """``init[i]``: in the particle batch the plate's index repeats each element once per
    particle, so the initial state already has one value per member (it must not get another
    particle axis).  z-tests of the state means of each element at t = 0 and T−1 against the
    RTS smoother started at that element's state (6 tests, |z| < 3.5)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    init = np.array([-1.5, 0.0, 1.5])
    res = th.infer(ar_plate_init(Y_PLATE, init), th.pgibbs("series.h", 10), num_samples=1500,
                   burn_in=50, seed=3, progress=False)
    h = res["series.h.h"][0]
    for b in range(3):
        y, A, Q, C, R, _ = _ar_kalman(Y_PLATE[b])
        ms, Ps = rts_smoother(y, A, Q, C, R, np.array([init[b]]))
        for t in (0, 5):
            ess = az_ess(h[None, :, b, t])
            z = (h[:, b, t].mean() - ms[t, 0]) / np.sqrt(Ps[t, 0, 0] / ess)
            assert abs(z) < 3.5, (b, t, z, ess)


def test_a_chain_in_a_plate_refuses_one_initial_state_shared_by_its_elements():
    """A 2-d initial state given once for every element is refused at th.markov, naming the
    initial state (not the first step's distribution, which its shape would break)."""
    @th.model
    def shared_init(Y):
        with th.plate("series", Y.shape[0]) as i:

            def step(t, prev):
                h = th.sample("h", dist.Normal(0.8 * prev, 1.0))
                th.observe("y", dist.Normal(h, 0.7), Y[i, t])
                return h

            th.markov("h", step, Y.shape[1], np.zeros(2))

    with pytest.raises(ModelError, match=r"th\.markov .*'h'.* initial state has shape \(2,\) "
                                         r"for 3 executed element"):
        th.infer(shared_init(np.zeros((3, 4, 2))), th.lmh(), num_samples=2, progress=False)


def test_stochastic_volatility_composes_particle_gibbs_with_subsampled_mh():
    """000 §4.3's inference program runs: PGAS on 200 series' states, subsampled MH (sections:
    the series) on φ, MH on σ²."""
    from thrifty.models import generate_sv, sv

    x = generate_sv(B=200, T=5, seed=0)
    k = th.cycle([th.pgibbs("series.h", 10),
                  th.subsampled_mh("phi", batch_size=20, epsilon=1e-3, proposal=th.drift(0.02)),
                  th.mh("sigma2", th.drift(0.002))])
    r = th.infer(sv(x), k, num_samples=100, seed=0, progress=False)
    assert r["series.h.h"].shape == (1, 100, 200, 5)
    assert 0 < r["phi"].min() and r["phi"].max() < 1 and np.all(r["sigma2"] > 0)
    assert len(np.unique(r["phi"])) > 10


@pytest.mark.parametrize("AS", [True, False], ids=["PGAS", "CSMC"])
def test_pgibbs_on_ordered_ranges_matches_the_smoother(AS):
    """Two blocks of steps, each updated by conditional SMC with the rest of the chain held
    fixed (the block's first state drawn given the state before it, its last weighted by the
    reference's suffix): z-tests at both ends of both blocks (8 tests, |z| < 3.5)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    T = 12
    y, C, _ = generate_lds(T=T, D=2, r=0.5, seed=4)
    omega = 4 * np.pi / T
    ms, Ps = rts_smoother(y, *lds_matrices(C, 0.5, omega, Q))
    k = th.cycle([th.pgibbs(th.ordered_range("x", 0, 5), 10, ancestor_sampling=AS),
                  th.pgibbs(th.ordered_range("x", 6, 11), 10, ancestor_sampling=AS)])
    res = th.infer(lds(y, C, 0.5, omega=omega, q=Q), k, num_samples=1500, burn_in=50,
                   seed=6, progress=False)
    x = res["x.z"][0]
    for t in (0, 5, 6, 11):
        for c in range(2):
            ess = az_ess(x[None, :, t, c])
            z = (x[:, t, c].mean() - ms[t][c]) / np.sqrt(Ps[t][c, c] / ess)
            assert abs(z) < 3.5, (AS, t, c, z, ess)
    assert any("ordered_range('x', 0, 5)" in k for k in res.stats)


@pytest.mark.parametrize("AS", [True, False], ids=["PGAS", "CSMC"])
def test_pgibbs_posterior_variances_match_the_smoother(AS):
    """The conditional resampling must give the N − 1 free particles iid ancestors (a sorted
    multinomial draw with its first entry replaced by the reference's inflated the variances
    by ≈ 15 %).  Statistic per draw: the mean over t and both coordinates of
    (z_t − m_t)² / P_t (expectation 1 under the exact smoother); z-test with an ESS-based
    standard error, |z| < 4.  (That fault moves the PGAS chain's statistic far more than the
    CSMC chain's, whose |z| stays under 4 with it: the law of the resampling itself is tested
    exactly by ``test_conditional_resampling_draws_the_free_particles_ancestors_iid``.)"""
    from thrifty.diagnostics._arviz import ess as az_ess

    T = 20
    y, C, _ = generate_lds(T=T, D=2, r=0.5, seed=0)
    omega = 4 * np.pi / T
    ms, Ps = rts_smoother(y, *lds_matrices(C, 0.5, omega, Q))
    res = th.infer(lds(y, C, 0.5, omega=omega, q=Q), th.pgibbs("x", 5, ancestor_sampling=AS),
                   num_samples=3000, burn_in=100, seed=8, progress=False)
    x = res["x.z"][0]
    var = np.stack([Ps[:, 0, 0], Ps[:, 1, 1]], axis=1)
    stat = (((x - ms) ** 2) / var).mean(axis=(1, 2))
    ess = az_ess(stat[None])
    z = (stat.mean() - 1.0) / (stat.std() / np.sqrt(ess))
    assert abs(z) < 4, (AS, stat.mean(), z, ess)


def test_conditional_resampling_draws_the_free_particles_ancestors_iid():
    """Conditional SMC (003 §4.1) redraws the N − 1 free particles' ancestors iid from the
    weights, and the reference (member 0) keeps itself as its ancestor.  The resampling of the
    pgibbs driver, at fixed weights: Pearson χ² of the joint of the two free particles'
    ancestors (9 cells) against w ⊗ w over 20,000 resamplings, p > 1e-3.  (Sorted multinomial
    draws with their first entry overwritten by the reference — the free particles would get
    the two largest of three draws — put no mass on the cells where the first ancestor
    exceeds the second: χ² in the thousands.)"""
    from thrifty.inference.particles.pgibbs import Conditional

    rng = np.random.default_rng(3)
    w = np.array([0.5, 0.3, 0.2])
    cond = Conditional(3, rng, refs=[{}, {}], ancestor_sampling=False)
    cond.ref_members = np.array([0])
    counts = np.zeros((3, 3))
    R = 20_000
    for _ in range(R):
        cond.log_w = np.log(w)
        a = cond.choose_ancestors(None, None, None, None, 0, None, cond.maybe_resample(True))
        assert a[0] == 0
        counts[a[1], a[2]] += 1
    p = stats.chisquare(counts.ravel(), R * np.outer(w, w).ravel()).pvalue
    assert p > 1e-3, (counts / R, np.outer(w, w), p)


@th.model
def ar_last_level(y):
    def step(t, prev):
        x = th.sample("x", dist.Normal(prev, 1.0))
        th.observe("y", dist.Normal(x, 0.3), y[t])
        return x

    xs = th.markov("s", step, len(y), 0.0)
    return float(xs[-1])  # one trajectory's last level: one value per particle in a particle run


def test_code_after_the_chain_reading_a_state_as_one_value_is_named_in_a_particle_run():
    """The code after th.markov reads a state as one number: over particles the state holds
    one value per particle, and NumPy's TypeError reached the user as it was — from th.pgibbs,
    and from the default kernel, whose trial of PGAS on the chain did not take it as a refusal.
    Now a ModelError says where and why, and the default kernel takes another kernel."""
    y = np.array([0.1, 0.4, 0.2, 0.9, 1.1])
    with pytest.raises(ModelError, match=r"raised TypeError: .* in a particle run .* outside the "
                                         r"markov steps: .*\(float\(states\[-1\]\)"):
        th.infer(ar_last_level(y), th.pgibbs("s"), num_samples=5, seed=0, progress=False)
    r = th.infer(ar_last_level(y), num_samples=20, burn_in=20, seed=0, progress=False)
    assert r["s.x"].shape == (1, 20, 5) and not any("pgibbs" in k for k in r.stats)


def test_a_process_drawn_in_a_plate_of_a_particle_run_is_refused_naming_the_site():
    """A particle run holds the chains' choices only: a latent choice of a plate element
    outside its chain is refused naming it — a process's draw (th.CRP) as any other family."""

    @th.model
    def m():
        with th.plate("g", 2):
            th.sample("z", th.CRP(1.0))

            def step(t, prev):
                x = th.sample("x", dist.Normal(prev, 1.0))
                th.observe("y", dist.Normal(x, 1.0), 0.0)
                return x

            th.markov("s", step, 3, np.zeros(2))

    with pytest.raises(ModelError, match=r"\('g', \*, 'z'\): a latent choice of a plate element"):
        th.smc(m(), 10, seed=0)
