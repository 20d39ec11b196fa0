r"""The GLM sections of a vector choice θ: the observations a subsampling kernel reads one by one.

A *section* is one element of a plate observed through a GLM (:mod:`thrifty.distributions.glm`)
whose weights are θ: ``th.observe("y", glm.logistic(X[i], w), y[i])`` gives U_i(θ) = U(x_i·θ, y_i).
SMH (paper 002), the Taylor proxy of subsampled MH, the SGLD proposal and
:func:`thrifty.diagnostics.check_subsampling` all need the rows x_i, the observations y_i and the
families of the sections, found once per chain in O(N):

* one full execution with every observation captured, and one with θ perturbed: the GLM
  observations whose weights are θ in both runs are the sections; every other θ-dependent term
  of the plates must be one of them (compared per element), neither the families nor the rows
  x_i may depend on θ (U_i(θ) = U(x_i·θ, y_i) is linear in θ only with x_i fixed: 002's
  control variates and bounds are of that function), and the structure must not change;
* the change of the full log-density must be the sections' plus that of the lazy run the
  kernels take the global factor from (:func:`skipped_terms`): a term of θ in a markov step or
  in the density of a memoized value would otherwise be in neither;
* :class:`Sections` holds their X, y, families and which plates hold them.

The data are computed by the plates' bodies from what precedes them and the elements' own
choices, so they can change only where the engine executes an element or leaves it stale — which
the plate's ``exec_clock`` and ``valid_from`` say in O(1) (:func:`data_may_differ`); then the
sections are found again and compared with the kept ones (O(N)), a new set-up only when they
differ.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from thrifty._warn import user_stacklevel
from thrifty.core.address import fmt
from thrifty.core.engine import (
    LAZY,
    RESCORE_CAPTURE,
    plate_clock,
    run_plate_lps,
    same_value,
    top_choice,
    top_site,
)
from thrifty.distributions.glm import GLM
from thrifty.errors import SelectionError

SETUP_MODE = RESCORE_CAPTURE  # every observation, captured


class Sections:
    """The sections of θ found by :func:`find` (O(N) once), and what identifies the state they
    were found in.  Kernels add what they precompute from them (θ̂, control variates, bounds)."""

    trace = None
    structure = None
    obs = None
    families: dict  # capture address -> family params
    clock = -1  # trace.clock when the sections' data were last known to be these
    plates: tuple = ()  # the plates holding the sections


def resolve(kernel, trace):
    """``(address, site)`` of the one top-level real vector choice ``kernel`` selects."""
    cs = kernel.choices(trace)
    if cs is None or cs.groups or len(cs.scalars) != 1:
        raise SelectionError(
            f"smh: {kernel.selection!r} must select exactly one top-level vector choice (the "
            "weights of GLM observations), not plate elements or several choices"
        )
    addr = cs.scalars[0]
    site = top_site(trace, addr)
    if site is None:
        raise SelectionError(
            f"smh: {fmt(addr)} is not a top-level choice of the model body (it is inside a "
            "markov chain or a mem table)"
        )
    v = site.value
    if not (isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind == "f"):
        what = ("a scalar" if np.ndim(v) == 0 else
                f"an array of shape {np.shape(v)} and dtype {np.asarray(v).dtype}")
        raise SelectionError(
            f"smh: {fmt(addr)} is {what}; smh updates the weights θ of glm observations, a real "
            "vector read by a glm family in a plate (th.observe('y', glm.logistic(X[i], w), "
            "y[i])) — use th.mh or th.subsampled_mh for other choices"
        )
    return addr, site


def still_valid(st: Sections | None, trace) -> bool:
    """Whether the sections ``st`` are those of ``trace`` now, in O(1)."""
    return (
        st is not None
        and st.trace is trace
        and st.structure == trace.structure
        and st.obs is trace.obs_values
        and not data_may_differ(st, trace)
    )


def find(kernel, trace, prev: Sections | None, prior) -> tuple[Sections, bool]:
    """The sections of the θ ``kernel`` selects, and whether they are ``prev`` (the same data
    and families: kept, with what was precomputed from them).  ``prior(site)`` gives the prior
    model stored with new sections.  O(N): one or two full executions, never touching the
    chain's generator."""
    addr, site = resolve(kernel, trace)
    theta = site.value
    d = len(theta)
    rng0 = np.random.default_rng(20240602)  # set-up never touches the chain's generator
    run_a = kernel.execute(trace, rng0, mode=SETUP_MODE)
    groups = same_sections(prev, trace, addr, run_a)
    if groups is not None:  # only the observed values or a family's parameters changed
        if holds(prev, groups):
            prev.clock = trace.clock
            return prev, True
        return build(trace, addr, site, groups, prior), False
    delta = 0.1 * (1.0 + np.abs(theta)) * rng0.standard_normal(d) / math.sqrt(d)
    theta_b = theta + delta
    run_b = kernel.execute(trace, rng0, targets={addr: theta_b}, mode=SETUP_MODE)
    run_b.check_targets(1)
    if run_b.n_fresh or run_b.n_stale:
        raise SelectionError(
            f"smh: changing {fmt(addr)} changes the structure of the program; smh needs a "
            "fixed structure"
        )
    groups, glob_big = [], []
    b_entries = {c[0]: c for c in run_b.captured}
    for caddr, dist, value, elems in run_a.captured:
        if not isinstance(dist, GLM):
            continue
        if not (dist.theta is theta or np.array_equal(dist.theta, theta)):
            continue
        other = b_entries.get(caddr)
        if other is None or not np.array_equal(other[1].theta, theta_b):
            continue
        if not same_value(other[1].family.params(), dist.family.params()):
            raise SelectionError(
                f"smh: the glm family at {fmt(caddr)} depends on {fmt(addr)}; only the "
                "linear predictor may"
            )
        if not np.array_equal(other[1].X, dist.X):
            raise SelectionError(
                f"smh: the rows X of the glm observation at {fmt(caddr)} depend on "
                f"{fmt(addr)}; the linear predictor must be X @ {fmt(addr)} with X fixed"
            )
        if elems is None:  # outside a plate: part of G, evaluated by the lazy run
            if np.size(dist.eta) > 1000:
                glob_big.append(caddr)
            continue
        groups.append((caddr, dist, np.asarray(value), other[1]))
    if not groups:
        raise SelectionError(
            f"smh: no glm observation inside a plate has {fmt(addr)} as its weights; smh "
            "needs observations like th.observe('y', glm.logistic(X[i], w), y[i]) in a "
            "th.plate (see thrifty.distributions.glm)"
        )
    if glob_big and not getattr(kernel, "_warned", False):
        kernel._warned = True
        warnings.warn(
            f"smh: the glm observation(s) {', '.join(fmt(a) for a in glob_big)} are not in a "
            "plate; smh evaluates them in full at every step",
            stacklevel=user_stacklevel(),
        )
    # every θ-dependent plate term must be one of the sections (each section's change, once)
    changes = [dist_b.log_prob(value) - dist.log_prob(value) for _, dist, value, dist_b in groups]
    lps_b = run_plate_lps(run_b)
    for paddr, fa in run_plate_lps(run_a).items():
        fb = lps_b.get(paddr)
        if fb is None:
            continue
        expected = np.zeros(len(fa))
        for (caddr, *_), change in zip(groups, changes):
            if caddr[: len(paddr)] == paddr and caddr[len(paddr)] == "*":
                expected += change
        diff = fb - fa
        tol = 1e-7 * (1.0 + np.abs(fa) + np.abs(fb))
        bad = ~(np.abs(diff - expected) <= tol)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise SelectionError(
                f"smh: {fmt(addr)} enters plate {fmt(paddr)} through terms that are not glm "
                f"observations (element {j}: log-density changes by {diff[j]:.6g}, the glm "
                f"observations by {expected[j]:.6g}); smh can only subsample glm observations"
            )
    if getattr(kernel, "global_split", True):  # (False: sections that only steer a proposal)
        sec = sum(float(np.sum(c)) for c in changes)
        skipped_terms(kernel, trace, rng0, addr, theta_b, run_a, run_b, sec)
    return build(trace, addr, site, groups, prior), False


def skipped_terms(kernel, trace, rng, addr, theta_b, run_a, run_b, sec: float) -> None:
    """Refuse a θ whose terms are neither sections nor in the global factor.

    The kernels split the change θ → θ_b into the global factor G — a lazy run, in which plates
    and markov chains execute no element (000 §3.1; 002's first factor) — and the sections.
    Anything else of θ (an observation inside a markov step, beside a plate of sections) would
    be dropped from every acceptance ratio; so the full log-weight must equal G's plus the
    sections' ``sec`` (compared at θ_b, once per set-up).
    """
    lazy = kernel.execute(trace, rng, targets={addr: theta_b}, mode=LAZY)
    full = run_b.lp_new - run_a.lp_new
    split = (lazy.lp_new - lazy.lp_old) + sec
    if full == split:  # (also both -inf: θ_b outside the prior's support)
        return
    tol = 1e-9 * (1.0 + abs(run_a.lp_new) + abs(run_b.lp_new))
    if abs(full - split) <= tol:
        return
    chains = [fmt(a) for kind, a, _ in lazy.sections if kind != "plate"]
    where = f" (through the markov chain(s) {', '.join(chains)})" if chains else ""
    raise SelectionError(
        f"smh: {fmt(addr)} enters terms that are neither glm observations in a plate nor "
        f"global{where}: changing it changes the log-density by {full:.6g}, the glm sections "
        f"and the global terms by {split:.6g}; smh evaluates the global terms with no plate "
        "element or markov step executed — put the observations in a th.plate, or use "
        "th.mh / th.subsampled_mh"
    )


def require_weights(who: str, st: Sections, captured, theta_new) -> None:
    """Refuse a section whose GLM weights are not θ' in a lazy captured run at θ'.

    The kernels compute U_i(θ') = U(x_i·θ', y_i) from the set-up's data, never by executing the
    plate; the set-up saw the weights equal θ at two points only, and a function equal to θ
    there (``np.abs(w)``, ``np.clip``, a branch on w) would make every U_i(θ') wrong.  The lazy
    run of each step builds the sections' GLMs (with no rows) at θ': their weights must be θ'.
    """
    for caddr, dist, _, _ in captured or ():
        if caddr in st.families and not np.array_equal(dist.theta, theta_new):
            raise SelectionError(
                f"{who}: the weights of the glm observation at {fmt(caddr)} are not "
                f"{fmt(st.addr)} at {fmt(st.addr)} = {theta_new!r} (they were where the "
                "sections were found): the model passes a function of it that equals it "
                "only at some values (np.abs, np.clip, a branch on it); the kernel needs "
                f"glm.<family>(X[i], {fmt(st.addr)}) with the choice itself"
            )


def same_sections(prev, trace, addr, run) -> list | None:
    """The GLM observations a full captured ``run`` made at the sections ``prev``'s addresses,
    when the trace's structure is theirs (else None)."""
    if (prev is None or prev.trace is not trace or prev.structure != trace.structure
            or prev.addr != addr):
        return None
    theta = top_choice(trace, addr)[0]
    groups = [
        (c[0], c[1], np.asarray(c[2]), None)
        for c in run.captured
        if c[0] in prev.families and isinstance(c[1], GLM)
        and (c[1].theta is theta or np.array_equal(c[1].theta, theta))
    ]
    return groups if len(groups) == len(prev.families) else None


def confirm(prev: Sections | None, run, trace) -> bool:
    """After a committed full captured ``run`` (``mode=SETUP_MODE``), whether the sections
    ``prev`` still hold the trace's data and families; if so they are marked current
    (``clock``), so that the next step does not compare them again.  O(N), vectorized."""
    groups = None if prev is None else same_sections(prev, trace, prev.addr, run)
    if groups is None or not holds(prev, groups):
        return False
    prev.clock = trace.clock
    return True


def build(trace, addr, site, groups, prior) -> Sections:
    """:class:`Sections` of the captured GLM observations ``groups``."""
    theta = site.value
    d = len(theta)
    st = Sections()
    st.trace, st.structure, st.obs = trace, trace.structure, trace.obs_values
    st.clock = trace.clock
    st.plates = tuple({g[0][: g[0].index("*")] for g in groups})
    st.addr, st.d = addr, d
    st.families = {g[0]: g[1].family.params() for g in groups}
    fams = [g[1].family for g in groups]
    if len(groups) == 1:
        X = groups[0][1].X
        y = groups[0][2]
        st.gid = None
    else:
        X = np.concatenate([g[1].X for g in groups])
        y = np.concatenate([np.broadcast_to(g[2], (len(g[1].X),)) for g in groups])
        st.gid = np.concatenate([np.full(len(g[1].X), j) for j, g in enumerate(groups)])
    y = np.broadcast_to(y, (len(X),))
    st.X, st.y, st.fams, st.N = X, y, fams, len(X)
    st.passes = 0  # NumPy passes over the N sections (Newton evaluations, control variates)
    st.prior = prior(site.dist, d)
    return st


# per-section helpers (several plates may hold sections, one family each)
def apply(st, idx, fn, *arrays):
    """``fn(family, y, *arrays)`` over the sections ``idx`` (all when None), group by group;
    ``arrays`` are aligned with ``idx``."""
    y = st.y if idx is None else st.y[idx]
    if st.gid is None:
        return fn(st.fams[0], y, *arrays)
    gid = st.gid if idx is None else st.gid[idx]
    out = np.empty(len(y))
    for j, fam in enumerate(st.fams):
        mask = gid == j
        if mask.any():
            out[mask] = fn(fam, y[mask], *(a[mask] for a in arrays))
    return out


def derivs(st, eta, k, idx=None):
    """U^{(k)}(η, y) for the sections ``idx`` (all when None), ``eta`` aligned with them."""
    return apply(st, idx, lambda fam, y, e: fam.derivative(k, e, y), eta)


def data_may_differ(st, trace) -> bool:
    """Whether the sections' data (x_i, y_i) may differ from the set-up's: some commit other
    than this kernel's moves of θ executed elements of their plates — or made them stale —
    since ``st.clock``.  The data are computed by the plate's body from what precedes it and
    from the element's own choices, so they can change only where the engine re-ran (or left
    stale) an element; then the set-up compares them again (O(N)) rather than trusting them.
    Checked only when the trace's clock moved (another kernel committed)."""
    if trace.clock == st.clock:
        return False
    for paddr in st.plates:
        try:
            if plate_clock(trace, paddr) > st.clock:  # O(1): kept by the engine
                return True
        except KeyError:
            return True
    st.clock = trace.clock
    return False


def holds(st, groups) -> bool:
    """Whether the set-up ``st`` describes the captured sections ``groups``: the same data and
    the same families' parameters."""
    return same_data(st, groups) and all(
        same_value(g[1].family.params(), st.families[g[0]]) for g in groups)


def same_data(st, groups) -> bool:
    """Whether the captured sections ``groups`` hold the set-up's X and y."""
    if len(groups) == 1:
        X, y = groups[0][1].X, groups[0][2]
    else:
        X = np.concatenate([g[1].X for g in groups])
        y = np.concatenate([np.broadcast_to(g[2], (len(g[1].X),)) for g in groups])
    return (np.shape(X) == np.shape(st.X) and np.array_equal(X, st.X)
            and np.array_equal(np.broadcast_to(y, (len(X),)), st.y))
