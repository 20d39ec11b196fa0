"""A model that reuses a NumPy buffer in place — for a distribution's parameters or an observed
value, refilled at every step of a chain or shared by two sites — has the posterior of the model
that passes fresh arrays: with the same seed, every kernel gives identical draws.  The engine
reads a site's distribution after the site executed (a gradient kernel's bijection from its
support; a gradient run's compiled density, into which JAX takes NumPy constants by reference
until it lowers the whole trace), so it must hold what the site was given.  A buffer the model's
own code computes with before a site sees it (``w * buf``) the engine cannot copy: a gradient
kernel whose compiled density then reads it with its last contents refuses the model."""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.errors import ModelError
from thrifty.models.hmm import INITIAL, MEANS, OBSERVATIONS, TRANSITIONS

_BUFFERS: dict = {}


def fresh(key, a):
    return np.array(a, dtype=float)


def buffered(key, a):
    """``a`` written into one buffer per key and shape, reused by every execution."""
    a = np.asarray(a, dtype=float)
    b = _BUFFERS.get((key, a.shape))
    if b is None:
        b = _BUFFERS[(key, a.shape)] = np.empty(a.shape)
    b[...] = a
    return b


def hmm(P, tr=TRANSITIONS, init=INITIAL, means=MEANS, ys=OBSERVATIONS):
    @th.model
    def m():
        def step(t, prev):
            z = th.sample("z", dist.Categorical(P("p", init if t == 0 else tr[prev])))
            if t >= 1:
                th.observe("y", dist.Normal(P("m", means[z]), P("s", 1.0)), P("y", ys[t - 1]))
            return z

        return th.markov("s", step, len(ys) + 1)

    return m()


_R = np.random.default_rng(5)
K = 20  # above the small-K path of Categorical
TR20, IN20 = _R.dirichlet(np.full(K, 0.5), size=K), _R.dirichlet(np.ones(K))
M20, Y20 = np.linspace(-3, 3, K), _R.normal(size=10)
YS = np.cumsum(_R.normal(size=10))


def _observed_chain(P, state, sd):
    """States ``state(t, prev)`` observed through a buffer with noise ``sd``."""
    @th.model
    def m():
        def step(t, prev):
            x = th.sample("x", state(t, prev))
            th.observe("y", dist.Normal(x, sd), P("y", YS[t]))
            return x

        return th.markov("s", step, len(YS))

    return m()


def walk(P):
    return _observed_chain(P, lambda t, prev: dist.Normal(P("l", 0.0 if t == 0 else prev),
                                                          P("sc", 1 + 0.1 * t)), 0.5)


def bounded_walk(P):
    """Uniform states whose bounds move with t."""
    return _observed_chain(P, lambda t, prev: dist.Uniform(P("lo", -1.0 - t), P("hi", 1.0 + t)),
                           1.0)


def nested_bound(P):
    """A child whose upper bound is its parent (built by a helper, through buffers): LMH's
    proposals that leave it outside its support are rejected (no reverse move)."""
    def child(n):
        return dist.DiscreteUniform(P("lo", np.zeros(1)), P("hi", np.array([float(n)])))

    @th.model
    def m():
        n = th.sample("n", dist.DiscreteUniform(1, 3))
        z = th.sample("z", child(n))
        th.observe("y", dist.Normal(z, 1.0), P("y", np.array([2.5])))

    return m()


def two_sites(P):
    """Two top-level sites whose bounds are one pair of buffers."""
    @th.model
    def m():
        a = th.sample("a", dist.Uniform(P("lo", np.array([0.0])), P("hi", np.array([1.0]))))
        b = th.sample("b", dist.Uniform(P("lo", np.array([2.0])), P("hi", np.array([3.0]))))
        th.observe("y", dist.Normal(a + b, 1.0), P("y", np.array([2.8])))

    return m()


N = 12
X = _R.normal(size=N)
Y = 1.0 + 2.0 * X + _R.normal(size=N)
PB = _R.uniform(0.2, 0.8, size=N)
YM = np.concatenate([_R.normal(-2, 1, N // 2), _R.normal(2, 1, N // 2)])
PK = _R.dirichlet(np.ones(K), size=N)


def regression(P):
    @th.model
    def m():
        mu = th.sample("mu", dist.Normal(0.0, 5.0))
        w = th.sample("w", dist.Normal(0.0, 5.0))
        with th.plate("data", N) as i:
            n = len(X[i])
            e = th.sample("e", dist.Normal(P("z", np.zeros(n)), P("one", np.ones(n))))
            th.observe("y", dist.Normal(mu + P("x", X[i]) * w + 0.1 * e, P("sd", np.ones(n))),
                       P("y", Y[i]))

    return m()


def regression_loc(P):
    """The observation's loc computed into a module-level buffer (not traceable: no NUTS)."""
    @th.model
    def m():
        mu = th.sample("mu", dist.Normal(0.0, 5.0))
        w = th.sample("w", dist.Normal(0.0, 5.0))
        with th.plate("data", N) as i:
            e = th.sample("e", dist.Normal(P("z", np.zeros(len(X[i]))), 1.0))
            th.observe("y", dist.Normal(P("loc", mu + X[i] * w + 0.1 * e), 1.0), P("y", Y[i]))

    return m()


def mixture(P):
    @th.model
    def m():
        mm = th.sample("m", dist.Normal(np.array([-1.0, 1.0]), 3.0))
        with th.plate("data", N) as i:
            z = th.sample("z", dist.Bernoulli(P("p", PB[i])))
            th.observe("y", dist.Normal(P("m", mm[z]), 1.0), P("y", YM[i]))

    return m()


def categories(P):
    @th.model
    def m():
        s = th.sample("s", dist.HalfNormal(2.0))
        with th.plate("data", N) as i:
            z = th.sample("z", dist.Categorical(P("p", PK[i])))
            th.observe("y", dist.Normal(P("m", M20[z]), s), P("y", YM[i]))

    return m()


COV = np.array([[1.0, 0.3], [0.3, 0.5]])
YW = np.cumsum(_R.normal(size=(6, 2)), axis=0)


def mv_walk(P):
    cov, ys = COV, YW

    @th.model
    def m():
        def step(t, prev):
            x = th.sample("x", dist.MvNormal(P("m", np.zeros(2) if t == 0 else prev),
                                             P("c", cov * (1 + 0.1 * t))))
            th.observe("y", dist.MvNormal(P("om", x), P("oc", 0.25 * np.eye(2))), P("oy", ys[t]))
            return x

        return th.markov("s", step, len(ys))

    return m()


def _same(model, kernel, num_samples=200, **kw):
    runs = [th.infer(model(P), kernel(), num_samples=num_samples, seed=3, progress=False, **kw)
            for P in (fresh, buffered)]
    keys = sorted(map(str, runs[0].keys()))
    assert keys == sorted(map(str, runs[1].keys()))
    for k in keys:
        assert np.array_equal(np.asarray(runs[0][k]), np.asarray(runs[1][k]), equal_nan=True), k


CASES = {
    "lmh, hmm": (hmm, th.lmh),
    "lmh, hmm K=20": (lambda P: hmm(P, TR20, IN20, M20, Y20), th.lmh),
    "gibbs, a chain step": (hmm, lambda: th.gibbs(th.one("s.z"))),
    "gibbs, a chain step K=20": (lambda P: hmm(P, TR20, IN20, M20, Y20),
                                 lambda: th.gibbs(th.one("s.z"))),
    "pgas, hmm": (hmm, lambda: th.pgibbs("s", 5)),
    "pgas, hmm K=20": (lambda P: hmm(P, TR20, IN20, M20, Y20), lambda: th.pgibbs("s", 5)),
    "pg, hmm": (hmm, lambda: th.pgibbs("s", 5, ancestor_sampling=False)),
    "mh drift, a chain": (walk, lambda: th.mh(th.one("s.x"), th.drift(0.5))),
    "pgas + mh, a chain": (walk, lambda: th.cycle([th.pgibbs("s", 5),
                                                   th.mh(th.one("s.x"), th.drift(0.5))])),
    "mh drift, a plate site": (regression_loc, lambda: th.mh(th.one("data.e"), th.drift(0.3))),
    "lmh, a plate": (regression_loc, th.lmh),
    "gibbs, a plate's Bernoulli": (mixture, lambda: th.cycle([th.gibbs(th.each("data.z")),
                                                             th.mh("m", th.drift(0.3))])),
    "gibbs, a plate's Categorical K=20": (categories, lambda: th.cycle([
        th.gibbs("data.z"), th.mh("s", th.drift(0.3))])),
    "mh, MvNormal chain": (mv_walk, lambda: th.mh(th.one("s.x"), th.drift(0.3))),
    "lmh, a bound that is a parent": (nested_bound, th.lmh),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_buffer_rewrite_gives_the_same_draws(name):
    model, kernel = CASES[name]
    _same(model, kernel)


def test_the_default_kernel_on_a_buffer_rewrite():
    _same(hmm, lambda: None, num_samples=100, burn_in=20)


GRADIENT = {
    "nuts, a plate": (regression, lambda: th.nuts(["mu", "w", "data.e"])),
    "nuts, a chain observed through a buffer": (bounded_walk, lambda: th.nuts("s.x")),
    "nuts, two sites sharing bound buffers": (two_sites, lambda: th.nuts(["a", "b"])),
    "the default kernel, a chain observed through a buffer": (bounded_walk, lambda: None),
}


@pytest.mark.parametrize("name", list(GRADIENT))
def test_a_gradient_kernel_on_a_buffer_rewrite(name):
    pytest.importorskip("jax")
    model, kernel = GRADIENT[name]
    _same(model, kernel, num_samples=30, burn_in=20)


XS = np.linspace(-1.0, 1.0, 8)
YS2 = 2.0 * XS + 0.1
T = 4
XT = _R.normal(size=(N, T))


def scaled_walk(P):
    """Each step's mean a state plus the slope times a buffer: a product the model makes
    before a site."""
    @th.model
    def m():
        w = th.sample("w", dist.Normal(0.0, 3.0))

        def step(t, prev):
            x = th.sample("x", dist.Normal(0.0 if t == 0 else prev, 0.1))
            th.observe("y", dist.Normal(x + w * P("wx", XS[t:t + 1]), 0.5), YS2[t:t + 1])
            return x

        th.markov("s", step, len(XS))

    return m()


def two_regressions(P):
    """Two sites of a plate whose means are slopes times one buffer, refilled between them."""
    @th.model
    def m():
        w = th.sample("w", dist.Normal(0.0, 3.0))
        v = th.sample("v", dist.Normal(0.0, 3.0))
        with th.plate("data", N) as i:
            th.observe("y", dist.Normal(w * P("wx", X[i]), 0.5), Y[i])
            th.observe("y2", dist.Normal(v * P("wx", PB[i]), 0.5), YM[i])

    return m()


def plate_of_walks(P):
    """A chain in a plate, each step's means the slope times a buffer."""
    @th.model
    def m():
        w = th.sample("w", dist.Normal(0.0, 3.0))
        with th.plate("data", N) as i:
            def step(t, prev):
                th.observe("y", dist.Normal(w * P("wx", XT[i, t]), 0.5), 1.5 * XT[i, t])
                return t

            th.markov("s", step, T)

    return m()


BY_REFERENCE = {
    "a chain's means": (scaled_walk, ["w"]),
    "a plate's two sites": (two_regressions, ["w", "v"]),
    "a plate's chains": (plate_of_walks, ["w"]),
}


@pytest.mark.parametrize("default", [False, True], ids=["nuts", "the default kernel"])
@pytest.mark.parametrize("name", list(BY_REFERENCE))
def test_a_gradient_kernel_refuses_a_buffer_its_compiled_density_reads_by_reference(name,
                                                                                    default):
    """A buffer refilled in place and multiplied by a choice's value before any site sees it:
    the compiled density would read its last contents at every use (JAX keeps it by
    reference), a posterior far from the model's — the kernel refuses, naming the fix, and
    runs the model that builds new arrays."""
    pytest.importorskip("jax")
    model, block = BY_REFERENCE[name]
    kernel = (lambda: None) if default else (lambda: th.nuts(block))
    th.infer(model(fresh), kernel(), num_samples=10, burn_in=10, seed=3, progress=False)
    said = "default kernel assigned NUTS" if default else r"nuts\("
    with pytest.raises(ModelError, match=f"{said}.*changes a NumPy array in place"):
        th.infer(model(buffered), kernel(), num_samples=10, burn_in=10, seed=3, progress=False)


def test_a_gradient_kernel_refuses_a_buffer_while_the_log_joint_is_unknown(monkeypatch):
    """Elements left stale by a subsampling kernel leave the trace's log-joint unknown: the
    transitions still use the compiled density, so its agreement with the eager run (which
    needs no log-joint) is checked before them."""
    pytest.importorskip("jax")
    from thrifty.core.trace import Trace

    monkeypatch.setattr(Trace, "known_log_joint", lambda self: float("nan"))
    with pytest.raises(ModelError, match=r"nuts\(.*changes a NumPy array in place"):
        th.infer(scaled_walk(buffered), th.nuts(["w"]), num_samples=10, burn_in=10, seed=3,
                 progress=False)


@pytest.mark.parametrize("model", [hmm, lambda P: hmm(P, TR20, IN20, M20, Y20), walk, mv_walk])
def test_smc_evidence_of_a_buffer_rewrite(model):
    a, b = (th.smc(model(P), 20, seed=1).log_evidence for P in (fresh, buffered))
    assert a == b


def test_a_value_from_sample_is_read_only():
    @th.model
    def m():
        x = th.sample("x", dist.Normal(np.zeros(2), 1.0))
        with pytest.raises(ValueError):
            x[0] = 5.0
        return x

    tr = th.simulate(m(), seed=0)
    assert np.all(tr.output != 5.0)


def test_an_empty_array_in_a_models_globals_is_fingerprinted():
    from thrifty.fingerprint import value_digest

    a, b = value_digest(np.empty((0, 3)), "x")[0], value_digest(np.empty((0, 4)), "x")[0]
    assert a != b
