"""Shared machinery of the statistical tests (posteriors, structure change, HMM, Geweke).

Every check compares MCMC draws with an exact answer and accounts for autocorrelation through
the effective sample size (ESS, ArviZ):

* :func:`mean_z` — z-score of a posterior mean, standard error ``sd / sqrt(ESS_mean)``;
* :func:`ks_p` — Kolmogorov–Smirnov p-value against an exact CDF, on the draws thinned by
  ``ceil(n / ESS_bulk)`` (≈ independent draws);
* :func:`prob_z` — z-scores of discrete probabilities P(X = v), standard error
  ``sqrt(p (1 − p) / ESS)`` with the ESS of the indicator 1{X = v} (:func:`indicator_ess`);
* :func:`chisq_p` — Pearson chi-square p-value of the counts of the thinned draws.

ESS of indicators: ArviZ overestimates the ESS of the indicator of a rare event, so
:func:`indicator_ess` takes the smaller of ArviZ's value and a two-state Markov estimate from
the observed switches, and :func:`cell_z` lets a never-visited cell borrow the smallest ESS of
the cells of the same run (both checked on 30-seed calibration runs of the HMM tests: the
z-scores then have standard deviation ≈ 1 per cell).

Thresholds (fixed; never loosen one to make a test pass):

* ``Z_MAX = 4.5`` for a single z-test: two-sided p ≈ 6.8e-6.
* :func:`z_threshold(m)` for ``m`` simultaneous z-tests: Bonferroni at family-wise level
  ``FAMILY_ALPHA = 1e-5`` (m = 1 → 4.42, m = 6 → 4.80, m = 54 → 5.22).
* ``P_MIN = 1e-4`` for KS and chi-square p-values.

Each family of tests also runs a *negative control*: the same check against a slightly wrong
answer (or on the draws of a deliberately wrong kernel) must fail, which shows the check has
the power to see the kind of error it is meant to catch.  :func:`mean_z`, :func:`ks_p` etc.
return the statistic so a test can assert failure as well as success.

Draws are arrays of shape ``(chains, draws)`` (as ``th.infer`` returns them) or ``(draws,)``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

import thrifty as th
from thrifty.diagnostics._arviz import ess as az_ess
from thrifty.inference.mcmc.mh import LMH, MH

Z_MAX = 4.5
FAMILY_ALPHA = 1e-5
P_MIN = 1e-4


def z_threshold(m: int, alpha: float = FAMILY_ALPHA) -> float:
    """Two-sided Bonferroni threshold for ``m`` simultaneous z-tests at family-wise ``alpha``."""
    return float(stats.norm.isf(alpha / (2 * max(int(m), 1))))


# -- running ----------------------------------------------------------------------------------
def run(program, kernel, num_samples, burn_in=0, seed=0, chains=1, init=None):
    """``th.infer`` with the settings the statistical tests use (one place to change them)."""
    return th.infer(
        program,
        kernel,
        num_samples=num_samples,
        burn_in=burn_in,
        chains=chains,
        seed=seed,
        init=init,
        progress=False,
    )


def stats_of(result, label_part: str) -> dict:
    """Per-kernel statistics of ``result`` whose label contains ``label_part`` (chain 0).

    ``Result.stats[label]`` is either a list of per-chain dicts or a dict (possibly with a
    ``"chains"`` list); both are accepted.
    """
    for label, s in result.stats.items():
        if label_part in label:
            if isinstance(s, list):
                return s[0]
            if isinstance(s, dict) and isinstance(s.get("chains"), list) and s["chains"]:
                return s["chains"][0]
            return s
    raise KeyError(f"no kernel statistics matching {label_part!r}: {list(result.stats)}")


# -- effective sample size -------------------------------------------------------------------
def _as_2d(x) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise ValueError(f"draws must have shape (chains, draws) or (draws,), got {a.shape}")
    return a


def ess(x, method: str = "mean") -> float:
    """ArviZ effective sample size of draws ``(chains, draws)``.  A constant series (a chain
    that never moved) has no defined ESS; it gets ESS = n, so the mean test of a stuck chain
    fails unless it is stuck at the exact mean — which the KS test then catches."""
    a = _as_2d(x)
    if np.all(a == a.flat[0]):
        return float(a.size)
    return az_ess(a, method=method)


def thin_independent(x) -> np.ndarray:
    """Draws thinned by ``ceil(n / ESS_bulk)`` per chain and pooled: roughly independent."""
    a = _as_2d(x)
    e = max(ess(a, "bulk"), 1.0)
    step = max(1, math.ceil(a.shape[1] * a.shape[0] / e))
    return a[:, ::step].ravel()


# -- continuous posteriors ----------------------------------------------------------------------
def mean_z(x, mean: float, sd: float) -> float:
    """z-score of the sample mean of ``x`` against the exact ``mean``; SE = ``sd / sqrt(ESS)``
    with the exact posterior standard deviation ``sd``."""
    a = _as_2d(x)
    return float((a.mean() - mean) / (sd / math.sqrt(ess(a, "mean"))))


def ks_p(x, cdf) -> float:
    """KS p-value of the thinned draws of ``x`` against the exact ``cdf``."""
    return float(stats.kstest(thin_independent(x), cdf).pvalue)


def check_continuous(x, mean: float, sd: float, cdf, what: str = "") -> None:
    """Assert |z| < Z_MAX for the mean and KS p > P_MIN for the distribution."""
    z = mean_z(x, mean, sd)
    p = ks_p(x, cdf)
    e = ess(x, "mean")
    assert abs(z) < Z_MAX, (
        f"{what}: mean {np.mean(x):.5g} vs exact {mean:.5g}: z = {z:.2f} (ESS {e:.0f})"
    )
    assert p > P_MIN, f"{what}: KS p = {p:.3g} against the exact posterior (ESS {e:.0f})"


# -- discrete posteriors ------------------------------------------------------------------------
def indicator_ess(ind) -> float | None:
    """ESS of a 0/1 series: the smaller of ArviZ's estimate and the two-state Markov one;
    ``None`` for a constant series (it carries no information about its own mixing).

    ArviZ's estimator overestimates the ESS of an indicator of a *rare* event badly (a long run
    of zeros with a few short bursts looks nearly independent: e.g. 12 000 where the truth is
    ≈ 1 000), which would make the z-tests of small probabilities fail for a correct sampler.
    A two-state Markov chain with switching probabilities a = #(0→1)/#0 and b = #(1→0)/#1 has
    ESS = n (a + b) / (2 − a − b), which is governed by the observed sojourns; the minimum of
    the two is used (conservative).
    """
    a2 = _as_2d(ind)
    if np.all(a2 == a2.flat[0]):
        return None
    e = az_ess(a2, method="mean")
    n01 = n10 = n0 = n1 = 0
    for row in a2:
        prev, nxt = row[:-1], row[1:]
        n01 += int(np.sum((prev == 0) & (nxt == 1)))
        n10 += int(np.sum((prev == 1) & (nxt == 0)))
        n0 += int(np.sum(prev == 0))
        n1 += int(np.sum(prev == 1))
    if n0 and n1:
        a, b = n01 / n0, n10 / n1
        if a + b > 0:
            e = min(e, a2.size * (a + b) / (2.0 - a - b))
    return float(e)


def cell_z(indicators: list, ps) -> np.ndarray:
    """z-scores of the frequencies of several 0/1 series (cells of one run) against exact
    probabilities ``ps``: SE = sqrt(p (1 − p) / ESS) with :func:`indicator_ess`.

    A cell whose indicator never switches (e.g. a rare state never visited in a short run) has
    no ESS of its own; it borrows the smallest ESS of the cells that do switch — it is assumed
    to mix no better than the slowest informative cell.  (Assuming independence instead, ESS =
    n, would fail a correct sampler that by chance never entered a state of probability 0.015;
    a sampler stuck in one value still fails, against the borrowed ESS.)  With no informative
    cell at all, ESS = 1.  p = 0 or 1 exactly: any other draw gives z = ±inf, else 0.
    """
    inds = [np.asarray(i, dtype=float) for i in indicators]
    esss = [indicator_ess(i) for i in inds]
    known = [e for e in esss if e is not None]
    fallback = min(known) if known else 1.0
    out = []
    for ind, e, p in zip(inds, esss, ps):
        dev = ind.mean() - p
        var = p * (1.0 - p)
        if var <= 0.0:
            out.append(0.0 if dev == 0 else math.copysign(math.inf, dev))
            continue
        out.append(dev / math.sqrt(var / (fallback if e is None else e)))
    return np.array(out, dtype=float)


def prob_z(x, value, p: float) -> float:
    """z-score of the frequency of ``x == value`` against the exact probability ``p``
    (one cell of :func:`cell_z`)."""
    return float(cell_z([np.asarray(x) == value], [p])[0])


def probs_z(x, probs: dict) -> dict:
    """z-scores of P(x = v) for every ``v -> p`` of ``probs`` (cells of :func:`cell_z`)."""
    x = np.asarray(x)
    zs = cell_z([x == v for v in probs], list(probs.values()))
    return dict(zip(probs, zs.tolist()))


def chisq_p(x, probs: dict, min_expected: float = 5.0) -> float:
    """Pearson chi-square p-value of the thinned draws against ``probs`` (value -> p).

    Cells expected to hold fewer than ``min_expected`` thinned draws are pooled with the values
    outside ``probs`` into one "rest" cell.
    """
    a = _as_2d(x)
    # thin by the smallest ESS over the indicators of the values (the slowest-mixing one)
    known = [indicator_ess((a == v).astype(float)) for v in probs]
    e = min((k for k in known if k is not None), default=float(a.size))
    step = max(1, math.ceil(a.size / max(e, 1.0)))
    t = a[:, ::step].ravel()
    n = len(t)
    obs, exp = [], []
    rest_obs, rest_exp = n, n * 1.0
    for v, p in probs.items():
        if n * p >= min_expected:
            c = int(np.sum(t == v))
            obs.append(c)
            exp.append(n * p)
            rest_obs -= c
            rest_exp -= n * p
    if rest_exp > 1e-9 * n or rest_obs > 0:
        obs.append(rest_obs)
        exp.append(max(rest_exp, 1e-12 * n))
    return float(stats.chisquare(obs, exp).pvalue)


def check_discrete(x, probs: dict, what: str = "") -> None:
    """Assert every |z| of :func:`probs_z` below the Bonferroni threshold and chi-square
    p > P_MIN."""
    zs = probs_z(x, probs)
    zmax = z_threshold(len(zs))
    worst = max(zs, key=lambda v: abs(zs[v]))
    assert abs(zs[worst]) < zmax, (
        f"{what}: P(={worst!r}) estimated {np.mean(np.asarray(x) == worst):.4f}, exact "
        f"{probs[worst]:.4f}: z = {zs[worst]:.2f} (threshold {zmax:.2f})"
    )
    p = chisq_p(x, probs)
    assert p > P_MIN, f"{what}: chi-square p = {p:.3g}"


def element_probs_z(z, p1) -> np.ndarray:
    """z-scores of P(z_i = 1) for every column i of plate draws ``z`` (chains, draws, N)."""
    z = np.asarray(z)
    return cell_z([z[..., i] == 1 for i in range(z.shape[-1])], [float(p) for p in p1])


def discrete_posterior(log_weights: dict) -> dict:
    """Normalise ``value -> log unnormalised probability``."""
    keys = list(log_weights)
    lw = np.array([log_weights[k] for k in keys], dtype=float)
    p = np.exp(lw - np.logaddexp.reduce(lw))
    return dict(zip(keys, p.tolist()))


# -- deliberately wrong kernels (negative controls) -------------------------------------------
class BrokenMH(MH):
    """``th.mh`` whose acceptance ignores the proposal densities: log α = lp_new − lp_old.

    With prior proposals the q terms do not cancel, so the kernel samples p(x)² L(x) (up to
    normalisation) instead of the posterior p(x) L(x).  (Only proposals that go through
    ``Kernel.accept`` are affected: single-site, block and ``th.one`` updates — not the
    element-wise updates of a plate site, which accept element by element.)"""

    name = "broken-mh"

    def accept(self, run, log_alpha, rng):
        return super().accept(run, run.lp_new - run.lp_old, rng)


class LMHWithoutSizeCorrection(LMH):
    """``th.lmh()`` without the |x| / |x'| factor of paper 001 Eq. 4 (fresh/stale terms kept).

    It is an MH kernel for the law ∝ |x| · p(x, y): its ratio is the correct one times
    |x'| / |x|."""

    name = "lmh-no-size"

    def accept(self, run, log_alpha, rng):
        # LMH.accept receives run.log_weight + log(|x| / |x'|); drop the size term.
        return super().accept(run, run.log_weight, rng)
