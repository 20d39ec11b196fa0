"""Data are read by position whatever their type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import thrifty as th
from thrifty import dist
from thrifty.core.model import as_data
from thrifty.errors import ArgumentError, ModelError


@th.model
def means(y):
    with th.plate("data", len(y)) as i:
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        th.observe("y", dist.Normal(mu, 0.1), y[i])


def test_a_pandas_series_with_a_shuffled_index_is_read_by_position():
    """A Series after sort_values has index labels out of order: y[index array] used to read
    by label in partial executions (another row's data), by position in full ones.  The
    posterior of each element is N(≈ y_j, 0.1²) for the j-th value in order: |mean − y_j| <
    0.05 (≈ 25 standard errors of the posterior mean below the 7.36-vs-3.0 error it replaces)."""
    y = pd.Series([3.0, 7.36, -2.0, 5.0, 0.5]).sort_values()  # index 2, 4, 0, 3, 1
    assert list(y.index) != list(range(5))
    r = th.infer(means(y), th.mh("data.mu", th.drift(0.1)), num_samples=3000, burn_in=500,
                 seed=0, progress=False)
    post = r["data.mu"][0].mean(axis=0)
    np.testing.assert_allclose(post, y.to_numpy(), atol=0.05)


def test_a_series_with_missing_labels_works():
    y = pd.Series([1.0, 2.0, 3.0], index=[10, 20, 30])
    r = th.infer(means(y), th.mh("data.mu", th.drift(0.1)),
                 num_samples=200, seed=0, progress=False)
    assert r["data.mu"].shape == (1, 200, 3)


@th.model
def coin(flips):
    p = th.sample("p", dist.Beta(1.0, 1.0))
    with th.plate("flips", len(flips)) as i:
        th.observe("y", dist.Bernoulli(p), flips[i])
    return p


@pytest.mark.parametrize("kernel", [th.mh("p", th.drift(0.2)), th.lmh(), th.mh("p")],
                         ids=["mh-drift", "lmh", "mh-prior"])
def test_list_data_works_with_every_kernel(kernel):
    """The @th.model docstring's own coin([1, 0, 1]): posterior Beta(3, 2), mean 0.6."""
    from thrifty.diagnostics._arviz import ess as az_ess

    r = th.infer(coin([1, 0, 1, 1]), kernel, num_samples=4000, seed=0, progress=False)
    p = r["p"][0]
    ess = az_ess(p[None])
    z = (p.mean() - 4 / 6) / (np.sqrt(4 * 2 / (36 * 7)) / np.sqrt(ess))
    assert abs(z) < 4, (p.mean(), z)


def test_other_arguments_are_passed_as_they_are():
    d = {"a": 1}
    assert as_data(d) is d
    assert as_data(["a", "b"]) == ["a", "b"]
    assert as_data(3.0) == 3.0
    ragged = [[1, 2], [3]]
    assert as_data(ragged) is ragged
    assert as_data([1, 2]).dtype.kind == "i"


def _chain_step(t, prev, data):
    x = th.sample("x", dist.Normal(0.9 * prev, 1.0))
    th.observe("y", dist.Normal(x, 0.5), data["y"][t])
    return x


@th.model
def chain_of_dict(data):
    th.markov("s", _chain_step, len(data["y"]), 0.0, data)


def test_a_series_held_in_a_dict_is_read_by_position():
    """``data["y"][t]`` of a Series with a shuffled index, held in a dict argument, read the
    value labelled t: each of the 20 steps observed another step's value (step 18 observed
    1.82 instead of 0.22), a silently different posterior.  It is read by position, as a
    Series argument is: the draws equal those of the plain array, bit for bit."""
    y = np.random.default_rng(1).normal(1.0, 1.0, 20)
    s = pd.Series(y, index=np.random.default_rng(2).permutation(20))

    def draws(data):
        return th.infer(chain_of_dict(data), th.lmh(), num_samples=100, seed=0,
                        progress=False)["s.x"]

    np.testing.assert_array_equal(draws({"y": s}), draws({"y": y}))


def test_a_masked_array_is_refused_naming_the_argument_unless_nothing_is_masked():
    """The values under a mask were observed as data (the mask silently ignored)."""
    y = np.ma.masked_array([1.0, 2.0, 3.0, 4.0], mask=[False, True, False, False])
    with pytest.raises(ArgumentError, match=r"argument 'y' .*1 masked entry of 4"):
        means(y)
    with pytest.raises(ArgumentError, match=r"argument 'data'\['y'\] .*masked"):
        chain_of_dict({"y": y})
    plain = np.array([1.0, 2.0, 3.0, 4.0])
    kernel = th.mh("data.mu", th.drift(0.1))

    def draws(v):
        return th.infer(means(v), kernel, num_samples=50, seed=0, progress=False)["data.mu"]

    np.testing.assert_array_equal(draws(np.ma.masked_array(plain)), draws(plain))


@th.model
def series_values(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y.values[i])


@th.model
def frame_columns(df):
    b = th.sample("b", dist.Normal(0.0, 1.0))
    x, y = df["x"], df["y"]
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(b * x[i], 1.0), y[i])


def test_pandas_idioms_on_arguments_read_by_position_are_errors_naming_the_argument():
    """A Series or DataFrame reaches the model as a NumPy array: ``y.values[i]`` was a bare
    AttributeError, ``df["x"]`` a NumPy IndexError, an xarray Dataset xarray's TypeError
    when the model was applied; each now names the argument and says how to read it."""
    import xarray as xr

    df = pd.DataFrame({"x": [0.1, 0.2, 0.3], "y": [1.0, 2.0, 3.0]}, index=[7, 8, 9])
    runs = {series_values: df["y"], frame_columns: df}
    for m, data in runs.items():
        name = "y" if m is series_values else "df"
        with pytest.raises(ModelError, match=rf"argument '{name}' \(pandas\.\w+\) reaches "
                                                r"the model as a NumPy array .* not y\.values"):
            th.infer(m(data), th.mh("mu" if m is series_values else "b"), num_samples=2,
                     seed=0, progress=False)
    with pytest.raises(ArgumentError, match=r"argument 'y' \(xarray\.Dataset\) cannot be read"):
        means(xr.Dataset({"y": ("obs", np.zeros(3))}))


def test_numbers_in_an_object_array_or_as_0d_arrays_are_read_as_numbers():
    """A pandas column of mixed types gives an array of dtype object; a list comprehension
    over an array gives 0-d arrays.  Both were refused in a plate (``not numeric``, or a
    TypeError at the index) though a markov step read them; they give the draws of the
    float array, bit for bit."""
    y = np.array([0.3, -1.2, 2.5, 0.7])
    kernel = th.mh("data.mu", th.drift(0.1))

    def draws(v):
        return th.infer(means(v), kernel, num_samples=50, seed=0, progress=False)["data.mu"]

    expected = draws(y)
    np.testing.assert_array_equal(draws(y.astype(object)), expected)
    np.testing.assert_array_equal(draws(pd.Series(list(y), dtype=object)), expected)
    np.testing.assert_array_equal(draws([np.array(v) for v in y]), expected)
    strings = np.array(["a", 1.0], dtype=object)
    assert as_data(strings) is strings


def test_data_changed_in_place_between_two_runs_are_read_anew_whatever_their_type():
    """An array changed in place between two ``th.infer`` calls of one program was read
    anew (and so is a dict of arrays whose entry is replaced), a list (copied into an array
    when the model was applied) or a dict holding a Series (converted then) was not: the
    second run gave the posterior of the old data, bit for bit."""
    def draws(prog, kernel, site):
        return th.infer(prog, kernel, num_samples=30, seed=0, progress=False)[site]

    y = [0.5, 1.0, 1.5]
    prog = means(y)
    draws(prog, th.mh("data.mu", th.drift(0.5)), "data.mu")
    y[0] = 100.0
    np.testing.assert_array_equal(draws(prog, th.mh("data.mu", th.drift(0.5)), "data.mu"),
                                  draws(means(np.array(y)), th.mh("data.mu", th.drift(0.5)),
                                        "data.mu"))
    data = {"y": pd.Series([0.5, 1.0, 1.5], index=[3, 1, 2])}
    prog = chain_of_dict(data)
    draws(prog, th.lmh(), "s.x")
    data["y"] = pd.Series([100.0, 1.0, 1.5])
    np.testing.assert_array_equal(draws(prog, th.lmh(), "s.x"),
                                  draws(chain_of_dict({"y": np.array([100.0, 1.0, 1.5])}),
                                        th.lmh(), "s.x"))


@th.model
def three_of_dict(data):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("p", 3) as i:
        th.observe("y", dist.Normal(mu, 1.0), data["y"][i])


def test_an_array_swapped_in_a_dict_between_two_runs_is_checked_for_its_rows():
    """A plate of 3 reading a dict's array of 4 observes 3 of the 4 points, which is refused;
    when the array was swapped into the dict after a first run of the program, the check read
    the old array's memory (kept from the first run) and the second run observed 3 of 4
    silently."""
    data = {"y": np.zeros(3)}
    prog = three_of_dict(data)
    kernel = th.mh("mu", th.drift(0.5))
    th.infer(prog, kernel, num_samples=5, seed=0, progress=False)
    data["y"] = np.arange(4.0)
    with pytest.raises(ModelError, match=r"'data'\['y'\], which has 4"):
        th.infer(prog, kernel, num_samples=5, seed=0, progress=False)


def test_a_range_argument_is_read_as_its_numbers():
    """A ``range`` is a sequence of numbers, read by position as a list of them is (it was
    passed as is, and ``y[i]`` in a plate raised a TypeError about scalar indices)."""
    kernel = th.mh("data.mu", th.drift(0.1))
    r = th.infer(means(range(4)), kernel, num_samples=30, seed=0, progress=False)
    expected = th.infer(means([0, 1, 2, 3]), kernel, num_samples=30, seed=0, progress=False)
    np.testing.assert_array_equal(r["data.mu"], expected["data.mu"])


def test_a_list_in_a_dict_indexed_by_the_plate_index_names_the_list():
    """A list takes the plate's index when every element runs (a slice) but not a subset's
    integer array: the error says so, rather than blaming the run of no element where it shows
    first."""

    @th.model
    def m(d):
        mu = th.sample("mu", dist.Normal(0.0, 3.0))
        with th.plate("data", len(d["y"])) as i:
            th.observe("y", dist.Normal(mu, 1.0), d["y"][i])

    with pytest.raises(ModelError, match=r"a Python list or tuple indexed by the plate's index"
                       r"(.|\n)*np\.asarray"):
        th.infer(m({"y": [0.1, 0.5, -0.2]}), th.mh("mu"), num_samples=5, progress=False)
