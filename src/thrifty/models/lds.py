"""The linear dynamical system of paper 003 §5 (and 001 §5.4): a 2-d rotation observed in D dims.

``z_t ~ N(A(ω) z_{t−1}, q·I)``, ``y_t ~ N(C z_t, r·I)``, ``z_{−1} = (1, 0)``; A rotates by ω.
Priors (003): ω ~ (π/T)·Gamma(10, 2.5) — written as Gamma(10, rate 2.5·T/π) — and
q ~ Gamma(10, 100) (rates; means 4π/T and 0.1, the values the data are simulated with).  C and
r are known.  003 does not say how C is drawn; :func:`generate_lds` draws its entries iid
N(0, 1) (seeded).
"""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist

X0 = np.array([1.0, 0.0])


def rotation(omega) -> np.ndarray:
    c, s = np.cos(omega), np.sin(omega)
    return np.array([[c, -s], [s, c]])


@th.model
def lds(y, C, r, omega=None, q=None, returns: str = "states"):
    """The LDS with T = len(y) steps ``x.z`` (2-d states); ω and q sampled unless given.
    Returns the states, or (ω, q) with ``returns="params"`` (the output 001 §5.4 predicts).

    A step is written once for one trajectory and for many particles: ``prev`` may carry a
    leading particle axis.

    >>> y, C, z = generate_lds(T=5, D=3, seed=0)
    >>> tr = th.simulate(lds(y, C, 0.01), seed=0)
    >>> np.shape(list(tr.output))  # the states z_0..z_4
    (5, 2)
    """
    y = np.asarray(y, dtype=float)
    T = len(y)
    if omega is None:
        omega = th.sample("omega", dist.Gamma(10.0, 2.5 * T / np.pi))
    if q is None:
        q = th.sample("q", dist.Gamma(10.0, 100.0))
    A = rotation(omega)
    sq, sr = np.sqrt(q), np.sqrt(r)

    def step(t, prev):
        z = th.sample("z", dist.Normal(prev @ A.T, sq))
        th.observe("y", dist.Normal(z @ C.T, sr), y[t])
        return z

    states = th.markov("x", step, T, X0)
    return (omega, q) if returns == "params" else states


def generate_lds(T: int = 100, D: int = 36, omega: float | None = None, q: float = 0.1,
                 r: float = 0.01, seed: int = 0):
    """Simulated data ``(y (T, D), C (D, 2), z (T, 2))`` with ω = 4π/T by default (003 §5)."""
    rng = np.random.default_rng(seed)
    omega = 4 * np.pi / T if omega is None else omega
    A = rotation(omega)
    C = rng.normal(size=(D, 2))
    z = np.zeros((T, 2))
    prev = X0
    for t in range(T):
        prev = z[t] = A @ prev + np.sqrt(q) * rng.normal(size=2)
    y = z @ C.T + np.sqrt(r) * rng.normal(size=(T, D))
    return y, C, z


def lds_matrices(C, r: float, omega: float, q: float):
    """(A, Q, C, R, m0) for :func:`thrifty.diagnostics.kalman.kalman_filter`."""
    C = np.asarray(C, dtype=float)
    return rotation(omega), q * np.eye(2), C, r * np.eye(len(C)), X0
