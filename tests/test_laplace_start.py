"""The Laplace start costs a few full-data passes for GLM weights, and is bounded otherwise.

Before, ``th.mh("w", th.drift())`` found its start by BFGS on finite differences, each
evaluation one execution of the whole program: 580 full executions of a logistic regression
at N = 2·10⁴, d = 5 (2,400 at N = 10⁵, d = 10: 10.7 s on a quiet machine).
Now GLM weights take Newton on the data with the families' derivatives (the set-up ``th.smh``
already had): three executions and a handful of NumPy passes over X, whatever N and d.
The work is counted here by executing plate elements (every ``Run`` of the start), not by
time; ``benchmarks/laplace_start.py`` has the timings.
"""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.core.run import Run
from thrifty.core.simulate import initialize
from thrifty.datasets import synthetic_logistic
from thrifty.inference.proposals import laplace_start as ls
from thrifty.models.logistic import laplace, logistic_regression


@pytest.fixture
def counted(monkeypatch):
    """Plate elements executed by every run of the program (and the number of runs)."""
    work = {"runs": 0, "elements": 0}
    execute = Run.execute

    def counting(self):
        out = execute(self)
        work["runs"] += 1
        work["elements"] += self.work_elements
        return out

    monkeypatch.setattr(Run, "execute", counting)
    return work


def start(program, kernel, work, seed=0):
    rng = np.random.default_rng(seed)
    trace = initialize(program, rng)
    kernel.prepare_all(trace)
    work["runs"] = work["elements"] = 0
    kernel.start_all(trace, rng, {})
    return trace


@pytest.mark.parametrize("n", [5_000, 20_000])
def test_the_glm_start_costs_a_few_full_data_passes(counted, n):
    """Four executions (two to find the GLM sections and a lazy one, with no plate element, to
    check that they and the global terms are all of w; one to move the chain) — 3N plate
    elements at N = 5·10³ and 2·10⁴ alike — and at most 20 Newton passes over X; the chain
    starts within 5 posterior sds of the mode (a Laplace draw: |z_j| > 5 has probability
    6e-7) and the walk's covariance is the Laplace covariance of a NumPy Newton."""
    X, y, _ = synthetic_logistic(n, 5, seed=0)
    k = th.mh("w", th.drift())
    trace = start(logistic_regression(X, y), k, counted)
    assert counted["elements"] <= 3 * n and counted["runs"] <= 4, counted
    (cost,) = k.stats.start
    assert cost["method"] == "glm"
    assert cost["executions"] == counted["runs"] and cost["elements"] == counted["elements"]
    assert cost["newton_passes"] <= 20
    mode, cov = laplace(X, y)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(trace["w"] - mode) < 5 * sd)
    a = k.proposal.adapters[(("w",),)]
    np.testing.assert_allclose(a.chol @ a.chol.T, cov, rtol=1e-6, atol=1e-12)


def test_the_taylor_proxy_keeps_the_set_up_of_the_start(counted):
    """subsampled_mh(proxy="taylor") starts the same way and its steps reuse that set-up:
    no O(N) set-up in 20 steps, no execution of the whole plate."""
    X, y, _ = synthetic_logistic(20_000, 5, seed=0)
    k = th.subsampled_mh("w", proxy="taylor")
    trace = start(logistic_regression(X, y), k, counted)
    assert counted["elements"] <= 3 * len(y)
    assert k.stats.start[0]["method"] == "glm"
    rng = np.random.default_rng(1)
    counted["elements"] = 0
    for _ in range(20):
        k.step(trace, rng)
    assert k.stats.extra["setups"] == 0
    assert counted["elements"] < len(y)


@th.model
def bernoulli_regression(X, y):
    """Not GLM terms: thrifty sees a Bernoulli whose logits happen to be linear in w."""
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), 0.1 * np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Bernoulli(logits=X[i] @ w), y[i])


def test_the_fallback_for_other_observations_is_bounded(counted, monkeypatch):
    """After the two executions that find no GLM sections, BFGS on executions stops at
    MAX_EXECUTIONS_PER_DIM·(d + 1) executions or MAX_ELEMENTS plate elements, then 2d² + 1
    executions for the Hessian and one or two to move: here (limits lowered to 10 per
    dimension, then to 25·N elements) at most 2 + 40 + 19 + 2 executions."""
    X, y, _ = synthetic_logistic(2_000, 3, seed=0)
    n, d = len(y), 3
    k = th.mh("w", th.drift())
    start(bernoulli_regression(X, y), k, counted)
    unbounded = counted["runs"]
    assert k.stats.start[0]["method"] == "bfgs"
    assert unbounded > 40  # (so the limits below bind)
    monkeypatch.setattr(ls, "MAX_EXECUTIONS_PER_DIM", 10)
    k = th.mh("w", th.drift())
    start(bernoulli_regression(X, y), k, counted)
    assert counted["runs"] <= 2 + 10 * (d + 1) + 2 * d * d + 1 + 2, counted
    monkeypatch.setattr(ls, "MAX_EXECUTIONS_PER_DIM", 1000)
    monkeypatch.setattr(ls, "MAX_ELEMENTS", 25 * n)
    k = th.mh("w", th.drift())
    start(bernoulli_regression(X, y), k, counted)
    assert counted["elements"] <= (2 + 25 + 2 * d * d + 1 + 2) * n, counted


def test_a_mode_at_the_boundary_of_the_support_gives_no_start_covariance():
    """Eight schools, seed 0: tau's conditional mode given the first state is at 0.0006, the
    Hessian's difference step (0.03) leaves the support, and −log p = BIG there once made the
    curvature 1e303 — a start scale of 1e-13 that the burn-in never undid (tau stuck at 0.001,
    acceptance 0.997).  A step off the support now means no quadratic fit: the chain starts
    where it is, with the proposal's own scale."""
    from test_gradient import S8, Y8, schools

    k = th.cycle([th.mh("mu", th.drift(1.0)), th.mh("tau", th.drift()),
                  th.mh("school.eta", th.drift(1.0))])
    r = th.infer(schools(Y8, S8), k, num_samples=1, burn_in=2, seed=0, progress=False,
                 workers=1)
    assert r.stats["mh('tau', drift())"]["proposal"][0]["tau"]["scale"] > 1e-3
