"""ArviZ, imported at first use, and the few calls whose form differs between ArviZ 1.x and 0.2x.

ArviZ 1.x (Python ≥ 3.12; ``arviz-base``/``arviz-stats``/``arviz-plots``, results as an
``xarray.DataTree``) is what ``pip install arviz`` gives today; on older Pythons pip resolves
ArviZ 0.2x (``InferenceData``).  thrifty works with both: everything that builds, summarises or
plots goes through the functions here.
"""

from __future__ import annotations

import functools
import warnings
from importlib.metadata import version

import numpy as np

AZ1 = int(version("arviz").split(".")[0]) >= 1
"""Whether the installed ArviZ is 1.x (DataTree-based)."""


@functools.cache
def _az():
    """ArviZ, imported at its first use: its import takes seconds, which a process that never
    summarises (a chain's worker process, one that unpickles a model and imports its module)
    should not pay."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # 0.2x's banner about the 1.0 refactor
        import arviz

    return arviz


def from_groups(groups: dict[str, dict], coords: dict | None = None, dims: dict | None = None):
    """A ``DataTree`` (1.x) or ``InferenceData`` (0.2x) of ``{group: {variable: array}}``;
    arrays of sampled groups have leading (chain, draw) axes, ``observed_data`` none."""
    groups = {g: v for g, v in groups.items() if v}
    if AZ1:
        return _az().from_dict(groups, coords=coords, dims=dims)
    return _az().from_dict(**groups, coords=coords, dims=dims)


def merge(data, other):
    """``data`` with the groups of ``other`` added."""
    if AZ1:
        for name, child in other.children.items():
            data[name] = child
        return data
    data.extend(other)
    return data


def ess(x: np.ndarray, method: str = "bulk") -> float:
    """Effective sample size (``method``: ``"bulk"``, ``"mean"``, ``"tail"``, …) of draws of
    shape (chains, draws) or (draws,)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None]
    if AZ1:
        return float(_az().ess(x, method=method, chain_axis=0, draw_axis=1))
    return float(_az().ess(x, method=method))


def summary(data, var_names=None, **kwargs):
    """``arviz.summary`` as a numeric DataFrame (1.x rounds for display unless told not to)."""
    if AZ1:
        kwargs.setdefault("round_to", "none")
    return _az().summary(data, var_names=var_names, **kwargs)


def trace_figure(data, var_names=None, **kwargs):
    """A matplotlib figure of ``plot_trace`` (0.2x) / ``plot_trace_dist`` (1.x): per variable,
    the marginal density of each chain beside its trace."""
    if AZ1:
        pc = _az().plot_trace_dist(data, var_names=var_names, backend="matplotlib", **kwargs)
        if "chain" in data["posterior"].dims and data["posterior"].sizes["chain"] > 1:
            pc.add_legend("chain", loc="outside right upper")
        fig = pc.viz["figure"].item()
    else:
        with warnings.catch_warnings():  # 0.2x's use of deprecated matplotlib API
            warnings.filterwarnings("ignore", category=DeprecationWarning, module="arviz")
            warnings.filterwarnings("ignore", message=".*alias_mapping.*")
            fig = np.ravel(_az().plot_trace(data, var_names=var_names, **kwargs))[0].figure
    fig.set_layout_engine("constrained")  # titles and tick labels without overlaps
    return fig


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalised draws (Vehtari et al. 2021, Eq. 14; Blom's offsets): the pooled ranks of
    each row of ``x`` (k, chains, draws) mapped through the normal quantile function."""
    from scipy import special

    flat = x.reshape(len(x), -1)
    m = flat.shape[1]
    order = np.argsort(flat, axis=1)
    s = np.take_along_axis(flat, order, axis=1)
    step = s[:, 1:] != s[:, :-1]  # ties share the mean of their ranks (scipy's "average")
    pos = np.broadcast_to(np.arange(m), s.shape)
    first = np.maximum.accumulate(np.where(np.pad(step, ((0, 0), (1, 0)), constant_values=True),
                                           pos, 0), axis=1)
    last = np.minimum.accumulate(np.where(np.pad(step, ((0, 0), (0, 1)), constant_values=True),
                                          pos, m - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty_like(flat)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return special.ndtri((ranks - 0.375) / (m + 0.25)).reshape(x.shape)


def rhat_ess(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat (the larger of the bulk's and the folded draws') and bulk
    ESS of each column of draws ``(chains, draws, k)`` (ESS over all the chains; R-hat NaN
    for one chain), as ArviZ's ``rhat(method="rank")`` and ``ess(method="bulk")`` define them
    (Vehtari et al. 2021, §4.2–4.3).  The rank normalisation is done here, for every column in
    one vectorised pass, and ArviZ's split R-hat and ESS are applied to it: about half the
    time of ArviZ's rank methods on 64 columns of 4,000 draws
    (``benchmarks/runtime_overheads.py``).  One chain's split R-hat compares its two halves
    (as Stan reports it): a chain still moving from its start shows there."""
    x = np.moveaxis(np.asarray(values, dtype=float), 2, 0)  # (k, chains, draws)
    z = _z_scale(x)
    folded = _z_scale(np.abs(x - np.median(x.reshape(len(x), -1), axis=1)[:, None, None]))
    one = x.shape[1] == 1  # (ArviZ's split R-hat wants two chains: split it here)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if AZ1:
            from arviz_stats.base import array_stats

            how = "identity" if one else "split"
            rhat = np.maximum(array_stats.rhat(_halves(z) if one else z, method=how),
                              array_stats.rhat(_halves(folded) if one else folded, method=how))
            return np.asarray(rhat, float), np.asarray(array_stats.ess(z, method="mean"), float)
        how = "identity" if one else "split"
        rhat = [max(_az().rhat(a, method=how), _az().rhat(b, method=how))
                for a, b in zip(_halves(z) if one else z, _halves(folded) if one else folded)]
        ess = [_az().ess(a, method="mean") for a in z]
        return np.asarray(rhat, float), np.asarray(ess, float)


def _halves(x: np.ndarray) -> np.ndarray:
    """(k, 1, draws) → (k, 2, draws // 2): one chain's first and second halves (the middle
    draw of an odd number left out), the chains of its split R-hat."""
    h = x.shape[2] // 2
    return np.stack([x[:, 0, :h], x[:, 0, x.shape[2] - h:]], axis=1)
