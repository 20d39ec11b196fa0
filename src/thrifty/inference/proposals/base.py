"""Proposals for ``th.mh``: ``th.prior()`` (resample from the prior) and ``th.drift(scale)``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from thrifty._args import checked_keywords, positive_finite
from thrifty.core.address import fmt
from thrifty.core.engine import (
    RESAMPLE,
)
from thrifty.errors import ArgumentError, DistributionError, SelectionError
from thrifty.inference.configured import Configured
from thrifty.transforms import biject_to


class Proposal(Configured):
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


def on_manifold(d):
    """The transform of a choice whose support has fewer dimensions than its values — a
    simplex, a correlation Cholesky factor, a positive-definite matrix (:mod:`thrifty.transforms`)
    — else None.  A random walk in the values' own coordinates leaves such a support with
    probability one (and inside a tolerance of it, samples a slab around it, not the
    distribution), so :class:`Drift` moves such a choice in its unconstrained coordinates."""
    if d is None or not d.event_shape or d.is_discrete:  # (scalar values: their support
        return None  # has their dimension)
    try:
        t = biject_to(d.support)
    except DistributionError:
        return None
    event = tuple(d.event_shape)
    return t if tuple(t.unconstrained_shape(event)) != event else None


class Sized(NamedTuple):
    """The key of a block's adapter at a size other than the one it was first met at."""

    key: tuple
    d: int


class Drift(Proposal):
    """Gaussian random walk ``x' = x + scale · N(0, I)`` for continuous (vector) choices; with
    ``scale=None`` the walk adapts during burn-in (:mod:`thrifty.inference.proposals.adapt`).

    A choice whose support has fewer dimensions than its values (a simplex, a correlation
    Cholesky factor, a positive-definite matrix: :func:`on_manifold`) walks in its
    unconstrained coordinates u (``x = t.forward(u)``, :mod:`thrifty.transforms`), and the
    proposal's correction is the ratio of the Jacobians, log |J(u')| − log |J(u)| — the walk
    in u is symmetric, and the density of u is p(t(u)) |J(u)|."""

    def __init__(self, scale=None):
        self.adapters: dict | None = None
        self._last = None  # (block key, current x, proposed x) of the last block proposal
        self._frozen = False  # after the burn-in (freeze)
        self._initial: dict = {}  # (d, covariance) → the unadapted proposal, after the burn-in
        if scale is None:
            self.scale = None
            self.adapters = {}
            return
        self.scale = positive_finite("drift", "scale", scale)

    @property
    def adaptive(self) -> bool:
        return self.scale is None

    def _check(self, addr, discrete):
        if discrete:
            raise SelectionError(
                f"drift proposal needs a continuous choice, but {fmt(addr)} is discrete; "
                "use th.prior() or th.gibbs"
            )

    # -- adaptive: one adapter per block of choices ------------------------------------------------
    def _key(self, key, d: int):
        """The adapter's key of the block ``key`` at size ``d``: each size has its own (a vector
        choice of random length), so that a change of size restarts no adaptation in the
        burn-in and changes nothing after it — replacing the adapter would make the kernel after
        the burn-in depend on the sizes the chain has visited (Andrieu and Thoms 2008, §2)."""
        a = self.adapters.get(key)
        return key if a is None or a.d == d else Sized(key, d)

    def _adapter(self, key, d: int, covariance: bool):
        """The block's adapter.  After the burn-in (:meth:`freeze`) a block first met then —
        a new table of a CRP mixture, a new set of memoized keys — walks at the initial,
        unadapted proposal, which is not kept: the adapters stay those of the burn-in, and a
        long chain that keeps meeting new blocks does not grow a table of them."""
        from thrifty.inference.proposals.adapt import Adapter

        key = self._key(key, d)
        a = self.adapters.get(key)
        if a is None:
            if self._frozen:
                a = self._initial.get((d, covariance))
                if a is None:
                    a = self._initial[(d, covariance)] = Adapter(d, covariance)
                return a
            a = self.adapters[key] = Adapter(d, covariance)
        return a

    def propose_block(self, trace, locs, rng):
        ts = [on_manifold(loc.dist) for loc in locs]
        if not self.adaptive and not any(ts):
            return super().propose_block(trace, locs, rng)
        for loc in locs:
            self._check(loc.addr, loc.discrete)
        key = tuple(loc.addr for loc in locs)
        # each choice's coordinates: its value, or its unconstrained u on a manifold
        parts = [np.asarray(loc.value, dtype=float) if t is None
                 else np.asarray(t.inverse(np.asarray(loc.value, dtype=float)))
                 for loc, t in zip(locs, ts)]
        x = np.concatenate([p.ravel() for p in parts]) if parts else np.zeros(0)
        if self.adaptive:
            f = self._adapter(key, len(x), covariance=True).factor()
            z = rng.standard_normal(len(x))
            x_new = x + (f * z if isinstance(f, float) else f @ z)
            self._last = (self._key(key, len(x)), x, x_new)
        else:
            if type(self.scale) is not float:
                bad = [fmt(loc.addr) for loc, t in zip(locs, ts) if t is not None]
                raise SelectionError(
                    f"drift: a scale per coordinate does not fit {', '.join(bad)}, whose "
                    "support has fewer dimensions than its values (a random walk moves it in "
                    "its unconstrained coordinates); give a scalar scale")
            x_new = x + self.scale * rng.standard_normal(len(x))
        out, i, log_q = {}, 0, 0.0
        for loc, p, t in zip(locs, parts, ts):
            v = x_new[i : i + p.size].reshape(p.shape)
            i += p.size
            if t is not None:  # back onto the support; the Jacobians' ratio (class docstring)
                log_q += float(np.sum(t.log_abs_det_jacobian(v))
                               - np.sum(t.log_abs_det_jacobian(p)))
                v = np.asarray(t.forward(v))
            out[loc.addr] = float(v) if p.ndim == 0 and isinstance(loc.value, float) else v
        return out, log_q

    def init_covariance(self, key, cov) -> None:
        """Start the block ``key``'s adapter from the covariance ``cov`` (a Laplace
        approximation), with λ = 1."""
        a = self._adapter(key, len(cov), covariance=True)
        a.start_from(cov)

    def learn_block(self, accept_prob: float, accepted: bool) -> None:
        """Burn-in: adapt the last block proposal's adapter (its acceptance probability, and
        the state after the step)."""
        if self._last is None:
            return
        key, x, x_new = self._last
        self.adapters[key].learn(accept_prob, x_new if accepted else x)
        self._last = None

    def learn_many(self, key, accept_prob: float) -> None:
        """Burn-in: adapt the scale of an element-wise update from its mean acceptance."""
        a = self.adapters.get(key)
        if a is not None:
            a.learn(accept_prob)

    def freeze(self) -> None:
        """The end of the burn-in (see :meth:`thrifty.inference.proposals.adapt.Adapter.freeze`)."""
        for a in (self.adapters or {}).values():
            a.freeze()
        self._frozen = True

    def describe(self) -> dict:
        """The adapted proposal of each block (scale λ, steps of adaptation, covariance)."""
        def dotted(addr):  # as result names: ("data", "*", "z") → "data.z", ("s", 3, "x") → "s.3.x"
            return ".".join(str(p) for p in addr if p != "*")

        def name(key):
            if isinstance(key, Sized):
                return f"{name(key.key)} (size {key.d})"
            if key and all(isinstance(p, tuple) for p in key):  # a block of addresses
                return ", ".join(dotted(a) for a in key)
            return dotted(key)

        return {name(key): a.describe() for key, a in (self.adapters or {}).items()}

    # -- one choice, and many plate elements ----------------------------------------------------
    def propose(self, addr, value, discrete, rng):
        if discrete:
            self._check(addr, discrete)
        scale = self.scale
        if scale is None:
            scale = self._adapter(addr, int(np.size(value)), covariance=False).factor()
        elif type(scale) is not float and np.shape(value) != np.broadcast_shapes(
            np.shape(value), np.shape(scale)
        ):
            raise SelectionError(
                f"drift: scale of shape {np.shape(scale)} does not fit the choice at "
                f"{fmt(addr)} of shape {np.shape(value)} (give one scale per coordinate of "
                "one choice; for several choices use a scalar scale or one kernel each)"
            )
        if type(value) is float:
            return (
                value + scale * rng.standard_normal()
                if type(scale) is float
                else (value + scale * rng.standard_normal(np.shape(scale)))
            )
        v = np.asarray(value, dtype=float)
        return v + scale * rng.standard_normal(v.shape)

    def propose_many(self, addr, values, discrete, rng):
        self._check(addr, discrete)
        v = np.asarray(values, dtype=float)
        scale = self.scale
        if scale is None:
            scale = self._adapter(addr, 1, covariance=False).factor()
        return v + scale * rng.standard_normal(v.shape)

    def __repr__(self) -> str:
        return "drift()" if self.scale is None else f"drift({self.scale})"


def require_scale(kernel: str, proposal) -> None:
    """Kernels that do not adapt proposals reject ``th.drift()`` without a scale."""
    if isinstance(proposal, Drift) and proposal.adaptive:
        raise ArgumentError(
            f"{kernel}: th.drift() without a scale adapts only inside th.mh and "
            f"th.subsampled_mh; give {kernel} a "
            "scale, th.drift(s) (e.g. the posterior sd divided by the square root of the "
            "dimension)"
        )


def prior() -> Prior:
    """Propose from the choice's prior (given its current parents).

    >>> import thrifty as th
    >>> th.mh("z", th.prior()).label()  # resample z from its prior: the ratio needs the likelihood
    "mh('z', prior())"
    """
    return Prior()


@checked_keywords
def drift(scale=None) -> Drift:
    """Gaussian random walk with standard deviation ``scale`` (a scalar or one per coordinate).

    Without ``scale`` the walk adapts during the burn-in of ``th.infer`` (in ``th.mh``, and in
    ``th.subsampled_mh``, whose default proposal it is): one scale per site towards acceptance
    0.44, and for a block of several coordinates a covariance estimate with Haario's 2.38²/d
    scaling towards 0.234; it is frozen after the burn-in, so the draws come from a fixed MH
    kernel (:mod:`thrifty.inference.proposals.adapt`).  A block of continuous top-level choices
    first moves to a draw from the Laplace approximation at the mode and starts its covariance there
    (:mod:`thrifty.inference.proposals.laplace_start`: a few full-data passes for GLM weights;
    skipped when ``init`` gives the block).  Otherwise it starts at sd 0.1 per coordinate — the
    scale it keeps if there is no burn-in (``th.infer`` then warns).

    A choice whose support has fewer dimensions than its values — a simplex (``Dirichlet``), a
    correlation Cholesky factor (``LKJCholesky``), a positive-definite matrix (``Wishart``) —
    walks in its unconstrained coordinates (:mod:`thrifty.transforms`), the MH ratio corrected
    by the Jacobians; a scale is then one scalar.  Plate elements of such a choice cannot take
    a drift (an error says so): use ``th.prior()`` or ``th.nuts``.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     mu = th.sample("mu", dist.Normal(0.0, 10.0))
    ...     th.observe("y", dist.Normal(mu, 1.0), 3.0)
    >>> r = th.infer(m(), th.mh("mu", th.drift()), num_samples=2000, burn_in=1000, seed=0,
    ...              progress=False)
    >>> 0.3 < r.stats["mh('mu', drift())"]["acceptance_rate"] < 0.6
    True
    """
    return Drift(scale)
