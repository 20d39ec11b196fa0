"""What a particle driver reads and runs of the engine (the particle methods' interface).

The particle methods (:mod:`thrifty.inference.particles`) drive the generations of a particle
run — weights, resampling, ancestry — and leave executing the program to the engine.  The root
frame of a particle run (:mod:`thrifty.core.particles`) asks the driver for each ``th.markov``
chain's policy (``driver.chain(frame, local, step, length, init, args)`` → a
:class:`~thrifty.core.sites.Chain`: the frame of each generation, and what happens between
them), and :func:`thrifty.core.sites.markov` executes the steps; the driver calls, with the
``frame`` it was given:

* :func:`free_step`, :func:`conditional_step`, :func:`pinned_step`, :func:`fused_step` — the
  frame that executes step t over the members: every member drawn from the prior; member g·per
  of each group taking its reference's choices (conditional SMC, paper 003 §4); every member
  taking its group's reference choices (the rescoring of a reference's suffix, 003 §4.4); the
  conditional step and that rescoring under the states before resampling, over twice the
  members (:func:`member_lps` reads its per-member log-densities);
* :func:`run_step` — ``step(t, prev, *args)`` executed by such a frame outside the chain's
  own generations (the rescoring of a reference's suffix), its state kept as every markov
  state is kept; :func:`step_failed` names the step in an error of the model's code;
* :func:`take_observed`, :func:`take_member_lp` — per member, the log-density of what the
  frame observed (and of its choices) since the driver last took it;
* :func:`step_values` — the values of a step's choices, per member;
* :func:`step_record` — a step's sites and states, kept so that the trajectory of a drawn
  particle can be written back as columns (:mod:`thrifty.core.written`);
* :func:`groups`, :func:`plate_of` — the groups of the members (one per element of the plate
  the chain is in) and that plate.

:func:`run_particles` executes a trace's program once over the particles (a
:class:`ParticleRun`: the choices outside the chains), and
:func:`replay_particle` one particle of a program without chains up to an observation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from thrifty import _context
from thrifty.core.code_errors import WRAPPED, converted_error, step_code_error, wraps
from thrifty.core.particles import (
    ConditionalStep,
    FusedStep,
    ParticleFrame,
    PinnedStep,
    StepFrame,
)
from thrifty.core.run import Run
from thrifty.core.trace import Trace
from thrifty.core.vocab import DETERMINISTIC, FACTOR, LATENT, OBSERVED, frozen_state
from thrifty.core.written import StepRecord, state_sites
from thrifty.errors import ModelError


@dataclass(frozen=True)
class ParticleRun:
    """What a particle run says of the choices outside the chains: ``shared_lp`` (their
    log-density, the same for every particle), ``prior_drawn_lp`` (of it, the choices drawn
    from their priors), ``values`` and ``lps`` (address → value, log-density)."""

    shared_lp: float
    prior_drawn_lp: float
    values: dict
    lps: dict


def run_particles(trace, rng, n: int, given, driver, proposing: bool = False) -> ParticleRun:
    """Execute ``trace``'s program once over ``n`` particles (its chains generation by
    generation through ``driver``); returns a :class:`ParticleRun`.  ``proposing``: the given
    values are a proposal (invalid parameters reject it).  ``driver.observed``: the top-level
    observations and factors, address → log-density per member (or one, shared)."""
    run = Run(trace, rng)
    run.proposing = proposing
    frame = ParticleFrame(run, n, given, driver)
    run.frame = frame
    program = trace.program
    _context.EXECUTIONS.runs.append(run)
    try:
        program.fn(*program.args, **program.kwargs)
    except WRAPPED as e:  # (errors inside a step are named by the step: ModelError)
        if not wraps(e):
            raise
        raise ModelError(
            f"the model code raised {type(e).__name__}: {e} — in a particle run (th.smc, "
            "th.pgibbs, th.pmmh), outside the markov steps: there a chain's states hold one "
            "value per particle (an array with a leading particle axis), so code after "
            "th.markov that reads a state as one value (float(states[-1]), an `if` on it) "
            "fails. Compute such values from the states as arrays (np.asarray(states[-1])), "
            "return the states themselves, or update the chain with a kernel that executes "
            "one trajectory (th.mh, th.lmh, th.gibbs)") from e
    finally:
        _context.EXECUTIONS.runs.pop()
        run.frame = None
    driver.weigh(frame, ("<end>",))  # observations after the last chain
    driver.observed = {a: s.lp for a, s in frame.new.items() if s.kind in (OBSERVED, FACTOR)}
    latent = {a: s for a, s in frame.new.items() if s.kind == LATENT}
    return ParticleRun(frame.shared_lp, frame.prior_drawn_lp,
                       {a: s.values for a, s in latent.items()},
                       {a: float(s.lp) for a, s in latent.items()})


def free_step(frame, rel: tuple) -> StepFrame:
    return StepFrame(frame.run, frame, rel)


def conditional_step(frame, rel: tuple, ref: dict, per: int) -> StepFrame:
    return ConditionalStep(frame.run, frame, rel, ref, per)


def pinned_step(frame, rel: tuple, ref: dict, per: int) -> StepFrame:
    return PinnedStep(frame.run, frame, rel, ref, per)


def fused_step(frame, rel: tuple, ref: dict, per: int) -> FusedStep:
    """Conditional SMC's step and the rescoring of the references under the members' states
    before resampling, in one execution over twice the members (:class:`FusedStep`)."""
    return FusedStep(frame.run, frame, rel, ref, per)


def member_lps(sf) -> tuple:
    """(latent, observed) per-member log-densities of a frame with members of its own (None:
    none)."""
    return sf.lat_lp, sf.obs_lp


def run_step(frame, sf: StepFrame, step, t: int, prev, args, local: tuple, where):
    """``step(t, prev, *args)`` executed by the step frame ``sf`` over the members, its state
    kept as the engine keeps every markov state (:func:`~thrifty.core.vocab.frozen_state`: a
    buffer the step writes again at the next step must not change the states kept for the
    particles' ancestries); an error of the model's code names ``where()``."""
    run = frame.run
    run.frame = sf
    try:
        return frozen_state(step(t, prev, *args), local)
    except Exception as e:
        step_failed(sf, e, where)
        raise
    finally:
        run.frame = frame


def step_failed(sf, exc: BaseException, where) -> None:
    """An error of the model's code in a step over the members: raised again as an error
    that names ``where()`` (the step, the chain and the particles); other errors go on."""
    if isinstance(exc, WRAPPED) and wraps(exc):
        raise step_code_error(sf, exc, where()) from exc
    if isinstance(exc, AttributeError) and (err := converted_error(sf.run, exc)) is not None:
        raise err from exc


def take_observed(frame) -> np.ndarray | None:
    """Per member, the log-density of what ``frame`` observed since last taken (None:
    nothing); forgets it, and the choices' log-densities."""
    inc = frame.obs_lp
    frame.obs_lp = frame.lat_lp = None
    return inc


def take_member_lp(frame) -> np.ndarray:
    """Per member, the log-density of ``frame``'s choices and observations since last taken;
    forgets them."""
    lp = frame.total_member_lp()
    frame.obs_lp = frame.lat_lp = None
    return lp


def step_values(sf: StepFrame) -> dict:
    """site → the members' values of the step's latent and deterministic sites."""
    return {k: s.values for k, s in sf.new.items() if s.kind in (LATENT, DETERMINISTIC)}


def step_record(sf, state, rows=None) -> StepRecord:
    """Generation t's sites (every row's values, log-densities and distribution entries) and
    which of them its ``state`` (over the same rows) is; ``rows[j]``: the row of ``sf``'s sites
    that member j took (None: row j)."""
    return StepRecord(sf.new, rows, state_sites(sf.new, state))


def groups(frame) -> int:
    """The number of groups of members: the elements of the plate the frame runs (1 at the top
    level)."""
    return getattr(frame, "groups", 1)


def plate_of(frame) -> tuple | None:
    """The plate whose body ``frame`` runs (None: the top level)."""
    return getattr(frame, "plate_addr", None)


@dataclass(frozen=True)
class ReplayedParticle:
    """One particle of a program without chains, run up to an observation: ``paused`` (False:
    the program ended first), ``inc`` (the log-density of the observation it stopped after),
    ``choices`` and ``extra`` (address → value of its latent choices and deterministic
    values), ``sites`` (the sites executed: the cost of replaying)."""

    paused: bool
    inc: float
    choices: dict
    extra: dict
    sites: int


def replay_particle(program, rng, prefix: dict, stop: int) -> ReplayedParticle:
    """One particle of a program without chains (003 §3): a run of ``program`` from an empty
    trace with ``prefix`` (address → value) given, the other choices drawn from their priors,
    that pauses right after observation number ``stop`` (observations and factors count)."""
    run = Run(Trace(program), rng, targets=prefix, stop=stop)
    run.open_plate, run.run_chain = _no_plate, _no_chain
    run.mem_read_scalar = run.mem_read_batch = _no_mem
    run.execute()
    if run.aborted is not None:  # cannot happen: the values are the particle's own draws
        raise ModelError(f"th.smc: a particle's replayed choices have probability zero: "
                         f"{run.aborted}")
    sites = run.root.sites
    return ReplayedParticle(
        run.paused, run.inc,
        {a: s.value for a, s in sites.items() if s.kind == LATENT},
        {a: s.value for a, s in sites.items() if s.kind == DETERMINISTIC},
        len(sites))


def _no_plate(frame, local, size):
    raise ModelError(
        f"plate {_name(local)!r}: a program without th.markov chains is run by replaying each "
        "particle's choices up to its next observation, which supports sample, observe, "
        "factor, deterministic and th.call only"
    )


def _no_chain(frame, local, step, length, init, args):
    outside = ", ".join(repr(_name(a)) for a, s in frame.new.sites.items() if s.kind == LATENT)
    if not outside:  # (a chain with steps would have run on the batched path)
        raise ModelError(f"th.smc: the markov chain {_name(local)!r} has {length!r} steps and "
                         "the program no latent choice outside it: there is nothing to filter")
    raise ModelError(
        f"th.smc: the program has a markov chain {_name(local)!r} and latent choices outside it "
        f"({outside}); particles hold the chains' choices only — give the others with "
        "fixed={name: value, ...} (or update them with th.pmmh / th.pgibbs inside th.infer)"
    )


def _name(addr: tuple) -> str:
    return ".".join(map(str, addr))


def _no_mem(frame, mem, key):
    raise ModelError("th.mem in a particle run is not supported by the particle methods yet")
