"""Exact answers for linear-Gaussian state-space models: Kalman filter and RTS smoother.

The model: ``z_0 ~ N(A m0, Q)`` (the state before the first step is ``m0``, known), then
``z_t ~ N(A z_{t−1}, Q)`` and ``y_t ~ N(C z_t, R)`` for t = 0..T−1.  Used to test and benchmark
the particle methods (:func:`thrifty.models.lds`).

>>> import numpy as np
>>> A, Q, C, R = np.eye(1), np.eye(1), np.eye(1), np.eye(1)
>>> ll, means, covs = kalman_filter(np.zeros((3, 1)), A, Q, C, R, np.zeros(1))
>>> means.shape, covs.shape
((3, 1), (3, 1, 1))
"""

from __future__ import annotations

import numpy as np


def kalman_filter(y, A, Q, C, R, m0):
    """Log-likelihood log p(y_{0:T−1}) and the filtered means (T, d) and covariances (T, d, d)."""
    y = np.asarray(y, dtype=float)
    T, d = len(y), len(m0)
    m, P = np.asarray(m0, dtype=float), np.zeros((d, d))
    means, covs = np.zeros((T, d)), np.zeros((T, d, d))
    ll = 0.0
    for t in range(T):
        m, P = A @ m, A @ P @ A.T + Q  # predict
        S = C @ P @ C.T + R
        L = np.linalg.cholesky(S)
        resid = y[t] - C @ m
        a = np.linalg.solve(L, resid)
        ll += -0.5 * a @ a - np.log(np.diag(L)).sum() - 0.5 * len(resid) * np.log(2 * np.pi)
        K = np.linalg.solve(S, C @ P).T  # P Cᵀ S⁻¹ (S symmetric)
        m = m + K @ resid
        P = P - K @ S @ K.T
        P = 0.5 * (P + P.T)
        means[t], covs[t] = m, P
    return float(ll), means, covs


def rts_smoother(y, A, Q, C, R, m0):
    """Smoothed means (T, d) and covariances (T, d, d) of p(z_t | y_{0:T−1})."""
    _, means, covs = kalman_filter(y, A, Q, C, R, m0)
    T = len(means)
    ms, Ps = means.copy(), covs.copy()
    for t in range(T - 2, -1, -1):
        Pp = A @ covs[t] @ A.T + Q
        G = np.linalg.solve(Pp, A @ covs[t]).T  # covs[t] Aᵀ Pp⁻¹
        ms[t] = means[t] + G @ (ms[t + 1] - A @ means[t])
        Ps[t] = covs[t] + G @ (Ps[t + 1] - Pp) @ G.T
    return ms, Ps


__all__ = ["kalman_filter", "rts_smoother"]
