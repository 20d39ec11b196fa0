"""Adaptation of random-walk proposals during burn-in (``th.drift()`` without a scale).

One adapter per block of choices a kernel proposes together (a site, a vector site, or several
choices of one ``th.mh`` block), of dimension d.  During burn-in, after each step:

* the global scale follows the Robbins–Monro recursion (Andrieu and Thoms 2008, "A tutorial on
  adaptive MCMC", Alg. 4)   log λ ← log λ + γ_t (α_t − α*),  γ_t = (t + 1)^(−0.6),
  with α* = 0.44 for one coordinate and 0.234 for blocks (Roberts, Gelman and Gilks 1997) and
  α_t = min(1, exp(log α)) the step's acceptance probability (smoother than the 0/1 outcome);
* for blocks (d > 1), the covariance of the proposal is the empirical covariance of the chain
  (Haario, Saksman and Tamminen 2001, with their 2.38²/d scaling: x' = x + λ·(2.38/√d)·chol(Σ)·z)
  estimated in windows of doubling length (50, 100, 200, … steps) as Stan's warmup does: at the
  end of each window Σ becomes that window's covariance (shrunk towards a small multiple of the
  identity), λ restarts at 1 (Haario's optimum for a Gaussian target) and its recursion at
  t = 0 — so the transient of the burn-in's start does not distort the final Σ.  When the
  burn-in ends in a window that is at least half done, that window gives the final Σ;
* a block that starts from the Laplace approximation at the mode
  (:mod:`thrifty.inference.proposals.laplace_start`) has no transient to forget: its windows *pool*
  — Σ is the covariance of every state since the start, combined with the Laplace covariance counted
  as ``LAPLACE_STEPS_PER_DIM · d`` steps (a random walk tuned to 0.234 has an ESS of about 0.3/d per
  step, so about 60 independent draws' worth).  A short window's covariance is a poor estimate (150
  steps in d = 3: eigenvalues 0.2–1.8 times the posterior's on a tall logistic regression, where the
  Laplace covariance is nearly exact); a long burn-in still learns a posterior the Laplace
  approximation misses (the diabetes regression's σ²).

Element-wise plate updates adapt λ alone (α_t: the mean over the elements; their values belong
to different posteriors, so no covariance).  The proposal starts with sd 0.1 per coordinate.
After the burn-in nothing changes: the sampling phase is a fixed random walk.
"""

from __future__ import annotations

import math

import numpy as np

INITIAL_SCALE = 0.1
KAPPA = 0.6
FIRST_WINDOW = 50
LAPLACE_STEPS_PER_DIM = 200  # the weight of a Laplace start's covariance, in chain steps per d


class Adapter:
    """The adaptation state of one block (see the module docstring)."""

    def __init__(self, d: int, covariance: bool):
        self.d = d
        self.covariance = covariance and d > 1
        self.target = 0.44 if d == 1 else 0.234
        self.base = 2.38 / math.sqrt(d) if self.covariance else 1.0
        self.log_lam = math.log(INITIAL_SCALE / self.base)  # sd 0.1 per coordinate at first
        self.t = 0  # adaptation steps in all
        self.t_lam = 0  # steps of the λ recursion since it (re)started
        self.chol = np.eye(d) if self.covariance else None  # factor of Σ
        self.window, self.n = FIRST_WINDOW, 0
        self.sum = self.outer = None
        self.windows_done = 0
        self.prior = None  # (Laplace covariance, its weight in steps): the windows pool
        self.pooled = None  # (n, Σx, Σxxᵀ) of every window since a Laplace start
        self._factor = None

    def start_from(self, cov) -> None:
        """Σ from the Laplace approximation at the start, λ = 1; the windows then pool with
        it (see the module docstring)."""
        cov = np.asarray(cov, dtype=float)
        if not self.covariance:
            self.log_lam = 0.5 * float(np.log(cov.item()))
        else:
            self.chol = np.linalg.cholesky(cov)
            self.log_lam = 0.0
            self.prior = (cov, LAPLACE_STEPS_PER_DIM * self.d)
            self.pooled = (0, np.zeros(self.d), np.zeros((self.d, self.d)))
        self._factor = None

    def factor(self):
        """The proposal's scale: a float (λ) or a lower-triangular matrix λ·(2.38/√d)·chol(Σ)."""
        if self._factor is None:
            lam = math.exp(self.log_lam)
            self._factor = lam * self.base * self.chol if self.covariance else lam
        return self._factor

    def learn(self, accept_prob: float, x=None) -> None:
        """One adaptation step with the acceptance probability and the state after the step."""
        self.t += 1
        self.t_lam += 1
        g = (self.t_lam + 1) ** -KAPPA
        self.log_lam += g * (min(max(accept_prob, 0.0), 1.0) - self.target)
        self.log_lam = min(max(self.log_lam, -30.0), 30.0)
        self._factor = None
        if not self.covariance or x is None:
            return
        x = np.asarray(x, dtype=float).ravel()
        if self.sum is None:
            self.sum, self.outer = np.zeros(self.d), np.zeros((self.d, self.d))
        self.sum += x
        self.outer += np.outer(x, x)
        self.n += 1
        if self.n >= self.window:
            self._end_window()

    def _end_window(self) -> None:
        n, total, outer = self.n, self.sum, self.outer
        if getattr(self, "prior", None) is not None:  # since a Laplace start: pool
            m, s1, s2 = self.pooled
            n, total, outer = m + n, s1 + total, s2 + outer
            self.pooled = (n, total, outer)
        mean = total / n
        cov = (outer - n * np.outer(mean, mean)) / (n - 1)
        if getattr(self, "prior", None) is not None:
            cov0, n0 = self.prior
            cov = (n0 * cov0 + (n - 1) * cov) / (n0 + n - 1)
        else:  # Stan's regularisation: shrink towards a small multiple of the identity
            scale = max(float(np.trace(cov)) / self.d, 1e-300)
            cov = (n / (n + 5.0)) * cov + (5.0 / (n + 5.0)) * 1e-3 * scale * np.eye(self.d)
        try:
            self.chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            self.chol = np.diag(np.sqrt(np.maximum(np.diag(cov), 1e-300)))
        self.log_lam, self.t_lam = 0.0, 0  # λ = 1 with the new Σ, and a fresh recursion
        self.sum = self.outer = None
        self.n = 0
        self.window *= 2
        self.windows_done += 1
        self._factor = None

    def freeze(self) -> None:
        """The end of the burn-in: a window at least half done (and of ≥ 10·d steps) still
        gives Σ, with λ = 1 — the last window is the one that saw the chain in the posterior."""
        if self.covariance and self.n >= max(10 * self.d, self.window // 2):
            self._end_window()

    def describe(self) -> dict:
        out = {"scale": math.exp(self.log_lam), "steps": self.t, "target": self.target}
        if self.covariance:
            out["covariance_windows"] = self.windows_done
        return out
