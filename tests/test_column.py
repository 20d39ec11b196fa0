"""Copy-on-write columns (``thrifty.core.column``): a shared column never writes into the array
it shares; its changes live in a patch until it owns a copy.  Checked against plain arrays on
random sequences of reads and writes by every kind of index."""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.core.column import Column


def random_index(rng, n):
    kind = rng.integers(4)
    if kind == 0:
        return int(rng.integers(n))
    if kind == 1:
        return slice(0, n)
    if kind == 2:
        return np.sort(rng.choice(n, size=int(rng.integers(1, 4)), replace=False))
    return np.sort(rng.choice(n, size=int(rng.integers(n // 2, n)), replace=False))


@pytest.mark.parametrize("shape", [(), (3,)])
def test_shared_columns_behave_like_copies(shape):
    rng = np.random.default_rng(0)
    n = 200
    base = rng.normal(size=(n,) + shape)
    frozen = base.copy()
    a = Column(base)
    b = a.share()  # two clones of a forked node: neither writes into ``base``
    want_a, want_b = base.copy(), base.copy()
    for _ in range(400):
        col, want = (a, want_a) if rng.random() < 0.5 else (b, want_b)
        idx = random_index(rng, n)
        if rng.random() < 0.5:
            v = rng.normal(size=np.shape(want[idx]))
            v = float(v) if v.ndim == 0 else v
            col.put(idx, v)
            want[idx] = v
        np.testing.assert_array_equal(col.take(idx), want[idx])
        if not shape and np.ndim(idx) == 0 and not isinstance(idx, slice):
            assert col.get(idx) == want[idx]
    np.testing.assert_array_equal(a.array(), want_a)
    np.testing.assert_array_equal(b.array(), want_b)
    np.testing.assert_array_equal(base, frozen)  # the shared array never changed


def test_a_patch_is_copied_once_it_grows():
    n = 1_000
    base = np.zeros(n)
    col = Column(base).share()
    for e in range(50):
        col.put(e, 1.0)
    assert not col.owned and col.data is base and len(col.patch) == 50
    for e in range(50, 100):
        col.put(e, 1.0)
    assert col.owned and col.data is not base and col.patch is None  # n/16 reached: one copy
    assert base.sum() == 0 and col.data.sum() == 100


def test_a_full_write_into_a_shared_column_copies():
    col = Column(np.arange(10.0)).share()
    col.put(slice(0, 10), np.ones(10))
    assert col.owned and col.array().sum() == 10


def test_forked_plate_with_a_mem_and_a_structure_change():
    """``th.one`` on a choice that creates another: provisional commits into forks, plates
    re-executed in full on the fork (a slice written into a shared column)."""

    @th.model
    def m(y):
        c = th.sample("c", dist.Bernoulli(0.5))
        mu = th.sample("e", dist.Normal(1.0, 1.0)) if c else 0.0
        means = th.mem("m", lambda k: dist.Normal(0.0, 1.0))
        with th.plate("data", len(y)) as i:
            k = th.sample("k", dist.Categorical(np.ones(2) / 2))
            th.observe("y", dist.Normal(mu + means(k), 1.0), y[i])

    kernel = th.cycle([th.mh(th.one("c")), th.lmh("c"), th.mh("m", th.drift(0.3))])
    r = th.infer(m(np.zeros(30)), kernel, num_samples=200, seed=0, progress=False)
    assert r["c"].shape == (1, 200) and np.isfinite(r.sample_stats["lp"]).all()
