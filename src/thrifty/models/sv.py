"""The stochastic-volatility model of paper 000 §4.3: many short series as a plate of chains.

``h_t ~ N(φ h_{t−1}, σ²)`` with ``h_{−1} = 0``, ``x_t = exp(h_t / 2) · ε_t``, ``ε_t ~ N(0, 1)``;
priors ``φ ~ Beta(5, 1)`` and ``σ² ~ InvGamma(5, 0.05)``.  000 simulates 200 series of length 5
with φ = 0.95 and σ = 0.1 (:func:`generate_sv`).  The series are the elements of the plate
``series`` (the local sections of subsampled MH on φ and σ²); the states are ``series.h.h``.
"""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist


@th.model
def sv(x, phi=None, sigma2=None):
    """SV over the rows of ``x`` (B series × T steps); φ and σ² sampled unless given.

    >>> x = generate_sv(B=4, T=5, seed=0)
    >>> th.simulate(sv(x), seed=0)["phi"] > 0
    True
    """
    x = np.asarray(x, dtype=float)
    B, T = x.shape
    if phi is None:
        phi = th.sample("phi", dist.Beta(5.0, 1.0))
    if sigma2 is None:
        sigma2 = th.sample("sigma2", dist.InverseGamma(5.0, 0.05))
    sd = np.sqrt(sigma2)
    with th.plate("series", B) as i:

        def step(t, prev):
            h = th.sample("h", dist.Normal(phi * prev, sd))
            th.observe("x", dist.Normal(0.0, np.exp(h / 2)), x[i, t])
            return h

        th.markov("h", step, T, 0.0)


def generate_sv(B: int = 200, T: int = 5, phi: float = 0.95, sigma: float = 0.1,
                seed: int = 0) -> np.ndarray:
    """Observations (B, T) of B independent series simulated from the model (000 §4.3)."""
    rng = np.random.default_rng(seed)
    h = np.zeros((B, T))
    prev = np.zeros(B)
    for t in range(T):
        prev = h[:, t] = phi * prev + sigma * rng.normal(size=B)
    return np.exp(h / 2) * rng.normal(size=(B, T))
