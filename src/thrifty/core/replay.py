"""The replay decision: what an execution does at a random choice.

Every latent site executed by a run — a site of the model body or of a markov step, the site of
many plate elements (or, later, particles) at once, a key of a memoized function — goes through
:func:`replay`, the one place that decides, member by member:

============================  =======================================================  ==========
case                          value and log-density                                    accounting
============================  =======================================================  ==========
proposed value (target)       the target, scored; outside the support → probability 0  kept
resample (target RESAMPLE)    a fresh draw from the prior                              kept, q
replay                        the old value, rescored under its new parents            kept
replay, outside the support   strict: scored −∞; else the old value is *stale* and a   stale +
                              *fresh* value is drawn                                   fresh
no old value                  strict: :class:`StructureChange`; else a fresh draw      fresh
============================  =======================================================  ==========

"Kept" choices enter the MH ratio (paper 001 Eq. 4); fresh and stale ones do not (their
densities go to ``lp_fresh`` / ``lp_stale``); resampled targets add their prior densities to
``q_fwd`` / ``q_rev``.  A proposed value outside its support gives the proposal probability
zero: a single member (:class:`ScalarLanes`) stops the run (:class:`ZeroProbability`); in a
batch (:class:`BatchLanes`) the member scores −∞ and keeps its old value, so the other members
and the code after the site see valid values.

The *lanes* object supplies the few operations that differ between one member held as a Python
value and n members held as arrays with a leading member axis; the decision itself is written
once, in :func:`replay`.  Its accounting goes to ``acct`` (any object with ``n_fresh, lp_fresh,
n_stale, lp_stale, q_fwd, q_rev``).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.vocab import (
    NEG_INF,
    RESAMPLE,
    StructureChange,
    ZeroProbability,
    nan_error,
    total,
)


def replay(lanes, d, old_value, old_lp, target, acct):
    """Decide the value of one site over the lanes' members (see the module docstring).

    ``old_value`` / ``old_lp`` are the members' stored value and log-density (``old_value`` is
    ``None`` when the trace has no such choice); ``target`` is ``None``, ``RESAMPLE`` or the
    proposed value(s) — for a batch, a pair ``(positions, values)`` of the targeted members.
    Returns ``(value, lp, changed)``.
    """
    if target is None and old_value is not None:  # replay and rescore: the common case first
        lp = lanes.log_prob(d, old_value)
        if lanes.finite(lp):
            return old_value, lp, False
    if old_value is None:
        if target is None or target is RESAMPLE:
            if lanes.strict:
                raise lanes.structure_change()
            lanes.require_new()
            value = lanes.draw(d)
            lp = lanes.log_prob(d, value)
            acct.n_fresh += lanes.n
            acct.lp_fresh += lanes.sum(lp)
        else:  # a value set on a choice the trace does not hold yet (initial values)
            value = lanes.given(target)
            lp = lanes.log_prob(d, value)
            lanes.check_possible(d, value, lp, None, None)
        lanes.check_nan(d, value, lp)
        return value, lp, True

    hit = None
    changed = False
    if target is None:
        value = old_value  # its lp (not finite) is scored above
    else:
        hit = lanes.positions(target)
        changed = True
        if lanes.values_of(target) is RESAMPLE:
            lp_before = lanes.log_prob(d, old_value)
            value = lanes.assign(old_value, hit, lanes.draw(d), full=True)
            lp = lanes.log_prob(d, value)
            lanes.add_q(acct, hit, lp_before, lp)
        else:
            value = lanes.assign(old_value, hit, lanes.values_of(target), full=False)
            lp = lanes.log_prob(d, value)
            value, lp = lanes.check_possible(d, value, lp, hit, old_value)
    if not lanes.strict:
        bad = lanes.outside(lp, hit)
        if bad is not None:  # replayed values outside the support: stale, redrawn fresh
            k = lanes.count(bad)
            acct.n_stale += k
            acct.lp_stale += lanes.sum(old_lp, bad)
            value = lanes.assign(value, bad, lanes.draw(d), full=True)
            lp = lanes.rescore(d, value, lp, bad)
            acct.n_fresh += k
            acct.lp_fresh += lanes.sum(lp, bad)
            changed = True
    lanes.check_nan(d, value, lp)
    return value, lp, changed


class ScalarLanes:
    """One member: Python values, ``lp`` a Python float (a site of a block or a mem key)."""

    __slots__ = ("addr", "rng", "strict")

    n = 1

    def __init__(self, addr, rng, strict):
        self.addr, self.rng, self.strict = addr, rng, strict

    def structure_change(self):
        return StructureChange(self.addr)

    def require_new(self) -> None:
        pass

    def draw(self, d):
        return d.sample(self.rng)

    @staticmethod
    def log_prob(d, value) -> float:
        lp = d.log_prob(value)
        return lp if type(lp) is float else total(lp)

    @staticmethod
    def finite(lp) -> bool:
        return lp > NEG_INF and lp == lp

    @staticmethod
    def sum(lp, mask=None) -> float:
        return lp

    @staticmethod
    def count(mask) -> int:
        return 1

    @staticmethod
    def given(target):
        return target

    @staticmethod
    def positions(target):
        return True

    @staticmethod
    def values_of(target):
        return target

    @staticmethod
    def assign(old, hit, new, full):
        return new

    @staticmethod
    def add_q(acct, hit, lp_before, lp) -> None:
        acct.q_fwd += lp
        acct.q_rev += lp_before

    def check_possible(self, d, value, lp, hit, old):
        if not lp > NEG_INF:
            raise ZeroProbability(self.addr, d, value)
        return value, lp

    @staticmethod
    def outside(lp, hit):
        return True if lp == NEG_INF and hit is None else None

    def rescore(self, d, value, lp, bad) -> float:
        return self.log_prob(d, value)

    def check_nan(self, d, value, lp) -> None:
        if lp != lp:
            raise nan_error(self.addr, d, value)


class BatchLanes:
    """n members: values with a leading member axis, ``lp`` an (n,) array (plate elements,
    particles).  ``frame`` is the batch frame executing the site (shapes, addresses, errors)."""

    __slots__ = ("code", "frame", "n", "rel", "rng", "strict")

    def __init__(self, frame, rel, code):
        self.frame, self.rel, self.code = frame, rel, code
        self.n = frame.n
        self.rng = frame.run.rng
        self.strict = frame.run.mode.strict

    def structure_change(self):
        return StructureChange(self.frame.generic(self.rel))

    def require_new(self) -> None:
        self.frame.require_full("a new choice", self.rel)

    def draw(self, d):
        """One value per member (``code`` from the frame's shape check)."""
        n, code = self.n, self.code
        if code == 0:
            return np.asarray(d.sample(self.rng, (n,)))
        if code == 1:
            return np.asarray(d.sample(self.rng))
        v = d.sample(self.rng, (n,))  # batch shape (1, ...) broadcast over the members
        return np.asarray(v).reshape((n,) + np.shape(v)[2:])

    def log_prob(self, d, value) -> np.ndarray:
        return self.frame.member_lp(d.log_prob(value), self.rel, "sample")

    @staticmethod
    def finite(lp) -> bool:
        s = lp.sum()
        return s > NEG_INF and s == s

    @staticmethod
    def sum(lp, mask=None) -> float:
        return float(lp.sum() if mask is None else lp[mask].sum())

    @staticmethod
    def count(mask) -> int:
        return int(mask.sum()) if mask.dtype == bool else len(mask)

    def given(self, target):
        return np.asarray(target[1])

    def positions(self, target):
        return target[0]

    @staticmethod
    def values_of(target):
        return target[1]

    @staticmethod
    def assign(old, hit, new, full):
        value = np.array(old)
        value[hit] = np.asarray(new)[hit] if full else new
        return value

    def add_q(self, acct, hit, lp_before, lp) -> None:
        acct.q_fwd += float(lp[hit].sum())
        acct.q_rev += float(lp_before[hit].sum())
        self.frame.add_q(hit, lp_before[hit] - lp[hit])

    def check_possible(self, d, value, lp, hit, old):
        if hit is None:  # initial values for every member
            bad = np.flatnonzero(~(lp > NEG_INF))
            if len(bad):
                j = int(bad[0])
                raise ZeroProbability(self.frame.member_addr(j, self.rel), d, value[j])
            return value, lp
        bad = hit[~(lp[hit] > NEG_INF)]
        if len(bad):  # proposals outside the support: probability zero; the rest of the body
            value[bad] = np.asarray(old)[bad]  # sees valid values
            lp = lp.copy()
            lp[bad] = NEG_INF
        return value, lp

    @staticmethod
    def outside(lp, hit):
        bad = np.isneginf(lp)
        if hit is not None:
            bad[hit] = False  # a proposed value outside the support is rejected, not redrawn
        return bad if bad.any() else None

    def rescore(self, d, value, lp, bad):
        lp = lp.copy()
        lp[bad] = self.log_prob(d, value)[bad]
        return lp

    def check_nan(self, d, value, lp) -> None:
        if np.isnan(lp).any():
            j = int(np.flatnonzero(np.isnan(lp))[0])
            raise nan_error(self.frame.member_addr(j, self.rel), d, np.asarray(value)[j])
