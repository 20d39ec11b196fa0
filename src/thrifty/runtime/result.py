"""``Result``: the draws of ``th.infer``, with summaries, ArviZ conversion and plots."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import numpy as np

from thrifty.core.address import as_pattern, dotted


def stack_draws(per_chain: list[list[dict]]) -> dict[str, np.ndarray]:
    """Stack per-draw dicts into arrays of shape (chains, draws, ...).

    A value missing from some draws (a choice that exists only in some traces) becomes NaN
    (or ``None`` in an object array for non-numeric values); shapes that vary become objects.
    """
    names: dict = {}
    for draws in per_chain:
        for d in draws:
            for k in d:
                names.setdefault(k, None)
    n_chains = len(per_chain)
    n_draws = min((len(d) for d in per_chain), default=0)
    out = {}
    for name in names:
        vals = [[d.get(name) for d in draws[:n_draws]] for draws in per_chain]
        out[name] = _stack(vals, n_chains, n_draws)
    return out


def _stack(vals, n_chains, n_draws):
    flat = [v for row in vals for v in row]
    present = [v for v in flat if v is not None]
    shapes = {np.shape(v) for v in present}
    numeric = all(
        isinstance(v, (int, float, np.number, bool, np.bool_))
        or (isinstance(v, np.ndarray) and v.dtype.kind in "biuf")
        for v in present
    )
    if len(shapes) == 1 and numeric:
        shape = shapes.pop()
        if len(present) == len(flat):
            return np.asarray(flat).reshape((n_chains, n_draws) + shape)
        arr = np.full((n_chains, n_draws) + shape, np.nan)
        for i, v in enumerate(flat):
            if v is not None:
                arr.reshape((-1,) + shape)[i] = v
        return arr
    arr = np.empty(n_chains * n_draws, dtype=object)
    for i, v in enumerate(flat):
        arr[i] = v
    return arr.reshape(n_chains, n_draws)


def build_result(records, *, program, stats, interrupted, notes, config) -> Result:
    """The :class:`Result` of per-chain records (lists ``draws``, ``outputs``, ``lp``,
    ``n_latent``).  Chains of unequal lengths (an interrupted run) are truncated to the shortest
    and chains without draws left out; the full per-chain data is then kept on the result."""
    lens = [r.num_draws for r in records]
    if interrupted:
        ids = [c for c, n in enumerate(lens) if n > 0]
    else:
        ids = list(range(len(records)))
    n = min((lens[c] for c in ids), default=0)
    truncated = len(ids) < len(records) or any(lens[c] != n for c in ids)
    samples = stack_draws([records[c].draws[:n] for c in ids]) if ids else {}
    output = [list(records[c].outputs[:n]) for c in ids]
    sample_stats = {
        "lp": np.array([records[c].lp[:n] for c in ids], dtype=float).reshape(len(ids), n),
        "n_latent": np.array([records[c].n_latent[:n] for c in ids], dtype=np.int64).reshape(
            len(ids), n
        ),
    }
    full = None
    if truncated:
        full = []
        for c, r in enumerate(records):
            m = lens[c]
            full.append(
                {
                    "draws": {k: v[0] for k, v in stack_draws([r.draws[:m]]).items()},
                    "output": list(r.outputs[:m]),
                    "sample_stats": {
                        "lp": np.array(r.lp[:m], dtype=float),
                        "n_latent": np.array(r.n_latent[:m], dtype=np.int64),
                    },
                }
            )
    return Result(
        samples,
        output,
        stats,
        sample_stats,
        interrupted=interrupted,
        program=program,
        notes=notes,
        chain_ids=ids,
        full=full,
        config=config,
    )


class Result:
    """Draws of ``th.infer``.

    ``result[name]`` is an array of shape (chains, draws, *value_shape) — ``name`` as in
    ``"w"``, ``"data.z"`` (plate site: one column per element) or ``"s.x"`` (markov site: one
    column per step); ``result[("data", 3, "z")]`` is one element.  ``result.output`` holds the
    program's return values (per chain, a list per draw), ``result.sample_stats`` per-draw
    statistics (``lp``: log joint density, NaN when stale; ``n_latent``: number of latent
    choices), ``result.stats`` per-kernel statistics (label → aggregates over the chains, with
    the per-chain values under ``"chains"``) and, under ``"run"``, ``wall_time`` (seconds),
    ``draws_per_second`` etc.

    After an interrupted run (``interrupted`` is True) the arrays hold the chains listed in
    ``chain_ids`` truncated to the shortest (``truncated`` is True if anything was cut);
    ``chain_draws``, ``chain_output`` and ``chain_sample_stats`` keep every draw of every chain.
    ``summary()``, ``to_arviz()`` and ``plot_trace()`` use ArviZ.
    """

    def __init__(
        self,
        samples: dict[str, np.ndarray],
        output: list[list[Any]],
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
        self.samples = samples
        self.output = output
        self.stats = stats
        self.sample_stats = sample_stats or {}
        self.interrupted = interrupted
        self.program = program
        self.notes = list(notes or [])
        self.chain_ids = list(range(len(output))) if chain_ids is None else list(chain_ids)
        self._full = full
        self.config = config or {}

    # -- access ---------------------------------------------------------------------------------
    def __getitem__(self, name) -> np.ndarray:
        if isinstance(name, tuple):
            key = dotted(name)
            if key in self.samples:
                return self.samples[key]
            return self._element(name)
        if name in self.samples:
            return self.samples[name]
        raise KeyError(
            f"no variable {name!r} in the result; variables: {', '.join(sorted(self.samples))}"
        )

    def _element(self, addr: tuple) -> np.ndarray:
        """``result[("data", 17, "z")]``: one element of a stacked plate / chain variable."""
        for i, part in enumerate(addr):
            if isinstance(part, (int, np.integer)) and i > 0:
                name = dotted(addr[:i] + addr[i + 1 :])
                if name in self.samples:
                    return self.samples[name][:, :, int(part)]
        raise KeyError(
            f"no variable at address {addr!r}; variables: {', '.join(sorted(self.samples))}"
        )

    def __contains__(self, name) -> bool:
        return name in self.samples

    def keys(self):
        return self.samples.keys()

    @property
    def num_chains(self) -> int:
        return len(self.output)

    @property
    def num_draws(self) -> int:
        return len(self.output[0]) if self.output else 0

    def select(self, pattern) -> dict[str, np.ndarray]:
        p = dotted(as_pattern(pattern))
        return {k: v for k, v in self.samples.items() if k == p or k.startswith(p + ".")}

    # -- every draw of every chain (differs from the arrays after an interruption) ---------------
    @property
    def truncated(self) -> bool:
        """Whether the arrays leave out draws (an interrupted run with unequal chains)."""
        return self._full is not None

    @property
    def chain_draws(self) -> list[dict[str, np.ndarray]]:
        """Per chain (all chains of the run), ``{name: array (draws, ...)}`` with every draw."""
        if self._full is not None:
            return [f["draws"] for f in self._full]
        return [{k: v[i] for k, v in self.samples.items()} for i in range(self.num_chains)]

    @property
    def chain_output(self) -> list[list[Any]]:
        if self._full is not None:
            return [f["output"] for f in self._full]
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

    def to_arviz(self):
        """An ``arviz.InferenceData`` with ``posterior`` (the numeric variables; others are
        skipped with a note in ``result.notes``) and ``sample_stats`` (``lp``, ``n_latent``)."""
        from thrifty.diagnostics._arviz import az

        posterior = {}
        for name, arr in self.samples.items():
            kind = arr.dtype.kind
            if kind == "b":
                arr = arr.astype(np.int8)
            elif kind not in "iuf":
                why = "values of varying shapes or types" if kind == "O" else f"dtype {arr.dtype}"
                self._note(f"to_arviz: variable {name!r} left out of the posterior ({why})")
                continue
            posterior[name] = arr
        coords = {"chain": np.asarray(self.chain_ids, dtype=np.int64)}
        return az.from_dict(
            posterior=posterior, sample_stats=dict(self.sample_stats), coords=coords
        )

    def summary(self, var_names=None, **kwargs):
        """``arviz.summary`` as a pandas DataFrame: mean, sd, hdi_3%, hdi_97%, mcse, ess_bulk,
        ess_tail and r_hat per (element of a) variable."""
        from thrifty.diagnostics._arviz import az

        var_names = self._check_names(var_names)
        return az.summary(self.to_arviz(), var_names=var_names, **kwargs)

    def plot_trace(self, var_names=None, path=None, **kwargs):
        """``arviz.plot_trace``: a matplotlib figure (saved to ``path`` if given)."""
        _use_agg_without_display()
        from thrifty.diagnostics._arviz import az

        var_names = self._check_names(var_names)
        with warnings.catch_warnings():  # ArviZ's use of deprecated matplotlib API
            warnings.filterwarnings("ignore", category=DeprecationWarning, module="arviz")
            warnings.filterwarnings("ignore", message=".*alias_mapping.*")
            axes = az.plot_trace(self.to_arviz(), var_names=var_names, **kwargs)
        fig = np.ravel(axes)[0].figure
        if path is not None:
            fig.savefig(os.fspath(path))
        return fig

    def _check_names(self, var_names):
        if var_names is None:
            return None
        if isinstance(var_names, str):
            var_names = [var_names]
        for n in var_names:
            if n.lstrip("~") not in self.samples:
                raise KeyError(
                    f"no variable {n!r} in the result; variables: {', '.join(sorted(self.samples))}"
                )
        return list(var_names)

    # -- display -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        vars_ = ", ".join(sorted(self.samples)[:8])
        more = "" if len(self.samples) <= 8 else ", ..."
        flag = ", interrupted" if self.interrupted else ""
        return f"Result({self.num_chains} chains × {self.num_draws} draws: {vars_}{more}{flag})"


def _use_agg_without_display() -> None:
    """Select matplotlib's Agg backend on a Linux machine without a display (before pyplot)."""
    if "matplotlib.pyplot" in sys.modules:
        return
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        import matplotlib

        if os.environ.get("MPLBACKEND") is None:
            matplotlib.use("Agg")
