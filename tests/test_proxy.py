"""Subsampled MH with Taylor proxies (``th.subsampled_mh(..., proxy="taylor")``)."""

import copy
import math
import pickle

import numpy as np
import pytest

import thrifty as th
from shared_models import (
    abs_weights,
    ar_chain,
    assert_copy_replays,
    bernoulli_model,
    extra_plate_term,
    robust_with_scale,
)
from stat_helpers import ess, z_threshold
from thrifty import dist, glm
from thrifty.core.locate import locate
from thrifty.core.run import RESCORE, Mode, Run
from thrifty.core.simulate import initialize
from thrifty.datasets import synthetic_logistic
from thrifty.errors import SelectionError
from thrifty.inference.subsampling.proxy import TaylorSections
from thrifty.models.logistic import laplace, logistic_regression


def exact_log_ratio(trace, new):
    if trace.maybe_stale:  # the proxy leaves plate elements stale: rescore them first
        Run(trace, np.random.default_rng(0), mode=RESCORE).execute().commit()
    run = Run(trace, np.random.default_rng(0), targets={("w",): new}, mode=RESCORE).execute()
    return run.log_weight


def test_offset_plus_remainders_is_the_exact_log_ratio():
    X, y, _ = synthetic_logistic(5000, 3, seed=0)
    rng = np.random.default_rng(1)
    mode, cov = laplace(X, y)
    k = th.subsampled_mh("w", proxy="taylor")
    for scale in (0.1, 1.0, 10.0):  # near the mode and far from it
        theta = mode + scale * rng.multivariate_normal(np.zeros(3), cov)
        trace2 = initialize(logistic_regression(X, y), rng, init={"w": theta})
        new = theta + 0.5 * rng.multivariate_normal(np.zeros(3), cov)
        targets = {("w",): new}
        skel = Run(trace2, rng, targets=targets, mode=Mode.LAZY_CAPTURE).execute()
        scorer = k.scorer(trace2, rng, skel, [locate(trace2, ("w",))], targets)
        assert isinstance(scorer, TaylorSections) and scorer.N == 5000
        total = skel.log_weight + scorer.offset + scorer.evaluate(np.arange(5000)).sum()
        want = exact_log_ratio(trace2, new)
        assert total == pytest.approx(want, rel=1e-9, abs=1e-8)


def test_epsilon_zero_decisions_equal_exact_mh_for_the_same_u():
    X, y, _ = synthetic_logistic(3000, 2, theta=[1.0, -0.5], seed=0)
    rng = np.random.default_rng(1)
    trace = initialize(logistic_regression(X, y), rng)
    k = th.subsampled_mh("w", batch_size=100, epsilon=0.0, proxy="taylor")
    accepted_any = False
    for _ in range(60):
        loc = locate(trace, ("w",))
        new = loc.value + 0.03 * rng.standard_normal(2)
        log_alpha = exact_log_ratio(trace, new)
        log_u = math.log(rng.random())
        accepted = k.decide(trace, rng, [loc], {("w",): new}, 0.0, log_u)
        assert accepted == (log_u < log_alpha)
        assert k.last_outcome.exact
        if accepted:
            accepted_any = True
            np.testing.assert_array_equal(trace["w"], new)
    assert accepted_any


def test_few_sections_and_no_wrong_decisions_at_an_efficient_scale():
    """At the optimal random-walk scale, the plain test reads most of the data; with the proxy
    one or two minibatches decide, and the decisions agree with exact MH."""
    X, y, _ = synthetic_logistic(20_000, 5, theta=1.0, seed=2)
    prog = logistic_regression(X, y)
    mode, cov = laplace(X, y)
    sigma = 2.38 / math.sqrt(5) * float(np.sqrt(np.diag(cov)).mean())
    rows = {}
    for proxy in (None, "taylor"):
        k = th.subsampled_mh("w", 100, 0.01, th.drift(sigma), proxy=proxy)
        rows[proxy] = th.diagnostics.check_subsampling(
            prog, k, steps=150, burn_in=0, init={"w": mode}, seed=3
        )
    plain, proxy = rows[None], rows["taylor"]
    assert proxy.data_fraction < 0.02 < 0.2 < plain.data_fraction, (proxy, plain)
    assert proxy.wrong_decision_rate <= 0.01, proxy.report()
    assert "proxy='taylor'" in plain.recommendation and "proxy=" not in proxy.recommendation


def test_commit_leaves_elements_stale_and_exact_kernels_refresh_them():
    X, y, _ = synthetic_logistic(2000, 2, seed=4)
    prog = logistic_regression(X, y)
    rng = np.random.default_rng(0)
    trace = initialize(prog, rng)
    mode, _ = laplace(X, y)
    trace = initialize(prog, rng, init={"w": mode})
    k = th.subsampled_mh("w", 100, 0.05, th.drift(0.01), proxy="taylor")
    while k.stats.accepted == 0:
        k.step(trace, rng)
    assert trace.maybe_stale
    th.mh("w").refresh(trace, rng)  # what an exact kernel does before its step
    assert not trace.has_stale()
    fresh = th.simulate(prog, seed=0)
    want = Run(fresh, rng, targets={("w",): trace["w"]}, mode=RESCORE).execute().lp_new
    assert trace.log_joint() == pytest.approx(want, rel=1e-10)


def test_setup_redone_when_family_parameters_change_and_decisions_stay_exact():
    rng = np.random.default_rng(5)
    X = np.c_[np.ones(1500), rng.standard_normal(1500)]
    y = X @ np.array([1.0, -2.0]) + rng.standard_t(4.0, 1500)
    prog = robust_with_scale(X, y)
    k = th.subsampled_mh("w", 100, 0.0, th.drift(0.05), proxy="taylor")
    r = th.infer(prog, th.cycle([k, th.mh("s", th.drift(0.05))]), 100, seed=0, progress=False)
    s = next(v for label, v in r.stats.items() if label.startswith("subsampled"))
    assert s["setups_per_step"] * s["steps"] > 5 and s["ran_to_N_per_step"] == 1.0
    assert np.isfinite(r["w"]).all()


def test_copies_drop_the_setup_and_replay_identically():
    X, y, _ = synthetic_logistic(3000, 3, seed=6)
    trace = th.simulate(logistic_regression(X, y), seed=1)
    k = th.subsampled_mh("w", 100, 0.01, th.drift(0.02), proxy="taylor")
    rng = np.random.default_rng(0)
    for _ in range(5):
        k.step(trace, rng)
    assert pickle.loads(pickle.dumps(k)).proxy._helper is None
    assert copy.deepcopy(k).proxy._helper is None
    assert_copy_replays(k, trace)


# -- errors -------------------------------------------------------------------------------------
@th.model
def two_choices(X, y):
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    b = th.sample("b", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], w + b), y[i])


def test_errors_name_the_address():
    X, y, _ = synthetic_logistic(200, 2, seed=8)
    rng = np.random.default_rng(0)
    for prog, match in [
        (extra_plate_term(X, y), r"proxy='taylor'\): .*data.*not glm"),
        (bernoulli_model(X, y), r"proxy='taylor'\): no glm observation"),
    ]:
        trace = th.simulate(prog, seed=0)
        with pytest.raises(SelectionError, match=match):
            th.subsampled_mh("w", proxy="taylor").step(trace, rng)
    trace = th.simulate(two_choices(X, y), seed=0)
    with pytest.raises(SelectionError, match="one top-level vector"):
        th.subsampled_mh(["w", "b"], proxy="taylor").step(trace, rng)
    trace = th.simulate(ar_chain(30), seed=0)
    with pytest.raises(SelectionError, match="markov chain"):
        th.subsampled_mh("phi", proxy="taylor").step(trace, rng)
    with pytest.raises(ValueError, match="proxy must be"):
        th.subsampled_mh("w", proxy="linear")
    with pytest.raises(ValueError, match="theta_hat"):
        th.subsampled_mh("w", theta_hat=np.zeros(2))


def test_weights_equal_to_w_only_where_the_sections_were_found_are_refused():
    """The set-up sees the weights equal w at w and at a nearby point (both positive); the
    remainders then took U(x_i·w') for U(x_i·|w'|) wherever w' < 0 — the chain never went
    below 0, where half of the posterior is.  As for th.smh, the lazy run of every step builds
    the GLM at w': its weights must be w'."""
    X, y, _ = synthetic_logistic(80, 2, seed=13)
    k = th.subsampled_mh("w", proxy="taylor", proposal=th.drift(0.5))
    with pytest.raises(SelectionError, match=r"proxy='taylor'\): the weights of the glm"):
        th.infer(abs_weights(X, y), k, num_samples=300, burn_in=0, seed=0,
                 init={"w": np.array([0.5, 0.5])}, progress=False)


# -- bias on a known posterior --------------------------------------------------------------------
BIAS_BOUND = 0.1  # posterior sd: the documented bound on the bias of the posterior means


class Tilted(TaylorSections):
    """Negative control: a target tilted by exp(a·θ₀), which moves the posterior mean of θ₀ by
    about a·sd₀² (``a`` set by the test to 0.4 sd of bias)."""

    a = 0.0

    def __init__(self, helper, st, theta, theta_new):
        super().__init__(helper, st, theta, theta_new)
        self.offset += self.a * float(theta_new[0] - theta[0])


def reference(X, y, mode, cov, draws=40_000, seed=0):
    """Posterior mean and sd of ``logistic_regression(X, y)`` (prior N(0, 0.1 I)) by
    self-normalized importance sampling from the inflated Laplace approximation."""
    rng = np.random.default_rng(seed)
    L = 1.5 * np.linalg.cholesky(cov)
    W = mode + rng.standard_normal((draws, len(mode))) @ L.T
    z = np.linalg.solve(L, (W - mode).T)
    log_w = W @ (X.T @ y) - 5.0 * np.sum(W * W, axis=1) + 0.5 * np.sum(z * z, axis=0)
    for s in range(0, draws, 250):  # (blocks of draws: X @ W.T whole would be 3 GB)
        eta = X @ W[s:s + 250].T
        # log(1 + e^η) as log1p(exp(η)): np.logaddexp(0, η) is the same number to rounding but
        # ~10× slower, most of this test's time; an η past exp's range gives inf, caught below
        softplus = np.log1p(np.exp(eta, out=eta), out=eta).sum(axis=0)
        assert np.all(np.isfinite(softplus))
        log_w[s:s + 250] -= softplus
    wts = np.exp(log_w - log_w.max())
    wts /= wts.sum()
    mean = wts @ W
    return mean, np.sqrt(wts @ (W - mean) ** 2), 1.0 / np.sum(wts**2)


@pytest.mark.slow
def test_bias_of_the_posterior_means_below_the_bound():
    """ε = 0.01 at the optimal random-walk scale, N = 10⁴, d = 3: every posterior mean within
    ``BIAS_BOUND`` sd of the exact posterior (one-sided z-test of |mean − exact| − bound with
    ESS-based standard errors, Bonferroni over the coordinates); the negative control, biased
    by 0.4 sd in one coordinate, fails the same test."""
    X, y, _ = synthetic_logistic(10_000, 3, theta=1.0, seed=9)
    prog = logistic_regression(X, y)
    mode, cov = laplace(X, y)
    mean, sd, ref_ess = reference(X, y.astype(float), mode, cov)
    assert ref_ess > 10_000
    sigma = 2.38 / math.sqrt(3) * float(np.sqrt(np.diag(cov)).mean())
    zmax = z_threshold(3)

    def excess_z(kernel, seed):
        r = th.infer(
            prog, kernel, num_samples=20_000, burn_in=500, seed=seed, init={"w": mode},
            progress=False,
        )  # fmt: skip
        w = r["w"][0]
        out = []
        for j in range(3):
            se = math.sqrt(w[:, j].var() / ess(w[:, j]) + (sd[j] ** 2) / ref_ess)
            out.append((abs(w[:, j].mean() - mean[j]) - BIAS_BOUND * sd[j]) / se)
        return np.array(out)

    k = th.subsampled_mh("w", 100, 0.01, th.drift(sigma), proxy="taylor")
    z = excess_z(k, seed=1)
    assert np.all(z < zmax), z

    import thrifty.inference.subsampling.proxy as proxy_mod

    real = proxy_mod.TaylorSections
    Tilted.a = 0.4 / sd[0]
    proxy_mod.TaylorSections = Tilted
    try:
        z_bad = excess_z(th.subsampled_mh("w", 100, 0.01, th.drift(sigma), proxy="taylor"), 2)
    finally:
        proxy_mod.TaylorSections = real
    assert z_bad[0] > zmax, z_bad


def test_doctests():
    import doctest

    import thrifty.inference.numerics.sequential
    import thrifty.inference.subsampling.austerity
    import thrifty.inference.subsampling.proxy
    import thrifty.inference.subsampling.sgld
    import thrifty.inference.subsampling.subsampled
    import thrifty.models.logistic

    for mod in (
        thrifty.models.logistic,
        thrifty.inference.subsampling.subsampled,
        thrifty.inference.numerics.sequential,
        thrifty.inference.subsampling.proxy,
        thrifty.inference.subsampling.austerity,
        thrifty.inference.subsampling.sgld,
    ):
        res = doctest.testmod(mod, verbose=False, report=False)
        assert res.failed == 0, mod.__name__


def test_pickles_without_scratch_arrays():
    X, y, _ = synthetic_logistic(20_000, 2, seed=10)
    trace = th.simulate(logistic_regression(X, y), seed=0)
    k = th.subsampled_mh("w", 100, 0.0, th.drift(0.01))  # ε = 0: every section, every step
    k.step(trace, np.random.default_rng(0))
    assert k._mask is not None and k._sorter is not None
    assert len(pickle.dumps(k)) < 20_000  # not O(N)
    assert_copy_replays(k, trace, steps=3)
