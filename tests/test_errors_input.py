"""Bad inputs get errors that name the site or argument and the fix."""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.diagnostics._arviz import ess as ess_of
from thrifty.errors import ModelError


def _infer(prog, kernel=None, **kw):
    return th.infer(prog, kernel or th.lmh(), num_samples=5, seed=0, progress=False, **kw)


def test_sample_of_a_number_names_the_site():
    @th.model
    def m():
        th.sample("x", 3.0)

    with pytest.raises(ModelError, match=r"th.sample\('x', \.\.\.\): expected a distribution"):
        _infer(m())


def test_observe_of_a_number_and_of_none_name_the_site():
    @th.model
    def m():
        x = th.sample("x", dist.Normal(0.0, 1.0))
        th.observe("y", x, 1.0)

    with pytest.raises(ModelError, match=r"th.observe\('y', \.\.\.\): expected a distribution"):
        _infer(m())

    @th.model
    def n():
        x = th.sample("x", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(x, 1.0), None)

    with pytest.raises(ModelError, match=r"th.observe\('y', \.\.\.\): the observed value is None"):
        _infer(n())


def test_mem_function_returning_a_number_is_named():
    @th.model
    def m():
        f = th.mem("w", lambda k: 1.5)
        th.observe("y", dist.Normal(f(0), 1.0), 0.0)

    with pytest.raises(ModelError, match=r"th.mem \('w',\).*must return a distribution"):
        _infer(m())


def test_an_unapplied_model_is_named():
    @th.model
    def needs_data(y):
        th.sample("x", dist.Normal(0.0, 1.0))

    with pytest.raises(TypeError, match=r"got the model 'needs_data' itself; apply it"):
        _infer(needs_data)
    r = _infer(th.model(lambda: th.sample("x", dist.Normal(0.0, 1.0))))  # no arguments: fine
    assert r["x"].shape == (1, 5)
    assert np.isfinite(r["x"]).all()


def test_unbounded_recursion_names_the_last_address():
    @th.model
    def m():
        def down(k):
            th.sample(("x", k), dist.Normal(0.0, 1.0))
            return down(k + 1)

        down(0)

    with pytest.raises(ModelError, match=r"recursed deeper than Python allows.*\('x', \d+\)"):
        _infer(m())


def test_init_of_the_wrong_shape_names_the_address_and_init():
    @th.model
    def m():
        th.sample("w", dist.MvNormal(np.zeros(4), np.eye(4)))

    with pytest.raises(ModelError, match=r"value given for \('w',\) has shape \(3,\).*init="):
        _infer(m(), th.mh("w", th.drift(0.1)), init={"w": np.zeros(3)})


def test_init_of_the_wrong_shape_on_scalar_and_plate_sites_names_the_address():
    """A vector given for a scalar site does not turn the site into a vector for the run: the
    shape is checked for scalar distributions too — top-level sites, mem keys, a plate's site
    of every element and single elements."""

    @th.model
    def scalar():
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu, 1.0), 0.5)

    with pytest.raises(ModelError, match=r"value given for \('mu',\) has shape \(2,\).*init="):
        _infer(scalar(), th.mh("mu", th.drift(0.1)), init={"mu": [1.0, 2.0]})
    with pytest.raises(ModelError, match=r"value given for \('mu',\) has shape \(1, 1\)"):
        _infer(scalar(), init={"mu": np.ones((1, 1))})
    r = _infer(scalar(), init={"mu": np.float64(1.0)})  # a scalar of any type is fine
    assert r["mu"].shape == (1, 5)

    @th.model
    def keyed():
        f = th.mem("f", lambda k: dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(f(0), 1.0), 0.5)

    with pytest.raises(ModelError, match=r"value given for \('f', 0\) has shape \(2,\).*init="):
        _infer(keyed(), init={("f", 0): [1.0, 2.0]})

    y = np.zeros(4)
    with pytest.raises(ModelError, match=r"\('data', \*, 'z'\) \(every element\) has shape "
                                         r"\(2,\) per element.*shape \(\) per element.*init="):
        _infer(plate_model(y), init={"data.z": np.zeros((4, 2))})
    with pytest.raises(ModelError, match=r"\('data', 1, 'z'\) has shape \(2,\) per element"):
        _infer(plate_model(y), init={("data", 1, "z"): [1.0, 2.0]})


@th.model
def plate_model(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Normal(mu, 1.0))
        th.observe("y", dist.Normal(z, 1.0), y[i])


def test_selecting_the_sites_of_an_empty_plate_says_it_is_empty():
    with pytest.raises(th.errors.SelectionError, match=r"plate\(s\) 'data' have 0 elements"):
        _infer(plate_model(np.zeros(0)), th.mh("data.z", th.drift(0.1)))


def test_a_result_without_draws_says_so():
    r = th.infer(plate_model(np.zeros(3)), th.mh("mu", th.drift(0.1)), num_samples=0,
                 progress=False)
    with pytest.raises(KeyError, match="holds no draws"):
        r["mu"]
    with pytest.raises(ValueError, match="needs at least 2 draws"):
        r.summary()


@th.model
def _sized(data, n, key=None):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    y = data if key is None else data[key]
    with th.plate("data", n) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i] if np.ndim(y) == 1 else y[i, 1])


def test_a_plate_shorter_or_longer_than_its_data_is_an_error_naming_both_sizes():
    """``y[i]`` under a plate of 3 over ``y`` of length 4 would observe the first 3 points
    only (the posterior of other data); of 5, the data has a row too few.  Both are errors
    naming the plate, the observation, the argument and the sizes — for arrays, dict values
    and DataFrame columns (read by position), at start-up."""
    pd = pytest.importorskip("pandas")
    y = np.array([0.5, -1.0, 2.0, 0.3])
    msg3 = (r"plate \('data',\) has 3 element\(s\), but its observation \('data', \*, 'y'\) "
            r"reads the first 3 rows of argument {}, which has 4: the other 1 would not be "
            r"observed")
    with pytest.raises(ModelError, match=msg3.format("'data'")):
        _infer(_sized(y, 3), th.mh("mu", th.drift(0.5)))
    with pytest.raises(ModelError, match=r"has 5 element\(s\).*reads argument 'data', which "
                                         r"has only 4 rows"):
        _infer(_sized(y, 5), th.mh("mu", th.drift(0.5)))
    with pytest.raises(ModelError, match=msg3.format(r"'data'\['y'\]")):
        _infer(_sized({"y": y}, 3, "y"))
    df = pd.DataFrame({"x": np.zeros(4), "y": y})  # a 2-d array: column 1 read as y[i, 1]
    with pytest.raises(ModelError, match=msg3.format("'data'")):
        _infer(_sized(df, 3))
    with pytest.raises(ModelError, match=msg3.format("'data'")):
        _infer(_sized(np.asfortranarray(df.to_numpy()), 3))
    # the plate's size equal to the data's length, or the rows passed as the argument: fine
    assert _infer(_sized(y, 4))["mu"].shape == (1, 5)
    assert _infer(_sized(y[:3], 3))["mu"].shape == (1, 5)
    assert _infer(_sized(df, 4))["mu"].shape == (1, 5)


@th.model
def _ar1(x, y):
    b = th.sample("b", dist.Normal(0.0, 1.0))
    with th.plate("t", len(x)) as i:
        th.observe("y", dist.Normal(b * x[i], 1.0), y[i])


def test_arguments_sharing_memory_are_each_checked_for_their_length():
    """``ar1(y[:-1], y)`` (meant: ``y[1:]``): the observed ``y[i]`` is, by memory, also the
    rows of ``x = y[:-1]``, whose length fits the plate — but it is ``y``'s first 49 rows of
    50, so it is refused, naming both arguments; the intended program runs."""
    y = np.cumsum(np.random.default_rng(0).normal(size=50))
    with pytest.raises(ModelError, match=r"reads the first 49 rows of argument 'y', which has "
                                         r"50.*also those of argument 'x'.*\.copy\(\)"):
        _infer(_ar1(y[:-1], y), th.mh("b", th.drift(0.1)))
    assert _infer(_ar1(y[:-1], y[1:]), th.mh("b", th.drift(0.1)))["b"].shape == (1, 5)


@th.model
def _split(y, a, b):
    """Two plates observing rows [0, a) and [b, len(y)) of one argument."""
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("head", a) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[:a][i])
    with th.plate("tail", len(y) - b) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[b:][i])


def _chunk_step(t, prev, y):
    with th.plate("obs", 4) as j:
        th.observe("y", dist.Normal(prev, 1.0), y[t * 4 : (t + 1) * 4][j])
    return prev


@th.model
def _chunked(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    th.markov("s", _chunk_step, len(y) // 4, mu, y)


def test_plates_that_together_observe_every_row_are_accepted():
    """Plates over y[:10] and y[10:], or one plate per markov step over y[4t:4t+4], observe
    every row of y: the posterior of all the data (μ | y: N(Σy / (n + 0.01), 1 / (n + 0.01))).
    A split that leaves rows 10 and 11 unobserved is still refused, naming them."""
    y = np.random.default_rng(0).normal(3.0, 1.0, 20)
    prec = len(y) + 0.01
    mean = y.sum() / prec
    for prog in (_split(y, 10, 10), _chunked(y)):
        r = th.infer(prog, th.mh("mu", th.drift(0.5)), num_samples=3000, burn_in=300, seed=0,
                     progress=False)
        mu = r["mu"][0]
        se = np.sqrt(1 / prec / float(ess_of(mu)))
        assert abs(mu.mean() - mean) < 4 * se, (mu.mean(), mean)
    with pytest.raises(ModelError, match=r"plate \('head',\) has 10 element\(s\).*first 10 "
                                         r"rows of argument 'y', which has 20: the other 2"):
        _infer(_split(y, 10, 12))
