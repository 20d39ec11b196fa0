"""Coupled sites of a plate: exchangeable draws and collapsed observations.

A plate's elements are conditionally independent — except at a *coupled* site:

* ``z = th.sample("z", process)`` with a coupled process (``th.CRP``, ``th.PitmanYor``): the
  draws of the elements are exchangeable; their joint density is the process's (the Ewens
  probability of the partition for the CRP; :mod:`thrifty.processes.base` says what a process
  provides, and this module names no particular one);
* ``th.observe("x", feats(z), x[i])`` with ``feats = th.mem("feats", lambda k: NIW(...))`` (or
  a bare collapsed family): the observations of one cluster share an integrated-out parameter;
  their joint density is the cluster's marginal likelihood
  (:mod:`thrifty.processes.collapsed`).

The plate's node keeps one *state* per coupled site (``PlateNode.procs``): the statistics of the
process's draws, or the statistics of every cluster with the key each element is incorporated
in.  Per element, a coupled site stores log-density 0; the site's joint log-density is the
state's ``log_prob()``, part of the node's ``total_lp()``.  A run that executes some elements
changes a *copy* of the state (O(K) for K tables, O(d²) per touched cluster — never O(N)): it
unincorporates each changed element's old value and incorporates the new one, so the change of
the joint is exact whatever elements run (paper 000 §4.2; Neal 2000, Alg. 3 and 8).  A change
of the process's hyperparameters re-scores the state under the new ones (``with_params``) —
the same draws, their joint under the new values.  The journal entry installs the copy on
commit; a rejected proposal leaves the trace's state alone.

Element-wise vectorised updates (Gibbs or MH on every element in one pass) assume independent
elements and are refused for coupled sites; ``th.gibbs`` updates a process's draws one at a
time over the state's candidates (:mod:`thrifty.inference.mcmc.gibbs`).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.column import Column
from thrifty.core.vocab import LATENT, RESAMPLE, InvalidParameters
from thrifty.errors import DistributionError, ModelError
from thrifty.processes.collapsed import Collapsed, CollapsedView


class CollapsedState:
    """The clusters of a collapsed observation site: ``keys`` (the cluster each element is
    incorporated in, −1 for none) and ``values`` (the observation it was incorporated with),
    ``fams`` (key → family with its statistics), ``mls`` (key → marginal log-likelihood) and
    their sum ``total``.  An element is moved — unincorporated and incorporated again — when
    its key *or its observed value* changed (an observation computed from a choice before the
    plate changes with it)."""

    __slots__ = ("fams", "keys", "mls", "total", "values")
    latent = False

    def __init__(self, size: int, event_shape: tuple = ()):
        self.keys = Column(np.full(size, -1, dtype=np.int64))
        self.values = Column(np.zeros((size, *event_shape)))
        self.fams: dict = {}
        self.mls: dict = {}
        self.total = 0.0

    def copy(self) -> CollapsedState:
        """A run's working copy (O(K)): the same ``keys`` and ``values`` columns — the run
        writes the moved elements into them only on commit (:func:`install`), so no O(N) copy
        per run."""
        out = object.__new__(CollapsedState)
        out.keys, out.values = self.keys, self.values
        out.fams, out.mls, out.total = dict(self.fams), dict(self.mls), self.total
        return out

    def fork(self) -> CollapsedState:
        """The copy a forked trace's node keeps: the columns shared copy-on-write."""
        out = self.copy()
        out.keys, out.values = self.keys.share(), self.values.share()
        return out

    def log_prob(self) -> float:
        return self.total

    def __repr__(self) -> str:
        return f"CollapsedState({len(self.fams)} clusters, log p = {self.total:.4g})"


class CoupledSite:
    """A run's handle on one coupled site of a plate: the stored state (``old``), the copy the
    run changes (``new``, made at the first change, or by new hyperparameters) and the clusters
    it touched."""

    __slots__ = ("moves", "new", "old", "touched")

    def __init__(self, old):
        self.old = old
        self.new = old
        self.touched: set = set()
        self.moves = None  # (elements, new keys, new values) of a collapsed site, on commit

    def writable(self, make):
        if self.new is None:
            self.new = make()
        elif self.new is self.old:
            self.new = self.old.copy()
        return self.new


def _site(frame, local, rel, what):
    acc = frame.acc
    if frame is not acc or acc.coupled is None:
        raise ModelError(
            f"{what} at {fmt(acc.generic(rel))}: coupled sites (draws of a process such as "
            "th.CRP, collapsed "
            "families) are supported in the body of a plate, not in markov steps or particle "
            "runs"
        )
    w = acc.coupled.get(rel)
    if w is None:
        old = None if acc.fresh_node else acc.old_node.procs.get(rel)
        w = acc.coupled[rel] = CoupledSite(old)
    return acc, w


def _value(acc, rel, j, d, v):
    why = d.value_error(v)
    if why is not None:
        raise ModelError(f"the value given for {fmt(acc.member_addr(j, rel))} is {v!r}; {why}")
    return int(v)


def _check_obs(acc, rel, j, fam, x) -> None:
    """One observation of a collapsed family, checked as its statistics will count it."""
    why = fam.value_error(x)
    if why is not None:
        raise DistributionError(f"observed value {np.asarray(x).tolist()!r} at address "
                                f"{fmt(acc.member_addr(j, rel))}: {why}")


def _params(acc, rel, d) -> tuple:
    """The process's hyperparameters in this run, checked: invalid ones reject a proposal and
    are an error anywhere else (the engine's rule for distributions, ``check_dist``)."""
    run = acc.run
    params = d.resolve(run)
    why = d.invalid(params)
    if why is not None:
        if run.proposing:
            raise InvalidParameters(acc.generic(rel), _Invalid(why))
        raise DistributionError(f"{type(d).__name__} at address {fmt(acc.generic(rel))}: {why}")
    return params


class _Invalid:
    __slots__ = ("_error",)

    def __init__(self, why):
        self._error = why


def sample(frame, local, rel, d):
    """``th.sample(name, process)`` over the executed elements (see the module docstring):
    ``(values, changed)``; each element's own log-density is 0 (the joint is the state's)."""
    acc, w = _site(frame, local, rel, f"a {type(d).__name__} draw")
    if not hasattr(d, "state"):
        raise ModelError(f"th.sample at {fmt(acc.generic(rel))}: {d!r} is a collapsed family; "
                         "observe it (th.observe) — latent draws from it are not supported")
    params = _params(acc, rel, d)
    rng, n = acc.run.rng, acc.n
    old = frame.old.get(local) if frame.old is not None else None
    target = acc.target_for(rel)
    if acc.lanes:
        return _sample_lanes(acc, rel, d, w, params, old, target)
    pos, vals = target if target is not None else ((), None)
    if w.old is None or old is None or old.kind != LATENT:  # a new site: seat every element
        acc.require_full("a new choice", rel)
        st = w.new = d.state(params)
        given = {} if vals is None or vals is RESAMPLE else dict(zip(np.asarray(pos).tolist(),
                                                                    np.asarray(vals).tolist()))
        values = np.empty(n, dtype=np.int64)
        for j in range(n):
            v = _value(acc, rel, j, d, given[j]) if j in given else st.sample(rng)
            st.incorporate(v)
            values[j] = v
        acc.n_fresh += n - len(given)
        acc.note_fresh(rel, n - len(given))
        changed = True
    else:
        values = np.asarray(old.values)
        if params != w.old.params:  # new hyperparameters: the same draws, rescored
            w.new = w.old.with_params(params)
        changed = False
        if len(pos):
            st = w.writable(None)
            values = values.copy()
            resample = vals is RESAMPLE
            vals = None if resample else np.asarray(vals).reshape(-1)
            for k, p in enumerate(np.asarray(pos).tolist()):
                v_old = int(values[p])
                st.unincorporate(v_old)
                if resample:  # a draw from the prior: the predictive given the others
                    v = st.sample(rng)
                    q_fwd, q_rev = st.predictive_log_prob(v), st.predictive_log_prob(v_old)
                    acc.q_fwd += q_fwd
                    acc.q_rev += q_rev
                    acc.add_q(np.array([p]), q_rev - q_fwd)
                else:
                    v = _value(acc, rel, p, d, vals[k])
                st.incorporate(v)
                values[p] = v
                changed |= v != v_old
    acc._add("lat_lp", np.zeros(n), 0.0, True)
    return values, changed


def _sample_lanes(acc, rel, d, w, params, old, target):
    """Candidate lanes of one element (:class:`~thrifty.core.vocab.Candidates`): lane j's
    log-density is the process's predictive of its value given the other draws — the element
    unincorporated from a copy of the state, which the run does not keep (Neal 2000, Alg. 3
    and 8: the CRP's n_k / (n − 1 + α) and α / (n − 1 + α))."""
    st = w.old if params == w.old.params else w.old.with_params(params)
    st = st.copy()  # (the protocol does not promise that with_params copies)
    st.unincorporate(int(old.values[0]))
    if target is None:  # another coupled site of the element: its value in every lane
        values = np.asarray(old.values, dtype=np.int64)
    else:
        vals = np.asarray(target[1]).reshape(-1).tolist()
        values = np.array([_value(acc, rel, j, d, v) for j, v in enumerate(vals)], dtype=np.int64)
    lp = np.array([st.predictive_log_prob(v) for v in values.tolist()])
    acc._add("lat_lp", lp, float(lp.sum()), True)
    return values, target is not None


def _observe_lanes(acc, w, keys, family, x) -> None:
    """Candidate lanes of one element: lane j's log-density is the predictive of its
    observation under the cluster its key names, given the cluster's other observations (the
    element unincorporated from a copy of its own cluster); the state is not changed."""
    e = int(acc.idx[0])
    old_key, old_x = int(w.old.keys.get(e)), w.old.values.get(e)
    fams, cache = w.old.fams, {}
    lane_fams = []
    for k in keys.tolist():
        fam = cache.get(k)
        if fam is None:
            fam = fams.get(k)
            if fam is None:
                fam = family(k)
            elif k == old_key:
                fam = fam.copy()
                fam.unincorporate(old_x)
            cache[k] = fam
        lane_fams.append(fam)
    kind = type(lane_fams[0])
    if all(type(f) is kind for f in lane_fams):
        lp = kind.predictive_log_probs(lane_fams, x)
    else:
        lp = Collapsed.predictive_log_probs(lane_fams, x)
    acc._add("obs_lp", lp, float(lp.sum()), True)


def observe(frame, local, rel, d, value):
    """``th.observe(name, family or feats(z), x[i])`` over the executed elements."""
    acc, w = _site(frame, local, rel, "a collapsed observation")
    run, n = acc.run, acc.n
    if run.new_obs is not None or run.obs_values is not None:
        raise ModelError(f"observation {fmt(acc.generic(rel))} of a collapsed family: "
                         "simulating it (Geweke tests, predictive checks) is not supported")
    if isinstance(d, Collapsed):
        proto = d
        keys = np.zeros(n, dtype=np.int64)
        family = lambda k: proto  # noqa: E731
    elif isinstance(d, CollapsedView):
        keys = np.asarray(d.keys)
        if keys.dtype.kind not in "iu":
            raise ModelError(f"observation {fmt(acc.generic(rel))}: a collapsed family per "
                             f"cluster needs integer keys (table labels), got {keys.dtype}")
        keys = keys.astype(np.int64, copy=False)
        family = d.family
        _one_site(run.trace.collapsed_mems, d.addr, acc.generic_all(rel))
    else:
        raise ModelError(f"th.observe at {fmt(acc.generic(rel))}: {d!r} cannot be observed "
                         "(a process such as th.CRP is sampled with th.sample)")
    x = np.asarray(value, dtype=float)
    if x.ndim == 0 or x.shape[0] != n:
        raise ModelError(f"shape mismatch in {acc.where()} at observation "
                         f"{fmt(acc.generic(rel))}: observed value of shape {x.shape} for {n} "
                         "executed element(s); index the data with the plate's index")
    if acc.lanes:
        _observe_lanes(acc, w, keys, family, x)
        return value
    if w.old is None:
        old_keys = old_x = None
        moved = np.arange(n)
    else:
        old_keys, old_x = w.old.keys.take(acc.idx), w.old.values.take(acc.idx)
        if old_x.shape != x.shape:
            raise ModelError(f"observation {fmt(acc.generic(rel))}: observed values of shape "
                             f"{x.shape[1:]} per element, were {old_x.shape[1:]}")
        same_x = (old_x == x).reshape(n, int(np.prod(x.shape[1:]))).all(axis=1)
        moved = np.flatnonzero((old_keys != keys) | ~same_x)
    if w.old is None or len(moved):
        size, event = acc.N, x.shape[1:]
        st = w.writable(lambda: CollapsedState(size, event))
        fams, touched = st.fams, w.touched
        for j in moved.tolist():
            if old_keys is not None and old_keys[j] >= 0:
                k = int(old_keys[j])
                if k not in touched:
                    fams[k] = fams[k].copy()
                    touched.add(k)
                fams[k].unincorporate(old_x[j])  # as it was incorporated
            k = int(keys[j])
            if k not in touched:
                cur = fams.get(k)
                fams[k] = family(k).copy() if cur is None else cur.copy()
                touched.add(k)
            _check_obs(acc, rel, j, fams[k], x[j])
            fams[k].incorporate(x[j])
        if len(moved):
            w.moves = (acc.member_indices()[moved], keys[moved], x[moved])
    # the hyperparameters of the families read must be the ones their statistics were built with
    for k in np.unique(keys).tolist() if acc.full else ():
        cur = (w.new or w.old).fams.get(k)
        if cur is not None and not cur.same_prior(family(k)):
            raise ModelError(
                f"observation {fmt(acc.generic(rel))}: the collapsed family of cluster {k} "
                "changed its hyperparameters; random hyperparameters of collapsed families are "
                "not supported (give them as data)"
            )
    acc._add("obs_lp", np.zeros(n), 0.0, True)
    if run.captured is not None:  # observed data yes; a pointwise log-density, no
        addr = acc.generic_all(rel)
        run.captured.append((addr, Coupled(addr, d), value, acc.member_indices()))
    return value


def _one_site(owners: dict, maddr: tuple, site: tuple) -> None:
    """A memoized collapsed family is observed at one site: each site keeps its own clusters'
    statistics, so a second site observing ``feats(k)`` would integrate out a second
    parameter for cluster k where th.mem promises one (the marginal likelihood of the union of
    both sites' observations)."""
    owner = owners.get(maddr)
    if owner is None:
        owners[maddr] = site
    elif owner != site:
        raise ModelError(
            f"the collapsed families of th.mem {fmt(maddr)} are observed at {fmt(owner)} and at "
            f"{fmt(site)}: observe a memoized collapsed family at one site (its statistics are "
            "kept per site, so a second site would not share the cluster's parameter); for "
            "several observations per element use one family of vectors (NIW) or one "
            "th.mem per observed quantity")


class Coupled:
    """What a capturing run lists for a collapsed observation: its values are data like any
    other, but it has no pointwise log-density (each observation's density depends on the
    others of its cluster), so LOO and the like must leave it out."""

    is_discrete = False

    def __init__(self, addr, d):
        self.addr, self.d = addr, d

    def log_prob(self, value):
        raise ModelError(
            f"observation {fmt(self.addr)} of a collapsed family has no pointwise log-density "
            "(its observations are coupled through the cluster's statistics): the pointwise "
            "log-likelihood (log_likelihood=True, LOO) is not defined for it"
        )

    def __repr__(self) -> str:
        return f"Coupled({self.d!r})"


def account(frame, run) -> None:
    """The change of the coupled sites' joint log-densities, at the end of a plate execution.

    A process's joint (the CRP's Ewens probability) is O(1) from its statistics; a collapsed
    site's changes by the touched clusters' marginal likelihoods (O(d³) each).  A new process
    state is fresh (its choices were drawn from their prior); a new collapsed site is an
    observation.
    """
    for w in frame.coupled.values():
        new = w.new
        if new is None or new is w.old:  # unchanged: no change of the joint
            continue
        if new.latent:  # a process's draws
            if w.old is None:
                run.lp_fresh += new.log_prob()
            else:
                run.lp_old += w.old.log_prob()
                run.lp_new += new.log_prob()
            continue
        for k in w.touched:
            fam = new.fams[k]
            old_ml = new.mls.get(k, 0.0)
            if fam.n == 0:
                del new.fams[k]
                new.mls.pop(k, None)
                ml = 0.0
            else:
                ml = new.mls[k] = fam.marginal_log_prob()
            new.total += ml - old_ml
            run.lp_old += old_ml
            run.lp_new += ml


def install(node, frame) -> None:
    """On commit: the plate node takes the run's states of its coupled sites."""
    procs = node.procs
    if frame.full:
        for rel in [r for r in procs if r not in frame.coupled]:
            del procs[rel]
    for rel, w in frame.coupled.items():
        if w.new is not None and w.new is not w.old:  # (unchanged: a fork keeps its own copy,
            procs[rel] = w.new  # never the original trace's state, whose columns it shares)
            if w.moves is not None:
                st, (elems, keys, values) = w.new, w.moves
                if node is not frame.old_node and w.old is not None:
                    # a commit into a fork: the columns are the original trace's, shared
                    st.keys, st.values = st.keys.share(), st.values.share()
                st.keys.put(elems, keys)
                st.values.put(elems, values)
