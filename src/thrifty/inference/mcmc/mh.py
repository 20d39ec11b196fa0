"""Metropolis–Hastings kernels: ``th.mh`` (single-site or block) and ``th.lmh`` (paper 001 §2.3).

``th.mh(sel, proposal)`` proposes new values for the selected choices — from their prior
(``th.prior()``) or by a Gaussian random walk (``th.drift(scale)``) — re-executes only what the
change can affect, and accepts with

    log α = [log p(x', y) − log p(x, y)]_kept + log q(x | x') − log q(x' | x)          (000 Eq. 4)

where "kept" excludes fresh and stale choices (001 Eq. 4).  Selected sites of many plate
elements are conditionally independent given the rest, so they are updated *element-wise*: one
vectorized execution proposes for every element and each element accepts on its own.

``th.lmh()`` picks one latent choice uniformly, resamples it from its prior and accepts with
001 Eq. 4, including |x| / |x'| when the proposal changes the number of choices.
"""

from __future__ import annotations

import math

import numpy as np

from thrifty._args import checked_keywords
from thrifty.core.address import fmt
from thrifty.core.engine import (
    RESAMPLE,
    STRICT,
    Plan,
    StructureChange,
    VecTarget,
    locate,
    locate_choice,
    plan_elements,
    plan_for,
    provisional_commit,
    run_lp,
    run_q,
    run_values,
    stored_lp,
)
from thrifty.core.engine import (
    plate as plate_view,
)
from thrifty.errors import ArgumentError, SelectionError
from thrifty.inference.kernel import Kernel
from thrifty.inference.proposals.base import Drift, Prior, Proposal, on_manifold, prior
from thrifty.inference.selecting import Selecting
from thrifty.inference.selection import (
    ChoiceSet,
    Difference,
    Each,
    Everything,
    One,
    PlateGroup,
    select,
)


def _group_values(trace, g, proposal=None):
    view = plate_view(trace, g.plate_addr)
    values = view.values(g.rel, g.element_array())
    if isinstance(proposal, Drift) and len(values):
        if on_manifold(view.dist(g.rel)) is not None:
            name = ".".join(str(p) for p in g.plate_addr + g.rel)
            raise SelectionError(
                f"mh: th.drift() cannot move the plate elements' {name!r}: its support has "
                "fewer dimensions than its values (a simplex, a correlation Cholesky factor, a "
                "positive-definite matrix), which a random walk in those values leaves; for "
                "plate elements use th.prior() or th.nuts (a choice outside plates walks in "
                "its unconstrained coordinates)")
    return values, view.discrete(g.rel)


class MH(Selecting):
    """Metropolis–Hastings on the selected choices; see :func:`thrifty.mh`."""

    name = "mh"

    def __init__(self, selection, proposal: Proposal | None = None):
        super().__init__(selection)
        self.proposal = proposal if proposal is not None else prior()
        if not isinstance(self.proposal, Proposal):
            raise ArgumentError(
                f"mh: proposal must be th.prior() or th.drift(...), got {proposal!r}")

    def label(self) -> str:
        return f"mh({self.selection!r}, {self.proposal!r})"

    def _step(self, trace, rng):
        cs = self.choices(trace)
        if cs is None:
            return trace
        if isinstance(self.selection, One):
            n_blocks = cs.n_blocks()
            self._update(trace, cs.pick_block(rng), rng, n_blocks)
        elif isinstance(self.selection, Each):
            addrs, start = list(cs.scalars), trace.structure
            for i, addr in enumerate(addrs):
                structure = trace.structure
                self._update(trace, ChoiceSet([addr], [], [addr]), rng)
                if trace.structure != structure:
                    self._same_sweep(trace, addr, addrs[i + 1:])
            # the plate elements last, those that exist now: a site's every possible element
            # in turn, each kept where it does not exist (a plate a choice above resized)
            groups = cs.groups if trace.structure == start else self.selection.resolve(trace).groups
            for g in groups:
                self._elementwise(trace, [g], rng)
        else:
            self._update(trace, cs, rng)
        return trace

    def _same_sweep(self, trace, addr, rest: list) -> None:
        """A sweep updates a fixed sequence of choices, each kept where it does not exist when
        reached — a composition of invariant kernels (000 Fig. 7).  The sequence resolved at the
        start of the sweep is that one only while the choices still ahead of it are the ones
        that exist: an update that creates or drops one of them (a choice that decides which
        others exist) would make the sweep's schedule depend on its own moves."""
        now = list(self.selection.resolve(trace).scalars)
        if addr in now and now[now.index(addr) + 1:] == rest:
            return
        ahead = sorted(set(map(fmt, rest)) ^ set(map(fmt, now[now.index(addr) + 1:]
                                                      if addr in now else now)))
        raise SelectionError(
            f"mh on {self.selection!r}: updating {fmt(addr)} created or dropped "
            f"{', '.join(ahead[:3])}, which the sweep had still to update; th.each updates a "
            "fixed sequence of choices — use th.one(...) (one block chosen at random, with the "
            "correction for the number of blocks) or th.lmh() for choices that decide which "
            "others exist, or put them first in the selection")

    def _update(self, trace, cs, rng, n_blocks=None):
        if n_blocks is None and not cs.scalars and len({g.plate_addr for g in cs.groups}) == 1:
            return self._elementwise(trace, cs.groups, rng)
        return self._joint(trace, cs, rng, n_blocks)

    # -- one joint proposal ------------------------------------------------------------------
    def _joint(self, trace, cs, rng, n_blocks):
        scalars = cs.scalars
        locs = [locate(trace, a) for a in scalars]
        for a, loc in zip(scalars, locs):
            if loc is None:
                raise SelectionError(f"mh: no latent choice at {fmt(a)}")
        for g in cs.groups:
            if g.count > 1 and plate_view(trace, g.plate_addr).is_coupled(g.rel):
                raise self._coupled_block_error(g)
        targets, log_q = self.proposal.propose_block(trace, locs, rng)
        plan = plan_for(trace, locs)
        vec = {}
        for g in cs.groups:
            cur, discrete = _group_values(trace, g, self.proposal)
            new = self.proposal.propose_many(g.plate_addr + ("*",) + g.rel, cur, discrete, rng)
            vec[(g.plate_addr, g.rel)] = VecTarget(g.element_array(), new)
            plan_elements(trace, plan, g.plate_addr, g.element_array())
        run = self.execute(trace, rng, targets=targets, vec=vec, plan=plan,
                           identity=not vec and len(targets) == 1)
        if run.unchanged:  # the proposal was the present value: the identity move, accepted
            self.info.proposed += 1
            self.info.accepted += 1
            if self.tuning and self._adapts:
                self.proposal.learn_block(1.0, True)
            return
        run.check_targets(len(targets), vec.keys(),
                          may_drop={a for a, v in targets.items() if v is RESAMPLE})
        log_alpha = run.log_weight + log_q
        if n_blocks is not None and run.aborted is None and (run.n_fresh or run.n_stale):
            fork = provisional_commit(trace, run)
            n_new = self.selection.resolve(fork).n_blocks()
            log_alpha += math.log(n_blocks) - math.log(max(n_new, 1))
            self.accept_fork(trace, fork, log_alpha, rng)
            return
        accepted = self.accept(run, log_alpha, rng)
        if self.tuning and self._adapts:
            self.proposal.learn_block(_accept_prob(log_alpha), accepted)

    def _coupled_block_error(self, g) -> SelectionError:
        """One proposal for the draws of a coupled process (th.CRP, th.PitmanYor) at several
        elements redraws them one after another, each from its predictive given the others.
        The reverse move's probability sums over the sequences of tables that seat the old
        partition again (a new table takes a new label), which the run does not compute: it
        scores the old values' predictives along the proposal's own path, and the ratio is
        not 000 Eq. 4's (on a CRP mixture of three points with a memoized weight per table,
        th.mh(["data.z", "w"], th.prior()) kept P(one table) at 0.1413 for an exact 0.1436).
        One element at a time the predictives are the move's and its reverse's (Neal 2000,
        Alg. 8 with the prior as proposal): that is how th.mh updates them on their own."""
        name = ".".join(str(p) for p in g.plate_addr + g.rel)
        return SelectionError(
            f"mh on {self.selection!r}: one block proposal cannot redraw the draws of "
            f"{name!r} at {g.count} plate elements (a coupled process such as th.CRP) together "
            f"with other choices: select them on their own — th.mh({name!r}) or "
            f"th.gibbs({name!r}) updates them one element at a time — in a th.cycle with a "
            "kernel for the other choices, or use th.one(...) (one element per block)")

    def start(self, trace, rng, init: dict) -> None:
        """With ``th.drift()`` (adapted), start a block of continuous choices at a draw from the
        Laplace approximation and its proposal at that covariance
        (:mod:`thrifty.inference.proposals.laplace_start`), unless ``init`` gives the block."""
        if self._adapts:
            from thrifty.inference.proposals.laplace_start import laplace_start

            laplace_start(self, trace, rng, init)

    # -- element-wise proposals in one plate -----------------------------------------------------
    def _elementwise(self, trace, groups, rng):
        plate = groups[0].plate_addr
        if plate_view(trace, plate).coupled:  # coupled sites: the elements are not independent
            return self._one_at_a_time(trace, groups, rng)
        elems = np.unique(np.concatenate([g.element_array() for g in groups]))
        vec, proposed = {}, {}
        for g in groups:
            cur, discrete = _group_values(trace, g, self.proposal)
            new = self.proposal.propose_many(plate + ("*",) + g.rel, cur, discrete, rng)
            vec[(plate, g.rel)] = VecTarget(g.element_array(), new)
            proposed[g.rel] = g
        self._decide(trace, rng, plate, elems, vec, proposed)

    def _one_at_a_time(self, trace, groups, rng):
        """A plate with coupled sites (th.CRP draws, collapsed observations): one proposal and
        one MH decision per element, in turn, on the whole run's ratio."""
        for g in groups:
            for e in g.element_array().tolist():
                one = PlateGroup(g.plate_addr, g.rel, g.size, np.array([e]))
                self._joint(trace, ChoiceSet([], [one], []), rng, None)

    def _decide(self, trace, rng, plate, elems, vec, proposed):
        """MH decisions for the proposed values ``vec`` at the plate elements ``elems``, each
        element on its own (the elements are conditionally independent).  A proposal that makes
        some distribution's parameters invalid aborts the batched run without saying which
        element did it: the same proposals are then decided in two halves, down to single
        elements, whose invalid proposals are rejected."""
        run = self._strict(trace, rng, plate, vec, plan_elements(trace, _new_plan(), plate, elems))
        if run.aborted is not None:
            if len(elems) == 1:
                self.info.proposed += 1
                return
            for half in (elems[: len(elems) // 2], elems[len(elems) // 2:]):
                sub = {}
                for key, tgt in vec.items():
                    sel = np.isin(tgt.elems, half)
                    if sel.any():
                        vals = tgt.values
                        sub[key] = VecTarget(tgt.elems[sel],
                                             vals if vals is RESAMPLE else np.asarray(vals)[sel])
                self._decide(trace, rng, plate, half, sub, proposed)
            return
        log_alpha = run_lp(run, "plate", plate, elems) - stored_lp(trace, "plate", plate, elems)
        q = run_q(run, plate, elems)
        if q is not None:
            log_alpha = log_alpha + q
        if self.tuning and self._adapts:  # burn-in: the mean acceptance probability
            mean_prob = float(np.mean(np.exp(np.minimum(log_alpha, 0.0))))
            for g in proposed.values():
                self.proposal.learn_many(plate + ("*",) + g.rel, mean_prob)
        u = rng.random(len(elems))
        with np.errstate(divide="ignore"):
            acc = np.log(u) < log_alpha
        self.info.proposed += len(elems)
        self.info.accepted += int(acc.sum())
        if not acc.any():
            return
        keep = elems[acc]
        vec2 = {}
        for rel in proposed:
            if (plate, rel) not in vec:
                continue
            ge = vec[(plate, rel)].elems
            sel = np.isin(ge, keep)
            vec2[(plate, rel)] = VecTarget(ge[sel], run_values(run, plate, rel, ge[sel]))
        plan2 = plan_elements(trace, _new_plan(), plate, keep)
        self._strict(trace, rng, plate, vec2, plan2).commit()

    def _strict(self, trace, rng, plate, vec, plan):
        """A strict run of element-wise proposals.  A change of structure (a memoized key
        created, or left without a reader) refuses: the elements' decisions are independent
        only while the choices around them stay — the proposals of all may keep every key read
        while those accepted leave one out."""
        try:
            return self.execute(trace, rng, vec=vec, plan=plan, mode=STRICT)
        except StructureChange as e:
            raise SelectionError(
                f"mh on {self.selection!r}: the proposal changes the structure of plate "
                f"{fmt(plate)} ({e}); use th.lmh for structure-changing choices"
            ) from None


def _new_plan():
    return Plan()


def _accept_prob(log_alpha: float) -> float:
    return 1.0 if log_alpha >= 0 else (math.exp(log_alpha) if log_alpha > -math.inf else 0.0)


class LMH(Selecting):
    """Lightweight Metropolis–Hastings; see :func:`thrifty.lmh`."""

    name = "lmh"

    def __init__(self, selection=None, exclude=None):
        Kernel.__init__(self)
        self.selection = None if selection is None else select(selection)
        self.exclude = None if exclude is None else select(exclude)
        if self.exclude is not None:
            self.selection = Difference(self.selection or Everything(), self.exclude)
        self._cache = None
        self._matched = False

    def label(self) -> str:
        if self.exclude is not None:
            base = self.selection.base
            head = "" if isinstance(base, Everything) else f"{base!r}, "
            return f"lmh({head}exclude={self.exclude!r})"
        return "lmh()" if self.selection is None else f"lmh({self.selection!r})"

    def _step(self, trace, rng):
        if self.selection is None:
            n = trace.n_latent
            if n == 0:
                raise SelectionError("lmh: the program has no latent choices")
            loc = locate_choice(trace, int(rng.random() * n))
            addr = loc.addr
        else:
            cs = self.choices(trace)
            if cs is None:
                return trace
            n = cs.count
            addr = cs.address(int(rng.random() * n))
            loc = locate(trace, addr)
        plan = plan_for(trace, [loc])
        if loc.kind == "element":
            vec = {(loc.plate_addr, loc.rel): VecTarget(np.array([loc.elem]), RESAMPLE)}
            run = self.execute(trace, rng, vec=vec, plan=plan, identity=True)
        else:
            run = self.execute(trace, rng, targets={addr: RESAMPLE}, plan=plan, identity=True)
        if run.unchanged:  # its present value redrawn: the identity move, accepted
            self.info.proposed += 1
            self.info.accepted += 1
            return trace
        log_alpha = run.log_weight
        if run.aborted is None and (run.n_fresh or run.n_stale):
            if self.selection is None:
                log_alpha += math.log(n) - math.log(n + run.n_fresh - run.n_stale)
            else:
                fork = provisional_commit(trace, run)
                log_alpha += math.log(n) - math.log(max(self.selection.resolve(fork).count, 1))
                self.accept_fork(trace, fork, log_alpha, rng)
                return trace
        self.accept(run, log_alpha, rng)
        return trace


@checked_keywords
def mh(selection, proposal: Proposal | None = None) -> MH:
    """Metropolis–Hastings on the choices named by ``selection``.

    ``proposal`` is ``th.prior()`` (default: resample from the prior) or ``th.drift(scale)``
    (Gaussian random walk, continuous choices, scalar or vector).  A selection of several choices
    is one block proposal; sites of many plate elements are updated element-wise.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
    ...     th.observe("y", dist.Normal(mu, 1.0), 2.0)
    >>> r = th.infer(m(), th.mh("mu", th.drift(1.0)), num_samples=2000, seed=0, progress=False)
    >>> bool(abs(r["mu"].mean() - 1.0) < 0.15)
    True
    """
    return MH(selection, proposal)


@checked_keywords
def lmh(selection=None, exclude=None) -> LMH:
    """Lightweight MH (paper 001): one latent choice chosen uniformly, resampled from its prior.

    With ``selection`` the choice is drawn among the selected ones; with ``exclude``, among
    the choices (of ``selection``, or all) that ``exclude`` does not select — found anew in
    each trace, so choices that appear only in some traces are included when they exist
    (``th.cycle([th.nuts("mu"), th.lmh(exclude=["mu"])])``).

    >>> import thrifty as th
    >>> from thrifty.models import hmm
    >>> r = th.infer(hmm(), th.lmh(), num_samples=500, seed=0, progress=False)
    >>> r["s.z"].shape
    (1, 500, 18)
    """
    return LMH(selection, exclude)


__all__ = ["LMH", "MH", "Prior", "lmh", "mh"]
