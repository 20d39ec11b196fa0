"""``th.drift`` on a choice whose support has fewer dimensions than its values.

A random walk in a simplex's K coordinates leaves the simplex with probability one; inside the
family's tolerance of 1e-6 it samples a slab around it, not the distribution (a Dirichlet(1, 1,
1) gave E w = (0.62, 0.15, 0.24) with 858 moves in 4,000).  The walk moves such a choice in its
unconstrained coordinates, with the Jacobians' ratio as its correction.  Checks: the Beta
marginals of a Dirichlet posterior (mean z and KS, thresholds of ``stat_helpers``), the
correlation of an LKJ factor, the same draws without the Jacobian failing (negative control),
and a clear error where the walk cannot run (plate elements)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import check_continuous, mean_z, run, z_threshold
from thrifty import dist
from thrifty.errors import SelectionError
from thrifty.transforms import StickBreaking

ALPHA = np.array([1.0, 2.0, 3.0])
Y = np.array([0, 0, 1, 2, 2, 2, 1, 0, 2, 2])
POST = ALPHA + np.bincount(Y, minlength=3)  # Dirichlet(α + counts)


@th.model
def weights(y):
    w = th.sample("w", dist.Dirichlet(ALPHA))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Categorical(w), y[i])


def _marginals_z(w) -> np.ndarray:
    a0 = POST.sum()
    return np.array([mean_z(w[..., k], POST[k] / a0,
                            np.sqrt(POST[k] * (a0 - POST[k]) / (a0**2 * (a0 + 1))))
                     for k in range(3)])


@pytest.mark.parametrize("proposal", [th.drift(), th.drift(0.4)], ids=["adaptive", "fixed"])
def test_drift_on_a_simplex_samples_the_dirichlet_posterior(proposal):
    r = run(weights(Y), th.mh("w", proposal), 6000, burn_in=1000, seed=4)
    w = r["w"]
    assert np.allclose(w.sum(-1), 1.0) and (w > 0).all()
    a0 = POST.sum()
    for k in range(3):  # each weight: Beta(α_k, α_0 − α_k)
        b = stats.beta(POST[k], a0 - POST[k])
        check_continuous(w[..., k], b.mean(), b.std(), b.cdf, f"w[{k}]")


def test_without_the_jacobian_the_same_check_fails(monkeypatch):
    """Negative control: the walk in u without log |J(u')| − log |J(u)| targets p(t(u)), not
    the posterior — the marginal means' check must see it."""
    monkeypatch.setattr(StickBreaking, "log_abs_det_jacobian",
                        lambda self, u: np.zeros(np.shape(u)[:-1]))
    r = run(weights(Y), th.mh("w", th.drift(0.4)), 6000, burn_in=1000, seed=4)
    assert np.max(np.abs(_marginals_z(r["w"]))) > z_threshold(3)


@th.model
def correlation():
    th.sample("L", dist.LKJCholesky(3, 2.0))


def test_drift_on_a_correlation_cholesky_factor():
    """LKJ(η = 2) in 3 dimensions: each correlation is 2·Beta(2.5, 2.5) − 1 (variance 1/6)."""
    r = run(correlation(), th.mh("L", th.drift()), 6000, burn_in=1000, seed=5)
    L = r["L"][0]
    R = L @ np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(np.diagonal(R, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    b = stats.beta(2.5, 2.5)
    check_continuous((R[:, 0, 1] + 1) / 2, b.mean(), b.std(), b.cdf, "r01")


@th.model
def per_element(y):
    with th.plate("data", len(y)) as i:
        w = th.sample("w", dist.Dirichlet(ALPHA))
        th.observe("y", dist.Categorical(w), y[i])


def test_drift_on_plate_elements_on_a_simplex_is_refused_naming_the_site():
    with pytest.raises(SelectionError, match=r"data\.w.*th\.prior\(\)"):
        th.infer(per_element(Y), th.mh("data.w", th.drift(0.1)), num_samples=5, seed=0,
                 progress=False)
