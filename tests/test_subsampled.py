"""The sequential test (000 Alg. 2 / 004 Alg. 1) and subsampled MH."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from shared_models import ar_chain
from stat_helpers import ess
from thrifty import dist
from thrifty.core.locate import locate
from thrifty.core.simulate import initialize
from thrifty.datasets import synthetic_logistic
from thrifty.errors import SelectionError
from thrifty.inference.numerics.sequential import LazyPermutation, sequential_test
from thrifty.inference.subsampling.subsampled import Budget
from thrifty.models.logistic import logistic_regression

# -- the sequential test on fixed vectors --------------------------------------------------------


def fixed(values):
    values = np.asarray(values, dtype=float)
    return lambda idx: values[idx]


def test_clear_decisions_stop_early():
    rng = np.random.default_rng(0)
    l = rng.normal(0.5, 1.0, size=50_000)
    up = sequential_test(0.0, fixed(l), len(l), 100, 0.01, np.random.default_rng(1))
    down = sequential_test(1.0, fixed(l), len(l), 100, 0.01, np.random.default_rng(1))
    assert up.accept and not down.accept
    assert up.n <= 500 and down.n <= 500 and not up.exact


def test_epsilon_zero_is_the_exact_decision():
    rng = np.random.default_rng(2)
    for trial in range(50):
        l = rng.normal(0.0, 1.0, size=int(rng.integers(2, 3000)))
        mu0 = float(l.mean() + rng.normal(0.0, 0.02))
        out = sequential_test(mu0, fixed(l), len(l), 64, 0.0, np.random.default_rng(trial))
        assert out.exact and out.n == len(l)
        assert out.accept == (l.mean() > mu0)
        assert out.calls == 1  # (it can only decide at N: read in one call)


def test_zero_variance_batches_do_not_stop(monkeypatch):
    l = np.concatenate([np.ones(300), -np.ones(700)])
    monkeypatch.setattr(LazyPermutation, "SMALL", 0)  # force the sparse path
    order = np.arange(1000)

    def take(self, m):
        out = order[self.k : self.k + m]
        self.k += len(out)
        return out, None

    monkeypatch.setattr(LazyPermutation, "take", take)
    out = sequential_test(0.0, fixed(l), len(l), 100, 0.49, np.random.default_rng(0))
    # three batches of equal values (s_l = 0): no test; the first test, at n = 400, decides
    assert out.n == 400 and out.accept


def test_k0_initial_batches():
    l = np.random.default_rng(3).normal(5.0, 1.0, size=10_000)
    out = sequential_test(0.0, fixed(l), len(l), 50, 0.01, np.random.default_rng(0), k0=4)
    assert out.batches == 4 and out.n == 200 and out.accept


def test_p_value_uses_the_finite_population_correction():
    l = np.random.default_rng(4).normal(0.0, 1.0, size=1000)
    out = sequential_test(0.05, fixed(l), len(l), 400, 0.999, np.random.default_rng(7))
    # first batch of 400 decides (ε ≈ 1); recompute its p-value by hand
    perm = np.random.default_rng(7).permutation(1000)
    x = l[perm[:400]]
    s = x.std(ddof=1) / math.sqrt(400) * math.sqrt(1 - 399 / 999)
    t = (x.mean() - 0.05) / s
    assert out.n == 400
    assert out.p_value == pytest.approx(2 * stats.t.sf(abs(t), 399), rel=1e-9)  # two-sided
    # without the correction the p-value would differ
    s_naive = x.std(ddof=1) / math.sqrt(400)
    assert out.p_value != pytest.approx(2 * stats.t.sf(abs((x.mean() - 0.05) / s_naive), 399))


def test_chunked_evaluation_gives_the_same_decisions():
    """Chunks of 1, 2, 4, ... minibatches: the same draws (N ≤ SMALL: one permutation) give the
    same decision, size and number of minibatches as testing one minibatch at a time."""
    rng = np.random.default_rng(5)
    for trial in range(30):
        l = rng.normal(0.02, 1.0, size=LazyPermutation.SMALL)
        a = sequential_test(0.0, fixed(l), len(l), 100, 0.05, np.random.default_rng(trial))
        b = sequential_test(
            0.0, fixed(l), len(l), 100, 0.05, np.random.default_rng(trial), growth=2.0
        )
        assert (a.accept, a.n, a.batches) == (b.accept, b.n, b.batches)
        assert b.calls <= a.calls and b.evaluated >= b.n


def reference_test(mu0, l, batch_size, epsilon, perm, k0=1):
    """000 Alg. 2 written plainly (two-sided p-value, s_l = 0 rule, k0), for comparison."""
    N = len(l)
    for b in range(1, -(-N // batch_size) + 1):
        x = l[perm[: min(b * batch_size, N)]]
        n = len(x)
        if n == N:
            return x.mean() > mu0, n
        if b < k0 or n < 2 or x.std(ddof=1) == 0:
            continue
        s = x.std(ddof=1) / math.sqrt(n) * math.sqrt(1 - (n - 1) / (N - 1))
        if 2 * stats.t.sf(abs((x.mean() - mu0) / s), n - 1) < epsilon:
            return x.mean() > mu0, n
    raise AssertionError("unreachable")


def test_agrees_with_a_plain_implementation_of_the_algorithm():
    rng = np.random.default_rng(8)
    for trial in range(60):
        N = int(rng.integers(50, LazyPermutation.SMALL))
        l = rng.standard_t(3, size=N) * rng.uniform(0.1, 2) + rng.normal(0, 0.1)
        mu0 = float(l.mean() + rng.normal(0, 0.05))
        m, eps, k0 = int(rng.integers(5, 80)), float(rng.choice([0.0, 0.01, 0.1])), int(
            rng.integers(1, 4)
        )
        perm = np.random.default_rng(trial).permutation(N)
        want = reference_test(mu0, l, m, eps, perm, k0)
        for growth in (1.0, 2.0):
            out = sequential_test(mu0, fixed(l), N, m, eps, np.random.default_rng(trial), k0,
                                  growth=growth)
            assert (out.accept, out.n) == want, (trial, growth)


def in_order(taken):
    idx, order = taken
    return idx if order is None else idx[order]


@pytest.mark.parametrize("N", [1000, 50_000])
def test_lazy_permutation_is_uniform_without_replacement(N):
    first, second = np.zeros(10), np.zeros(10)
    rng = np.random.default_rng(6)
    for _ in range(2000):
        p = LazyPermutation(N, rng)
        a = in_order(p.take(7))
        b = in_order(p.take(5))
        both = np.concatenate([a, b])
        assert len(np.unique(both)) == 12 and both.min() >= 0 and both.max() < N
        first[(a[0] * 10) // N] += 1
        second[(b[-1] * 10) // N] += 1
    # chi-square tests of the first and last draws' deciles, threshold p > 1e-4
    assert stats.chisquare(first).pvalue > 1e-4
    assert stats.chisquare(second).pvalue > 1e-4


def test_lazy_permutation_chunks_of_large_populations_are_sorted_uniform_subsets():
    """Above SMALL each chunk comes sorted, with a random order: exactly m new sections, and
    every section equally likely to be in the first chunks (χ² over 20 bins of positions and
    over the rank of a fixed section's chunk position, thresholds p > 1e-4)."""
    N, rng = 20_000, np.random.default_rng(11)
    bins, ranks = np.zeros(20), np.zeros(10)
    mask = np.zeros(N, dtype=bool)
    for _ in range(400):
        p = LazyPermutation(N, rng, mask=mask)
        seen = []
        for m in (100, 200, 400, 800):
            idx, order = p.take(m)
            assert len(idx) == m and np.all(np.diff(idx) > 0)
            assert sorted(order.tolist()) == list(range(m))
            seen.append(idx[order])
        drawn = np.concatenate(seen)
        assert len(np.unique(drawn)) == 1500 and mask[drawn].all()
        bins += np.bincount(drawn * 20 // N, minlength=20)
        ranks[int(order[0]) * 10 // 800] += 1  # where the last chunk's first draw sits
        p.release()
        assert not mask.any()
    assert stats.chisquare(bins).pvalue > 1e-4
    assert stats.chisquare(ranks).pvalue > 1e-4


def test_a_budget_stops_the_test_undecided():
    l = np.random.default_rng(12).normal(0.0, 1.0, size=100_000)
    out = sequential_test(float(l.mean()), fixed(l), len(l), 100, 0.01,
                          np.random.default_rng(0), max_n=2_000)
    assert not out.decided and 300 <= out.n <= 2_000  # μ0 = the mean: no decision in sight
    out = sequential_test(0.0, fixed(l), len(l), 100, 0.0, np.random.default_rng(0), max_n=3_000)
    assert not out.decided and out.n == 400  # ε = 0 decides at N only: stops at budget / 8
    out = sequential_test(-1.0, fixed(l), len(l), 100, 0.01, np.random.default_rng(0),
                          max_n=2_000)
    assert out.decided and out.accept and out.n == 100  # a clear decision within the budget


def test_bad_arguments():
    with pytest.raises(ValueError, match="epsilon"):
        sequential_test(0.0, fixed([1.0]), 1, 1, 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="batch_size"):
        sequential_test(0.0, fixed([1.0]), 1, 0, 0.1, np.random.default_rng(0))


# -- subsampled MH ---------------------------------------------------------------------------------


def exact_log_alpha(trace, addr, value):
    from thrifty.core.run import RESCORE, Run

    return Run(trace, np.random.default_rng(0), targets={addr: value}, mode=RESCORE).execute()


def test_epsilon_zero_decisions_equal_exact_mh_for_the_same_u():
    X, y, _ = synthetic_logistic(3000, 2, theta=[1.0, -0.5], seed=0)
    rng = np.random.default_rng(1)
    trace = initialize(logistic_regression(X, y), rng)
    k = th.subsampled_mh("w", batch_size=100, epsilon=0.0, max_fraction=1.0)  # the test alone
    agree = 0
    for _ in range(60):
        loc = locate(trace, ("w",))
        new = loc.value + 0.03 * rng.standard_normal(2)
        log_alpha = exact_log_alpha(trace, ("w",), new).log_weight
        log_u = math.log(rng.random())
        accepted = k.decide(trace, rng, [loc], {("w",): new}, 0.0, log_u)
        assert accepted == (log_u < log_alpha)
        agree += 1
        if accepted:
            np.testing.assert_array_equal(trace["w"], new)
    assert agree == 60


@pytest.mark.slow
def test_posterior_close_to_exact_mh_at_small_epsilon():
    """Means within 0.15 posterior sd of exact MH (ESS-based z-test of the difference |z|<4.5)."""
    from thrifty.diagnostics._arviz import ess as az_ess

    X, y, _ = synthetic_logistic(5000, 2, theta=[1.0, -0.5], seed=3)
    prog = logistic_regression(X, y)
    exact = th.infer(
        prog, th.mh("w", th.drift(0.04)), num_samples=6000, burn_in=500, seed=0, progress=False
    )["w"]
    k = th.subsampled_mh("w", batch_size=200, epsilon=0.01, proposal=th.drift(0.04))
    sub = th.infer(prog, k, num_samples=6000, burn_in=500, seed=1, progress=False)["w"]
    for j in range(2):
        a, b = exact[..., j], sub[..., j]
        sd = a.std()
        se = math.sqrt(a.var() / az_ess(a) + b.var() / az_ess(b))
        diff = abs(a.mean() - b.mean())
        assert diff / se < 4.5
        assert diff < 0.15 * sd + 4.5 * se


def test_sections_grow_sublinearly():
    """000 Fig. 5b's set-up: the same current value (the data-generating weights) and the same
    proposals at N = 10⁴ and 10⁵; the slope of log(sections used) / log N is below 0.6
    (exact MH: 1) — for the test alone (``max_fraction=1``; by default a decision still open
    after N/64 sections is exact MH's, see the next test)."""
    import copy

    rng = np.random.default_rng(0)
    steps = [0.1 * rng.standard_normal(2) for _ in range(40)]
    log_us = [math.log(rng.random()) for _ in range(40)]
    used = {}
    for n in (10_000, 100_000):
        X, y, _ = synthetic_logistic(n, 2, theta=[1.0, -0.5], seed=0)
        trace = initialize(logistic_regression(X, y), rng, init={"w": np.array([1.0, -0.5])})
        k = th.subsampled_mh("w", batch_size=100, epsilon=0.01, max_fraction=1.0)
        total = 0
        for step, log_u in zip(steps, log_us):
            t = copy.deepcopy(trace)
            k.decide(t, rng, [locate(t, ("w",))], {("w",): t["w"] + step}, 0.0, log_u)
            total += k.last_outcome.n
        used[n] = total / len(steps)
    slope = math.log(used[100_000] / used[10_000]) / math.log(10)
    assert slope < 0.6, used


def test_open_decisions_past_the_budget_are_exact_mh_decisions():
    """With a proposal scaled to the posterior most decisions are close: past max_fraction·N
    sections (or once the test would need more) the decision is exact MH's for the same u,
    from one full execution, and an accepted one leaves no stale element."""
    X, y, _ = synthetic_logistic(40_000, 2, theta=[1.0, -0.5], seed=0)
    rng = np.random.default_rng(3)
    trace = initialize(logistic_regression(X, y), rng, init={"w": np.array([1.0, -0.5])})
    k = th.subsampled_mh("w", batch_size=100, epsilon=0.01)
    fallbacks = 0
    for _ in range(40):
        k.refresh(trace, rng)  # (so that a rescoring run gives the exact log-ratio)
        loc = locate(trace, ("w",))
        new = loc.value + 0.01 * rng.standard_normal(2)  # ~ the posterior sd
        log_alpha = exact_log_alpha(trace, ("w",), new).log_weight
        log_u = math.log(rng.random())
        accepted = k.decide(trace, rng, [loc], {("w",): new}, 0.0, log_u)
        out = k.last_outcome
        if out.exact:
            fallbacks += 1
            assert out.n == 40_000 and accepted == (log_u < log_alpha)
            if accepted:
                assert not trace.has_stale()
        else:
            assert out.n <= 40_000 // 32 + 100  # the test decided within the budget
    assert fallbacks >= 10


def test_the_default_budget_keeps_subsampled_mh_near_exact_mh_in_work():
    """Through th.infer at the defaults with an efficient proposal: per step about one
    execution of the plate (≤ 1.1 N elements) in fewer than 6 program runs; the test alone
    reads more than N elements at scattered positions in more than 10 runs (stale rescoring,
    chunks ahead of the test)."""
    X, y, _ = synthetic_logistic(40_000, 2, theta=[1.0, -0.5], seed=0)
    prog = logistic_regression(X, y)
    init = {"w": np.array([1.0, -0.5])}
    k = th.subsampled_mh("w", proposal=th.drift(0.01))
    r = th.infer(prog, k, num_samples=100, init=init, seed=0, progress=False)
    s = r.stats[k.label()]
    assert s["elements_per_step"] < 1.1 * 40_000 and s["full_passes_per_step"] > 0.5
    assert s["runs_per_step"] < 6
    k = th.subsampled_mh("w", proposal=th.drift(0.01), max_fraction=1.0)
    r = th.infer(prog, k, num_samples=100, init=init, seed=0, progress=False)
    s = r.stats[k.label()]
    assert s["elements_per_step"] > 40_000 and s["runs_per_step"] > 10


def test_too_few_sections_for_the_test_warn_once_that_every_step_is_exact():
    """2,000 markov steps hold 63 within max_fraction (1/32), fewer than one minibatch of 100:
    every decision is exact MH's, and the user is told once, with the numbers; with minibatches
    of 20 the test runs and nothing is said."""
    y = np.zeros(2000)
    with pytest.warns(UserWarning, match=r"'phi': 2000 sections, of which max_fraction "
                      r"\(0.03125\) is 63, fewer than the 100 .*every step is an exact MH step"
                      ) as rec:
        r = th.infer(ar_chain_of(y), th.subsampled_mh("phi", proposal=th.drift(0.02)),
                     num_samples=30, burn_in=0, seed=0, progress=False)
    assert sum("sections, of which" in str(w.message) for w in rec) == 1
    s = next(iter(r.stats.values()))
    assert s["full_passes_per_step"] == 1.0
    assert s["budget_per_step"] == 0  # (no step ran the test: reported, as 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", category=th.ConvergenceWarning)
        r = th.infer(ar_chain_of(y), th.subsampled_mh("phi", batch_size=20,
                                                       proposal=th.drift(0.02)), num_samples=30,
                     burn_in=0, seed=0, progress=False)
    assert next(iter(r.stats.values()))["budget_per_step"] > 0


@th.model
def ar_chain_of(y):
    phi = th.sample("phi", dist.Uniform(-1.0, 1.0))

    def step(t, prev):
        return th.sample("x", dist.Normal(phi * prev, 1.0))

    th.markov("s", step, len(y), 0.0)


def test_a_probe_measures_the_test_and_exact_mh_decides():
    """While the budget is low, a probe (every 16th decision) is allowed max_fraction·N so that
    the budget sees how the test would do, but its decision is exact MH's for the same u (a
    full pass, no stale element): probes add no error of the test.  A decision that is not a
    probe is the test's when it settles within the first minibatch (log u = −∞: at once)."""
    X, y, _ = synthetic_logistic(40_000, 2, theta=[1.0, -0.5], seed=0)
    rng = np.random.default_rng(3)
    start = {"w": np.array([1.0, -0.5])}
    cases = [(16, math.log(0.5), 3.0), (16, -math.inf, 0.001), (17, -math.inf, 0.001)]
    for decisions, log_u, far in cases:  # a probe: a clear reject, an accept; then no probe
        trace = initialize(logistic_regression(X, y), rng, init=start)
        k = th.subsampled_mh("w", batch_size=100, epsilon=0.01)
        k.budget.full, k.budget.decisions = False, decisions  # (low: one minibatch)
        loc = locate(trace, ("w",))
        new = loc.value + np.array([far, -far])
        log_alpha = exact_log_alpha(trace, ("w",), new).log_weight
        accepted = k.decide(trace, rng, [loc], {("w",): new}, 0.0, log_u)
        out = k.last_outcome
        assert accepted == (log_u < log_alpha)
        if decisions == 16:
            assert list(k.budget.settled) == [True]  # the test settled, and the budget saw it
            assert out.exact and out.n == 40_000 and not trace.has_stale()
        else:
            assert not k.budget.settled  # (not a probe: not remembered)
            assert not out.exact and out.n == 100 and trace.has_stale()


def test_the_budget_keeps_max_fraction_while_enough_settle_and_probes_when_low():
    """max_fraction·N for the first two windows of 8 decisions; then, after each window,
    max_fraction·N if more than 0.4 of the last 32 decisions allowed it settled, else one
    minibatch — with every 16th decision still allowed max_fraction·N (a probe), so the
    budget comes back when the probes settle."""
    b = Budget(1 / 32)
    N, floor = 1_000_000, 100
    sizes = []

    def decide(settled):
        sizes.append(b.max_n(N, floor))
        b.record(settled)

    for k in range(16):  # 6 of 16 settled (0.375): falls after the second window
        decide(k % 3 == 0)
    assert sizes == [31_250] * 16
    for _ in range(16):  # low: one minibatch, the 17th decision a probe
        decide(False)
    assert sizes[16:] == [31_250] + [100] * 15
    for _ in range(32, 96):  # decisions that settle: only the probes are remembered, and
        decide(True)  # (6 + 2) / (17 + 2) > 0.4 after the second, at 48: back at 56
    assert [k for k in range(32, 96) if sizes[k] == 31_250] == [32, 48, *range(56, 96)]

    b = Budget(1 / 32)  # the memory holds the last 32 decisions allowed max_fraction·N
    sizes.clear()
    for k in range(72):
        decide(k < 40)  # 40 settled, then unsettled ones
    # at 56, 16 of the last 32 settled; at 64, 8 (0.25): one minibatch but for the probe at 64
    assert sizes == [31_250] * 65 + [100] * 7
    b = Budget(1 / 32)
    for _ in range(16):
        b.max_n(N, floor)
        b.record(True)
    assert b.max_n(N, floor) == 31_250  # (never past max_fraction)


def test_with_an_efficient_proposal_the_budget_falls_and_decisions_stay_exact_mh():
    """A normal mean, N = 40,000, a random walk scaled to the posterior: few decisions settle
    before exact MH would decide, so the budget falls to one minibatch and a step costs the
    skeleton, one minibatch and one full pass (3 runs; 6 with the budget held at 1/32 of N),
    but for every 16th, a probe allowed 1/32 of N (1,250): ~172 sections of budget per step.
    The draws agree with the conjugate posterior (z on the mean with an ESS-based error,
    |z| < 4)."""
    N = 40_000
    y = np.random.default_rng(3).normal(1.0, 1.0, N)

    @th.model
    def normal_mean(y):
        mu = th.sample("mu", dist.Normal(0.0, 2.0))
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    sd = (N + 0.25) ** -0.5
    k = th.subsampled_mh("mu", proposal=th.drift(2.38 * sd))
    r = th.infer(normal_mean(y), k, num_samples=600, burn_in=200, seed=1, progress=False,
                 init={"mu": float(y.mean())})
    s = r.stats[k.label()]
    assert 165 < s["budget_per_step"] < 175 and s["runs_per_step"] < 3.2
    assert s["full_passes_per_step"] > 0.9
    x = r["mu"].ravel()
    z = (x.mean() - y.sum() / (N + 0.25)) / (x.std() / math.sqrt(ess(x)))
    assert abs(z) < 4, z
    assert 0.8 < x.std() / sd < 1.25


def test_markov_steps_are_sections_with_states_held_fixed():
    rng = np.random.default_rng(0)
    trace = initialize(ar_chain(400), rng)
    k = th.subsampled_mh("phi", batch_size=50, epsilon=0.0, proposal=th.drift(0.05),
                         max_fraction=1.0)
    for _ in range(30):
        loc = locate(trace, ("phi",))
        new = float(np.clip(loc.value + 0.05 * rng.standard_normal(), -0.99, 0.99))
        log_alpha = exact_log_alpha(trace, ("phi",), new).log_weight
        log_u = math.log(rng.random())
        assert k.decide(trace, rng, [loc], {("phi",): new}, 0.0, log_u) == (log_u < log_alpha)
    assert k.last_outcome.n == 400  # ε = 0: every step of the chain is a section
    assert not trace.has_stale()  # ...and every step was evaluated under the accepted φ
    k3 = th.subsampled_mh("phi", batch_size=50, epsilon=0.05, proposal=th.drift(0.05),
                          max_fraction=1.0)
    loc = locate(trace, ("phi",))
    assert k3.decide(trace, rng, [loc], {("phi",): 0.99 * loc.value}, 0.0, -math.inf)
    assert k3.last_outcome.n < 400  # log u = −∞: accepted after the first minibatch
    assert trace.maybe_stale  # steps not evaluated under the new φ are stale...
    k2 = th.mh("phi", th.drift(0.05))
    k2.step(trace, rng)  # ...until an exact kernel refreshes them
    assert not trace.has_stale()


def test_mem_readers_are_sections():
    @th.model
    def clusters(y, z):
        w = th.mem("w", lambda k: dist.Normal(0.0, 3.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(w(z[i]), 1.0), y[i])

    rng = np.random.default_rng(1)
    z = rng.integers(0, 3, size=600)
    y = np.array([-3.0, 0.0, 3.0])[z] + rng.normal(size=600)
    trace = initialize(clusters(y, z), rng)
    k = th.subsampled_mh(("w", 1), batch_size=20, epsilon=0.0, proposal=th.drift(0.2),
                         max_fraction=1.0)
    for _ in range(20):
        loc = locate(trace, ("w", 1))
        new = loc.value + 0.2 * rng.standard_normal()
        log_alpha = exact_log_alpha(trace, ("w", 1), new).log_weight
        log_u = math.log(rng.random())
        assert k.decide(trace, rng, [loc], {("w", 1): new}, 0.0, log_u) == (log_u < log_alpha)
    assert k.last_outcome.n == int((z == 1).sum())  # the readers of key 1 only


def test_no_sections_falls_back_to_exact_mh_with_a_warning():
    @th.model
    def m():
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu, 1.0), 1.0)

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = th.infer(
            m(),
            th.subsampled_mh("mu", proposal=th.drift(1.0)),
            num_samples=3000,
            seed=0,
            progress=False,
        )
    assert sum("exact MH step" in str(x.message) for x in w) == 1
    assert abs(r["mu"].mean() - 0.5) < 0.1


def test_local_choice_is_rejected():
    @th.model
    def m(y):
        with th.plate("data", len(y)) as i:
            th.sample("z", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(0.0, 1.0), y[i])

    with pytest.raises(SelectionError, match="local to plate elements"):
        th.infer(m(np.zeros(3)), th.subsampled_mh("data.z"), num_samples=2, progress=False)


# -- austerity Gibbs -----------------------------------------------------------------------------


def test_austerity_gibbs_at_epsilon_zero_decides_like_exact_gibbs():
    """Flip iff logit(u) < Δ, with Δ the exact log-odds of the other value (004 §5)."""
    from thrifty.models.mrf import dense_mrf, random_potentials

    triples, log_psi = random_potentials(9, variance=0.3, seed=1)
    rng = np.random.default_rng(0)
    trace = initialize(dense_mrf(9, triples, log_psi), rng)
    k = th.austerity_gibbs("x", batch_size=7, epsilon=0.0)
    for trial in range(40):
        i = trial % 9
        loc = locate(trace, ("x", i))
        other = 1 - int(loc.value)
        delta = exact_log_alpha(trace, ("x", i), other).log_weight
        u = rng.random()
        logit_u = math.log(u) - math.log1p(-u)
        flipped = k.decide(trace, rng, [loc], {("x", i): other}, 0.0, logit_u)
        assert flipped == (logit_u < delta)
        assert k.last_outcome.n == 28  # C(8, 2) factors contain variable i
        assert trace["x", i] == (other if flipped else 1 - other)


@pytest.mark.slow
def test_austerity_gibbs_marginals_match_enumeration():
    """Every P(X_i = 1) within 4.5 ESS-based standard errors of enumeration, plus a stated bias
    bound of 0.01 (the approximate kernel at ε = 0.01 is allowed that much).  At ε = 0 every
    decision is exact Gibbs's for the same u (checked decision by decision above), so one
    chain, at ε = 0.01, runs the kernel end to end."""
    from thrifty.diagnostics._arviz import ess as az_ess
    from thrifty.models.mrf import dense_mrf, exact_marginals, random_potentials

    D = 8
    triples, log_psi = random_potentials(D, variance=0.3, seed=2)
    exact = exact_marginals(D, triples, log_psi)
    for eps in (0.01,):
        k = th.austerity_gibbs("x", batch_size=7, epsilon=eps)
        r = th.infer(
            dense_mrf(D, triples, log_psi), k, num_samples=3000, burn_in=200, seed=3, progress=False
        )
        for i in range(D):
            x = r[f"x.{i}"].astype(float)
            se = max(x.std(), 1e-3) / math.sqrt(az_ess(x))
            assert abs(x.mean() - exact[i]) < 4.5 * se + 0.01, (eps, i)


def test_austerity_gibbs_needs_binary_choices():
    @th.model
    def m():
        th.sample("k", dist.Categorical(np.array([0.2, 0.3, 0.5])))

    with pytest.raises(SelectionError, match=r"must be a binary"):
        th.infer(m(), th.austerity_gibbs("k"), num_samples=2, progress=False)
