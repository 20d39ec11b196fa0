"""Particle steps whose choices and observations are vectors: shared parameters draw a vector
per particle, as a run of one particle does (003 §3), whatever the number of particles.

The model: a k-vector random walk whose first step's prior has shared parameters
(``Normal(np.zeros(k), q)``: batch shape (k,), no particle axis), observed as a k-vector at
each step; its exact evidence and smoothed means are the Kalman filter's and the RTS
smoother's.  Thresholds: the evidence ratio's z-test at |z| < 4 (as tests/test_particles.py);
the PGAS means' z-tests at the Bonferroni threshold of stat_helpers (family-wise 1e-5);
fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import mean_z, z_threshold
from thrifty import dist
from thrifty.diagnostics.kalman import kalman_filter, rts_smoother
from thrifty.errors import ModelError
from thrifty.inference.default import default_kernel

A, Q, R, T = 0.9, 0.6, 0.5, 8


@th.model
def vector_walk(ys):
    def step(t, prev):
        x = th.sample("x", dist.Normal(np.zeros(ys.shape[1]) if prev is None else A * prev, Q))
        th.observe("y", dist.Normal(x, R), ys[t])
        return x

    th.markov("x", step, len(ys), None)


def _data(k: int):
    return np.random.default_rng(10 + k).normal(size=(T, k))


def _kalman(ys):
    k = ys.shape[1]
    return (ys, A * np.eye(k), Q**2 * np.eye(k), np.eye(k), R**2 * np.eye(k), np.zeros(k))


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("resample", ["systematic", "multinomial"])
def test_smc_evidence_of_a_vector_chain_matches_kalman(k, resample):
    """Ẑ/Z over 200 runs of 20 particles has mean 1 (Z: Kalman); each particle's path holds a
    k-vector per step (at the parent commit, k = 1 drew one number per particle from the
    shared (1,) prior, and k = 2 was refused)."""
    ys = _data(k)
    ll = kalman_filter(*_kalman(ys))[0]
    runs = [th.smc(vector_walk(ys), particles=20, resample=resample, seed=s) for s in range(200)]
    assert runs[0]["x.x"].shape == (20, T, k)
    ratio = np.exp(np.array([r.log_evidence for r in runs]) - ll)
    z = (ratio.mean() - 1.0) / (ratio.std(ddof=1) / np.sqrt(len(ratio)))
    assert abs(z) < 4, (ratio.mean(), z)


@pytest.mark.parametrize("k", [1, 2])
def test_one_particle_is_not_a_broadcast_axis(k):
    """With one particle, Ẑ is exactly p(y | its path).  (k = 1: th.smc has no reference to
    tell the shared (1,) prior from the particle's parameters, and reads it as the particle's:
    the path then holds one number per step — the same densities.)"""
    ys = _data(k)
    res = th.smc(vector_walk(ys), particles=1, seed=3)
    x = res["x.x"][0]
    assert x.shape == ((T, k) if k > 1 else (T,))
    want = stats.norm.logpdf(ys, x.reshape(T, k), R).sum()
    assert np.isclose(res.log_evidence, want)


@pytest.mark.parametrize("k,n", [(1, 10), (2, 2)])
def test_pgas_on_a_vector_chain_matches_the_smoother(k, n):
    """PGAS means at t = 0, T/2, T − 1, every coordinate, against the RTS smoother (ESS-based
    standard errors).  n = k = 2: the reference's shape says that the first step's (2,)
    parameters are shared, not the two particles' (both refused at the parent commit)."""
    ys = _data(k)
    ms, Ps = rts_smoother(*_kalman(ys))
    r = th.infer(vector_walk(ys), th.pgibbs("x", n), num_samples=1000, burn_in=50, seed=2,
                 progress=False)
    x = r["x.x"]
    assert x.shape == (1, 1000, T, k)
    ts = (0, T // 2, T - 1)
    zmax = z_threshold(len(ts) * k)
    for t in ts:
        for j in range(k):
            z = mean_z(x[:, :, t, j], ms[t][j], np.sqrt(Ps[t][j, j]))
            assert abs(z) < zmax, (t, j, z)


@th.model
def shared_terms(ys):
    """A length-1 observation and factor with shared parameters in every step."""
    def step(t, prev):
        x = th.sample("x", dist.Normal(A * prev, Q))
        th.observe("y", dist.Normal(x, R), ys[t, 0])
        th.observe("c", dist.Normal(np.zeros(1), 1.0), ys[t, 1:])
        th.factor("f", np.full(1, -0.5))
        return x

    th.markov("x", step, len(ys), 0.0)


@pytest.mark.parametrize("n", [1, 5])
def test_shared_length_one_terms_weigh_every_particle(n):
    """A term without a particle axis is every particle's (it was refused at the parent
    commit: "log-density of shape (1,) for 5 executed element(s)"): Ẑ is the evidence of the
    chain's observations times the shared terms, every particle alike."""
    ys = np.random.default_rng(4).normal(size=(T, 2))
    a = th.smc(shared_terms(ys), particles=n, seed=1)
    b = th.smc(vector_walk(ys[:, :1]), particles=n, seed=1)  # (the same draws: x alone)
    shared = stats.norm.logpdf(ys[:, 1]).sum() - 0.5 * T
    assert np.isclose(a.log_evidence, b.log_evidence + shared)


@th.model
def stacked(ys):
    def step(t, prev):
        x = th.sample("x", dist.Normal(prev, Q))
        th.observe("y", dist.Normal(np.array([x]), R), ys[t : t + 1])  # (1, n) over particles
        return x

    th.markov("x", step, len(ys), 0.0)


def test_a_particle_axis_behind_another_axis_is_refused():
    """``np.array([x])`` of the particles' x has shape (1, n): its log-density is not one
    term per particle, and summing it would weigh every particle by all of them."""
    ys = np.random.default_rng(5).normal(size=T)
    with pytest.raises(ModelError, match="leading particle axis"):
        th.smc(stacked(ys), particles=5, seed=0)
    _, said = default_kernel(stacked(ys))  # (the default kernel: LMH, saying why not PGAS)
    assert "LMH" in said and "leading particle axis" in said, said
