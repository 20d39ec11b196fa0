"""Bayesian logistic regression (papers 000 §4.1, 002): w ~ N(0, σ²I), y_i ~ Bern(σ(x_i·w))."""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist


@th.model
def logistic_regression(X, y, prior_var: float = 0.1):
    """Weights ``w`` with prior N(0, prior_var · I); one plate element per row of ``X``.

    >>> from thrifty.datasets import synthetic_logistic
    >>> X, y, _ = synthetic_logistic(100, 3, seed=0)
    >>> th.simulate(logistic_regression(X, y), seed=0)["w"].shape
    (3,)
    """
    d = X.shape[1]
    w = th.sample("w", dist.MvNormal(np.zeros(d), prior_var * np.eye(d)))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Bernoulli(logits=X[i] @ w), y[i])
    return w


def log_joint(w, X, y, prior_var: float = 0.1) -> float:
    """log p(w, y | X) computed directly (for checks and hand-written baselines)."""
    z = X @ w
    ll = np.sum(y * z - np.logaddexp(0.0, z))
    d = len(w)
    return float(ll - 0.5 * w @ w / prior_var - 0.5 * d * np.log(2 * np.pi * prior_var))
