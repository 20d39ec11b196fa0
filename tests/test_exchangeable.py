"""Exchangeable sites in models (paper 000 §4.2): th.CRP draws and collapsed observations in plates.

Posterior tests compare partition frequencies of a chain with exact enumeration over the Bell(n)
partitions.  Draws are thinned by ⌈n / ESS⌉, the ESS (ArviZ) of the indicators of the most
probable partitions (the smallest), so that the kept draws are close to independent; then a χ²
test over the cells with expected count ≥ 5 (the rest pooled) must have p > 1e-4, seeds fixed.
Kernels that move the labels alone (LMH, element-wise MH) are checked instead by their exact
transition matrices on a few points (tests/exact_kernel.py): πP = π to 1e-10.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import thrifty as th
from test_processes import canonical, set_partitions
from thrifty import dist
from thrifty.diagnostics._arviz import ess as ess_of
from thrifty.errors import ModelError
from thrifty.processes.collapsed import NormalGamma, NormalInverseWishart


def log_ewens(p, alpha):
    c = np.bincount(p)
    return (len(c) * math.log(alpha) + math.lgamma(alpha) - math.lgamma(alpha + len(p))
            + sum(math.lgamma(v) for v in c))


def chi2_partitions(z, probs, parts, thin=None):
    """χ² p-value of the partitions in draws ``z`` (draws × n) against ``probs``."""
    index = {p: i for i, p in enumerate(parts)}
    cells = np.array([index[canonical(row)] for row in z])
    ess = min(ess_of((cells == top).astype(float), method="mean")
              for top in np.argsort(probs)[-3:])
    cells = cells[:: max(1, math.ceil(len(cells) / ess))]
    counts = np.bincount(cells, minlength=len(parts)).astype(float)
    n = counts.sum()
    big = probs * n >= 5
    obs, exp = counts[big], probs[big] * n
    if (~big).any():
        obs, exp = np.append(obs, counts[~big].sum()), np.append(exp, probs[~big].sum() * n)
    return stats.chisquare(obs, exp).pvalue


@th.model
def seating(n, alpha):
    crp = th.CRP(alpha)
    with th.plate("guests", n):
        return th.sample("table", crp)


def test_crp_prior_through_simulate_matches_ewens():
    alpha, n, draws = 1.7, 5, 6000
    parts = list(set_partitions(n))
    probs = np.exp([log_ewens(np.array(p), alpha) for p in parts])
    z = np.array([th.simulate(seating(n, alpha), seed=s).output for s in range(draws)])
    assert chi2_partitions(z, probs, parts) > 1e-4
    t = th.simulate(seating(n, alpha), seed=3)
    assert t.log_joint() == pytest.approx(log_ewens(np.array(canonical(t.output)), alpha))


X6 = np.array([-2.0, -1.8, 0.1, 0.0, 2.2, 2.0])
NG = (0.0, 0.1, 2.0, 2.0)


@th.model
def dpm(x, alpha):
    a = th.sample("alpha", dist.Gamma(1.0, 1.0)) if alpha is None else alpha
    crp = th.CRP(a)
    feats = th.mem("feats", lambda k: th.collapsed.NormalGamma(*NG))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", feats(z), x[i])
    return z


def exact_dpm(x, log_prior_of_partition, family):
    parts = list(set_partitions(len(x)))
    lw = []
    for p in parts:
        p = np.array(p)
        lp = log_prior_of_partition(p)
        for k in range(p.max() + 1):
            f = family()
            for v in x[p == k]:
                f.incorporate(v)
            lp += f.marginal_log_prob()
        lw.append(lp)
    w = np.exp(np.array(lw) - max(lw))
    return parts, w / w.sum()


def test_log_joint_is_ewens_plus_cluster_marginals():
    t = th.simulate(dpm(X6, None), seed=1)
    z, a = t.output, t["alpha"]
    want = stats.gamma.logpdf(a, 1.0) + log_ewens(np.array(canonical(z)), a)
    for k in np.unique(z):
        f = NormalGamma(*NG)
        for v in X6[z == k]:
            f.incorporate(v)
        want += f.marginal_log_prob()
    assert t.log_joint() == pytest.approx(want, abs=1e-9)


def test_gibbs_and_mh_on_alpha_match_enumeration():
    def prior(p):  # ∫ Ewens(p; α) Gamma(α; 1, 1) dα
        val, _ = integrate.quad(lambda a: math.exp(log_ewens(p, a) - a), 0, np.inf)
        return math.log(val)

    parts, probs = exact_dpm(X6, prior, lambda: NormalGamma(*NG))
    kernel = th.cycle([th.mh("alpha", th.drift(0.8)), th.gibbs("data.z")])
    r = th.infer(dpm(X6, None), kernel, num_samples=6000, burn_in=200, seed=2, progress=False)
    assert chi2_partitions(r["data.z"][0], probs, parts) > 1e-4


def _labels(trace):
    return canonical(trace.values()["data.z"].tolist())


def test_lmh_on_the_labels_leaves_the_partition_posterior_invariant():
    """LMH resamples one label from its prior — the CRP predictive given the others: the exact
    transition matrix of a step (tests/exact_kernel.py: the pick, the table draw and the
    accept test scripted) over the 52 partitions of five points, πP = π to 1e-10 and P
    irreducible; negative control: the posterior for α = 2 is moved."""
    from exact_kernel import assert_stationary, lmh_draws, transition_matrix

    x = X6[:5]
    parts, probs = exact_dpm(x, lambda p: log_ewens(p, 1.0), lambda: NormalGamma(*NG))
    _, wrong = exact_dpm(x, lambda p: log_ewens(p, 2.0), lambda: NormalGamma(*NG))
    P = transition_matrix(dpm(x, 1.0), th.lmh(), parts, lambda s: {"data.z": np.array(s)},
                          _labels, draws=lmh_draws, check=True)
    assert_stationary(probs, P)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-3


X2 = np.array([[-2.0, 0.5], [-1.7, 0.8], [0.1, -0.2], [2.0, 2.2], [2.3, 1.9]])


@th.model
def niw_dpm(x):
    crp = th.CRP(0.8)
    feats = th.mem("feats", lambda k: th.collapsed.NormalInverseWishart(np.zeros(2), 0.2, 4.0,
                                                                        np.eye(2)))
    with th.plate("data", len(x)) as i:
        th.observe("x", feats(th.sample("z", crp)), x[i])


class NormalKnownVariance:
    """A cluster of mean_dpm with its mean integrated out: N(x; 0, 0.25 I + 4 11ᵀ)."""

    def __init__(self):
        self.xs = []

    def incorporate(self, v):
        self.xs.append(v)

    def marginal_log_prob(self):
        n = len(self.xs)
        cov = 0.25 * np.eye(n) + 4.0 * np.ones((n, n))
        return stats.multivariate_normal(np.zeros(n), cov).logpdf(self.xs)


@th.model
def mean_dpm(x):
    """Per-table means that are *not* collapsed: Gibbs on z is Neal's Alg. 8 (m = 1)."""
    crp = th.CRP(1.0)
    mu = th.mem("mu", lambda k: dist.Normal(0.0, 2.0))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", crp)
        th.observe("x", dist.Normal(mu(z), 0.5), x[i])


def test_uncollapsed_table_parameters_alg8_matches_enumeration():
    x = np.array([-1.5, -1.2, 1.0, 1.4])

    parts, probs = exact_dpm(x, lambda p: log_ewens(p, 1.0), NormalKnownVariance)
    kernel = th.cycle([th.gibbs("data.z"), th.mh("mu", th.drift(0.7))])
    r = th.infer(mean_dpm(x), kernel, num_samples=8000, burn_in=300, seed=5, progress=False)
    assert chi2_partitions(r["data.z"][0], probs, parts) > 1e-4


def test_a_label_update_scores_its_candidates_in_one_run_whatever_n():
    work = []
    for n in (200, 2000):
        x = np.random.default_rng(0).normal(size=n)
        r = th.infer(dpm(x, 1.0), th.gibbs(th.one("data.z")), num_samples=200, burn_in=0,
                     seed=0, init={"data.z": np.zeros(n, dtype=int)}, progress=False)
        s = r.stats["gibbs(one('data.z'))"]
        # one run scoring the candidates in lanes of one element, one more committing a change
        assert 1.0 <= s["runs_per_step"] <= 2.0
        work.append(s["elements_per_step"])
    assert work[1] < 2 * work[0]  # O(K), not O(N)


def test_coupled_sites_are_refused_where_they_cannot_be_exact():
    @th.model
    def top():
        return th.sample("z", th.CRP(1.0))

    with pytest.raises(ModelError, match="inside a plate"):
        th.simulate(top(), seed=0)

    @th.model
    def top_collapsed():
        c = th.mem("c", lambda k: th.collapsed.BetaBernoulli(1.0, 1.0))
        th.observe("y", c(0), 1)

    with pytest.raises(ModelError, match="inside a plate"):
        th.simulate(top_collapsed(), seed=0)
    with pytest.raises(ModelError, match="simulating it"):
        th.diagnostics.geweke(dpm(X6, 1.0), th.gibbs("data.z"), num_samples=20, seed=0)
    r = th.infer(dpm(X6, 1.0), th.gibbs("data.z"), num_samples=20, seed=0, progress=False)
    idata = r.to_arviz()
    groups = idata.children if hasattr(idata, "children") else idata.groups()  # ArviZ 1.x / 0.2x
    assert "observed_data" in groups  # the data, yes
    with pytest.raises(ModelError, match="no pointwise log-density"):
        r.to_arviz(log_likelihood=True)  # LOO terms: not defined for coupled observations


def test_elementwise_mh_on_a_coupled_plate_decides_one_element_at_a_time():
    """th.mh("data.z", th.prior()) on CRP labels proposes each label from its predictive given
    the labels decided before it and accepts or rejects it before the next: the exact
    transition matrix of a step (every table draw and accept test scripted) over the five
    partitions of three points, πP = π to 1e-10 and P irreducible, each path's trace that of
    a full execution; negative control: the posterior for α = 2 is moved."""
    from exact_kernel import all_draws, assert_stationary, transition_matrix

    x = X6[[0, 2, 4]]
    parts, probs = exact_dpm(x, lambda p: log_ewens(p, 1.0), lambda: NormalGamma(*NG))
    _, wrong = exact_dpm(x, lambda p: log_ewens(p, 2.0), lambda: NormalGamma(*NG))
    P = transition_matrix(dpm(x, 1.0), th.mh("data.z", th.prior()), parts,
                          lambda s: {"data.z": np.array(s)}, _labels, draws=all_draws,
                          check=True)
    assert_stationary(probs, P)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-3


def test_bare_collapsed_family_in_a_plate():
    @th.model
    def coin(y):
        with th.plate("flips", len(y)) as i:
            th.observe("y", th.collapsed.BetaBernoulli(2.0, 3.0), y[i])

    y = np.array([1, 0, 1, 1])
    t = th.simulate(coin(y), seed=0)
    from scipy.special import betaln

    assert t.log_joint() == pytest.approx(betaln(2 + 3, 3 + 1) - betaln(2, 3), abs=1e-12)


def test_subsampled_mh_on_one_tables_parameters_as_tables_come_and_go():
    """``subsampled_mh(th.one("mu"))``: the sections are the readers of one table's mean (the
    points seated there), which change with every label update; at ε = 0 it decides as exact
    MH, so the partition posterior is the enumerated one."""
    x = np.array([-1.5, -1.2, 1.0, 1.4])

    parts, probs = exact_dpm(x, lambda p: log_ewens(p, 1.0), NormalKnownVariance)
    sub = th.subsampled_mh(th.one("mu"), batch_size=2, epsilon=0.0, proposal=th.drift(0.7))
    kernel = th.cycle([th.gibbs("data.z"), th.cycle([sub], repeats=2)])
    r = th.infer(mean_dpm(x), kernel, num_samples=8000, burn_in=300, seed=7, progress=False)
    assert chi2_partitions(r["data.z"][0], probs, parts) > 1e-4
    assert r.stats[sub.label()]["acceptance_rate"] > 0.2


def test_docstring_examples_run():
    import doctest

    import thrifty.collapsed
    import thrifty.models.dpm
    import thrifty.processes.collapsed
    import thrifty.processes.crp

    for mod in (thrifty.collapsed, thrifty.models.dpm, thrifty.processes.crp,
                thrifty.processes.collapsed):
        result = doctest.testmod(mod, verbose=False, report=False)
        assert result.failed == 0 and result.attempted > 0, mod.__name__


def test_checkpoint_resume_and_workers_give_the_same_draws(tmp_path, monkeypatch):
    """The seating and the clusters' statistics live in the trace: a run resumed from a
    checkpoint, and chains in worker processes, give the draws of a straight run.  A short run
    suffices: every step redraws the six labels from weights computed from the seating and the
    clusters' statistics, so a state not restored (or not sent to a worker) changes the draws
    of the 15 steps after the interruption (step 36 of chain 0's 50), and chain 1's."""
    from test_runtime import ARMED, Interrupting, assert_same

    monkeypatch.setenv(ARMED, "1")  # it fires once

    kernel = lambda: th.cycle([th.mh("alpha", th.drift(0.8)), th.gibbs("data.z")])  # noqa: E731
    kw = dict(num_samples=40, burn_in=10, chains=2, seed=9, progress=False)
    straight = th.infer(dpm(X6, None), kernel(), workers=1, **kw)
    path = tmp_path / "dpm.ckpt"
    with pytest.warns(th.InterruptedWarning):
        part = th.infer(dpm(X6, None), Interrupting(kernel(), after=35, how="raise"),
                        checkpoint=path, checkpoint_every=0.0, workers=1, **kw)
    assert part.interrupted
    resumed = th.infer(dpm(X6, None), Interrupting(kernel(), after=35, how="raise"),
                       checkpoint=path, workers=1, **kw)  # the same kernel: a resume compares it
    assert_same(resumed, straight)
    assert_same(th.infer(dpm(X6, None), kernel(), workers=2, **kw), straight)


def test_adaptive_lmh_on_a_dp_mixture_with_tables_coming_and_going():
    """AdLMH resamples labels (the CRP predictive) and table means; a label moved to a new
    table creates a mem entry and an emptied table drops one — Eq. 6's ΣW/ΣW' with the arms
    added and removed one by one."""
    from thrifty.inference.mcmc.adaptive import AdaptationWarning

    x = np.array([-1.5, -1.2, 1.0, 1.4])
    parts, probs = exact_dpm(x, lambda p: log_ewens(p, 1.0), NormalKnownVariance)
    r = th.infer(mean_dpm(x), th.adaptive_lmh(freeze_after=2000), num_samples=30000,
                 burn_in=2000, seed=8, progress=False)
    assert chi2_partitions(r["data.z"][0], probs, parts) > 1e-4
    # adapting forever, every new table is a fresh arm: the adaptation never diminishes (and
    # the partition frequencies are measurably off: 0.70 vs 0.575 for the top one) — a warning
    with pytest.warns(AdaptationWarning, match="freeze_after"):
        th.infer(mean_dpm(x), th.adaptive_lmh(), num_samples=6000, seed=8, progress=False)


def test_frozen_adaptive_lmh_keeps_its_weights_when_new_tables_appear():
    """After ``freeze_after`` the weights are a fixed function of the address (one MH kernel):
    a new table's arm starts at W⁰ under the frozen exploration term.  Each new address moved
    that term (ΣC grew by one) for every arm, so the frozen kernel kept changing."""
    from thrifty.core.simulate import initialize

    rng = np.random.default_rng(3)
    k = th.adaptive_lmh(freeze_after=100)
    tr = initialize(mean_dpm(np.array([-1.5, -1.2, 1.0, 1.4])), rng)
    for _ in range(101):
        tr = k.step(tr, rng)
    scale, created = k.arms.scale, k.arms.created
    for _ in range(600):
        tr = k.step(tr, rng)
    assert k.arms.created > created + 10  # (new tables came)
    assert k.arms.scale == scale


def test_a_memoized_function_is_one_variable_of_the_result():
    """``result["mu"]`` stacks the keys (NaN where a key is absent), as ``to_arviz`` does, and
    summaries and plots take ``var_names=["mu"]``; a per-key name says what to write."""
    import warnings

    x = np.array([-1.5, -1.2, 1.0, 1.4])
    r = th.infer(mean_dpm(x), th.cycle([th.gibbs("data.z"), th.mh("mu", th.drift(0.7))]),
                 num_samples=60, chains=2, seed=0, progress=False)
    keys = sorted((n for n in r.keys() if n.startswith("mu.")), key=lambda n: int(n[3:]))
    mu = r["mu"]
    assert mu.shape == (2, 60, len(keys))
    np.testing.assert_array_equal(mu[:, :, 1], r[keys[1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (ArviZ: all-NaN keys)
        assert len(r.summary(var_names=["mu"])) == len(keys)
    with pytest.raises(KeyError, match=r"one key of the memoized function 'mu'.*\['mu'\]"):
        r.summary(var_names=[keys[0]])


def test_invalid_hyperparameters_of_a_collapsed_family_name_the_argument():
    from thrifty.errors import DistributionError
    from thrifty.models import dp_mixture

    x = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(DistributionError, match=r"v0 > d − 1 = 1, got k0=0.1, v0=0.5"):
        th.infer(dp_mixture(x, np.zeros(2), 0.1, 0.5, np.eye(2)), th.gibbs("data.z"),
                 num_samples=5, progress=False)


@pytest.mark.parametrize("family, x, why", [
    (lambda: th.collapsed.NormalInverseWishart(np.zeros(1), 0.3, 3.0, np.eye(1)),
     np.array([-1.5, -1.2, 0.3, 1.0]), r"\('data', 0, 'x'\): NormalInverseWishart observes "
     r"values of shape \(1,\), got one of shape \(\)"),
    (lambda: th.collapsed.BetaBernoulli(1.0, 1.0), np.array([1.0, 0.5, 0.0, 1.0]),
     r"observed value 0.5 at address \('data', 1, 'x'\): .*support of BetaBernoulli"),
    (lambda: th.collapsed.GammaPoisson(1.0, 1.0), np.array([1.0, 2.5, 0.0, 1.0]),
     r"observed value 2.5 at address \('data', 1, 'x'\): .*support of GammaPoisson"),
])
def test_a_collapsed_observation_the_predictive_cannot_score_is_refused(family, x, why):
    """The statistics (the joint) and the predictive (Gibbs' candidates) must see the same
    observations.  A scalar observation of a 1-d Normal–inverse-Wishart, or 0.5 of a
    beta–Bernoulli, was counted by the statistics (broadcast; truncated to 0) while the
    predictive gave it probability 0: the joint was finite, every Gibbs candidate −∞, and the
    chain stayed in its initial partition (one partition in 200 draws for the NIW)."""
    from thrifty.errors import DistributionError

    @th.model
    def mixture(x):
        crp = th.CRP(1.0)
        f = th.mem("f", lambda k: family())
        with th.plate("data", len(x)) as i:
            th.observe("x", f(th.sample("z", crp)), x[i])

    with pytest.raises(DistributionError, match=why):
        th.infer(mixture(x), th.gibbs("data.z"), num_samples=50, seed=1, progress=False,
                 init={"data.z": np.array([0, 0, 1, 1])})


def test_a_label_whose_current_table_scores_minus_inf_is_an_error(monkeypatch):
    """Gibbs' candidates are weighed relative to the current table, whose density is positive
    in any trace; a predictive that disagrees (here: −∞ everywhere) made every weight NaN and
    the draw arbitrary.  It is an error naming the label."""
    from thrifty.errors import NumericalError

    monkeypatch.setattr(NormalGamma, "predictive_log_prob", lambda self, x: -math.inf)
    with pytest.raises(NumericalError, match=r"gibbs on \('data', 0, 'z'\): its current value"):
        th.infer(dpm(X6, 1.0), th.gibbs("data.z"), num_samples=5, seed=1, progress=False)


def test_candidate_lanes_weigh_each_table_as_a_run_with_it_does():
    """One execution of an element in lanes (one per candidate table) gives each table the
    log-weight a run of the element with that table gives it — the CRP's predictive, the
    collapsed cluster's predictive, the logistic term under the table's weights — given the
    same new table's weights (Alg. 8's auxiliary table): to 1e-9, for every element of a
    JointDPM drawn from its prior (elements alone at their table included)."""
    from thrifty.core.engine import (
        Candidates,
        Plan,
        VecTarget,
        lane_choices,
        lane_lps,
        plan_elements,
        plate,
        propose,
    )
    from thrifty.models import joint_dpm

    d = th.datasets.clustered_nonlinear(40, 10, seed=0)
    trace = th.simulate(joint_dpm(d.X_train, d.y_train, np.zeros(2), 0.1, 4.0, np.eye(2), 3.0),
                        seed=4)
    p, rel, rng = ("data",), ("z",), np.random.default_rng(0)
    view = plate(trace, p)
    checked = alone = 0
    for e in range(view.size):
        cur = int(view.values(rel, [e])[0])
        labels = view.candidates(rel, cur)
        plan = plan_elements(trace, Plan(), p, np.array([e]))
        k = len(labels)
        lanes = propose(trace, rng, vec={(p, rel): VecTarget(np.full(k, e), np.array(labels))},
                        plan=plan, candidates=Candidates(p, e, k))
        lp = lane_lps(lanes, p)
        alone += int((view.values(rel, np.arange(view.size)) == cur).sum() == 1)
        for j, v in enumerate(labels):
            if v == cur:
                continue
            run = propose(trace, rng, vec={(p, rel): VecTarget(np.array([e]), np.array([v]))},
                          plan=plan, created=lane_choices(lanes, p, j))
            assert run.log_weight == pytest.approx(lp[j] - lp[labels.index(cur)], abs=1e-9)
            checked += 1
    assert checked >= 60 and alone > 0


def test_niw_predictives_of_several_clusters_at_once():
    """The batched Student-t predictives equal the one-at-a-time ones (and −∞ off the domain)."""
    rng = np.random.default_rng(1)
    fams = []
    for n in (0, 1, 5):
        f = NormalInverseWishart(np.array([0.5, -1.0]), 0.3, 4.5, np.array([[2.0, 0.3],
                                                                           [0.3, 1.0]]))
        for x in rng.normal(size=(n, 2)):
            f.incorporate(x)
        fams.append(f)
    xs = rng.normal(size=(3, 2))
    xs[2, 1] = np.nan
    got = NormalInverseWishart.predictive_log_probs(fams, xs)
    want = [f.predictive_log_prob(x) for f, x in zip(fams, xs)]
    np.testing.assert_allclose(got[:2], want[:2], rtol=1e-12)
    assert got[2] == want[2] == -np.inf
