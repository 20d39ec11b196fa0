"""``th.drift()`` without a scale adapts during burn-in and is frozen after it.

Thresholds: z-tests of posterior means with ESS-based standard errors, |z| < 4.5 (Z_MAX of
``stat_helpers``; Bonferroni over several coordinates); Geweke min p > 1e-4 (as the other Geweke
tests); acceptance bands are stated where used.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import thrifty as th
from stat_helpers import mean_z, z_threshold
from thrifty import dist
from thrifty.core.simulate import initialize
from thrifty.diagnostics import geweke

RNG = np.random.default_rng(0)
XR = np.c_[np.ones(40), RNG.normal(size=(40, 2))]
XR[:, 2] = 0.9 * XR[:, 1] + 0.45 * XR[:, 2]  # correlated covariates: correlated posterior
WR = np.array([1.0, 2.0, -1.0])
YR = XR @ WR + RNG.normal(size=40)


@th.model
def regression(X, y, prior_var=100.0):
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), prior_var * np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(X[i] @ w, 1.0), y[i])


def exact_regression(X, y, prior_var=100.0):
    prec = X.T @ X + np.eye(X.shape[1]) / prior_var
    cov = np.linalg.inv(prec)
    return cov @ X.T @ y, cov


def test_posterior_of_a_correlated_regression_through_infer():
    mean, cov = exact_regression(XR, YR)
    k = th.mh("w", th.drift())
    r = th.infer(regression(XR, YR), k, num_samples=6000, burn_in=3000, chains=2, seed=1,
                 progress=False)
    w = r["w"]
    zmax = z_threshold(3)
    for j in range(3):
        z = mean_z(w[..., j], mean[j], np.sqrt(cov[j, j]))
        assert abs(z) < zmax, (j, z)
    st = r.stats[k.label()]
    assert 0.15 < st["acceptance_rate"] < 0.35  # near 0.234 (a block of 3)
    prop = st["proposal"][0]["w"]
    assert prop["covariance_windows"] >= 3 and prop["steps"] == 3000


def test_acceptance_reaches_the_target_in_one_and_five_dimensions():
    """Gaussian targets of very different scales: after burn-in the acceptance is within
    ±0.08 of 0.44 (one coordinate) and 0.234 (five) — a fixed sd 0.1 gives ≈ 1."""

    @th.model
    def gauss(d, sd):
        th.sample("x", dist.Normal(np.zeros(d), sd) if d > 1 else dist.Normal(0.0, sd))

    for d, target in ((1, 0.44), (5, 0.234)):
        k = th.mh("x", th.drift())
        sd = 30.0 if d == 1 else np.array([0.01, 1.0, 10.0, 100.0, 3.0])
        r = th.infer(gauss(d, sd), k, num_samples=8000, burn_in=4000, seed=2, progress=False)
        assert abs(r.stats[k.label()]["acceptance_rate"] - target) < 0.08, d
        x = r["x"][0] / sd  # standardised: sd 1 in every coordinate
        assert np.all(np.abs(np.std(x, axis=0) - 1.0) < 0.3), np.std(x, axis=0)


def test_the_sampling_phase_is_a_fixed_kernel():
    """After set_tuning(False) the proposal's parameters never change."""
    k = th.mh("w", th.drift())
    rng = np.random.default_rng(0)
    trace = initialize(regression(XR, YR), rng)
    k.set_tuning(True)
    for _ in range(600):
        trace = k.step(trace, rng)
    k.set_tuning(False)
    (a,) = k.proposal.adapters.values()
    frozen = (a.log_lam, a.chol.copy(), a.t)
    for _ in range(500):
        trace = k.step(trace, rng)
    assert (a.log_lam, a.t) == frozen[::2] and np.array_equal(a.chol, frozen[1])
    assert k.stats.proposal and k.stats.proposal[0]["w"]["steps"] == 600


@th.model
def crp_means(y):
    crp = th.CRP(1.0)
    mu = th.mem("mu", lambda k: dist.Normal(0.0, 3.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu(th.sample("z", crp)), 1.0), y[i])


def test_blocks_first_met_after_the_burn_in_are_not_kept():
    """A CRP mixture's table means, walked as one block: each new set of tables is a block of
    its own.  After the burn-in such a block walks at the initial proposal; it was kept as a new
    adapter, so the table of adapters grew with the chain (1,900 more in 2,000 steps here)
    while none of them ever adapted."""
    y = np.r_[np.linspace(-3.0, -1.0, 8), np.linspace(1.0, 3.0, 8)]
    walk = th.mh("mu", th.drift())
    k = th.cycle([th.gibbs("data.z"), walk])
    rng = np.random.default_rng(0)
    trace = initialize(crp_means(y), rng)
    k.set_tuning(True)
    for _ in range(100):
        trace = k.step(trace, rng)
    k.set_tuning(False)
    kept = dict(walk.proposal.adapters)
    blocks = set()
    for _ in range(2000):
        trace = k.step(trace, rng)
        blocks.add(tuple(sorted(trace.mems[("mu",)].values)))
    assert len(blocks - {tuple(sorted(a[-1] for a in key)) for key in kept}) > 100
    assert walk.proposal.adapters == kept  # the burn-in's adapters, and no others


@th.model
def random_length():
    k = th.sample("k", dist.Categorical(np.array([0.5, 0.5])))
    x = th.sample("x", dist.Normal(np.zeros(k + 1), 1.0))
    th.observe("y", dist.Normal(x.sum(), 1.0), 0.7)


def test_a_vector_choice_of_random_length_keeps_one_adapted_walk_per_length():
    """Each length of a vector choice has its own adapter, learned over all its burn-in steps
    and fixed after it: replacing the adapter at each change of length restarted the
    adaptation (2 of 400 steps kept) and, after the burn-in, put the walk back at sd 0.1 the
    first time the length changed — a kernel that depended on the lengths visited."""
    walk = th.mh("x", th.drift())
    k = th.cycle([th.mh("k"), walk])
    rng = np.random.default_rng(0)
    trace = initialize(random_length(), rng)
    k.set_tuning(True)
    for _ in range(400):
        trace = k.step(trace, rng)
    k.set_tuning(False)
    adapters = walk.proposal.adapters
    assert sorted(a.d for a in adapters.values()) == [1, 2]
    assert sum(a.t for a in adapters.values()) == 400  # every burn-in step of the walk learned
    frozen = {key: (a.log_lam, a.t, np.copy(a.factor())) for key, a in adapters.items()}
    lengths = set()
    for _ in range(400):
        trace = k.step(trace, rng)
        lengths.add(np.size(trace["x"]))
    assert lengths == {1, 2}
    assert frozen.keys() == adapters.keys()
    for key, (log_lam, t, f) in frozen.items():
        a = adapters[key]
        assert (a.log_lam, a.t) == (log_lam, t) and np.array_equal(a.factor(), f)
    (reported,) = walk.stats.proposal
    assert len(reported) == 2 and "x" in reported  # (the other: "x (size 1)" or "x (size 2)")


def test_geweke_of_the_adapted_kernel():
    """The frozen adapted kernel leaves the posterior invariant (Geweke, min p > 1e-4)."""

    @th.model
    def small(X, y):
        w = th.sample("w", dist.MvNormal(np.zeros(2), np.eye(2)))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(X[i] @ w, 1.0), y[i])

    X = XR[:5, :2]
    y = YR[:5]
    k = th.mh("w", th.drift())
    rng = np.random.default_rng(3)
    trace = initialize(small(X, y), rng)
    k.set_tuning(True)
    for _ in range(1500):
        trace = k.step(trace, rng)
    k.set_tuning(False)
    res = geweke(small(X, y), copy.deepcopy(k), num_samples=20_000, seed=4)
    assert res.min_p > 1e-4, res


def test_elementwise_plate_sites_adapt_one_scale():
    @th.model
    def hier(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("g", len(y)) as i:
            z = th.sample("z", dist.Normal(mu, 5.0))
            th.observe("y", dist.Normal(z, 0.5), y[i])

    y = np.linspace(-20, 20, 30)
    k = th.cycle([th.mh("mu", th.drift()), th.mh("g.z", th.drift())])
    r = th.infer(hier(y), k, num_samples=3000, burn_in=2000, seed=0, progress=False)
    zst = r.stats["mh('g.z', drift())"]
    assert abs(zst["acceptance_rate"] - 0.44) < 0.1
    assert "g.z" in zst["proposal"][0]
    post_sd = 1 / np.sqrt(1 / 25 + 1 / 0.25)
    assert abs(np.std(r["g.z"][0] - r["g.z"][0].mean(0), axis=0).mean() - post_sd) < 0.1


def test_checkpoint_resume_mid_burn_in_gives_the_same_draws(tmp_path, monkeypatch):
    """... and the same statistics, split into the burn-in's and the sampling steps'."""
    from test_runtime import ARMED, Interrupting, counts

    monkeypatch.setenv(ARMED, "1")  # it fires once

    kw = dict(num_samples=800, burn_in=1200, chains=2, seed=5, workers=1, progress=False)
    straight = th.infer(regression(XR, YR), th.mh("w", th.drift()), **kw)
    path = tmp_path / "d.ckpt"
    with pytest.warns(UserWarning):
        th.infer(regression(XR, YR), Interrupting(th.mh("w", th.drift()), after=700,
                                                  how="raise"),
                 checkpoint=path, checkpoint_every=0.0, **kw)
    resumed = th.infer(regression(XR, YR), Interrupting(th.mh("w", th.drift()), after=700,
                                                        how="raise"), checkpoint=path, **kw)
    np.testing.assert_array_equal(resumed["w"], straight["w"])
    assert counts(resumed.stats) == counts(straight.stats)


def test_an_adapting_kernel_gets_a_burn_in_by_default_and_burn_in_0_warns():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = th.infer(regression(XR, YR), th.mh("w", th.drift()), num_samples=10, seed=0,
                     progress=False)
    assert not any("burn_in=0" in str(x.message) for x in w)
    assert any(n.startswith("burn_in=1000 by default: mh") for n in r.notes), r.notes
    (stats,) = [v for k, v in r.stats.items() if k != "run"]
    assert stats["steps"] == 10 and stats["proposal"][0]["w"]["steps"] == 1000  # adapted
    assert stats["burn_in"]["steps"] == 1000
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r0 = th.infer(regression(XR, YR), th.mh("w", th.drift()), num_samples=10, burn_in=0,
                      seed=0, progress=False)
    assert any("burn_in=0" in str(x.message) for x in w)
    assert not any(n.startswith("burn_in=") for n in r0.notes)
    # the default burn-in is the one given explicitly: the same draws
    r1 = th.infer(regression(XR, YR), th.mh("w", th.drift()), num_samples=10, burn_in=1000,
                  seed=0, progress=False)
    np.testing.assert_array_equal(r["w"], r1["w"])
    # th.subsampled_mh adapts it too (its default proposal); th.smh does not
    assert th.subsampled_mh("w", 10, 0.01, th.drift()).proposal.adaptive
    with pytest.raises(ValueError, match="without a scale"):
        th.smh("w", proposal=th.drift())


def test_the_block_starts_near_the_mode_unless_init_gives_it():
    """A prior draw of σ² is ~1 here and the posterior's ~100: the adapted block starts at a
    draw from the Laplace approximation (first draw within 6 posterior sds), not where the
    prior put it; with ``init`` it starts there."""
    rng = np.random.default_rng(4)
    X = np.c_[np.ones(60), rng.normal(size=60) * 50]
    y = X @ np.array([300.0, 2.0]) + 10 * rng.normal(size=60)

    @th.model
    def reg(X, y):
        s2 = th.sample("s2", dist.InverseGamma(2.0, 2.0))
        w = th.sample("w", dist.MvNormal(np.zeros(2), 1e4 * s2 * np.eye(2)))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(X[i] @ w, np.sqrt(s2)), y[i])

    r = th.infer(reg(X, y), th.mh(["w", "s2"], th.drift()), num_samples=50, burn_in=10,
                 seed=0, progress=False)
    mean, cov = exact_regression(X, y, prior_var=1e6)  # (for unit noise: w's sd scales by σ ≈ 10)
    w0 = r["w"][0, 0]
    assert np.all(np.abs(w0 - mean) < 6 * 10 * np.sqrt(np.diag(cov))), (w0, mean)
    assert 30 < r["s2"][0, 0] < 300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (burn_in=0 warns: not what is tested here)
        r = th.infer(reg(X, y), th.mh(["w", "s2"], th.drift()), num_samples=1, burn_in=0,
                     seed=0, progress=False, init={"w": np.zeros(2), "s2": 1.0})
    assert abs(r["s2"][0, 0] - 1.0) < 0.5  # started at init (one small step at most)


def test_adapted_kernel_on_the_diabetes_regression_leaves_the_posterior_invariant():
    """The benchmark's regression (intercept + 10 raw diabetes features, w ~ N(0, 10·σ²·I),
    σ² ~ InvGamma(2, 2)) on its first 20 rows: the kernel adapted during 5,000 burn-in steps,
    then frozen, is applied to independent exact draws — (θ, y) from the joint, then 10 steps
    of the frozen kernel on data y from θ.  If the kernel leaves every posterior invariant, θ'
    has the prior's law, like θ (Geweke's test with independent pairs instead of his
    successive-conditional chain, which does not mix here: a random walk with one covariance
    cannot follow σ² over the prior's orders of magnitude).  Paired z-tests of θ'_j − θ_j (w_j
    and log σ²), exact standard errors from 1,500 independent pairs, Bonferroni over 12."""
    from sklearn.datasets import load_diabetes

    X = load_diabetes(return_X_y=True, scaled=False)[0][:20]
    X = np.c_[np.ones(len(X)), X]
    n, d = X.shape

    @th.model
    def diabetes(X, y):
        s2 = th.sample("sigma2", dist.InverseGamma(2.0, 2.0))
        w = th.sample("w", dist.MvNormal(np.zeros(d), 10.0 * s2 * np.eye(d)))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(X[i] @ w, np.sqrt(s2)), y[i])

    rng = np.random.default_rng(11)

    def joint():
        s2 = 1.0 / rng.gamma(2.0, 1.0 / 2.0)
        w = rng.normal(0.0, np.sqrt(10.0 * s2), d)
        return np.r_[w, s2], X @ w + np.sqrt(s2) * rng.normal(size=n)

    k = th.mh(["w", "sigma2"], th.drift())
    trace = initialize(diabetes(X, joint()[1]), rng)
    k.set_tuning(True)
    for _ in range(5000):
        trace = k.step(trace, rng)
    k.set_tuning(False)
    assert k.proposal.describe()["w, sigma2"]["covariance_windows"] >= 5
    acc0, prop0 = k.stats.accepted, k.stats.proposed
    before, after = [], []
    for _ in range(1500):
        theta, y = joint()
        tr = initialize(diabetes(X, y), rng, init={"w": theta[:d], "sigma2": theta[d]})
        for _ in range(10):
            tr = k.step(tr, rng)
        before.append(theta)
        after.append(np.r_[np.asarray(tr[("w",)]), tr[("sigma2",)]])
    b, a = np.array(before), np.array(after)
    b[:, d], a[:, d] = np.log(b[:, d]), np.log(a[:, d])
    assert (k.stats.accepted - acc0) / (k.stats.proposed - prop0) > 0.1  # the kernel moves
    diff = a - b
    z = diff.mean(axis=0) / (diff.std(axis=0) / np.sqrt(len(diff)))
    assert np.all(np.abs(z) < z_threshold(d + 1)), z
