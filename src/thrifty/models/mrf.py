"""The dense binary Markov random field of paper 004 §6.3.

D binary variables X_i ~ Bernoulli(1/2) a priori, coupled by a potential ψ_abc(X_a, X_b, X_c)
for every triple a < b < c (D(D−1)(D−2)/6 of them, 8 values each, log ψ ~ N(0, 0.02) — we read
0.02 as the variance).  The variables are a memoized function ``x(i)`` and the potentials are the
elements of a plate, so the factors of X_i are exactly the plate elements that read ``x(i)``:
its mem readers, the local sections of ``th.austerity_gibbs``.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

import thrifty as th
from thrifty import dist


def random_potentials(D: int, variance: float = 0.02, seed=0):
    """All triples of ``D`` variables and their log-potential tables, shape (M, 3) and (M, 8)."""
    rng = np.random.default_rng(seed)
    triples = np.array(list(combinations(range(D), 3)), dtype=np.int64)
    log_psi = rng.normal(0.0, np.sqrt(variance), size=(len(triples), 8))
    return triples, log_psi


def dense_mrf(D: int, triples: np.ndarray, log_psi: np.ndarray) -> th.Program:
    """The program: variables ``("x", i)``; factor ``m`` scores ``log_psi[m, 4·x_a+2·x_b+x_c]``.

    >>> triples, log_psi = random_potentials(6, seed=0)
    >>> tr = th.simulate(dense_mrf(6, triples, log_psi), seed=0)
    >>> sorted(tr.mems[("x",)].values) == list(range(6))
    True
    """
    triples = np.asarray(triples, dtype=np.int64)
    if triples.ndim != 2 or triples.shape[1] != 3 or np.shape(log_psi) != (len(triples), 8):
        raise ValueError("dense_mrf: triples must be (M, 3) and log_psi (M, 8)")
    if np.unique(triples).size != D:  # checked once here, not at every execution
        raise ValueError(f"dense_mrf: every one of the {D} variables must be in some triple")
    return _dense_mrf(D, triples, np.asarray(log_psi, dtype=float))


@th.model
def _dense_mrf(D: int, triples: np.ndarray, log_psi: np.ndarray):
    x = th.mem("x", lambda i: dist.Bernoulli(probs=0.5))
    with th.plate("factors", len(triples)) as m:
        t = triples[m]
        code = 4 * x(t[:, 0]) + 2 * x(t[:, 1]) + x(t[:, 2])
        rows = log_psi[m]
        th.factor("psi", np.take_along_axis(rows, code[:, None], axis=1)[:, 0])


def exact_marginals(D: int, triples: np.ndarray, log_psi: np.ndarray) -> np.ndarray:
    """P(X_i = 1) for every i by enumerating all 2^D states (small D only)."""
    if D > 20:
        raise ValueError("exact enumeration needs D <= 20")
    states = ((np.arange(2**D)[:, None] >> np.arange(D)[::-1]) & 1).astype(np.int64)
    code = 4 * states[:, triples[:, 0]] + 2 * states[:, triples[:, 1]] + states[:, triples[:, 2]]
    logp = log_psi[np.arange(len(triples)), code].sum(axis=1)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return p @ states
