"""Safeguards for subsampled MH and approximate Gibbs (paper 000 §3.3).

The sequential test of :func:`thrifty.subsampled_mh` / :func:`thrifty.austerity_gibbs` is a
Student-t test on minibatch means of the per-section log-ratios l_i.  It is reliable when the
minibatch mean μ̂ is close to normal; outliers among the l_i (heavy tails) break the central
limit theorem at the minibatch size and bias the chain (000 §3.3, the counter-example of
Bardenet et al. 2014).  :func:`check_subsampling` runs trial steps and measures, on the *same*
proposals and the *same* uniform u:

* the decision of exact MH (one execution of all that the proposal affects, as ``th.mh`` and
  ``th.gibbs`` do it) and the kernel's decision (``kernel.decide``): the **wrong-decision
  rate**, and the fraction of the sections the sequential test used (the **data fraction**);
* the full vector of l_i (every section evaluated through the kernel's own ``_log_ratios``, an
  O(N) diagnostic): its skewness and excess kurtosis (**heavy tails**: a long tail on one side
  shows as skewness, on both as kurtosis), and a normality test (D'Agostino–Pearson,
  ``scipy.stats.normaltest``) on standardized means of random minibatches of ``batch_size``
  sections drawn without replacement from those l_i — each trial's means oriented by the sign
  of its l_i's skewness, so that skewed trials do not cancel out when pooled;
* whether the wrong decisions lean one way: false accepts against false rejects (a binomial
  test) — at a posterior mode almost every proposal should be rejected, so the errors of a
  test fooled by a long tail are false accepts, and the chain is overdispersed;
* the time of a kernel decision and of the exact execution (a speed-up estimate).

It prints nothing by itself: ``print(result)`` (or ``result.report()``) gives a short report
with a recommendation (for plain subsampled MH on GLM weights whose test reads too much data or
errs too often, it also suggests ``proxy='taylor'``).  The trial chain is burned in with the
kernel, then moves with the *exact* decisions, so every kernel compared on it (``epsilons=``)
sees the same proposals.

Thresholds (all keyword arguments):

* ``tolerance`` (0.05): the acceptable wrong-decision rate; above it, decrease ε.  It is not
  ε: ε bounds the error of each look of the sequential test, and a proposal whose exact
  log-ratio lies near log u is decided wrongly much more often than that, so the rate per
  decision is typically several times ε (2–5% at ε = 0.01 on the logistic regressions of
  ``tests/test_check_subsampling.py``, over five seeds; 1.5% in ``benchmarks/austerity_risk.py``,
  where the budget leaves nearly every decision to all the data; an independent implementation
  of 004 Alg. 1 gives the same rates).
* ``alpha`` (0.001): normality is rejected when the test's p-value is below ``alpha``.
* ``max_mean_kurtosis`` (0.5) and ``max_mean_skewness`` (0.2): the l_i have heavy tails when
  their excess kurtosis divided by the batch size, or their absolute skewness divided by its
  square root — the excess kurtosis and skewness of a minibatch mean (medians over trials) —
  exceed these.  The suggested batch, max(kurtosis / 0.5, (skewness / 0.2)²) with the 90th
  percentiles over trials, would bring both under the limits in 9 trials out of 10; when it is
  more than a fifth of the sections, subsampling cannot help and exact MH (or SMH, which is
  exact) is recommended.  (Logistic regression's l_i have |skewness| 1.5–2.5 at the posterior:
  a batch of 100 is near the skewness limit, on one side or the other.)
* ``bias_alpha`` (0.05): the decisions are one-sided (``biased``) when the binomial test of
  false accepts against false rejects has a p-value below this and the kernel's acceptance
  rate differs from exact MH's by more than a quarter; then decrease ε.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np

from thrifty.core.locate import locate, plan_for
from thrifty.core.run import RESCORE, Run
from thrifty.core.simulate import initialize
from thrifty.core.vocab import LAZY_CAPTURE

__all__ = ["SubsamplingCheck", "check_subsampling"]


@dataclass
class SubsamplingCheck:
    """What :func:`check_subsampling` measured; ``print`` it for the report."""

    kernel: str
    steps: int  # trial decisions made
    sections: float  # N, the number of sections (median over trials)
    batch_size: int
    epsilon: float
    wrong_decisions: int
    wrong_decision_rate: float
    wrong_decision_ci: tuple  # 95% Wilson interval of the rate
    false_accepts: int  # kernel accepted, exact MH rejected
    false_rejects: int
    data_fraction: float  # mean of (sections used / N) per decision
    ran_to_N_rate: float  # decisions that used every section
    acceptance_exact: float
    acceptance_kernel: float
    skewness: float  # |skewness| of the l_i, median over trials
    kurtosis: float  # excess kurtosis of the l_i, median over trials
    skewness_max: float
    kurtosis_max: float
    normality_stat: float
    normality_p: float  # D'Agostino–Pearson p-value of standardized minibatch means
    normality_draws: int
    heavy_tails: bool
    normality_rejected: bool
    decision_bias_p: float  # binomial test: false accepts vs false rejects
    biased: bool
    seconds_kernel: float  # median seconds of one kernel decision
    seconds_exact: float  # median seconds of the exact MH execution of the same proposal
    consistency: float  # max |G + Σ l_i − exact| / (1 + |exact|), exact: the log-ratio (≈ 0)
    action: str  # "ok" | "decrease_epsilon" | "larger_batch" | "exact" | "no_sections"
    recommendation: str
    suggested_epsilon: float | None = None
    suggested_batch_size: int | None = None
    by_epsilon: dict = field(default_factory=dict)  # ε → {"wrong_decision_rate", ...}
    trials: dict = field(default_factory=dict, repr=False)  # per-trial arrays

    @property
    def speedup(self) -> float:
        """Seconds of an exact execution / seconds of a kernel decision (medians)."""
        return self.seconds_exact / self.seconds_kernel if self.seconds_kernel > 0 else math.nan

    def report(self) -> str:
        lo, hi = self.wrong_decision_ci
        lines = [
            f"check_subsampling: {self.kernel}",
            f"  {self.steps} trial decisions, N = {self.sections:,.0f} sections, "
            f"batch {self.batch_size}, epsilon {self.epsilon:g}",
            f"  wrong decisions vs exact MH (same proposal, same u): {self.wrong_decisions} "
            f"({self.wrong_decision_rate:.2%}, 95% CI {lo:.2%}–{hi:.2%}; "
            f"{self.false_accepts} false accepts, {self.false_rejects} false rejects)",
            f"  data used per decision: {self.data_fraction:.2%} of the sections "
            f"(all of them in {self.ran_to_N_rate:.0%} of decisions)",
            f"  acceptance: exact {self.acceptance_exact:.2%}, kernel {self.acceptance_kernel:.2%}"
            + (f"  ONE-SIDED ERRORS (p = {self.decision_bias_p:.2g})" if self.biased else ""),
            f"  l_i: |skewness| {self.skewness:.2f} (max {self.skewness_max:.2f}), excess "
            f"kurtosis {self.kurtosis:.1f} (max {self.kurtosis_max:.1f}); heavy tails: "
            f"{'YES' if self.heavy_tails else 'no'}",
            f"  normality of minibatch means (n = {self.normality_draws}): "
            f"p = {self.normality_p:.3g}" + ("  REJECTED" if self.normality_rejected else ""),
            f"  time per decision: kernel {self.seconds_kernel * 1e3:.3g} ms, exact "
            f"{self.seconds_exact * 1e3:.3g} ms (speed-up {self.speedup:.2f}x)",
        ]
        if self.consistency > 1e-6:
            lines.append(
                f"  WARNING: G + sum(l_i) differs from the exact log-ratio by "
                f"{self.consistency:.3g}: the sections do not cover the change"
            )
        for eps, row in sorted(self.by_epsilon.items()):
            lines.append(
                f"  epsilon {eps:<6g}: wrong {row['wrong_decision_rate']:.2%}, data "
                f"{row['data_fraction']:.2%}, {row['seconds_kernel'] * 1e3:.3g} ms/decision"
            )
        lines.append(f"  recommendation: {self.recommendation}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()



def _wilson(k: int, n: int, z: float = 1.96) -> tuple:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def _is_gibbs(kernel) -> bool:
    from thrifty.inference.subsampling.austerity import AusterityGibbs

    return isinstance(kernel, AusterityGibbs)


def _pick(kernel, trace, rng):
    """The choices one trial updates, their proposal and the log proposal ratio."""
    cs = kernel.global_choices(trace, rng)  # raises for plate-local selections
    if cs is None:
        return None
    if _is_gibbs(kernel):  # a Gibbs sweep: one trial flips one of the selected choices
        addr = cs.scalars[int(rng.integers(len(cs.scalars)))]
        loc = locate(trace, addr)
        return [loc], {addr: 1 - int(loc.value)}, 0.0
    locs = [locate(trace, a) for a in cs.scalars]
    targets, log_q = kernel._propose(trace, locs, rng)
    return locs, targets, log_q


def _set(trace, rng, values: dict) -> None:
    """Make ``values`` the trace's current values and rescore everything (clears staleness)."""
    Run(trace, rng, targets=values, mode=RESCORE).execute().commit()


def _minibatch_z(l: np.ndarray, m: int, draws: int, rng) -> np.ndarray:
    """Standardized means of ``draws`` minibatches of ``m`` l_i drawn without replacement."""
    N = len(l)
    sd = l.std()
    if N <= m or sd == 0:
        return np.zeros(0)
    se = sd / math.sqrt(m) * math.sqrt((N - m) / (N - 1))
    means = np.array([l[rng.choice(N, m, replace=False)].mean() for _ in range(draws)])
    return (means - l.mean()) / se


def check_subsampling(
    program,
    kernel,
    steps: int = 200,
    *,
    burn_in: int = 100,
    seed=0,
    init: dict | None = None,
    epsilons=(),
    normality_draws: int = 500,
    tolerance: float = 0.05,
    alpha: float = 0.001,
    max_mean_kurtosis: float = 0.5,
    max_mean_skewness: float = 0.2,
    bias_alpha: float = 0.05,
) -> SubsamplingCheck:
    """Trial steps of a subsampling kernel compared with exact MH on the same proposals.

    ``program``: a program (a model applied to its data); ``kernel``: a ``th.subsampled_mh`` or
    ``th.austerity_gibbs`` kernel (it is copied, not modified).  ``burn_in`` kernel steps from
    a prior simulation (``init``: initial values, as for ``th.infer``; the l_i far from the
    posterior can look very different from those at stationarity) — the kernel's start and
    burn-in as in ``th.infer`` (the Laplace start and the adaptation of its default
    ``th.drift()``), then ``steps`` trial
    proposals; for each, the exact decision and the kernel's decision for a shared u (for
    Gibbs: one flip of one selected choice, decided by the logit of u).  ``epsilons``: also
    decide every trial proposal with copies of the kernel at these tolerances
    (``result.by_epsilon``).  ``normality_draws`` standardized minibatch means in the
    normality test, spread over the trials.  The thresholds are described in the module
    docstring.  Costs O(N) per trial (every section is evaluated).

    >>> import thrifty as th
    >>> from thrifty.datasets import synthetic_logistic
    >>> from thrifty.models.logistic import logistic_regression
    >>> X, y, _ = synthetic_logistic(5000, 2, seed=0)
    >>> k = th.subsampled_mh("w", batch_size=100, epsilon=0.01, proposal=th.drift(0.05))
    >>> r = th.diagnostics.check_subsampling(logistic_regression(X, y), k, steps=30, burn_in=30)
    >>> r.heavy_tails, r.wrong_decision_rate < 0.2
    (False, True)
    """
    from scipy import stats  # (imported here: a third of `import thrifty` otherwise)

    from thrifty.inference.subsampling.subsampled import SubsampledMH

    if not isinstance(kernel, SubsampledMH):
        raise TypeError(
            "check_subsampling: kernel must be th.subsampled_mh(...) or th.austerity_gibbs(...), "
            f"got {kernel!r}"
        )
    if steps < 1:
        raise ValueError(f"check_subsampling: steps must be >= 1, got {steps}")
    rng = np.random.default_rng(seed)
    gibbs = _is_gibbs(kernel)
    main = copy.deepcopy(kernel)
    main.stats = type(main.stats)()
    others = {}
    for eps in epsilons:
        k = copy.deepcopy(kernel)
        k.epsilon = float(eps)
        k.stats = type(k.stats)()
        others[float(eps)] = k
    helper = copy.deepcopy(kernel)  # evaluates every section (its stats are not reported)

    trace = initialize(program, rng, init=init)
    main.prepare_all(trace)  # as th.infer: the kernel's start, then a burn-in that adapts
    main.start_all(trace, rng, init)
    main.set_tuning(True)
    for _ in range(burn_in):
        main.step(trace, rng)
    main.set_tuning(False)
    main.stats = type(main.stats)()

    per_draw = max(1, math.ceil(normality_draws / steps))
    rows = {
        k: []
        for k in (
            "N", "exact", "kernel", "n", "ran_to_N", "skew", "kurt", "t_kernel", "t_exact",
            "margin", "mismatch",
        )
    }  # fmt: skip
    other_rows = {eps: {"wrong": [], "frac": [], "t": []} for eps in others}
    zs = []
    made = skipped = 0
    while made < steps:
        if trace.maybe_stale:
            Run(trace, rng, mode=RESCORE).execute().commit()
        picked = _pick(main, trace, rng)
        if picked is None:
            raise ValueError(f"check_subsampling: {kernel.label()} selects no choice")
        locs, targets, log_q = picked
        old = {loc.addr: loc.value for loc in locs}

        skeleton = Run(trace, rng, targets=targets, mode=LAZY_CAPTURE).execute()
        if skeleton.aborted is not None:  # outside the support: every kernel rejects
            skipped += 1
            if skipped > 10 * steps:
                raise ValueError("check_subsampling: nearly every proposal is outside the support")
            continue
        u = rng.random()
        log_u = math.log(u) - math.log1p(-u) if gibbs else math.log(u)

        # the kernels' decisions first, timed before the O(N) passes below flush the caches
        decisions = {}
        for eps, k in [(None, main), *others.items()]:
            k.last_outcome = None
            t0 = time.perf_counter()
            accepted = k.decide(trace, rng, locs, targets, log_q, log_u)
            dt = time.perf_counter() - t0
            out = k.last_outcome
            n_used = out.n if out is not None else 0
            decisions[eps] = (accepted, n_used, out.exact if out is not None else True, dt)
            if accepted:  # back to the current state for the next kernel
                _set(trace, rng, old)
                locs = [locate(trace, a) for a in old]
        if trace.maybe_stale:
            Run(trace, rng, mode=RESCORE).execute().commit()

        # exact MH: one execution of what the proposal can affect, as th.mh runs it
        t0 = time.perf_counter()
        run = Run(trace, rng, targets=targets, plan=plan_for(trace, locs)).execute()
        exact_lr = (run.log_weight if run.aborted is None else -math.inf) + log_q
        t_exact = time.perf_counter() - t0
        exact_accept = log_u < exact_lr

        # every section's l_i, through the kernel's own machinery
        skeleton = Run(trace, rng, targets=targets, mode=LAZY_CAPTURE).execute()
        scorer = helper.scorer(trace, rng, skeleton, locs, targets)
        N = scorer.N
        l = np.zeros(0) if N == 0 else scorer.evaluate(np.arange(N))
        global_lr = skeleton.log_weight + log_q + scorer.offset
        mismatch = abs(global_lr + float(l.sum()) - exact_lr) / (1.0 + abs(exact_lr))

        accepted, n_used, ran_all, dt = decisions[None]
        rows["N"].append(N)
        rows["exact"].append(exact_accept)
        rows["kernel"].append(accepted)
        rows["n"].append(n_used)
        rows["ran_to_N"].append(ran_all)
        rows["t_kernel"].append(dt)
        rows["t_exact"].append(t_exact)
        rows["margin"].append((exact_lr - log_u) / max(N, 1))
        rows["mismatch"].append(mismatch)
        if N > 2 and l.std() > 0:
            g = float(stats.skew(l))
            rows["skew"].append(g)
            rows["kurt"].append(float(stats.kurtosis(l)))
            z = _minibatch_z(l, main.batch_size, per_draw, rng)
            zs.append(z if g >= 0 else -z)
        for eps in others:
            a, n_e, _, dt_e = decisions[eps]
            other_rows[eps]["wrong"].append(a != exact_accept)
            other_rows[eps]["frac"].append(n_e / N if N else 1.0)
            other_rows[eps]["t"].append(dt_e)
        # the trial chain moves with the exact decision
        if exact_accept:
            _set(trace, rng, targets)
        made += 1

    limits = (tolerance, alpha, max_mean_kurtosis, max_mean_skewness, bias_alpha)
    return _summarize(main, rows, zs, other_rows, limits, _proxy_would_apply(main, trace))


def _proxy_would_apply(kernel, trace) -> bool:
    """Whether ``proxy='taylor'`` could be used instead: plain subsampled MH on one vector of
    GLM weights (the O(N) section discovery of ``th.smh``, without its precomputation)."""
    from thrifty.errors import SelectionError
    from thrifty.inference.subsampling.smh import SMH

    if _is_gibbs(kernel) or getattr(kernel, "proxy", None) is not None:
        return False
    try:
        SMH(kernel.selection).setup(trace, precompute=False)
    except (SelectionError, ValueError):
        return False
    return True


def _summarize(main, rows, zs, other_rows, limits, proxy_ok=False):
    from scipy import stats

    tolerance, alpha, max_mean_kurtosis, max_mean_skewness, bias_alpha = limits
    arr = {k: np.asarray(v) for k, v in rows.items()}
    steps = len(arr["exact"])
    wrong_mask = arr["exact"] != arr["kernel"]
    wrong = int(wrong_mask.sum())
    N = arr["N"]
    frac = np.where(N > 0, arr["n"] / np.maximum(N, 1), 1.0)
    has = len(arr["kurt"]) > 0
    skew = float(np.median(np.abs(arr["skew"]))) if has else math.nan
    skew_max = float(np.max(np.abs(arr["skew"]))) if has else math.nan
    kurt = float(np.median(arr["kurt"])) if has else math.nan
    kurt_max = float(np.max(arr["kurt"])) if has else math.nan
    z = np.concatenate(zs) if zs else np.zeros(0)
    if len(z) >= 20:
        stat, p = stats.normaltest(z)
        stat, p = float(stat), float(p)
    else:
        stat, p = math.nan, math.nan
    m = main.batch_size
    heavy = has and (kurt / m > max_mean_kurtosis or skew / math.sqrt(m) > max_mean_skewness)
    rejected = bool(p < alpha) if not math.isnan(p) else False
    rate = wrong / steps
    fa = int((arr["kernel"] & ~arr["exact"]).sum())
    fr = int((~arr["kernel"] & arr["exact"]).sum())
    bias_p = float(stats.binomtest(fa, fa + fr, 0.5).pvalue) if fa + fr else 1.0
    acc_e, acc_k = float(arr["exact"].mean()), float(arr["kernel"].mean())
    shift = abs(acc_k - acc_e) / max(acc_e, 1.0 / steps)
    biased = bias_p < bias_alpha and shift > 0.25
    med_N = float(np.median(N))

    # the recommendation
    eps = main.epsilon
    exact = "exact Gibbs (th.gibbs)" if _is_gibbs(main) else "exact MH (th.mh)"

    sugg_eps = sugg_m = None
    if med_N == 0:
        action = "no_sections"
        text = f"the choice has no local sections: every step is exact; use {exact} (cheaper)."
    elif heavy or rejected:
        if heavy:
            k90 = float(np.quantile(arr["kurt"], 0.9))
            g90 = float(np.quantile(np.abs(arr["skew"]), 0.9))
            need = max(max(k90, 0.0) / max_mean_kurtosis, (g90 / max_mean_skewness) ** 2)
            sugg_m = max(math.ceil(need), 2 * m)
            why = f"the l_i have heavy tails (|skewness| {skew:.1f}, excess kurtosis {kurt:.0f})"
        else:
            sugg_m = 4 * m
            why = f"minibatch means are not normal (p = {p:.2g})"

        if sugg_m > 0.2 * med_N:
            action = "exact"
            text = f"{why}; the sequential test is unreliable here: use {exact}" + (
                "." if _is_gibbs(main) else " or SMH (exact subsampling) for this choice."
            )
        else:
            action = "larger_batch"
            text = f"{why}; use a larger batch (batch_size >= {sugg_m}) or {exact}."
    elif rate > tolerance or biased:
        action = "decrease_epsilon"
        sugg_eps = eps * min(tolerance / max(rate, 1e-12), 1.0) / 2
        why = (
            f"the errors are one-sided ({fa} false accepts, {fr} false rejects: acceptance "
            f"{acc_k:.1%} instead of {acc_e:.1%})"
            if biased
            else f"{rate:.1%} of the decisions differ from exact MH (tolerance {tolerance:.1%})"
        )
        text = f"{why}: decrease epsilon (try {sugg_eps:.2g})."
    elif float(frac.mean()) > 0.5:
        action = "exact"
        text = (
            f"the test uses {frac.mean():.0%} of the sections per decision: subsampling saves "
            f"little here; use {exact}"
            + (f" or a larger epsilon (wrong decisions {rate:.1%})." if eps > 0 else ".")
        )
    else:
        action = "ok"
        text = (
            f"subsampling looks safe at epsilon {eps:g}, batch {m}: {rate:.1%} wrong decisions "
            f"using {frac.mean():.1%} of the data."
        )

    if proxy_ok and action in ("exact", "larger_batch", "decrease_epsilon"):
        text += (
            " These are GLM weights: proxy='taylor' (Taylor control variates) usually settles "
            "each decision from one or two minibatches."
        )

    by_eps = {}
    for e, r in other_rows.items():
        w = np.asarray(r["wrong"], dtype=bool)
        by_eps[e] = {
            "wrong_decision_rate": float(w.mean()) if len(w) else math.nan,
            "wrong_decision_ci": _wilson(int(w.sum()), len(w)),
            "data_fraction": float(np.mean(r["frac"])) if r["frac"] else math.nan,
            "seconds_kernel": float(np.median(r["t"])) if r["t"] else math.nan,
        }
    return SubsamplingCheck(
        kernel=main.label(),
        steps=steps,
        sections=med_N,
        batch_size=m,
        epsilon=eps,
        wrong_decisions=wrong,
        wrong_decision_rate=rate,
        wrong_decision_ci=_wilson(wrong, steps),
        false_accepts=fa,
        false_rejects=fr,
        data_fraction=float(frac.mean()),
        ran_to_N_rate=float(arr["ran_to_N"].mean()),
        acceptance_exact=acc_e,
        acceptance_kernel=acc_k,
        skewness=skew,
        kurtosis=kurt,
        skewness_max=skew_max,
        kurtosis_max=kurt_max,
        normality_stat=stat,
        normality_p=p,
        normality_draws=len(z),
        heavy_tails=bool(heavy),
        normality_rejected=rejected,
        decision_bias_p=bias_p,
        biased=bool(biased),
        seconds_kernel=float(np.median(arr["t_kernel"])),
        seconds_exact=float(np.median(arr["t_exact"])),
        consistency=float(np.max(arr["mismatch"])) if steps else 0.0,
        action=action,
        recommendation=text,
        suggested_epsilon=sugg_eps,
        suggested_batch_size=sugg_m,
        by_epsilon=by_eps,
        trials={k: v for k, v in arr.items()},
    )
