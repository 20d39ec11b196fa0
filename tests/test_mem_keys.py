"""Memoized functions read with keys of any hashable kind (paper 000 §4.1): the keys a plate's
elements read are stored per element, and must be stored as they were read — check mode
(:mod:`thrifty.core.check`) compares the stored keys and reference counts with a full execution
of the program after every step."""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from stat_helpers import mean_z, z_threshold
from thrifty import dist
from thrifty.core.column import Column
from thrifty.errors import ModelError

Y3 = np.array([0.3, -0.5, 1.2])


@th.model
def string_keys():
    """Keys "k0".."k11": a run whose elements read "k1".."k3" stores them in a column of
    2-character strings; a later key "k10" must not be cut to "k1"."""
    w = th.mem("w", lambda k: dist.Normal(0.0, 1.0))
    with th.plate("d", 3) as i:
        z = th.sample("z", dist.Categorical(np.ones(12) / 12))
        keys = np.array([f"k{v}" for v in np.atleast_1d(z)])
        th.observe("y", dist.Normal(w(keys), 1.0), Y3[i])


def test_string_keys_longer_than_the_first_ones_are_kept_whole():
    r = th.infer(string_keys(), th.lmh(), num_samples=300, seed=1, progress=False, check=True,
                 init={"d.z": np.array([1, 2, 3])})
    z = r["d.z"][0]
    assert (z >= 10).any()  # (keys of three characters were read)
    col = Column(np.array(["k1", "k2"]))
    shared = col.share()
    col.put(np.array([0]), np.array(["k10"]))
    shared.put(1, "k11")
    assert col.take(slice(None)).tolist() == ["k10", "k2"]
    assert shared.take(slice(None)).tolist() == ["k1", "k11"]


@th.model
def int_and_str_keys(both):
    """Keys 1 and "1" of one memoized function: both named "w.1" in a result."""
    w = th.mem("w", lambda k: dist.Normal(10.0 if isinstance(k, str) else -10.0, 1.0))
    if both:
        th.observe("o", dist.Normal(w(1) + w("1"), 1.0), 0.0)
    else:  # one at a time: 1 at some draws, "1" at others
        b = th.sample("b", dist.Bernoulli(0.5))
        th.observe("o", dist.Normal(w("1" if b else 1), 10.0), 0.0)


@pytest.mark.parametrize("both", [True, False])
def test_keys_whose_result_names_coincide_are_refused(both):
    """The draws of the key "1" were recorded as those of the key 1 (r["w.1"] had mean +10,
    the other key's draws silently dropped); now the names are refused, naming both keys."""
    names = r"\('w', 1\) and \('w', '1'\)|\('w', '1'\) and \('w', 1\)"
    with pytest.raises(ModelError, match=names):
        th.infer(int_and_str_keys(both), th.lmh(), num_samples=200, seed=2, progress=False)


@th.model
def site_at_a_mem_address():
    w = th.mem("w", lambda k: dist.Normal(-10.0, 1.0))
    b = th.sample(("w", 1), dist.Normal(10.0, 1.0))
    th.observe("o", dist.Normal(w(1) + b, 1.0), 0.0)


def test_a_choice_at_the_address_of_a_memoized_key_is_refused():
    """th.sample(("w", 1)) beside the key 1 of th.mem("w"): two choices at one address, of
    which the result kept one (check=False: no error at all)."""
    with pytest.raises(ModelError, match=r"the address \('w', 1\) names two choices"):
        th.infer(site_at_a_mem_address(), th.lmh(), num_samples=50, seed=2, progress=False,
                 check=False)


XA, XB = np.array([1, 1, 1]), np.array([1, 1])


@th.model
def two_plates():
    f = th.mem("f", lambda k: th.collapsed.BetaBernoulli(1.0, 1.0))
    with th.plate("a", 3) as i:
        th.observe("x", f(np.zeros(3, dtype=int)[i]), XA[i])
    with th.plate("b", 2) as i:
        th.observe("y", f(np.zeros(2, dtype=int)[i]), XB[i])


@th.model
def two_sites():
    f = th.mem("f", lambda k: th.collapsed.BetaBernoulli(1.0, 1.0))
    with th.plate("a", 3) as i:
        k = np.zeros(3, dtype=int)[i]
        th.observe("x", f(k), XA[i])
        th.observe("y", f(k), XA[i])


@pytest.mark.parametrize("model", [two_plates, two_sites])
def test_a_memoized_collapsed_family_observed_at_two_sites_is_refused(model):
    """f(0) is one Beta–Bernoulli parameter: the five (six) observations of key 0 have the
    marginal log B(6, 1) − log B(1, 1) = −1.79 (B(7, 1): −1.95); each site kept statistics of
    its own, two parameters: −2.48 (−2.77), silently.  Now refused, naming both sites."""
    with pytest.raises(ModelError, match=r"observed at \('a', \*, 'x'\) and at"):
        th.simulate(model(), seed=0)


def test_one_name_defined_twice_with_different_functions_is_refused():
    """Two th.mem with one name and different functions in one execution were one table: each
    key drawn under whichever function read it first (w(1) under N(-10, 1), w(2) under N(10, 1),
    silently).  A helper that defines the same mem twice (one code, the same closure values) is
    the same function and is accepted."""
    import functools

    def helper(mu):
        return th.mem("w", lambda k: dist.Normal(mu, 1.0))

    def model(second):
        @th.model
        def m():
            mu = th.sample("mu", dist.Normal(0.0, 1.0))
            a, b = helper(mu), second(mu)
            th.observe("o", dist.Normal(a(1) + b(2), 1.0), 0.0)

        return m()

    def other_code(mu):
        return th.mem("w", lambda k: dist.Normal(mu + 10.0, 1.0))

    for second in (other_code, lambda mu: helper(mu + 10.0),
                   lambda mu: th.mem("w", functools.partial(_normal, 10.0))):
        with pytest.raises(ModelError, match=r"th.mem at \('w',\) is defined twice"):
            th.infer(model(second), th.lmh(), num_samples=5, seed=0, progress=False)
    r = th.infer(model(helper), th.lmh(), num_samples=5, seed=0, progress=False)
    assert {"mu", "w.1", "w.2"} <= set(r.keys())

    @th.model
    def partials():
        a = th.mem("w", functools.partial(_normal, 1.0))
        b = th.mem("w", functools.partial(_normal, 1.0))
        th.observe("o", dist.Normal(a(1) + b(2), 1.0), 0.0)

    assert {"w.1", "w.2"} <= set(th.infer(partials(), th.lmh(), num_samples=5, seed=0,
                                          progress=False).keys())


def _normal(mu, k):
    return dist.Normal(mu, 1.0)


def test_a_traces_values_refuse_two_choices_of_one_name():
    """th.simulate(...).values() showed one of two choices at one address (a choice at a
    memoized key's address) or under one name (keys 1 and '1'), silently."""
    @th.model
    def at_key():
        w = th.mem("w", lambda k: dist.Normal(0.0, 1.0))
        a = th.sample(("w", 1), dist.Normal(5.0, 1.0))
        th.observe("o", dist.Normal(a + w(1), 1.0), 0.0)

    @th.model
    def int_and_str():
        w = th.mem("w", lambda k: dist.Normal(0.0, 1.0))
        th.observe("o", dist.Normal(w(1) + w("1"), 1.0), 0.0)

    with pytest.raises(ModelError, match=r"the address \('w', 1\) names two choices"):
        th.simulate(at_key(), seed=0).values()
    with pytest.raises(ModelError, match=r"two choices would both be named 'w\.1'"):
        th.simulate(int_and_str(), seed=0).values()


Y6 = np.array([2.5, -0.3, 1.3, 0.2, -1.1, 0.7])


@th.model
def one_key_per_element(y):
    """w(i) with the plate's index: each element reads the key of its own position — slice(0, 6)
    when every element runs is the positions 0..5, as the integer array of a subset is."""
    w = th.mem("w", lambda k: dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(w(i), 1.0), y[i])


def test_a_mem_read_with_the_plate_index_reads_one_key_per_element():
    """The keys are the positions whether the index is a slice or an array; the posterior of
    each w_k is N(y_k / 2, 1/2): z-tests of the six means with ESS-based standard errors,
    Bonferroni threshold (stat_helpers.z_threshold).  (A slice is hashable: read as one key, it
    gave every element one shared value.)"""
    tr = th.simulate(one_key_per_element(Y6), seed=0)
    values = tr.values()
    assert sorted(k for k in values if k.startswith("w.")) == [f"w.{k}" for k in range(6)]
    assert len({values[f"w.{k}"] for k in range(6)}) == 6
    r = th.infer(one_key_per_element(Y6), num_samples=3000, burn_in=500, seed=2, progress=False)
    zs = [mean_z(r[f"w.{k}"], Y6[k] / 2, np.sqrt(0.5)) for k in range(6)]
    assert max(map(abs, zs)) < z_threshold(6), zs
