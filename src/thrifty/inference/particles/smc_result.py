"""The result of :func:`thrifty.smc`: weighted particles, log-evidence, ESS per generation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from thrifty.errors import SelectionError


@dataclass
class SMCResult:
    """Weighted particles from :func:`smc`.

    ``values[name]`` is ``(particles, T, ...)`` for a site of a chain (the particles' whole
    trajectories, along their ancestry) — ``(particles, G, T, ...)`` for a chain inside a plate
    of G elements, each element with its own particles and weights; ``weights`` are normalised
    over the particles (shape ``(particles,)`` or ``(particles, G)``); ``log_evidence`` is
    log Ẑ; ``ess[g]`` (the mean over the plate's elements) and ``resampled[g]`` (how many
    elements resampled) per generation.

    >>> import thrifty as th
    >>> from thrifty.models import lds, generate_lds
    >>> y, C, _ = generate_lds(T=10, D=3, seed=0)
    >>> res = th.smc(lds(y, C, 0.1), particles=50, fixed={"omega": 0.4, "q": 0.1}, seed=0)
    >>> res["x.z"].shape, bool(res.log_evidence < 0), res.keys()
    ((50, 10, 2), True, ['x.z'])
    """

    values: dict
    log_weights: np.ndarray
    log_evidence: float
    ess: np.ndarray
    resampled: np.ndarray
    seconds: float
    stats: dict = field(default_factory=dict)

    @property
    def weights(self) -> np.ndarray:
        lw = self.log_weights
        w = np.exp(lw - lw.max(axis=0))
        return w / w.sum(axis=0)

    @property
    def particles(self) -> int:
        return len(self.log_weights)

    def keys(self) -> list[str]:
        """The names of the sites held (as ``Result.keys()``)."""
        return sorted(self.values)

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.values[name]
        except KeyError:
            raise SelectionError(f"no site {name!r}; the sites are {sorted(self.values)}") from None

    def mean(self, name: str) -> np.ndarray:
        """The weighted mean of ``name`` over the particles."""
        v, w = np.asarray(self[name], dtype=float), self.weights
        return (w.reshape(w.shape + (1,) * (v.ndim - w.ndim)) * v).sum(axis=0)
