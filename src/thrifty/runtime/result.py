"""``Result``: the draws of ``th.infer``, with summaries, ArviZ conversion and plots."""

from __future__ import annotations

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


class Result:
    """Draws of ``th.infer``.

    ``result[name]`` is an array of shape (chains, draws, *value_shape) — ``name`` as in
    ``"w"``, ``"data.z"`` (plate site: one column per element) or ``"s.x"`` (markov site: one
    column per step); ``result.output`` holds the program's return values per draw;
    ``result.stats`` the per-kernel statistics.
    """

    def __init__(
        self,
        samples: dict[str, np.ndarray],
        output: list[list[Any]],
        stats: dict,
        sample_stats: dict[str, np.ndarray] | None = None,
        interrupted: bool = False,
        program=None,
    ):
        self.samples = samples
        self.output = output
        self.stats = stats
        self.sample_stats = sample_stats or {}
        self.interrupted = interrupted
        self.program = program

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
        raise KeyError(f"no variable at address {addr!r}")

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

    def __repr__(self) -> str:
        vars_ = ", ".join(sorted(self.samples)[:8])
        more = "" if len(self.samples) <= 8 else ", ..."
        flag = ", interrupted" if self.interrupted else ""
        return f"Result({self.num_chains} chains × {self.num_draws} draws: {vars_}{more}{flag})"
