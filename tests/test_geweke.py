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

import math

import numpy as np
import pytest

import thrifty as th
from stat_helpers import BrokenMH, LMHWithoutSizeCorrection
from thrifty import dist
from thrifty.diagnostics import geweke

P_OK = 1e-4  # correct kernels: min p over the test functions
P_BROKEN = 1e-6  # broken kernels: min p must fall below this
N = 20000  # successive-conditional steps (and prior draws)
N_BROKEN = 10000  # broken kernels give p < 1e-100 at N = 20000: half is plenty

Y = np.array([0.3, -0.4, 1.1])  # only fixes the number of observations; y is simulated


@th.model
def small(y):
    """sigma ~ Gamma(5, 5) (mean 1, sd 0.45) rather than a wider prior: with sigma near 0 the
    posterior is so narrow that prior proposals are rarely accepted, the successive-conditional
    chain makes rare long sojourns there and the ESS-based z-scores become overdispersed (sd of
    z over 15 seeds ≈ 1.4 for Gamma(2, 2) with prior proposals; ≤ 1.1 with Gamma(5, 5))."""
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    sigma = th.sample("sigma", dist.Gamma(5.0, 5.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, np.maximum(sigma, 1e-9)), y[i])
    return mu, sigma


@th.model
def switch(y=1.5):
    """Fig. 1 of paper 000 with a moderate observation: b decides whether mu exists."""
    b = th.sample("b", dist.Bernoulli(probs=0.5))
    mu = 1.0 if b else th.sample("mu", dist.Gamma(1.0, 1.0))
    th.observe("y", dist.Normal(mu, 1.0), y)
    return mu


def _exp_mu(k):
    return lambda v: math.exp(-k * v["mu"]) if "mu" in v else math.nan


# Test functions for the structure-change model.  The defaults (mu, mu²) are not usable here:
# mu | b = 0 has an Exp(1) prior tail, and once the successive-conditional chain sits at a
# large mu (y is redrawn next to it) prior proposals are almost all rejected, so the chain
# makes rare, long excursions into the tail.  The estimators of E[mu] and E[mu²] are then
# heavy-tailed and their ESS-based z-scores are miscalibrated (sd ≈ 1.7 and 2.5 over 40 seeds,
# mean ≈ −1 and −2) — for a hand-written exact LMH of this program just as for th.lmh().
# Bounded functions are calibrated (exp(−mu): sd 0.98); the indicator b carries the
# structure.  (mu is NaN where it does not exist; those draws are left out.)
SWITCH_FUNCTIONS = {"b": lambda v: v["b"], "exp(-mu)": _exp_mu(1), "exp(-2mu)": _exp_mu(2)}

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


def _functions(model):
    return SWITCH_FUNCTIONS if model is switch else None


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_kernel_passes(name):
    model, make = CORRECT[name]
    g = geweke(_program(model), make(), num_samples=N, seed=41, functions=_functions(model))
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
    g = geweke(_program(model), make(), num_samples=N_BROKEN, seed=42, functions=_functions(model))
    assert g.min_p < P_BROKEN, f"{name}: a broken kernel passed: {g}"


def test_broken_mh_with_symmetric_proposal_is_correct():
    """Sanity of the negative control: with drift proposals the q terms cancel, so the
    'broken' acceptance is the right one and must pass — the failure above is the q terms."""
    k = th.cycle([BrokenMH("mu", th.drift(0.7)), BrokenMH("sigma", th.drift(0.5))])
    g = geweke(small(Y), k, num_samples=N, seed=43)
    assert g.min_p > P_OK, g
