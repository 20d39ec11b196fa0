"""Bayesian logistic regression (papers 000 §4.1, 002): w ~ N(0, σ²I), y_i ~ Bern(σ(x_i·w)).

The observations are :mod:`thrifty.distributions.glm` logistic observations (as fast as
``dist.Bernoulli(logits=X[i] @ w)``), so every kernel applies — including ``th.smh``, which needs
to know the likelihood is a GLM in ``w``.
"""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist, glm


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
        th.observe("y", glm.logistic(X[i], w), y[i])
    return w


@th.model
def robust_regression(X, y, df: float = 4.0, sigma: float = 1.0, prior_sd: float = 10.0):
    """Linear regression with Student-t noise: y_i = x_i·θ + σ·t_ν, θ ~ N(0, prior_sd² I).

    >>> X = np.c_[np.ones(50), np.linspace(-1, 1, 50)]
    >>> y = X @ np.array([1.0, 2.0])
    >>> th.simulate(robust_regression(X, y), seed=0)["theta"].shape
    (2,)
    """
    d = X.shape[1]
    theta = th.sample("theta", dist.Normal(np.zeros(d), prior_sd))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.student_t(X[i], theta, df, sigma), y[i])
    return theta


def laplace(X, y, prior_var: float = 0.1, iters: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mode and Laplace covariance of :func:`logistic_regression` (Newton's method
    on the full data, O(N·d²) per iteration) — for starting points, proposal scales and
    reference posteriors.

    >>> from thrifty.datasets import synthetic_logistic
    >>> X, y, _ = synthetic_logistic(5000, 2, theta=[1.0, -0.5], seed=0)
    >>> mode, cov = laplace(X, y)
    >>> mode.shape, cov.shape
    ((2,), (2, 2))
    """
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 0.5 * (1.0 + np.tanh(0.5 * (X @ w)))  # σ(x·w), overflow-free
        grad = X.T @ (y - p) - w / prior_var
        prec = (X.T * (p * (1.0 - p))) @ X + np.eye(len(w)) / prior_var
        step = np.linalg.solve(prec, grad)
        w = w + step
        if np.max(np.abs(step)) < 1e-12:
            break
    return w, np.linalg.inv(prec)


def log_joint(w, X, y, prior_var: float = 0.1) -> float:
    """log p(w, y | X) of :func:`logistic_regression`, computed directly (for checks)."""
    z = X @ w
    ll = np.sum(y * z - np.logaddexp(0.0, z))
    d = len(w)
    return float(ll - 0.5 * w @ w / prior_var - 0.5 * d * np.log(2 * np.pi * prior_var))


@th.model
def sitewise_logistic(X, y):
    """Logistic regression of 001 §5.3 (Iris): σ² ~ InvGamma(1, 1) and β_j ~ N(0, σ), one choice
    per coefficient (``b0``, ``b1``, …: adaptive LMH's arms), y_i ~ Bern(σ(x_i·β)); the output
    is the coefficients.

    >>> X = np.c_[np.ones(4), [0.1, -0.3, 0.5, 0.2]]
    >>> len(th.simulate(sitewise_logistic(X, np.array([1, 0, 1, 1])), seed=0).output)
    2
    """
    s2 = th.sample("sigma2", dist.InverseGamma(1.0, 1.0))
    sd = np.sqrt(s2)
    beta = np.array([th.sample(f"b{j}", dist.Normal(0.0, sd)) for j in range(X.shape[1])])
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], beta), y[i])
    return tuple(beta)
