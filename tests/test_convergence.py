"""The convergence check at the end of ``th.infer`` (:mod:`thrifty.runtime.convergence`):
chains stuck in different modes are named, chains that mix are not, and the check reads the
small variables only."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import thrifty as th
from shared_models import mean_of_normals
from test_zero_acceptance import Y, normal_mean
from thrifty import dist
from thrifty.models import dp_means
from thrifty.runtime.convergence import CHECKED_ELEMENTS, MAX_ELEMENTS, check_convergence


@th.model
def two_modes():
    """mu² ≈ 4: modes at ±2, 40 prior sds apart for a walk of scale 0.1."""
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    sd = th.sample("sd", dist.HalfNormal(1.0))
    th.observe("y", dist.Normal(mu * mu, 0.1), 4.0)
    th.observe("z", dist.Normal(0.0, sd), 0.5)


def _convergence(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [x.message for x in w if issubclass(x.category, th.ConvergenceWarning)]


def test_chains_in_different_modes_are_named_and_chains_that_mix_are_not():
    r, found = _convergence(lambda: th.infer(
        two_modes(), th.cycle([th.mh("mu", th.drift(0.1)), th.mh("sd", th.drift(0.5))]),
        num_samples=2000, burn_in=500, chains=4, seed=0, progress=False))
    signs = np.sign(r["mu"].mean(axis=1))
    assert 0 < (signs > 0).sum() < 4  # (this seed's chains end in both modes)
    (w,) = found
    assert set(w.rhat) == {"mu"} and w.rhat["mu"] > 1.2, w.rhat
    assert "mu" in str(w) and "R-hat" in str(w)
    # sd mixes: the same run with mu's sign folded has no R-hat problem
    folded = {"mu": np.abs(r["mu"]), "sd": r["sd"]}
    _, quiet = _convergence(lambda: check_convergence(
        SimpleNamespace(samples=folded, num_chains=4, num_draws=2000)))
    assert all("R-hat" not in str(m) for m in quiet), quiet


def test_a_conjugate_model_that_mixes_gives_no_warning():
    _, found = _convergence(lambda: th.infer(normal_mean(Y), th.mh("x", th.drift(0.5)),
                                             num_samples=2000, burn_in=500, chains=2, seed=0,
                                             progress=False))
    assert found == []


def test_few_effective_draws_warn_with_one_chain():
    """A random walk: ESS of a few, and its two halves disagree (one chain's split R-hat);
    independent draws: no warning."""
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.normal(size=(1, 500)), axis=1)
    _, found = _convergence(lambda: check_convergence(
        SimpleNamespace(samples={"x": walk}, num_chains=1, num_draws=500)))
    (w,) = found
    assert set(w.ess) == {"x"} and w.ess["x"] < 100
    assert set(w.rhat) == {"x"} and w.rhat["x"] > 1.1 and "two halves" in str(w)
    _, quiet = _convergence(lambda: check_convergence(
        SimpleNamespace(samples={"x": rng.normal(size=(1, 500))}, num_chains=1, num_draws=500)))
    assert quiet == []


def test_one_chain_still_moving_from_its_start_is_named_with_its_burn_in():
    """MH of a fixed small scale from a start drawn from a wide prior, burn_in=0 (the default
    for a kernel that does not adapt): the sample mean is biased by the first draws, and the
    chain's split R-hat says so, with the burn-in it did not have (with 1 chain the R-hat
    check was skipped, and only the ESS was named)."""
    y = np.random.default_rng(0).normal(2.0, 1.0, 25)
    r, found = _convergence(lambda: th.infer(mean_of_normals(y), th.mh("mu", th.drift(0.3)),
                                             num_samples=1000, seed=0, progress=False))
    assert abs(r["mu"][0, 0] - 2.0) > 5  # (this seed starts far out)
    (w,) = found
    assert "mu" in w.rhat and "two halves disagree" in str(w) and "burn_in=0" in str(w)
    _, found = _convergence(lambda: th.infer(mean_of_normals(y), th.mh("mu", th.drift(0.3)),
                                             num_samples=1000, burn_in=500, seed=0,
                                             progress=False))
    assert all("R-hat" not in str(m) for m in found), found


def test_labels_and_memoized_values_are_not_read():
    """A DP mixture's labels are names (label switching permutes them) and its table means are
    keyed by them: neither is read, though their 'R-hat' would be large."""
    y = np.concatenate([np.full(10, -3.0), np.full(10, 3.0)])
    kernel = th.cycle([th.gibbs("data.z"), th.mh("mu", th.prior())])
    r, found = _convergence(lambda: th.infer(dp_means(y), kernel, num_samples=300, chains=2,
                                             seed=0, progress=False))
    assert r["data.z"].shape == (2, 300, 20)
    assert found == []


def test_the_check_reads_small_dense_variables_only():
    """Variables over MAX_ELEMENTS elements per draw (a plate's columns) are not read, at most
    CHECKED_ELEMENTS elements in all; elements missing from some draws (NaN) or constant are
    left out — so stuck elements there do not warn."""
    rng = np.random.default_rng(0)
    stuck = np.repeat(np.arange(2.0)[:, None, None], 400, axis=1)  # each chain its own value
    big = stuck + np.zeros((2, 400, MAX_ELEMENTS + 1))
    many = [stuck + rng.normal(size=(2, 400, MAX_ELEMENTS)) * 1e-3
            for _ in range(CHECKED_ELEMENTS // MAX_ELEMENTS + 1)]
    partial = np.where(rng.random((2, 400, 1)) < 0.5, np.nan, stuck)
    samples = {"big": big, **{f"m{k:02d}": a for k, a in enumerate(many)}}
    _, found = _convergence(lambda: check_convergence(
        SimpleNamespace(samples=samples, num_chains=2, num_draws=400)))
    (w,) = found
    named = {label.split("[")[0] for label in w.rhat}
    assert named == {f"m{k:02d}" for k in range(CHECKED_ELEMENTS // MAX_ELEMENTS)}
    assert len(w.rhat) == CHECKED_ELEMENTS
    samples = {"partial": partial, "constant": np.ones((2, 400))}
    _, found = _convergence(lambda: check_convergence(
        SimpleNamespace(samples=samples, num_chains=2, num_draws=400)))
    assert found == []


def test_the_check_reads_a_bounded_number_of_draws(monkeypatch):
    """Work, not time: whatever the run's length, the check reads at most CHECKED_DRAWS draws
    (200 a chain at least) of at most CHECKED_ELEMENTS elements."""
    from thrifty.diagnostics import _arviz
    from thrifty.runtime.convergence import CHECKED_DRAWS

    seen = []
    real = _arviz.rhat_ess

    def spy(values):
        seen.append(values.shape)
        return real(values)

    monkeypatch.setattr(_arviz, "rhat_ess", spy)
    rng = np.random.default_rng(0)
    for chains, draws in ((4, 100_000), (40, 1_000)):
        samples = {"x": rng.normal(size=(chains, draws, 8))}
        check_convergence(SimpleNamespace(samples=samples, num_chains=chains, num_draws=draws))
    (c0, n0, k0), (c1, n1, _) = seen
    assert c0 * n0 <= CHECKED_DRAWS and n0 >= 200 and k0 == 8
    assert n1 == 200 and c1 == 40  # at least 200 a chain


def test_rhat_and_ess_are_arviz_rank_methods():
    """The vectorised rank normalisation gives ArviZ's rank R-hat and bulk ESS (ties
    included: discrete draws)."""
    from thrifty.diagnostics._arviz import rhat_ess

    array_stats = pytest.importorskip("arviz_stats.base").array_stats  # (ArviZ 1.x)

    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 4, 500))
    x[1, 1] += 0.5  # a shifted chain
    x[2] = np.cumsum(x[2], axis=-1)  # a random walk
    x[3] = rng.integers(0, 3, size=(4, 500))  # ties
    r, e = rhat_ess(np.moveaxis(x, 0, 2))
    np.testing.assert_allclose(r, array_stats.rhat(x), rtol=1e-12)
    np.testing.assert_allclose(e, array_stats.ess(x, method="bulk"), rtol=1e-12)
