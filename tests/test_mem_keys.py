"""Memoized functions read with keys of any hashable kind (paper 000 §4.1): the keys a plate's
elements read are stored per element, and must be stored as they were read — check mode
(:mod:`thrifty.core.check`) compares the stored keys and reference counts with a full execution
of the program after every step."""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist
from thrifty.core.column import Column

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
