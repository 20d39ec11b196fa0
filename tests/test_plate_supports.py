"""A plate site's support as kernels read it after runs of some of its elements.

A plate stores each site's distribution from its last run, which may have executed a few
elements only (a one-element Gibbs or MH update).  Kernels that read a support from it — Gibbs
enumerating an element's values, a gradient kernel's bijection over every element — must get
the support of the elements they move, not of the elements the last run executed: when the
support depends on the parameters (per-element bounds), the engine executes the elements it
needs (``PlateView.support_of``).  Exact checks where the answer is known in closed form;
posterior checks with the thresholds of ``stat_helpers``.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import check_continuous, check_discrete, element_probs_z, z_threshold
from thrifty import dist
from thrifty.core.engine import STRICT, Plan, VecTarget, propose
from thrifty.core.engine import plate as plate_view

HI = np.array([1, 5, 2, 8])


@th.model
def bounded(hi, y):
    with th.plate("data", len(hi)) as i:
        z = th.sample("z", dist.DiscreteUniform(0, hi[i]))
        th.observe("y", dist.Normal(z, 1.5), y[i])


def test_an_elements_support_is_its_own_after_a_run_of_another():
    y = HI - 0.5
    trace = th.simulate(bounded(HI, y), seed=0)
    elems = np.array([0])
    vec = {(("data",), ("z",)): VecTarget(elems, np.array([0]))}
    propose(trace, np.random.default_rng(0), vec=vec, plan=Plan({("data",): elems}),
            mode=STRICT).commit()
    view = plate_view(trace, ("data",))
    assert view.dist(("z",)).batch_shape == (1,)  # the last run's: element 0's bounds only
    for e, hi in enumerate(HI.tolist()):
        assert view.support_of(("z",), [e]).enumerate_support().tolist() == list(range(hi + 1))
    whole = view.support_of(("z",))
    assert whole.batch_shape == (4,) and whole.high.tolist() == HI.tolist()
    assert view.support_of(("z",), [0, 2]).enumerate_support().tolist() == [0, 1, 2]


def _bounded_posterior(hi, y):
    return {k: float(p) for k, p in enumerate(stats.norm.pdf(y, np.arange(hi + 1), 1.5)
                                              / stats.norm.pdf(y, np.arange(hi + 1), 1.5).sum())}


@pytest.mark.parametrize("selection", [th.one("data.z"), "data.z"])
def test_gibbs_on_elements_with_their_own_bounds(selection):
    y = HI - 0.5
    r = th.infer(bounded(HI, y), th.gibbs(selection), num_samples=3000, seed=1, progress=False)
    z = r["data.z"]
    for e, hi in enumerate(HI.tolist()):
        check_discrete(z[..., e], _bounded_posterior(hi, y[e]), f"element {e}")


def test_one_element_gibbs_with_per_element_probabilities():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, 6)
    y = rng.normal(size=6)

    @th.model
    def mix(y, p):
        with th.plate("data", len(y)) as i:
            z = th.sample("z", dist.Bernoulli(probs=p[i]))
            th.observe("y", dist.Normal(2.0 * z - 1.0, 1.0), y[i])

    r = th.infer(mix(y, p), th.gibbs(th.one("data.z")), num_samples=4000, seed=2, progress=False)
    w1 = p * stats.norm.pdf(y, 1.0, 1.0)
    p1 = w1 / (w1 + (1 - p) * stats.norm.pdf(y, -1.0, 1.0))
    zs = element_probs_z(r["data.z"], p1)
    assert np.all(np.abs(zs) < z_threshold(len(zs))), zs


LO = np.array([0.0, 10.0, 20.0])


@th.model
def boxes(y):
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(0.5))
        th.observe("w", dist.Normal(z, 1.0), 0.3)
        x = th.sample("x", dist.Uniform(LO[i], LO[i] + 1.0))
        th.observe("y", dist.Normal(x, 1.0), y[i])


@pytest.mark.parametrize("gibbs", [th.one("data.z"), "data.z"])
def test_nuts_beside_gibbs_moves_each_element_in_its_own_bounds(gibbs):
    # the Gibbs commits leave the plate's stored distributions of x over the elements they ran;
    # NUTS's bijection is over every element's own bounds
    y = LO + 0.5
    r = th.infer(boxes(y), th.cycle([th.nuts("data.x"), th.gibbs(gibbs)]), num_samples=600,
                 burn_in=200, seed=3, progress=False)
    x = r["data.x"]
    post = stats.truncnorm(-0.5, 0.5, loc=0.0, scale=1.0)  # x − lo − 0.5, on [−0.5, 0.5]
    for e, lo in enumerate(LO.tolist()):
        check_continuous(x[..., e] - lo - 0.5, 0.0, post.std(), post.cdf, f"x[{e}]")


def test_every_family_whose_support_reads_its_parameters_says_so():
    # a family defining its own support or enumeration either reads parameter values there
    # (support_varies) or only what every entry of a batch shares (Categorical: the number of
    # categories; Bernoulli: {0, 1}) — a new family must be placed in one of the two
    import inspect

    import thrifty.distributions as D
    from thrifty.distributions.base import Distribution

    shared = {"Bernoulli", "Categorical"}
    found = {}
    for mod in [D] + [m for _, m in inspect.getmembers(D, inspect.ismodule)]:
        for _, c in inspect.getmembers(mod, inspect.isclass):
            if issubclass(c, Distribution) and any(
                    k in b.__dict__ for b in c.__mro__[:-1] if issubclass(b, Distribution)
                    and b is not Distribution for k in ("support", "enumerate_support")):
                found[c.__name__] = c.support_varies
    assert {n for n, v in found.items() if not v} == shared, found
    assert {"Uniform", "Binomial", "DiscreteUniform", "Truncated", "Delta"} <= set(found)

    class Interval(Distribution):  # a user's family: its support is taken to vary
        def __init__(self, hi):
            self.hi = hi

        def enumerate_support(self):
            return np.arange(int(np.max(self.hi)) + 1)

    assert Interval.support_varies


@th.model
def chained_boxes():
    with th.plate("data", len(LO)) as i:
        z = th.sample("z", dist.Bernoulli(0.5))
        th.observe("w", dist.Normal(z, 1.0), 0.3)

        def step(t, prev):
            x = th.sample("x", dist.Uniform(LO[i], LO[i] + 1.0))
            th.observe("y", dist.Normal(x, 1.0), LO[i] + 0.5)
            return x

        th.markov("c", step, 2)


def test_nuts_on_a_chain_in_a_plate_beside_one_element_gibbs():
    r = th.infer(chained_boxes(), th.cycle([th.nuts("data.c.x"), th.gibbs(th.one("data.z"))]),
                 num_samples=600, burn_in=200, seed=4, progress=False)
    x = r["data.c.x"]  # (chains, draws, elements, steps)
    post = stats.truncnorm(-0.5, 0.5, loc=0.0, scale=1.0)
    for e, lo in enumerate(LO.tolist()):
        check_continuous(x[..., e, 1] - lo - 0.5, 0.0, post.std(), post.cdf, f"x[{e}, 1]")
