"""The observations of a run, as arrays named like the results' variables.

A run in ``capture`` mode lists every observation it executed as ``(address, distribution,
value, element indices)`` — one entry per top-level or markov-step observation, one per
vectorized plate observation (address with ``"*"`` in place of the element).  Here those
entries become ``{name: (dims, array)}``: ``name`` drops the indices as result names do
(``"data.y"``, ``"s.y"``), a plate's elements are the dimension named after the plate
(``"data"``) and a chain's steps the dimension ``"<chain>_t"`` (``"s_t"``).  The values are the
observed (or, in a predictive run, simulated) values, or their log-densities per observation
(a plate element's or a step's observation is one point: its event dimensions are summed).
Steps whose observations differ in length (a ragged series) share one array, NaN after the
end of each shorter one; observations under one name whose values differ in rank (a scalar at
one step, a vector at another) have no array, and a :class:`VaryingRankWarning` says so.
"""

from __future__ import annotations

import warnings

import numpy as np

from thrifty._warn import user_stacklevel
from thrifty.core.address import dotted


class VaryingRankWarning(UserWarning):
    """Observations under one name whose values differ in rank were left out of the observed
    data, the predictive or the pointwise log-likelihood (no one array holds them)."""


class FactorWarning(UserWarning):
    """Top-level factors (``th.factor``) were left out of the pointwise log-likelihood, as
    prior terms: a factor's log-weight may be a prior term or a likelihood term, and only
    observations are its points."""


def factors_left_out(names: list) -> None:
    """Warn that the top-level factors ``names`` are not in the pointwise log-likelihood."""
    warnings.warn(FactorWarning(
        f"log_likelihood: the factor(s) {', '.join(map(repr, names))} are left out of the "
        "pointwise log-likelihood (taken as prior terms: its points are the observations); "
        "if one is a likelihood term, LOO and WAIC leave it out too — write it as th.observe "
        "with a distribution"
    ), stacklevel=user_stacklevel())


def left_out(name: str, ranks) -> None:
    """Warn that the observations ``name``, of the value ranks ``ranks``, have no array."""
    warnings.warn(VaryingRankWarning(
        f"observations {name!r} are left out of the observed data and the predictive: their "
        f"values have ranks {sorted(set(ranks))} at different addresses or draws, and no one "
        "array holds them; observe values of different ranks under different names"
    ), stacklevel=user_stacklevel())


def _is_index(p) -> bool:
    return p == "*" or (isinstance(p, (int, np.integer)) and not isinstance(p, bool))


def layout(addr: tuple) -> tuple[str, list[str]]:
    """``(name, dims)`` of an observation address: ``("data", "*", "y")`` → ``("data.y",
    ["data"])``, ``("s", 3, "y")`` → ``("s.y", ["s_t"])``."""
    name = dotted(tuple(p for p in addr if not _is_index(p)))
    dims = []
    for i, p in enumerate(addr):
        if _is_index(p):
            prefix = dotted(tuple(q for q in addr[:i] if not _is_index(q)))
            dims.append(prefix if p == "*" else f"{prefix}_t")
    return name, dims


def _pointwise_lp(d, value, members) -> np.ndarray | float:
    lp = np.asarray(d.log_prob(value), dtype=float)
    if members is None:
        return float(lp.sum())
    if lp.ndim == 0:  # one number observed by every element, under shared parameters
        return np.full(len(members), float(lp))
    return lp.reshape(len(members), -1).sum(axis=1)


def gather(captured: list, what: str = "value") -> dict[str, tuple[list[str], np.ndarray]]:
    """``{name: (dims, array)}`` of the entries of ``run.captured``; ``what`` is ``"value"``
    (the observed values) or ``"log_lik"`` (log-density per observation)."""
    groups: dict[str, tuple[list, list]] = {}
    for addr, d, value, members in captured:
        x = _pointwise_lp(d, value, members) if what == "log_lik" else np.asarray(value)
        name, dims = layout(addr)
        groups.setdefault(name, (dims, []))[1].append((addr, members, x))
    out = {}
    for name, (dims, items) in groups.items():
        if not dims:
            out[name] = (dims, items[-1][2])
            continue
        cols, vals = [], []
        for addr, members, x in items:
            k = 1 if members is None else len(members)
            idx = [np.asarray(members) if p == "*" else np.full(k, p) for p in addr if _is_index(p)]
            cols.append(idx)
            x = np.asarray(x, dtype=float)
            if members is not None and x.ndim == 0:  # one number observed by every element
                x = np.full(k, x)
            vals.append(x.reshape((k,) + x.shape[1:]) if members is not None else x[None])
        if len({v.ndim for v in vals}) != 1:  # varying rank under one name: no array
            left_out(name, [v.ndim - 1 for v in vals])
            continue
        event = tuple(max(v.shape[j] for v in vals) for j in range(1, vals[0].ndim))
        shape = tuple(int(max(c[j].max() for c in cols)) + 1 for j in range(len(dims)))
        arr = np.full(shape + event, np.nan)
        for idx, v in zip(cols, vals):  # (values of varying length: NaN after each one's end)
            arr[tuple(idx) + tuple(slice(0, k) for k in v.shape[1:])] = v
        out[name] = (dims, arr)
    return out


def stack(per_draw: list[dict]) -> dict[str, np.ndarray]:
    """Arrays ``(draws, ...)`` of the per-draw ``gather`` outputs (padded with NaN where a
    draw has fewer steps or elements)."""
    names = dict.fromkeys(n for g in per_draw for n in g)
    out = {}
    for n in names:
        xs = [np.asarray(g[n][1], dtype=float) if n in g else None for g in per_draw]
        shapes = [x.shape for x in xs if x is not None]
        if len({len(s) for s in shapes}) != 1:
            left_out(n, [len(s) for s in shapes])
            continue
        shape = tuple(max(s[j] for s in shapes) for j in range(len(shapes[0])))
        arr = np.full((len(xs),) + shape, np.nan)
        for i, x in enumerate(xs):
            if x is not None:
                arr[(i,) + tuple(slice(0, s) for s in x.shape)] = x
        out[n] = arr
    return out


def dims_of(per_draw: list[dict]) -> dict[str, list[str]]:
    """The dimension names of each gathered variable (first draw that has it)."""
    out: dict = {}
    for g in per_draw:
        for n, (dims, _) in g.items():
            out.setdefault(n, dims)
    return out
