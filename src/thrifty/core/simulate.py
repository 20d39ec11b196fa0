"""Running a program from scratch: prior simulation and initialisation with retries."""

from __future__ import annotations

import difflib
from collections import Counter

import numpy as np

from thrifty._args import checked_keywords
from thrifty._context import float64
from thrifty.core.address import as_name, as_pattern, fmt
from thrifty.core.model import as_program
from thrifty.core.run import Run
from thrifty.core.trace import Trace
from thrifty.core.vocab import LATENT, OBSERVED, non_numeric
from thrifty.errors import (
    ArgumentError,
    DistributionError,
    InitializationError,
    SelectionError,
)


def _rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


@checked_keywords
def simulate(program, seed=None, init: dict | None = None) -> Trace:
    """Run ``program`` once from its prior (choices in ``init`` are set) and return the trace.

    The trace may have zero probability (an observation the draw cannot explain); use
    :func:`initialize` to search for one with finite probability.  A latent choice never has
    zero probability: an initial value outside its support is an
    :class:`~thrifty.errors.InitializationError`, a draw past what float64 holds (``inf`` from
    ``Normal(0, 1e308)``) a :class:`~thrifty.errors.DistributionError`, each naming the site.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     return th.sample("x", dist.Normal(0.0, 1.0))
    >>> tr = th.simulate(m(), seed=0)
    >>> tr.output == tr["x"]
    True
    """
    with float64():  # (model code written with jax.numpy: float64, as thrifty's own)
        trace, run = simulate_run(program, seed, init)
    if run.aborted is not None:  # (a value given by init= outside its support)
        raise _outside(run.aborted)
    for name, value in trace.values(include_deterministic=False).items():
        if non_numeric(value) is None and not np.all(np.isfinite(value)):
            raise DistributionError(
                f"th.simulate: the draw of {name!r} is {_non_finite(value)}: its sampler "
                "left what float64 holds (a scale or rate at the limits of float64: "
                "Normal(0, 1e308), Exponential(1e-320)); its density there is 0")
    return trace


def _outside(e) -> InitializationError:
    return InitializationError(
        f"the initial value {e.value!r} at address {fmt(e.addr)} is outside the support of "
        f"{e.dist!r}")


def _non_finite(value) -> str:
    v = np.asarray(value, dtype=float)
    return repr(float(v)) if v.ndim == 0 else f"{float(v[~np.isfinite(v)][0])!r} in an entry"


def simulate_run(program, seed=None, init: dict | None = None):
    """Like :func:`simulate`, also returning the :class:`Run` (its log-density terms)."""
    program = as_program(program)
    trace = Trace(program)
    targets = _init_targets(init)
    run = Run(trace, _rng(seed), targets=targets).execute()
    if run.aborted is not None:
        return trace, run
    if targets:
        try:
            run.check_targets(len(targets))
        except SelectionError as e:
            run.commit()
            raise SelectionError(f"init: {e}; {_latent_names(trace, init)}") from None
    run.commit()
    if targets:
        _not_latent(trace, targets, init)
    return trace, run


def _not_latent(trace, targets: dict, init) -> None:
    """An init= key naming an observation, a factor or a deterministic value (which the run
    reached, so it passed as met) is an error: its value there is not an initial value."""
    kinds = ("observation", "factor", "deterministic value")
    sites = trace.root.sites
    for addr in targets:
        site = sites.get(addr)
        if site is not None and site.kind != LATENT:
            raise SelectionError(
                f"init: {fmt(addr)} is {'an' if site.kind == OBSERVED else 'a'} "
                f"{kinds[site.kind - 1]}, not a latent choice: init= gives initial values of "
                f"latent choices only; {_latent_names(trace, init)}")


def latent_names(trace) -> str:
    """A short list of the trace's latent names, for error messages."""
    names = sorted(trace.values(include_deterministic=False))
    text = ", ".join(repr(n) for n in names[:12])
    return text + (", ..." if len(names) > 12 else "") if names else "(none)"


def _latent_names(trace, init) -> str:
    """The program's latent names (and the closest to ``init``'s keys), for an error."""
    names = sorted(trace.values(include_deterministic=False))
    close = [m for k in init if isinstance(k, str)
             for m in difflib.get_close_matches(k, names, 1)]
    hint = f" (did you mean {', '.join(repr(m) for m in close)}?)" if close else ""
    return f"the program's latent choices are named {latent_names(trace)}{hint}"


def _init_targets(init) -> dict:
    if not init:
        return {}
    out = {}
    for k, v in init.items():
        what = non_numeric(v)
        if what is not None:
            raise ArgumentError(f"init: the value for {k!r} is {what}; initial values are "
                                "numbers or arrays of numbers")
        out[as_pattern(k) if isinstance(k, str) else as_name(k)] = v
    return out


@checked_keywords
def initialize(program, seed=None, init: dict | None = None, max_tries: int = 100) -> Trace:
    """A trace with finite probability: prior simulation, retried up to ``max_tries`` times.

    ``init`` maps addresses (``"w"``, ``("data", 3, "z")`` or ``"s.2.x"``) to initial values;
    the other choices are drawn from the prior.  Raises
    :class:`~thrifty.errors.InitializationError` naming the observation (or choice) that had
    zero probability when no try succeeds.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     x = th.sample("x", dist.Normal(0.0, 1.0))
    ...     th.observe("y", dist.Normal(x, 0.1), 3.0)
    >>> tr = th.initialize(m(), seed=0, init={"x": 3.0})
    >>> tr["x"]
    3.0
    """
    rng = _rng(seed)
    program = as_program(program)
    failures: Counter = Counter()
    examples: dict = {}
    tries = 1 if init else max_tries
    invalid: list = []  # parameters made invalid by values drawn from their priors
    k = 0
    while k < tries:
        k += 1
        try:
            trace, run = simulate_run(program, rng, init)
        except DistributionError as e:  # (a draw of zero probability — e.g. a scale drawn
            invalid.append(str(e))  # below 0 — unless the same every time: constants)
            if len(invalid) >= 5 and len(set(invalid)) == 1 and k == len(invalid):
                if init:  # (the same each time: an initial value may make it so)
                    raise DistributionError(
                        f"{e} (with the initial values init= gives: "
                        f"{', '.join(f'{a}={v!r}' for a, v in init.items())})") from e
                raise
            if len(invalid) < max_tries:
                tries = max(tries, k + 1)  # (with init too: the other choices are drawn)
                continue
            raise DistributionError(
                f"{invalid[0]} (in each of {len(invalid)} prior simulations, choices drawn "
                "from their priors made parameters invalid: give such a choice a prior on its "
                "valid range, e.g. dist.HalfNormal for a scale, or an initial value, init=)"
            ) from e
        if run.aborted is not None:
            raise _outside(run.aborted)
        if run.lp_new + run.lp_fresh > -np.inf:
            return trace
        for addr, d, value in run.impossible:
            failures[addr] += 1
            examples.setdefault(addr, ("observation" if d is not None else "factor", d, value))
        if not run.impossible:
            for addr, site in _impossible_choices(trace):
                failures[addr] += 1
                examples.setdefault(addr, ("latent choice", site.dist, site.value))
    if failures:
        addr, count = failures.most_common(1)[0]
        kind, d, value = examples.get(addr, ("site", None, None))
        what = f" (value {value!r} under {d!r})" if d is not None else ""
        if init:
            head = "the initial values make the"
        else:
            head = f"in {count} of {tries} prior simulations the"
        raise InitializationError(
            f"no trace with finite probability: {head} {kind} at address {fmt(addr)} "
            f"impossible{what}"
        )
    raise InitializationError(f"no trace with finite probability after {tries} tries")


def _impossible_choices(trace) -> list:
    """(address, site) of the sites with log-density -inf: given initial values outside the
    support, or draws a sampler gave outside it (a LogNormal(0, 300) draw past float64's
    largest is inf, of density 0)."""
    return [(a, s) for a, s in trace.root.sites.items() if s.lp == -np.inf]
