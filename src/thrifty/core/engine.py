"""The engine's interface for kernels: everything a kernel under ``thrifty.inference`` uses of
the engine, in one place (in the spirit of Gen's generative function interface).

**Propose, score, commit or reject.**  :func:`propose` executes the program once against a
trace with some choices given (``targets`` by address, ``vec`` for plate elements:
:class:`VecTarget`, ``RESAMPLE`` to redraw a choice from its prior), running only what the
:class:`Plan` and the change reach (program order is the dependency graph).  The returned
:class:`Run` is the proposal: ``log_weight`` (new minus old log-density of what it executed;
``-inf`` when a given value is outside its support, ``aborted`` saying where), ``n_fresh`` /
``n_stale`` (choices created and dropped), :func:`run_lp` and friends (per-section
log-densities), and ``commit()``; a proposal not committed is rejected — nothing else to undo.
:data:`STRICT` runs never create or redraw a choice (:class:`StructureChange`), :data:`LAZY`
runs leave the sections they skip stale (000 §3.5), :data:`RESCORE` runs re-execute everything;
the ``*_CAPTURE`` kinds also record every observation they execute (``run.captured``).
:func:`provisional_commit` commits into a fork (to ask the proposed trace a question, e.g. how
many choices it has, before deciding).

**Locate and plan.**  :func:`locate` / :func:`locate_choice` (an address, or the r-th latent
choice) give a :class:`~thrifty.core.locate.Location`; :func:`plan_for`, :func:`plan_elements`,
:func:`plan_steps` the plan of a run that changes them; :func:`stale_parts`, :func:`stale_plan`
what is stale and the plan that rescores it.

**Select.**  :func:`walk`, :func:`walk_steps` — the choices an address pattern names
(:mod:`thrifty.core.choices`).

**Read sections and the trace.**  :mod:`thrifty.core.sections`: a run's and the trace's
per-section log-densities, plate views, the chains, top-level choices, execution logs.

**Gradients.**  :class:`GradientRun` (:mod:`thrifty.core.gradient`): the log-density of a
block of continuous choices given every other choice (:func:`other_values`), in an array-API
namespace, for the gradient kernels; :func:`structure` is what a compiled density depends on.

**Particles.**  :mod:`thrifty.core.particle_steps`: run the program over particles, a step over
the members, what they observed; :func:`trajectory` and :func:`writable`
(:mod:`thrifty.core.written`): a drawn particle's trajectory as columns, which ``propose(...,
written=...)`` writes into its chain without executing the steps.

>>> import numpy as np, thrifty as th
>>> from thrifty import dist
>>> @th.model
... def m():
...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
...     th.observe("y", dist.Normal(mu, 1.0), 1.0)
>>> trace = th.simulate(m(), seed=0)
>>> rng = np.random.default_rng(0)
>>> plan = plan_for(trace, [locate(trace, ("mu",))])
>>> run = propose(trace, rng, targets={("mu",): 1.0}, plan=plan)
>>> expected = -0.5 * (1.0 ** 2 - trace["mu"] ** 2) - 0.5 * (0.0 ** 2 - (1.0 - trace["mu"]) ** 2)
>>> bool(np.isclose(run.log_weight, expected))
True
>>> run.commit(); trace["mu"]
1.0
"""

from __future__ import annotations

from thrifty.core.chain_site import States
from thrifty.core.choices import starts_with, walk, walk_steps
from thrifty.core.gradient import (
    ARGUMENT,
    GradientRun,
    computes_values,
    data_arguments,
    is_plate_chain,
    key_name,
    other_values,
    structure,
)
from thrifty.core.locate import (
    locate,
    locate_choice,
    plan_elements,
    plan_for,
    plan_steps,
    stale_parts,
    stale_plan,
)
from thrifty.core.mem import watch
from thrifty.core.model import as_program
from thrifty.core.particle_steps import (
    conditional_step,
    free_step,
    fused_step,
    groups,
    member_lps,
    pinned_step,
    plate_of,
    replay_particle,
    run_particles,
    run_step,
    step_failed,
    step_record,
    step_values,
    take_member_lp,
    take_observed,
)
from thrifty.core.particles import parts, per_particle, rebuilt, take
from thrifty.core.run import (
    DEFAULT,
    LAZY,
    RESAMPLE,
    RESCORE,
    STRICT,
    Candidates,
    Mode,
    Plan,
    Run,
    StructureChange,
    VecTarget,
)
from thrifty.core.sections import (
    chain_column,
    chain_references,
    chain_states,
    chains,
    executions_since,
    lane_choices,
    lane_lps,
    latent_sites,
    memo_density_changes,
    memo_families,
    memo_names,
    plate,
    plate_chain_column,
    plate_clock,
    plate_sizes,
    run_lp,
    run_observed,
    run_plate_lps,
    run_q,
    run_values,
    stale,
    stored_lp,
    top_choice,
    top_discrete,
    top_site,
    top_values,
    watch_rows,
)
from thrifty.core.simulate import initialize, latent_names, simulate_run
from thrifty.core.sites import Chain
from thrifty.core.snapshot import provisional_commit
from thrifty.core.trace import Trace
from thrifty.core.vocab import (
    CAPTURE,
    DETERMINISTIC,
    LAZY_CAPTURE,
    RESCORE_CAPTURE,
    ZeroProbability,
    chain_length,
    frozen_state,
    same_value,
)
from thrifty.core.written import trajectory, writable


def propose(trace, rng, targets: dict | None = None, vec: dict | None = None,
            plan: Plan | None = None, mode: Mode = DEFAULT,
            candidates: Candidates | None = None, created: dict | None = None,
            written: dict | None = None) -> Run:
    """One execution of ``trace``'s program with the choices ``targets`` / ``vec`` given and
    the sections of ``plan`` run: the proposal (see the module docstring), a run of the kind
    ``mode`` (:class:`~thrifty.core.vocab.Mode`).  ``candidates``: score alternative values of
    one plate element in lanes of one execution (:class:`~thrifty.core.vocab.Candidates`;
    :func:`lane_lps`, :func:`lane_choices`); such a run is never committed.  ``created``:
    values of memoized keys the run creates, drawn by another run (:func:`lane_choices`),
    accounted as fresh.
    ``written``: chain address → its steps as columns, written without executing them
    (:mod:`thrifty.core.written`)."""
    return Run(trace, rng, targets=targets, vec=vec, plan=plan, mode=mode,
               candidates=candidates, created=created, written=written).execute()


__all__ = [
    "ARGUMENT",
    "CAPTURE",
    "DEFAULT",
    "DETERMINISTIC",
    "LAZY",
    "LAZY_CAPTURE",
    "RESAMPLE",
    "RESCORE",
    "RESCORE_CAPTURE",
    "STRICT",
    "Candidates",
    "Chain",
    "GradientRun",
    "Mode",
    "Plan",
    "Run",
    "States",
    "StructureChange",
    "Trace",
    "VecTarget",
    "ZeroProbability",
    "as_program",
    "chain_column",
    "chain_length",
    "chain_references",
    "chain_states",
    "chains",
    "computes_values",
    "conditional_step",
    "data_arguments",
    "executions_since",
    "free_step",
    "frozen_state",
    "fused_step",
    "groups",
    "initialize",
    "is_plate_chain",
    "key_name",
    "lane_choices",
    "lane_lps",
    "latent_names",
    "latent_sites",
    "locate",
    "locate_choice",
    "member_lps",
    "memo_density_changes",
    "memo_families",
    "memo_names",
    "other_values",
    "parts",
    "per_particle",
    "pinned_step",
    "plan_elements",
    "plan_for",
    "plan_steps",
    "plate",
    "plate_chain_column",
    "plate_clock",
    "plate_of",
    "plate_sizes",
    "propose",
    "provisional_commit",
    "rebuilt",
    "replay_particle",
    "run_lp",
    "run_observed",
    "run_particles",
    "run_plate_lps",
    "run_q",
    "run_step",
    "run_values",
    "same_value",
    "simulate_run",
    "stale",
    "stale_parts",
    "stale_plan",
    "starts_with",
    "step_failed",
    "step_record",
    "step_values",
    "stored_lp",
    "structure",
    "take",
    "take_member_lp",
    "take_observed",
    "top_choice",
    "top_discrete",
    "top_site",
    "top_values",
    "trajectory",
    "walk",
    "walk_steps",
    "watch",
    "watch_rows",
    "writable",
]
