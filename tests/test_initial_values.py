"""Initial values of another dtype than the family's draws (``init=`` of ints for a continuous
plate site, bools for a category) and sites whose family changes from a discrete to a
continuous one: the plate's column takes the dtype that holds every later draw, so the chain
is never confined to the values the column's first dtype can represent.

Exact posteriors (thresholds of ``tests/stat_helpers.py``): x ~ N(0, 1), y | x ~ N(x, 0.5²)
gives x | y ~ N(0.8 y, 0.2); a category c ~ U{0, 1, 2} with y | c ~ N(c, 0.5²) gives
P(c = k | y) ∝ exp(-2 (y - k)²).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import check_continuous, check_discrete, discrete_posterior
from thrifty import dist

Y = np.array([0.3, 1.1])


@th.model
def normals(y):
    with th.plate("data", len(y)) as i:
        x = th.sample("x", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(x, 0.5), y[i])


@th.model
def categories(y):
    with th.plate("data", len(y)) as i:
        c = th.sample("c", dist.Categorical(np.full(3, 1 / 3)))
        th.observe("y", dist.Normal(c, 0.5), y[i])


@th.model
def switching(y):
    f = th.sample("f", dist.Bernoulli(0.5))
    with th.plate("data", len(y)) as i:
        x = th.sample("x", dist.Poisson(2.0) if f else dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(x, 0.5), y[i])


def test_integer_initial_values_of_a_continuous_plate_site_do_not_truncate_its_draws():
    """``init={"data.x": [0, 0]}`` (ints) under LMH and drift MH: the posterior of x, not of x
    rounded to the integers (before, every draw was an integer: KS p ≈ 0)."""
    sd = math.sqrt(0.2)
    for kernel in (th.lmh(), th.mh("data.x", th.drift(0.7))):
        r = th.infer(normals(Y), kernel, num_samples=3000, burn_in=100, seed=1, progress=False,
                     init={"data.x": [0, 0]})
        x = r["data.x"]
        for j, y in enumerate(Y):
            check_continuous(x[..., j], 0.8 * y, sd, stats.norm(0.8 * y, sd).cdf,
                             f"{kernel.label()} x[{j}]")
        assert x.dtype == np.float64


def test_float32_initial_values_are_widened_where_the_chain_writes():
    """A float32 column receiving float64 draws stores them as scored (check mode compares
    every step's log-densities with a full execution)."""
    init = {"data.x": np.full(2, 0.1, dtype=np.float32)}
    r = th.infer(normals(Y), th.lmh(), num_samples=200, seed=1, progress=False, init=init,
                 check=True)
    x = r["data.x"][0, -1]
    assert r["data.x"].dtype == np.float64 and np.all(x.astype(np.float32) != x)


def test_boolean_initial_values_of_a_category_do_not_confine_it_to_two_values():
    """Bools given for a three-valued category: Gibbs reaches c = 2 with its exact probability
    (before, a bool column stored 2 as True = 1: P(c = 2) was 0 instead of 0.88)."""
    y = np.array([2.0, 0.4])
    r = th.infer(categories(y), th.gibbs("data.c"), num_samples=2000, seed=2, progress=False,
                 init={"data.c": np.zeros(2, dtype=bool)})
    c = r["data.c"]
    for j, yj in enumerate(y):
        probs = discrete_posterior({k: -2.0 * (yj - k) ** 2 for k in range(3)})
        check_discrete(c[..., j], probs, f"c[{j}]")


def test_a_site_whose_family_turns_continuous_gets_non_integer_draws():
    """Started in the Poisson branch (an int column), the chain's draws of x in the Normal
    branch are draws of a continuous family (before: all integers)."""
    r = th.infer(switching(Y), th.lmh(), num_samples=1500, seed=1, progress=False,
                 init={"f": 1})
    f, x = r["f"][0], r["data.x"][0]
    normal = x[f == 0]
    assert len(normal) > 500
    assert np.mean(normal != np.round(normal)) > 0.95


@th.model
def two_globals():
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    k = th.sample("k", dist.Poisson(2.0))
    th.observe("y", dist.Normal(mu + k, 1.0), 2.5)


def test_initial_values_of_a_top_level_site_are_held_as_its_family_draws():
    """A JAX array, a NumPy float32 and a Python int given for a continuous site, and a float
    or a bool for a count, were kept as given: a JAX value made the recorded column of dtype
    object (one JAX array per draw) and an int one of int64 while the site did not move.
    They are held as the family's own draws: Python floats and ints."""
    jnp = pytest.importorskip("jax.numpy")
    kernel = th.mh("k", th.prior())  # (mu never moves: its column holds the initial value)
    for mu0 in (jnp.array(0.5), np.float32(0.5), 1, True):
        for k0 in (3.0, np.int32(3), True):
            tr = th.initialize(two_globals(), seed=0, init={"mu": mu0, "k": k0})
            assert type(tr["mu"]) is float and type(tr["k"]) is int, (mu0, k0)
            r = th.infer(two_globals(), kernel, num_samples=5, seed=0, progress=False,
                         init={"mu": mu0, "k": k0})
            assert r["mu"].dtype == np.float64 and np.all(r["mu"] == float(mu0)), (mu0, k0)
            assert r["k"].dtype == np.int64, (mu0, k0)
