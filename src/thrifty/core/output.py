"""The program output per draw, and the check that plates are used as plates.

Kernels execute plates on subsets of their elements, so the code after a ``with th.plate``
block sees the values of the executed elements only.  That is harmless when the code after the
plate does not read them — the rule of plates — and :func:`probe` checks it once, at
initialisation, by a few executions of the program compared with the full one (neither
committed; O(N) each):

* every plate empty (what a kernel's run of no element gives the code after it);
* the latent choices of the top-level plates given other values (:func:`_changed`), every
  element of every plate and every step of every top-level chain run: a site after the plate
  reading the plate's values could otherwise agree with the empty run by chance — ``sum(z)``
  at ``z = 0``, or a buffer the plate fills, which keeps the values of the last execution.
  With several top-level plates, each is also moved alone (a plate's elements are executed
  only where a kernel plans them: a change of one plate's element re-executes no element of
  another plate and no step of a chain, so a plate or a chain reading the plate's values —
  ``theta[g[i]]`` with ``theta`` sampled in a plate ``group``, a step reading ``s.sum()`` —
  would keep scores of the old values).  A plate's elements are the local sections of paper
  000 §3.1: nothing global may read them.

The plates are moved three ways (an execution equal to an earlier one is skipped): every
element of a discrete choice to its nearest other value, then only the elements that can move
up, then only those that can move down, in the order of the support (:func:`_other_values`;
continuous choices are redrawn in each).  Moving every element at once can leave a symmetric
function of them as it was — a Bernoulli plate's ``z.sum()`` when as many elements go 0 → 1 as
1 → 0.  Moving them one way changes their sum or mean over any subset of elements (whose
supports hold more than one value: the subset holds an element that can move up, or only
elements that can move down), and, with a support shared by the elements, their maximum or
minimum over it in one of the two.

Then:

* a site after a plate whose log-density or value changes reads values from the plate — a
  top-level site, an element's site of another plate, a chain's step: an error, since its score
  would be wrong whenever the plate runs a subset;
* an output that changes depends on the plate's values: it is then recomputed by a full
  execution whenever a draw is recorded after a partial one (O(N) per draw).

A probe sees what these executions change, no more: a reader that is no monotone function of
the values can keep its value under all of them (the parity of ``z.sum()``, ``theta[z].sum()``
with equal gaps ``theta[z + 1] - theta[z]``), a continuous choice read through a discrete
function (``(x > 0).sum()``) may keep it by chance, and a choice that cannot be moved so
(a process's draws, values with an event shape), or whose value is refused under the element's
other moved choices, is only redrawn.  The default check mode
(a full execution compared with the trace) remains the backstop.  Plates inside markov steps are
checked by the empty run only (their values cannot reach the top-level sites compared here but
through their steps).
"""

from __future__ import annotations

import math

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.run import RESAMPLE, RESCORE, Plan, Run, VecTarget
from thrifty.core.sections import PlateView
from thrifty.core.vocab import OBSERVED, same_value
from thrifty.errors import ModelError


def _has_plates(block) -> bool:
    return bool(block.plates) or any(
        _has_plates(c.step_view(t)) for c in block.chains.values() for t in c.nested
    )


def _reads_plate(addr) -> ModelError:
    return ModelError(
        f"the site at {fmt(addr)} depends on values sampled inside a plate after the "
        "plate ended; values from a plate must only be used inside it (move the site "
        "into the plate, or use a Python loop)"
    )


def probe(trace, rng) -> bool:
    """Check plate usage on a fully executed ``trace``; return whether the output needs the
    plates' values (see the module docstring)."""
    if not _has_plates(trace.root):
        return False
    try:  # nothing planned but the top-level chains' steps: every plate runs zero elements
        run = Run(trace, rng, plan=_chain_steps(trace, Plan())).execute()
    except Exception as e:  # the code after a plate failed on empty plate values
        if getattr(e, "in_plate", False):  # the plate's own body failed on no element
            raise ModelError(
                f"{e} (found by running the program with its plates on no element: thrifty "
                "runs plates on any subset of their elements, so the body must work for any)"
            ) from e
        raise ModelError(
            "executing the program with its plates running no element failed "
            f"({type(e).__name__}: {e}). thrifty runs plates on subsets of their elements, "
            "so the program must work for any subset, including an empty one; the usual cause "
            "is using values sampled inside a plate after it"
        ) from e
    plates = trace.root.plates
    moved = [(r, only) for only in [None, *(plates if len(plates) > 1 else ())]
             for r in _changed(trace, only)]
    runs = [(run, None), *moved]
    for local, site in trace.root.sites.items():
        for r, _ in runs:
            new = r.root.sites.get(local)
            if new is None:
                continue
            a, b = site.lp, new.lp
            if not (a == b or (math.isnan(a) and math.isnan(b))) or (
                site.kind != OBSERVED and not same_value(site.value, new.value)
            ):
                raise _reads_plate(local)
    for r, only in runs:
        _chains_keep(trace, r, only)
    for r, only in moved:
        if only is not None:
            _other_plates_keep(trace, only, r)
    return any(not same_value(trace.output, r.output) for r, _ in runs)


def _reads_other_plate(addr, changed) -> ModelError:
    return ModelError(
        f"the plate {fmt(addr[:-1] if addr[-1] == '*' else addr[:addr.index('*')])} reads "
        f"values sampled in the plate {fmt(changed)} (at {fmt(addr)}): a kernel that changes "
        f"some elements of {fmt(changed)} re-executes no element of another plate, whose "
        "scores would keep the old values. Plates do not read each other: sample per-group "
        "values as one top-level vector (th.sample('theta', dist.Normal(mu * np.ones(J), "
        "tau)) read as theta[g[i]] in the plate), or merge the two plates' bodies"
    )


def _chain_steps(trace, plan: Plan) -> Plan:
    """``plan`` with every step of each top-level chain without nested plates or chains."""
    for addr, node in trace.root.chains.items():
        if not node.nested:
            for t in range(node.T):
                plan.add_step(addr, t)
    return plan


def _chains_keep(trace, run, changed=None) -> None:
    """Raise if ``run`` (every top-level plate empty, or with other values: those of the plate
    ``changed``) scored a step of a top-level chain otherwise than the trace holds: the chain
    reads the plate's values, and a kernel that changes some of its elements re-executes no
    step of the chain."""
    for addr, node in trace.root.chains.items():
        blocks = run.chain_frames.get(addr) or {}
        steps = sorted(blocks)
        new = np.array([blocks[t].total_lp() for t in steps])
        old = node.step_lp(steps)
        bad = np.flatnonzero(~((old == new) | (np.isnan(old) & np.isnan(new))))
        if len(bad):
            plate = "a plate" if changed is None else f"the plate {fmt(changed)}"
            raise ModelError(
                f"the markov chain {fmt(addr)} reads values sampled in {plate} (its step "
                f"{steps[bad[0]]} scores otherwise when they change): a kernel that changes "
                "some elements of a plate re-executes no step of a chain, whose scores would "
                "keep the old values. Sample the values the steps read as one top-level vector "
                "(th.sample('s', dist.Bernoulli(0.5 * np.ones(J)))), or draw them in the steps"
            )


def _other_plates_keep(trace, changed, run) -> None:
    """Raise if ``run`` (the plate ``changed``'s latent choices given other values, every
    plate run in full) scored an element of another top-level plate, or valued one of its
    latent choices, otherwise than the trace holds: that plate reads ``changed``'s values."""
    for addr, node in trace.root.plates.items():
        frame = run.plate_frames.get(addr)
        if addr == changed or frame is None:
            continue
        old, new = node.elem_lp.take(frame.idx), np.asarray(frame.elem_lp)
        if old.shape != new.shape or not np.array_equal(old, new, equal_nan=True):
            raise _reads_other_plate(addr + ("*",), changed)
        for rel, site in frame.new.items():
            stored = node.sites.get(rel)
            if site.kind != OBSERVED and stored is not None and not same_value(
                    stored.take(frame.idx), np.asarray(site.values)):
                raise _reads_other_plate(addr + ("*",) + rel, changed)


def _changed(trace, only=None) -> list:
    """The executions (never committed, on a generator of their own) with the latent choices
    of every top-level plate (of the plate ``only``, when given) given other values — each
    element moved to its nearest other value, then the elements that can move up moved up, then
    those that can move down moved down (:func:`_other_values`; an execution equal to an earlier
    one, or moving no discrete value, is left out) — the plates and the top-level chains run in
    full.  A plate without latent choices gives none."""
    plan, sites = _chain_steps(trace, Plan()), []
    for addr, node in trace.root.plates.items():
        plan.add_elements(addr, np.arange(node.size))
        if only is None or addr == only:
            sites += [((addr, rel), PlateView(trace, addr), node.site(rel).values.array())
                      for rel in node.latent_names()]
    runs, tried = [], []
    for step in (0, 1, -1):
        moves = {key: _other_values(view, key[1], cur, step) for key, view, cur in sites}
        if step and all(v is None or v is RESAMPLE for v in moves.values()):
            continue  # (no discrete value moves this way)
        targets = {key: cur if moves[key] is None else moves[key] for key, _, cur in sites}
        if not targets or any(_same_targets(targets, t) for t in tried):
            continue
        tried.append(dict(targets))
        run = _run_moved(trace, targets, plan, only)
        if run is not None:
            runs.append(run)
    return runs


def _same_targets(a: dict, b: dict) -> bool:
    return all((a[k] is RESAMPLE) == (b[k] is RESAMPLE)
               and (a[k] is RESAMPLE or np.array_equal(a[k], b[k])) for k in a)


def _run_moved(trace, targets, plan, only) -> Run | None:
    """The execution with the plates' sites at ``targets`` (vector targets at every element:
    values, or ``RESAMPLE`` — a draw from the prior); None when the plates' own sites refuse
    such values, even under draws from the priors (invalid parameters).

    The values are those of a Gibbs update of a whole plate site (:mod:`thrifty.inference.mcmc
    .gibbs`).  A value outside its support once the element's other choices changed (a choice
    whose support depends on another's) is refused by the run: that site is resampled instead,
    and the run repeated (at most once per site); so are a plate's sites when the run stops
    inside the plate (parameters made invalid there).  A run stopped at a site after the plates
    stopped at a site that reads the plates' values."""
    while True:
        vec = {key: VecTarget(plan.plates[key[0]], v) for key, v in targets.items()}
        run = Run(trace, np.random.default_rng(0), vec=vec, plan=plan).execute()
        if run.aborted is None:
            refused = [key for key, v in targets.items() if v is not RESAMPLE
                       and _refused(run.plate_frames[key[0]], key[1])]
            if not refused:
                return run
        else:
            addr = run.aborted.addr
            plate = next((p for p in trace.root.plates if addr[:len(p)] == p
                          and len(addr) > len(p)), None)
            if plate is None:  # a site after the plates, made impossible by their values
                raise _reads_plate(addr)
            if only is not None and plate != only:  # another plate's site, made impossible
                raise _reads_other_plate(plate + ("*",) + addr[len(plate) + 1:], only)
            # a site of the plate made impossible (invalid parameters) by the values given to
            # its elements: the plate's sites resampled instead — and if even draws from their
            # priors make it impossible, this run cannot check (the empty run has)
            refused = [k for k in targets if k[0] == plate and targets[k] is not RESAMPLE]
            if not refused:
                return None
        for key in refused:
            targets[key] = RESAMPLE


def _refused(frame, rel) -> bool:
    """Whether the plate ``frame`` kept a value given to its site ``rel`` at some element: one
    outside that element's support (scored −∞, the old value kept)."""
    try:
        lp = frame.site_at(rel).lp
    except KeyError:  # (the site left the plate: the values given before it changed that)
        return False
    return not np.all(np.asarray(lp) > -np.inf)


def _other_values(view, rel, cur, step=0):
    """Values other than ``cur`` for the elements of the plate site ``rel`` (discrete, one value
    per entry): each entry moved to the nearest value of its own support — the next or previous
    in the order of the finite support, or one more or less for a count without one — among
    :data:`_NEAR` on each side (``step`` 1 or −1: on that side only); an entry with none, such
    as a support of one value, keeps its value: O(N) whatever the support's size.  ``RESAMPLE``
    for the others (continuous choices, a process's draws, values with an event shape) or when
    no entry can move — None then for a ``step``."""
    if view.is_coupled(rel) or not view.discrete(rel):
        return RESAMPLE
    d = view.support_of(rel)
    if d is None or d.event_shape:
        return RESAMPLE
    cur = np.asarray(cur)
    support = (np.asarray(d.enumerate_support()) if d.has_enumerate_support
               and d.support_size() <= _ENUMERATED else None)  # (else a count's ±1)
    if support is not None and (support.ndim != 1 or np.any(support[1:] <= support[:-1])):
        return RESAMPLE
    k = _NEAR + 1 if support is None else min(len(support), _NEAR + 1)
    pos = cur if support is None else np.searchsorted(support, cur)
    new, todo, stuck = cur.copy(), np.ones(cur.shape, bool), True
    for off in (sign * m for m in range(1, k) for sign in ((step,) if step else (1, -1))):
        at = pos + off
        if support is None:
            cand, inside = at, todo
        else:
            inside = todo & (at >= 0) & (at < len(support))
            if step:  # (past the support's end on this side: no further value)
                todo = inside
            cand = support[np.clip(at, 0, len(support) - 1)]
        try:
            lp = d.log_prob(np.where(inside, cand, new))
        except (ValueError, TypeError):  # (shapes the family does not broadcast over)
            return RESAMPLE
        moved = inside & np.isfinite(np.broadcast_to(lp, cur.shape))
        new[moved] = cand[moved]
        todo &= ~moved
        stuck &= not moved.any()
        if not todo.any():
            break
    return (None if step else RESAMPLE) if stuck else new


_NEAR = 8  # values tried on each side of the current one
_ENUMERATED = 2**20  # larger finite supports: moved as counts, not enumerated


def current_output(trace, rng, needs_plates: bool):
    """The program output at ``trace`` (a full re-execution if it needs the plates' values)."""
    if trace.output_full or not needs_plates:
        return trace.output
    run = Run(trace, rng, mode=RESCORE).execute()
    run.commit()
    return trace.output
