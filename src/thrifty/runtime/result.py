"""``Result``: the draws of ``th.infer``, with summaries, ArviZ conversion and plots."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from thrifty._warn import user_stacklevel
from thrifty.core.address import as_pattern, dotted
from thrifty.errors import RecordingError, SelectionError
from thrifty.runtime.draws import DrawStore, Series, SparseDraws

DENSE_BYTES = 2**27
"""Default budget (bytes) of a variable kept dense: a variable of ``chains × draws × size ×
itemsize`` above it (a large plate site) is kept as events (:class:`SparseDraws`) and
materialised when read (``result[name]``)."""


def _common_layout(series: list[Series]):
    lays = [s.layout() for s in series if len(s)]
    if not lays or any(lay is None for lay in lays):
        return None
    shapes = {lay[0] for lay in lays}
    if len(shapes) != 1:
        return None
    dtype = np.result_type(*[lay[1] for lay in lays])
    complete = all(lay[2] for lay in lays) and len(lays) == len(series)
    return shapes.pop(), dtype, complete


def _variable(name: str, series: list[Series], n: int, dense_bytes: int):
    """The (chains, n, ...) array of a variable, or its :class:`SparseDraws`."""
    lay = _common_layout(series)
    if lay is None:  # (each chain's values may have one shape, another in another chain)
        out = np.empty((len(series), n), dtype=object)
        for c, s in enumerate(series):
            out[c] = s.objects(n) if len(s) else np.full(n, None)
        return out
    shape, dtype, complete = lay
    if not complete and dtype.kind != "f":
        dtype = np.dtype(float)
    nbytes = len(series) * n * int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes > dense_bytes and shape:
        return SparseDraws(name, series, n, shape, dtype)
    out = np.empty((len(series), n) + shape, dtype=dtype)
    for c, s in enumerate(series):
        if len(s):
            s.materialize(n, out=out[c])
        else:
            out[c] = np.nan
    return out


class Samples(Mapping):
    """name → the variable's (chains, draws, ...) array, or its :class:`SparseDraws`.

    A variable's dense array is built from the recorded events the first time it is read, and
    kept: ``th.infer`` returns in time proportional to what the draws changed, not to
    draws × size (a chain of T steps, recorded for every draw, costs T × draws only when read).
    """

    def __init__(self, series: dict[str, list[Series]], n: int, dense_bytes: int):
        self._series, self._n, self._dense_bytes = series, n, dense_bytes
        self._built: dict = {}

    def __getitem__(self, name):
        v = self._built.get(name)
        if v is None:
            v = self._built[name] = _variable(name, self._series[name], self._n,
                                              self._dense_bytes)
        return v

    def value_shape(self, name) -> tuple | None:
        """The shape of one draw of ``name`` (None for values of no common array layout),
        read from its events without building its array."""
        v = self._built.get(name)
        if v is not None:
            return v.shape[2:] if v.dtype != object else None
        lay = _common_layout(self._series[name])
        return None if lay is None else lay[0]

    def __contains__(self, name) -> bool:
        return name in self._series

    def __iter__(self):
        return iter(self._series)

    def __len__(self) -> int:
        return len(self._series)

    def __repr__(self) -> str:
        return f"Samples({list(self._series)})"


def stack_stores(stores: list[DrawStore], n: int, dense_bytes: int = DENSE_BYTES) -> Samples:
    """Variables of the first ``n`` draws of each chain: arrays (chains, n, ...) or sparse,
    each built when first read."""
    names = dict.fromkeys(k for st in stores for k in st.series)
    empty = Series()
    return Samples({name: [st.series.get(name, empty) for st in stores] for name in names}, n,
                   dense_bytes)


def build_result(records, *, program, stats, interrupted, notes, config,
                 dense_bytes: int = DENSE_BYTES) -> Result:
    """The :class:`Result` of per-chain records (their :class:`DrawStore`).  Chains of unequal
    lengths (an interrupted run) are truncated to the shortest and chains without draws left
    out; the full per-chain data is then kept on the result."""
    lens = [r.num_draws for r in records]
    if interrupted:  # (a failed chain's draws are kept in ``full`` only)
        ids = [c for c, n in enumerate(lens) if n > 0 and records[c].status != "failed"]
    else:
        ids = list(range(len(records)))
    n = min((lens[c] for c in ids), default=0)
    truncated = len(ids) < len(records) or any(lens[c] != n for c in ids)
    for r in records:  # the result shares the stores' arrays: no spare capacity kept
        r.store.trim()
    stores = [records[c].store for c in ids]
    samples = stack_stores(stores, n, dense_bytes) if ids else Samples({}, 0, dense_bytes)
    sample_stats = {
        "lp": np.array([st.lp[:n] for st in stores], dtype=float).reshape(len(ids), n),
        "n_latent": np.array([st.n_latent[:n] for st in stores], dtype=np.int64).reshape(
            len(ids), n
        ),
    }
    for name in sorted(set().union(*(st.stats.keys() for st in stores)) if stores else ()):
        sample_stats[name] = _stat_array(
            name, [st.stats.get(name, np.full(n, np.nan))[:n] for st in stores], n)
    full = None
    if truncated:
        full = []
        for c, r in enumerate(records):
            m = lens[c]
            full.append(
                {
                    "draws": stack_stores([r.store], m, dense_bytes),  # (built when read)
                    "store": r.store.prefix(m),
                    "sample_stats": {
                        "lp": np.array(r.store.lp[:m], dtype=float),
                        "n_latent": np.array(r.store.n_latent[:m], dtype=np.int64),
                        **{k: _stat_array(k, [v[:m]], m)[0] for k, v in r.store.stats.items()},
                    },
                }
            )
    return Result(
        samples,
        [st.prefix(n, lp=lp) for st, lp in zip(stores, sample_stats["lp"])],
        stats,
        sample_stats,
        interrupted=interrupted,
        program=program,
        notes=notes,
        chain_ids=ids,
        full=full,
        config=config,
    )


_INTEGER_STATS = ("tree_depth", "n_steps")


def _stat_array(name: str, columns: list, n: int) -> np.ndarray:
    """Per-chain columns of a kernel statistic as a (chains, draws) array in ArviZ's dtype:
    ``diverging`` boolean, tree depths and step counts integers (where recorded)."""
    a = np.array(columns, dtype=float).reshape(len(columns), n)
    base = name.rsplit(".", 1)[-1]
    if base == "diverging":
        return a == 1.0
    if base in _INTEGER_STATS and not np.isnan(a).any():
        return a.astype(np.int64)
    return a


def _check_entry(shape: tuple, e: int, addr: tuple, name: str) -> None:
    if len(shape) < 3 or not 0 <= e < shape[2]:
        raise SelectionError(f"no variable at address {addr!r}: {name!r} has "
                       f"{shape[2] if len(shape) >= 3 else 'no'} elements at each draw")


def _entry(v: np.ndarray, e: int, addr: tuple, name: str) -> np.ndarray:
    """Element or step ``e`` of each draw of the (chains, draws, ...) variable ``name``: NaN
    at draws whose value has no such entry (a plate a choice resized; an object array holds
    values of varying sizes)."""
    if v.dtype != object:
        _check_entry(v.shape, e, addr, name)
        return v[:, :, e]
    out = np.full(v.shape, np.nan)
    for idx, x in np.ndenumerate(v):
        if x is not None and np.ndim(x) and 0 <= e < len(x):
            out[idx] = x[e]
    if np.isnan(out).all():
        raise SelectionError(
            f"no variable at address {addr!r}: no draw of {name!r} has element {e}")
    return out


COMPACT_ABOVE = 12
_EXTREME = 1e100  # variables of magnitude beyond [1/_EXTREME, _EXTREME] are summarised rescaled


def _rescale(post) -> dict:
    """Divide each element of a float variable whose magnitude lies beyond 1e±100 by a power
    of two near it (exact), in place: variances of values around 1e300 overflow (sd = inf,
    MCSE NaN) and of values around 1e-300 underflow (sd = 0, silently).  Returns {variable:
    the (element-shaped) scales}."""
    scales = {}
    for v in list(post.data_vars):
        a = post[v].values
        if a.dtype.kind != "f" or a.ndim < 2 or not a.size:
            continue
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (an element NaN in every draw)
            m = np.nanmax(np.abs(a), axis=(0, 1))
            far = np.isfinite(m) & (m > 0) & ((m < 1 / _EXTREME) | (m > _EXTREME))
            if far.any():
                scale = np.where(far, 2.0 ** np.floor(np.log2(np.where(far, m, 1.0))), 1.0)
                scales[str(v)] = scale
                post[v] = post[v] / scale
    return scales


def _unscale(table, scales: dict) -> None:
    """Multiply back the columns of a summary that scale with the values (all but ESS and
    R-hat) in the rows of the rescaled variables (``x``, ``x[0]``, ...: one per element, in
    C order)."""
    if not scales:
        return
    cols = [c for c in table.columns if not c.startswith(("ess", "r_hat"))]
    names = np.array([str(i).split("[", 1)[0] for i in table.index])
    for v, scale in scales.items():
        rows = names == v
        if rows.sum() == scale.size:
            table.loc[rows, cols] *= scale.reshape(-1, 1)
"""``plot_trace`` draws one panel per element of the plotted variables up to this many, then
one panel per variable (elements overlaid)."""


class Result:
    """Draws of ``th.infer``.

    ``result[name]`` is an array of shape ``(chains, draws, *value_shape)`` — ``name`` as in
    ``"w"``, ``"data.z"`` (plate site: one column per element) or ``"s.x"`` (markov site: one
    column per step); ``result[("data", 3, "z")]`` is one element.  ``result.output`` holds the
    program's return values (per chain, a list per draw), ``result.sample_stats`` per-draw
    statistics (``lp``: log joint density, NaN when stale; ``n_latent``: number of latent
    choices), ``result.stats`` per-kernel statistics (label → aggregates over the chains of the
    sampling steps — after the burn-in, ``num_samples * thin`` per chain, as Stan's and PyMC's
    sampler statistics —, the burn-in's with the same keys under ``"burn_in"``, the per-chain
    values under ``"chains"``) and, under ``"run"``, the whole run's, burn-in included:
    ``wall_time`` (seconds), ``draws``, ``steps`` (this call's, of every chain),
    ``draws_per_second``, ``steps_per_second``, ``init_seconds`` and ``chain_seconds`` (each
    chain's start and loop), ``chains``, ``workers``, ``start_method`` and ``interrupted``.

    After an interrupted run (``interrupted`` is True) the arrays hold the chains listed in
    ``chain_ids`` truncated to the shortest (``truncated`` is True if anything was cut);
    ``chain_draws``, ``chain_output`` and ``chain_sample_stats`` keep every draw of every chain.
    ``summary()``, ``to_arviz()`` and ``plot_trace()`` use ArviZ.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     th.observe("y", dist.Normal(th.sample("mu", dist.Normal(0.0, 1.0)), 1.0), 0.5)
    >>> r = th.infer(m(), th.mh("mu", th.drift(1.0)), num_samples=100, chains=2, seed=0,
    ...              progress=False)
    >>> r["mu"].shape, r.num_chains, r.num_draws
    ((2, 100), 2, 100)
    """

    def __init__(
        self,
        samples: Mapping,
        output: list,
        stats: dict,
        sample_stats: dict[str, np.ndarray] | None = None,
        interrupted: bool = False,
        program=None,
        *,
        notes: list[str] | None = None,
        chain_ids: list[int] | None = None,
        full: list[dict] | None = None,
        config: dict | None = None,
    ):
        self.samples = samples  # name → array, or SparseDraws for a variable kept as events
        self._stores = output if output and isinstance(output[0], DrawStore) else None
        self._output = None if self._stores is not None else output
        self.stats = stats
        self.sample_stats = sample_stats or {}
        self.interrupted = interrupted
        self.failed_chains: dict[int, str] = {}  # chain → error, for chains whose worker failed
        self.program = program
        self.notes = list(notes or [])
        n_chains = len(output)
        self.chain_ids = list(range(n_chains)) if chain_ids is None else list(chain_ids)
        self._n_chains = n_chains
        self._full = full
        self.config = config or {}
        self.posterior_predictive = None  # set by th.predictive(program, result)
        self._ll = None  # pointwise log-likelihood, computed once

    # -- access ---------------------------------------------------------------------------------
    @property
    def output(self) -> list[list[Any]]:
        """The program's return value at each draw, per chain.  Outputs that read plate values
        after a partial execution are computed here from the recorded draws (one full
        execution per such draw, the first time ``output`` is read)."""
        if self._output is None:
            from thrifty.runtime.replay_values import outputs_from_values

            self._output = [outputs_from_values(self.program, st) for st in self._stores]
        return self._output

    def __getitem__(self, name) -> np.ndarray:
        if isinstance(name, tuple):
            key = dotted(name)
            if key in self.samples:
                return self._dense(key)
            return self._element(name)
        if name in self.samples:
            return self._dense(name)
        keys = self._mem_keys(name)
        if keys:  # a memoized function: its keys stacked on axis 2, as in to_arviz
            from thrifty.runtime.arviz_io import merge_mems

            merged = merge_mems({n: self._dense(n) for n in keys}, self._meta())[0]
            if name in merged:
                return merged[name]
            raise SelectionError(f"{name!r}: the keys of this memoized function hold values of "
                           f"different shapes; read them one by one: {', '.join(keys)}")
        if self.num_draws == 0:
            raise SelectionError(f"no variable {name!r}: the result holds no draws (num_samples=0, "
                           "or the run was interrupted before its first draw)")
        raise SelectionError(
            f"no variable {name!r} in the result; variables: {', '.join(sorted(self.samples))}"
        )

    def _meta(self) -> dict:
        """Where each variable lives (``("mem", addr, key)``, plate, …), over every chain (a
        key may exist in one chain's draws only)."""
        out: dict = {}
        for st in self._stores or ():
            out.update(st.meta)
        return out

    def _mem_keys(self, name: str) -> list[str]:
        """The per-key variables (``w.0``, ``w.1``, …) of the memoized function ``name``."""
        meta = self._meta()
        return [n for n, m in meta.items()
                if m is not None and m[0] == "mem" and dotted(m[1]) == name and n in self.samples]

    def _dense(self, name) -> np.ndarray:
        v = self.samples[name]
        return v.materialize() if isinstance(v, SparseDraws) else v

    def sparse(self, name: str) -> SparseDraws | None:
        """The events of a variable kept sparse (too large to keep dense; see ``dense_bytes``
        of :func:`thrifty.infer`): ``.mean()``, ``.var()`` per element without materialising,
        ``.materialize()``.  None for a variable kept dense."""
        if name not in self.samples:
            raise SelectionError(f"no variable {name!r} in the result")
        v = self.samples[name]
        return v if isinstance(v, SparseDraws) else None

    def _element(self, addr: tuple) -> np.ndarray:
        """``result[("data", 17, "z")]``: one element of a stacked plate / chain variable."""
        for i, part in enumerate(addr):
            if isinstance(part, (int, np.integer)) and i > 0:
                name = dotted(addr[:i] + addr[i + 1 :])
                if name in self.samples:
                    v = self.samples[name]
                    if isinstance(v, SparseDraws):  # (large: one chain at a time)
                        _check_entry(v.shape, int(part), addr, name)
                        return np.stack([
                            s.materialize(v.n)[:, int(part)] if len(s) else np.full(v.n, np.nan)
                            for s in v.series])
                    return _entry(v, int(part), addr, name)
        raise SelectionError(
            f"no variable at address {addr!r}; variables: {', '.join(sorted(self.samples))}"
        )

    def __contains__(self, name) -> bool:
        return name in self.samples

    def keys(self):
        return self.samples.keys()

    @property
    def num_chains(self) -> int:
        return self._n_chains

    @property
    def num_draws(self) -> int:
        if self._stores is not None:
            return self._stores[0].n if self._stores else 0
        return len(self._output[0]) if self._output else 0

    def select(self, pattern) -> dict[str, np.ndarray]:
        p = dotted(as_pattern(pattern))
        return {k: self._dense(k) for k in self.samples if k == p or k.startswith(p + ".")}

    # -- every draw of every chain (differs from the arrays after an interruption) ---------------
    @property
    def truncated(self) -> bool:
        """Whether the arrays leave out draws (an interrupted run with unequal chains)."""
        return self._full is not None

    @property
    def chain_draws(self) -> list[dict[str, np.ndarray]]:
        """Per chain (all chains of the run), ``{name: array (draws, ...)}`` with every draw."""
        if self._full is not None:
            return [
                {k: np.asarray(v)[0] for k, v in f["draws"].items()}  # (SparseDraws too)
                for f in self._full
            ]
        return [{k: self._dense(k)[i] for k in self.samples} for i in range(self.num_chains)]

    @property
    def chain_output(self) -> list[list[Any]]:
        if self._full is not None:
            from thrifty.runtime.replay_values import outputs_from_values

            return [outputs_from_values(self.program, f["store"]) for f in self._full]
        return self.output

    @property
    def chain_sample_stats(self) -> list[dict[str, np.ndarray]]:
        if self._full is not None:
            return [f["sample_stats"] for f in self._full]
        return [{k: v[i] for k, v in self.sample_stats.items()} for i in range(self.num_chains)]

    # -- ArviZ ------------------------------------------------------------------------------------
    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def to_arviz(self, var_names=None, *, log_likelihood: bool = False, prior=None,
                 coords: dict | None = None, dims: dict | None = None):
        """The draws as ArviZ data: an ``xarray.DataTree`` on ArviZ 1.x (``InferenceData`` on
        0.2x) with the groups ``posterior`` (the numeric variables; others are skipped with a
        note in ``result.notes``), ``sample_stats`` (``lp``, ``n_latent``), ``observed_data``
        and, when asked for or computed,

        * ``log_likelihood`` (``log_likelihood=True``): the log-density of every observation at
          every draw (a plate's elements along the plate's dimension) for ``az.loo`` and
          ``az.compare`` — one full execution of the program per kept draw;
        * ``posterior_predictive``: after ``th.predictive(program, result)``;
        * ``prior``/``prior_predictive``: ``prior=th.predictive(program)``.

        Plate sites have the plate's name as a dimension (coordinates: element indices), markov
        sites ``<chain>_t``, memoized functions one variable with a ``<name>_key`` coordinate;
        ``coords``/``dims`` add or override names (``dims={"w": ["feature"]}``).  Variables
        kept sparse (``result.sparse(name)``) are left out unless named in ``var_names``.
        """
        from thrifty.runtime.arviz_io import numeric, to_arviz_groups

        var_names = self._check_names(var_names)
        wanted = None if var_names is None else {n.lstrip("~") for n in var_names}
        posterior = {}
        for name, arr in self.samples.items():
            if isinstance(arr, SparseDraws):
                if wanted is None or name not in wanted:
                    self._note(
                        f"to_arviz: variable {name!r} left out of the posterior (kept sparse: "
                        f"{arr.dense_nbytes / 2**20:.0f} MiB dense; name it in var_names to "
                        "include it, or read result.sparse(name).mean())"
                    )
                    continue
                arr = arr.materialize()
            arr, why = numeric(arr)
            if arr is None:
                self._note(f"to_arviz: variable {name!r} left out of the posterior ({why})")
                continue
            posterior[name] = arr
        groups = {"posterior": posterior, "sample_stats": dict(self.sample_stats)}
        obs_dims: dict = {}
        if self.program is not None and self._stores is not None:
            groups.update(self._observation_groups(log_likelihood, prior, obs_dims))
        meta = self._meta()
        return to_arviz_groups(groups, meta, obs_dims, coords, dims, chain_ids=self.chain_ids,
                               prior_meta=None if prior is None else prior.meta)

    def _observation_groups(self, log_likelihood: bool, prior, obs_dims: dict) -> dict:
        from thrifty.runtime.pointwise import log_likelihood as pointwise
        from thrifty.runtime.pointwise import observed_data

        out: dict = {}
        observed, dims = observed_data(self.program)
        out["observed_data"] = observed
        obs_dims.update(dims)
        if log_likelihood:
            if self._ll is None:
                self._ll = pointwise(self)
            out["log_likelihood"] = self._ll[0]
            obs_dims.update(self._ll[1])
        for pred in (self.posterior_predictive, prior):
            if pred is not None:
                out.update({g: v for g, v in pred.groups().items() if g != "observed_data"})
                obs_dims.update(pred.dims)
        return out

    def summary(self, var_names=None, **kwargs):
        """``arviz.summary`` as a pandas DataFrame of numbers, one row per (element of a)
        variable: mean, sd, a credible interval (ArviZ 1.x: ``eti89_lb``/``eti89_ub``; 0.2x:
        ``hdi_3%``/``hdi_97%``), ``ess_bulk``, ``ess_tail``, ``r_hat`` and MCSEs.

        A site that exists in some draws only (the program's structure varies: a branch, the
        keys of a ``th.mem`` table) is summarised over the draws where it exists, with a
        :class:`~thrifty.runtime.summary.VaryingStructureWarning` naming each such site and
        the fraction of draws (:mod:`thrifty.runtime.summary`)."""
        from thrifty.diagnostics._arviz import AZ1, summary
        from thrifty.runtime.summary import VaryingStructureWarning, summarise_partial

        if self.num_draws < 2:
            raise RecordingError(f"summary() needs at least 2 draws per chain; the result holds "
                             f"{self.num_draws} (num_samples={self.num_draws}?)")
        var_names = self._check_names(var_names)
        data = self._posterior_only(var_names)
        post = data["posterior"] if AZ1 else data.posterior
        scales = _rescale(post)
        table = summary(data, var_names=var_names, **kwargs)
        table, partial = summarise_partial(
            table, {str(v): post[v].values for v in post.data_vars}, kwargs)
        _unscale(table, scales)
        if partial:
            w = VaryingStructureWarning.of(partial)
            self._note(str(w))
            warnings.warn(w, stacklevel=user_stacklevel())
        return table

    def _posterior_only(self, var_names):
        """``to_arviz`` without the observation groups (what summaries and plots read)."""
        program, self.program = self.program, None
        try:
            return self.to_arviz(var_names)
        finally:
            self.program = program

    def plot_trace(self, var_names=None, path=None, **kwargs):
        """Trace plot (ArviZ's ``plot_trace_dist`` on 1.x, ``plot_trace`` on 0.2x): per
        variable, each chain's marginal density beside its trace.  Returns the matplotlib
        figure (saved to ``path`` if given)."""
        use_agg_without_display()
        from thrifty.diagnostics._arviz import AZ1, trace_figure

        if self.num_draws < 2:
            raise RecordingError(f"plot_trace() needs at least 2 draws per chain; the result holds "
                             f"{self.num_draws} (num_samples={self.num_draws}?)")
        var_names = self._check_names(var_names)
        data = self._posterior_only(var_names)
        if "compact" not in kwargs:  # a panel per element while there are few of them
            post = data["posterior"] if AZ1 else data.posterior
            names = var_names or list(post.data_vars)
            size = sum(int(np.prod(post[n].shape[2:])) for n in names if not n.startswith("~"))
            kwargs["compact"] = size > COMPACT_ABOVE
        fig = trace_figure(data, var_names=var_names, **kwargs)
        if path is not None:
            fig.savefig(os.fspath(path), bbox_inches="tight")
        return fig

    def _check_names(self, var_names):
        if not self.samples:  # (ArviZ: a bare 'Can not extract posterior')
            raise RecordingError(
                "the result holds no variable to show: record= / exclude= left every one out, "
                "or the program has none (a th.markov chain of no steps)")
        if var_names is None:
            return None
        if isinstance(var_names, str):
            var_names = [var_names]
        meta = self._meta()
        for n in var_names:
            m = meta.get(n.lstrip("~"))
            if m is not None and m[0] == "mem" and n.lstrip("~") in self.samples:
                raise SelectionError(
                    f"{n!r} is one key of the memoized function {dotted(m[1])!r}, which summaries "
                    f"and plots show as one variable with a {dotted(m[1]) + '_key'!r} coordinate: "
                    f"use var_names=[{dotted(m[1])!r}]"
                )
            if n.lstrip("~") not in self.samples and not self._mem_keys(n.lstrip("~")):
                raise SelectionError(
                    f"no variable {n!r} in the result; variables: {', '.join(sorted(self.samples))}"
                )
        return list(var_names)

    # -- display -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        vars_ = ", ".join(sorted(self.samples)[:8])
        more = "" if len(self.samples) <= 8 else ", ..."
        flag = ", interrupted" if self.interrupted else ""
        return f"Result({self.num_chains} chains × {self.num_draws} draws: {vars_}{more}{flag})"


def use_agg_without_display() -> None:
    """Select matplotlib's Agg backend on a Linux machine without a display (before pyplot)."""
    if "matplotlib.pyplot" in sys.modules:
        return
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        import matplotlib

        if os.environ.get("MPLBACKEND") is None:
            matplotlib.use("Agg")
