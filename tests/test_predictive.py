"""Predictive checks, the pointwise log-likelihood and LOO, and the ArviZ groups and dims.

* Eight schools: ``az.loo`` of ``result.to_arviz(log_likelihood=True)`` against exact
  leave-one-out.  The exact elpd is Σ_i log p(y_i | y_{−i}), each term computed by refitting
  without school i — exactly: on a 2-d grid over (μ, τ), with η_i integrated out analytically
  (y_i | μ, τ ~ N(μ, τ² + σ_i²)), so the reference has no Monte Carlo error.  The criterion:
  |elpd_loo − exact| below LOO's standard error, and each school's term within 0.15 nats.
  (Eight Monte Carlo refits through ``th.infer`` were a second reference: two thirds of the
  test's time for a check of the same kernel on the same model that the pointwise comparison
  makes already.)
* Posterior predictive of a Poisson regression with exposures (y_i ~ Poisson(λ e_i),
  λ ~ Gamma(a, b)): the mean of the simulated counts of each element against the analytic
  posterior-predictive mean e_i (a + Σy)/(b + Σe), z-tested with an ESS-based standard error,
  |z| < 4 for each of the 6 elements (a correct sampler fails one with probability < 4e-4).
* Prior predictive: KS test (p > 1e-4) of simulated observations against their exact marginal.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest
import scipy.stats as st
from scipy.special import logsumexp

import thrifty as th
from thrifty import dist
from thrifty.diagnostics._arviz import AZ1, ess
from thrifty.errors import ModelError
from thrifty.runtime import observations as obs

Y8 = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
S8 = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


@th.model
def schools(y, sigma):
    mu = th.sample("mu", dist.Normal(0.0, 5.0))
    tau = th.sample("tau", dist.HalfCauchy(5.0))
    with th.plate("school", len(sigma)) as i:
        eta = th.sample("eta", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu + tau * eta, sigma[i]), y[i])


def exact_loo(y, sigma) -> np.ndarray:
    """log p(y_i | y_{−i}) for each school, by quadrature over (μ, τ)."""
    mu = np.linspace(-25, 35, 601)[:, None]
    tau = np.linspace(1e-4, 60, 1200)[None, :]
    log_prior = st.norm.logpdf(mu, 0, 5) + st.halfcauchy.logpdf(tau, scale=5)
    sd = np.sqrt(tau[..., None] ** 2 + sigma**2)  # (1, T, 8)
    log_lik = st.norm.logpdf(y, mu[..., None], sd)  # (M, T, 8)
    out = []
    for i in range(len(y)):
        log_post = log_prior + log_lik.sum(-1) - log_lik[..., i]
        log_post -= logsumexp(log_post)
        out.append(logsumexp(log_post + log_lik[..., i]))
    return np.array(out)


def schools_kernel():
    return th.cycle([th.mh("mu", th.drift(3.0)), th.mh("tau", th.drift(3.0)),
                     th.mh("school.eta", th.drift(1.0))])


@pytest.mark.slow
def test_loo_of_eight_schools_agrees_with_exact_leave_one_out():
    r = th.infer(schools(Y8, S8), schools_kernel(), num_samples=4000, burn_in=1000, chains=4,
                 seed=0, progress=False)
    data = r.to_arviz(log_likelihood=True)
    ll = data["log_likelihood"]["school.y"]
    assert ll.dims == ("chain", "draw", "school") and ll.shape == (4, 4000, 8)
    loo = az.loo(data)
    elpd, se = (loo.elpd, loo.se) if AZ1 else (loo.elpd_loo, loo.se)
    exact = exact_loo(Y8, S8).sum()
    assert abs(elpd - exact) < se, (elpd, exact, se)
    # pointwise, too: each school's PSIS estimate within 0.15 nats of the exact term
    pointwise = np.asarray(loo.elpd_i if AZ1 else loo.loo_i).ravel()
    np.testing.assert_allclose(pointwise, exact_loo(Y8, S8), atol=0.15)


def test_log_likelihood_group_holds_each_observation_density():
    r = th.infer(schools(Y8, S8), schools_kernel(), num_samples=50, chains=2, seed=1,
                 progress=False)
    ll = r.to_arviz(log_likelihood=True)["log_likelihood"]["school.y"].values
    mu, tau, eta = r["mu"], r["tau"], r["school.eta"]
    want = st.norm.logpdf(Y8, mu[..., None] + tau[..., None] * eta, S8)
    np.testing.assert_allclose(ll, want, rtol=1e-12)


@th.model
def poisson_exposure(e, y, a=2.0, b=1.0):
    lam = th.sample("lam", dist.Gamma(a, b))
    with th.plate("unit", len(e)) as i:
        th.observe("y", dist.Poisson(lam * e[i]), y[i])


def test_posterior_predictive_mean_of_poisson_regression():
    e = np.array([0.5, 1.0, 2.0, 3.0, 5.0, 8.0])
    y = np.array([1, 0, 3, 2, 7, 12])
    r = th.infer(poisson_exposure(e, y), th.mh("lam", th.drift(0.3)), num_samples=4000,
                 burn_in=500, chains=4, seed=0, progress=False)
    pred = th.predictive(poisson_exposure(e, y), r, seed=1)
    sim = pred["unit.y"]
    assert sim.shape == (4, 4000, 6)
    want = e * (2.0 + y.sum()) / (1.0 + e.sum())
    for j in range(6):
        x = sim[..., j]
        z = (x.mean() - want[j]) / (x.std() / np.sqrt(ess(x)))
        assert abs(z) < 4, (j, x.mean(), want[j], z)
    data = r.to_arviz()
    assert data["posterior_predictive"]["unit.y"].dims == ("chain", "draw", "unit")
    np.testing.assert_array_equal(data["observed_data"]["unit.y"].values, y)


def test_prior_predictive_and_new_inputs_without_data():
    @th.model
    def m(n, y=None):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", n) as i:
            th.observe("y", dist.Normal(mu, 1.0), None if y is None else y[i])

    prior = th.predictive(m(3), num_samples=4000, seed=0)
    assert prior["data.y"].shape == (1, 4000, 3) and prior.latent["mu"].shape == (1, 4000)
    p = st.kstest(prior["data.y"][0, :, 0], st.norm(0, np.sqrt(2)).cdf).pvalue
    assert p > 1e-4
    groups = prior.to_arviz()
    assert {"prior", "prior_predictive"} <= set(groups.children if AZ1 else groups.groups())
    # the observed value None is an error outside predictive runs
    with pytest.raises(ModelError, match="None"):
        th.infer(m(3), th.mh("mu"), num_samples=5, progress=False)
    # posterior predictive for new inputs: the program applied to n=5 without data
    r = th.infer(m(3, np.array([1.0, 2.0, 0.5])), th.mh("mu", th.drift(1.0)), num_samples=200,
                 seed=0, progress=False)
    assert th.predictive(m(5), r, seed=0)["data.y"].shape == (1, 200, 5)


@th.model
def branch():
    b = th.sample("b", dist.Bernoulli(0.5))
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    if b:
        th.observe("o", dist.Normal(mu, 1.0), 0.7)
    th.observe("q", dist.Normal(mu, 2.0), -0.4)


@pytest.mark.filterwarnings("ignore:R-hat")  # (the chains are held apart on purpose)
def test_an_observation_some_draws_do_not_execute_is_nan_in_those_draws():
    """``o`` exists only where b = 1: chain 0 is held at b = 0 (th.mh moves μ alone), chain 1
    at b = 1.  Its pointwise log-likelihood is NaN in chain 0 and log N(0.7; μ, 1) in chain 1,
    its posterior predictive NaN and finite there; in the prior predictive it is NaN exactly
    in the draws with b = 0 (the first one among them: ``o`` is not in the first draw), and
    its other draws follow its marginal given b = 1, N(0, 2) (KS, p > 1e-4)."""
    r = th.infer(branch(), th.mh("mu", th.drift(0.5)), num_samples=30, burn_in=0, chains=2,
                 init=[{"b": 0}, {"b": 1}], seed=0, progress=False, workers=1)
    ll = r.to_arviz(log_likelihood=True)["log_likelihood"]
    assert np.isnan(ll["o"].values[0]).all()
    np.testing.assert_allclose(ll["o"].values[1], st.norm.logpdf(0.7, r["mu"][1], 1.0),
                               rtol=1e-12)
    np.testing.assert_allclose(ll["q"].values, st.norm.logpdf(-0.4, r["mu"], 2.0), rtol=1e-12)
    pred = th.predictive(branch(), r, seed=1)
    assert np.isnan(pred["o"][0]).all() and np.isfinite(pred["o"][1]).all()
    prior = th.predictive(branch(), num_samples=2000, seed=0)
    b = prior.latent["b"][0]
    assert b[0] == 0
    np.testing.assert_array_equal(np.isnan(prior["o"][0]), b == 0)
    assert st.kstest(prior["o"][0][b == 1], st.norm(0, np.sqrt(2)).cdf).pvalue > 1e-4


YS_RAGGED = [np.array([0.1, 0.2]), np.array([0.5, 0.3, 0.0]), np.array([1.0])]


@th.model
def per_step(ys):
    """A chain of len(ys) steps observing ``ys[t]`` at step t (values of any shape)."""
    def step(t, prev):
        z = th.sample("z", dist.Normal(prev, 1.0))
        th.observe("y", dist.Normal(z, 0.5), ys[t])
        return z

    th.markov("s", step, len(ys), 0.0)


def test_observations_of_varying_length_across_steps_are_padded_with_nan():
    """A markov chain observing 2, 3 and 1 values at its steps: the observed data and the
    posterior predictive hold ``s.y`` as (steps, 3) padded with NaN after each step's values,
    the simulated values given each draw N(z_t, 0.5) (standardised: KS, p > 1e-4), and the
    pointwise log-likelihood one point per step, Σ_j log N(y_tj; z_t, 0.5)."""
    r = th.infer(per_step(YS_RAGGED), th.lmh(), num_samples=300, burn_in=50, seed=0, progress=False)
    z = r["s.z"]
    data = r.to_arviz(log_likelihood=True)
    want = np.full((3, 3), np.nan)
    for t, y in enumerate(YS_RAGGED):
        want[t, :len(y)] = y
    np.testing.assert_array_equal(data["observed_data"]["s.y"].values, want)
    ll = data["log_likelihood"]["s.y"].values
    for t, y in enumerate(YS_RAGGED):
        np.testing.assert_allclose(ll[..., t], st.norm.logpdf(y, z[..., t, None], 0.5).sum(-1),
                                   rtol=1e-12)
    sim = th.predictive(per_step(YS_RAGGED), r, seed=1)["s.y"]
    assert sim.shape == (1, 300, 3, 3)
    np.testing.assert_array_equal(np.isnan(sim), np.broadcast_to(np.isnan(want), sim.shape))
    e = (sim - z[..., None]) / 0.5
    assert st.kstest(e[~np.isnan(e)], "norm").pvalue > 1e-4


YS_RANKS = [0.3, np.array([0.1, -0.2]), np.array([0.5, 0.4])]


def test_observations_of_varying_rank_are_left_out_with_a_warning_naming_them():
    """A scalar at step 0 and 2-vectors after: no one array holds ``s.y``, so the observed
    data and the predictive leave it out — saying so, not silently; the pointwise
    log-likelihood (one point per step) keeps it."""
    r = th.infer(per_step(YS_RANKS), th.lmh(), num_samples=20, seed=0, progress=False)
    with pytest.warns(obs.VaryingRankWarning, match="'s.y'.*ranks \\[0, 1\\]"):
        data = r.to_arviz(log_likelihood=True)
    assert "observed_data" not in data or "s.y" not in data["observed_data"]
    assert data["log_likelihood"]["s.y"].shape[-1] == 3
    with pytest.warns(obs.VaryingRankWarning, match="'s.y'"):
        pred = th.predictive(per_step(YS_RANKS), r, seed=1)
    assert "s.y" not in pred


def test_predictive_is_reproducible_and_depends_on_seed():
    r = th.infer(schools(Y8, S8), schools_kernel(), num_samples=20, chains=2, seed=1,
                 progress=False)
    a = th.predictive(schools(Y8, S8), r, seed=3)["school.y"]
    b = th.predictive(schools(Y8, S8), r, seed=3)["school.y"]
    c = th.predictive(schools(Y8, S8), r, seed=4)["school.y"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dims_and_coords_read_well():
    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
        f = th.mem("f", lambda k: dist.Normal(mu, 1.0))
        a = f("a") + f("b")

        def step(t, prev):
            x = th.sample("x", dist.Normal(prev, 1.0))
            th.observe("z", dist.Normal(x, 1.0), y[t])
            return x

        th.markov("s", step, len(y), 0.0)
        th.observe("o", dist.Normal(a + w.sum(), 1.0), 0.5)

    r = th.infer(m(np.zeros(4)), th.lmh(), num_samples=100, chains=2, seed=0, progress=False)
    post = r.to_arviz(log_likelihood=True, dims={"w": ["feature"]},
                      coords={"feature": ["x1", "x2", "x3"]})
    p = post["posterior"]
    assert p["s.x"].dims == ("chain", "draw", "s_t")
    assert p["f"].dims == ("chain", "draw", "f_key")
    assert list(p["f"].coords["f_key"].values) == ["a", "b"]
    np.testing.assert_array_equal(p["f"].values[..., 1], r["f.b"])
    assert p["w"].dims == ("chain", "draw", "feature")
    assert list(p["w"].coords["feature"].values) == ["x1", "x2", "x3"]
    assert post["log_likelihood"]["s.z"].dims == ("chain", "draw", "s_t")
    assert post["observed_data"]["o"].values == 0.5


def test_the_prior_s_memoized_keys_are_its_own_coordinates():
    """A memoized function whose keys differ between the posterior's draws (keys 1, 2: the
    observation rules key 0 out) and the prior's (keys 0, 1): ``to_arviz(prior=...)`` merged
    the prior's keys with the posterior's record of where variables live, so ``f.0`` stayed
    apart and ``f`` got the coordinate [1], which then replaced the posterior's [1, 2] —
    xarray's CoordinateValidationError.  Each group now holds its own keys and values."""
    @th.model
    def m():
        k = th.sample("k", dist.Categorical(np.array([0.5, 0.49, 0.01])))
        f = th.mem("f", lambda key: dist.Normal(10.0 * key, 1.0))
        f(k)
        th.observe("y", dist.Bernoulli(0.0 if k == 0 else 0.5), 1)

    r = th.infer(m(), th.lmh(), num_samples=200, seed=0, progress=False)
    prior = th.predictive(m(), num_samples=20, seed=0)
    assert sorted(r.keys()) == ["f.1", "f.2", "k"] and sorted(prior.latent) == ["f.0", "f.1", "k"]
    data = r.to_arviz(prior=prior)
    post, pri = data["posterior"]["f"], data["prior"]["f"]
    assert list(post.coords["f_key"].values) == [1, 2]
    assert list(pri.coords["f_key"].values) == [0, 1]
    np.testing.assert_array_equal(post.values[..., 1], r["f.2"])
    np.testing.assert_array_equal(pri.values[..., 0], prior.latent["f.0"])


def test_factors_are_named_by_the_pointwise_log_likelihood_and_the_prior_predictive():
    """A factor's log-weight may be a prior term or a likelihood term.  The pointwise
    log-likelihood left every factor out silently: a likelihood written as a factor per plate
    element gave no log_likelihood group at all (az.loo then failed with ArviZ's "log
    likelihood not found"), and beside observations a partial one.  A factor in a plate
    element or markov step is now an error naming it, a top-level one is left out with a
    FactorWarning naming it, and a program that observes nothing is an error.  The prior
    predictive drew every choice from its distribution whatever the factors: with
    ``factor(0 if mu > 0 else -inf)`` P(mu < 0) was 0.51 against 0; it is now an error naming
    the factor (the posterior predictive, given the draws, is unaffected)."""
    y = np.array([0.3, -0.2, 1.0])

    @th.model
    def m(kind):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", len(y)) as i:
            if kind == "element":
                th.factor("lik", dist.Normal(mu, 1.0).log_prob(y[i]))
            else:
                th.observe("y", dist.Normal(mu, 1.0), y[i])
        if kind != "element":
            th.factor("pos", 0.0 if mu > 0 else -np.inf)

    def run(kind):
        return th.infer(m(kind), th.mh("mu", th.drift(1.0)), num_samples=20, seed=0,
                        progress=False, init={"mu": 0.5})

    with pytest.raises(ModelError, match=r"factor\(s\) 'data\.lik' add a log-weight per plate"):
        run("element").to_arviz(log_likelihood=True)
    r = run("top")
    with pytest.warns(obs.FactorWarning, match="'pos' are left out"):
        ll = r.to_arviz(log_likelihood=True)["log_likelihood"]["data.y"].values
    np.testing.assert_allclose(ll, st.norm.logpdf(y, r["mu"][..., None], 1.0), rtol=1e-12)
    with pytest.raises(ModelError, match=r"'pos'.*prior predictive"):
        th.predictive(m("top"), num_samples=10, seed=0)
    pred = th.predictive(m("top"), r, seed=1)["data.y"]
    assert pred.shape == (1, 20, 3)

    @th.model
    def factors_only():
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.factor("lik", dist.Normal(mu, 1.0).log_prob(y).sum())

    r = th.infer(factors_only(), th.mh("mu", th.drift(1.0)), num_samples=5, seed=0,
                 progress=False)
    with pytest.raises(ModelError, match=r"observes nothing.*'lik' are not observations"):
        with pytest.warns(obs.FactorWarning):
            r.to_arviz(log_likelihood=True)


def test_a_program_whose_latent_choices_differ_from_the_draws_is_named():
    """th.predictive of a program whose latent choices are not those of the result's draws:
    a plate of 3 elements given the draws of 6 raised a ModelError blaming the model's code
    (IndexError: index 3 is out of bounds), a chain of 3 steps given the draws of 6 a bare
    ValueError listing steps 0..4 as not reached (it reached 0..2).  Both are now
    RecordingErrors naming what differs; a larger plate or a longer chain (new elements,
    steps ahead) are drawn given the recorded choices, as before."""
    from thrifty.errors import RecordingError

    @th.model
    def plated(n):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", n) as i:
            z = th.sample("z", dist.Normal(mu, 1.0))
            th.observe("y", dist.Normal(z, 1.0), np.zeros(n)[i])

    @th.model
    def chain(n):
        def step(t, prev):
            x = th.sample("x", dist.Normal(prev, 1.0))
            th.observe("o", dist.Normal(x, 1.0), 0.5)
            return x

        th.markov("c", step, n, 0.0)

    for model, part in ((plated, r"6 values given to the 3 elements of \('data', \*, 'z'\)"),
                        (chain, r"did not reach the address\(es\) \('c', 3, 'x'\), "
                                r"\('c', 4, 'x'\), \('c', 5, 'x'\)\)")):
        r = th.infer(model(6), th.lmh(), num_samples=5, seed=0, progress=False)
        with pytest.raises(RecordingError, match=part):
            th.predictive(model(3), r)
        sim = th.predictive(model(9), r, seed=0)
        assert next(iter(sim.values())).shape == (1, 5, 9)


def test_one_number_observed_by_every_plate_element():
    """th.observe("y", Normal(mu, 1), 0.7) in a plate of 3: every element observes 0.7 (the
    posterior of mu is that of three observations).  to_arviz() raised ValueError (cannot
    reshape array of size 1 into shape (3,)) reading the observed data, and the pointwise
    log-likelihood likewise; the observed data is now 0.7 per element and each element's
    log-likelihood log N(0.7; mu, 1)."""
    @th.model
    def m():
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", 3):
            th.observe("y", dist.Normal(mu, 1.0), 0.7)

    r = th.infer(m(), th.mh("mu", th.drift(0.8)), num_samples=50, seed=0, progress=False)
    data = r.to_arviz(log_likelihood=True)
    np.testing.assert_array_equal(data["observed_data"]["data.y"].values, [0.7, 0.7, 0.7])
    ll = data["log_likelihood"]["data.y"]
    assert ll.dims == ("chain", "draw", "data")
    np.testing.assert_allclose(ll.values, np.repeat(st.norm.logpdf(0.7, r["mu"], 1.0)[..., None],
                                                    3, axis=2), rtol=1e-12)
    assert th.predictive(m(), r, seed=0)["data.y"].shape == (1, 50, 3)


@th.model
def _scale_model(y):
    mu = th.sample("mu", dist.Normal(0.0, 3.0))
    s = th.sample("s", dist.HalfNormal(3.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Normal(mu, s))
        th.observe("y", dist.Normal(z, 1.0), y[i])
    return [mu, z]


def test_replays_refuse_draws_whose_latent_variables_were_not_recorded():
    """A draw replayed without all of its latent values would draw the missing ones from the
    prior (a posterior predictive of the prior's spread): the predictive, the pointwise
    log-likelihood and outputs computed from the draws refuse, naming what is missing."""
    from thrifty.errors import RecordingError

    y = np.random.default_rng(0).normal(1.0, 3.0, size=20)
    kernel = th.cycle([th.mh(["mu", "s"], th.drift(0.5)), th.mh("data.z", th.drift(0.5))])
    r = th.infer(_scale_model(y), kernel, num_samples=5, seed=0, progress=False, record=["mu"])
    with pytest.raises(RecordingError, match=r"not recorded: data\.z, s; .*record=None"):
        th.predictive(_scale_model(y), r, seed=1)
    with pytest.raises(RecordingError, match=r"not recorded: data\.z, s"):
        r.to_arviz(log_likelihood=True)
    with pytest.raises(RecordingError, match=r"not recorded: data\.z, s"):
        r.output  # noqa: B018  (outputs read plate values: computed by replays)
    r = th.infer(_scale_model(y), kernel, num_samples=5, seed=0, progress=False, exclude="mu")
    with pytest.raises(RecordingError, match=r"not recorded: mu;"):
        th.predictive(_scale_model(y), r, seed=1)
    r = th.infer(_scale_model(y), kernel, num_samples=5, seed=0, progress=False)
    assert th.predictive(_scale_model(y), r, seed=1)["data.y"].shape == (1, 5, 20)
    assert len(r.output[0]) == 5


def test_replays_refuse_a_chain_recorded_as_whole_values():
    """A markov chain whose steps hold a plate is recorded as whole values, which a replay
    cannot set: refused, not replayed with the chain's states drawn afresh."""
    from thrifty.errors import RecordingError

    @th.model
    def m(y):
        def step(t, prev):
            x = th.sample("x", dist.Normal(prev, 1.0))
            with th.plate("obs", 2) as i:
                th.observe("y", dist.Normal(x, 0.5), y[t][i])
            return x

        th.markov("s", step, len(y), 0.0)

    y = np.full((3, 2), 5.0)
    r = th.infer(m(y), th.lmh(), num_samples=5, seed=0, progress=False)
    with pytest.raises(RecordingError, match=r"cannot set s\.x"):
        th.predictive(m(y), r, seed=1)
