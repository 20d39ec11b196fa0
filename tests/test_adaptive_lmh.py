"""Adaptive LMH (paper 001 §3): posterior correctness, the arms' sampling and rewards, stats,
freezing and checkpoints.

Statistical checks use the shared thresholds of ``stat_helpers`` (Z_MAX = 4.5 for one z-test,
Bonferroni for several, P_MIN = 1e-4) with ESS-based standard errors, and fixed seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import P_MIN, Z_MAX, check_continuous, check_discrete, prob_z, run
from test_structure import fig1, fig1_exact, truncnorm_mu
from thrifty import dist
from thrifty.inference.mcmc.arms import Arms, SumTree
from thrifty.models.hmm import forward_backward, hmm


# -- the arms -------------------------------------------------------------------------------------
def test_sum_tree_matches_numpy():
    rng = np.random.default_rng(0)
    v = rng.random(37)
    t = SumTree(v)
    for _ in range(200):
        i = int(rng.integers(37))
        v[i] = rng.random()
        t.set(i, v[i])
    assert t.total() == pytest.approx(v.sum(), rel=1e-12)
    cum = np.cumsum(v)
    for u in rng.random(500) * v.sum():
        assert t.find(u) == int(np.searchsorted(cum, u, side="right"))


def test_arms_draw_in_proportion_to_the_ucb_weights():
    """χ² test (p > P_MIN) of 40,000 draws against W_i/ΣW of Eq. 5 with Eq. 17 weights."""
    arms = Arms(0.5)
    addrs = [("x", i) for i in range(6)]
    arms.align(addrs)
    for i, (r, c) in enumerate([(3, 4), (1, 9), (2, 2), (5, 20), (1, 1), (7, 8)]):
        arms.reward(addrs[i], r)
        arms.charge(addrs[i], c)
    L = math.log(arms.total_count)
    w = np.array([(s[0] / s[1]) + 0.5 * math.sqrt(L / s[1]) for s in
                  (arms.saved[a] for a in addrs)])
    rng = np.random.default_rng(1)
    counts = np.bincount([arms.draw(rng) for _ in range(40_000)], minlength=6)
    assert stats.chisquare(counts, 40_000 * w / w.sum()).pvalue > P_MIN


@th.model
def delayed():
    """001 §3.1: the output is x1; changing x2 shows in it only once x1 changes too."""
    x1 = th.sample("x1", dist.Normal(1.0, math.sqrt(10.0)))
    x2 = th.sample("x2", dist.Normal(x1, 1.0))
    th.observe("y", dist.Normal(x2, 1.0), 2.0)
    return x1


def test_rewards_favour_the_choice_the_output_depends_on():
    k = th.adaptive_lmh()
    r = th.infer(delayed(), k, num_samples=20_000, seed=0, progress=False)
    sites = r.stats[k.label()]["sites"]
    assert sites["x1"]["unit_reward"] > sites["x2"]["unit_reward"] > 0
    assert sites["x1"]["selection_probability"] > 0.5
    assert sites["x1"]["selection_probability"] + sites["x2"]["selection_probability"] == 1.0


def test_reward_propagation_follows_alg3():
    """001 Alg. 3 on a hand-made sequence of accepted steps, output z = (z0, z1): the selected
    choice joins each component's history; a changed component gives every history entry
    1/(|z|·|history|) of reward and count and is flushed; an unchanged one charges 1/|z|."""
    from thrifty.inference.mcmc.adaptive import AdaptiveLMH

    k = AdaptiveLMH()
    x1, x2 = ("x1",), ("x2",)
    k.arms.align([x1, x2])  # r = c = 1 each
    k.last_z = [0.0, 0.0]
    k._propagate(x2, [0.0, 0.0])  # nothing changed: c2 += 2 · 1/2
    k._propagate(x2, [0.0, 5.0])  # z1 changed: its history [x2, x2] shares 1/2; z0 charges 1/2
    k._propagate(x1, [3.0, 5.0])  # z0 changed: [x2, x2, x1] shares 1/2; z1 charges x1 1/2
    r1, c1 = k.arms.saved[x1][:2]
    r2, c2 = k.arms.saved[x2][:2]
    assert (r1, c1) == pytest.approx((1 + 1 / 6, 1 + 1 / 6 + 1 / 2))
    assert (r2, c2) == pytest.approx((1 + 1 / 2 + 1 / 3, 1 + 1 + 1 / 2 + 1 / 2 + 1 / 3))
    assert k.histories == [{}, {x1: 1}]
    assert k.arms.total_count == pytest.approx(c1 + c2)
    w = [r / c + 0.5 * math.sqrt(math.log(c1 + c2) / c) for r, c in ((r1, c1), (r2, c2))]
    assert k.arms.total_weight() == pytest.approx(sum(w))


@th.model
def via_deterministic():
    """As ``delayed`` but the output is a th.deterministic site, the return value None."""
    x1 = th.sample("x1", dist.Normal(1.0, math.sqrt(10.0)))
    x2 = th.sample("x2", dist.Normal(x1, 1.0))
    th.observe("y", dist.Normal(x2, 1.0), 2.0)
    th.deterministic("z", 2.0 * x1)


def test_deterministic_sites_are_output():
    k = th.adaptive_lmh()
    r = th.infer(via_deterministic(), k, num_samples=5000, seed=0, progress=False)
    sites = r.stats[k.label()]["sites"]
    assert sites["x1"]["unit_reward"] > sites["x2"]["unit_reward"]
    assert sites["x1"]["selection_probability"] > 0.5


def test_a_returning_choice_resumes_its_statistics():
    """fig1: mu leaves the trace when b = 1 and returns when b = 0.  Its statistics are kept
    (one record, never reset to r = c = 1) and its arm's weight resumes them on return."""
    from thrifty.core.simulate import initialize

    k = th.adaptive_lmh()
    rng = np.random.default_rng(2)
    tr = initialize(fig1(1.5, 1.0), rng)
    mu = ("mu",)
    returns, record, was_present = 0, None, None
    for _ in range(4000):
        tr = k.step(tr, rng)
        present = mu in k.arms.pos
        if present:
            s = k.arms.saved[mu]
            record = s if record is None else record
            assert s is record  # the same record, never a new arm
            i = k.arms.pos[mu]
            assert k.arms.a.values[i] == s[0] / s[1] and k.arms.b.values[i] == 1 / math.sqrt(s[1])
            returns += was_present is False
        was_present = present
    assert returns > 50 and record[1] > 10
    assert len(k.arms.saved) == 2


def test_adaptation_plot(tmp_path):
    from thrifty.diagnostics import adaptation_snapshots, plot_adaptation

    snaps = adaptation_snapshots(hmm(predict=(0, 17)), at=(100, 500), seed=0)
    assert sorted(snaps) == [100, 500] and len(snaps[500]) == 18
    assert sum(a["alpha"] for a in snaps[500].values()) == pytest.approx(1.0)
    assert sum(a["selected"] for a in snaps[500].values()) == 500
    fig = plot_adaptation(snaps, tmp_path / "arms.png")
    assert (tmp_path / "arms.png").stat().st_size > 0
    assert len(fig.axes) == 4 and len(fig.axes[0].patches) == 2 * 18


# -- the posterior --------------------------------------------------------------------------------
@pytest.mark.slow
def test_hmm_marginals_after_100k_steps():
    """The issue's criterion: mean |error| of the 18 × 3 marginals below 0.03 (LMH's level),
    and each marginal within the Bonferroni threshold of the exact one."""
    r = run(hmm(predict=(0, 17)), th.adaptive_lmh(), 100_000, burn_in=10_000, seed=3)
    z = r["s.z"]
    exact = forward_backward()
    est = np.stack([(z[0] == k).mean(axis=0) for k in range(3)], axis=1)
    assert np.abs(est - exact).mean() < 0.03
    for t in (0, 5, 17):
        check_discrete(z[:, :, t], {k: exact[t, k] for k in range(3)}, f"state {t}")


def test_structure_change_posterior_is_unbiased():
    """000 Fig. 1 with a moderate observation (y = 1.5, sd = 1): b decides whether mu exists,
    so steps create and remove choices (α'_k/α_k = ΣW/ΣW' ≠ 1).  P(b = 1 | y), and
    E[mu | y, b = 0] and its distribution (a truncated normal) against the exact answer."""
    log_b1, mean, sd, _ = fig1_exact(1.5, 1.0)
    r = run(fig1(1.5, 1.0), th.adaptive_lmh(), 40_000, burn_in=2000, seed=7, chains=2)
    b = r["b"]
    z = prob_z(b, 1, math.exp(log_b1))
    assert abs(z) < Z_MAX, (b.mean(), math.exp(log_b1), z)
    mu = r["mu"][b == 0]
    check_continuous(mu, mean, sd, truncnorm_mu(1.5, 1.0).cdf, "mu | b = 0")
    # negative control: the check rejects a probability 0.03 off
    assert abs(prob_z(b, 1, math.exp(log_b1) + 0.03)) > Z_MAX


def test_structure_change_check_catches_a_missing_eq6_term(monkeypatch):
    """Negative control of the test above: the kernel with LMH's ratio of selection probabilities
    dropped (ΣW' taken equal to ΣW) samples P(b = 1 | y) ≈ 0.32 instead of 0.58, and the same
    z-test rejects it (z ≈ −43 at this size)."""
    log_b1, *_ = fig1_exact(1.5, 1.0)
    monkeypatch.setattr(Arms, "weights_of", lambda self, addrs: self.total_weight())
    r = run(fig1(1.5, 1.0), th.adaptive_lmh(), 10_000, burn_in=2000, seed=7, chains=2)
    assert abs(prob_z(r["b"], 1, math.exp(log_b1))) > Z_MAX


# -- stats, freezing, checkpoints -----------------------------------------------------------------
def test_freeze_after_stops_adapting():
    k = th.adaptive_lmh(freeze_after=500)
    r = th.infer(hmm(predict=(0, 17)), k, num_samples=3000, seed=0, progress=False,
                 workers=1)
    assert r.stats[k.label()]["steps"] == 3000
    # counts stop growing once frozen: Σ c over arms = initial arms + increments of 500 steps
    from thrifty.core.simulate import initialize

    rng = np.random.default_rng(0)
    kk = th.adaptive_lmh(freeze_after=200)
    tr = initialize(hmm(predict=(0, 17)), rng)
    for _ in range(200):
        tr = kk.step(tr, rng)
    frozen = dict((a, list(s[:2])) for a, s in kk.arms.saved.items())
    for _ in range(300):
        tr = kk.step(tr, rng)
    assert {a: list(s[:2]) for a, s in kk.arms.saved.items()} == frozen


@pytest.mark.parametrize("case", ["hmm", "fig1"])
def test_checkpoint_resume_gives_the_same_draws(tmp_path, monkeypatch, case):
    """Interrupted at step 1200 of chain 0, then resumed from the checkpoint: every draw, lp
    and the per-site adaptation statistics equal those of an uninterrupted run bitwise.  fig1
    changes structure, so the statistics of mu must survive its absences as well."""
    from test_runtime import ARMED, Interrupting, assert_same

    prog = {"hmm": lambda: hmm(predict=(0, 17)), "fig1": lambda: fig1(1.5, 1.0)}[case]
    kw = dict(num_samples=3000, chains=2, seed=4, workers=1, progress=False)
    straight = th.infer(prog(), th.adaptive_lmh(), **kw)
    path = tmp_path / "ad.ckpt"
    monkeypatch.setenv(ARMED, "1")  # it fires once
    with pytest.warns(UserWarning, match="resume"):
        part = th.infer(prog(), Interrupting(th.adaptive_lmh(), after=1200, how="raise"),
                        checkpoint=path, checkpoint_every=0.0, **kw)
    assert part.interrupted and 0 < part.num_draws < 3000
    resumed = th.infer(prog(), Interrupting(th.adaptive_lmh(), after=1200, how="raise"),
                       checkpoint=path, **kw)  # the same kernel: a resume compares it
    assert not resumed.interrupted and "resumed" in resumed.notes[0]
    assert_same(resumed, straight)
    label = th.adaptive_lmh().label()
    for key in ("steps", "acceptance_rate", "sites"):
        assert resumed.stats[label][key] == straight.stats[label][key], key


@pytest.mark.parametrize("after", [700, 2000], ids=["in the burn-in", "after it"])
def test_a_resume_gives_the_statistics_of_the_burn_in_and_the_sampling_steps(
        tmp_path, monkeypatch, after):
    """burn_in=1500, chain 0 interrupted at step ``after`` and resumed from the checkpoint:
    ``result.stats`` — the sampling steps', the burn-in's, per chain, the per-site tallies the
    arms share with the kernel's statistics — equals the uninterrupted run's."""
    from test_runtime import ARMED, Interrupting, assert_same, counts

    kw = dict(num_samples=1500, burn_in=1500, chains=2, seed=4, workers=1, progress=False)
    straight = th.infer(hmm(predict=(0, 17)), th.adaptive_lmh(), **kw)
    path = tmp_path / "ad.ckpt"
    monkeypatch.setenv(ARMED, "1")  # it fires once
    with pytest.warns(UserWarning, match="resume"):
        th.infer(hmm(predict=(0, 17)), Interrupting(th.adaptive_lmh(), after=after,
                                                    how="raise"),
                 checkpoint=path, checkpoint_every=0.0, **kw)
    resumed = th.infer(hmm(predict=(0, 17)), Interrupting(th.adaptive_lmh(), after=after,
                                                          how="raise"), checkpoint=path, **kw)
    assert_same(resumed, straight)
    assert counts(resumed.stats) == counts(straight.stats)
    s = straight.stats[th.adaptive_lmh().label()]
    assert s["steps"] == s["burn_in"]["steps"] == 2 * 1500
    sel = sum(v["selection_probability"] for v in s["sites"].values())
    assert sel == pytest.approx(1.0) and s["burn_in"]["sites"].keys() == s["sites"].keys()


def test_kernel_state_round_trip_is_exact():
    """The arms pickled with the trace (a checkpoint's snapshot) continue exactly: the sum
    trees are kept, not rebuilt (a rebuild reproduces their running totals only up to
    rounding, ≈ 1e-15 apart after 3000 steps of the HMM, whose 18 arms are never realigned
    otherwise), and the next 2000 steps draw the same choices and values."""
    from thrifty.core.simulate import initialize
    from thrifty.runtime.chain import dumps_state, loads_state

    prog = hmm(predict=(0, 17))
    rng = np.random.default_rng(5)
    k = th.adaptive_lmh()
    tr = initialize(prog, rng)
    for _ in range(4000):
        tr = k.step(tr, rng)
    tr2, k2, rng2 = loads_state(dumps_state((tr, k, rng), prog), prog)
    for _ in range(2000):
        tr, tr2 = k.step(tr, rng), k2.step(tr2, rng2)
        np.testing.assert_array_equal(tr.values()["s.z"], tr2.values()["s.z"])
        for t, t2 in ((k.arms.a, k2.arms.a), (k.arms.b, k2.arms.b)):
            assert t.total() == t2.total() and t.tree == t2.tree
    assert {a: s[:2] + s[3:] for a, s in k.arms.saved.items()} == \
        {a: s[:2] + s[3:] for a, s in k2.arms.saved.items()}
    assert k.arms.total_count == k2.arms.total_count


def test_bad_arguments():
    with pytest.raises(ValueError, match="exploration"):
        th.adaptive_lmh(-1.0)
    with pytest.raises(ValueError, match="freeze_after"):
        th.adaptive_lmh(freeze_after=-3)


def test_structure_changes_move_the_arms_without_a_pass_over_the_trace(monkeypatch):
    """A proposal that creates or drops a named choice adds or removes its arm (O(log n));
    the arms are rebuilt (one pass over the n choices) only for a new trace."""
    from thrifty.inference.mcmc.arms import Arms

    @th.model
    def branchy(n):
        b = th.sample("b", dist.Bernoulli(probs=0.5))
        if b:
            th.sample("extra", dist.Normal(0.0, 1.0))
        with th.plate("data", n):
            th.sample("x", dist.Normal(0.0, 1.0))

    rebuilds = []
    align = Arms.align
    monkeypatch.setattr(Arms, "align", lambda self, addrs: (rebuilds.append(len(addrs)),
                                                            align(self, addrs))[1])
    rng = np.random.default_rng(0)
    trace = th.initialize(branchy(200), rng)
    k = th.adaptive_lmh(sel=None)
    flips = 0
    for _ in range(4000):
        before = trace.structure
        k.step(trace, rng)
        flips += trace.structure != before
    assert flips >= 5  # b was selected and flipped, creating and dropping "extra"
    assert len(rebuilds) == 1  # ...without ever rebuilding the 200 arms
    assert sorted(k.arms.addrs, key=repr) == sorted(k._addresses(trace), key=repr)
    total = sum(k.arms.weight(a) for a in k.arms.addrs)
    assert k.arms.total_weight() == pytest.approx(total, rel=1e-12)
