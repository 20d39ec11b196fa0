"""Proposals for ``th.mh``: ``th.prior()`` (resample from the prior) and ``th.drift(scale)``."""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.run import RESAMPLE
from thrifty.errors import SelectionError


class Proposal:
    """Maps current values of the selected choices to proposed ones."""

    def propose_block(self, trace, locs, rng) -> tuple[dict, float]:
        """Targets for the choices at ``locs`` and log q(x | x') − log q(x' | x) (0 for
        symmetric proposals and for prior proposals, whose terms the run computes)."""
        return {loc.addr: self.propose(loc.addr, loc.value, loc.discrete, rng) for loc in locs}, 0.0

    def propose(self, addr, value, discrete: bool, rng):
        """New value for one choice (or ``RESAMPLE``); symmetric proposals need no correction."""
        raise NotImplementedError

    def propose_many(self, addr, values: np.ndarray, discrete: bool, rng):
        """New values for the choice ``addr`` of many plate elements (leading axis)."""
        raise NotImplementedError


class Prior(Proposal):
    """Resample the choice from its prior given its parents (the MH ratio then needs only the
    likelihood of what depends on it; the q terms are computed by the run)."""

    def propose(self, addr, value, discrete, rng):
        return RESAMPLE

    def propose_many(self, addr, values, discrete, rng):
        return RESAMPLE

    def __repr__(self) -> str:
        return "prior()"


class Drift(Proposal):
    """Gaussian random walk ``x' = x + scale · N(0, I)`` for continuous (vector) choices."""

    def __init__(self, scale=1.0):
        scale = np.asarray(scale, dtype=float)
        if np.any(~(scale > 0)):
            raise ValueError(f"drift: scale must be positive, got {scale}")
        self.scale = float(scale) if scale.ndim == 0 else scale

    def _check(self, addr, discrete):
        if discrete:
            raise SelectionError(
                f"drift proposal needs a continuous choice, but {fmt(addr)} is discrete; "
                "use th.prior() or th.gibbs"
            )

    def propose(self, addr, value, discrete, rng):
        self._check(addr, discrete)
        if type(self.scale) is not float and np.shape(value) != np.broadcast_shapes(
            np.shape(value), np.shape(self.scale)
        ):
            raise SelectionError(
                f"drift: scale of shape {np.shape(self.scale)} does not fit the choice at "
                f"{fmt(addr)} of shape {np.shape(value)} (give one scale per coordinate of "
                "one choice; for several choices use a scalar scale or one kernel each)"
            )
        if type(value) is float:
            return (
                value + self.scale * rng.standard_normal()
                if type(self.scale) is float
                else (value + self.scale * rng.standard_normal(np.shape(self.scale)))
            )
        v = np.asarray(value, dtype=float)
        return v + self.scale * rng.standard_normal(v.shape)

    def propose_many(self, addr, values, discrete, rng):
        self._check(addr, discrete)
        v = np.asarray(values, dtype=float)
        return v + self.scale * rng.standard_normal(v.shape)

    def __repr__(self) -> str:
        return f"drift({self.scale})"


def prior() -> Prior:
    """Propose from the choice's prior (given its current parents)."""
    return Prior()


def drift(scale=1.0) -> Drift:
    """Gaussian random walk with standard deviation ``scale`` (a scalar or one per coordinate)."""
    return Drift(scale)
