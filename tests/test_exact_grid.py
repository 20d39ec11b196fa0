"""Kernels × the structures the engine skips work for, by exact transition matrices
(:mod:`exact_kernel`, every draw scripted by ``all_draws``): πP = π to 1e-10 for the posterior π
enumerated by hand, irreducibility where the kernel moves every choice, and every path's trace
equal to a full execution of the program (``check=True``).

The models are small and discrete: a plate with per-element latents beside a parent, a factor
and deterministic sites; markov chains of scalar and dict states (with a deterministic count,
so that a change may or may not come back to the same state); memoized keys read by several
elements and dropped when no one reads them; a branch that creates a choice; a choice that
resizes a plate or sets a chain's length; a choice that moves another's support; a choice
inside a markov step that creates another; a chain in a plate, and one whose length a choice
sets; CRP and Pitman–Yor labels with a memoized weight per table and a concentration read from
a parent.  The kernels are those a
user composes: th.lmh (all choices, a selection, exclude=), th.mh from the prior on one
scalar (the identity move), one plate element, one markov-step choice, a block, th.one and
th.each, th.gibbs, th.cycle and th.mixture of them, adaptive LMH with its weights frozen,
and th.infer's default kernel where it has no particle kernel.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from exact_kernel import all_draws, assert_stationary, transition_matrix
from thrifty import dist
from thrifty.inference.default import default_kernel

CS = np.array([0.2, 0.3, 0.5])
Y2, Y3 = np.array([0.4, 2.1]), np.array([0.9, -0.2, 1.3])


def _bern(p, v):
    return math.log(p if v else 1.0 - p)


def _npdf(y, m, s=1.0):
    return float(stats.norm.logpdf(y, m, s))


# -- models: each returns (program, [(init, log p(x, y))]) ----------------------------------------
@th.model
def plate_model():
    k = th.sample("k", dist.Categorical(CS))
    th.factor("f", -0.3 * k)
    with th.plate("data", 2) as i:
        z = th.sample("z", dist.Bernoulli(0.3))
        th.deterministic("m", k - 1.0 + 2.0 * z)
        th.observe("y", dist.Normal(k - 1.0 + 2.0 * z, 1.0), Y2[i])


def _plate():
    return plate_model(), [
        ({"k": k, "data.z": np.array([a, b])},
         math.log(CS[k]) - 0.3 * k + sum(_bern(0.3, z) + _npdf(y, k - 1 + 2 * z)
                                         for z, y in zip((a, b), Y2)))
        for k, a, b in itertools.product(range(3), range(2), range(2))]


@th.model
def chain_model(dict_state):
    """a sets the transitions; with ``dict_state`` the state also counts the ones so far (a
    deterministic site), which y reads."""
    a = th.sample("a", dist.Bernoulli(0.4))
    P = np.array([[0.7, 0.3], [0.2, 0.8]]) if a else np.array([[0.5, 0.5], [0.4, 0.6]])

    def step(t, prev):
        h = prev["h"] if dict_state else prev
        x = th.sample("x", dist.Bernoulli(P[h, 1]))
        n = th.deterministic("n", prev["n"] + x) if dict_state else x
        th.observe("y", dist.Normal(0.8 * n + 0.5 * a, 1.0), Y3[t])
        return {"h": x, "n": n} if dict_state else x

    th.markov("s", step, 3, {"h": 0, "n": 0} if dict_state else 0)


def _chain(dict_state):
    out = []
    for a, *xs in itertools.product(range(2), repeat=4):
        P = np.array([[0.7, 0.3], [0.2, 0.8]]) if a else np.array([[0.5, 0.5], [0.4, 0.6]])
        lp, prev, n = _bern(0.4, a), 0, 0
        for t, x in enumerate(xs):
            n = n + x if dict_state else x
            lp += _bern(P[prev, 1], x) + _npdf(Y3[t], 0.8 * n + 0.5 * a)
            prev = x
        out.append(({"a": a, **{f"s.{t}.x": x for t, x in enumerate(xs)}}, lp))
    return chain_model(dict_state), out


@th.model
def mem_model():
    w = th.mem("w", lambda key: dist.Bernoulli(0.3 + 0.4 * key))
    with th.plate("data", 3) as i:
        z = th.sample("z", dist.Bernoulli(0.5))
        th.observe("y", dist.Normal(2.0 * w(z) - 1.0 + 0.3 * z, 1.0), Y3[i])


def _mem():
    out = []
    for zs in itertools.product(range(2), repeat=3):
        keys = sorted(set(zs))
        for ws in itertools.product(range(2), repeat=len(keys)):
            w = dict(zip(keys, ws))
            lp = sum(_bern(0.3 + 0.4 * k, w[k]) for k in keys) + sum(
                math.log(0.5) + _npdf(y, 2 * w[z] - 1 + 0.3 * z) for z, y in zip(zs, Y3))
            out.append(({"data.z": np.array(zs), **{f"w.{k}": w[k] for k in keys}}, lp))
    return mem_model(), out


@th.model
def resize_model():
    n = th.sample("n", dist.Categorical(np.array([0.3, 0.4, 0.3])))
    with th.plate("p", n + 1):
        z = th.sample("z", dist.Bernoulli(0.4))
        th.factor("f", 0.7 * z - 0.2)
    th.observe("y", dist.Normal(n, 1.5), 1.0)


def _resize():
    return resize_model(), [
        ({"n": n, "p.z": np.array(zs)},
         math.log([0.3, 0.4, 0.3][n]) + _npdf(1.0, n, 1.5)
         + sum(_bern(0.4, z) + 0.7 * z - 0.2 for z in zs))
        for n in range(3) for zs in itertools.product(range(2), repeat=n + 1)]


@th.model
def support_model():
    b = th.sample("b", dist.Bernoulli(0.5))
    x = th.sample("x", dist.Categorical(np.array([0.2, 0.3, 0.5] if b else [0.6, 0.4, 0.0])))
    d = th.sample("d", dist.Bernoulli(0.6))
    th.observe("y", dist.Normal(x + b + d, 1.0), 1.7)


def _support():
    out = []
    for b, x, d in itertools.product(range(2), range(3), range(2)):
        p = ([0.2, 0.3, 0.5] if b else [0.6, 0.4, 0.0])[x]
        if p > 0:
            out.append(({"b": b, "x": x, "d": d}, _bern(0.5, b) + math.log(p) + _bern(0.6, d)
                        + _npdf(1.7, x + b + d)))
    return support_model(), out


@th.model
def branch_chain():
    """g_t decides whether c_t exists: a step's choice creates or drops another of the step."""
    def step(t, prev):
        g = th.sample("g", dist.Bernoulli(0.3 + 0.4 * prev))
        c = th.sample("c", dist.Bernoulli(0.3)) if g else 0
        th.observe("y", dist.Normal(g + c, 1.0), Y3[t])
        return g

    th.markov("s", step, 3, 0)


def _branch_chain():
    out = []
    for combo in itertools.product([(0, None), (1, 0), (1, 1)], repeat=3):
        lp, prev, init = 0.0, 0, {}
        for t, (g, c) in enumerate(combo):
            lp += _bern(0.3 + 0.4 * prev, g) + _npdf(Y3[t], g + (c or 0))
            init[f"s.{t}.g"] = g
            if g:
                lp += _bern(0.3, c)
                init[f"s.{t}.c"] = c
            prev = g
        out.append((init, lp))
    return branch_chain(), out


@th.model
def length_chain():
    L = th.sample("L", dist.Categorical(np.array([0.3, 0.4, 0.3])))

    def step(t, prev):
        x = th.sample("x", dist.Bernoulli(0.3 + 0.4 * prev))
        th.factor("f", 0.6 * x - 0.1 * t)
        return x

    th.markov("s", step, L + 1, 0)
    th.observe("y", dist.Normal(L, 1.5), 1.2)


def _length_chain():
    out = []
    for L in range(3):
        for xs in itertools.product(range(2), repeat=L + 1):
            lp, prev = math.log([0.3, 0.4, 0.3][L]) + _npdf(1.2, L, 1.5), 0
            for t, x in enumerate(xs):
                lp += _bern(0.3 + 0.4 * prev, x) + 0.6 * x - 0.1 * t
                prev = x
            out.append(({"L": L, **{f"s.{t}.x": x for t, x in enumerate(xs)}}, lp))
    return length_chain(), out


YL = np.array([[0.5, 1.4], [-0.3, 0.2]])


@th.model
def plate_chain():
    a = th.sample("a", dist.Bernoulli(0.5))
    with th.plate("data", 2) as i:
        def step(t, prev):
            x = th.sample("x", dist.Bernoulli(0.3 + 0.2 * a + 0.3 * prev))
            th.observe("y", dist.Normal(x, 1.0), YL[i, t])
            return x

        th.markov("s", step, 2, 0)


def _plate_chain():
    out = []
    for a, x00, x01, x10, x11 in itertools.product(range(2), repeat=5):
        lp = _bern(0.5, a)
        for e, xs in enumerate(((x00, x01), (x10, x11))):
            prev = 0
            for t, x in enumerate(xs):
                lp += _bern(0.3 + 0.2 * a + 0.3 * prev, x) + _npdf(YL[e, t], x)
                prev = x
        out.append(({"a": a, "data.s.0.x": np.array([x00, x10]),
                     "data.s.1.x": np.array([x01, x11])}, lp))
    return plate_chain(), out


@th.model
def plate_chain_length():
    """A chain in a plate whose length a top-level choice sets (growing it adds steps to every
    element's chain)."""
    L = th.sample("L", dist.Bernoulli(0.5))
    with th.plate("data", 2) as i:
        def step(t, prev):
            x = th.sample("x", dist.Bernoulli(0.3 + 0.4 * prev))
            th.observe("y", dist.Normal(x, 1.0), YL[i, t])
            return x

        th.markov("s", step, 1 + L, 0)


def _plate_chain_length():
    out = []
    for L in range(2):
        for xs in itertools.product(range(2), repeat=2 * (1 + L)):
            lp = _bern(0.5, L)
            for e in range(2):
                prev = 0
                for t in range(1 + L):
                    x = xs[2 * t + e]
                    lp += _bern(0.3 + 0.4 * prev, x) + _npdf(YL[e, t], x)
                    prev = x
            out.append(({"L": L, **{f"data.s.{t}.x": np.array(xs[2 * t:2 * t + 2])
                                    for t in range(1 + L)}}, lp))
    return plate_chain_length(), out


XH = np.array([0.9, -0.6, 1.4])
PARTS3 = [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 1, 2)]


@th.model
def tables(py):
    """Table labels of a CRP (or Pitman–Yor process) whose concentration a parent sets, and a
    memoized weight per table."""
    a = th.sample("a", dist.Bernoulli(0.5))
    proc = th.PitmanYor(0.3, 0.5 + a) if py else th.CRP(0.5 + a)
    w = th.mem("w", lambda k: dist.Bernoulli(0.3))
    with th.plate("data", 3) as i:
        th.observe("x", dist.Normal(2.0 * w(th.sample("z", proc)) - 1.0, 0.7), XH[i])


def _eppf(p, d, a):
    """log p(partition) of a Pitman–Yor process (d = 0: the CRP)."""
    c = np.bincount(p)
    return (sum(math.log(a + k * d) for k in range(1, len(c)))
            - sum(math.log(a + i) for i in range(1, len(p)))
            + sum(math.log(j - d) for m in c for j in range(1, m)))


def _tables(py):
    out = []
    for a, p in itertools.product(range(2), PARTS3):
        for ws in itertools.product(range(2), repeat=max(p) + 1):
            lp = _bern(0.5, a) + _eppf(np.array(p), 0.3 if py else 0.0, 0.5 + a)
            lp += sum(_bern(0.3, v) for v in ws)
            lp += stats.norm.logpdf(XH, 2.0 * np.array(ws)[list(p)] - 1.0, 0.7).sum()
            out.append(({"a": a, "data.z": np.array(p),
                         **{f"w.{k}": v for k, v in enumerate(ws)}}, lp))
    return tables(py), out


def _table_state(t):  # labels in order of first use: a partition and its tables' weights
    z = t.values()["data.z"].tolist()
    labels = list(dict.fromkeys(z))
    return (int(t["a"]), tuple(labels.index(k) for k in z),
            tuple(int(t[("w", k)]) for k in labels))


def _state(t):  # (a site absent from some steps: NaN there, read as None)
    return tuple((k, tuple(None if x != x else x for x in np.ravel(v).tolist()))
                 for k, v in sorted(t.values().items()))


MODELS = {
    "plate": _plate, "chain": lambda: _chain(False), "dict_chain": lambda: _chain(True),
    "mem": _mem, "resize": _resize, "support": _support, "branch_chain": _branch_chain,
    "length_chain": _length_chain, "plate_chain": _plate_chain,
    "plate_chain_length": _plate_chain_length,
    "crp": lambda: _tables(False), "pitman_yor": lambda: _tables(True),
}


def _frozen_adaptive(program, inits):
    """Adaptive LMH adapted for 300 steps, then frozen, its arms made for every state's
    choices (a fixed kernel: weights from the adaptation, 001 Eq. 5–6)."""
    k = th.adaptive_lmh(freeze_after=300)
    t, rng = th.initialize(program, 1, init=inits[0]), np.random.default_rng(3)
    for _ in range(300):
        t = k.step(t, rng)
    for init in inits:
        k._align(th.initialize(program, 0, init=init))
    return k


P_ = th.prior
GRID = [  # (model, kernel label, kernel from (program, inits), connects every state)
    ("plate", "lmh()", lambda p, i: th.lmh(), True),
    ("plate", "mh('k') identity move", lambda p, i: th.mh("k", P_()), False),
    ("plate", "mh(one element)", lambda p, i: th.mh(("data", 0, "z"), P_()), False),
    ("plate", "mh(['k', 'data.z']) block", lambda p, i: th.mh(["k", "data.z"], P_()), True),
    ("plate", "cycle([gibbs('k'), lmh('data.z')])",
     lambda p, i: th.cycle([th.gibbs("k"), th.lmh("data.z")]), True),
    ("plate", "mixture", lambda p, i: th.mixture([(0.3, th.gibbs("k")),
                                                  (0.7, th.mh(th.one("data.z"), P_()))]), True),
    ("plate", "adaptive_lmh frozen", _frozen_adaptive, True),
    ("chain", "cycle([mh('a'), mh(each step's x)])",
     lambda p, i: th.cycle([th.mh("a", P_())] + [th.mh(("s", t, "x"), P_()) for t in (1, 0, 2)]),
     True),
    ("chain", "mh(ordered_range('s', 1, 2))",
     lambda p, i: th.mh(th.ordered_range("s", 1, 2), P_()), False),
    ("chain", "gibbs('s')", lambda p, i: th.gibbs("s"), False),
    ("dict_chain", "lmh()", lambda p, i: th.lmh(), True),
    ("dict_chain", "mh(each(['a', 's']))", lambda p, i: th.mh(th.each(["a", "s"]), P_()), True),
    ("dict_chain", "cycle([gibbs('s'), mh(('s', 1, 'x'))])",
     lambda p, i: th.cycle([th.gibbs("s"), th.mh(("s", 1, "x"), P_())]), False),
    ("mem", "lmh()", lambda p, i: th.lmh(), True),
    ("mem", "mh(one(['data.z', 'w']))", lambda p, i: th.mh(th.one(["data.z", "w"]), P_()), True),
    ("mem", "cycle([lmh('data.z'), gibbs('w')])",
     lambda p, i: th.cycle([th.lmh("data.z"), th.gibbs("w")]), True),
    ("mem", "mh(('w', 1)) identity move", lambda p, i: th.mh(("w", 1), P_()), False),
    ("resize", "mh(['n', 'p.z'])", lambda p, i: th.mh(["n", "p.z"], P_()), True),
    ("resize", "default", lambda p, i: default_kernel(p)[0], True),
    ("support", "mh(each(['b', 'x', 'd']))",
     lambda p, i: th.mh(th.each(["b", "x", "d"]), P_()), True),
    ("support", "default", lambda p, i: default_kernel(p)[0], True),
    ("branch_chain", "mh(one('s'))", lambda p, i: th.mh(th.one("s"), P_()), True),
    ("branch_chain", "cycle([gibbs('s.c'), lmh('s.g')])",
     lambda p, i: th.cycle([th.gibbs("s.c"), th.lmh("s.g")]), True),
    ("length_chain", "mh(one(['L', 's']))", lambda p, i: th.mh(th.one(["L", "s"]), P_()), True),
    ("length_chain", "cycle([lmh('L'), mh(('s', 2, 'x'))])",
     lambda p, i: th.cycle([th.lmh("L"), th.mh(("s", 2, "x"), P_())]), False),
    ("plate_chain", "cycle([gibbs('a'), lmh('data')])",
     lambda p, i: th.cycle([th.gibbs("a"), th.lmh("data")]), True),
    ("plate_chain", "mh(('data', 0))", lambda p, i: th.mh(("data", 0), P_()), False),
    ("plate_chain_length", "lmh()", lambda p, i: th.lmh(), True),
    ("plate_chain_length", "mh(one(['L', 'data']))",
     lambda p, i: th.mh(th.one(["L", "data"]), P_()), True),
    ("crp", "cycle([gibbs('a'), lmh()])", lambda p, i: th.cycle([th.gibbs("a"), th.lmh()]),
     True),
    ("crp", "mh(('data', 1, 'z'))", lambda p, i: th.mh(("data", 1, "z"), P_()), False),
    ("pitman_yor", "lmh()", lambda p, i: th.lmh(), True),
    ("pitman_yor", "mixture([lmh('data.z'), gibbs('w')])",
     lambda p, i: th.mixture([(0.4, th.lmh("data.z")), (0.6, th.gibbs("w"))]), False),
]


@pytest.mark.parametrize("model, label, make, connects", GRID,
                         ids=[f"{m}: {lab}" for m, lab, _, _ in GRID])
def test_kernels_on_small_models_leave_the_posterior_invariant(model, label, make, connects):
    program, states = MODELS[model]()
    inits = [i for i, _ in states]
    lw = np.array([lp for _, lp in states])
    pi = np.exp(lw - np.logaddexp.reduce(lw))
    assert max(abs(th.initialize(program, 0, init=i).log_joint() - lp)
               for i, lp in states) < 1e-12  # (the engine's density: the hand-written one)
    state_of = _table_state if model in ("crp", "pitman_yor") else _state
    keys = [state_of(th.initialize(program, 0, init=i)) for i in inits]
    P = transition_matrix(program, make(program, inits), keys,
                          lambda s: inits[keys.index(s)], state_of, draws=all_draws, check=True)
    assert_stationary(pi, P, connected=connects)


def test_a_step_depends_on_the_state_not_on_the_history_that_led_there():
    """Each state's row of th.lmh('b') and th.mh('b') (b moves the supports of plate elements
    apart, so its proposals redraw them) from traces that random sequences of Gibbs, MH and LMH
    steps left there equals its row from a trace made afresh: a kernel's step is a function
    of the state, whatever the trace keeps of the steps before (which elements the last run
    wrote, forks, copy-on-write columns).  Before a6a6f8f they differed: from (b, x) = (0, (0, 0))
    left by Gibbs on one element, b = 1 had probability 0 against 0.087 from a fresh trace."""
    from exact_kernel import transition_row
    from test_exact_kernels import _apart_state, _apart_states, apart

    program = apart(False)
    inits, _ = _apart_states(chain=False)
    fresh = {_apart_state(t): t for t in (th.initialize(program, 0, init=i) for i in inits)}
    movers = [th.gibbs("data.x"), th.mh("data.x", P_()), th.lmh(), th.gibbs("b"),
              th.mh(th.one("data.x"), P_())]
    rng, seen = np.random.default_rng(0), {}
    t = th.initialize(program, 0, init=inits[0])
    for _ in range(150):
        t = movers[rng.integers(len(movers))].step(t, rng)
        seen.setdefault(_apart_state(t), []).append(t.fork())
    assert len(seen) >= 4  # (every state with b = 0)
    for kernel in (th.lmh("b"), th.mh("b", P_())):
        for s, traces in seen.items():
            row = transition_row(fresh[s], kernel, _apart_state, all_draws)
            for h in traces[:3]:
                other = transition_row(h, kernel, _apart_state, all_draws, check=True)
                assert max(abs(row.get(k, 0.0) - other.get(k, 0.0))
                           for k in set(row) | set(other)) < 1e-12, (s, row, other)
