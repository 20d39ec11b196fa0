"""The program output per draw, and the check that plates are used as plates.

Kernels execute plates on subsets of their elements, so the code after a ``with th.plate``
block sees the values of the executed elements only.  That is harmless when the code after the
plate does not read them — the rule of plates — and :func:`probe` checks it by a few
executions of the program compared with the full one (neither committed; O(N) each): at
initialisation, and again when a chain first reaches a trace of another layout
(:func:`~thrifty.core.layout.layout_key`: sites, plates, chains or mem tables of names it had
not held — a site in a branch taken only there is read by none of the initial trace's
executions; once per layout):

* every plate empty (what a kernel's run of no element gives the code after it), every step of
  every chain run (a step from its stored previous state: the plates inside it empty too);
* the latent choices of the plates given other values (:func:`_changed`), every element of
  every plate and every step of every chain run: a site after the plate reading the plate's
  values could otherwise agree with the empty run by chance — ``sum(z)`` at ``z = 0``, or a
  buffer the plate fills, which keeps the values of the last execution.  With several plates,
  each is also moved alone (a plate's elements are executed only where a kernel plans them: a
  change of one plate's element re-executes no element of another plate and no step of a
  chain but the one enclosing the plate, so a plate or a chain reading the plate's values —
  ``theta[g[i]]`` with ``theta`` sampled in a plate ``group``, a step reading ``s.sum()`` —
  would keep scores of the old values).  A plate inside a markov step is one plate in every
  step: moved alone it is moved in all of them, and its instances are moved in halves
  (:func:`_groups`), so that one reading another's values (``buf[t - 1]``) is seen.  A plate's
  elements are the local sections of paper 000 §3.1: nothing global may read them, nor the
  rest of the markov step that encloses the plate (its sites after the plate, its state: a
  change of an element re-executes the step with the plate on that element alone).

The plates are moved three ways (an execution equal to an earlier one is skipped): every
element of a discrete choice to its nearest other value, then only the elements that can move
up, then only those that can move down, in the order of the support (:func:`_other_values`;
continuous choices are redrawn in each).  Moving every element at once can leave a symmetric
function of them as it was — a Bernoulli plate's ``z.sum()`` when as many elements go 0 → 1 as
1 → 0.  Moving them one way changes their sum or mean over any subset of elements (whose
supports hold more than one value: the subset holds an element that can move up, or only
elements that can move down), and, with a support shared by the elements, their maximum or
minimum over it in one of the two.

A top-level plate's first element is also moved alone (to its nearest other value, the
others kept), as a kernel that changes one element does: moves of many elements at once can
keep a function of them that one element's move changes (the parity of ``z.sum()`` when the
elements that move are even in number).

Last, the elements of each plate are checked against each other (:func:`_elements_keep`; a
plate of the markov steps in all its instances at once, each by its own elements).  One run
moves every element (a discrete choice to its nearest other value, a continuous one to
a draw from its prior, those values kept from then on); then, for each bit b of the index, one
run moves only the elements whose index has bit b set, the others at their values in the trace
(⌈log₂ N⌉ runs).  Each element then holds the values it holds in the trace (not moved) or in
the full run (moved), and must score as it does there: one that scores otherwise reads other
elements — through a buffer the body fills (``buf[i] = z`` … ``buf[i - 2]``) or the vector of
the executed elements (``z - z.mean()``, ``np.roll(z, 1)``) — and a kernel that changes one
element re-executes it alone, from what the others left or from itself.  Two distinct elements
differ in some bit, and in that bit's run one of them moves while the other does not: a reader
at any distance, in either direction, is seen whenever its score changes with the moved value
it reads.  When the full run draws choices (a mem key no element read before, a site that
appears) a moved element's score may differ from the full run's by those draws alone: each
bit's run is then followed by its complement, and only the elements that did not move are
compared (2⌈log₂ N⌉ runs).  The cost is O(N log N) at set-up.  Not seen: what depends only on
which or how many elements run (``np.size(z)``: every run of the check executes them all; see
:mod:`thrifty.core.alone`), plates with coupled elements (left out), and a bit whose run refuses
the moved values when the full run drew choices (skipped).

Then:

* a site after a plate whose log-density or value changes reads values from the plate — a
  top-level site, an element's site of another plate, a site of a chain's step — and so does
  a step whose state changes: an error, since its score would be wrong whenever the plate runs
  a subset;
* an output that changes depends on the plate's values: it is then recomputed by a full
  execution whenever a draw is recorded after a partial one (O(N) per draw).

A probe sees what these executions change, no more: a reader that is no monotone function of
the values can keep its value under all of them (the parity of ``theta[z].sum()`` with even
gaps ``theta[z + 1] - theta[z]``), a continuous choice read through a discrete function
(``(x > 0).sum()``) may keep it by chance, and a choice that cannot be moved so (a process's
draws, values with an event shape), or whose value is refused under the element's other moved
choices, is only redrawn.  The default check mode (a full execution compared with the trace)
remains the backstop for the sites, and for the output where it is data and the trace holds a
full execution's.
"""

from __future__ import annotations

import math

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.alone import elements_alone, steps_alone
from thrifty.core.layout import nodes_of, pattern_of
from thrifty.core.markov import ChainUpdate
from thrifty.core.run import RESAMPLE, RESCORE, Plan, Run, VecTarget
from thrifty.core.sections import PlateView
from thrifty.core.vocab import OBSERVED, same_value
from thrifty.errors import ModelError


def _reads_plate(addr) -> ModelError:
    return ModelError(
        f"the site at {fmt(addr)} depends on values sampled inside a plate after the "
        "plate ended; values from a plate must only be used inside it (move the site "
        "into the plate, or use a Python loop; a summary of them to record, such as "
        "np.sum(z), may be the program's return value, which is computed from the whole "
        "plate when it is recorded)"
    )


def probe(trace, rng) -> bool:
    """Check plate usage on a fully executed ``trace``; return whether the output needs the
    plates' values (see the module docstring)."""
    nodes = list(nodes_of(trace.root))
    plates = {addr: inside for kind, addr, _, inside in nodes if kind == "plate"}
    if not plates:
        steps_alone(trace)
        return False
    try:  # nothing planned but the chains' steps: every plate runs zero elements
        run = Run(trace, rng, plan=_chain_steps(nodes, Plan())).execute()
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
    moves = _Moves(trace, nodes)
    moved = [(r, only) for only, steps in _groups(plates) for r in _changed(moves, only, steps)]
    moved += _one_element_moved(moves, nodes)
    runs = [(run, None), *moved]
    for local, site in trace.root.sites.items():
        for r, _ in runs:
            new = r.root.sites.get(local)
            if new is not None and _differs(site, new):
                raise _reads_plate(local)
    chains = {addr: node for kind, addr, node, _ in nodes if kind == "chain"}
    for r, only in runs:
        _steps_keep(chains, r, only)
    for r, only in moved:
        if only is not None:
            _other_plates_keep(nodes, only, r)
    instances: dict = {}  # (a plate of the markov steps: its instances in every step)
    for kind, addr, node, inside in nodes:
        if kind == "plate":
            instances.setdefault(pattern_of(addr) if inside else addr, {})[addr] = node
    for same in instances.values():
        _elements_keep(moves, same)
    elements_alone(trace, {a: n for k, a, n, _ in nodes if k == "plate"},
                   lambda: _chain_steps(nodes, Plan()))
    steps_alone(trace)  # (after the plates' checks: a step reading a plate's values is theirs)
    return any(not same_value(trace.output, r.output) for r, _ in runs)


def _elements_keep(moves, plates: dict) -> None:
    """Raise if an element of a plate reads another element's values (see the module
    docstring).  ``plates`` maps the instances of one plate to their nodes: a top-level plate,
    or a plate of the markov steps in every step, whose instances move together, each by the
    bits of its own elements' index.  The full run moves every element (a continuous site to a
    draw from its prior, kept from then on), then each bit's run the elements whose index has
    that bit set; an element that scores otherwise than with the same values of its own in the
    trace (not moved) or in the full run (moved) reads the others.  Plates whose elements are
    coupled (a process's draws, collapsed observations) are left out."""
    plates = {a: node for a, node in plates.items()
              if node.size > 1 and moves.sites[a] and not moves.sites[a][0][1].coupled}
    sites = [s for a in plates for s in moves.sites[a]]
    new = {key: moves.moved(key, view, cur, 0) for key, view, cur in sites}
    if all(v is None for v in new.values()):
        return  # (no plate, or no value can move)
    targets = {key: cur if new[key] is None else new[key] for key, _, cur in sites}
    only = frozenset(plates)
    full = _run_moved(moves.trace, targets, moves.plan, only, list(moves.sites))
    if full is None:
        return  # (values refused even under draws from the priors: the empty run has checked)
    for key, _, cur in sites:  # (the draws made there are the moved values from now on)
        if targets[key] is RESAMPLE:
            targets[key] = _drawn(full.plate_frames[key[0]], key[1], cur)
    ref = {a: np.asarray(full.plate_frames[a].elem_lp) for a in plates}
    fixed = full.n_fresh == 0  # (no choice drawn: a run's scores follow from its values)
    for bit in range((max(node.size for node in plates.values()) - 1).bit_length()):
        one = {a: ((np.arange(node.size) >> bit) & 1).astype(bool) for a, node in plates.items()}
        for masks in (one,) if fixed else (one, {a: ~m for a, m in one.items()}):
            run = _run_mask(moves, sites, targets, masks, only)
            if run is None:  # (an element refused its values: they are its own in the trace
                if fixed:  # or in the full run, both accepted, but the others' moved)
                    raise _reads_elements(min(plates), None)
                continue
            for a, moved in masks.items():
                lp, old = np.asarray(run.plate_frames[a].elem_lp), plates[a].elem_lp.array()
                want = np.where(moved, ref[a], old) if fixed else old
                bad = lp != want
                if bad.any():  # (NaN where it was NaN is the same score)
                    bad &= ~(np.isnan(lp) & np.isnan(want)) & (True if fixed else ~moved)
                    if bad.any():
                        raise _reads_elements(a, int(np.flatnonzero(bad)[0]))


def _run_mask(moves, sites, targets, masks, only) -> Run | None:
    """The run with the elements ``masks`` selects (per plate) at their ``targets`` and the
    others at their values in the trace; None when a plate refused some of those values."""
    given = {key: np.where(masks[key[0]].reshape((-1,) + (1,) * (np.ndim(cur) - 1)),
                           targets[key], cur)
             for key, _, cur in sites}  # (an element's value may hold several numbers)
    run = _run_moved(moves.trace, given, moves.plan, only, list(moves.sites))
    return None if run is None or any(v is RESAMPLE for v in given.values()) else run


def _drawn(frame, rel, cur):
    """The values the full run of :func:`_elements_keep` drew at the plate site ``rel`` (its
    values in the trace, ``cur``, if it left the plate)."""
    try:
        got = np.asarray(frame.site_at(rel).values)
    except KeyError:
        return cur
    return got if got.shape == np.shape(cur) else cur


def _reads_elements(addr, elem) -> ModelError:
    which = ("some element refuses its values" if elem is None else
             f"element {elem} scores otherwise")
    return ModelError(
        f"the elements of the plate {fmt(addr)} read each other's values ({which} when only "
        "other elements' values change): a kernel that changes one element re-executes it "
        "alone, so what it reads of the others would be stale or its own (a buffer the body "
        "fills, buf[i - 1], or a reduction over the executed elements, z.mean()). An element "
        "may read only its own values and what comes from outside the plate; for dependent "
        "elements use a markov chain (th.markov), or one top-level vector choice")


def _one_element_moved(moves, nodes) -> list:
    """``(run, {plate})`` for each top-level plate with a discrete latent choice: its first
    element moved to its nearest other value, the others kept (every plate and chain run in
    full).  Moves of every element at once can keep a function of them that one element's
    move changes — the parity of ``z.sum()`` when as many elements move up as down, or when
    the elements that move are even in number — as a kernel that changes one element does."""
    out = []
    for kind, addr, node, inside in nodes:
        sites = moves.sites.get(addr) if kind == "plate" and not inside else None
        if not sites or node.size < 1 or sites[0][1].coupled:
            continue
        new = {key: moves.moved(key, view, cur, 0) for key, view, cur in sites}
        if all(v is None or v is RESAMPLE for v in new.values()):
            continue
        first = np.arange(node.size) == 0
        targets = {key: cur if new[key] is None or new[key] is RESAMPLE else np.where(
            first.reshape((-1,) + (1,) * (np.ndim(cur) - 1)), new[key], cur)
            for key, _, cur in sites}
        only = frozenset((addr,))
        run = _run_moved(moves.trace, targets, moves.plan, only, list(moves.sites))
        if run is not None:
            out.append((run, only))
    return out


def _differs(site, new) -> bool:
    """Whether the site ``new`` of a probe's run scored or valued otherwise than ``site``."""
    a, b = site.lp, new.lp
    return not (a == b or (math.isnan(a) and math.isnan(b))) or (
        site.kind != OBSERVED and not same_value(site.value, new.value))


def _groups(plates: dict) -> list:
    """(plates moved together — None: every plate —, the directions they are moved in).  With
    several plates: each top-level plate alone, and each plate of the markov steps alone (its
    instances in every step), in the three directions of :func:`_changed`; then — a plate
    inside a step may read its instance's values in another step, through a buffer — its
    instances whose number (in step order) has bit b set, then those with bit b clear, for every
    bit: two instances differ in some bit, so one is moved while the other is not.  These
    O(log T) runs move one way (up, or down where nothing moves up: a sum of the values read
    changes) in one run each."""
    if len(plates) < 2:
        return [(None, _ALL_WAYS)]
    by_pattern: dict = {}
    for addr, inside in plates.items():
        by_pattern.setdefault(pattern_of(addr) if inside else addr, []).append(addr)
    groups = [(frozenset(g), _ALL_WAYS) for g in by_pattern.values()]
    for same in (g for g in by_pattern.values() if len(g) > 1):
        groups += [(frozenset(a for k, a in enumerate(same) if (k >> b) & 1 == side), (1, -1))
                   for b in range((len(same) - 1).bit_length()) for side in (1, 0)]
    out, seen = [(None, _ALL_WAYS)], {frozenset(plates)}
    for g, ways in groups:
        if g not in seen:
            seen.add(g)
            out.append((g, ways))
    return out


_ALL_WAYS = (0, 1, -1)  # each element to its nearest other value; then up; then down


def _reads_other_plate(addr, changed) -> ModelError:
    plate = addr[:-1] if addr[-1] == "*" else addr[:addr.index("*")]
    moved = ", ".join(fmt(c) for c in sorted(changed, key=repr)[:3]) + (
        ", ..." if len(changed) > 3 else "")
    return ModelError(
        f"the plate {fmt(plate)} reads values sampled in the plate {moved} (at {fmt(addr)}): "
        f"a kernel that changes some elements of {moved} re-executes no element of another "
        "plate (nor of the same plate in another markov step), whose scores would keep the old "
        "values. Plates do not read each other: sample per-group values as one top-level "
        "vector (th.sample('theta', dist.Normal(mu * np.ones(J), tau)) read as theta[g[i]] in "
        "the plate), or merge the two plates' bodies"
    )


def _chain_steps(nodes, plan: Plan) -> Plan:
    """``plan`` with every step of every chain, those inside markov steps included (their
    plates run the elements ``plan`` holds: none, in the empty run)."""
    for kind, addr, node, _ in nodes:
        if kind == "chain":
            for t in range(node.T):
                plan.add_step(addr, t)
    return plan


def _steps_keep(chains, run, changed=None) -> None:
    """Raise if ``run`` (every plate empty, or with other values: those of the plates
    ``changed``, None: all) scored or valued a site of a markov step otherwise than the trace
    holds, or gave a step another state: the chain reads the plates' values — a plate's before
    it, or one of its own steps' after the plate ended — and a kernel that changes some elements
    of a plate re-executes no step of a chain but the one enclosing them, on those elements."""
    states = {upd.node.addr: upd.states for upd in run.updates if isinstance(upd, ChainUpdate)}
    for addr, blocks in run.chain_frames.items():
        node, new = chains.get(addr), states.get(addr, {})
        for t in sorted(blocks) if node is not None else ():
            blk, old = blocks[t], node.step_view(t)
            for local, site in blk.sites.items():
                stored = old.get_site(local)
                if stored is None or _differs(stored, site):
                    raise _chain_reads(addr, changed, t, local)
            if blk.lp != old.lp and not (math.isnan(blk.lp) and math.isnan(old.lp)):
                raise _chain_reads(addr, changed, t, ())
            if t in new and not same_value(new[t], node.states[t]):
                raise _chain_reads(addr, changed, t, None)


def _chain_reads(addr, changed, t, local) -> ModelError:
    plate = "a plate" if changed is None else "the plate " + ", ".join(
        fmt(c) for c in sorted(changed, key=repr)[:3])
    what = (f"its step {t} returns another state" if local is None else
            f"its step {t} scores otherwise at {fmt(addr + (t,) + local)}")
    return ModelError(
        f"the markov chain {fmt(addr)} reads values sampled in {plate} ({what} when they "
        "change): a kernel that changes some elements of a plate re-executes no step of a "
        "chain, but the step that encloses the plate, with the plate on those elements only — "
        "the steps' scores and states would keep the old values, or be computed from some "
        "elements. Sample the values the steps read as one top-level vector (th.sample('s', "
        "dist.Bernoulli(0.5 * np.ones(J)))), or draw them in the steps; values sampled in a "
        "plate inside a step are used inside that plate only"
    )


def _other_plates_keep(nodes, changed, run) -> None:
    """Raise if ``run`` (the latent choices of the plates ``changed`` given other values, every
    plate run in full) scored an element of another plate, or valued one of its latent
    choices, otherwise than the trace holds: that plate reads ``changed``'s values."""
    for kind, addr, node, _ in nodes:
        frame = run.plate_frames.get(addr)
        if kind != "plate" or addr in changed or frame is None or frame.fresh_node:
            continue
        old, new = node.elem_lp.take(frame.idx), np.asarray(frame.elem_lp)
        if old.shape != new.shape or not np.array_equal(old, new, equal_nan=True):
            raise _reads_other_plate(addr + ("*",), changed)
        for rel, site in frame.new.items():
            stored = node.sites.get(rel)
            if site.kind != OBSERVED and stored is not None and not same_value(
                    stored.take(frame.idx), np.asarray(site.values)):
                raise _reads_other_plate(addr + ("*",) + rel, changed)


class _Moves:
    """What the runs of :func:`_changed` share: the plan running every element of every plate
    and every step of every chain, and the plates' latent sites with their values moved
    (:func:`_other_values`, computed once per site and direction)."""

    def __init__(self, trace, nodes):
        self.trace, self.plan, self.sites, self._moved = trace, _chain_steps(nodes, Plan()), {}, {}
        for kind, addr, node, _ in nodes:
            if kind == "plate":
                self.plan.add_elements(addr, np.arange(node.size))
                view = PlateView(trace, addr)
                self.sites[addr] = [((addr, rel), view, node.site(rel).values.array())
                                    for rel in node.latent_names()]

    def moved(self, key, view, cur, step):
        out = self._moved.get((key, step), self)
        if out is self:
            out = self._moved[key, step] = _other_values(view, key[1], cur, step)
        return out


def _changed(moves, only=None, steps=_ALL_WAYS) -> list:
    """The executions (never committed, on a generator of their own) with the latent choices
    of every plate (of the plates ``only``, when given) given other values — each element
    moved to its nearest other value, then the elements that can move up moved up, then those
    that can move down moved down (``steps``; :func:`_other_values`; an execution equal to an
    earlier one, or moving no discrete value, is left out) — every plate and every chain run in
    full.  A plate without latent choices gives none."""
    sites = [s for addr, ss in moves.sites.items() if only is None or addr in only for s in ss]
    runs, tried = [], []
    for step in steps:
        new = {key: moves.moved(key, view, cur, step) for key, view, cur in sites}
        if step and all(v is None or v is RESAMPLE for v in new.values()):
            continue  # (no discrete value moves this way)
        targets = {key: cur if new[key] is None else new[key] for key, _, cur in sites}
        if not targets or any(_same_targets(targets, t) for t in tried):
            continue
        tried.append(dict(targets))
        run = _run_moved(moves.trace, targets, moves.plan, only, list(moves.sites))
        if run is not None:
            runs.append(run)
            if len(steps) < 3:  # (one run asked for: the first direction that moves)
                break
    return runs


def _same_targets(a: dict, b: dict) -> bool:
    return all((a[k] is RESAMPLE) == (b[k] is RESAMPLE)
               and (a[k] is RESAMPLE or np.array_equal(a[k], b[k])) for k in a)


def _run_moved(trace, targets, plan, only, plates) -> Run | None:
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
            plate = max((p for p in plates if addr[:len(p)] == p and len(addr) > len(p)),
                        key=len, default=None)
            if plate is None:  # a site after the plates, made impossible by their values
                raise _reads_plate(addr)
            if only is not None and plate not in only:  # another plate's site, made impossible
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
