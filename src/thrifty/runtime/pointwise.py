"""Observed data and the pointwise log-likelihood of recorded draws (for ArviZ's
``observed_data`` and ``log_likelihood`` groups, ``az.loo`` and ``az.compare``).

Each draw is replayed in ``capture`` mode (the run lists every observation it executes;
:mod:`thrifty.runtime.observations` names and shapes them): the log-density of every
observation at the draw, each plate element's and each markov step's observation a point.
"""

from __future__ import annotations

import numpy as np

from thrifty._context import float64
from thrifty.core.model import as_program
from thrifty.core.run import Run
from thrifty.core.trace import Trace
from thrifty.core.vocab import CAPTURE, RESCORE_CAPTURE
from thrifty.errors import ModelError
from thrifty.runtime import observations as obs
from thrifty.runtime.draws import DrawStore
from thrifty.runtime.replay_values import draw_values, recorded_latents, replay


def observed_data(program) -> tuple[dict, dict]:
    """``({name: observed values}, {name: dims})`` of one execution of ``program``."""
    from thrifty.core.simulate import initialize

    rng = np.random.default_rng(0)
    trace = initialize(as_program(program), rng)
    run = Run(trace, rng, mode=RESCORE_CAPTURE).execute()
    g = obs.gather([e for e in run.captured if e[2] is not None])
    return {n: a for n, (_, a) in g.items()}, {n: d for n, (d, _) in g.items()}


def per_draw(program, store, rng, mode, what: str, factors: set | None = None) -> list[dict]:
    """``gather`` of each draw of one chain, replayed in ``mode``; the addresses of the
    factors the replays execute are added to ``factors``."""
    names = recorded_latents(store)
    out = []
    for d, cur in draw_values(store, names):
        run = replay(Trace(program), rng, store.meta, cur, d, mode=mode, commit=False)
        out.append(obs.gather(run.captured, what))
        if factors is not None:
            factors.update(run.factors)
    return out


def stack_chains(per_chain: list[list[dict]]) -> tuple[dict, dict]:
    """``({name: (chains, draws, ...)}, {name: dims})`` of per-chain per-draw gathers.  An
    observation that some draws do not execute (a branch, a shorter chain) is NaN there, in
    whichever chain those draws are: its name and dims come from any draw that has it."""
    stacked = [obs.stack(draws) for draws in per_chain]
    arrays = {}
    for n in dict.fromkeys(n for s in stacked for n in s):
        xs = [s.get(n) for s in stacked]
        shapes = [x.shape for x in xs if x is not None]
        if len({len(s) for s in shapes}) != 1:  # (as obs.stack)
            obs.left_out(n, [len(s) for s in shapes])
            continue
        shape = tuple(max(s[j] for s in shapes) for j in range(len(shapes[0])))
        shape = (max(len(d) for d in per_chain),) + shape[1:]
        arr = np.full((len(xs),) + shape, np.nan)
        for c, x in enumerate(xs):
            if x is not None:
                arr[(c,) + tuple(slice(0, k) for k in x.shape)] = x
        arrays[n] = arr
    dims = obs.dims_of([g for draws in per_chain for g in draws])
    return arrays, {n: dims[n] for n in arrays}


def draw_stores(result) -> list[DrawStore]:
    """The per-draw store of each chain of ``result``, cut to its kept draws."""
    stores = result._stores
    if stores is None:
        raise ValueError("this result keeps no per-draw store to replay (built by hand?)")
    n = result.num_draws
    return [st.prefix(n) for st in stores]


def log_likelihood(result) -> tuple[dict, dict]:
    """Pointwise log-likelihood of every kept draw: ``({name: (chains, draws, ...)},
    {name: dims})``.  Costs one full execution of the program per draw.

    Its points are the observations (``th.observe``).  A ``th.factor`` adds a log-weight
    that may be a prior term or a likelihood term: one in a plate element or a markov step
    is a log-weight per element or step, which LOO would need as a point of its own — a
    :class:`~thrifty.errors.ModelError` names it; one at the top level is left out, as a
    prior term, with a :class:`~thrifty.runtime.observations.FactorWarning` naming it."""
    program = result.program
    rng = np.random.default_rng(0)  # (replays draw nothing: every latent choice is set)
    factors: set = set()
    with float64():  # (model code written with jax.numpy: float64, as in the run)
        per_chain = [per_draw(program, st, rng, CAPTURE, "log_lik", factors)
                     for st in draw_stores(result)]
    names = {obs.layout(a)[0]: obs.layout(a)[1] for a in factors}
    pointwise = sorted(n for n, dims in names.items() if dims)
    if pointwise:
        raise ModelError(
            f"log_likelihood: the factor(s) {', '.join(map(repr, pointwise))} add a log-weight "
            "per plate element or markov step, which the pointwise log-likelihood cannot place "
            "(its points are the observations); write a likelihood term as th.observe with a "
            "distribution, or leave out log_likelihood=True")
    if names:
        obs.factors_left_out(sorted(names))
    arrays, dims = stack_chains(per_chain)
    if not arrays and result.num_draws:
        raise ModelError("log_likelihood: the program observes nothing (th.observe), so it has "
                         "no pointwise log-likelihood"
                         + (f"; its factors {', '.join(map(repr, sorted(names)))} are not "
                            "observations" if names else ""))
    return arrays, dims
