"""``th.infer(program)`` without a kernel: what it assigns to which sites, that it says so, and
that the posterior is right on a newcomer's models (against the exact answers of
test_gradient.py and test_structure.py; thresholds of stat_helpers)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from scipy import integrate, stats

import thrifty as th
from stat_helpers import (
    P_MIN,
    Z_MAX,
    check_continuous,
    check_discrete,
    chisq_p,
    discrete_posterior,
    ess,
    mean_z,
    prob_z,
    z_threshold,
)
from test_gradient import (
    MIXTURE_Y,
    RATS_K,
    RATS_N,
    S8,
    Y8,
    _schools_grid,
    mixture,
    rats,
    schools,
)
from test_gradient_chains import ssm
from test_structure import fig1, fig1_exact, truncnorm_mu
from thrifty import dist
from thrifty.errors import SelectionError
from thrifty.inference.default import default_kernel


def test_eight_schools_without_a_kernel(caplog):
    with caplog.at_level(logging.INFO, logger="thrifty"):
        r = th.infer(schools(Y8, S8), seed=7, progress=False)
    said = "assigned NUTS to mu, tau, school.eta"
    assert any(said in m for m in caplog.messages) and said in r.notes[0]
    assert r["mu"].shape == (1, 1000)  # 1,000 draws after a burn-in of 1,000
    grid = _schools_grid()
    for name in ("mu", "tau"):
        mean, sd, cdf = grid[name]
        check_continuous(r[name], mean, sd, cdf, what=name)


def test_labels_get_gibbs_and_the_mean_gets_nuts():
    """The chain th.infer runs without a kernel is th.cycle([th.nuts("mu"), th.gibbs("data.z")])
    draw for draw: the posterior of that chain (3,000 draws after 500, seed 3: the same
    chain) is checked against the grid by test_gradient.py's test_nuts_with_gibbs_on_labels."""
    kw = dict(num_samples=50, burn_in=50, seed=3, progress=False)
    r = th.infer(mixture(MIXTURE_Y), **kw)
    assert "assigned NUTS to mu; Gibbs to data.z" in r.notes[0]
    given = th.infer(mixture(MIXTURE_Y), th.cycle([th.nuts("mu"), th.gibbs("data.z")]), **kw)
    np.testing.assert_array_equal(r["mu"], given["mu"])
    np.testing.assert_array_equal(r["data.z"], given["data.z"])


def test_binomial_counts_per_element_get_nuts():
    """``Binomial(n[i], p)``: an array total_count (data) does not keep NUTS from p."""
    assert "assigned NUTS to g.p" in default_kernel(rats(RATS_N, RATS_K))[1]


def test_a_choice_that_decides_structure_gets_lmh():
    """000 Fig. 1: b decides whether mu exists, so Gibbs cannot take b (it refuses a value that
    creates a choice); the default kernel gives b and mu to LMH, and the posterior is exact."""
    log_b1, mean, sd, _ = fig1_exact(1.5, 1.0)
    r = th.infer(fig1(1.5, 1.0), num_samples=20_000, burn_in=1000, seed=1, progress=False)
    assert "assigned LMH to b, mu" in r.notes[0]
    z = prob_z(r["b"], 1, math.exp(log_b1))
    assert abs(z) < Z_MAX, z
    check_continuous(r["mu"][r["b"] == 0], mean, sd, truncnorm_mu(1.5, 1.0).cdf, "mu | b = 0")


@th.model
def joint_switch(y):
    """e exists only when k1 = k2 = 1: neither switch creates it alone."""
    k1 = th.sample("k1", dist.Bernoulli(0.5))
    k2 = th.sample("k2", dist.Bernoulli(0.5))
    if k1 == 1 and k2 == 1:
        e = th.sample("e", dist.Normal(2.0, 1.0))
        th.observe("y", dist.Normal(e, 0.5), y)
    else:
        th.observe("y", dist.Normal(0.0, 0.5), y)


def test_choices_that_decide_structure_only_together_get_lmh():
    """The switches are probed in traces where the other one takes each of its values (the
    first prior traces may all have k1 = 0): both go to LMH, and P(k1 = k2 = 1 | y) is exact.
    A hand-given th.gibbs refuses k2 in either direction: a value that would leave e out
    changes the structure as much as one that would create it."""
    y = 1.2
    both = 0.25 * stats.norm.pdf(y, 2.0, math.sqrt(1.25))
    p = both / (both + 0.75 * stats.norm.pdf(y, 0.0, 0.5))
    r = th.infer(joint_switch(y), num_samples=20_000, burn_in=1000, seed=2, progress=False)
    assert "assigned LMH to k1, k2, e" in r.notes[0]
    z = prob_z(r["k1"] * r["k2"], 1, p)
    assert abs(z) < Z_MAX, z
    for k2 in (0, 1):
        trace = th.initialize(joint_switch(y), 0, init={"k1": 1, "k2": k2})
        with pytest.raises(SelectionError, match=r"changes the program's structure"):
            th.gibbs("k2").step(trace, np.random.default_rng(0))


@th.model
def triple_switch(y):
    """e exists only when k1 = k2 = k3 = 1."""
    ks = [th.sample(f"k{j}", dist.Bernoulli(0.5)) for j in (1, 2, 3)]
    if sum(ks) == 3:
        e = th.sample("e", dist.Normal(2.0, 1.0))
        th.observe("y", dist.Normal(e, 0.5), y)
    else:
        th.observe("y", dist.Normal(0.0, 0.5), y)


def test_a_switch_of_three_choices_gets_lmh():
    """Probes at every combination of the top-level switches' values find a choice that
    creates another only together with two more; P(k1 = k2 = k3 = 1 | y) is exact."""
    y = 1.2
    all3 = 0.125 * stats.norm.pdf(y, 2.0, math.sqrt(1.25))
    p = all3 / (all3 + 0.875 * stats.norm.pdf(y, 0.0, 0.5))
    r = th.infer(triple_switch(y), num_samples=20_000, burn_in=1000, seed=4, progress=False)
    assert "assigned LMH to k1, k2, k3, e" in r.notes[0]
    z = prob_z(r["k1"] * r["k2"] * r["k3"], 1, p)
    assert abs(z) < Z_MAX, z


@th.model
def tanh_ssm(y):
    a = th.sample("a", dist.Uniform(-1.0, 1.0))

    def step(t, prev):
        x = th.sample("x", dist.Normal(a * np.tanh(prev), 1.0))  # (NumPy-only in the states)
        th.observe("y", dist.Normal(x, 0.5), y[t])
        return x

    th.markov("s", step, len(y), 0.0)


def test_a_chain_s_states_get_nuts_when_continuous_and_differentiable_else_pgas():
    """(The posterior of the first: test_gradient_chains, through th.infer without a kernel.)"""
    from thrifty.models import hmm

    assert "NUTS to a, q, s.x (th.nuts(['a', 'q', 's.x']))" in default_kernel(
        ssm(np.zeros(10)))[1]
    assert "PGAS (20 particles) to the chain s" in default_kernel(hmm())[1]
    said = default_kernel(tanh_ssm(np.zeros(10)))[1]  # (np.tanh reads the states, which
    # a gradient run takes as arguments even when they are not in the block: no NUTS for a)
    assert "PGAS (20 particles) to the chain s" in said and "adaptive MH (th.drift()) to a" in said


@th.model
def tanh_panel(y):
    """Chains in a plate whose elements have a latent choice outside the chain (which the
    particle methods refuse), with states NUTS cannot differentiate (np.tanh)."""
    mu = th.sample("mu", dist.Normal(0.0, 0.5))
    with th.plate("unit", y.shape[0]) as i:
        a = th.sample("a", dist.Normal(mu, 0.3))

        def step(t, prev):
            x = th.sample("x", dist.Normal(a * np.tanh(prev), 0.4))
            th.observe("y", dist.Normal(x, 0.5), y[i, t])
            return x

        th.markov("s", step, y.shape[1], 0.0)


def test_a_chain_that_pgas_refuses_gets_lmh():
    r = th.infer(tanh_panel(np.zeros((3, 4))), num_samples=20, burn_in=20, seed=0,
                 progress=False)
    assert "LMH to the chain unit.s (PGAS cannot run it" in r.notes[0]
    assert r["unit.s.x"].shape == (1, 20, 3, 4)


@th.model
def observed_chain(x, y):
    w = th.sample("w", dist.Normal(0.0, 3.0))

    def step(t, prev):  # (no latent choice: every step observes)
        th.observe("y", dist.Normal(w * np.array([x[t]]), 0.5), np.array([y[t]]))
        return t

    th.markov("s", step, len(x))


def test_a_chain_without_latent_choices_gets_no_kernel():
    # (it got th.lmh(['s']) — PGAS refuses its observations' shape — which then found nothing
    # to move: a SelectionError before the first draw)
    x = np.linspace(-1.0, 1.0, 8)
    r = th.infer(observed_chain(x, 2.0 * x + 0.1), num_samples=20, burn_in=20, seed=0,
                 progress=False)
    assert "chain" not in r.notes[0] and "assigned NUTS to w (th.nuts(['w']))" in r.notes[0]


A2 = np.array([[0.9, 0.1], [0.15, 0.85]])


@th.model
def hmm_unknown_means(y):
    mu = th.sample("mu", dist.Normal(np.array([-2.0, 2.0]), 1.0))

    def step(t, prev):
        z = th.sample("z", dist.Categorical(np.array([0.5, 0.5]) if t == 0 else A2[prev]))
        th.observe("y", dist.Normal(mu[z], 1.0), y[t])
        return z

    th.markov("s", step, len(y))


def test_nuts_is_not_assigned_where_it_would_recompile_at_every_step(monkeypatch):
    """``A[prev]`` (a NumPy array indexed by the discrete states) cannot be traced: NUTS on mu
    would compile the states in as constants, anew whenever PGAS changes them (~1 s a step).
    The default kernel gives mu adaptive MH and says why; NUTS given by hand warns once it
    has compiled that often."""
    y = np.array([-1.2, -1.9, 1.4, 2.2])
    _, said = default_kernel(hmm_unknown_means(y))
    assert "adaptive MH (th.drift()) to mu" in said and "compile its density anew" in said
    assert "A2[prev]" in said and "PGAS (" in said
    from thrifty.inference.gradient import hmc

    monkeypatch.setattr(hmc, "RECOMPILES_WARN", 2)
    with pytest.warns(UserWarning, match=r"has compiled its density 2 times in this chain: "
                                         r"the program reads the discrete choice"):
        th.infer(hmm_unknown_means(y), th.cycle([th.nuts("mu"), th.pgibbs("s", 5)]),
                 num_samples=6, burn_in=0, seed=0, progress=False)


@th.model
def varying_sum(y):
    k = th.sample("k", dist.Poisson(1.0))
    s = 0.0
    for j in range(k + 1):
        s = s + th.sample(f"c{j}", dist.Normal(0.0, 1.0))
    with th.plate("obs", len(y)) as i:
        th.observe("y", dist.Normal(s, 1.0), y[i])


def test_choices_whose_existence_varies_are_all_moved_even_those_not_seen_at_set_up():
    """LMH takes every choice the other kernels do not (``th.lmh(exclude=[...])``, resolved
    in each trace), not the names seen in the prior simulations: c_j of a k never drawn then
    moves too.  P(k | y) against its exact value (k ~ Poisson(1), y | k ~ N(0, I + (k+1) J)):
    z-test on E[k], ESS-based standard error, |z| < 4."""
    y = np.array([2.0, 2.5, 1.5, 2.2])
    kernel, said = default_kernel(varying_sum(y))
    assert "th.lmh(exclude=['c0'])" in said and "any other choice that appears" in said
    tr = th.initialize(varying_sum(y), seed=0, init={"k": 7})  # (c7: no prior trace had it)
    lm = kernel.children[1]
    assert ("c7",) in lm.choices(tr).scalars
    ks = np.arange(40)
    lw = stats.poisson.logpmf(ks, 1.0) + np.array(
        [stats.multivariate_normal(np.zeros(4), np.eye(4) + (k + 1)).logpdf(y) for k in ks])
    p = np.exp(lw - lw.max())
    p /= p.sum()
    r = th.infer(varying_sum(y), num_samples=2000, seed=3, progress=False)
    k = np.asarray(r["k"], float).ravel()
    z = (k.mean() - p @ ks) / (k.std() / np.sqrt(ess(k)))
    assert abs(z) < 4, z


@th.model
def numpy_only(y):
    mu = th.sample("mu", dist.Normal(0.0, 3.0))
    th.observe("y", dist.Normal(np.tanh(mu), 0.5), y)


def test_without_gradients_adaptive_mh_and_the_reason(monkeypatch):
    _, said = default_kernel(numpy_only(0.3))
    assert "adaptive MH (th.drift()) to mu (NUTS cannot differentiate" in said
    assert "np.tanh(mu)" in said
    from thrifty.inference.gradient.hmc import HMC

    def missing():
        raise ImportError("no JAX")

    monkeypatch.setattr(HMC, "check_installed", staticmethod(missing))
    _, said = default_kernel(schools(Y8, S8))
    assert "JAX is not installed: pip install 'thrifty[jax]'" in said
    r = th.infer(numpy_only(0.3), num_samples=4000, seed=2, progress=False)
    assert np.isfinite(r["mu"]).all()


def test_a_program_without_latent_choices_is_an_error():
    @th.model
    def nothing():
        th.observe("y", dist.Normal(0.0, 1.0), 0.5)

    with pytest.raises(th.errors.SelectionError, match="no latent choice"):
        th.infer(nothing(), progress=False)


def test_what_it_assigned_prints_once_when_logging_is_configured_after_import():
    import subprocess
    import sys

    script = (
        "import logging, thrifty as th\n"
        "from thrifty import dist\n"
        "@th.model\n"
        "def m():\n"
        "    th.observe('y', dist.Normal(2.0 * th.sample('z', dist.Bernoulli(probs=0.3)),"
        " 1.0), 1.5)\n"
        "logging.basicConfig(format='ROOT %(message)s')\n"
        "th.infer(m(), num_samples=5, progress=False, seed=0)\n")
    err = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120).stderr
    said = [line for line in err.splitlines() if "assigned Gibbs to z" in line]
    assert len(said) == 1 and said[0].startswith("ROOT "), err


@th.model
def rare_switch(y):
    k = th.sample("k", dist.Bernoulli(0.5))
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    if k == 1 and mu > 3.0:
        th.sample("e", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(mu, 0.1), y)


def test_a_structure_change_the_set_up_did_not_see_names_the_default_kernel():
    """k = 1 creates e when mu > 3 (prior probability 0.0013, certain given y = 5): no trace
    tried at set-up shows it, so the default gives k to Gibbs, which refuses the value when
    it meets it — and says that the default kernel chose Gibbs and what to give instead."""
    with pytest.raises(SelectionError, match=r"default kernel assigned th\.gibbs to it"):
        th.infer(rare_switch(5.0), num_samples=200, burn_in=0, seed=0, progress=False)


def test_a_choice_of_many_values_gets_lmh_not_a_run_per_value():
    """Gibbs would run the program 10⁴ times a step for k ∈ {0, …, 10⁴}; LMH takes it, and its
    posterior (uniform prior, y ~ N(k / 1000, 1)) is right: E k against quadrature."""
    @th.model
    def many(y):
        k = th.sample("k", dist.DiscreteUniform(0, 10_000))
        th.observe("y", dist.Normal(k / 1000.0, 1.0), y)

    r = th.infer(many(4.0), num_samples=4000, burn_in=500, seed=3, progress=False)
    assert "assigned LMH to k" in r.notes[0]
    ks = np.arange(10_001)
    w = stats.norm.pdf(4.0, ks / 1000.0, 1.0)
    mean = (ks * w).sum() / w.sum()
    sd = math.sqrt((ks**2 * w).sum() / w.sum() - mean**2)
    z = mean_z(r["k"].astype(float), mean, sd)
    assert abs(z) < Z_MAX, z


@th.model
def switches(y, where="top"):
    """y_j ~ N(c_j z_j, 1), z_j ~ Bernoulli(0.4) independent, three numbers in one site: at
    the top level (``"top"``), in each element of a plate of one (``"plate"``); a vector of
    one entry (``"one"``, y of length 1)."""
    c = np.array([1.0, 2.0, 3.0])[: len(y)]
    if where == "plate":
        with th.plate("data", 1) as i:
            z = th.sample("z", dist.Bernoulli(probs=np.full((1, 3), 0.4)))
            th.observe("y", dist.Normal(c * z, 1.0), y[None][i])
    else:
        z = th.sample("z", dist.Bernoulli(probs=np.full(len(y), 0.4)))
        th.observe("y", dist.Normal(c * z, 1.0), y)


def test_a_vector_of_finite_choices_gets_lmh():
    """Gibbs enumerates one number's support: th.infer without a kernel stopped at set-up
    with gibbs's error on a vector of Bernoullis (at the top level, in each plate element, a
    vector of one). LMH takes them, and P(z_j = 1 | y) is right (z-tests with ESS-based
    errors, Bonferroni over the three)."""
    y = np.array([0.8, 0.3, 2.5])
    for where, data in (("top", y), ("plate", y), ("one", y[:1])):
        assert "assigned LMH to " in default_kernel(switches(data, where))[1]
    c = np.array([1.0, 2.0, 3.0])
    a, b = 0.4 * stats.norm.pdf(y, c, 1.0), 0.6 * stats.norm.pdf(y, 0.0, 1.0)
    r = th.infer(switches(y), num_samples=3000, burn_in=500, seed=2, progress=False)
    z = r["z"]
    for j, p in enumerate(a / (a + b)):
        assert abs(prob_z(z[..., j], 1, p)) < z_threshold(3), j


@th.model
def counts(y):
    """k ∈ {0, 1, 2}, j ~ Binomial(k + 1, 1/2), u ~ DiscreteUniform(0, j), y ~ N(j + u, 0.7)
    and c = 2 ~ Binomial(k + 1, 1/2): k = 0 makes c impossible, and u's support moves with
    j."""
    k = th.sample("k", dist.Categorical(np.array([0.2, 0.3, 0.5])))
    j = th.sample("j", dist.Binomial(k + 1, 0.5))
    u = th.sample("u", dist.DiscreteUniform(0, j))
    th.observe("y", dist.Normal(j + u, 0.7), y)
    th.observe("c", dist.Binomial(k + 1, 0.5), 2)


def test_finite_choices_some_of_whose_values_are_impossible_get_gibbs():
    """The set-up tries the top-level finite choices at each combination of their values; a
    combination the data rule out (k = 0 with c = 2) or the other choices do (u = 1 with
    j = 0) stopped th.infer without a kernel with an InitializationError about initial values
    nobody gave. Now Gibbs takes them, and the marginals of k, j, u are right (against
    enumeration: chi-square on each)."""
    y = 2.2
    r = th.infer(counts(y), num_samples=4000, burn_in=500, seed=4, progress=False)
    assert "assigned Gibbs to k, j, u" in r.notes[0], r.notes[0]
    w: dict = {}
    for k in range(3):
        for j in range(k + 2):
            for u in range(j + 1):
                w[k, j, u] = ([0.2, 0.3, 0.5][k] * stats.binom.pmf(j, k + 1, 0.5) / (j + 1)
                              * stats.norm.pdf(y, j + u, 0.7) * stats.binom.pmf(2, k + 1, 0.5))
    total = sum(w.values())
    for i, name in enumerate(("k", "j", "u")):
        probs = {v: sum(p for key, p in w.items() if key[i] == v) / total for v in range(4)}
        assert chisq_p(r[name], {v: p for v, p in probs.items() if p > 0}) > P_MIN, name


@th.model
def apart(y):
    """b picks x's support, {0} or {2, 3}: every other value of b puts x outside its support,
    so Gibbs on b, one choice at a time, gives it weight 0."""
    b = th.sample("b", dist.Bernoulli(0.4))
    x = th.sample("x", dist.DiscreteUniform(2, 3) if b else dist.DiscreteUniform(0, 0))
    d = th.sample("d", dist.Bernoulli(0.5))
    th.observe("y", dist.Normal(x + d - b, 1.0), y)


def test_a_choice_whose_values_move_another_s_support_gets_lmh_too():
    """With Gibbs alone the chain kept b where it started (P(b = 1 | y) = 0 or 1 for an exact
    0.374, with no warning from one chain).  The set-up tries each value of a finite choice
    in a run that redraws what it puts outside its support: such a choice gets LMH too (its
    redraws cross between the supports, 001 §2), and P(b = 1 | y) is right (z-test and
    chi-square)."""
    y = 1.2
    r = th.infer(apart(y), num_samples=4000, burn_in=500, seed=1, progress=False)
    assert "LMH also to b (a value of it puts x outside its support)" in r.notes[0], r.notes[0]
    lw = {b: math.log((0.4 / 2 if b else 0.6) * 0.5) + np.logaddexp.reduce(
        [stats.norm.logpdf(y, x + d - b, 1.0) for x in ((2, 3) if b else (0,)) for d in (0, 1)])
        for b in (0, 1)}
    check_discrete(r["b"][0], discrete_posterior(lw), "b")
    _, said = default_kernel(counts(2.2))  # (nested supports, which Gibbs alone connects:
    assert "Gibbs to k, j, u; LMH also to k (" in said, said  # the set-up cannot tell them)


@th.model
def uniform_scale(y, discrete_bound=False):
    """y_i ~ Uniform(0, θ): p(θ | y) ∝ e^{−θ/10} θ^{−n} on θ > max y (a support that moves
    with θ); ``discrete_bound``: the bound moves with a discrete choice k instead, which the
    gradient run holds fixed (θ is then observed through z)."""
    theta = th.sample("theta", dist.Exponential(0.1))
    s = th.sample("s", dist.Normal(0.0, 1.0))
    th.observe("z", dist.Normal(s, 1.0), 0.5)
    with th.plate("data", len(y)) as i:
        if discrete_bound:
            k = th.sample("k", dist.Bernoulli(0.5))
            th.observe("t", dist.Normal(theta, 1.0), 1.0)
            th.observe("y", dist.Uniform(0.0, 6.0 + k), y[i])
        else:
            th.observe("y", dist.Uniform(0.0, theta), y[i])


def test_a_support_that_moves_with_a_choice_gets_a_random_walk_not_nuts():
    """NUTS's trajectories diverge at the wall where θ crosses max y (about half of its
    transitions did); the default kernel gives θ adaptive MH, with the reason, and the
    posterior mean agrees with the exact one (z-test, ESS-based error)."""
    y = np.random.default_rng(0).uniform(0.0, 5.0, size=20)
    trace = th.initialize(uniform_scale(y), 0)
    assert th.nuts(["theta", "s"]).moving_supports(trace) == ["data.y"]
    assert th.nuts(["s"]).moving_supports(trace) == []  # (θ held fixed: no wall for s)
    r = th.infer(uniform_scale(y), num_samples=2000, chains=2, seed=0, progress=False)
    assert "adaptive MH (th.drift()) to theta, s (the support of data.y moves" in r.notes[0]
    grid = np.linspace(y.max(), 4 * y.max(), 200_001)  # (the density at 4 max y: 4⁻²⁰ of it)
    dens = np.exp(-0.1 * grid - 20 * np.log(grid / y.max()))
    cdf = integrate.cumulative_trapezoid(dens, grid, initial=0.0)
    dens, cdf = dens / cdf[-1], cdf / cdf[-1]
    mean = integrate.trapezoid(grid * dens, grid)
    sd = math.sqrt(integrate.trapezoid((grid - mean) ** 2 * dens, grid))
    check_continuous(r["theta"], mean, sd, lambda t: np.interp(t, grid, cdf), "theta")
    # a bound that moves with a choice outside the block (Gibbs moves k): NUTS
    _, said = default_kernel(uniform_scale(y, discrete_bound=True))
    assert "assigned NUTS to theta, s; Gibbs to data.k" in said, said


@th.model
def memo_switch(y):
    """k ~ Bernoulli(½) picks which memoized mean the observation reads: mu(k) ~ N(3k, 1),
    y ~ N(mu(k), 1). Exactly: P(k | y) ∝ ½ N(y; 3k, √2), mu(k) | k, y ~ N((3k + y)/2, √½)."""
    mu = th.mem("mu", lambda key: dist.Normal(3.0 * key, 1.0))
    k = th.sample("k", dist.Bernoulli(0.5))
    th.observe("y", dist.Normal(mu(int(k)), 1.0), y)
    return mu(int(k))


def test_memoized_continuous_values_get_a_random_walk():
    """A memoized function's continuous values get adaptive MH on the keys a trace holds (LMH
    from the prior took about half the effective draws of a DP mixture's table means), and the
    switch that decides which key exists gets LMH: P(k = 1 | y) and the law of the output
    mu(k) against their exact values (z-tests with ESS-based errors, KS)."""
    y = 2.0
    _, said = default_kernel(memo_switch(y))
    assert "adaptive MH (th.drift()) to the memoized values of mu" in said, said
    assert "LMH to k" in said, said
    r = th.infer(memo_switch(y), num_samples=4000, chains=2, seed=1, progress=False)
    lw = np.log([stats.norm.pdf(y, 0.0, math.sqrt(2)), stats.norm.pdf(y, 3.0, math.sqrt(2))])
    p1 = float(np.exp(lw[1] - np.logaddexp(*lw)))
    k = r["k"].astype(float)
    assert abs(prob_z(k, 1.0, p1)) < Z_MAX
    out = np.array([o for chain in r.output for o in chain], dtype=float).reshape(k.shape)
    means, sd = np.array([y / 2, (3.0 + y) / 2]), math.sqrt(0.5)
    mean = (1 - p1) * means[0] + p1 * means[1]
    var = sd**2 + (1 - p1) * p1 * (means[1] - means[0]) ** 2

    def cdf(x):
        return (1 - p1) * stats.norm.cdf(x, means[0], sd) + p1 * stats.norm.cdf(x, means[1], sd)

    check_continuous(out, mean, math.sqrt(var), cdf, "mu(k)")
