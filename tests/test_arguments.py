"""A program that changes its own arguments in place so that its next execution reads other data
is refused at set-up, naming the argument (:mod:`thrifty.runtime.arguments`); an argument used as
a scratch buffer every execution refills is a rewrite of the model (``tests/test_rewrites.py``,
"argument buffer": the exact posterior)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.errors import ModelError
from thrifty.runtime import arguments


def test_docstring_examples_run():
    result = doctest.testmod(arguments, verbose=False, report=False)
    assert result.attempted > 0 and result.failed == 0


def test_a_write_through_the_view_of_every_element_is_refused_naming_the_argument():
    """``xi = x[i]; xi -= 0.1``: under the slice of every element x[i] is a view of the
    argument, under a subset's integer array a copy — the set-up's runs of single elements
    then scored otherwise, and the error blamed elements reading each other's values while
    the caller's x had been shifted four times.  The error now names the write as the likely
    cause (raised from the error it led to)."""
    y = np.array([0.5, -0.2, 1.1, 0.3, -0.7])

    @th.model
    def m(y, x):
        with th.plate("data", len(y)) as i:
            w = th.sample("w", dist.Normal(0.0, 1.0))
            xi = x[i]
            xi -= 0.1
            th.observe("y", dist.Normal(w + xi, 1.0), y[i])

    with pytest.raises(ModelError, match=r"changed its argument 'x' in place") as err:
        th.infer(m(y, np.linspace(0.0, 1.0, 5)), th.mh("data.w"), num_samples=5, seed=0,
                 progress=False)
    assert isinstance(err.value.__cause__, ModelError)  # the plate check's finding


def test_a_write_that_fails_nothing_else_is_refused_too():
    """``x *= 2`` outside any plate: every execution doubles the data again (a model that
    changes as it is sampled) though every check of how plates are used passes."""

    @th.model
    def m(x):
        x *= 2.0
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.observe("x", dist.Normal(mu, 1.0), x[0])

    with pytest.raises(ModelError, match=r"changed its argument 'x' in place") as err:
        th.infer(m(np.ones(3)), th.mh("mu"), num_samples=5, seed=0, progress=False)
    assert err.value.__cause__ is None


def test_reading_arguments_and_writing_copies_passes():
    """The same models computing into new arrays run, and leave the caller's data as it was."""
    y, x = np.array([0.5, -0.2, 1.1]), np.linspace(0.0, 1.0, 3)

    @th.model
    def m(y, x):
        x = x * 2.0
        with th.plate("data", len(y)) as i:
            w = th.sample("w", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(w + (x[i] - 0.1), 1.0), y[i])

    r = th.infer(m(y, x), th.mh("data.w"), num_samples=20, seed=0, progress=False)
    assert r["data.w"].shape == (1, 20, 3)
    np.testing.assert_array_equal(x, np.linspace(0.0, 1.0, 3))
