"""The convergence check at the end of ``th.infer``, as PyMC's and Stan's samplers do it.

Chains that have not mixed give draws that are not from the posterior, and nothing else in a run
says so: two chains of a bimodal mixture each stuck in its own mode look fine one at a time.
After the draws, the rank-normalised split R-hat (Vehtari et al. 2021) of every small variable is
computed over the chains (a single chain: over its two halves, as Stan does), and its bulk ESS
per chain; a :class:`ConvergenceWarning` names the variables with R-hat above 1.01 or fewer
than 100 effective draws per chain (the thresholds of Vehtari et al. and PyMC's).

The check reads at most :data:`CHECKED_DRAWS` draws in all (evenly spaced; 200 a chain at
least) of at most :data:`CHECKED_ELEMENTS` elements, of variables of at most
:data:`MAX_ELEMENTS` elements per draw kept dense: top-level choices and values, and the
continuous columns of small plates and chains (eight schools' ``theta``) — so its cost is
bounded whatever the size of the data and the length of the run (a run over 10⁵ plate elements
checks its global parameters only).  Left out: discrete plate and chain columns (a mixture's
labels, a CRP's tables, an HMM's states: values that are names, which label switching
permutes), memoized values (keyed by those names), and elements that do not exist in every draw
(NaN: a branch) or never change (R-hat undefined).
"""

from __future__ import annotations

import warnings

import numpy as np

from thrifty._warn import user_stacklevel

#: R-hat above this says the chains disagree (Vehtari et al. 2021, §4)
RHAT_MAX = 1.01
#: bulk effective draws per chain below this make R-hat and ESS unreliable (PyMC's threshold)
ESS_PER_CHAIN_MIN = 100
#: elements per draw of a variable the check reads; larger variables are not checked
MAX_ELEMENTS = 64
#: elements the check reads in all
CHECKED_ELEMENTS = 64
#: draws the check reads over all the chains (every k-th of a chain beyond its share, at least
#: 200 a chain: thinning keeps R-hat's comparison of the chains, and a thinned chain's ESS is
#: about min(its draws, the whole chain's ESS), so the ESS threshold holds)
CHECKED_DRAWS = 4000
SHOWN = 6  # elements a warning names


class ConvergenceWarning(UserWarning):
    """The chains of a ``th.infer`` run have not mixed, or have too few effective draws to tell:
    ``rhat`` and ``ess`` (bulk, per chain) map each element named (``"mu"``, ``"w[1]"``) to its
    value.

    >>> import thrifty as th
    >>> issubclass(th.ConvergenceWarning, UserWarning)
    True
    """

    def __init__(self, message: str, rhat: dict | None = None, ess: dict | None = None):
        super().__init__(message)
        self.rhat = rhat or {}
        self.ess = ess or {}


def _elements(samples, num_draws: int, meta: dict):
    """(name, (chains, draws, k) array) of the variables the check reads, at most
    ``CHECKED_ELEMENTS`` elements in all, in name order.  ``meta``: where each variable lives
    (``Result._meta``; a variable not in it is taken for a top-level one)."""
    left = CHECKED_ELEMENTS
    shape_of = getattr(samples, "value_shape", None)  # (a Result's: without building arrays)
    for name in sorted(samples):
        if shape_of is not None:
            shape = shape_of(name)
            if shape is None or int(np.prod(shape, dtype=np.int64)) > min(MAX_ELEMENTS, left):
                continue  # (a plate's 10⁵ columns are never built here)
        v = samples[name]
        if not isinstance(v, np.ndarray) or v.ndim < 2 or v.shape[1] != num_draws:
            continue  # kept as events (a large variable), or not per draw
        where = (meta.get(name) or ("root",))[0]
        k = int(np.prod(v.shape[2:], dtype=np.int64))
        if where == "mem" or v.dtype.kind not in "fiub" or k > MAX_ELEMENTS or k > left:
            continue
        every = -(-num_draws // max(CHECKED_DRAWS // v.shape[0], 200))
        x = v[:, ::every].reshape(v.shape[0], -1, k).astype(float)
        if where != "root" and np.all(np.isnan(x) | (x == np.round(x))):
            continue  # labels or discrete states (stored as floats where NaN marks absence)
        left -= k
        yield name, x


def _label(name: str, shape: tuple, j: int) -> str:
    if not shape:
        return name
    return f"{name}[{','.join(str(int(i)) for i in np.unravel_index(j, shape))}]"


def check_convergence(result) -> None:
    """Warn (:class:`ConvergenceWarning`) when some checked element has R-hat above
    :data:`RHAT_MAX` (two or more chains) or a bulk ESS below :data:`ESS_PER_CHAIN_MIN` per
    chain."""
    from thrifty.diagnostics._arviz import rhat_ess

    chains, draws = result.num_chains, result.num_draws
    if chains == 0 or draws < 4:
        return
    rhat: dict = {}
    ess: dict = {}
    meta = result._meta() if hasattr(result, "_meta") else {}
    for name, values in _elements(result.samples, draws, meta):
        shape = result.samples[name].shape[2:]
        ok = ~np.isnan(values).any(axis=(0, 1)) & (np.ptp(values, axis=(0, 1)) > 0)
        if not ok.any():
            continue
        cols = np.flatnonzero(ok)
        r, e = rhat_ess(values[:, :, cols])
        for j, rj, ej in zip(cols, r, e):
            label = _label(name, shape, int(j))
            if rj > RHAT_MAX:
                rhat[label] = float(rj)
            if ej < ESS_PER_CHAIN_MIN * chains:
                ess[label] = float(ej) / chains
    if not rhat and not ess:
        return
    parts = []
    if rhat:
        worst = sorted(rhat, key=rhat.get, reverse=True)
        who = (f"the {chains} chains disagree, so they have not mixed (a chain stuck in one "
               "mode, or still moving from its start)" if chains > 1 else
               "the chain's two halves disagree: it is still moving from its start, or has "
               "not mixed")
        if getattr(result, "config", {}).get("burn_in") == 0:
            who += (" — and no burn-in was discarded (burn_in=0: the draws start at the "
                    "initial trace, drawn from the prior or given by init=)")
        parts.append(f"R-hat above {RHAT_MAX} for {_names(worst)} (largest "
                     f"{rhat[worst[0]]:.3g}): {who}; the draws are not yet from the posterior")
    if ess:
        worst = sorted(ess, key=ess.get)
        parts.append(
            f"bulk ESS below {ESS_PER_CHAIN_MIN} per chain for {_names(worst)} (smallest "
            f"{ess[worst[0]]:.0f} per chain): too few effective draws for reliable estimates")
    warnings.warn(ConvergenceWarning(
        "; ".join(parts) + ". Run longer (num_samples, burn_in), run more chains, or use a "
        "kernel that moves these choices better", rhat, ess), stacklevel=user_stacklevel())


def _names(labels: list) -> str:
    shown = ", ".join(labels[:SHOWN])
    return shown if len(labels) <= SHOWN else f"{shown} and {len(labels) - SHOWN} more"
