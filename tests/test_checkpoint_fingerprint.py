"""A checkpoint never resumes a different run (issue 12, defect 1): new data, another N or an
edited model body under the same name and path is an error saying what differs."""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from thrifty import dist


@th.model
def normal_mean(y):
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


def _run(prog, path, n=200):
    return th.infer(prog, th.mh("mu", th.drift(0.5)), num_samples=n, seed=0, progress=False,
                    checkpoint=str(path))


def test_new_data_under_the_same_checkpoint_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    y = np.random.default_rng(0).normal(size=50)
    first = _run(normal_mean(y), path)
    again = _run(normal_mean(y), path)  # same run: resumed, same draws
    np.testing.assert_array_equal(first["mu"], again["mu"])
    with pytest.raises(ValueError, match=r"the data .* differ.*start afresh"):
        _run(normal_mean(y + 5.0), path)
    with pytest.raises(ValueError, match=r"the data .* differ"):
        _run(normal_mean(y[:40]), path)  # another N


def test_an_edited_model_body_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    y = np.zeros(10)

    def body_a(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    def body_b(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu, 2.0), y[i])

    body_b.__name__ = body_a.__name__ = "same_name"
    _run(th.model(body_a)(y), path)
    with pytest.raises(ValueError, match="the model's code differs"):
        _run(th.model(body_b)(y), path)
