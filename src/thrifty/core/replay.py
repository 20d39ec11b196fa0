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

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.vocab import (
    INF,
    NEG_INF,
    RESAMPLE,
    StructureChange,
    ZeroProbability,
    infinite_error,
    nan_error,
    sample_error,
    take_rows,
    total,
)
from thrifty.errors import ModelError, ThriftyError

SAMPLER_ERRORS = (ValueError, OverflowError)
"""What NumPy's samplers raise for parameters they cannot draw from (``Poisson(1e20)``)."""


def sampler_error(addr, d, exc: BaseException) -> Exception:
    """A sampler's error named by the address (thrifty's own errors pass as they are)."""
    return exc if isinstance(exc, ThriftyError) else sample_error(addr, d, exc)


def replay(lanes, d, old_value, old_lp, target, acct):
    """Decide the value of one site over the lanes' members (see the module docstring).

    ``old_value`` / ``old_lp`` are the members' stored value and log-density (``old_value`` is
    ``None`` when the trace has no such choice); ``target`` is ``None``, ``RESAMPLE`` or the
    proposed value(s) — for a batch, a pair ``(positions, values)`` of the targeted members.
    Returns ``(value, lp, changed)``.
    """
    if target is None:
        if old_value is not None and not lanes.fits(d, old_value):
            # a value of another shape than the distribution's (its dimension follows another
            # choice) is outside the support: strict runs score it −∞, others redraw it
            if lanes.strict:
                return old_value, lanes.impossible(), False
            lanes.drop(old_lp, acct)
            old_value = None
        if old_value is None:  # no old value: a fresh draw (strict runs: a structure change)
            value, lp = lanes.fresh(d, acct)
            return value, lp, True
        lp = lanes.log_prob(d, old_value)  # replay and rescore: the common case
        if lanes.finite(lp):
            return old_value, lp, False
        value, hit, changed = old_value, None, False
    elif old_value is None:  # a value set on a choice the trace does not hold yet (init)
        if lanes.values_of(target) is RESAMPLE:
            value, lp = lanes.fresh(d, acct)
            return value, lp, True
        return (*lanes.given(d, target, acct), True)
    else:
        hit, values = lanes.split(target)
        if values is RESAMPLE:  # a draw from the prior, with its q terms
            value, lp = lanes.resample(d, old_value, old_lp, hit, acct)
        else:  # the proposed value(s); outside the support: probability zero
            value, lp = lanes.propose(d, old_value, hit, values)
        changed = True
        if hit is ALL:  # every member targeted: nothing left to replay
            return value, lp, True
    if not lanes.strict:  # replayed values outside the support: stale, redrawn fresh
        value, lp, redrawn = lanes.redraw(d, value, lp, old_lp, hit, acct)
        changed |= redrawn
    lanes.check_nan(d, value, lp)
    return value, lp, changed


ALL = True  # the positions of a target that covers every member (one member's target)


class ScalarLanes:
    """One member: Python values, ``lp`` a Python float (a site of a block or a mem key)."""

    __slots__ = ("addr", "rng", "strict")

    n = 1

    def __init__(self, addr, rng, strict):
        self.addr, self.rng, self.strict = addr, rng, strict

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
            want = tuple(bs) + tuple(es)
            if np.shape(target) != want:
                raise ModelError(
                    f"the value given for {fmt(self.addr)} has shape {np.shape(target)}, but "
                    f"{d!r} draws values of shape {want} (check init= or the proposal)"
                )
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

    def redraw(self, d, value, lp, old_lp, hit, acct):
        if lp != NEG_INF:
            return value, lp, False
        acct.n_stale += 1
        acct.lp_stale += old_lp
        value, lp = self.fresh(d, acct)
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

    __slots__ = ("code", "frame", "n", "rel", "rng", "strict")

    def __init__(self, frame, rel, code):
        self.frame, self.rel, self.code = frame, rel, code
        self.n = frame.n
        self.rng = frame.run.rng
        self.strict = frame.run.mode.strict

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

    @staticmethod
    def finite(lp) -> bool:
        s = lp.sum()
        return NEG_INF < s < INF

    def fits(self, d, value) -> bool:
        """Whether the members' values have the shape of ``d``'s (one leading entry each)."""
        want = (self.n,) + tuple(d.batch_shape)[1:] + tuple(d.event_shape)
        return np.shape(value) == want

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
                want = (n,) + tuple(d.batch_shape)[1:] + tuple(d.event_shape)
                raise ModelError(
                    f"the values given for {fmt(self.frame.generic(self.rel))} have shape "
                    f"{value.shape}, but {d!r} over {n} element(s) draws values of shape {want}"
                )
        else:  # some members given (init of single elements): the others drawn fresh
            value, _ = self.fresh(d, acct)
            value = np.array(value)
            value[pos] = vals
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
        one = (tuple(d.batch_shape[1:]) if self.code else ()) + tuple(d.event_shape)
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
        value = np.array(old)
        value[hit] = take_rows(self.draw(d), hit)
        lp = self.log_prob(d, value)
        if self.frame.proposal_terms:
            acct.q_fwd += float(lp[hit].sum())
            acct.q_rev += float(lp_before[hit].sum())
            self.frame.add_q(hit, lp_before[hit] - lp[hit])
        return value, lp

    def propose(self, d, old, hit, values):
        value = np.array(old)
        value[hit] = values
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

    def redraw(self, d, value, lp, old_lp, hit, acct):
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
        value = np.array(value)
        value[bad] = self.draw(d)[bad]
        lp = lp.copy()
        lp[bad] = self.log_prob(d, value)[bad]
        acct.n_fresh += k
        acct.lp_fresh += float(lp[bad].sum())
        return value, lp, True

    def check_nan(self, d, value, lp) -> None:
        """NaN and +inf log-densities are errors naming the member's site."""
        s = lp.item() if self.n == 1 else np.add.reduce(lp, axis=None)  # NaN if any is NaN (or
        if s == s and s != INF:  # +inf beside -inf), +inf if any is
            return
        if np.isnan(lp).any():
            j = int(np.flatnonzero(np.isnan(lp))[0])
            raise nan_error(self.frame.member_addr(j, self.rel), d, np.asarray(value)[j])
        if np.isposinf(lp).any():
            j = int(np.flatnonzero(np.isposinf(lp))[0])
            raise infinite_error(self.frame.member_addr(j, self.rel), d, np.asarray(value)[j])
