"""Enumerative Gibbs: ``th.gibbs(sel)`` (paper 000 §4.2).

Each selected discrete choice is redrawn from its full conditional, computed by executing the
program once per value of its finite support (strictly: a value that would create or drop
choices is an error, a value that makes another choice impossible gets probability zero).  Only
what the choice can affect is re-executed: for a site of one plate element or markov step that
is O(1) whatever the size of the plate or chain.

A site of many plate elements is updated for all of them at once: the elements are
conditionally independent given everything else, so one vectorized execution per support value
gives every element's conditional, and the new values are drawn element-wise.
"""

from __future__ import annotations

import math

import numpy as np

from thrifty._args import checked_keywords
from thrifty.core.address import fmt
from thrifty.core.engine import (
    DEFAULT,
    STRICT,
    Candidates,
    StructureChange,
    VecTarget,
    lane_choices,
    lane_lps,
    locate,
    plan_for,
    propose,
    run_lp,
)
from thrifty.core.engine import (
    plate as plate_view,
)
from thrifty.errors import ModelError, NumericalError, SelectionError
from thrifty.inference.selecting import Selecting
from thrifty.inference.selection import One, PlateGroup

MAX_VALUES = 2**20  # a larger support is refused: one execution per value and step
KEPT_RUNS = 64  # over more values, the chosen value's run is executed again, not kept


def _support(d, addr):
    if d is None or not getattr(d, "has_enumerate_support", False):
        name = type(d).__name__ if d is not None else "it"
        raise SelectionError(
            f"gibbs: the choice at {fmt(addr)} ({name}) has no finite support to enumerate; "
            "use th.mh"
        )
    size = d.support_size()
    if size > MAX_VALUES:
        raise SelectionError(
            f"gibbs: the choice at {fmt(addr)} ({d!r}) has {size} values, too many to "
            f"enumerate (one execution of the program per value, every step; at most "
            f"{MAX_VALUES}); use th.mh"
        )
    return np.asarray(d.enumerate_support())


def _one_number(value, addr) -> None:
    """Gibbs enumerates the support of one number: a choice holding several (three Bernoullis
    in one site, or in each plate element) would need their joint support, which it does not
    enumerate."""
    if type(value) is int:  # (a plate element's current value: the usual case)
        return
    shape = np.shape(value)
    if shape != ():
        raise SelectionError(
            f"gibbs: {fmt(addr)} holds values of shape {shape}; enumerating their joint support "
            "is not supported — put them in a plate (one number per element) or use th.lmh"
        )


def _gumbel_choice(logw: np.ndarray, rng) -> np.ndarray:
    """Index drawn with probabilities ∝ exp(logw) along axis 0 (Gumbel-max)."""
    g = -np.log(-np.log(rng.random(logw.shape)))
    with np.errstate(invalid="ignore"):
        return np.argmax(np.where(np.isneginf(logw), -np.inf, logw + g), axis=0)


def _gumbel_pick(logw: list, rng) -> int:
    """:func:`_gumbel_choice` for one set of weights (a list), in Python: the same uniforms,
    the same index."""
    best, k, j = -math.inf, 0, 0
    log = math.log
    for u in rng.random(len(logw)).tolist():
        lw = logw[j]
        if lw > -math.inf and u > 0.0:  # (u = 0: a Gumbel draw of −∞)
            z = lw - log(-log(u))
            if z > best:
                best, k = z, j
        j += 1
    return k


def _one_value(v) -> np.ndarray:
    """``np.array([v])`` of a value of a support (a Python int, float or bool), without the
    type discovery of a list's conversion for an int or a float (half its cost)."""
    t = type(v)
    if t is float:
        out = np.empty(1)
    elif t is int and -(2**63) <= v < 2**63:
        out = np.empty(1, dtype=np.int64)
    else:
        return np.array([v])
    out[0] = v
    return out


class Gibbs(Selecting):
    """Enumerative Gibbs over the selected choices; see :func:`thrifty.gibbs`."""

    name = "gibbs"
    by_default = False  # assigned by th.infer's default kernel, not by the user

    def __init__(self, selection):
        super().__init__(selection)
        self._lanes_checked: set = set()  # (plate, site) whose lanes were compared with runs
        self._by_value: set = set()  # (plate, site) whose lanes differed: one run per value

    def _step(self, trace, rng):
        cs = self.choices(trace)
        if cs is None:
            return trace
        if isinstance(self.selection, One):
            cs = cs.pick_block(rng)
        for addr in cs.scalars:
            self._site(trace, addr, rng)
        for g in cs.groups:
            self._group(trace, g, rng)
        return trace

    def _structure_error(self, addr, value, e):
        if isinstance(value, np.generic):
            value = value.item()  # (named as the model's code would write it)
        return SelectionError(
            f"gibbs on {fmt(addr)}: "
            + (f"a value among {value!r}" if isinstance(value, list) else f"the value {value!r}")
            + f" changes the program's structure ({e}); "
            "use th.lmh or th.mh for choices that decide which other choices exist"
            + (" (th.infer's default kernel assigned th.gibbs to it: no trace it tried at set-up "
               "showed such a change; give th.infer a kernel with th.lmh for it)"
               if self.by_default else "")
        )

    def _site(self, trace, addr, rng, one=False):
        loc = locate(trace, addr)
        if loc is None:
            raise SelectionError(f"gibbs: no latent choice at {fmt(addr)}")
        if loc.kind == "element" and not one:
            size = plate_view(trace, loc.plate_addr).size
            g = PlateGroup(loc.plate_addr, loc.rel, size, np.array([loc.elem]))
            return self._group(trace, g, rng)
        if loc.kind == "element":
            view = plate_view(trace, loc.plate_addr)
            return self._element(trace, view, loc.rel, loc.elem,
                                 view.support_of(loc.rel, [loc.elem]), loc.value, rng)
        self._pick(trace, rng, self._values(loc.dist, addr, loc.value), loc.value,
                   plan_for(trace, [loc]), addr)

    @staticmethod
    def _values(d, addr, value) -> list:
        """The values of one choice's finite support; ``value``: its current value (a plate
        element's, whose distribution may hold the other elements' entries too)."""
        if type(value) is not int:  # (an int: one number — the usual case, without the call)
            _one_number(value, addr)
        return _support(d, addr).tolist()

    def _element(self, trace, view, rel, e: int, d, cur, rng):
        """Gibbs on the site ``rel`` of one element ``e`` of the plate ``view``, whose value is
        ``cur`` under its element-wise distribution ``d``."""
        plate = view.addr
        addr = plate + (e,) + rel
        values = self._values(d, addr, cur)
        if len(values) > 2:  # one run in lanes, one to commit
            return self._pick_lanes(trace, view, rel, e, values, cur, rng, STRICT)
        plan = view.plan([e])
        self._pick(trace, rng, values, cur, plan, addr, (plate, rel), plan.plates[plate])

    def _pick(self, trace, rng, values, cur, plan, addr, key=None, elems=None,
              mode=STRICT) -> None:
        """Draw the choice at ``addr`` from its full conditional over ``values``: one run per
        value other than the current one ``cur`` (``mode``, strict by default; ``plan``; the
        value given by address, or as the target of the plate site ``key`` at the element
        ``elems``), weights ``run.log_weight`` relative to it; commit the chosen value's run
        (kept while there are few values; over many, executed again: a run holds the values it
        executed, and K of them of a support of K values took O(K²) memory)."""
        logw, runs = [], []
        # (a strict run draws nothing: executed again, it is the run scored; one that draws a
        # new table's parameters is kept, whatever the number of values)
        keep = len(values) <= KEPT_RUNS or mode is not STRICT
        for v in values:
            if v == cur:
                logw.append(0.0)
                runs.append(None)
                continue
            run = self._run_of(trace, rng, v, plan, addr, key, elems, mode)
            logw.append(float(run.log_weight) if run.aborted is None else -math.inf)
            runs.append(run if keep else True)
        k = _gumbel_pick(logw, rng)
        info = self.info
        info.proposed += 1
        info.accepted += 1
        if runs[k] is True:
            runs[k] = self._run_of(trace, rng, values[k], plan, addr, key, elems, mode)
        if runs[k] is not None:
            runs[k].commit()

    def _run_of(self, trace, rng, v, plan, addr, key, elems, mode):
        """:meth:`_pick`'s run of the value ``v``."""
        try:
            if key is None:
                return self.execute(trace, rng, targets={addr: v}, plan=plan, mode=mode)
            return self.execute(trace, rng, vec={key: VecTarget(elems, _one_value(v))},
                                plan=plan, mode=mode)
        except StructureChange as err:
            raise self._structure_error(addr, v, err) from None

    def _commit(self, trace, rng, addr, value, lane=None, **kw) -> None:
        """Run the drawn value (``kw``: the run's targets, plan and mode) and commit it; a
        value under which a choice would be created or left out (a memoized key that loses its
        last reader) is refused.  ``lane``: the log-ratio the candidate lanes gave this value
        against the current one, which the run must give too (:meth:`_pick_lanes`)."""
        try:
            run = self.execute(trace, rng, **kw)
        except StructureChange as e:
            raise self._structure_error(addr, value, e) from None
        if lane is not None and not _same_ratio(lane, run):
            raise _lanes_error(addr, value, lane, run.log_weight)
        run.commit()

    def _group(self, trace, g, rng):
        plate = g.plate_addr
        view = plate_view(trace, plate)
        d = view.dist(g.rel)
        if d is not None and d.coupled:  # a process's draws: one at a time
            for e in g.element_array().tolist():
                self._coupled(trace, plate, g.rel, e, rng)
            return
        if g.count == 1 and not view.coupled:  # one element (th.one): read from the view
            elems = g.element_array()
            e = int(elems.item())  # (its one element)
            return self._element(trace, view, g.rel, e, view.support_of(g.rel, elems),
                                 view.value(g.rel, e), rng)
        if view.coupled:
            # other sites of the plate are coupled (the elements are not independent): one
            # element at a time, each located afresh after the last one's commit
            for e in g.element_array().tolist():
                self._site(trace, plate + (e,) + g.rel, rng, one=True)
            return
        addr = plate + ("*",) + g.rel
        elems = g.element_array()
        _one_number(view.value(g.rel, int(elems[0])), addr)
        values = _support(view.support_of(g.rel, g.elems), addr)
        plan = view.plan(elems)
        n = len(elems)
        logw = np.empty((len(values), n))
        for k, v in enumerate(values):
            vec = {(plate, g.rel): VecTarget(elems, np.full(n, v, dtype=values.dtype))}
            try:
                run = self.execute(trace, rng, vec=vec, plan=plan, mode=STRICT)
            except StructureChange as e:
                raise self._structure_error(addr, v, e) from None
            logw[k] = run_lp(run, "plate", plate, elems)
        new = values[_gumbel_choice(logw, rng)]
        changed = new != view.values(g.rel, elems)
        self.info.proposed += n
        self.info.accepted += n
        if changed.any():
            e2 = elems[changed]
            vec = {(plate, g.rel): VecTarget(e2, new[changed])}
            plan2 = view.plan(e2)
            self._commit(trace, rng, addr, sorted(set(new[changed].tolist())), vec=vec,
                         plan=plan2, mode=STRICT)


    def _coupled(self, trace, plate, rel, e, rng):
        """Gibbs on one draw of a coupled process (Neal 2000): over the state's candidates —
        for a CRP or Pitman–Yor process, the occupied tables and a new one.

        The candidates are scored in *one* execution of element ``e`` in lanes, one per
        candidate (:class:`~thrifty.core.engine.Candidates`; O(1) in N, O(K) work): lane k's
        log-density is the process's predictive of table k given the other draws, times what
        the element's other sites say under it (a collapsed per-table model: its predictive
        given the table's other observations).  A collapsed per-table model gives Algorithm
        3; a memoized per-table choice such as ``w(z)`` that is not collapsed gives
        Algorithm 8 with one auxiliary table: a new table's ``w`` is drawn from its prior in
        the scoring run (fresh choices leave the weight) and given to the run that commits
        it, if chosen; when ``e`` sits alone, its own table is the auxiliary one and no other
        new table is offered.  Emptied tables leave the trace with their mem entries.
        """
        view = plate_view(trace, plate)
        cur = int(view.values(rel, [e])[0])
        self._pick_lanes(trace, view, rel, e, view.candidates(rel, cur), cur, rng, DEFAULT)

    def _pick_lanes(self, trace, view, rel, e, values, cur, rng, mode) -> None:
        """Draw element ``e``'s value at ``rel`` from its full conditional over ``values``,
        scored in one run of ``e`` in lanes (:class:`~thrifty.core.engine.Candidates`:
        differences between lanes are the conditional's log-ratios); a run of ``e`` with the
        drawn value commits it, given the new choices (a new table's parameters) the lane
        was scored with.

        The lanes are ``k`` copies of one element in one execution of the plate body, so they
        are ``k`` executions of the element only if the body's result for a member depends on
        its index and values alone: a body that writes into an array at its index and reads
        it back (``self.z[i] = z`` … ``w(self.z[i])``) gives every lane the value the last
        copy wrote.  The first lanes run of each site is compared with one run per value
        (:meth:`_lanes_hold`); if they differ, this site is updated by those runs from then
        on (:meth:`_pick`: the conditional as the program defines it, K runs of the element
        instead of one).  Every drawn value's committing run is compared with its lane too,
        an error if they differ."""
        plate = view.addr
        plan = view.plan(np.array([e]))
        key = (plate, rel)
        if key not in self._by_value:
            if self._in_lanes(trace, plate, rel, e, values, cur, rng, mode, plan):
                return
            self._by_value.add(key)
        self._pick(trace, rng, values, cur, plan, plate + (e,) + rel, key, plan.plates[plate],
                   mode)

    def _in_lanes(self, trace, plate, rel, e, values, cur, rng, mode, plan) -> bool:
        """:meth:`_pick_lanes` by lanes; False (nothing drawn) when a site's first lanes
        differ from runs of the element."""
        k = len(values)
        if k >= 2:
            try:
                lanes = self.execute(
                    trace, rng, vec={(plate, rel): VecTarget(np.full(k, e), np.array(values))},
                    plan=plan, mode=mode, candidates=Candidates(plate, e, k))
            except StructureChange as ex:
                raise self._structure_error(plate + (e,) + rel, values, ex) from None
            lp = lane_lps(lanes, plate)
            now = next(j for j, v in enumerate(values) if v == cur)
            if not lp[now] > -math.inf:  # (the trace's own value: its density is positive)
                raise NumericalError(
                    f"gibbs on {fmt(plate + (e,) + rel)}: its current value {cur} has "
                    f"log-density {lp[now]} in the run scoring the candidates, though the trace "
                    "holds it")
            if (plate, rel) not in self._lanes_checked:
                self._lanes_checked.add((plate, rel))
                if not self._lanes_hold(trace, plate, rel, e, values, now, lp, lanes, plan,
                                        mode):
                    return False
            j = _gumbel_pick((lp - lp[now]).tolist(), rng)
            if j != now:
                self._commit(
                    trace, rng, plate + (e,) + rel, values[j], lane=float(lp[j] - lp[now]),
                    vec={(plate, rel): VecTarget(np.array([e]), np.array([values[j]]))},
                    plan=plan, mode=mode, created=lane_choices(lanes, plate, j))
        self.info.proposed += 1
        self.info.accepted += 1
        return True

    def _lanes_hold(self, trace, plate, rel, e, values, now, lp, lanes, plan, mode) -> bool:
        """Whether each lane's log-ratio against the current value is that of a run of the
        element alone with the lane's value (and the new choices the lane drew); on a
        generator of its own, never committed: the chain's draws are unchanged."""
        rng = np.random.default_rng(0)
        for j, v in enumerate(values):
            if j == now:
                continue
            try:
                run = propose(trace, rng, vec={(plate, rel): VecTarget(np.array([e]),
                                                                       np.array([v]))},
                              plan=plan, mode=mode, created=lane_choices(lanes, plate, j))
            except StructureChange as ex:
                raise self._structure_error(plate + (e,) + rel, v, ex) from None
            if not _same_ratio(float(lp[j] - lp[now]), run):
                return False
        return True


def _same_ratio(lane: float, run) -> bool:
    """Whether a lane's log-ratio is the run's ``log_weight`` (to rounding)."""
    w = float(run.log_weight) if run.aborted is None else -math.inf
    if lane == w:
        return True
    scale = 1.0 + abs(run.lp_new) + abs(run.lp_old)
    return abs(lane - w) <= 1e-9 * scale


def _lanes_error(addr, value, lane, weight) -> ModelError:
    return ModelError(
        f"gibbs on {fmt(addr)}: scoring the candidate values of this element in lanes of one "
        f"execution of the plate body (each lane the element's index) gave the value {value!r} "
        f"the log-ratio {lane} against the current value, but running the element alone with "
        f"it gives {weight}: the body's result for an element depends on more than its own "
        "index and values (e.g. it writes into an array at the plate's index and reads it "
        "back: `buf[i] = z` … `buf[i]`, which the lanes, copies of one index, overwrite). "
        "Compute from the sampled value itself (`z`, not `buf[i]`); the first lanes of this "
        "site agreed with one run per value")


@checked_keywords
def gibbs(selection) -> Gibbs:
    """Enumerative Gibbs on the discrete choices named by ``selection``.

    Each choice is updated in turn from its full conditional; a site of many plate elements is
    updated for all of them in one vectorized pass (they are conditionally independent).
    Draws of a coupled process (``th.CRP``, ``th.PitmanYor`` table labels) are updated one
    element at a time over the occupied tables and a new one (Neal 2000, Alg. 3 with collapsed
    per-table models, Alg. 8 with m = 1 when a memoized per-table choice is not collapsed):
    O(K) runs of one element each.
    ``th.gibbs(th.one("data.z"))`` updates a single element chosen uniformly, in O(1).
    A value under which another choice would be created or left out is refused with a
    :class:`~thrifty.errors.SelectionError` (``th.lmh`` takes choices that decide which others
    exist).

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def coin():
    ...     b = th.sample("b", dist.Bernoulli(probs=0.5))
    ...     th.observe("y", dist.Normal(3.0 * b, 1.0), 2.5)
    >>> r = th.infer(coin(), th.gibbs("b"), num_samples=3000, seed=1, progress=False)
    >>> bool(abs(r["b"].mean() - 0.9526) < 0.03)
    True
    """
    return Gibbs(selection)
