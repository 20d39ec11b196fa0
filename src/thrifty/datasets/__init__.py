"""Data sets: seeded synthetic generators (no downloads)."""

from __future__ import annotations

import numpy as np


def synthetic_logistic(n: int, d: int, theta=1.0, seed=0, intercept: bool = False):
    """Tall logistic-regression data as in paper 002: x_ij ~ N(0, 1), y ~ Bernoulli(σ(x·θ)).

    Returns ``(X, y, theta)``; ``y`` is an int8 array.  With ``intercept`` the first column is 1.

    >>> X, y, theta = synthetic_logistic(1000, 10, seed=0)
    >>> X.shape, y.dtype.name, float(theta[0])
    ((1000, 10), 'int8', 1.0)
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if intercept:
        X[:, 0] = 1.0
    theta = np.broadcast_to(np.asarray(theta, dtype=float), (d,)).copy()
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    y = (rng.random(n) < p).astype(np.int8)
    return X, y, theta
