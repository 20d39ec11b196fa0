"""``Result.summary`` of a program whose structure varies: each site over the draws where it
exists.

A choice that exists in some traces only (a branch, a ``th.mem`` key such as a CRP table's
parameters) is recorded as NaN in the draws without it, and ArviZ's summary of such a variable
is NaN.  :func:`summarise_partial` replaces those rows: mean, sd and the credible interval are
computed over every draw where the element exists (all chains pooled); ESS, R-hat and the MCSEs
over each chain's first m such draws, m the fewest in any chain that has the element (ArviZ
needs chains of one length), so they describe the chain restricted to the draws where the site
exists.  Elements that exist in the same draws are summarised together (one ArviZ call per
pattern of presence).
"""

from __future__ import annotations

import numpy as np

_DIAGNOSTICS = ("ess", "r_hat", "mcse")
_NOT_FORWARDED = ("var_names", "filter_vars", "coords", "group", "sample_dims", "dims")


class VaryingStructureWarning(UserWarning):
    """``summary()`` summarised sites that exist in some draws only over those draws;
    ``sites`` lists every such site with the fraction of draws it exists in."""

    sites: tuple = ()

    @classmethod
    def of(cls, partial: list) -> VaryingStructureWarning:
        w = cls(partial_note(partial))
        w.sites = tuple(partial)
        return w


SHOWN = 8  # sites a note names (a DP mixture's tables may number hundreds)


def _rows(table, name: str) -> np.ndarray:
    """Positions of the rows of variable ``name`` in an ArviZ summary (``name`` or
    ``name[...]``), in the order of its elements."""
    labels = [str(x) for x in table.index]
    return np.array([j for j, lab in enumerate(labels)
                     if lab == name or lab.startswith(name + "[")], dtype=np.int64)


def _summarise(values: np.ndarray, kwargs: dict):
    """ArviZ's summary of draws ``(chains, draws, k)``: k rows."""
    from thrifty.diagnostics._arviz import from_groups, summary

    return summary(from_groups({"posterior": {"x": values}}), **kwargs)


def _fill(table, rows: np.ndarray, mask: np.ndarray, values: np.ndarray, kwargs: dict) -> None:
    """Rows ``rows`` of ``table`` from ``values`` (chains, draws, k) at the draws ``mask``."""
    counts = mask.sum(axis=1)
    pooled = values[mask][None]  # (1, Σ counts, k): every draw where the elements exist
    if pooled.shape[1] < 2:
        return
    have = np.flatnonzero(counts)
    m = int(counts[have].min())
    first = np.stack([values[c][mask[c]][:m] for c in have])  # (chains, m, k)
    stats = _summarise(pooled, kwargs)
    diag = _summarise(first, kwargs) if m >= 4 else None
    for col in table.columns:
        j = table.columns.get_loc(col)
        if str(col).startswith(_DIAGNOSTICS):
            src = diag[col].to_numpy() if diag is not None and col in diag else np.nan
        elif col in stats:
            src = stats[col].to_numpy()
        else:
            continue
        table.iloc[rows, j] = src


def summarise_partial(table, posterior: dict, kwargs: dict) -> tuple:
    """``table`` (ArviZ's summary of ``posterior``, ``{name: (chains, draws, ...)}``) with the
    rows of elements that are NaN in some draws only summarised over the draws where they
    exist; returns ``(table, [(label, fraction of draws), ...])``."""
    kwargs = {k: v for k, v in kwargs.items() if k not in _NOT_FORWARDED}
    table = table.copy()
    partial = []
    for name, arr in posterior.items():
        arr = np.asarray(arr)
        if arr.dtype.kind != "f" or arr.ndim < 2:
            continue
        C, D = arr.shape[:2]
        flat = arr.reshape(C, D, -1)
        present = ~np.isnan(flat)  # (chains, draws, k)
        if present.all():
            continue
        rows = _rows(table, name)
        if len(rows) != flat.shape[2]:
            continue  # rows not one per element (cannot happen with ArviZ's labels)
        groups: dict = {}
        for k in range(flat.shape[2]):
            if present[:, :, k].any() and not present[:, :, k].all():
                groups.setdefault(present[:, :, k].tobytes(), []).append(k)
        for ks in groups.values():
            mask = present[:, :, ks[0]]
            _fill(table, rows[ks], mask, flat[:, :, ks], kwargs)
            labels = [name] if len(ks) == flat.shape[2] else [
                str(table.index[r]) for r in rows[ks]]
            partial += [(lab, float(mask.mean())) for lab in labels]
    return table, sorted(partial)


def partial_note(partial: list) -> str:
    """The warning of :func:`summarise_partial`'s sites (label, fraction of draws): each site
    when there are at most :data:`SHOWN`, else the ones present in the most draws and a
    count of the others."""
    shown = partial
    if len(partial) > SHOWN:
        top = sorted(partial, key=lambda p: -p[1])[:SHOWN]
        shown = sorted(top)
    sites = ", ".join(f"{lab!r} ({100 * f:.0f}% of draws)" for lab, f in shown)
    if len(partial) > SHOWN:
        rest = [f for lab, f in partial if (lab, f) not in shown]
        sites = (f"{len(partial)} of them; those in the most draws: {sites}; the other "
                 f"{len(rest)} exist in at most {100 * max(rest):.0f}% of draws (the warning's "
                 "sites attribute lists them all)")
    return (f"summary: sites that exist in some draws only (the program's structure varies): "
            f"{sites}. Their rows summarise the draws where they exist: mean, sd and interval "
            "over all of them, ESS, R-hat and MCSE over each chain's first m of them (m: the "
            "fewest in any chain; NaN below 4)")
