"""The kernel ``th.infer`` uses when none is given: one kernel per kind of choice, composed in a
``th.cycle`` (as PyMC's ``pm.sample()`` assigns its step methods), and a sentence saying what
it chose.

* **continuous choices present in every trace** (top-level sites and plate sites):
  ``th.nuts`` on all of them as one block when JAX and BlackJAX are installed, the
  program's density of them can be differentiated (a gradient run is traced once to find out)
  and no observation's support moves with them (``y ~ Uniform(0, θ)``: the density drops to 0
  where θ crosses the data, a wall NUTS diverges at; :meth:`HMC.moving_supports`);
  otherwise ``th.mh(site, th.drift())`` per site, adapted during the burn-in;
* **finite discrete choices** (``Bernoulli``, ``Categorical``, ``Binomial``, ... at the top
  level or in plates, of at most 64 values, one number a choice or a plate element) and the
  labels of a coupled process (``th.CRP`` tables):
  ``th.gibbs`` per site (enumeration; tables plus a new one, scored in lanes), unless
  changing one creates or drops other choices (tried on a few prior traces, and on traces
  with the top-level finite choices at every combination of their values, or each at each of
  its values when the combinations are more than 64): LMH then; and LMH too for a choice
  some of whose values put another choice's value outside its support (tried on the same
  traces), where Gibbs gives those values weight 0 and, supports apart, never moves it;
* **the states of each markov chain** (at the top level or in a plate): joined to the NUTS
  block when the chain has the same length (and plate size) in every prior trace and its states
  are continuous and differentiable (the block's density is traced once to find out);
  otherwise — discrete or non-differentiable states, a varying length —
  ``th.pgibbs(chain, 20)``, PGAS (003), unless a sweep tried on a prior trace is refused
  (a chain in a plate whose elements have other latent choices): LMH then;
* **continuous memoized values** (a DP mixture's table parameters): ``th.mh(name,
  th.drift())`` on the keys each trace holds;
* **the rest** — choices whose existence varies between traces (found in prior simulations),
  discrete choices without a finite support or with more than 64 values, vectors of discrete
  values (``Bernoulli(probs=[0.4, 0.4, 0.4])``: Gibbs enumerates one number at a time),
  discrete memoized values: ``th.lmh`` over them (001).

>>> import thrifty as th
>>> from thrifty import dist
>>> @th.model
... def m():
...     z = th.sample("z", dist.Bernoulli(probs=0.3))
...     th.observe("y", dist.Normal(2.0 * z, 1.0), 1.5)
>>> kernel, text = default_kernel(m())
>>> text
"th.infer: no kernel given; assigned Gibbs to z (th.gibbs('z'))"
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from thrifty._context import float64
from thrifty.core.engine import (
    VecTarget,
    chain_states,
    chains,
    initialize,
    latent_sites,
    locate,
    memo_families,
    plan_for,
    plate_sizes,
    propose,
    simulate_run,
)
from thrifty.errors import (
    DistributionError,
    InitializationError,
    ModelError,
    NumericalError,
    SelectionError,
    ThriftyError,
)

PRIOR_SIMULATIONS = 20  # prior traces: a choice present in every trace or not
PARTICLES = 20  # PGAS particles per chain
STRUCTURE_PROBES = 5  # traces on which a finite choice is tried for structure change
GIBBS_VALUES = 64  # finite supports larger than this go to LMH, not Gibbs
VALUE_PROBES = 10  # and traces with each top-level finite choice at each of its first values
JOINT_PROBES = 64  # or at every combination of their values, when there are at most this many


def default_kernel(program, rng=None) -> tuple:
    """``(kernel, sentence)``: the composed kernel for ``program`` and what it assigned to
    which sites (see the module docstring).  Deterministic for a program: its prior
    simulations use their own generator.  In float64 (:func:`thrifty._context.float64`), as
    the chains will run."""
    with float64():
        return _default_kernel(program, rng)


def _default_kernel(program, rng) -> tuple:
    from thrifty.inference.compose import cycle
    from thrifty.inference.mcmc.gibbs import gibbs
    from thrifty.inference.mcmc.mh import lmh, mh
    from thrifty.inference.particles.pgibbs import pgibbs
    from thrifty.inference.proposals.base import drift, on_manifold, prior

    rng = np.random.default_rng(0) if rng is None else rng
    traces = _prior_traces(program, rng, 1 + PRIOR_SIMULATIONS)
    trace = traces[0]
    names = latent_sites(trace)
    always = set(names)
    for other in traces[1:]:
        present = latent_sites(other)
        always &= set(present)
        for n, v in present.items():
            names.setdefault(n, v)
    continuous, finite, rest = [], [], []
    moving: dict = {}  # finite choice → a choice one of its values puts outside its support
    probes = None
    plates = tuple(".".join(map(str, p)) + "." for p in plate_sizes(trace))
    numbers = _numbers(traces, plates)
    for n, (d, discrete) in names.items():
        if n not in always:
            rest.append(n)
        elif getattr(d, "coupled", False) or (discrete and n in numbers and _few_values(d)):
            if probes is None:
                probes = traces[:STRUCTURE_PROBES] + _value_probes(program, names, always, rng)
            (rest if _decides_structure(n, probes, rng) else finite).append(n)
            if finite and finite[-1] == n and not getattr(d, "coupled", False):
                other = _moved_support(n, probes)
                if other is not None:
                    moving[n] = other
        elif discrete:
            rest.append(n)
        else:
            continuous.append(n)
    walked = _walkable_memos(traces, on_manifold)  # (continuous memoized values: a walk)
    rest += [n for n in memo_families(trace) if n not in walked]
    smooth = _smooth_chains(trace, traces)
    parts, said = [], []
    if continuous or smooth:
        block = continuous + [s for sites in smooth.values() for s in sites]
        k, why = _gradient_kernel(trace, block)
        if k is None and smooth:  # (the chains' states are not differentiable: PGAS)
            smooth = {}
            block = continuous
            k, why = _gradient_kernel(trace, block) if continuous else (None, why)
        if k is not None:
            parts.append(k)
            said.append(f"NUTS to {', '.join(block)}")
        elif continuous:
            # (plate elements on a simplex, ...: a drift cannot move them — from the prior)
            fixed = [n for n in continuous
                     if n.startswith(plates) and on_manifold(names[n][0]) is not None]
            walk = [n for n in continuous if n not in fixed]
            parts += [mh(n, drift()) for n in walk] + [mh(n, prior()) for n in fixed]
            if walk:
                said.append(f"adaptive MH (th.drift()) to {', '.join(walk)} ({why})")
            if fixed:
                said.append(f"MH from the prior (th.prior()) to {', '.join(fixed)} ({why}; "
                            "a random walk cannot stay on their supports)")
    if walked:  # (a table's parameters, a function's values: only the existing keys move)
        parts += [mh(n, drift()) for n in walked]
        said.append(f"adaptive MH (th.drift()) to the memoized values of {', '.join(walked)}")
    if finite:
        for n in finite:
            parts.append(gibbs(n))
            parts[-1].by_default = True  # (its refusals say who chose it)
        said.append(f"Gibbs to {', '.join(finite)}")
    sampled = {c for t in traces for c in chains(t, latent=True)}  # (a chain of no latent
    # choice in any prior trace, its steps all observations: nothing to sample there)
    for plate, chain in chains(trace):
        name = ".".join(map(str, (plate or ()) + chain))
        if name in smooth or (plate, chain) not in sampled:
            continue
        why = _particles_refuse(name, trace, rng)
        if why is not None:  # (e.g. other latent choices in the chain's plate): LMH takes it
            parts.append(lmh([name]))
            said.append(f"LMH to the chain {name} (PGAS cannot run it: {why})")
            continue
        parts.append(pgibbs(name, PARTICLES))
        said.append(f"PGAS ({PARTICLES} particles) to the chain {name}")
    if rest or moving:  # (every choice the other kernels do not take: also those that
        # appear later; and the finite choices some of whose values put another's outside
        # its support, which LMH redraws — 001 §2 — where Gibbs, one choice at a time, may
        # never leave the part of the space it starts in)
        taken = [n for n in names if n not in rest and n not in moving] + walked + [
            ".".join(map(str, (plate or ()) + chain)) for plate, chain in chains(trace)
            if (plate, chain) in sampled]
        parts.append(lmh(exclude=taken) if taken else lmh())
        if rest:
            said.append(f"LMH to {', '.join(rest)} and any other choice that appears")
        if moving:
            said.append("LMH also to " + ", ".join(
                f"{n} (a value of it puts {o} outside its support)" for n, o in moving.items())
                + (" and any other choice that appears" if not rest else ""))
    if not parts:
        raise SelectionError("th.infer: the program has no latent choice to sample; "
                             "th.simulate(program) runs it")
    kernel = cycle(parts) if len(parts) > 1 else parts[0]
    return kernel, (f"th.infer: no kernel given; assigned {'; '.join(said)} "
                    f"({_spelled(parts)})")


def _walkable_memos(traces, on_manifold) -> list:
    """The memoized functions whose values are continuous, off a manifold, in every prior
    trace that holds some: ``th.mh(name, th.drift())`` moves the keys a trace holds — keys
    come and go with the choices that read them, which the other kernels move (LMH's draws
    from the prior, their alternative, took about half the effective draws of a DP mixture's
    table means in the same time: ``benchmarks/default_choices.py``)."""
    seen: dict = {}
    for t in traces:
        for n, (d, discrete) in memo_families(t).items():
            if d is not None:
                seen[n] = seen.get(n, True) and not discrete and on_manifold(d) is None
    return [n for n, ok in seen.items() if ok]


def _smooth_chains(trace, traces) -> dict:
    """The chains whose states NUTS may take: chain name → its state sites, for the chains
    with the same length (and plate size) and sites in every prior trace and no discrete
    state."""
    out = {}
    others = [chain_states(t) for t in traces[1:]]
    for name, (T, sites) in chain_states(trace).items():
        if sites and not any(sites.values()) and all(
                o.get(name, (None, None))[0] == T and o[name][1] == sites for o in others):
            out[name] = list(sites)
    return out


def _particles_refuse(name, trace, rng) -> str | None:
    """Why PGAS cannot run on the chain ``name`` (one sweep tried on a fork of ``trace``), or
    None when it can — a numerical failure of that one sweep from a prior draw (every
    particle impossible) says nothing about the structure, so PGAS keeps the chain."""
    from thrifty.inference.particles.pgibbs import pgibbs

    try:
        pgibbs(name, PARTICLES).step(trace.fork(), rng)
    except (ModelError, SelectionError) as e:
        return str(e)
    except NumericalError:
        return None
    return None


def _decides_structure(name, traces, rng) -> bool:
    """Whether changing the finite choice ``name`` creates or drops other choices in one of
    ``traces`` (a Gibbs step on a fork of each: Gibbs refuses such a choice; LMH takes it)."""
    from thrifty.inference.mcmc.gibbs import gibbs

    for t in traces:
        try:
            gibbs(name).step(t.fork(), rng)
        except SelectionError as e:
            if "structure" in str(e):
                return True
            raise
    return False


def _moved_support(name, traces) -> str | None:
    """A latent choice that some value of the finite choice ``name`` puts outside its
    support in one of ``traces`` (a run giving ``name`` each value of its support, which
    redraws such a choice as LMH does), or None.  Gibbs gives those values weight 0: when the
    supports do not overlap (``x ~ DiscreteUniform(0, 0)`` if b else ``DiscreteUniform(2,
    3)``) it never changes ``name``, and a chain stays where it started."""
    from thrifty.core.engine import plate as plate_view
    from thrifty.inference.selection import select

    rng = np.random.default_rng(0)  # (the chains' draws do not depend on it)
    sel = select(name)
    for t in traces:
        cs = sel.resolve(t)
        loc = locate(t, cs.address(0)) if cs else None
        if loc is None:
            continue
        element = loc.kind == "element"
        d = plate_view(t, loc.plate_addr).support_of(loc.rel, [loc.elem]) if element else (
            loc.dist)
        for v in np.asarray(d.enumerate_support()).reshape(-1).tolist():
            if v == loc.value:
                continue
            given = ({"vec": {(loc.plate_addr, loc.rel): VecTarget(np.array([loc.elem]),
                                                                   np.array([v]))}}
                     if element else {"targets": {loc.addr: v}})
            try:
                run = propose(t, rng, plan=plan_for(t, [loc]), **given)
            except ThriftyError:
                continue
            if run.n_stale:
                where = getattr(run.aborted, "addr", None) or run.stale_choices[0][0]
                return ".".join(str(p) for p in where if p != "*")
    return None


def _numbers(traces, plates: tuple) -> set:
    """The latent sites whose every value is one number — per element for a plate site — in
    every prior trace: Gibbs enumerates the support of one number (a vector of finite choices
    would need its joint support, ``2³`` values for three Bernoullis, which it does not
    enumerate); the others go to LMH."""
    shapes: dict = {}
    for t in traces:
        for n, v in t.values(include_deterministic=False).items():
            shape = np.shape(v)[1:] if n.startswith(plates) else np.shape(v)
            shapes[n] = shapes.get(n, True) and shape == ()
    return {n for n, one in shapes.items() if one}


def _few_values(d) -> bool:
    """A finite support of at most ``GIBBS_VALUES`` values: Gibbs runs the program once per
    value (a DiscreteUniform(0, 10⁴) would cost 10⁴ runs a step); larger ones go to LMH."""
    if not d.has_enumerate_support:
        return False
    return d.support_size() <= GIBBS_VALUES


def _value_probes(program, names: dict, always: set, rng) -> list:
    """Traces in which the top-level finite choices take their values together: every
    combination when there are at most ``JOINT_PROBES`` (a choice that creates or drops
    another only jointly with others, ``if k1 + k2 + k3 == 3``, shows in them whatever the
    prior traces drew), else each choice at each of its first ``VALUE_PROBES`` values alone."""
    values = {}
    for n, (d, discrete) in names.items():
        if "." in n or n not in always or not discrete or d.batch_shape or not _few_values(d):
            continue  # (plate elements: their values vary across the prior traces' elements)
        values[n] = np.asarray(d.enumerate_support()).tolist()[:VALUE_PROBES]
    if math.prod(len(v) for v in values.values()) <= JOINT_PROBES:
        inits = [dict(zip(values, c)) for c in itertools.product(*values.values())]
    else:
        inits = [{n: v} for n, vs in values.items() for v in vs]
    out = []
    for init in inits:
        try:
            out.append(initialize(program, rng, init=init))
        except (DistributionError, InitializationError, ModelError, NumericalError):
            continue  # (an impossible value given the data, or given the others: no state)
    return out


def _prior_traces(program, rng, n: int) -> list:
    """``n`` prior simulations, leaving out those whose draws made parameters invalid (a scale
    drawn below 0: probability zero); if none is left after 5n tries, the error of
    :func:`~thrifty.core.simulate.initialize`, which names the parameters."""
    out = []
    for _ in range(5 * n):
        try:
            out.append(simulate_run(program, rng)[0])
        except DistributionError:
            continue
        if len(out) == n:
            break
    return out or [initialize(program, rng)]


def _gradient_kernel(trace, names) -> tuple:
    """(th.nuts on ``names``, None), or (None, why not)."""
    from thrifty.inference.gradient.hmc import HMC, nuts

    try:
        HMC.check_installed()
    except ImportError:
        return None, "JAX is not installed: pip install 'thrifty[jax]' for NUTS"
    k = nuts(names)
    k.by_default = True  # (its refusals say who chose it)
    try:
        k.probe(trace)
    except (ModelError, DistributionError, SelectionError) as e:
        return None, f"NUTS cannot differentiate this program: {e}"
    if k.constants is not None and k.constants[2]:  # a chain's states or a plate's labels
        # compiled in: their configurations are too many to compile one each (a few values of
        # a top-level choice are compiled once each, and cached)
        return None, k.constants_note("would compile its density anew at most steps")
    walls = k.moving_supports(trace)
    if walls:
        shown = ", ".join(walls[:3]) + (f" and {len(walls) - 3} more" if len(walls) > 3 else "")
        return None, (f"the support of {shown} moves with these choices (as y ~ Uniform(0, θ)): "
                      "the density drops to 0 where a bound crosses an observation, a wall "
                      "NUTS's trajectories diverge at, while a random walk's proposals there "
                      "are only rejected")
    return k, None


def _spelled(parts) -> str:
    inner = ", ".join(f"th.{p.label()}" for p in parts)
    return f"th.cycle([{inner}])" if len(parts) > 1 else inner
