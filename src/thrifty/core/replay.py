"""The replay decision: what an execution does at a random choice.

Every latent site executed by a run — a site of the model body or of a markov step, the site of
many plate elements (or, later, particles) at once, a key of a memoized function — goes through
:func:`replay`, the one place that decides, member by member:

============================  =======================================================  ==========
case                          value and log-density                                    accounting
============================  =======================================================  ==========
proposed value (target)       the target, scored; outside the support → probability 0  kept
resample (target RESAMPLE)    a fresh draw from the prior under the new parents; q_rev  kept, q
                              is the old value's stored density (its old parents)
replay                        the old value, rescored under its new parents            kept
replay, outside the support   strict: scored −∞; else the old value is *stale* and a   stale +
                              *fresh* value is drawn (so is an old value of another    fresh
                              shape than the distribution's values)
no old value                  strict: :class:`StructureChange`; else a fresh draw      fresh
============================  =======================================================  ==========

"Kept" choices enter the MH ratio (paper 001 Eq. 4); fresh and stale ones do not (their
densities go to ``lp_fresh`` / ``lp_stale``); resampled targets add their prior densities to
``q_fwd`` / ``q_rev``.  A proposed value outside its support gives the proposal probability
zero: a single member (:class:`ScalarLanes`) stops the run (:class:`ZeroProbability`); in a
batch (:class:`BatchLanes`) the member scores −∞ and keeps its old value, so the other members
and the code after the site see valid values.

The *lanes* object supplies the operations that differ between one member held as a Python
value and n members held as arrays with a leading member axis — draw, score, set the targeted
members, redraw the members outside the support; the decision itself is written once, in
:func:`replay`.  Its accounting goes to ``acct`` (any object with ``n_fresh, lp_fresh, n_stale,
lp_stale, q_fwd, q_rev``).
"""

from __future__ import annotations

import weakref

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.code_errors import not_numeric_observation
from thrifty.core.vocab import (
    INF,
    NEG_INF,
    RESAMPLE,
    StructureChange,
    ZeroProbability,
    given_value,
    holding,
    infinite_error,
    nan_error,
    non_numeric,
    outside_support,
    sample_error,
    take_rows,
    total,
    weak_run,
    written,
)
from thrifty.errors import ModelError, NumericalError, ThriftyError

SAMPLER_ERRORS = (ValueError, OverflowError)
"""What NumPy's samplers raise for parameters they cannot draw from (``Poisson(1e20)``)."""


def sampler_error(addr, d, exc: BaseException) -> Exception:
    """A sampler's error named by the address (thrifty's own errors pass as they are)."""
    return exc if isinstance(exc, ThriftyError) else sample_error(addr, d, exc)


# what the replay decision did at a site, in this order: a KEPT or SET value's density enters the
# MH ratio, a FRESH or REDRAWN one's does not (``status >= FRESH``: drawn fresh)
KEPT, SET, FRESH, REDRAWN = 0, 1, 2, 3


def replay(lanes, d, old_value, old_lp, target, acct, frame=None, local=None):
    """Decide the value of one site over the lanes' members (see the module docstring).

    ``old_value`` / ``old_lp`` are the members' stored value and log-density (``old_value`` is
    ``None`` when the trace has no such choice); ``target`` is ``None``, ``RESAMPLE`` or the
    proposed value(s) — for a batch, a pair ``(positions, values)`` of the targeted members.
    ``frame``, ``local``: the frame executing the site and its name there, whose
    ``stored_dist(local)`` gives the distribution the stored value was drawn under (asked only
    when that value is outside its new support; none: not known).
    Returns ``(value, lp, status)``: what was decided — :data:`KEPT` (the old value replayed),
    :data:`SET` (a target's value), :data:`FRESH` (a new choice drawn), :data:`REDRAWN` (the old
    value stale, a new one drawn); over a batch, the members may differ and ``status`` is only
    true when any member's value changed.
    """
    if target is None:
        status = FRESH
        if old_value is not None and not lanes.fits(d, old_value):
            # a value of another shape than the distribution's (its dimension follows another
            # choice) is outside the support: strict runs score it −∞, others redraw it
            if lanes.strict:
                return old_value, lanes.impossible(), KEPT
            lanes.drop(old_lp, acct)
            old_value, status = None, REDRAWN
        if old_value is None:  # no old value: a fresh draw (strict runs: a structure change)
            value, lp = lanes.fresh(d, acct)
            return value, lp, status
        lp = lanes.log_prob(d, old_value)  # replay and rescore: the common case
        if lanes.finite(lp):
            return old_value, lp, KEPT
        value, hit, status = old_value, None, KEPT
    elif old_value is None:  # a value set on a choice the trace does not hold yet (init)
        if lanes.values_of(target) is RESAMPLE:
            value, lp = lanes.fresh(d, acct)
            return value, lp, FRESH
        return (*lanes.given(d, target, acct), SET)
    else:
        hit, values = lanes.split(target)
        if values is RESAMPLE:  # a draw from the prior, with its q terms
            value, lp = lanes.resample(d, old_value, old_lp, hit, acct)
        else:  # the proposed value(s); outside the support: probability zero
            value, lp = lanes.propose(d, old_value, hit, values)
        status = SET
        if hit is ALL:  # every member targeted: nothing left to replay
            return value, lp, SET
    if not lanes.strict:  # replayed values outside the support: stale, redrawn fresh
        value, lp, redrawn = lanes.redraw(d, value, lp, old_lp, hit, acct, frame, local)
        if redrawn:
            status = REDRAWN
    lanes.check_nan(d, value, lp)
    return value, lp, status

ALL = True  # the positions of a target that covers every member (one member's target)


def _reversed_by_redraw(old_dist, value) -> bool:
    """Whether a proposal that redrew a replayed value outside its new support (the value
    ``value`` drawn fresh) has a reverse move: the reverse proposal replays ``value`` under the
    old distribution ``old_dist`` and redraws it — as this one did the old value, the fresh and
    stale terms of the MH ratio (001 §2) — only if ``value`` is outside ``old_dist``'s support
    too (supports that move apart, ``DiscreteUniform(k, k + 1)``); inside it (nested supports,
    ``DiscreteUniform(0, n)`` or ``Uniform(0, θ)`` for a smaller n or θ) the reverse keeps
    ``value`` and never returns to the old value: the proposal has no reverse, and MH rejects
    it.  An old distribution not known: rejected (always a valid MH decision)."""
    if old_dist is None:
        return False
    lp = old_dist.log_prob(value)
    return not (lp if type(lp) is float else total(lp)) > NEG_INF


class ScalarLanes:
    """One member: Python values, ``lp`` a Python float (a site of a block or a mem key).
    ``addr``: the site's address (a run keeps one lanes object for its choices, whose ``addr``
    is the last choice made, and one for its observations and factors)."""

    __slots__ = ("_run", "addr", "rng", "strict")

    n = 1
    run = weak_run()  # (the run holds its lanes: held back weakly, no reference cycle)

    def __init__(self, addr, rng, strict, run):
        self.addr, self.rng, self.strict, self._run = addr, rng, strict, weakref.ref(run)

    # -- observations and factors (thrifty.core.sites) ------------------------------------------
    @property
    def obs_key(self):
        return self.addr

    def simulate(self, d, value):
        """A draw of the observation given the latent choices, of the observed value's shape."""
        try:
            return d.sample(self.rng, np.shape(value)[: np.ndim(value) - len(d.shape)])
        except SAMPLER_ERRORS as e:
            raise sampler_error(self.addr, d, e) from e

    def stored_observation(self, obs_values, value):
        return obs_values.get(self.addr, value)

    def observed_lp(self, d, value):
        """``(lp, lp)``: the observation's log-density; NaN, +∞ and a value outside the family's
        domain are errors naming the site; −∞ inside it is an impossible run, noted."""
        try:
            lp = d.log_prob(value)
        except (ValueError, TypeError) as e:
            if non_numeric(value) is not None:
                raise not_numeric_observation(self.addr, value, self.run) from e
            raise
        if type(lp) is not float:
            lp = total(lp)
        if not lp > NEG_INF:
            if lp != lp:
                raise nan_error(self.addr, d, value)
            if not d.in_domain(value):
                raise outside_support(self.addr, d, value)
            self.run.note_impossible(self.addr, d, value)
        elif lp == INF:
            raise infinite_error(self.addr, d, value)
        return lp, lp

    def captured(self, d, value) -> tuple:
        return self.addr, d, value, None

    def factor_lp(self, log_weight):
        lp = total(log_weight)
        if lp != lp or lp == INF:
            raise NumericalError(f"factor at address {fmt(self.addr)} is "
                                 f"{'NaN' if lp != lp else '+inf'} (a log-weight must be "
                                 "finite or -inf)")
        if lp == NEG_INF:
            self.run.note_impossible(self.addr, None, None)
        return lp, lp

    # -- latent choices (replay) ----------------------------------------------------------------

    @staticmethod
    def log_prob(d, value) -> float:
        lp = d.log_prob(value)
        return lp if type(lp) is float else total(lp)

    @staticmethod
    def finite(lp) -> bool:
        return NEG_INF < lp < INF

    @staticmethod
    def fits(d, value) -> bool:
        """Whether a stored value has the shape of ``d``'s values (batch + event shape)."""
        if not (d.batch_shape or d.event_shape):
            return type(value) is not np.ndarray or value.ndim == 0
        return np.shape(value) == tuple(d.batch_shape) + tuple(d.event_shape)

    @staticmethod
    def impossible() -> float:
        return NEG_INF

    @staticmethod
    def drop(old_lp, acct) -> None:
        """The old value leaves the trace (stale)."""
        acct.n_stale += 1
        acct.lp_stale += old_lp

    @staticmethod
    def values_of(target):
        return target

    @staticmethod
    def split(target):
        """(positions of the targeted members, their values)."""
        return ALL, target

    def fresh(self, d, acct):
        if self.strict:
            raise StructureChange(self.addr)
        try:
            value = d.sample(self.rng)
        except SAMPLER_ERRORS as e:
            raise sampler_error(self.addr, d, e) from e
        lp = self.log_prob(d, value)
        self.check_nan(d, value, lp)
        acct.n_fresh += 1
        acct.lp_fresh += lp
        return value, lp

    def given(self, d, target, acct):
        bs, es = d.batch_shape, d.event_shape
        if bs or es or type(target) is not float:  # a value set from outside (init=, a proposal)
            target = given_value(d, target)
            want = tuple(bs) + tuple(es)
            if np.shape(target) != want:
                raise ModelError(
                    f"the value given for {fmt(self.addr)} has shape {np.shape(target)}, but "
                    f"{d!r} draws values of shape {want} (check init= or the proposal)"
                )
        elif d.is_discrete:  # (a float given for a count)
            target = given_value(d, target)
        lp = self.log_prob(d, target)
        if not lp > NEG_INF:
            raise ZeroProbability(self.addr, d, target)
        if lp == INF:
            raise infinite_error(self.addr, d, target)
        return target, lp

    def resample(self, d, old, old_lp, hit, acct):
        # q(x' | x) is the prior under the new parents; the reverse move draws the old value
        # under the old parents, whose density is the stored one (a block of dependent choices
        # resampled together: the parents differ)
        try:
            value = d.sample(self.rng)
        except SAMPLER_ERRORS as e:
            raise sampler_error(self.addr, d, e) from e
        lp = d.log_prob(value)
        if type(lp) is not float:
            lp = total(lp)
        if not lp < INF:
            self.check_nan(d, value, lp)
        acct.q_fwd += lp
        acct.q_rev += old_lp
        return value, lp

    def propose(self, d, old, hit, values):
        return self.given(d, values, None)

    def redraw(self, d, value, lp, old_lp, hit, acct, frame, local):
        if lp != NEG_INF:
            return value, lp, False
        old = value
        acct.n_stale += 1
        acct.lp_stale += old_lp
        value, lp = self.fresh(d, acct)
        if self.run.proposing:
            stored = getattr(frame, "stored_dist", None)
            if not _reversed_by_redraw(None if stored is None else stored(local), value):
                raise ZeroProbability(self.addr, d, old)
        return value, lp, True

    def check_nan(self, d, value, lp) -> None:
        """NaN and +inf log-densities are errors naming the site (never a frozen chain)."""
        if lp != lp:
            raise nan_error(self.addr, d, value)
        if lp == INF:
            raise infinite_error(self.addr, d, value)


class BatchLanes:
    """n members: values with a leading member axis, ``lp`` an (n,) array (plate elements,
    particles).  ``frame`` is the batch frame executing the site (shapes, addresses, errors)."""

    __slots__ = ("code", "frame", "n", "rel", "rng", "strict", "summed")

    def __init__(self, frame, rel, code):
        self.frame, self.rel, self.code = frame, rel, code
        self.n = frame.n
        run = frame.run
        self.rng = run.rng
        self.strict = run.mode.strict
        self.summed = None  # (lp, its sum) of the last log-densities checked (keep_latent)

    # -- observations and factors (thrifty.core.sites) ------------------------------------------
    @property
    def obs_key(self):
        return self.frame.obs_key(self.rel)

    def simulate(self, d, value):
        return self.draw(d)

    def stored_observation(self, obs_values, value):
        stored = obs_values.get(self.frame.obs_key(self.rel))
        return value if stored is None else self.frame.take_members(stored)

    def observed_lp(self, d, value):
        """``(lp, lp.sum())``: the members' log-densities of an observed value of one entry per
        member (or one shared), checked as the frame says (data rows, shapes, NaN, the
        family's domain: errors naming the member)."""
        frame, rel = self.frame, self.rel
        if frame.fresh_node and type(value) is np.ndarray and value.ndim > len(d.event_shape):
            frame.check_data_length(rel, value)
        frame.check_observed_shape(rel, d, value)
        try:
            lp = d.log_prob(value)
        except (ValueError, TypeError) as e:
            if non_numeric(value) is not None:
                raise not_numeric_observation(frame.generic(rel), value, frame.run) from e
            if isinstance(e, TypeError):
                raise
            raise ModelError(f"shape mismatch in {frame.where()} at observation "
                             f"{fmt(frame.generic(rel))}: {e}") from None
        lp = frame.member_lp(lp, rel, "observation", value, d)
        return lp, frame._check_observed(lp, rel, d, value)

    def captured(self, d, value) -> tuple:
        frame = self.frame
        return frame.generic_all(self.rel), d, value, frame.member_indices()

    def factor_lp(self, log_weight):
        frame = self.frame
        lp = frame.member_lp(log_weight, self.rel, "factor")
        s = float(lp.sum())
        if s != s or s == INF:
            raise NumericalError(f"factor {fmt(frame.generic(self.rel))} is "
                                 f"{'NaN' if s != s else '+inf'} (a log-weight must be finite "
                                 "or -inf)")
        return lp, s

    # -- latent choices (replay) ----------------------------------------------------------------

    def draw(self, d):
        """One value per member (``code`` from the frame's shape check)."""
        n, code = self.n, self.code
        try:
            if code == 0:
                return np.asarray(d.sample(self.rng, (n,)))
            if code == 1:
                return np.asarray(d.sample(self.rng))
            v = d.sample(self.rng, (n,))  # batch shape (1, ...) broadcast over the members
        except SAMPLER_ERRORS as e:
            raise sampler_error(self.frame.generic(self.rel), d, e) from e
        return np.asarray(v).reshape((n,) + np.shape(v)[2:])

    def log_prob(self, d, value) -> np.ndarray:
        return self.frame.member_lp(d.log_prob(value), self.rel, "sample")

    def finite(self, lp) -> bool:
        self.summed = (lp, s := np.add.reduce(lp, axis=None))
        return NEG_INF < s < INF

    def fits(self, d, value) -> bool:
        """Whether the members' values have the shape of ``d``'s (one leading entry each)."""
        return np.shape(value) == (self.n,) + self.one(d)

    def one(self, d) -> tuple:
        """The shape of one member's value: the distribution's batch shape without its member
        axis (parameters shared by the members: with every axis) and its event shape."""
        bs = tuple(d.batch_shape)
        return (bs[1:] if self.code else bs) + tuple(d.event_shape)

    def impossible(self) -> np.ndarray:
        return np.full(self.n, NEG_INF)

    def drop(self, old_lp, acct) -> None:
        """The members' old values leave the trace (stale)."""
        acct.n_stale += self.n
        acct.lp_stale += float(np.sum(old_lp))
        acct.note_stale(self.rel, self.n)

    @staticmethod
    def values_of(target):
        return target[1]

    @staticmethod
    def split(target):
        """(positions of the targeted members, their values)."""
        return target

    def fresh(self, d, acct):
        if self.strict:
            raise StructureChange(self.frame.generic(self.rel))
        self.frame.require_full("a new choice", self.rel)
        value = self.draw(d)
        lp = self.log_prob(d, value)
        self.check_nan(d, value, lp)
        acct.n_fresh += self.n
        acct.lp_fresh += float(lp.sum())
        acct.note_fresh(self.rel, self.n)
        return value, lp

    def given(self, d, target, acct):
        pos, vals = target
        n = self.n
        whole = isinstance(pos, slice) or (len(pos) == n and np.array_equal(pos, np.arange(n)))
        self._check_given(d, pos, vals, whole)
        if whole:
            value = np.array(vals)  # (a copy: the engine keeps it read-only)
            check = np.arange(self.n)
            if not self.fits(d, value):  # a value set from outside (init=, a proposal)
                want = (n,) + self.one(d)
                raise ModelError(
                    f"the values given for {fmt(self.frame.generic(self.rel))} have shape "
                    f"{value.shape}, but {d!r} over {n} element(s) draws values of shape {want}"
                )
        else:  # some members given (init of single elements): the others drawn fresh
            value, _ = self.fresh(d, acct)
            value = written(value, pos, vals)
            check = np.asarray(pos)
        lp = self.log_prob(d, value)
        bad = check[~(lp[check] > NEG_INF)]
        if len(bad):
            j = int(bad[0])
            raise ZeroProbability(self.frame.member_addr(j, self.rel), d, value[j])
        self.check_nan(d, value, lp)
        return value, lp

    def _check_given(self, d, pos, vals, whole: bool) -> None:
        """Values set from outside (init=, a write-back) hold one value of the distribution's
        per-member shape per member: an error naming the site otherwise."""
        one = self.one(d)
        k = self.n if whole else len(pos)
        shape = np.shape(vals)
        if shape == (k,) + one:
            return
        frame = self.frame
        if whole:
            what = f"{fmt(frame.generic(self.rel))} (every element)"
        else:
            what = ", ".join(fmt(frame.member_addr(int(j), self.rel)) for j in pos[:3])
        raise ModelError(
            f"the value given for {what} has shape {shape[1:] if shape[:1] == (k,) else shape}"
            f" per element, but {d!r} draws values of shape {one} per element (check init= or "
            "the proposal)"
        )

    def resample(self, d, old, old_lp, hit, acct):
        lp_before = old_lp  # the old values under their old parents (see ScalarLanes)
        new = take_rows(self.draw(d), hit)
        value = written(old, hit, new)
        lp = self.log_prob(d, value)
        if self.frame.proposal_terms:
            acct.q_fwd += float(lp[hit].sum())
            acct.q_rev += float(lp_before[hit].sum())
            self.frame.add_q(hit, lp_before[hit] - lp[hit])
        return value, lp

    def propose(self, d, old, hit, values):
        value = written(old, hit, values)
        lp = self.log_prob(d, value)
        if self.n == 1 and len(hit) == 1:  # (one member, targeted: one comparison)
            if lp.item() > NEG_INF:
                return value, lp
            value[0] = old[0]
            return value, np.array([NEG_INF])
        bad = hit[~(lp[hit] > NEG_INF)]
        if len(bad):  # proposals outside the support: probability zero; the rest of the body
            value[bad] = np.asarray(old)[bad]  # sees valid values
            lp = lp.copy()
            lp[bad] = NEG_INF
        return value, lp

    def redraw(self, d, value, lp, old_lp, hit, acct, frame, local):
        bad = np.isneginf(lp)
        if hit is not None:
            bad[hit] = False  # a proposed value outside the support is rejected, not redrawn
        if not bad.any():
            return value, lp, False
        k = int(bad.sum())
        acct.n_stale += k
        acct.lp_stale += float(old_lp[bad].sum())
        acct.note_stale(self.rel, k)
        acct.note_fresh(self.rel, k)
        old = value
        new = self.draw(d)
        value = holding(value, new)
        value[bad] = new[bad]
        if self.frame.run.proposing:  # each redrawn member: a reverse move (_reversed_by_redraw)
            stored = getattr(frame, "stored_member_dist", None)
            for j in np.flatnonzero(bad).tolist():
                if not _reversed_by_redraw(None if stored is None else stored(local, j),
                                           value[j]):
                    raise ZeroProbability(self.frame.member_addr(j, self.rel), d, old[j])
        lp = lp.copy()
        lp[bad] = self.log_prob(d, value)[bad]
        acct.n_fresh += k
        acct.lp_fresh += float(lp[bad].sum())
        return value, lp, True

    def check_nan(self, d, value, lp) -> None:
        """NaN and +inf log-densities are errors naming the member's site."""
        s = lp.item() if self.n == 1 else np.add.reduce(lp, axis=None)  # NaN if any is NaN (or
        if s == s and s != INF:  # +inf beside -inf), +inf if any is
            self.summed = (lp, s)
            return
        if np.isnan(lp).any():
            j = int(np.flatnonzero(np.isnan(lp))[0])
            raise nan_error(self.frame.member_addr(j, self.rel), d, np.asarray(value)[j])
        if np.isposinf(lp).any():
            j = int(np.flatnonzero(np.isposinf(lp))[0])
            raise infinite_error(self.frame.member_addr(j, self.rel), d, np.asarray(value)[j])
