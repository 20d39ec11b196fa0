"""Programs whose set of random choices changes (structure change), against exact posteriors.

(a) Paper 000 Fig. 1: ``b ~ Bernoulli(0.5); mu = 1 if b else Gamma(1, 1); y ~ N(mu, 0.1) = 10``.
    P(b = 1 | y) is astronomically small; E[mu | y, b = 0] is checked with a z-test and KS.
(b) The same program with y ~ N(mu, 1) = 1.5, where P(b = 1 | y) ≈ 0.58: plain ``th.lmh()``
    must get it right, which needs the |x| / |x'| factor and the fresh / stale terms of paper
    001 Eq. 4.  Negative controls: an LMH without |x| / |x'| (it samples ∝ |x| p(x, y)) and an
    LMH that scores fresh / stale choices are both detected.
(c) Paper 003 §4.1: a recursive geometric ``geom(0.5)`` (flip k at address ("flip", k)) with
    ``observe Poisson(geom) = 3``; the law of n against exact enumeration.

Thresholds: see tests/stat_helpers.py (|z| < 4.5; Bonferroni at family-wise 1e-5 for several
probabilities; KS / chi-square p > 1e-4).  Exact answers use scipy.integrate.quad.  LMH on small
finite models whose supports nest or move apart: exact transition matrices (tests/exact_kernel.py),
πP = π to 1e-10.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import thrifty as th
from stat_helpers import (
    P_MIN,
    Z_MAX,
    LMHWithoutSizeCorrection,
    check_continuous,
    check_discrete,
    chisq_p,
    discrete_posterior,
    ks_p,
    mean_z,
    prob_z,
    probs_z,
    run,
    z_threshold,
)
from thrifty import dist
from thrifty.errors import SelectionError
from thrifty.inference.mcmc.mh import LMH


@th.model
def fig1(y=10.0, sd=0.1):
    b = th.sample("b", dist.Bernoulli(probs=0.5))
    mu = 1.0 if b else th.sample("mu", dist.Gamma(1.0, 1.0))
    th.observe("y", dist.Normal(mu, sd), y)
    return mu


def fig1_exact(y: float, sd: float):
    """log P(b = 1 | y), E[mu | y, b = 0], sd[mu | y, b = 0] by numerical integration.

    p(y | b = 0) = ∫ Gamma(mu; 1, 1) N(y; mu, sd) dmu is integrated in log space: the
    integrand is divided by its maximum (at the mode c) before quad, over c ± 40 sd (∩ mu > 0),
    a range outside which it is below e^-800 of its peak.
    """
    prior = stats.gamma(1.0, scale=1.0)

    def log_f(m):
        return prior.logpdf(m) + stats.norm.logpdf(y, m, sd)

    c = max(y - sd**2, 1e-9)  # mode of exp(-mu) N(y; mu, sd) on mu > 0
    lo, hi = max(c - 40 * sd, 0.0), c + 40 * sd
    peak = log_f(c)

    def moment(k):
        val, _ = integrate.quad(
            lambda m: m**k * math.exp(log_f(m) - peak), lo, hi, points=[c], limit=200
        )
        return val

    z0, m1, m2 = moment(0), moment(1), moment(2)
    log_p0 = math.log(0.5) + peak + math.log(z0)
    log_p1 = math.log(0.5) + stats.norm.logpdf(y, 1.0, sd)
    log_post_b1 = log_p1 - np.logaddexp(log_p0, log_p1)
    mean = m1 / z0
    return float(log_post_b1), mean, math.sqrt(m2 / z0 - mean**2), (log_p0, log_p1)


def truncnorm_mu(y, sd):
    """mu | y, b = 0 exactly: exp(-mu) N(y; mu, sd) on mu > 0 is N(y − sd², sd) cut at 0."""
    loc = y - sd**2
    return stats.truncnorm((0.0 - loc) / sd, np.inf, loc=loc, scale=sd)


# =============================================================================================
# (a) Fig. 1 exactly
# =============================================================================================
def fig1_kernel(mh_first=False):
    # prior proposals rarely reach mu ≈ 10: a random walk on mu, skipped while b = 1
    lmh, mh = th.lmh(), th.mh("mu", th.drift(0.1))
    return th.cycle([mh, lmh] if mh_first else [lmh, mh])


@pytest.fixture(scope="module")
def fig1_draws():
    # init b = 0 and the mh step first (starting with "mu" absent is tested separately:
    # test_fig1_mh_skips_when_mu_absent_at_start).
    kernel = fig1_kernel(mh_first=True)
    return run(fig1(10.0, 0.1), kernel, 20000, burn_in=3000, seed=21, init={"b": 0})


def test_fig1_mh_skips_when_mu_absent_at_start():
    """Start in b = 1 (mu absent).  The mh step must be skipped until lmh creates mu."""
    r = run(fig1(10.0, 0.1), fig1_kernel(), 2000, burn_in=3000, seed=21, init={"b": 1})
    assert np.all(r["b"] == 0)


def test_fig1_exact_values_are_consistent():
    """The quadrature agrees with the closed form of mu | y, b = 0 (a check of the answer)."""
    log_b1, mean, sd, _ = fig1_exact(10.0, 0.1)
    exact = truncnorm_mu(10.0, 0.1)
    assert log_b1 < -4000  # P(b = 1 | y) ≈ e^-4040
    assert mean == pytest.approx(exact.mean(), rel=1e-9)
    assert sd == pytest.approx(exact.std(), rel=1e-6)


def test_fig1_b(fig1_draws):
    """No draw may have b = 1: with P(b = 1 | y) ≈ e^-4040 the p-value of even one such draw
    among n is at most n e^-4040 ≈ 0 (< 1e-4)."""
    log_b1, *_ = fig1_exact(10.0, 0.1)
    b = fig1_draws["b"]
    assert b.size * math.exp(log_b1) < P_MIN
    assert int(np.sum(b == 1)) == 0, f"{int(np.sum(b == 1))} draws with b = 1"


def test_fig1_mu(fig1_draws):
    _, mean, sd, _ = fig1_exact(10.0, 0.1)
    mu = fig1_draws["mu"]
    assert not np.any(np.isnan(mu))  # b = 0 in every draw, so mu always exists
    check_continuous(mu, mean, sd, truncnorm_mu(10.0, 0.1).cdf, "fig1 mu | b=0")


def test_fig1_negative_control(fig1_draws):
    """E[mu | y, b = 0] is 9.99; the same check against 9.99 ± 0.25 sd must fail."""
    _, mean, sd, _ = fig1_exact(10.0, 0.1)
    mu = fig1_draws["mu"]
    for wrong in (mean - 0.25 * sd, mean + 0.25 * sd):
        assert abs(mean_z(mu, wrong, sd)) > Z_MAX
    assert ks_p(mu, stats.norm(mean + 0.25 * sd, sd).cdf) < P_MIN


# =============================================================================================
# (b) Fig. 1 with a moderate observation: P(b = 1 | y) ≈ 0.58
# =============================================================================================
Y_MOD, SD_MOD = 1.5, 1.0


def moderate_b1(size_factor: bool = True) -> float:
    """P(b = 1 | y); with ``size_factor=False`` the law an LMH without |x| / |x'| samples:
    ∝ |x| p(x, y), i.e. the b = 0 traces (two choices) weigh twice as much."""
    _, _, _, (log_p0, log_p1) = fig1_exact(Y_MOD, SD_MOD)
    if not size_factor:
        log_p0 += math.log(2.0)
    return float(math.exp(log_p1 - np.logaddexp(log_p0, log_p1)))


class LMHCountingFreshStale(LMH):
    """LMH that (wrongly) puts the densities of fresh and stale choices into the ratio."""

    name = "lmh-fresh-stale"

    def accept(self, run, log_alpha, rng):
        return super().accept(run, log_alpha + run.lp_fresh - run.lp_stale, rng)


@pytest.fixture(scope="module")
def moderate_draws():
    return {
        "lmh": run(fig1(Y_MOD, SD_MOD), th.lmh(), 40000, burn_in=500, seed=22),
        "no-size": run(
            fig1(Y_MOD, SD_MOD), LMHWithoutSizeCorrection(), 40000, burn_in=500, seed=22
        ),
        "fresh-stale": run(
            fig1(Y_MOD, SD_MOD), LMHCountingFreshStale(), 40000, burn_in=500, seed=22
        ),
    }


def test_moderate_exact_values():
    """Closed form: p(y | b=1) = φ(0.5), p(y | b=0) = e^-1 Φ(0.5)."""
    l1, l0 = stats.norm.pdf(0.5), math.exp(-1.0) * stats.norm.cdf(0.5)
    assert moderate_b1() == pytest.approx(l1 / (l1 + l0), rel=1e-8)
    assert moderate_b1(size_factor=False) == pytest.approx(l1 / (l1 + 2 * l0), rel=1e-8)


def test_moderate_lmh_b(moderate_draws):
    p1 = moderate_b1()
    check_discrete(moderate_draws["lmh"]["b"], {0: 1 - p1, 1: p1}, "lmh b")


def test_moderate_lmh_mu_given_b0(moderate_draws):
    """mu in the draws with b = 0 (the chain's subsequence) against N(0.5, 1) cut at 0."""
    r = moderate_draws["lmh"]
    mu = r["mu"][r["b"] == 0]
    _, mean, sd, _ = fig1_exact(Y_MOD, SD_MOD)
    check_continuous(mu, mean, sd, truncnorm_mu(Y_MOD, SD_MOD).cdf, "lmh mu | b=0")


def test_moderate_negative_control_size_factor(moderate_draws):
    """Without |x| / |x'| the answer differs detectably: the correct draws fail against the
    uncorrected law, and the uncorrected kernel's draws fail against the exact one — and match
    the law ∝ |x| p(x, y) they really sample."""
    p1, p1_wrong = moderate_b1(), moderate_b1(size_factor=False)
    assert abs(p1 - p1_wrong) > 0.15
    b_ok = moderate_draws["lmh"]["b"]
    b_bad = moderate_draws["no-size"]["b"]
    assert abs(prob_z(b_ok, 1, p1_wrong)) > Z_MAX
    assert abs(prob_z(b_bad, 1, p1)) > Z_MAX
    check_discrete(b_bad, {0: 1 - p1_wrong, 1: p1_wrong}, "no-size b vs its own law")


def test_moderate_negative_control_fresh_stale(moderate_draws):
    """Scoring the fresh and stale choices (mu when b flips) is detected."""
    p1 = moderate_b1()
    r = moderate_draws["fresh-stale"]
    assert abs(prob_z(r["b"], 1, p1)) > Z_MAX


# =============================================================================================
# (c) Recursive geometric (paper 003 §4.1)
# =============================================================================================
def geom(p, k=0):
    flip = th.sample(("flip", k), dist.Bernoulli(probs=p))
    return 1 if flip else 1 + geom(p, k + 1)


@th.model
def geometric_poisson(count=3):
    n = geom(0.5)
    th.deterministic("n", n)
    th.observe("y", dist.Poisson(n), count)
    return n


N_MAX = 60  # 0.5^60 · Poisson(3; 60) < 1e-60: the truncated tail is negligible


def geom_exact(size_factor: bool = True) -> dict:
    """P(n | y) ∝ 0.5^n Poisson(3; n), n ≥ 1; without the size factor ∝ n · that (|x| = n)."""
    n = np.arange(1, N_MAX + 1)
    lw = n * math.log(0.5) + stats.poisson.logpmf(3, n)
    if not size_factor:
        lw = lw + np.log(n)
    return discrete_posterior(dict(zip(n.tolist(), lw)))


@pytest.fixture(scope="module")
def geom_draws():
    return {
        "lmh": run(geometric_poisson(), th.lmh(), 40000, burn_in=500, seed=23),
        "no-size": run(geometric_poisson(), LMHWithoutSizeCorrection(), 40000, 500, seed=23),
    }


def test_geometric_trace_structure(geom_draws):
    """The number of flips in a trace is n: flips 0..n-2 are 0 and flip n-1 is 1."""
    r = geom_draws["lmh"]
    n = r["n"][0, :500].astype(int)
    for d, k in enumerate(n):
        flips = [r[f"flip.{j}"][0, d] for j in range(k)]
        assert flips == [0] * (k - 1) + [1]
        if f"flip.{k}" in r:
            assert np.isnan(r[f"flip.{k}"][0, d])


def test_geometric_posterior(geom_draws):
    exact = geom_exact()
    n = geom_draws["lmh"]["n"].astype(int)
    # P(n) > 1e-3 gets its own z-test (n = 1..8); the rest is pooled by the chi-square.
    main = {k: v for k, v in exact.items() if v > 1e-3}
    check_discrete(n, main, "geom n")
    assert chisq_p(n, exact) > P_MIN


def test_geometric_negative_control(geom_draws):
    """LMH without |x| / |x'| samples ∝ n P(n | y): it fails against the exact law, matches
    the law it samples, and the correct draws fail against that law."""
    exact, wrong = geom_exact(), geom_exact(size_factor=False)
    main = {k: v for k, v in exact.items() if v > 1e-3}
    n_ok = geom_draws["lmh"]["n"].astype(int)
    n_bad = geom_draws["no-size"]["n"].astype(int)
    thr = z_threshold(len(main))
    assert max(abs(z) for z in probs_z(n_bad, main).values()) > thr
    assert chisq_p(n_bad, exact) < P_MIN
    wrong_main = {k: v for k, v in wrong.items() if v > 1e-3}
    check_discrete(n_bad, wrong_main, "no-size n vs its own law")
    assert max(abs(z) for z in probs_z(n_ok, wrong_main).values()) > z_threshold(len(wrong_main))


# -- (d) a choice whose dimension follows another choice ------------------------------------------
@th.model
def ragged():
    """``x ~ N(0, I_{k+1})`` with ``k ~ Categorical(½, ½)``; ``y = 0.3 ~ N(Σx, 1)``, so
    ``P(k | y) ∝ ½ N(0.3; 0, k + 2)``."""
    k = th.sample("k", dist.Categorical(np.array([0.5, 0.5])))
    x = th.sample("x", dist.Normal(np.zeros(k + 1), 1.0))
    th.observe("y", dist.Normal(x.sum(), 1.0), 0.3)


def test_a_value_of_another_shape_is_redrawn_not_replayed():
    """When k changes, the old x has the wrong dimension: it is outside the support of its new
    distribution (stale, and a fresh x is drawn), never replayed and scored by broadcasting.
    Replaying it put x of the wrong shape in 17% of the draws and P(k = 1 | y) at 0.31 instead
    of 0.451 (z = −7.5, found by check mode); one z-test, |z| < Z_MAX."""
    p = np.array([stats.norm(0.0, math.sqrt(k + 2)).pdf(0.3) for k in (0, 1)])
    p1 = p[1] / p.sum()
    r = th.infer(ragged(), th.lmh(), num_samples=4000, seed=0, progress=False, check=False)
    k, x = r["k"][0], r["x"][0]
    assert all(np.shape(v) == (kk + 1,) for v, kk in zip(x, k))
    assert abs(prob_z(k, 1, p1)) < Z_MAX


@th.model
def ragged_plate():
    """The same in a plate of 3 elements: ``x_e ~ N(0, I_{k+1})``, ``0.3 ~ N(Σx_e, 1)``, so
    ``P(k | y) ∝ ½ Π_e N(0.3; 0, k + 2)``."""
    k = th.sample("k", dist.Categorical(np.array([0.5, 0.5])))
    with th.plate("p", 3) as i:
        x = th.sample("x", dist.Normal(np.zeros((3, k + 1))[i], 1.0))
        th.observe("y", dist.Normal(x.sum(-1), 1.0), np.full(3, 0.3)[i])


def test_plate_values_of_another_shape_are_redrawn_not_replayed():
    """Replaying them by broadcasting left the plate's x of the wrong shape in over half of the
    steps; one z-test, |z| < Z_MAX."""
    p = np.array([stats.norm(0.0, math.sqrt(k + 2)).pdf(0.3) ** 3 for k in (0, 1)])
    p1 = p[1] / p.sum()
    r = th.infer(ragged_plate(), th.lmh(), num_samples=4000, seed=0, progress=False, check=False)
    k, x = r["k"][0], r["p.x"][0]
    assert all(np.shape(v) == (3, kk + 1) for v, kk in zip(x, k))
    assert abs(prob_z(k, 1, p1)) < Z_MAX


def test_a_plate_site_with_a_trailing_axis_runs_on_no_element():
    """A per-element value with a trailing axis (the engine's advice for nested plates) has a
    log-density of shape (n, 2); at n = 0 (the start-up probe, a step on a choice the plate
    does not read) it must sum to shape (0,), not fail."""

    @th.model
    def m():
        s = th.sample("s", dist.Gamma(2.0, 2.0))
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.observe("o", dist.Normal(0.0, s), 0.5)
        with th.plate("p", 3) as i:
            x = th.sample("x", dist.Normal(np.full((3, 2), mu)[i], 1.0))
            th.observe("y", dist.Normal(x.sum(-1), 1.0), np.full(3, 0.3)[i])

    r = th.infer(m(), th.mh("s", th.drift(0.3)), num_samples=20, seed=0, progress=False,
                 check=True)
    assert r["p.x"].shape == (1, 20, 3, 2)


@th.model
def nested_support(y):
    """``n ~ U{1..3}``, ``z ~ U{0..n}``, ``y ~ N(z, 1)``: a smaller n leaves z outside its
    support, and the reverse move (n back) keeps the new z — such a proposal has no reverse."""
    n = th.sample("n", dist.DiscreteUniform(1, 3))
    z = th.sample("z", dist.DiscreteUniform(0, n))
    th.observe("y", dist.Normal(z, 1.0), y)


@th.model
def nested_support_plate(y):
    with th.plate("data", len(y)) as i:
        n = th.sample("n", dist.DiscreteUniform(1, 3))
        z = th.sample("z", dist.DiscreteUniform(0, n))
        th.observe("y", dist.Normal(z, 1.0), y[i])


def _uniform_draws(mp, script):
    """The draws of any kernel (``all_draws`` of tests/exact_kernel.py), and DiscreteUniform's
    prior draws scripted too: each value of each entry's range with equal probability."""
    from exact_kernel import all_draws

    rng = all_draws(mp, script)

    def draw(d, rng, shape=()):
        full = tuple(shape) + tuple(d.batch_shape)
        lo = np.broadcast_to(np.asarray(d.low, dtype=np.int64), full).ravel()
        hi = np.broadcast_to(np.asarray(d.high, dtype=np.int64), full).ravel()
        options = list(itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi)]))
        o = script._take(options, [1.0 / len(options)] * len(options))
        return np.array(o, dtype=np.int64).reshape(full) if full else int(o[0])

    mp.setattr(dist.DiscreteUniform, "sample", draw)
    return rng


def _assert_lmh_invariant(program, states, log_joint, init_of, state_of, wrong_log_joint):
    """th.lmh()'s exact transition matrix on ``states`` (tests/exact_kernel.py: every draw
    scripted, each path's trace that of a full execution): πP = π to 1e-10 and P irreducible
    (a kernel rejecting every redraw of a support that moves would leave the states apart);
    negative control: the law ``wrong_log_joint`` is moved."""
    from exact_kernel import assert_stationary, transition_matrix

    def law(f):
        lw = np.array([f(s) for s in states])
        return np.exp(lw - np.logaddexp.reduce(lw))

    P = transition_matrix(program, th.lmh(), states, init_of, state_of, draws=_uniform_draws,
                          check=True)
    assert_stationary(law(log_joint), P)
    wrong = law(wrong_log_joint)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-3


NESTED = [(n, z) for n in (1, 2, 3) for z in range(n + 1)]
APART = [(k, j) for k in (1, 2, 3) for j in (2 * k, 2 * k + 1)]


def _nested_lp(y, n, z, normalised=True):
    """log p(n, z, y) of nested_support; without ``normalised``, z's prior 1/(n + 1) dropped
    (a negative control)."""
    return -math.log(3) - (math.log(n + 1) if normalised else 0.0) + stats.norm.logpdf(y, z)


def _apart_lp(y, k, j, sd):
    return -math.log(6) + stats.norm.logpdf(y, j, sd)


def test_lmh_rejects_a_redraw_the_reverse_move_cannot_undo():
    """Redrawing z fresh and weighing it as a fresh/stale pair (as for a choice of another
    shape) put P(n = 1 | y) at 0.29 instead of 0.16: its exact P on the 9 states."""
    _assert_lmh_invariant(
        nested_support(2.5), NESTED, lambda s: _nested_lp(2.5, *s),
        lambda s: {"n": s[0], "z": s[1]}, lambda t: (int(t["n"]), int(t["z"])),
        lambda s: _nested_lp(2.5, *s, normalised=False))


def _plate_state(a: str, b: str):
    def init_of(s):
        return {f"data.{a}": np.array([u for u, _ in s]), f"data.{b}": np.array([v for _, v in s])}

    def state_of(t):
        v = t.values()
        return tuple(zip(map(int, v[f"data.{a}"]), map(int, v[f"data.{b}"])))

    return init_of, state_of


def test_lmh_in_a_plate_rejects_a_redraw_the_reverse_move_cannot_undo():
    """The same for two plate elements (element-wise runs): exact P on the 81 states."""
    y = np.array([0.2, 2.5])
    _assert_lmh_invariant(
        nested_support_plate(y), list(itertools.product(NESTED, repeat=2)),
        lambda s: sum(_nested_lp(yi, *e) for yi, e in zip(y, s)), *_plate_state("n", "z"),
        lambda s: sum(_nested_lp(yi, *e, normalised=False) for yi, e in zip(y, s)))


@th.model
def apart_support_plate(y):
    """``k ~ U{1..3}``, ``j ~ U{2k, 2k + 1}``: another k leaves j outside its support, and the
    reverse move redraws the new j as well (supports that move apart)."""
    with th.plate("data", len(y)) as i:
        k = th.sample("k", dist.DiscreteUniform(1, 3))
        j = th.sample("j", dist.DiscreteUniform(2 * k, 2 * k + 1))
        th.observe("y", dist.Normal(j, 1.5), y[i])


def test_lmh_in_a_plate_keeps_a_redraw_the_reverse_move_makes_too():
    """Rejecting every such redraw would leave each k where it started (P not irreducible):
    exact P on the 36 states of two elements; negative control: the law for sd 1.3."""
    y = np.array([2.5, 4.0])
    _assert_lmh_invariant(
        apart_support_plate(y), list(itertools.product(APART, repeat=2)),
        lambda s: sum(_apart_lp(yi, *e, 1.5) for yi, e in zip(y, s)), *_plate_state("k", "j"),
        lambda s: sum(_apart_lp(yi, *e, 1.3) for yi, e in zip(y, s)))


@th.model
def nested_support_mem(y):
    n = th.sample("n", dist.DiscreteUniform(1, 3))
    w = th.mem("w", lambda k: dist.DiscreteUniform(0, n))
    th.observe("y", dist.Normal(w(0), 1.0), y)


@th.model
def apart_support_mem(y):
    k = th.sample("k", dist.DiscreteUniform(1, 3))
    w = th.mem("w", lambda i: dist.DiscreteUniform(2 * k, 2 * k + 1))
    th.observe("y", dist.Normal(w(0), 1.0), y)


def test_lmh_on_a_memoized_value_redraws_only_what_the_reverse_move_redraws():
    """The memoized key's old distribution decides, as a site's: nested supports reject the
    redraw (P(n = 1 | y) was 0.28 for an exact 0.16), supports that move apart keep it —
    exact P on the 9 and 6 states."""
    for program, states, name, lp, wrong in (
            (nested_support_mem(2.5), NESTED, "n", lambda s: _nested_lp(2.5, *s),
             lambda s: _nested_lp(2.5, *s, normalised=False)),
            (apart_support_mem(2.5), APART, "k", lambda s: _apart_lp(2.5, *s, 1.0),
             lambda s: _apart_lp(2.5, *s, 1.3))):
        _assert_lmh_invariant(program, states, lp,
                              lambda s, name=name: {name: s[0], "w.0": s[1]},
                              lambda t, name=name: (int(t[name]), int(t[("w", 0)])), wrong)


SIZED_Y = np.array([0.9, -0.4, 1.3])


@th.model
def sized():
    """n ~ Categorical(0.3, 0.4, 0.3) elements, each with a label z; c shifts their means."""
    n = th.sample("n", dist.Categorical(np.array([0.3, 0.4, 0.3])))
    c = th.sample("c", dist.Bernoulli(0.5))
    with th.plate("p", n) as i:
        z = th.sample("z", dist.Bernoulli(0.4))
        th.observe("y", dist.Normal(z + c - 0.5, 1.0), SIZED_Y[i])
    th.observe("t", dist.Normal(0.3 * n, 1.0), 0.5)


def test_a_sweep_updates_the_plate_elements_that_exist_after_its_choices():
    """th.mh(th.each(...)) updates the selected choices, then the plate elements: those of
    the plate as the choices left it (the sweep over every element a plate may have, each
    kept where it does not exist).  It updated the elements the plate had when the sweep
    began, and an IndexError stopped the chain once n had shrunk.  Marginals of n and c
    against enumeration (z-tests and chi-square)."""
    lw = {}
    for n in range(3):
        for c in range(2):
            per = [math.log(0.6 * stats.norm.pdf(y, c - 0.5) + 0.4 * stats.norm.pdf(y, c + 0.5))
                   for y in SIZED_Y[:n]]
            lw[n, c] = (math.log([0.3, 0.4, 0.3][n] * 0.5) + sum(per)
                        + stats.norm.logpdf(0.5, 0.3 * n, 1.0))
    joint = discrete_posterior(lw)
    r = th.infer(sized(), th.mh(th.each(["p.z", "n", "c"]), th.prior()), num_samples=8000,
                 seed=2, progress=False)
    check_discrete(r["n"][0], {n: sum(joint[n, c] for c in range(2)) for n in range(3)}, "n")
    check_discrete(r["c"][0], {c: sum(joint[n, c] for n in range(3)) for c in range(2)}, "c")


KEY_Y = np.array([1.3, 0.9, 1.6])


@th.model
def key_of_the_elements():
    """b decides whether the plate's elements read the memoized x(2), which nothing else
    reads: b = 0 drops the key, b = 1 draws it again."""
    x = th.mem("x", lambda k: dist.Bernoulli(0.3))
    b = th.sample("b", dist.Bernoulli(0.5))
    with th.plate("data", len(KEY_Y)) as i:
        th.observe("y", dist.Normal(2.0 * x(2) if b else 0.0, 1.0), KEY_Y[i])


def test_a_memoized_key_the_elements_read_again_returns_to_the_trace():
    """The plate kept the keys of a read its elements no longer made, so reading x(2) again
    counted the new reads against the old ones: the key left the trace as soon as it was
    drawn, |x| grew by one each time (LMH then stopped with IndexError), and a full
    execution disagreed (check mode).  Now the trace after b = 1, 0, 1 is the one a fresh
    execution gives, and LMH's exact transition matrix on the three states of (b, x(2)) leaves
    their posterior invariant, each path's trace that of a full execution."""
    from thrifty.core.engine import locate, plan_for, propose

    trace = th.initialize(key_of_the_elements(), 0, init={"b": 1, "x.2": 1})
    for b in (0, 1):
        plan = plan_for(trace, [locate(trace, ("b",))])
        propose(trace, np.random.default_rng(b), targets={("b",): b, ("x", 2): 1},
                plan=plan).commit()
    fresh = th.initialize(key_of_the_elements(), 0, init={"b": 1, "x.2": 1})
    assert trace.values() == fresh.values() and trace.n_latent == fresh.n_latent == 2
    assert trace.log_joint() == pytest.approx(fresh.log_joint(), abs=1e-12)
    from exact_kernel import all_draws, assert_stationary, transition_matrix

    def posterior(sd):
        like = [stats.norm.logpdf(KEY_Y, m, sd).sum() for m in (0.0, 2.0)]
        lw = [math.log(0.5) + like[0], math.log(0.5 * 0.7) + like[0],
              math.log(0.5 * 0.3) + like[1]]
        return np.exp(np.array(lw) - np.logaddexp.reduce(lw))

    # the states (b, x(2)): x(2) exists only for b = 1
    P = transition_matrix(key_of_the_elements(), th.lmh(), [(0,), (1, 0), (1, 1)],
                          lambda s: {"b": s[0], **({"x.2": s[1]} if s[0] else {})},
                          lambda t: (int(t["b"]), int(t[("x", 2)])) if t["b"] else (0,),
                          draws=all_draws, check=True)
    assert_stationary(posterior(1.0), P)
    wrong = posterior(1.3)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-3


@th.model
def labels_of_memoized_means(y):
    """A finite mixture whose K = 3 means are memoized by label: a mean exists while an
    element reads it."""
    means = th.mem("means", lambda k: dist.Normal(0.0, 3.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Categorical(np.ones(3) / 3))
        th.observe("y", dist.Normal(means(z), 0.3), y[i])


def test_gibbs_and_plate_mh_refuse_a_value_that_leaves_a_memoized_key_unread():
    """Enumerative Gibbs and th.mh on plate elements run strictly: a value that creates a
    choice is refused, and one that leaves a choice out must be too (the reverse move would
    create it).  Their commits dropped the mem keys that lost their last reader without
    counting them: from three points each alone under its own label, one step of
    th.cycle([th.lmh(), th.gibbs("data")]) dropped keys 0 and 2 but |x| stayed 6 (4 by a
    full execution; th.mh("data.z") in its place: 6 against 5) and the structure counter
    unchanged — the recorded n_latent was 6, th.lmh() picked among 6 choices, th.mh("means")
    failed on its cached ('means', 0), and check mode raised CheckError.  Now such a value is
    refused, naming the key (the strict run that scores it refuses at its end) — and
    th.infer's default kernel, whose set-up tries Gibbs on the labels, gives them LMH (it
    assigned Gibbs, and the run failed on ('means', 0))."""
    y = np.array([2.9, 3.1, 3.0])
    init = {("data", 0, "z"): 0, ("data", 1, "z"): 1, ("data", 2, "z"): 2,
            ("means", 0): -3.0, ("means", 1): 3.0, ("means", 2): -3.0}
    for kernel in (th.cycle([th.lmh(), th.gibbs("data")]),
                   th.cycle([th.lmh(), th.mh("data.z")])):
        with pytest.raises(SelectionError, match=r"leave out the choice \('means', [012]\)"):
            th.infer(labels_of_memoized_means(y), kernel, num_samples=1, seed=0, init=init,
                     progress=False, check=False)
    r = th.infer(labels_of_memoized_means(np.random.default_rng(1).normal(size=12) + 1.0),
                 num_samples=20, burn_in=20, seed=0, progress=False)
    assert "LMH to data.z" in r.notes[0]
