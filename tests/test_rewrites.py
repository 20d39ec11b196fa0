"""Any rewrite of a model gives the posterior of the inline model.

The model: μ ~ N(0, 10²), y_i ~ N(μ, 1) for 20 points (exact posterior normal).  Each rewrite
moves how μ reaches the plate's (or chain's) body: a context-manager helper, a module-level
function reading a dict, an argument buffer written in place, a closure over a buffer, a method
reading ``self``, ``functools.partial``, a ``global``, a default argument, a sub-model, a
class-based context manager, a list the model appends to, a property, a markov step reading a
buffer.  Whatever the body reads, the engine re-runs what follows a changed choice in program
order, so each gives the exact posterior through ``th.infer``.  A DP mixture whose body reads
``crp.alpha`` is checked against the α posterior by quadrature.  Labels kept on ``self`` by
element (``self.z[i] = z``, read back) under a Gibbs update that scores one element's candidate
values in lanes of one execution give the inline model's draws, to the bit.

Checks (tests/stat_helpers.py): z on the mean with an ESS-based standard error (|z| < 4.5) and
a KS test on the ESS-thinned draws (p > 1e-4); seeds fixed.  The negative control shows the
check rejects the prior (what these rewrites gave when the engine skipped plates by reading the
body's source).
"""

from __future__ import annotations

import contextlib
import functools
import math

import numpy as np
import pytest
from scipy import integrate, stats

import thrifty as th
from stat_helpers import check_continuous, ks_p, mean_z
from thrifty import dist

Y = np.random.default_rng(1).normal(3.0, 1.0, 20)
PREC = 1 / 100 + len(Y)
MEAN, SD = Y.sum() / PREC, PREC**-0.5
KERNEL = "mh('mu', drift(0.5))"


def prior_mu():
    return th.sample("mu", dist.Normal(0.0, 10.0))


@th.model
def inline(y):
    mu = prior_mu()
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


@contextlib.contextmanager
def data_plate(n):
    with th.plate("data", n) as i:
        yield i


@th.model
def contextmanager_helper(y):
    mu = prior_mu()
    with data_plate(len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


STATE: dict = {}


def likelihood(i, y):
    th.observe("y", dist.Normal(STATE["mu"], 1.0), y[i])


@th.model
def module_function_reading_a_dict(y):
    STATE["mu"] = prior_mu()
    with th.plate("data", len(y)) as i:
        likelihood(i, y)


@th.model
def argument_buffer(y, buf):
    buf[0] = prior_mu()
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(buf[0], 1.0), y[i])


BUF = np.zeros(1)


def _make_lik():
    def lik(i, y):
        th.observe("y", dist.Normal(BUF[0], 1.0), y[i])
    return lik


LIK = _make_lik()


@th.model
def closure_over_a_buffer(y):
    BUF[0] = prior_mu()
    with th.plate("data", len(y)) as i:
        LIK(i, y)


class Regression:
    """Pyro-style: the model is a method, the choice kept on ``self``."""

    def __call__(self, y):
        self.mu = prior_mu()
        with th.plate("data", len(y)) as i:
            self.lik(i, y)

    def lik(self, i, y):
        th.observe("y", dist.Normal(self.mu, 1.0), y[i])


method_on_self = th.model(Regression().__call__)


def _lik_from(buf, i, y):
    th.observe("y", dist.Normal(buf[0], 1.0), y[i])


PARTIAL_BUF = np.zeros(1)
LIK_PARTIAL = functools.partial(_lik_from, PARTIAL_BUF)


@th.model
def partial_over_a_buffer(y):
    PARTIAL_BUF[0] = prior_mu()
    with th.plate("data", len(y)) as i:
        LIK_PARTIAL(i, y)


MU = 0.0


def _lik_global(i, y):
    th.observe("y", dist.Normal(MU, 1.0), y[i])


@th.model
def module_global(y):
    global MU
    MU = prior_mu()
    with th.plate("data", len(y)) as i:
        _lik_global(i, y)


@th.model
def default_argument(y):
    mu = prior_mu()
    lik = lambda i, m=mu: th.observe("y", dist.Normal(m, 1.0), y[i])  # noqa: E731
    with th.plate("data", len(y)) as i:
        lik(i)


class Holder:
    loc = np.zeros(1)


def _sub(y, h):
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(h.loc[0], 1.0), y[i])


@th.model
def submodel_reading_an_object(y):
    h = Holder()
    h.loc[0] = prior_mu()
    th.call("sub", _sub, y, h)


class PlateOf:
    """A context manager class (not contextlib) that opens the plate."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.cm = th.plate("data", self.n)
        return self.cm.__enter__()

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


@th.model
def class_context_manager(y):
    mu = prior_mu()
    with PlateOf(len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


HISTORY: list = []


@th.model
def list_appended(y):
    HISTORY.append(prior_mu())
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(HISTORY[-1], 1.0), y[i])


class Params:
    def __init__(self):
        self._raw = np.zeros(1)

    @property
    def loc(self):
        return float(self._raw[0])


PARAMS = Params()


@th.model
def property_of_an_object(y):
    PARAMS._raw[0] = prior_mu()
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(PARAMS.loc, 1.0), y[i])


CHAIN_BUF = np.zeros(1)


def _step(t, prev, y):
    th.observe("y", dist.Normal(CHAIN_BUF[0], 1.0), y[t])
    return prev


@th.model
def markov_step_reading_a_buffer(y):
    CHAIN_BUF[0] = prior_mu()
    th.markov("s", _step, len(y), 0.0, y)


MODELS = {
    "inline": lambda: inline(Y),
    "contextmanager helper": lambda: contextmanager_helper(Y),
    "module function reading a dict": lambda: module_function_reading_a_dict(Y),
    "argument buffer": lambda: argument_buffer(Y, np.zeros(1)),
    "closure over a buffer": lambda: closure_over_a_buffer(Y),
    "method on self": lambda: method_on_self(Y),
    "partial over a buffer": lambda: partial_over_a_buffer(Y),
    "module global": lambda: module_global(Y),
    "default argument": lambda: default_argument(Y),
    "sub-model reading an object": lambda: submodel_reading_an_object(Y),
    "class context manager": lambda: class_context_manager(Y),
    "list appended": lambda: list_appended(Y),
    "property of an object": lambda: property_of_an_object(Y),
    "markov step reading a buffer": lambda: markov_step_reading_a_buffer(Y),
}


def posterior_draws(prog, kernel=None, seed=0):
    kernel = kernel or th.mh("mu", th.drift(0.5))
    r = th.infer(prog, kernel, num_samples=3000, burn_in=500, seed=seed, progress=False)
    return r["mu"]


@pytest.mark.parametrize("name", list(MODELS))
def test_each_rewrite_gives_the_exact_posterior(name):
    check_continuous(posterior_draws(MODELS[name]()), MEAN, SD, stats.norm(MEAN, SD).cdf, name)


@pytest.mark.parametrize("kernel", [
    lambda: th.lmh(),
    lambda: th.adaptive_lmh(),
    lambda: th.mh("mu", th.drift()),
    lambda: th.subsampled_mh("mu", batch_size=5, epsilon=0.0, proposal=th.drift(0.5)),
])
def test_other_kernels_on_a_buffer_rewrite(kernel):
    x = posterior_draws(closure_over_a_buffer(Y), kernel(), seed=1)
    check_continuous(x, MEAN, SD, stats.norm(MEAN, SD).cdf, repr(kernel()))


def test_the_check_rejects_the_prior():
    """Negative control: draws of the prior (what skipping the plate gave) fail both tests."""
    x = np.random.default_rng(0).normal(0.0, 10.0, (1, 3000))
    assert abs(mean_z(x, MEAN, SD)) > 4.5 and ks_p(x, stats.norm(MEAN, SD).cdf) < 1e-4


# -- a DP mixture whose body reads crp.alpha --------------------------------------------------
X_ALPHA = np.random.default_rng(2).normal(1.5, 1.0, 8)


@th.model
def dp_reading_alpha(x):
    alpha = th.sample("alpha", dist.Gamma(2.0, 1.0))
    crp = th.CRP(alpha)
    with th.plate("data", len(x)) as i:
        th.sample("z", crp)  # the labels: nothing else reads them, so they integrate to one
        th.observe("x", dist.Normal(crp.alpha, 1.0), x[i])


def test_a_dp_mixture_reading_crp_alpha_in_its_body():
    """p(α | x) ∝ Gamma(α; 2, 1) Π N(x_i; α, 1): the labels' Ewens probabilities sum to one."""
    grid = np.linspace(0.0, 12.0, 120_001)
    logd = stats.gamma.logpdf(grid, 2.0) + stats.norm.logpdf(
        X_ALPHA[:, None], grid, 1.0).sum(axis=0)
    dens = np.exp(logd - logd.max())
    cum = integrate.cumulative_trapezoid(dens, grid, initial=0.0)
    dens, cum = dens / cum[-1], cum / cum[-1]
    mean = integrate.trapezoid(grid * dens, grid)
    sd = math.sqrt(integrate.trapezoid((grid - mean) ** 2 * dens, grid))

    def cdf(v):
        return np.interp(v, grid, cum)

    kernel = th.cycle([th.mh("alpha", th.drift(0.5)), th.gibbs(th.one("data.z"))])
    r = th.infer(dp_reading_alpha(X_ALPHA), kernel, num_samples=3000, burn_in=500, seed=0,
                 progress=False)
    check_continuous(r["alpha"], mean, sd, cdf, "alpha")


# -- Gibbs scoring one element's candidate values in lanes of one execution -----------------
# (the body runs over K copies of the element's index: a body that writes into an array at
# the index and reads it back gets the last copy's value in every lane)
MU4 = np.array([-2.0, 0.0, 2.0, 4.0])
Y5 = np.array([2.0, -1.5, 0.3, 1.8, 4.0])


@th.model
def labels_inline(y):
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Categorical(np.ones(4) / 4))
        th.observe("y", dist.Normal(MU4[z], 1.0), y[i])


class Labels:
    """Pyro-style: the labels kept on ``self`` by element, read back for the likelihood."""

    def __init__(self, y, switch=False):
        self.y, self.z, self.switch = y, np.zeros(len(y), dtype=np.int64), switch

    def __call__(self):
        on = th.sample("on", dist.Bernoulli(0.5)) if self.switch else 1
        with th.plate("data", len(self.y)) as i:
            z = th.sample("z", dist.Categorical(np.ones(4) / 4))
            if on:
                self.z[i] = z
                z = self.z[i]
            th.observe("y", dist.Normal(MU4[z], 1.0), self.y[i])


class Seating:
    """A DP mixture (tests/test_exchangeable.py::dpm at α = 1) keeping its labels on ``self``."""

    def __init__(self, x):
        self.x, self.z = x, np.zeros(len(x), dtype=np.int64)

    def __call__(self):
        crp = th.CRP(1.0)
        feats = th.mem("feats", lambda k: th.collapsed.NormalGamma(0.0, 0.1, 2.0, 2.0))
        with th.plate("data", len(self.x)) as i:
            self.z[i] = th.sample("z", crp)
            th.observe("x", feats(self.z[i]), self.x[i])


@pytest.mark.parametrize("kernel", [lambda: th.gibbs(th.one("data.z")), lambda: None],
                         ids=["gibbs(one)", "the default kernel"])
def test_labels_kept_on_self_give_the_inline_draws(kernel):
    """Before, every lane scored the last value (the draws were the prior's: mean label 1.5 at
    every element against the exact 2.00, 0.27, 1.13, 1.91, 2.88; a DP mixture's co-clustering
    0.47 against 0.70).  The first lanes of a site are compared with one run per value; these
    differ, so the site is updated by those runs: the inline model's draws, to the bit."""
    from test_exchangeable import X6, dpm

    for inline, rewrite in [(labels_inline(Y5), th.model(Labels(Y5).__call__)()),
                            (dpm(X6, 1.0), th.model(Seating(X6).__call__)())]:
        a, b = (th.infer(p, kernel(), num_samples=300, burn_in=50, seed=1, progress=False)
                for p in (inline, rewrite))
        assert np.array_equal(a["data.z"], b["data.z"])


def test_lanes_that_stop_agreeing_with_runs_are_an_error():
    """The body writes its labels back only once a top-level switch is on (off at the start,
    when the lanes are compared with runs): the lanes differ from then on, which the run that
    commits a drawn value finds."""
    from thrifty.errors import ModelError

    kernel = th.cycle([th.gibbs(th.one("data.z")), th.gibbs("on")])
    with pytest.raises(ModelError, match=r"gibbs on \('data', \d, 'z'\): scoring .* in lanes"):
        th.infer(th.model(Labels(Y5, switch=True).__call__)(), kernel, num_samples=300,
                 seed=1, init={"on": 0}, progress=False, check=False)


# -- a chain's states reduced after the chain, under the particle methods --------------------
# (in a particle run a state holds one value per particle: a reduction over all of it adds up
# every particle's states where one execution of the program adds up its steps)
TR3 = np.array([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
MU3 = np.array([-2.0, 0.0, 2.0])
Y6 = np.random.default_rng(1).normal(size=6) * 2


def _state(t, prev, ys):
    z = th.sample("z", dist.Categorical(TR3[prev]))
    th.observe("y", dist.Normal(MU3[z], 1.0), ys[t])
    return z


def chain_total(reduce):
    @th.model
    def m(ys):
        xs = th.markov("c", _state, len(ys), 0, ys)
        th.observe("total", dist.Normal(reduce(xs), 1.0), 5.0)

    return m(Y6)


REDUCED = {"np.sum(xs)": np.sum, "np.mean(xs) * T": lambda xs: np.mean(xs) * len(xs)}


@pytest.mark.parametrize("name", list(REDUCED))
def test_a_chain_reduced_over_its_particles_after_it_is_refused(name):
    """Before, th.smc's evidence was -603914 for np.sum against -14.89 for sum(xs) (the same
    program), and particle Gibbs and the default kernel (which chose PGAS) drew the chain from
    another posterior (E z_0 0.95 against the exact 0.71).  The particle run's observations
    outside the chain are compared with the program executed with one particle's trajectory:
    an error; the default kernel then updates the chain with LMH, as for sum(xs)."""
    from thrifty.errors import ModelError

    prog = chain_total(REDUCED[name])
    with pytest.raises(ModelError, match=r"th.smc: .*\('total',\).*mixes the particles"):
        th.smc(prog, 50, seed=1)
    for pg in (th.pgibbs("c", 5), th.pgibbs("c", 5, ancestor_sampling=False)):
        with pytest.raises(ModelError, match=r"pgibbs: .*mixes the particles"):
            th.infer(prog, pg, num_samples=20, seed=1, progress=False)
    a, b = (th.infer(p, None, num_samples=200, burn_in=50, seed=1, progress=False)["c.z"]
            for p in (chain_total(sum), prog))
    assert np.array_equal(a, b)


def test_a_chain_reduced_over_its_steps_after_it_runs_under_the_particle_methods():
    """The spellings that reduce over the steps only: the same evidence and draws."""
    progs = [chain_total(f) for f in (sum, lambda xs: np.asarray(xs).sum(axis=0))]
    assert th.smc(progs[0], 50, seed=1).log_evidence == th.smc(progs[1], 50, seed=1).log_evidence
    kernel = lambda: th.pgibbs("c", 5, ancestor_sampling=False)  # noqa: E731
    a, b = (th.infer(p, kernel(), num_samples=50, seed=1, progress=False)["c.z"] for p in progs)
    assert np.array_equal(a, b)
