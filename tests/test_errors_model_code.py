"""Errors of the model's own code get messages that name the plate/site and the fix,
and Geweke's test handles priors without finite variance.

Before: a prior vector of the wrong length gave NumPy's bare matmul error; a Python ``if`` on a
plate value gave "truth value of an array is ambiguous"; data not indexed by the plate's index
gave a hint about plate values used after the plate (the wrong cause); Geweke tested x and x²
of a HalfCauchy site (means that do not exist) without a word.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.diagnostics import geweke
from thrifty.errors import ModelError

X = np.random.default_rng(0).normal(size=(20, 5))
Y = (X[:, 0] > 0).astype(float)


def run(model):
    return th.infer(model, th.lmh(), num_samples=5, progress=False)


def test_prior_vector_of_wrong_length_names_the_plate_and_choice():
    @th.model
    def m(X, y):
        w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Bernoulli(logits=X[i] @ w), y[i])

    with pytest.raises(ModelError, match=r"plate \('data',\).*matmul.*\('w',\).*wrong length"):
        run(m(X, Y))


def test_shape_error_outside_plates_names_the_last_choice():
    @th.model
    def m(X):
        w = th.sample("w", dist.MvNormal(np.zeros(3), np.eye(3)))
        th.observe("s", dist.Normal((X @ w).sum(), 1.0), 0.0)

    with pytest.raises(ModelError, match=r"model code raised ValueError.*\('w',\)"):
        run(m(X))


@pytest.mark.parametrize("in_plate", [False, True])
def test_numpyro_obs_keyword_says_to_use_observe(in_plate):
    """NumPyro's ``sample(name, d, obs=y)`` was a TypeError wrapped with the hint about shapes
    and prior vectors of the wrong length, which has nothing to do with it."""

    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        if in_plate:
            with th.plate("data", len(y)) as i:
                th.sample("y", dist.Normal(mu, 1.0), obs=y[i])
        else:
            th.sample("y", dist.Normal(mu, 1.0), obs=y)

    with pytest.raises(ModelError, match=r"th.sample takes no obs=.*th.observe\(name, d, value\)"
                       ) as err:
        run(m(Y))
    assert "wrong length" not in str(err.value)


def test_python_if_on_a_plate_value():
    @th.model
    def m(y):
        with th.plate("data", len(y)) as i:
            z = th.sample("z", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(1.0 if z > 0 else -1.0, 1.0), y[i])

    with pytest.raises(ModelError,
                       match=r"plate \('data',\).*`if`.*\('data', \*, 'z'\).*np\.where"):
        run(m(Y))


def test_python_if_on_a_vector_or_on_plate_values_after_the_plate():
    """Outside plates the same NumPy error gets its own hint (not the shapes hint)."""

    @th.model
    def vec():
        w = th.sample("w", dist.Normal(np.zeros(3), 1.0))
        th.observe("y", dist.Normal(1.0 if w > 0 else -1.0, 1.0), 0.0)

    with pytest.raises(ModelError, match=r"`if`.*\('w',\).*\.any\(\) / \.all\(\).*np\.where"):
        run(vec())

    @th.model
    def after(y):
        with th.plate("data", len(y)) as i:
            z = th.sample("z", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(z, 1.0), y[i])
        if z > 0:
            th.observe("s", dist.Normal(0.0, 1.0), 0.0)

    with pytest.raises(ModelError, match=r"`if`.*used after it") as e:
        run(after(Y))
    assert "shapes" not in str(e.value)


def test_unindexed_data_in_a_plate_gets_the_right_hint():
    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", len(y)):
            th.observe("y", dist.Normal(mu, 1.0), y)  # y, not y[i]

    with pytest.raises(ModelError, match="index the data with the plate's index") as e:
        run(m(Y))
    assert "after it" not in str(e.value)  # not the hint about values used after the plate


def test_values_used_after_the_plate_keep_their_hint():
    @th.model
    def m(y):
        with th.plate("data", len(y)) as i:
            z = th.sample("z", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(z, 1.0), y[i])
        th.observe("s", dist.Normal(z[3], 1.0), 0.0)  # z has no element 3 in a partial run

    with pytest.raises(ModelError, match="after it"):
        run(m(Y))


@th.model
def half_cauchy_scale():
    tau = th.sample("tau", dist.HalfCauchy(1.0))
    th.observe("y", dist.Normal(0.0, tau), 0.3)


def test_geweke_uses_bounded_functions_for_a_prior_without_variance():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = geweke(half_cauchy_scale(), th.mh("tau", th.drift(1.0)), num_samples=5000, seed=0)
    assert set(r.z) == {"arctan(tau)", "tau>median"}
    assert any("'tau'" in str(x.message) and "HalfCauchy" in str(x.message) for x in w)
    assert r.min_p > 1e-3  # a correct kernel: no false alarm
