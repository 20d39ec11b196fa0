"""The Pitman–Yor process: its partition probabilities exactly, and its draws in models.

Exact checks (to 1e-12): the exchangeable partition probability function (EPPF) written as plain
products sums to one over the 203 partitions of 6 points; the state's joint, the product of
sequential predictive probabilities (any order: exchangeability) and the joint under changed
hyperparameters all equal it.  Chains: partition frequencies against enumeration, χ² p > 1e-4
after thinning by the ESS (as in ``test_exchangeable``), seeds fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from test_exchangeable import NG, chi2_partitions
from test_processes import canonical, set_partitions
from thrifty import dist
from thrifty.core.locate import locate, make_targets, plan_for
from thrifty.core.run import Run
from thrifty.core.simulate import initialize
from thrifty.errors import DistributionError, ModelError
from thrifty.processes import CRP, PitmanYor

PARAMS = [(0.0, 1.5), (0.3, 2.0), (0.5, -0.3), (0.9, 0.1)]


def eppf(p, d, a) -> float:
    """Pitman (1995): Π_{i=1}^{K−1} (a + i d) / Π_{j=1}^{n−1} (a + j)
    · Π_k Π_{j=1}^{n_k−1} (j − d)."""
    sizes = np.bincount(p)
    num = math.prod(a + i * d for i in range(1, len(sizes)))
    den = math.prod(a + j for j in range(1, len(p)))
    return num / den * math.prod(math.prod(j - d for j in range(1, s)) for s in sizes)


@pytest.mark.parametrize("d, a", PARAMS)
def test_the_partition_probabilities_are_exact(d, a):
    parts = [np.array(p) for p in set_partitions(6)]
    assert len(parts) == 203
    probs = np.array([eppf(p, d, a) for p in parts])
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(0)
    for p in parts:
        s = PitmanYor(d, a).state((d, a))
        seq = 0.0
        for t in p[rng.permutation(len(p))]:  # any order: the joint is exchangeable
            seq += s.predictive_log_prob(int(t))
            s.incorporate(int(t))
        want = math.log(eppf(p, d, a))
        assert s.log_prob() == pytest.approx(want, abs=1e-12)
        assert seq == pytest.approx(want, abs=1e-12)
        d2, a2 = (d + 1.0) / 2, a + 0.7  # other hyperparameters: the same seating, rescored
        assert s.with_params((d2, a2)).log_prob() == pytest.approx(
            math.log(eppf(p, d2, a2)), abs=1e-12)
        assert s.log_prob() == pytest.approx(want, abs=1e-12)  # the original is untouched


def test_discount_zero_is_the_crp_and_unincorporate_restores():
    s, c = PitmanYor(0.0, 1.3).state((0.0, 1.3)), CRP(1.3).state((1.3,))
    for t in (0, 0, 1, 2, 2, 2, 3):
        s.incorporate(t)
        c.incorporate(t)
    assert s.log_prob() == pytest.approx(c.log_prob(), abs=1e-12)
    assert [k for k, _ in s.predictive()] == [k for k, _ in c.predictive()]
    assert [p for _, p in s.predictive()] == pytest.approx([p for _, p in c.predictive()])
    before = (dict(s.counts), s.n, s.log_prob())
    s.incorporate(3)
    s.unincorporate(3)
    assert (dict(s.counts), s.n) == before[:2] and s.log_prob() == pytest.approx(before[2])
    s.unincorporate(3)  # the table empties
    assert 3 not in s.counts and sum(p for _, p in s.predictive()) == pytest.approx(1.0)


@th.model
def py_seating(n, d, a):
    py = th.PitmanYor(d, a)
    with th.plate("guests", n):
        return th.sample("table", py)


def test_the_prior_through_simulate_matches_the_eppf():
    d, a, n, draws = 0.4, 0.8, 5, 6000
    parts = list(set_partitions(n))
    probs = np.array([eppf(np.array(p), d, a) for p in parts])
    z = np.array([th.simulate(py_seating(n, d, a), seed=s).output for s in range(draws)])
    assert chi2_partitions(z, probs, parts) > 1e-4
    t = th.simulate(py_seating(n, d, a), seed=3)
    assert t.log_joint() == pytest.approx(math.log(eppf(np.array(canonical(t.output)), d, a)))


@th.model
def py_mixture(x, d, a):
    py = th.PitmanYor(d, a)
    feats = th.mem("feats", lambda k: th.collapsed.NormalGamma(*NG))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", py)
        th.observe("x", feats(z), x[i])
    return z


@th.model
def py_owned(x):
    py = th.PitmanYor(0.3, alpha=dist.Gamma(2.0, 1.0), name="alpha")
    feats = th.mem("feats", lambda k: th.collapsed.NormalGamma(*NG))
    with th.plate("data", len(x)) as i:
        z = th.sample("z", py)
        th.observe("x", feats(z), x[i])
    return z


def test_an_owned_alpha_step_is_the_eppf_difference_and_executes_no_element():
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 3.0, 300)
    trace = initialize(py_owned(x), rng, init={"data.z": rng.integers(0, 5, 300)})
    a = trace["alpha"]
    loc = locate(trace, ("alpha",))
    targets, vec = make_targets([loc], [a * 1.5])
    run = Run(trace, rng, targets=targets, vec=vec, plan=plan_for(trace, [loc])).execute()
    assert run.work_elements == 0
    z = np.array(canonical(trace.values()["data.z"]))
    st = PitmanYor(0.3, a).state((0.3, a))
    for t in z:
        st.incorporate(int(t))
    want = (st.with_params((0.3, a * 1.5)).log_prob() - st.log_prob()
            + stats.gamma.logpdf(a * 1.5, 2.0) - stats.gamma.logpdf(a, 2.0))
    assert run.lp_new - run.lp_old == pytest.approx(want, abs=1e-9)


def test_invalid_hyperparameters_name_the_site_and_proposals_are_rejected():
    with pytest.raises(DistributionError, match=r"PitmanYor at address .*guests.*discount"):
        th.simulate(py_seating(4, 1.2, 1.0), seed=0)

    @th.model
    def shifted(n):  # α's prior reaches below −d: such proposals are rejected, never a crash
        py = th.PitmanYor(0.5, alpha=dist.Normal(1.0, 1.0), name="alpha")
        with th.plate("guests", n):
            th.sample("table", py)

    r = th.infer(shifted(6), th.mh("alpha", th.drift(2.0)), num_samples=300, seed=0,
                 progress=False, init={"alpha": 1.0})
    (stats_,) = (v for k, v in r.stats.items() if k != "run")
    assert (r["alpha"] > -0.5).all() and 0 < stats_[
        "acceptance_rate"] < 1
    with pytest.raises(ModelError, match="name its address"):
        PitmanYor(0.5, alpha=dist.Gamma(1.0, 1.0))
