"""Selections: address and name patterns, one / each / ordered_range, unions."""

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.core.simulate import initialize
from thrifty.inference.selection import select


@th.model
def structured(n, T):
    th.sample("mu", dist.Normal(0.0, 1.0))
    th.sample(("flip", 0), dist.Bernoulli(probs=0.5))
    th.sample(("flip", 1), dist.Bernoulli(probs=0.5))
    with th.plate("data", n):
        th.sample("z", dist.Bernoulli(probs=0.5))
        th.sample("u", dist.Normal(0.0, 1.0))

    def step(t, prev):
        return th.sample("x", dist.Normal(0.0, 1.0))

    th.markov("s", step, T)


@pytest.fixture
def trace(rng):
    return initialize(structured(5, 4), rng)


def resolved(trace, sel):
    cs = select(sel).resolve(trace) if not hasattr(sel, "resolve") else sel.resolve(trace)
    groups = sorted(
        (g.plate_addr, g.rel, None if g.elems is None else tuple(g.elems.tolist()))
        for g in cs.groups
    )
    return cs.scalars, groups, cs.count


def test_address_prefix(trace):
    assert resolved(trace, "mu")[0] == [("mu",)]
    assert resolved(trace, "flip")[0] == [("flip", 0), ("flip", 1)]
    assert resolved(trace, ("flip", 1))[0] == [("flip", 1)]
    scal, groups, count = resolved(trace, "data")
    assert scal == [] and groups == [(("data",), ("u",), None), (("data",), ("z",), None)]
    assert count == 10
    assert resolved(trace, ("data", 3))[1] == [
        (("data",), ("u",), (3,)),
        (("data",), ("z",), (3,)),
    ]
    assert resolved(trace, ("data", 3, "z"))[2] == 1
    assert resolved(trace, "s")[0] == [("s", t, "x") for t in range(4)]
    assert resolved(trace, ("s", 2))[0] == [("s", 2, "x")]


def test_name_patterns(trace):
    assert resolved(trace, "data.z")[1] == [(("data",), ("z",), None)]
    assert resolved(trace, "s.x")[0] == [("s", t, "x") for t in range(4)]
    assert resolved(trace, "flip.1")[0] == [("flip", 1)]


def test_union_and_everything(trace):
    scal, _, count = resolved(trace, ["mu", "s.x"])
    assert scal == [("mu",)] + [("s", t, "x") for t in range(4)] and count == 5
    assert select(()).resolve(trace).count == trace.n_latent


def test_one_picks_a_block_uniformly(trace):
    cs = th.one("data").resolve(trace)
    assert cs.n_blocks() == 5  # plate elements are the blocks, with all their sites
    rng = np.random.default_rng(0)
    seen = np.zeros(5)
    for _ in range(2000):
        block = cs.pick_block(rng)
        elems = {int(g.elems[0]) for g in block.groups}
        assert len(elems) == 1 and len(block.groups) == 2
        seen[elems.pop()] += 1
    assert seen.min() > 300  # uniform over 5 blocks: 400 each expected
    steps = th.one("s").resolve(trace)
    assert steps.n_blocks() == 4
    assert len(steps.pick_block(rng).scalars) == 1


def test_ordered_range(trace):
    cs = th.ordered_range("s", 1, 2).resolve(trace)
    assert cs.scalars == [("s", 1, "x"), ("s", 2, "x")]
    sel = th.ordered_range("s", 1, 2)
    assert sel.matches(("s", 2, "x"), ("s", "x")) and not sel.matches(("s", 3, "x"), ("s", "x"))
    with pytest.raises(ValueError, match="hi"):
        th.ordered_range("s", 3, 1)


def test_kernels_accept_every_selection_form(rng):
    prog = structured(5, 4)
    for k in (
        th.mh(th.each("s"), th.drift(0.5)),
        th.mh(th.one("data"), th.prior()),
        th.mh(th.ordered_range("s", 0, 1), th.drift(0.5)),
        th.gibbs(th.one("data.z")),
        th.lmh(["mu", "s"]),
        th.mixture([(0.5, th.lmh()), (0.5, th.gibbs("data.z"))]),
    ):
        r = th.infer(prog, k, num_samples=30, seed=1, progress=False)
        assert r["mu"].shape == (1, 30)
        stats = r.stats[k.label()]
        assert stats["steps"] == 30


def test_mixture_probabilities():
    with pytest.raises(ValueError, match="probabilities"):
        th.mixture([(-1.0, th.lmh())])
    m = th.mixture([(1.0, th.lmh()), (3.0, th.lmh("mu"))])
    assert m.probs.tolist() == [0.25, 0.75]
