"""Adaptive lightweight Metropolis–Hastings, ``th.adaptive_lmh`` (paper 001 §3, Alg. 2–3).

LMH picks the choice to resample uniformly; AdLMH picks choice i with probability

    α_i = W_i / Σ_k W_k                                                          (001 Eq. 5)

where W_i is the upper confidence bound of the choice's *unit reward* r_i / c_i (Eq. 17, see
:mod:`thrifty.inference.mcmc.arms`), resamples it from its prior as LMH does, and accepts with

    min(1, p(y'|x')p(x') α'_k p(x \\ x' | x ∩ x') / (p(y|x)p(x) α_k p(x' \\ x | x' ∩ x)))   (Eq. 6)

— α'_k/α_k in place of LMH's |x|/|x'|.  The weights do not change within a step, so
α'_k/α_k = ΣW/ΣW′, which is 1 unless the proposal creates (fresh) or removes (stale) choices.

Rewards come from the program *output* z (its return value, flattened to components, and the
values of top-level ``th.deterministic`` sites).  After an accepted step that resampled x_k,
for each component z_j (Alg. 3, with Eq. 7's 1/|z| per component): x_k joins z_j's history; if
z_j changed, every entry m of the history gets r_m += w, c_m += w with w = 1/(|z|·|history|)
and the history is flushed; otherwise c_k += 1/|z|.  Rejected steps change nothing (Alg. 2).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np

from thrifty._args import checked_keywords
from thrifty._warn import user_stacklevel
from thrifty.core.engine import (
    DETERMINISTIC,
    RESAMPLE,
    VecTarget,
    locate,
    plan_for,
    provisional_commit,
    same_value,
    top_values,
)
from thrifty.errors import ArgumentError, SelectionError
from thrifty.inference.kernel import Kernel
from thrifty.inference.mcmc.arms import Arms
from thrifty.inference.selection import Everything, select


def flatten_output(z, out: list) -> list:
    """The components of an output: numbers and array elements one by one, containers
    (tuples, lists, dicts by sorted key, markov ``States``) recursively, anything else whole."""
    t = type(z)
    if t is tuple or t is list:  # the common outputs first, by exact type (cheap)
        for x in z:
            flatten_output(x, out)
    elif isinstance(z, (int, float, bool, np.generic, str)) or z is None:
        out.append(z)
    elif isinstance(z, np.ndarray):
        out.extend(z.ravel().tolist() if z.dtype.kind in "biuf" else list(z.ravel()))
    elif isinstance(z, Mapping):
        for k in sorted(z, key=repr):
            flatten_output(z[k], out)
    elif isinstance(z, (list, tuple)) or t.__name__ == "States":
        for x in z:
            flatten_output(x, out)
    else:
        out.append(z)
    return out


def output_of(trace) -> list:
    """z: the flattened program output and the top-level deterministic values."""
    z = flatten_output(trace.output, [])
    for v in top_values(trace, DETERMINISTIC):
        flatten_output(v, z)
    return z


class AdaptiveLMH(Kernel):
    """Adaptive LMH; see :func:`thrifty.adaptive_lmh`."""

    name = "adaptive_lmh"

    def __init__(self, exploration: float = 0.5, sel=None, freeze_after: int | None = None):
        super().__init__()
        if not exploration >= 0:
            raise ArgumentError(f"adaptive_lmh: exploration must be >= 0, got {exploration!r}")
        if freeze_after is not None and (isinstance(freeze_after, bool) or freeze_after < 0):
            raise ArgumentError(f"adaptive_lmh: freeze_after must be None or a number of steps "
                             f">= 0, got {freeze_after!r}")
        self.exploration = float(exploration)
        self.selection = Everything() if sel is None else select(sel)
        self.freeze_after = freeze_after
        self.arms = Arms(self.exploration, _site_name, self.stats.sites)
        self.histories: list[dict] = []  # per output component: address → times selected
        self.last_z: list | None = None
        self.n_steps = 0
        self._key = None  # (trace uid, structure) the arms are aligned with

    def label(self) -> str:
        sel = "" if isinstance(self.selection, Everything) else f", sel={self.selection!r}"
        frz = "" if self.freeze_after is None else f", freeze_after={self.freeze_after}"
        return f"adaptive_lmh({self.exploration:g}{sel}{frz})"

    @property
    def adapting(self) -> bool:
        return self.freeze_after is None or self.n_steps < self.freeze_after

    # -- the arms of the current trace ---------------------------------------------------------
    def _addresses(self, trace) -> list:
        cs = self.selection.resolve(trace)
        return [cs.address(r) for r in range(cs.count)] if cs else []

    def _align(self, trace) -> None:
        key = (trace.uid, trace.structure)
        if self._key != key:
            addrs = self._addresses(trace)
            # The same choices (e.g. the trace and this kernel unpickled from a checkpoint: the
            # trace gets a new uid): keep the sum trees, whose running totals a rebuild would
            # reproduce only up to rounding — a resumed chain would then draw from (slightly)
            # different weights than the uninterrupted one.  (The arms' order is their own:
            # proposals that create or drop choices move positions, see ``_changes``.)
            if self.arms.a is None or (
                addrs != self.arms.addrs and set(addrs) != set(self.arms.addrs)
            ):
                self.arms.align(addrs)
            self._key = key
            if self.last_z is None:
                self.last_z = output_of(trace)

    def _changes(self, run, fork):
        """``(fresh, stale)`` addresses of the choices the proposal creates and drops, when the
        run names each of them (scalar sites, markov-step sites, mem keys); ``None`` when it
        names some only as a group (plate elements ``"*"``, a whole node) or the kernel has a
        selection — then the caller takes one pass over the proposed trace."""
        if not isinstance(self.selection, Everything):
            return None
        pos = self.arms.pos
        fresh, stale = [], []
        for a, count in run.fresh_choices or ():
            if count != 1 or a in pos or "*" in a or locate(fork, a) is None:
                return None
            fresh.append(a)
        for a, count in run.stale_choices or ():
            if count != 1 or a not in pos:
                return None
            stale.append(a)
        if len(set(fresh)) != len(fresh) or len(set(stale)) != len(stale):
            return None
        return fresh, stale

    # -- one step (001 Alg. 2) -------------------------------------------------------------------
    def _step(self, trace, rng):
        arms = self.arms
        if not self.adapting:  # the weights fixed: a new address's arm starts at W⁰ without
            arms.frozen = True  # moving the exploration term, so the kernel is one MH kernel
        self._align(trace)
        if not arms.addrs:
            raise SelectionError(f"{self.label()}: the program has no latent choices to select")
        k = arms.draw(rng)  # line 4: x_k with probability α_k (Eq. 5)
        addr = arms.addrs[k]
        loc = locate(trace, addr)
        plan = plan_for(trace, [loc])
        if loc.kind == "element":  # line 5: resample x_k from its prior
            vec = {(loc.plate_addr, loc.rel): VecTarget(np.array([loc.elem]), RESAMPLE)}
            run = self.execute(trace, rng, vec=vec, plan=plan, identity=True)
        else:
            run = self.execute(trace, rng, targets={addr: RESAMPLE}, plan=plan, identity=True)
        log_alpha = run.log_weight
        self.n_steps += 1
        self.info.proposed += 1
        mine = arms.saved[addr]
        mine[3] += 1
        counts = mine[2]  # the site name's totals
        counts[0] += 1
        if run.unchanged:  # its present value redrawn: the identity move, accepted
            pass
        elif run.aborted is None and (run.n_fresh or run.n_stale):  # Eq. 6: α'_k/α_k = ΣW / ΣW'
            fork = provisional_commit(trace, run)
            changes = self._changes(run, fork)
            if changes is None:  # one pass over the proposed trace's choices
                w_new = arms.weights_of(self._addresses(fork))
            else:  # ΣW' = ΣW − W(stale) + W(fresh)
                fresh, stale = changes
                w_new = arms.total_weight() - arms.weights_of(stale) + arms.weights_of(fresh)
            log_alpha += math.log(arms.total_weight()) - math.log(w_new)
            if not (log_alpha >= 0 or math.log(rng.random()) < log_alpha):
                trace.revert(fork)
                return trace
            trace.become(fork)
            if changes is not None:  # the arms follow the change: O(changes · log n)
                for a in changes[1]:
                    arms.remove(a)
                for a in changes[0]:
                    arms.add(a)
                self._key = (trace.uid, trace.structure)
        elif not (log_alpha >= 0 or (log_alpha > -math.inf and math.log(rng.random()) < log_alpha)):
            return trace  # line 10: rejected, W unchanged
        else:
            run.commit()
        self.info.accepted += 1
        counts[1] += 1
        mine[4] += 1
        self._align(trace)
        if self.adapting:  # line 8: W^{t+1} from the output (Alg. 3)
            self._propagate(addr, output_of(trace))
            self._check_diminishing()
        return trace

    def _check_diminishing(self) -> None:
        """Warn once when new addresses keep appearing long after the start: their arms start
        afresh at W⁰, so the weights never settle (‖α^t − α^{t−1}‖ does not go to 0) and the
        chain can be biased — measured on a DP mixture, whose table labels are never reused:
        P(top partition) 0.70 instead of 0.575 adapting throughout, exact with freeze_after."""
        created = getattr(self.arms, "created", 0)
        if self.n_steps < _WARMUP:
            return
        at_warmup = getattr(self, "_created_at_warmup", None)
        if at_warmup is None:  # the first accepted step after the warm-up
            self._created_at_warmup = created
        elif not getattr(self, "_warned_new", False) and created - at_warmup > _NEW_ARMS:
            self._warned_new = True
            warnings.warn(
                f"{self.label()}: the program keeps creating choices at new addresses (e.g. "
                "th.CRP table labels, which are never reused), each starting a fresh arm, so "
                "the adaptation does not diminish and the chain can be biased; pass "
                "freeze_after (e.g. the burn-in's number of steps) to fix the weights",
                AdaptationWarning,
                stacklevel=user_stacklevel(),
            )

    def _propagate(self, addr, z: list) -> None:
        last, arms = self.last_z, self.arms
        if last is None or len(last) != len(z):  # the output's shape changed: new histories
            self.histories = [{} for _ in z]
            last = [_NOTHING] * len(z)
        elif len(self.histories) != len(z):
            self.histories = [{} for _ in z]
        share = 1.0 / max(len(z), 1)
        unchanged = 0
        for j, h in enumerate(self.histories):
            h[addr] = h.get(addr, 0) + 1  # Alg. 3 line 1
            new, old = z[j], last[j]
            if new is old or (type(new) is type(old) and type(new) in _NUMBERS and new == old):
                unchanged += 1  # (the common case, without same_value's generality)
            elif old is _NOTHING or not same_value(new, old):  # line 2
                w = share / sum(h.values())  # line 3
                for m, times in h.items():  # lines 4–6
                    arms.reward(m, w * times)
                h.clear()  # line 7
            else:
                unchanged += 1  # line 9, summed over the components
        if unchanged:
            arms.charge(addr, share * unchanged)
        self.last_z = z

    # -- reports -----------------------------------------------------------------------------------
    def adaptation(self) -> dict:
        """Per arm of the current trace (address): selection probability α_i, unit reward
        r_i/c_i, count c_i, and the times it was selected and accepted."""
        arms = self.arms
        total = arms.total_weight() if arms.addrs else 1.0
        out = {}
        for a in arms.addrs:
            r, c, _, sel, acc = arms.saved[a]
            out[a] = {"alpha": arms.weight(a) / total, "unit_reward": r / c, "count": c,
                      "selected": sel, "accepted": acc}
        return out


_NOTHING = object()
_WARMUP = 2000  # steps before new arms count as a sign of non-diminishing adaptation
_NEW_ARMS = 20  # new arms after the warm-up that trigger the warning (none when addresses recur)


class AdaptationWarning(UserWarning):
    """Adaptive LMH's weights do not settle (see ``AdaptiveLMH._check_diminishing``)."""
_NUMBERS = frozenset({int, float, bool, np.int64, np.float64, np.int32, np.float32, np.bool_})


def _site_name(addr) -> str:
    return ".".join(str(p) for p in addr if not isinstance(p, (int, np.integer)))


@checked_keywords
def adaptive_lmh(exploration: float = 0.5, sel=None, freeze_after: int | None = None):
    """Adaptive LMH (paper 001): LMH whose choice of the variable to resample adapts to how
    often resampling it changes the program's output; see :mod:`thrifty.inference.mcmc.adaptive`.

    ``exploration`` is C of the upper confidence bound (001 uses 0.5); ``sel`` restricts the
    choices (default: all latent choices); ``freeze_after`` stops adapting after that many
    steps of this kernel (diminishing adaptation made exact; default ``None``: adapt forever,
    as in the paper, where the unit rewards converge and the exploration term shrinks like
    sqrt(log t / t)).  That argument needs the choices' addresses to recur: a program that
    keeps creating choices at new addresses (``th.CRP`` table labels are never reused, so
    every new table's memoized parameters are a new arm starting at W⁰) never stops adapting
    and can be biased — an ``AdaptationWarning`` says so; pass ``freeze_after`` there.

    Cost per step: an LMH step plus O(log n) to draw the choice and ``O(|z|)`` (output components)
    plus O(log n) per rewarded choice after an accepted step; a step that creates or removes
    choices adds and removes their arms, O(log n) each, when the run names them one by one
    (scalar and markov-step sites, mem keys) — and one pass over the proposed trace's n choices
    when it names them as a group (the elements of a plate that appears, a dropped node).

    >>> import thrifty as th
    >>> from thrifty.models import hmm
    >>> r = th.infer(hmm(predict=(0, 17)), th.adaptive_lmh(), num_samples=2000, seed=0,
    ...              progress=False)
    >>> r["s.z"].shape
    (1, 2000, 18)
    """
    return AdaptiveLMH(exploration, sel, freeze_after)
