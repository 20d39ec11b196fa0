"""Geweke (2004) joint-distribution tests of the kernels (thrifty.diagnostics.geweke).

``geweke(program, kernel, num_samples, seed)`` compares the marginal-conditional simulator
(independent prior draws) with the successive-conditional one (kernel step on x given y, then
fresh y given x) through z-tests of test functions (default: every scalar latent and its
square), each with an ESS-based standard error.

Thresholds: a correct kernel must give min p > 1e-4 over its m test functions (family-wise
false-alarm rate ≤ m · 1e-4 by Bonferroni; m = 4 here); a deliberately broken kernel must give
min p < 1e-6.  Fixed seeds.

The drift tests use a guard on sigma in the likelihood (a proposal sigma ≤ 0 has prior density
0 and is rejected whatever the guard returns; see test_posteriors.py for the engine bug that
makes it necessary).
"""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from stat_helpers import BrokenMH, LMHWithoutSizeCorrection
from thrifty import dist
from thrifty.diagnostics import geweke

P_OK = 1e-4  # correct kernels: min p over the test functions
P_BROKEN = 1e-6  # broken kernels: min p must fall below this
N = 20000  # successive-conditional steps (and prior draws)

Y = np.array([0.3, -0.4, 1.1])  # only fixes the number of observations; y is simulated


@th.model
def small(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    sigma = th.sample("sigma", dist.Gamma(2.0, 2.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, np.maximum(sigma, 1e-300)), y[i])
    return mu, sigma


@th.model
def switch(y=1.5):
    """Fig. 1 of paper 000 with a moderate observation: b decides whether mu exists."""
    b = th.sample("b", dist.Bernoulli(probs=0.5))
    mu = 1.0 if b else th.sample("mu", dist.Gamma(1.0, 1.0))
    th.observe("y", dist.Normal(mu, 1.0), y)
    return mu


CORRECT = {
    "mh-prior-cycle": (small, lambda: th.cycle([th.mh("mu"), th.mh("sigma")])),
    "mh-drift-cycle": (
        small,
        lambda: th.cycle([th.mh("mu", th.drift(0.7)), th.mh("sigma", th.drift(0.5))]),
    ),
    "mh-drift-block": (small, lambda: th.mh(["mu", "sigma"], th.drift(0.4))),
    "lmh": (small, lambda: th.lmh()),
    "lmh-structure": (switch, lambda: th.lmh()),
}


def _program(model):
    return model(Y) if model is small else model()


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_kernel_passes(name):
    model, make = CORRECT[name]
    g = geweke(_program(model), make(), num_samples=N, seed=41)
    assert len(g.p) >= 2, g
    assert g.min_p > P_OK, f"{name}: {g}"


BROKEN = {
    # prior proposals accepted with p(x', y) / p(x, y) only: the q terms are missing
    "mh-ignoring-q": (small, lambda: th.cycle([BrokenMH("mu"), BrokenMH("sigma")])),
    # LMH without |x| / |x'|: samples ∝ |x| p(x, y) (b = 0 traces weigh twice)
    "lmh-no-size-factor": (switch, lambda: LMHWithoutSizeCorrection()),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_kernel_fails(name):
    model, make = BROKEN[name]
    g = geweke(_program(model), make(), num_samples=N, seed=42)
    assert g.min_p < P_BROKEN, f"{name}: a broken kernel passed: {g}"


def test_broken_mh_with_symmetric_proposal_is_correct():
    """Sanity of the negative control: with drift proposals the q terms cancel, so the
    'broken' acceptance is the right one and must pass — the failure above is the q terms."""
    k = th.cycle([BrokenMH("mu", th.drift(0.7)), BrokenMH("sigma", th.drift(0.5))])
    g = geweke(small(Y), k, num_samples=N, seed=43)
    assert g.min_p > P_OK, g
