"""Taylor proxies on one cluster's GLM weights (paper 000 §4.2): ``th.subsampled_mh(th.one("w"),
proxy="taylor")`` with ``w = th.mem(...)`` read as ``glm.<family>(X[i], w(z))``.

The per-key sums Σ∇U_i(θ̂_k), Σ∇²U_i(θ̂_k) follow the readers as labels move and the rows as
other kernels change them; these tests check the proxy's Σ l_i against the program's after many
moves, the joint posterior of partitions and row-moving coins at ε = 0 (where every decision is
exact MH's) against enumeration, resume from a checkpoint, the work per step, and the refusals.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from test_exchangeable import chi2_partitions, log_ewens
from test_processes import set_partitions
from thrifty import dist, glm
from thrifty.core.locate import locate
from thrifty.core.vocab import LAZY_CAPTURE
from thrifty.diagnostics._arviz import ess as ess_of
from thrifty.errors import SelectionError
from thrifty.inference.subsampling.subsampled import SubsampledMH
from thrifty.models import joint_dpm

NIW = (np.zeros(2), 0.05, 4.0, np.eye(2))


def small_jdpm(n, seed=0):
    d = th.datasets.clustered_nonlinear(n, 10, seed=seed)
    return joint_dpm(d.X_train, d.y_train, *NIW, 10.0)


def sum_of_l(kernel, trace, rng, addr, theta_new):
    """Σ_i l_i of the proposal ``addr → theta_new`` as ``kernel`` scores it (all sections)."""
    locs = [locate(trace, addr)]
    targets = {addr: theta_new}
    skeleton = kernel.execute(trace, rng, targets=targets, mode=LAZY_CAPTURE)
    scorer = kernel.scorer(trace, rng, skeleton, locs, targets)
    return scorer.offset + float(np.sum(scorer.evaluate(np.arange(scorer.N)))), scorer.N


def assert_sums_agree(proxy, exact, trace, rng, n_keys: int) -> int:
    """For the first ``n_keys`` tables and a random move of each table's weights, the proxy's
    Σ l_i (offset + remainders) equals the program's (``exact``, ε = 0) over the same sections;
    returns the number of tables checked."""
    table = trace.mems[("w",)]
    keys = sorted(table.values)[:n_keys]
    for key in keys:
        new = table.values[key] + 0.3 * rng.standard_normal(np.shape(table.values[key]))
        a, n_a = sum_of_l(proxy, trace, rng, ("w", key), new)
        b, n_b = sum_of_l(exact, trace, rng, ("w", key), new)
        assert n_a == n_b
        assert a == pytest.approx(b, rel=1e-8, abs=1e-8)
    return len(keys)


def test_proxy_sums_equal_the_programs_after_many_label_moves():
    """After hundreds of label updates (tables appearing and emptying) interleaved with accepted
    proxy steps, offset + Σ remainders equals the program's Σ l_i for every table — so the
    incrementally kept sums are right (a missed move shifts them by a whole term)."""
    trace = th.simulate(small_jdpm(400), seed=1)
    rng = np.random.default_rng(0)
    gibbs = th.gibbs(th.one("data.z"))
    proxy = SubsampledMH(th.one("w"), 50, 0.2, th.drift(0.3), proxy="taylor")
    exact = SubsampledMH(th.one("w"), 50, 0.0, th.drift(0.3))
    checked = 0
    for _ in range(12):
        for _ in range(40):
            gibbs.step(trace, rng)
        for _ in range(10):
            proxy.step(trace, rng)
        checked += assert_sums_agree(proxy, exact, trace, rng, 4)
    assert checked >= 40
    s = proxy.stats.as_dict()
    assert s["setups_per_step"] * s["steps"] == 1  # one O(N) set-up, then incremental
    assert s["acceptance_rate"] > 0.1


@th.model
def linear_dpm(X, y):
    """Per-table regression weights, not collapsed (Alg. 8), observed through a glm."""
    crp = th.CRP(1.0)
    w = th.mem("w", lambda k: dist.MvNormal(np.zeros(2), np.eye(2)))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", crp)
        th.observe("y", glm.gaussian(X[i], w(z), 0.5), y[i])


XL = np.array([[1.0, -1.0], [1.0, -0.8], [1.0, 1.2], [1.0, 0.9], [0.5, 0.1]])
YL = np.array([-1.1, -0.7, 2.0, 1.6, 0.3])


def _resume_matches_straight(tmp_path, after: int, part_checked: bool) -> None:
    """A JointDPM chain (Gibbs on the labels, the Taylor-proxy sub-sampled MH on one table's
    weights) stopped after ``after`` steps with a checkpoint and resumed gives the straight
    run's draws."""
    from test_runtime import Interrupting, assert_same

    model = small_jdpm(300)

    def kernel():
        sub = th.subsampled_mh(th.one("w"), 30, 0.2, th.drift(0.3), proxy="taylor")
        return th.cycle([th.cycle([th.gibbs(th.one("data.z"))], repeats=5), sub])

    kw = dict(num_samples=120, burn_in=10, seed=4, progress=False)
    straight = th.infer(model, kernel(), **kw)
    path = tmp_path / "proxy.ckpt"
    with pytest.warns(th.InterruptedWarning):
        part = th.infer(model, Interrupting(kernel(), after=after, how="raise"),
                        checkpoint=path, checkpoint_every=0.0, **kw)
    if part_checked:
        assert part.interrupted
    resumed = th.infer(model, Interrupting(kernel(), after=after, how="raise"), checkpoint=path,
                       **kw)  # the same kernel: a resume compares it
    assert_same(resumed, straight)


def test_resume_from_a_checkpoint_gives_the_same_draws(tmp_path, monkeypatch):
    from test_runtime import ARMED

    monkeypatch.setenv(ARMED, "1")  # it fires once
    _resume_matches_straight(tmp_path, 70, part_checked=True)


def test_a_resume_records_the_end_of_a_key_dropped_after_the_snapshot(tmp_path, monkeypatch):
    """A checkpoint at every step (a tick per step), the run stopped after step 90: a table —
    and its memoized weights ``w.29`` — vanishes at the first draw the resumed chain records.
    The resumed chain's recorder, new, must know which variables the draws before it hold, or
    it never records that one's end (its last value carried on, unlike the straight run)."""
    from test_runtime import ARMED
    from thrifty.runtime import chain

    monkeypatch.setenv(ARMED, "1")
    monkeypatch.setattr(chain, "TICK", 0.0)
    _resume_matches_straight(tmp_path, 90, part_checked=False)


def test_work_per_step_does_not_grow_with_n():
    """The proxy step executes no plate element (the remainders are read from the data) and
    builds a table's sums about once per half-turnover of its readers, at either N."""
    per = {}
    for n in (1_000, 8_000):
        sub = th.subsampled_mh(th.one("w"), 100, 0.3, th.drift(0.3), proxy="taylor")
        kernel = th.cycle([th.cycle([th.gibbs(th.one("data.z"))], repeats=2), sub])
        r = th.infer(small_jdpm(n), kernel, num_samples=300, burn_in=0, seed=0, progress=False)
        s = r.stats[sub.label()]
        setups = round(s["setups_per_step"] * s["steps"])
        assert setups == 1
        # elements executed besides the set-up's three full runs (the data, w perturbed, the
        # other choices perturbed), per step
        per[n] = (s["elements_per_step"] * s["steps"] - 3 * n * setups) / s["steps"]
        assert s["cluster_builds_per_step"] < 0.5
    assert per[1_000] < 3 and per[8_000] < 3  # the lazy run's, not the table's readers


def test_refusals_name_the_address():
    from test_exchangeable import mean_dpm

    x = np.array([-1.5, -1.2, 1.0, 1.4])
    sub = th.subsampled_mh(th.one("mu"), 2, 0.1, th.drift(0.5), proxy="taylor")
    with pytest.raises(SelectionError, match=r"no glm observation in a plate read\(s\) \('mu'"):
        th.infer(mean_dpm(x), th.cycle([th.gibbs("data.z"), sub]), num_samples=5, seed=0,
                 progress=False)
    sub = th.subsampled_mh(th.one("w"), 2, 0.1, th.drift(0.5), proxy="taylor",
                           theta_hat=np.zeros(2))
    with pytest.raises(SelectionError, match="centres are found per key"):
        th.infer(linear_dpm(XL, YL), sub, num_samples=5, seed=0, progress=False)


@th.model
def handmade_dpm(X, y):
    """Like linear_dpm, but the linear predictor written by hand: no glm observation."""
    crp = th.CRP(1.0)
    w = th.mem("w", lambda k: dist.MvNormal(np.zeros(2), np.eye(2)))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", crp)
        th.observe("y", dist.Normal((X[i] * w(z)).sum(-1), 0.5), y[i])


def test_weights_read_outside_a_glm_are_refused():
    sub = th.subsampled_mh(th.one("w"), 2, 0.1, th.drift(0.5), proxy="taylor")
    with pytest.raises(SelectionError, match=r"no glm observation in a plate read\(s\) \('w'"):
        th.infer(handmade_dpm(XL, YL), sub, num_samples=5, seed=0, progress=False)


@th.model
def hierarchical(x, g):
    tau = th.sample("tau", dist.Gamma(2.0, 2.0))
    w = th.mem("w", lambda k: dist.Normal(0.0, tau))
    with th.plate("data", len(x)) as i:
        th.observe("x", dist.Normal(w(g[i]), 1.0), x[i])


def test_a_hyperparameter_of_memoized_values_is_refused():
    """p(w_k | τ) is neither a global term nor a section of τ: subsampled MH on τ would ignore
    it (and leave the keys' densities out of date), so it is refused with the key named."""
    x = np.random.default_rng(0).normal(size=100)
    k = th.subsampled_mh("tau", 20, 0.1, th.drift(0.3))
    with pytest.raises(SelectionError, match=r"density of the memoized value \('w', \d\)"):
        th.infer(hierarchical(x, np.arange(100) % 5), k, num_samples=20, seed=0,
                 progress=False)


@th.model
def moving_rows(X, y):
    """Rows that move with a top-level scale s, a per-element scale u_i and a per-table scale
    v(z_i): the proxy must follow every row the engine re-computes."""
    s = th.sample("s", dist.Gamma(20.0, 20.0))
    crp = th.CRP(1.0)
    w = th.mem("w", lambda k: dist.MvNormal(np.zeros(2), 4.0 * np.eye(2)))
    v = th.mem("v", lambda k: dist.Gamma(20.0, 20.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", crp)
        u = th.sample("u", dist.Gamma(20.0, 20.0))
        th.observe("y", glm.logistic(X[i] * (s * u * v(z))[..., None], w(z)), y[i])


def _moving_rows_data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([0.5, -1.0])))).astype(float)
    return X, y


@pytest.mark.parametrize("movers", [("data.u",), ("data.u", "v"), ("data.u", "s")])
def test_proxy_sums_follow_rows_that_other_kernels_change(movers):
    """Rows X_i·s·u_i·v(z_i): after other kernels move u_i (executing single elements), v(k)
    (a lazy subsampled commit that leaves readers stale) or s (every element executed), the
    proxy's offset + Σ remainders equals the program's Σ l_i for every table.  Per-element
    changes are followed from the plate's execution log, with no new set-up."""
    X, y = _moving_rows_data()
    rng = np.random.default_rng(0)
    trace = th.initialize(moving_rows(X, y), rng, init={"data.z": np.arange(len(y)) % 3})
    others = [th.cycle([th.gibbs(th.one("data.z"))], repeats=3),
              th.cycle([th.mh(th.one("data.u"), th.drift(0.3))], repeats=5)]
    if "v" in movers:
        others.append(SubsampledMH(th.one("v"), 20, 0.1, th.drift(0.2)))
    if "s" in movers:
        others.append(th.mh("s", th.drift(0.1)))
    proxy = SubsampledMH(th.one("w"), 30, 0.2, th.drift(0.3), proxy="taylor")
    exact = SubsampledMH(th.one("w"), 30, 0.0, th.drift(0.3))
    checked, u0 = 0, trace.root.plates[("data",)].sites[("u",)].values.array().copy()
    for _ in range(10):
        for k in others:
            k.step(trace, rng)
        for _ in range(5):
            proxy.step(trace, rng)
        checked += assert_sums_agree(proxy, exact, trace, rng, 3)
    u1 = trace.root.plates[("data",)].sites[("u",)].values.array()
    assert np.sum(u1 != u0) > 20  # the rows did move
    s = proxy.stats.as_dict()
    assert checked >= 20 and s["acceptance_rate"] > 0.05
    if movers == ("data.u",):
        assert s["setups_per_step"] * s["steps"] == 1  # followed from the log: no new set-up


W_PRIOR = dist.MvNormal(np.zeros(2), np.eye(2))


@th.model
def doubled_rows(X, y):
    """linear_dpm whose rows are doubled where a per-element coin c_i says so.  (Every key's
    prior is one distribution object, made once: the same draws as a new MvNormal per read,
    which the ~18 executions of a step of the enumeration test spent ~10% of their time on.)"""
    crp = th.CRP(1.0)
    w = th.mem("w", lambda k: W_PRIOR)
    with th.plate("data", len(y)) as i:
        z = th.sample("z", crp)
        c = th.sample("c", dist.Bernoulli(0.5))
        th.observe("y", glm.gaussian(X[i] * (1.0 + c)[..., None], w(z), 0.5), y[i])


def test_rows_moved_by_a_per_element_choice_match_enumeration():
    """The joint posterior of partitions and coins c (rows x_i·(1 + c_i)) by enumeration, against
    th.infer with the per-table proxy at ε = 0 (every decision is exact MH's given the proxy's
    rows and sums; for a Gaussian glm the second-order expansion is exact, so the decision rests
    on the per-table sums alone): wrong sums, or a row kept from the set-up instead of followed
    through c's moves, show here.
    χ² on the partition marginal and on the coins' marginal, ESS-thinned; threshold 1e-4."""
    n = len(YL)
    parts_z = list(set_partitions(n))
    coins = list(product([0, 1], repeat=n))
    lw = np.empty((len(parts_z), len(coins)))
    for a, p in enumerate(parts_z):
        p = np.array(p)
        for b, c in enumerate(coins):
            xs = XL * (1.0 + np.array(c))[:, None]
            lp = log_ewens(p, 1.0) + n * np.log(0.5)
            for k in range(p.max() + 1):
                x, yk = xs[p == k], YL[p == k]
                cov = 0.25 * np.eye(len(yk)) + x @ x.T
                lp += stats.multivariate_normal(np.zeros(len(yk)), cov).logpdf(yk)
            lw[a, b] = lp
    joint = np.exp(lw - lw.max())
    joint /= joint.sum()
    sub = th.subsampled_mh(th.one("w"), batch_size=2, epsilon=0.0, proposal=th.drift(0.6),
                           proxy="taylor")
    kernel = th.cycle([th.gibbs("data.z"), th.gibbs("data.c"), th.cycle([sub], repeats=3)])
    r = th.infer(doubled_rows(XL, YL), kernel, num_samples=8000, burn_in=300, seed=3,
                 progress=False)
    z, c = r["data.z"][0], r["data.c"][0].astype(int)
    assert chi2_partitions(z, joint.sum(1), parts_z) > 1e-4
    cells = c @ (2 ** np.arange(n)[::-1])  # coins in product order
    ess = min(ess_of((cells == t).astype(float)) for t in np.argsort(joint.sum(0))[-3:])
    cells = cells[:: max(1, int(np.ceil(len(cells) / ess)))]
    counts = np.bincount(cells, minlength=len(coins)).astype(float)
    expected = joint.sum(0) * counts.sum()
    big = expected >= 5
    obs, exp = counts[big], expected[big]
    if (~big).any():
        obs, exp = np.append(obs, counts[~big].sum()), np.append(exp, expected[~big].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-4
    s = r.stats[sub.label()]
    assert s["acceptance_rate"] > 0.2
    # one set-up in the run, at its first step (the burn-in's); the rows followed from the
    # execution log after it
    assert s["burn_in"]["setups_per_step"] * s["burn_in"]["steps"] == 1
    assert s["setups_per_step"] == 0


def _grouped(weights):
    """Two groups' logistic regressions, the group of each row given: the rows' weights are
    ``weights(w(g), i, g)``."""

    @th.model
    def grouped(X, y, g):
        w = th.mem("w", lambda k: dist.MvNormal(np.zeros(2), np.eye(2)))
        with th.plate("data", len(y)) as i:
            th.observe("y", glm.logistic(X[i], weights(w(g[i]), i, g[i])), y[i])

    return grouped


WEIGHTS = {
    "scaled": lambda wz, i, g: 2.0 * wz,
    "masked": lambda wz, i, g: wz * (np.arange(300)[i] % 7 != 0)[:, None],
    "by key": lambda wz, i, g: np.where((g == 1)[:, None], -wz, wz),
}


@pytest.mark.parametrize("name", list(WEIGHTS))
def test_rows_that_are_not_the_memoized_value_are_refused(name):
    """The remainders are computed from the data as U(x_i·w(k)) for every reader of key k: a
    reader whose weights are another function of w(k) had the wrong U_i, silently — with
    ``2 * w(g)`` the posterior means of both keys came out at twice the exact ones (z > 80 at
    N = 6000); a mask left its rows' terms in the test, a sign by key gave one key the other's
    likelihood.  The set-up moves every key and compares each reader's row with its key."""
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(300), rng.normal(size=300)])
    g = rng.integers(0, 2, 300)
    y = (rng.random(300) < 0.5).astype(float)
    k = th.subsampled_mh(th.one("w"), proxy="taylor", proposal=th.drift(0.1))
    with pytest.raises(SelectionError, match=r"proxy='taylor'\): the weights of the glm"):
        th.infer(_grouped(WEIGHTS[name])(X, y, g), k, num_samples=5, burn_in=0, seed=0,
                 progress=False)
    # the memoized value itself: accepted
    r = th.infer(_grouped(lambda wz, i, g: wz)(X, y, g), k, num_samples=5, burn_in=0, seed=0,
                 progress=False)
    assert r["w.0"].shape == (1, 5, 2)

