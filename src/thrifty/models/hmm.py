"""The 3-state hidden Markov model of paper 001 §5, and its exact marginals by forward–backward."""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist

TRANSITIONS = np.array([[0.1, 0.5, 0.4], [0.2, 0.2, 0.6], [0.15, 0.15, 0.7]])
INITIAL = np.full(3, 1.0 / 3.0)
MEANS = np.array([-1.0, 1.0, 0.0])
# Observations of states 1..16; states 0 and 17 are unobserved (predicted).
OBSERVATIONS = np.array(
    [0.9, 0.8, 0.7, 0.0, -0.025, -5.0, -2.0, -0.1, 0.0, 0.13, 0.45, 6.0, 0.2, 0.3, -1.0, -1.0]
)


@th.model
def hmm(ys=OBSERVATIONS, transitions=TRANSITIONS, initial=INITIAL, means=MEANS, sd=1.0,
        predict=None):
    """States ``s.z`` for t = 0..len(ys)+1; ``ys[t-1]`` is observed at step t = 1..len(ys).

    Returns the states, or with ``predict`` (step indices) the tuple of those states — the
    output adaptive LMH rewards (001 §5.1 predicts states 0 and 17: ``predict=(0, 17)``).

    >>> tr = th.simulate(hmm(), seed=0)
    >>> len(tr.output)
    18
    """
    T = len(ys) + 2

    def step(t, prev):
        probs = initial if t == 0 else transitions[prev]
        z = th.sample("z", dist.Categorical(probs))
        if 1 <= t <= len(ys):
            th.observe("y", dist.Normal(means[z], sd), ys[t - 1])
        return z

    states = th.markov("s", step, T)
    return states if predict is None else tuple(states[t] for t in predict)


def forward_backward(
    ys=OBSERVATIONS, transitions=TRANSITIONS, initial=INITIAL, means=MEANS, sd=1.0
) -> np.ndarray:
    """Posterior marginals P(z_t = k | y), shape (len(ys) + 2, K), computed in log space."""
    T, K = len(ys) + 2, len(initial)
    loglik = np.zeros((T, K))
    for t in range(1, len(ys) + 1):
        loglik[t] = -0.5 * ((ys[t - 1] - means) / sd) ** 2
    logA = np.log(transitions)
    alpha = np.zeros((T, K))
    alpha[0] = np.log(initial) + loglik[0]
    for t in range(1, T):
        alpha[t] = np.logaddexp.reduce(alpha[t - 1][:, None] + logA, axis=0) + loglik[t]
    beta = np.zeros((T, K))
    for t in range(T - 2, -1, -1):
        beta[t] = np.logaddexp.reduce(logA + (loglik[t + 1] + beta[t + 1])[None, :], axis=1)
    post = alpha + beta
    post -= np.logaddexp.reduce(post, axis=1, keepdims=True)
    return np.exp(post)
