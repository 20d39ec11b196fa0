"""Exact transition matrices of Gibbs kernels on small finite models, built from the engine's
own runs.

An enumerative Gibbs step (:mod:`thrifty.inference.mcmc.gibbs`) draws each new value from the
weights its scoring runs computed, with a Gumbel-max draw (``_gumbel_pick`` for one set of
weights, ``_gumbel_choice`` for a plate's elements at once).  Replacing those two draws by a
script turns one step into a tree: at each draw the script takes one of the values of positive
weight and multiplies the path's probability by that value's normalised weight.  Walking every
path from a state (each path re-runs the step on a fork of the state's trace: the scoring runs
and the commits are the kernel's own) gives that state's row of the step's transition matrix
P, exactly up to rounding.  A stationary π then satisfies πP = π to ~1e-15 — a check with no
Monte Carlo error, of the weights *and* of what the commits leave in the trace, which a
chain's χ² can only see through its sampling noise.  What the script replaces — the
Gumbel-max draw itself — is checked against its probabilities in
``test_exact_kernels.py``.

An LMH step (paper 001) is scripted the same way at its three draws (:func:`lmh_draws`): the
site pick, each scalar Bernoulli or Categorical draw from the prior, and the accept test, whose
outcomes have probabilities α and 1 − α for the α the kernel computed.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import thrifty as th
from thrifty.inference.mcmc import gibbs as gibbs_module


def _normalised(logw) -> np.ndarray:
    w = np.asarray(logw, dtype=float)
    m = np.max(w)
    p = np.exp(w - m)
    p[np.isneginf(w)] = 0.0
    return p / p.sum()


class _Script:
    """Stands in for the kernel's Gumbel-max draws along one path: the ``prefix`` of choices
    first, then the first value of positive weight at every later draw, recording each
    draw's options and probabilities."""

    def __init__(self, prefix: tuple):
        self.prefix = prefix
        self.draws: list[tuple[list, list]] = []  # (options, their probabilities)

    def _take(self, options: list, probs: list):
        d = len(self.draws)
        self.draws.append((options, probs))
        return options[self.prefix[d] if d < len(self.prefix) else 0]

    def pick(self, logw, rng) -> int:
        p = _normalised(logw)
        options = [j for j in range(len(p)) if p[j] > 0]
        return self._take(options, [p[j] for j in options])

    def choice(self, logw, rng) -> np.ndarray:
        logw = np.asarray(logw, dtype=float)
        cols = logw.reshape(len(logw), -1)
        per = [_normalised(cols[:, c]) for c in range(cols.shape[1])]
        options = list(itertools.product(*[np.flatnonzero(p > 0).tolist() for p in per]))
        probs = [math.prod(per[c][k] for c, k in enumerate(o)) for o in options]
        return np.array(self._take(options, probs)).reshape(logw.shape[1:])

    def probability(self, chosen: tuple) -> float:
        return math.prod(probs[k] for (_, probs), k in zip(self.draws, chosen))


def gibbs_draws(mp, script):
    """A Gibbs step's draws, scripted: its Gumbel-max draws (the generator is not used)."""
    mp.setattr(gibbs_module, "_gumbel_pick", script.pick)
    mp.setattr(gibbs_module, "_gumbel_choice", script.choice)
    return np.random.default_rng(0)


class _AcceptDraw:
    """The generator an LMH step is given, once the site pick and the prior draws are
    scripted: its uses left are the pick's uniform (ignored by the scripted pick) and the
    accept test ``log u < log α`` (α < 1), whose two outcomes the script takes with
    probabilities α and 1 − α (``script.alpha``, set by a spy on the kernel's accept as it is
    called).  Any other use fails (no ``alpha`` yet, or a method it does not have)."""

    def __init__(self, script):
        self.script = script

    def random(self) -> float:
        if self.script.pick_pending:  # the site pick's uniform (unused: the pick is scripted)
            self.script.pick_pending = False
            return 0.0
        a = self.script.alpha
        p = math.exp(a)  # (only called for a < 0)
        options = [(math.exp(a) / 2, p), (1.0, 1.0 - p)]  # log u < a: accept; log 1 = 0: not
        options = [(u, q) for u, q in options if q > 0]
        return self.script._take([u for u, _ in options], [q for _, q in options])


def _uniform_pick(script, n: int) -> float:
    """A uniform whose ``int(u * n)`` is each of ``0..n-1`` with probability 1/n (scripted)."""
    return (script._take(list(range(n)), [1.0 / n] * n) + 0.5) / n


class _Given:
    def __init__(self, u: float):
        self.u = u

    def random(self) -> float:
        return self.u


def selected_lmh_draws(mp, script):
    """The draws of ``th.lmh(selection)`` (or ``exclude=``): :func:`lmh_draws`'s, with the
    pick among the n selected choices (each with probability 1/n) in place of the pick among
    all of them."""
    from thrifty.inference.selection import ChoiceSet

    rng = lmh_draws(mp, script)
    real = ChoiceSet.address

    def address(cs, r):  # (the pick's uniform, already drawn, was 0)
        return real(cs, int(_uniform_pick(script, cs.count) * cs.count))

    mp.setattr(ChoiceSet, "address", address)
    return rng


def one_draws(mp, script):
    """The draws of ``th.mh(th.one(sel), th.prior())``: :func:`mh_draws`'s and the block pick
    (each of the n blocks with probability 1/n)."""
    from thrifty.inference.selection import ChoiceSet

    rng = mh_draws(mp, script)
    real = ChoiceSet.pick_block
    mp.setattr(ChoiceSet, "pick_block",
               lambda cs, _rng: real(cs, _Given(_uniform_pick(script, cs.n_blocks()))))
    return rng


def mh_draws(mp, script):
    """The draws of a ``th.mh(sel, th.prior())`` step on top-level finite choices: as
    :func:`lmh_draws`, with no site pick (the selection is the block)."""
    rng = lmh_draws(mp, script)
    script.pick_pending = False
    return rng


def lmh_draws(mp, script):
    """The draws of a ``th.lmh()`` step (paper 001 §2; every latent choice: top-level sites and
    plate elements), scripted: the site pick (each of the trace's n latent choices with
    probability 1/n), each Bernoulli or Categorical prior draw of one value (each value of
    its support with its probability), each draw of a process (each table of its
    predictive) and the accept test."""
    from thrifty.distributions import discrete
    from thrifty.inference import kernel as kernel_module
    from thrifty.inference.mcmc import mh as mh_module
    from thrifty.processes.base import Tables

    locate = mh_module.locate_choice
    script.pick_pending = True

    def pick(trace, _i):
        assert not script.pick_pending, "the pick's uniform was drawn"
        n = trace.n_latent
        return locate(trace, script._take(list(range(n)), [1.0 / n] * n))

    def prior_draw(d, rng, shape=()):
        # one value: a top-level site's (shape ()), or one plate element's (shape (1,))
        assert tuple(shape) in ((), (1,)) and tuple(d.batch_shape) in ((), (1,)), \
            "scripted prior draws are of one value"
        one = tuple(shape) + tuple(d.batch_shape)[len(shape):]
        values = list(range(2 if isinstance(d, discrete.Bernoulli) else d.num_categories))
        p = [math.exp(float(np.sum(d.log_prob(np.full(one, v))))) for v in values]
        keep = [j for j in range(len(values)) if p[j] > 0]
        v = script._take([values[j] for j in keep], [p[j] for j in keep])
        return np.full(one, v) if one else v

    def table_draw(state, rng):  # a process's draw: each table of its predictive
        tables = state.predictive()
        return script._take([k for k, _ in tables], [p for _, p in tables])

    mp.setattr(mh_module, "locate_choice", pick)
    for family in (discrete.Bernoulli, discrete.Categorical):
        mp.setattr(family, "sample", prior_draw)
    mp.setattr(Tables, "sample", table_draw)
    for name in ("accept", "accept_fork"):
        real = getattr(kernel_module.Kernel, name)

        def spy(self, *args, _real=real):
            script.alpha = args[-2]  # (…, log_alpha, rng)
            return _real(self, *args)

        mp.setattr(kernel_module.Kernel, name, spy)
    return _AcceptDraw(script)


def transition_row(trace, kernel, state_of, draws=gibbs_draws, check=False) -> dict:
    """{state: probability} of one ``kernel`` step from ``trace`` (left unchanged): every path
    of the step's draws (scripted by ``draws``), each run on a fork of ``trace`` — and with
    ``check``, the trace each path leaves compared with a full execution of the program
    (:func:`thrifty.core.check.check_trace`: every stored value and log-density)."""
    from thrifty.core.check import check_trace

    row: dict = {}
    stack = [()]
    while stack:
        prefix = stack.pop()
        script = _Script(prefix)
        fork = trace.fork()
        with pytest.MonkeyPatch.context() as mp:
            kernel.step(fork, draws(mp, script))
        chosen = prefix + (0,) * (len(script.draws) - len(prefix))
        assert not (check and check_trace(fork)), (chosen, check_trace(fork)[:3])
        s = state_of(fork)
        row[s] = row.get(s, 0.0) + script.probability(chosen)
        for d in range(len(prefix), len(script.draws)):
            for k in range(1, len(script.draws[d][0])):
                stack.append(chosen[:d] + (k,))
    return row


def transition_matrix(program, kernel, states: list, init_of, state_of,
                      draws=gibbs_draws, check=False) -> np.ndarray:
    """P[a, b]: probability that one ``kernel`` step takes ``states[a]`` to ``states[b]``;
    ``init_of(state)`` is the ``init=`` of :func:`thrifty.initialize` giving that state,
    ``state_of(trace)`` reads a trace's state (an element of ``states``); the kernel is
    prepared on the first state's trace, as a chain's is."""
    index = {s: a for a, s in enumerate(states)}
    P = np.zeros((len(states), len(states)))
    for a, s in enumerate(states):
        trace = th.initialize(program, 0, init=init_of(s))
        assert state_of(trace) == s, (state_of(trace), s)
        if a == 0:
            kernel.prepare_all(trace)
        for t, p in transition_row(trace, kernel, state_of, draws, check).items():
            P[a, index[t]] += p
        assert state_of(trace) == s, "a step changed the trace it forked"
    return P


def assert_stationary(pi: np.ndarray, P: np.ndarray, tol: float = 1e-10,
                      connected: bool = True) -> None:
    """Rows of P sum to one, πP = π to ``tol``, and (``connected``) P is irreducible on π's
    support: its powers reach every state of positive probability from every other."""
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    err = np.max(np.abs(pi @ P - pi))
    assert err < tol, f"max |πP − π| = {err:.3g} (tolerance {tol:g})"
    if not connected:
        return
    on = pi > 0
    closure = np.minimum(np.eye(on.sum()) + (P[np.ix_(on, on)] > 0), 1.0)
    for _ in range(int(np.ceil(np.log2(max(on.sum(), 2))))):  # paths of length 2, 4, 8, ...
        closure = np.minimum(closure @ closure, 1.0)
    assert closure.min() > 0, "the kernel does not connect every state of positive probability"


# -- every draw of any composed kernel, scripted -------------------------------------------------
# The kernels draw with a handful of idioms, each scripted here without touching their code:
# a uniform pick ``int(rng.random() * n)`` (LMH's site, a selection's choice, th.one's block), an
# accept test ``math.log(rng.random()) < log_alpha`` (one decision) or ``np.log(rng.random(n)) <
# log_alpha`` (element-wise MH), Bernoulli and Categorical prior draws of any shape, a process's
# table draw, Gibbs's Gumbel-max draws; th.mixture's kernel pick and adaptive LMH's arm draw are
# replaced by their probabilities.  Any other use of the generator fails.
class _Uniform:
    def __init__(self, script):
        self.script = script

    def __mul__(self, n):  # int(u * n): each of 0..n-1 with probability 1/n
        return _UniformPick(self.script, n)


class _UniformPick:
    def __init__(self, script, n):
        self.script, self.n = script, n

    def __int__(self):
        return self.script._take(list(range(self.n)), [1.0 / self.n] * self.n)


def _accept_probability(a: float) -> float:
    return 1.0 if a >= 0 else (math.exp(a) if a > -math.inf else 0.0)


class _LogUniform:
    """log u: ``log u < a`` is True with probability min(1, e^a) (for each entry of ``a``)."""

    def __init__(self, script):
        self.script = script

    def __lt__(self, a):
        per = [_accept_probability(float(x)) for x in np.ravel(a)]
        options = list(itertools.product((True, False), repeat=len(per)))
        probs = [math.prod(p if o else 1.0 - p for p, o in zip(per, opt)) for opt in options]
        keep = [k for k, q in enumerate(probs) if q > 0]
        got = self.script._take([options[k] for k in keep], [probs[k] for k in keep])
        return got[0] if np.ndim(a) == 0 else np.array(got)


class _Uniforms:
    def __init__(self, script):
        self.script = script

    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        assert ufunc is np.log and method == "__call__", "an unscripted use of uniforms"
        return _LogUniform(self.script)


class _ScriptedGenerator:
    def __init__(self, script):
        self.script = script

    def random(self, size=None):
        return _Uniform(self.script) if size is None else _Uniforms(self.script)


class _ScriptedMath:
    """``math`` as the kernels' modules see it: the log of a scripted uniform is scripted."""

    def __getattr__(self, name):
        return getattr(math, name)

    @staticmethod
    def log(x, *base):
        return _LogUniform(x.script) if isinstance(x, _Uniform) else math.log(x, *base)


def all_draws(mp, script):
    """The draws of any kernel a user composes of th.lmh, th.mh(..., th.prior()), th.gibbs,
    th.adaptive_lmh, th.cycle and th.mixture, on Bernoulli, Categorical and process choices
    (see above)."""
    from thrifty.distributions import discrete
    from thrifty.inference import compose
    from thrifty.inference import kernel as kernel_module
    from thrifty.inference.mcmc import adaptive
    from thrifty.inference.mcmc.arms import Arms
    from thrifty.processes.base import Tables

    gibbs_draws(mp, script)

    def prior_draw(d, rng, shape=()):  # each entry independently, each value with its probability
        full = tuple(shape) + tuple(d.batch_shape)
        K = 2 if isinstance(d, discrete.Bernoulli) else d.num_categories
        p = [np.exp(np.broadcast_to(np.asarray(d.log_prob(np.full(full, v)), float), full)).ravel()
             for v in range(K)]
        options = list(itertools.product(range(K), repeat=int(np.prod(full))))
        probs = [math.prod(p[v][c] for c, v in enumerate(o)) for o in options]
        keep = [k for k, q in enumerate(probs) if q > 0]
        o = script._take([options[k] for k in keep], [probs[k] for k in keep])
        return np.array(o, dtype=np.int64).reshape(full) if full else o[0]

    for family in (discrete.Bernoulli, discrete.Categorical):
        mp.setattr(family, "sample", prior_draw)
    mp.setattr(Tables, "sample", lambda state, rng: script._take(
        [k for k, _ in state.predictive()], [p for _, p in state.predictive()]))
    mp.setattr(kernel_module, "math", _ScriptedMath())
    mp.setattr(adaptive, "math", _ScriptedMath())

    def mixture_step(self, trace, rng):
        i = script._take(list(range(len(self.children))), list(self.probs))
        return self._part(self.children[i], trace, rng)

    def arm_draw(self, rng):  # (arms in the order of their addresses: the same on every path)
        order = sorted(range(len(self.addrs)), key=lambda i: repr(self.addrs[i]))
        w = [self.weight(self.addrs[i]) for i in order]
        return script._take(order, [x / sum(w) for x in w])

    mp.setattr(compose.Mixture, "_step", mixture_step)
    mp.setattr(Arms, "draw", arm_draw)
    return _ScriptedGenerator(script)
