"""A kernel that accepts nothing during the burn-in says so (a chain that never moved).

Before, ``th.subsampled_mh("w", proxy="taylor")`` with its old default ``drift(0.1)`` (13
posterior sds on a tall logistic regression) accepted 0 of 6,600 proposals and returned every
draw equal to its start, with no word.  Now ``th.infer`` raises a ``ZeroAcceptanceWarning``
naming the kernel, its sites and the chains, whether the chains ran in this process or in
workers; a kernel that moves, a kernel whose burn-in is too short to tell (fewer than
``ZERO_ACCEPTANCE_MIN_PROPOSALS`` proposals), and a run without burn-in do not warn.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import thrifty as th
from thrifty import dist


@th.model
def normal_mean(y):
    x = th.sample("x", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(x, 1.0), y[i])


Y = np.random.default_rng(0).normal(0.5, 1.0, size=20)


@pytest.mark.parametrize("chains, workers", [(1, 1), (2, 2)])
def test_a_kernel_stuck_at_zero_acceptance_through_the_burn_in_warns(chains, workers):
    """drift(1e6) on a posterior of sd 0.2: P(accept) ≈ 1e-6 per step, so 0 of 200 (the
    chains in this process, or in worker processes)."""
    k = th.mh("x", th.drift(1e6))
    with pytest.warns(th.ZeroAcceptanceWarning) as rec:
        r = th.infer(normal_mean(Y), k, num_samples=20, burn_in=200, chains=chains, seed=0,
                     workers=workers, progress=False)
    (w,) = [x for x in rec if issubclass(x.category, th.ZeroAcceptanceWarning)]
    msg = str(w.message)
    assert "mh('x', drift(1000000.0))" in msg  # the kernel
    assert "('x',)" in msg  # the site
    assert ("chains 0, 1" if chains == 2 else "chain 0") in msg
    assert "200 proposals" in msg
    st = r.stats[k.label()]
    assert [(c["burn_in"]["proposed"], c["burn_in"]["accepted"]) for c in st["chains"]] == [
        (200, 0)] * chains
    assert (st["burn_in"]["steps"], st["burn_in"]["proposed"], st["burn_in"]["accepted"]) == (
        200 * chains, 200 * chains, 0)
    assert st["steps"] == st["proposed"] == 20 * chains  # the sampling steps


def test_the_warning_names_the_sites_of_a_kernel_in_a_cycle_and_only_that_kernel():
    @th.model
    def two(y):
        a = th.sample("a", dist.Normal(0.0, 1.0))
        b = th.sample("b", dist.Normal(0.0, 1.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(a + b, 1.0), y[i])

    good, bad = th.mh("a", th.drift(0.3)), th.mh("b", th.drift(1e6))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        th.infer(two(Y), th.cycle([good, bad]), num_samples=10, burn_in=100, seed=0,
                 progress=False)
    stuck = [str(x.message) for x in rec if issubclass(x.category, th.ZeroAcceptanceWarning)]
    assert len(stuck) == 1 and "mh('b', drift(1000000.0))" in stuck[0] and "('b',)" in stuck[0]


def test_no_warning_when_the_kernel_moves_or_the_burn_in_says_too_little():
    with warnings.catch_warnings():
        warnings.simplefilter("error", th.ZeroAcceptanceWarning)
        th.infer(normal_mean(Y), th.mh("x", th.drift(0.3)), num_samples=20, burn_in=200,
                 seed=0, progress=False)
        # 20 proposals: too few to tell a stuck chain from a low acceptance rate
        th.infer(normal_mean(Y), th.mh("x", th.drift(1e6)), num_samples=20, burn_in=20,
                 seed=0, progress=False)
        # no burn-in: nothing to judge (the draws themselves show it)
        th.infer(normal_mean(Y), th.mh("x", th.drift(1e6)), num_samples=200, seed=0,
                 progress=False)
