"""Gibbs kernels on small finite models by their exact transition matrices (see
:mod:`exact_kernel`): πP = π to 1e-10 for the exact posterior π, each chain's states connected,
and a wrong π (a negative control) far from stationary.  Plus the one part of a Gibbs step the
matrices script rather than run: the Gumbel-max draw, against its probabilities."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from exact_kernel import (
    all_draws,
    assert_stationary,
    lmh_draws,
    mh_draws,
    one_draws,
    selected_lmh_draws,
    transition_matrix,
    transition_row,
)
from test_exchangeable import NG, X2, X6, dpm, exact_dpm, log_ewens, niw_dpm
from test_pitman_yor import eppf, py_mixture
from test_posteriors import CAT_Y, cat_posterior, categorical_means
from test_processes import canonical
from thrifty import dist
from thrifty.inference.mcmc.gibbs import _gumbel_choice, _gumbel_pick
from thrifty.processes.collapsed import NormalGamma, NormalInverseWishart


def test_gumbel_max_draws_have_the_normalised_weights():
    """20,000 draws of each Gumbel-max function against softmax(logw): χ² p > 1e-4; against the
    weights at temperature 1.2 (negative control): p < 1e-4."""
    logw = np.array([0.3, -np.inf, -1.0, 1.2, 0.0])
    p = np.exp(logw - np.logaddexp.reduce(logw))
    rng = np.random.default_rng(5)
    picks = np.array([_gumbel_pick(logw.tolist(), rng) for _ in range(20000)])
    choices = _gumbel_choice(np.repeat(logw[:, None], 20000, axis=1), rng)
    wrong = np.exp(logw / 1.2 - np.logaddexp.reduce(logw / 1.2))
    for draws in (picks, choices):
        counts = np.bincount(draws, minlength=len(p))
        assert counts[1] == 0  # a value of weight −∞ is never drawn
        on = p > 0
        assert stats.chisquare(counts[on], p[on] * len(draws)).pvalue > 1e-4
        assert stats.chisquare(counts[on], wrong[on] * len(draws)).pvalue < 1e-4


def _labels(trace, site="data.z"):
    return canonical(trace.values()[site].tolist())


def _each_label_and_the_sweep(program, parts, probs, wrong) -> np.ndarray:
    """Each label's Gibbs update leaves ``probs`` invariant and moves ``wrong`` (a negative
    control); a sweep, the labels' updates in turn, connects every partition.  Returns the
    sweep's matrix."""
    P = np.eye(len(parts))
    for i in range(len(parts[0])):
        Pi = transition_matrix(program, th.gibbs(("data", i, "z")), parts, _init, _labels)
        assert_stationary(probs, Pi, connected=False)  # (one label cannot reach all)
        assert np.max(np.abs(wrong @ Pi - wrong)) > 1e-4
        P = P @ Pi
    assert_stationary(probs, P)
    return P


def _init(labels):
    return {"data.z": np.array(labels)}


def test_gibbs_on_crp_labels_leaves_the_partition_posterior_invariant():
    """Collapsed DP mixture of six points (Neal 2000 Alg. 3, the CRP's candidates scored in
    lanes), over the 203 partitions; negative control: the posterior for α = 2."""
    parts, probs = exact_dpm(X6, lambda p: log_ewens(p, 1.0), lambda: NormalGamma(*NG))
    _, wrong = exact_dpm(X6, lambda p: log_ewens(p, 2.0), lambda: NormalGamma(*NG))
    _each_label_and_the_sweep(dpm(X6, 1.0), parts, probs, wrong)


def test_gibbs_on_pitman_yor_labels_leaves_the_partition_posterior_invariant():
    """The same for a Pitman–Yor process (d = 0.5, a = 0.5) on five points; negative control:
    the posterior for d = 0.4."""
    x = X6[:5]
    parts, probs = exact_dpm(x, lambda p: math.log(eppf(p, 0.5, 0.5)), lambda: NormalGamma(*NG))
    _, wrong = exact_dpm(x, lambda p: math.log(eppf(p, 0.4, 0.5)), lambda: NormalGamma(*NG))
    program = py_mixture(x, 0.5, 0.5)
    P = _each_label_and_the_sweep(program, parts, probs, wrong)
    # th.gibbs over all the labels is that sweep: its row from one table (188 paths)
    one_table = parts.index((0,) * len(x))
    trace = th.initialize(program, 0, init=_init(parts[one_table]))
    row = transition_row(trace, th.gibbs("data.z"), _labels)
    assert len(row) == len(parts)
    got = np.array([row.get(p, 0.0) for p in parts])
    np.testing.assert_allclose(got, P[one_table], rtol=1e-10, atol=1e-15)


@th.model
def weighted_tables(x):
    """A CRP mixture whose tables each draw a memoized Bernoulli weight w(z)."""
    crp = th.CRP(1.0)
    w = th.mem("w", lambda k: dist.Bernoulli(0.3))
    with th.plate("data", len(x)) as i:
        th.observe("x", dist.Normal(2.0 * w(th.sample("z", crp)) - 1.0, 0.7), x[i])


def test_mh_from_the_prior_moves_table_labels_one_at_a_time_never_in_a_block():
    """Over the 22 states (partition of three points, a weight per table) — labels taken in
    order of first use: th.mh(th.one(["data.z", "w"]), th.prior()) (one label or one weight)
    leaves the posterior invariant and is irreducible.  A block of several labels and other
    choices redrew the labels one after another, each given the others, and scored the old
    labels along that path; its chain kept P(one table) at 0.1413 for an exact 0.1436
    (max |πP − π| = 2.6e-4): th.mh refuses such a block, naming the labels."""
    from thrifty.errors import SelectionError

    x = np.array([0.9, -0.6, 1.4])
    states, lw = [], []
    for p in [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 1, 2)]:
        for ws in np.ndindex(*(2,) * (max(p) + 1)):
            states.append((p, ws))
            lw.append(log_ewens(np.array(p), 1.0) + sum(math.log(0.3 if v else 0.7) for v in ws)
                      + stats.norm.logpdf(x, 2.0 * np.array(ws)[list(p)] - 1.0, 0.7).sum())
    pi = np.exp(np.array(lw) - np.logaddexp.reduce(lw))

    def state_of(t):
        z = t.values()["data.z"].tolist()
        tables = list(dict.fromkeys(z))
        return tuple(tables.index(k) for k in z), tuple(int(t[("w", k)]) for k in tables)

    def init_of(s):
        return {"data.z": np.array(s[0]), **{f"w.{k}": v for k, v in enumerate(s[1])}}

    P = transition_matrix(weighted_tables(x), th.mh(th.one(["data.z", "w"]), th.prior()),
                          states, init_of, state_of, draws=one_draws)
    assert_stationary(pi, P)
    with pytest.raises(SelectionError, match=r"the draws of 'data.z' at 3 plate elements"):
        th.mh(["data.z", "w"], th.prior()).step(th.initialize(weighted_tables(x), 0),
                                                np.random.default_rng(0))


@th.model
def shifted_dpm(x, u):
    """A collapsed DP mixture whose plate also observes u_i ~ N(k, 1): a change of k
    re-executes the plate's elements and leaves the clusters as they are."""
    k = th.sample("k", dist.Bernoulli(0.5))
    crp = th.CRP(1.0)
    feats = th.mem("feats", lambda t: th.collapsed.NormalGamma(*NG))
    with th.plate("data", len(x)) as i:
        th.observe("x", feats(th.sample("z", crp)), x[i])
        th.observe("u", dist.Normal(k, 1.0), u[i])


def test_a_fork_keeps_its_clusters_apart_from_the_trace_it_forked():
    """A run committed into a fork that re-executed a collapsed site without moving an
    element installed the trace's own cluster state in the fork; the fork's next move then
    wrote its keys into the trace's columns (the trace's element 0 said cluster 1, its
    clusters {0}: KeyError at its next run).  Every exact matrix here forks its state for
    each path of a step of several commits: Gibbs on k then on the labels (5 partitions × 2
    values of k) leaves the posterior invariant only with the forks apart (before: KeyError)."""
    x, u = X6[[0, 2, 4]], np.array([0.8, 1.1, 0.3])
    states = [(k, p) for k in range(2) for p in [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1),
                                                  (0, 1, 2)]]
    lw = []
    for k, p in states:
        lp = log_ewens(np.array(p), 1.0) + stats.norm.logpdf(u, k, 1.0).sum()
        for t in range(max(p) + 1):
            f = NormalGamma(*NG)
            for v in x[np.array(p) == t]:
                f.incorporate(v)
            lp += f.marginal_log_prob()
        lw.append(lp)
    pi = np.exp(np.array(lw) - np.logaddexp.reduce(lw))
    P = transition_matrix(shifted_dpm(x, u), th.cycle([th.gibbs("k"), th.gibbs("data.z")]),
                          states, lambda s: {"k": s[0], **_init(s[1])},
                          lambda t: (int(t["k"]), _labels(t)))
    assert_stationary(pi, P)


def test_gibbs_on_niw_mixture_labels_leaves_the_partition_posterior_invariant():
    """Bivariate points, a collapsed Normal–inverse-Wishart per table, over the 52 partitions
    of five points; negative control: the posterior for a prior scale matrix of 2 I."""
    def family(scale):
        return lambda: NormalInverseWishart(np.zeros(2), 0.2, 4.0, scale * np.eye(2))

    parts, probs = exact_dpm(X2, lambda p: log_ewens(p, 0.8), family(1.0))
    _, wrong = exact_dpm(X2, lambda p: log_ewens(p, 0.8), family(2.0))
    _each_label_and_the_sweep(niw_dpm(X2), parts, probs, wrong)


def test_gibbs_on_a_top_level_categorical_leaves_its_posterior_invariant():
    """One Categorical choice, each value scored by its own run and the drawn one's run
    committed; negative control: the posterior for observation sd 1.2."""
    states = [0, 1, 2]
    pi = np.array([cat_posterior()[k] for k in states])
    wrong = np.array([cat_posterior(sd=1.2)[k] for k in states])
    P = transition_matrix(categorical_means(CAT_Y), th.gibbs("k"), states,
                          lambda k: {"k": k}, lambda t: int(t["k"]))
    assert_stationary(pi, P)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-4


# -- LMH (paper 001): site pick, prior draws and accept scripted ---------------------------------
CS = np.array([0.2, 0.3, 0.5])


@th.model
def switched():
    """b decides whether c exists: |x| is 2 or 3 latent choices, so LMH's ratio needs the size
    factor |x| / |x'| and the fresh and stale terms of paper 001 Eq. 4."""
    b = th.sample("b", dist.Bernoulli(0.4))
    c = th.sample("c", dist.Categorical(CS)) if b else -2
    d = th.sample("d", dist.Bernoulli(0.7))
    th.observe("y", dist.Normal(c + 1.0 + d, 1.0), 0.8)


SWITCHED = [(0, None, 0), (0, None, 1)] + [(1, c, d) for c in range(3) for d in range(2)]


def _switched_posterior(size_factor: bool = True) -> np.ndarray:
    """p(b, c, d | y) by enumeration; without the size factor, ∝ |x| · p(x, y) (the law an LMH
    without it samples)."""
    lw = []
    for b, c, d in SWITCHED:
        lp = math.log(0.4 if b else 0.6) + math.log(0.7 if d else 0.3)
        lp += math.log(CS[c]) if b else 0.0
        lp += stats.norm.logpdf(0.8, (c if b else -2) + 1.0 + d, 1.0)
        lw.append(lp + (0.0 if size_factor else math.log(3 if b else 2)))
    lw = np.array(lw)
    return np.exp(lw - np.logaddexp.reduce(lw))


def _switched_state(trace):
    b = int(trace["b"])
    return (b, int(trace["c"]) if b else None, int(trace["d"]))


def test_lmh_with_a_choice_that_comes_and_goes_leaves_the_posterior_invariant():
    """LMH's transition matrix on the 8 states of ``switched`` (every site pick, prior draw and
    accept outcome, each run on a fork): πP = π to 1e-10 and irreducible.  Negative control:
    LMH without the size factor is invariant for ∝ |x| p(x, y) instead, not for π."""
    from stat_helpers import LMHWithoutSizeCorrection

    def init_of(s):
        b, c, d = s
        return {"b": b, "d": d, **({"c": c} if b else {})}

    pi, wrong = _switched_posterior(), _switched_posterior(size_factor=False)
    P = transition_matrix(switched(), th.lmh(), SWITCHED, init_of, _switched_state,
                          draws=lmh_draws)
    assert_stationary(pi, P)
    Q = transition_matrix(switched(), LMHWithoutSizeCorrection(), SWITCHED, init_of,
                          _switched_state, draws=lmh_draws)
    assert_stationary(wrong, Q)
    assert np.max(np.abs(pi @ Q - pi)) > 1e-4


def test_mh_from_the_prior_leaves_the_posterior_invariant():
    """th.mh from the prior on the block (b, d) of ``switched`` — c, drawn afresh when b
    becomes 1, is part of the proposal (its prior is its q term) — and on d alone: every
    prior draw and accept outcome.  The block's P is irreducible with πP = π; d's leaves π
    invariant; negative control: the block's P is not invariant for ∝ |x| p(x, y)."""

    def init_of(s):
        b, c, d = s
        return {"b": b, "d": d, **({"c": c} if b else {})}

    pi, wrong = _switched_posterior(), _switched_posterior(size_factor=False)
    P = transition_matrix(switched(), th.mh(["b", "d"], th.prior()), SWITCHED, init_of,
                          _switched_state, draws=mh_draws)
    assert_stationary(pi, P)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-4
    P = transition_matrix(switched(), th.mh("d", th.prior()), SWITCHED, init_of,
                          _switched_state, draws=mh_draws)
    assert_stationary(pi, P, connected=False)


def test_mh_from_the_prior_on_a_block_that_drops_one_of_its_choices():
    """th.mh(["b", "c"], th.prior()): a proposal of b = 0 leaves c, also resampled, out of the
    new trace (stale; its draw is no part of the proposal) — an independence sampler from the
    prior on (b, c), exact for π.  At 5806d5c such a proposal raised SelectionError ("the
    program did not reach the address(es) ('c',)") in the middle of the chain."""

    def init_of(s):
        b, c, d = s
        return {"b": b, "d": d, **({"c": c} if b else {})}

    P = transition_matrix(switched(), th.mh(["b", "c"], th.prior()), SWITCHED, init_of,
                          _switched_state, draws=mh_draws)
    assert_stationary(_switched_posterior(), P, connected=False)  # (d never moves)


def test_mh_sweep_on_choices_that_decide_which_others_exist():
    """th.mh(th.each(["c", "b", "d"]), th.prior()) on ``switched``: b's update creates or drops
    c, which the sweep has passed — the sweep is the fixed sequence c, b, d (c kept where it
    does not exist): πP = π on the 8 states.  In the order b, c, d, b's update would change
    whether c, still ahead, exists: the sweep's schedule would depend on its own moves (kept
    going, c's update skipped where b created it: max |πP − π| = 0.0024), so th.mh refuses,
    naming the choices (at 5806d5c: a SelectionError "no latent choice at ('c',)" when c was
    dropped, nothing when it was created)."""
    from thrifty.errors import SelectionError

    def init_of(s):
        b, c, d = s
        return {"b": b, "d": d, **({"c": c} if b else {})}

    P = transition_matrix(switched(), th.mh(th.each(["c", "b", "d"]), th.prior()), SWITCHED,
                          init_of, _switched_state, draws=mh_draws)
    assert_stationary(_switched_posterior(), P)
    with pytest.raises(SelectionError, match=r"updating \('b',\) created or dropped \('c',\)"):
        transition_matrix(switched(), th.mh(th.each(["b", "c", "d"]), th.prior()), SWITCHED,
                          init_of, _switched_state, draws=mh_draws)


@th.model
def two_families():
    """b picks x's family: Categorical over {0, 1, 2} or Bernoulli.  A proposal of b = 0 at
    x = 2 redraws x (outside the Bernoulli's support), and the reverse move would keep the
    redrawn 0 or 1: it has no reverse, and MH rejects it (its run stops there)."""
    b = th.sample("b", dist.Bernoulli(0.3))
    x = th.sample("x", dist.Categorical(CS)) if b else th.sample("x", dist.Bernoulli(0.4))
    d = th.sample("d", dist.Bernoulli(0.6))
    th.observe("y", dist.Normal(x + 0.5 * b + d, 1.0), 1.7)


TWO_FAMILIES = [(b, x, d) for b in range(2) for x in range(3 if b else 2) for d in range(2)]


def _two_families_posterior() -> np.ndarray:
    lw = [math.log((0.3 * CS[x]) if b else 0.7 * (0.4 if x else 0.6)) + math.log(0.6 if d else 0.4)
          + stats.norm.logpdf(1.7, x + 0.5 * b + d, 1.0) for b, x, d in TWO_FAMILIES]
    return np.exp(np.array(lw) - np.logaddexp.reduce(lw))


def test_kernels_that_count_a_proposed_trace_reject_a_redraw_without_reverse():
    """th.lmh on a selection and th.mh on th.one(...) weigh a proposal that creates or drops
    choices by the proposed trace's number of choices or blocks, asked of it once committed
    into a fork; the run of a redraw without reverse stops, and committing it raised
    RuntimeError ("cannot commit a run with probability zero") at the first such proposal —
    adaptive LMH's Eq. 6 term too.  Exact P on the 10 states: πP = π (d stays with th.lmh
    on b and x); adaptive LMH: its draws of (b, x) against π (chi-square)."""
    from stat_helpers import chisq_p

    def init_of(s):
        return {"b": s[0], "x": s[1], "d": s[2]}

    def state_of(t):
        return int(t["b"]), int(t["x"]), int(t["d"])

    pi = _two_families_posterior()
    P = transition_matrix(two_families(), th.lmh(["b", "x"]), TWO_FAMILIES, init_of, state_of,
                          draws=selected_lmh_draws)
    assert_stationary(pi, P, connected=False)
    P = transition_matrix(two_families(), th.mh(th.one(["b", "x", "d"]), th.prior()),
                          TWO_FAMILIES, init_of, state_of, draws=one_draws)
    assert_stationary(pi, P)
    r = th.infer(two_families(), th.adaptive_lmh(), num_samples=6000, seed=2, progress=False)
    cells = 3 * r["b"][0] + r["x"][0]
    probs = {3 * b + x: sum(p for (b2, x2, _), p in zip(TWO_FAMILIES, pi) if (b2, x2) == (b, x))
             for b, x, _ in TWO_FAMILIES}
    assert chisq_p(cells, probs) > 1e-4


@th.model
def labelled(y):
    """k picks the shift of two elements' means; each element's label z_i ~ Bernoulli(0.3)."""
    k = th.sample("k", dist.Categorical(CS))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(0.3))
        th.observe("y", dist.Normal(k - 1.0 + 2.0 * z, 1.0), y[i])


def test_lmh_on_plate_elements_leaves_the_posterior_invariant():
    """LMH picks k or one element's label (an element-wise run, the element resampled from its
    prior): its exact P on the 12 states leaves the posterior invariant and is irreducible;
    negative control: the posterior for observation sd 1.3."""
    y = np.array([0.4, 2.1])
    states = [(k, a, b) for k in range(3) for a in range(2) for b in range(2)]

    def posterior(sd=1.0):
        lw = [math.log(CS[k]) + sum(math.log(0.7 if z == 0 else 0.3)
                                    + stats.norm.logpdf(yi, k - 1.0 + 2.0 * z, sd)
                                    for z, yi in zip((a, b), y)) for k, a, b in states]
        return np.exp(np.array(lw) - np.logaddexp.reduce(lw))

    P = transition_matrix(labelled(y), th.lmh(), states,
                          lambda s: {"k": s[0], "data.z": np.array(s[1:])},
                          lambda t: (int(t["k"]), *map(int, t.values()["data.z"])),
                          draws=lmh_draws)
    assert_stationary(posterior(), P)
    wrong = posterior(1.3)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-4


@th.model
def keyed(y):
    """k picks which key of a memoized function the observation reads: the key read before a
    change of k has no reader after it and leaves the trace."""
    k = th.sample("k", dist.Bernoulli(0.4))
    f = th.mem("w", lambda key: dist.Bernoulli(0.3 + 0.4 * key))
    th.observe("y", dist.Normal(2.0 * f(k) - k, 1.0), y)


def test_mh_from_the_prior_on_a_choice_and_its_memoized_key_leaves_the_posterior_invariant():
    """th.mh(["k", "w"], th.prior()) resamples k and the key w.k it reads; when k changes the
    old key, resampled but read by no one, leaves the trace, and its draw is no part of the
    proposal's density (001 Eq. 4: a stale choice enters neither ratio), so the step is an
    independence sampler from the prior, accepting with the likelihood ratio.  Exact P on the
    4 states: πP = π (at 5806d5c the dropped key's q_rev − q_fwd stayed in the ratio: P(k = 1)
    0.376 for an exact 0.462)."""
    y = 1.3
    states = [(k, w) for k in range(2) for w in range(2)]
    lw = [math.log((0.4 if k else 0.6) * ((0.3 + 0.4 * k) if w else (0.7 - 0.4 * k)))
          + stats.norm.logpdf(y, 2.0 * w - k, 1.0) for k, w in states]
    pi = np.exp(np.array(lw) - np.logaddexp.reduce(lw))
    P = transition_matrix(keyed(y), th.mh(["k", "w"], th.prior()), states,
                          lambda s: {"k": s[0], f"w.{s[0]}": s[1]},
                          lambda t: (int(t["k"]), int(t[("w", int(t["k"]))])), draws=mh_draws)
    assert_stationary(pi, P)


# -- supports that move apart, in a plate -------------------------------------------------------
APART = {0: [0.6, 0.4, 0.0], 1: [0.0, 0.0, 1.0]}  # x's probabilities given b: no value in common
Y_APART = np.array([[1.6, 0.4], [0.2, 2.1]])


@th.model
def apart(chain: bool):
    """b moves x's support apart: a change of b redraws every x, and the reverse move redraws
    them back (001 §2: fresh and stale terms), so LMH and MH on b keep such a proposal.  x is a
    site of two plate elements, or of the two steps of a chain in each element."""
    b = th.sample("b", dist.Bernoulli(0.5))
    probs = np.array(APART[b])
    with th.plate("data", 2) as i:
        if not chain:
            x = th.sample("x", dist.Categorical(probs))
            th.observe("y", dist.Normal(x + 0.5 * b, 1.0), Y_APART[i, 0])
            return

        def step(t, prev):
            x = th.sample("x", dist.Categorical(probs))
            th.observe("y", dist.Normal(x + 0.5 * b, 1.0), Y_APART[i, t])
            return x

        th.markov("s", step, 2, 0)


def _apart_states(chain: bool):
    """(init, state) pairs and the exact posterior: x over (elements, steps)."""
    steps = 2 if chain else 1
    inits, lw = [], []
    for b in range(2):
        for xs in itertools.product(range(3), repeat=2 * steps):
            x = np.array(xs).reshape(2, steps)
            p = np.array(APART[b])[x]
            if (p == 0).any():
                continue
            lw.append(math.log(0.5) + np.log(p).sum()
                      + stats.norm.logpdf(Y_APART[:, :steps], x + 0.5 * b).sum())
            inits.append({"b": b, **({f"data.s.{t}.x": x[:, t] for t in range(steps)} if chain
                                     else {"data.x": x[:, 0]})})
    return inits, np.exp(np.array(lw) - np.logaddexp.reduce(lw))


def _apart_state(t):
    return tuple((k, tuple(np.ravel(v).tolist())) for k, v in sorted(t.values().items()))


def test_a_redraw_in_a_plate_keeps_its_reverse_after_a_commit_of_some_elements():
    """A proposal of b redraws x at each element; it was kept only if the plate knew the
    distribution the element's x was drawn under — kept for the elements of the last run that
    wrote x, so after a commit of some elements (Gibbs on x moving one of two) the proposal was
    rejected for a state it is kept for otherwise: th.cycle([th.gibbs("data.x"),
    th.lmh("b")]) had max |πP − π| = 0.024, and th.infer's default kernel (Gibbs on b and x,
    LMH on b) gave P(b = 1) = 0.029 and 0.036 (two seeds, 20,000 draws) for an exact 0.097.
    A plate that did not keep it now replays the elements in the old trace for it."""
    inits, pi = _apart_states(chain=False)
    states = [_apart_state(th.initialize(apart(False), 0, init=i)) for i in inits]
    P = transition_matrix(apart(False), th.cycle([th.gibbs("data.x"), th.lmh("b")]), states,
                          lambda s: inits[states.index(s)], _apart_state, draws=all_draws,
                          check=True)
    assert_stationary(pi, P)


def test_a_redraw_in_the_steps_of_a_chain_in_a_plate_keeps_its_reverse():
    """The same for x in the steps of a chain in each plate element, whose step frames never
    said under which distribution a value was drawn: every proposal of b was rejected and b
    never moved (LMH's P on the 17 states: invariant but not irreducible)."""
    inits, pi = _apart_states(chain=True)
    states = [_apart_state(th.initialize(apart(True), 0, init=i)) for i in inits]
    P = transition_matrix(apart(True), th.lmh(), states, lambda s: inits[states.index(s)],
                          _apart_state, draws=all_draws, check=True)
    assert_stationary(pi, P)
