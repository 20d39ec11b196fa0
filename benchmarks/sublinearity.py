"""Sublinearity of subsampled MH (paper 000 §4.1.1, Fig. 5).

Bayesian logistic regression (prior N(0, 0.1·I)) on the 2-feature set of 000 Fig. 5a
(``thrifty.datasets.two_feature``: two Gaussian classes at ±(1, 1), an intercept column, so
w ∈ R³), N from 10³ to 10⁶.  Subsampled MH with the paper's settings — ε = 0.01, minibatches of
100, a Gaussian drift proposal of sd 0.1 — against exact MH with the same proposal
(``th.mh("w", th.drift(0.1))``, one vectorized execution of the whole plate per step).

(a) chain: for each N both kernels start at the posterior mode (found by Newton's method),
    take 200 untimed warm-up steps (subsampled MH's chain drifts away from the mode, see the
    notes in the JSON, and its cost per step with it), then ``rounds`` rounds of ``steps``
    steps, the two kernels alternating round by round in this process; sections per step are
    averaged over all measured steps, seconds per step are the median over rounds.
(b) fixed proposals, the paper's protocol for Fig. 5 ("We use the same current and proposed
    parameter value for all dataset sizes in this plot"; the issue's criteria are judged on it,
    and the chain's slopes are reported next to them): θ = the posterior mode at the largest N,
    θ' = θ + 0.1·z for ``n_dirs`` fixed standard-normal z, and ``n_u`` uniforms u per θ'; each
    decision is made by ``kernel.decide`` from the same state θ (restored after an accept,
    outside the timing).
    This isolates the cost of the sequential test: as N grows, μ = mean(l_i) tends to a fixed
    value while μ0 = (log u − G)/N → 0, so the sections needed level off.  Three kernels:
    the default (a decision still open after ``max_fraction``·N sections is exact MH's, from
    one full pass: N sections), the test alone (``max_fraction=1``, 000 Alg. 2 as written) and
    the Taylor proxy (``proxy="taylor"``).

Log–log slopes are least-squares fits over N ∈ [10⁴, 10⁶] (and [10⁵, 10⁶] for seconds, where a
fixed per-step overhead no longer hides the linear cost of exact MH).

Writes ``benchmarks/results/sublinearity.json`` and ``.png``.
Run: ``python benchmarks/sublinearity.py`` (``--quick``: N ≤ 10⁵, few steps; a smoke test).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import thrifty as th
from _common import RESULTS, write
from thrifty.core.locate import locate
from thrifty.core.run import RESCORE, Run
from thrifty.core.simulate import initialize
from thrifty.datasets import two_feature
from thrifty.models.logistic import laplace, logistic_regression

PRIOR_VAR = 0.1
EPSILON, BATCH, SD = 0.01, 100, 0.1


def slope(ns, values, lo, hi) -> float:
    ns, values = np.asarray(ns, float), np.asarray(values, float)
    keep = (ns >= lo) & (ns <= hi)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(ns[keep]), np.log(values[keep]), 1)[0])


def chain_costs(X, y, mode, rounds, steps, warm_up, seed=0) -> dict:
    prog = logistic_regression(X, y, PRIOR_VAR)
    kernels = {
        "subsampled": th.subsampled_mh("w", BATCH, EPSILON, th.drift(SD)),
        "exact": th.mh("w", th.drift(SD)),
    }
    states = {}
    for name, k in kernels.items():
        rng = np.random.default_rng(seed)
        trace = initialize(prog, rng, init={"w": mode})
        for _ in range(warm_up):
            k.step(trace, rng)
        k.stats = type(k.stats)()
        states[name] = (trace, rng)
    per_round = {name: [] for name in kernels}
    for _ in range(rounds):
        for name, k in kernels.items():
            trace, rng = states[name]
            t0 = time.perf_counter()
            for _ in range(steps):
                k.step(trace, rng)
            per_round[name].append((time.perf_counter() - t0) / steps)
    out = {}
    for name, k in kernels.items():
        d = k.stats.as_dict()
        out[name] = {
            "seconds_per_step": statistics.median(per_round[name]),
            "seconds_per_step_rounds": per_round[name],
            "sections_per_step": d.get("sections_per_step", float(len(y))),
            "elements_executed_per_step": d["elements_per_step"],
            "ran_to_N_per_step": d.get("ran_to_N_per_step", 1.0),
            "acceptance_rate": d["acceptance_rate"],
            "steps": d["steps"],
        }
    return out


FIXED_KERNELS = {
    # the default: past max_fraction·N sections, exact MH's decision from one full pass
    "default": lambda theta: th.subsampled_mh("w", BATCH, EPSILON, th.drift(SD)),
    # the sequential test alone, up to all N sections (000 Alg. 2 as written)
    "test_alone": lambda theta: th.subsampled_mh(
        "w", BATCH, EPSILON, th.drift(SD), max_fraction=1.0
    ),
    # the Taylor proxy's remainders (control variates), centred at the largest N's mode
    "taylor_proxy": lambda theta: th.subsampled_mh(
        "w", BATCH, EPSILON, th.drift(SD), proxy="taylor", theta_hat=theta
    ),
}


def fixed_costs(X, y, theta, n_dirs, n_u, kernel="default", seed=0) -> dict:
    """Decisions of subsampled MH on fixed (θ, θ') and many u, all from the same state θ."""
    prog = logistic_regression(X, y, PRIOR_VAR)
    rng = np.random.default_rng(seed)
    trace = initialize(prog, rng, init={"w": theta})
    k = FIXED_KERNELS[kernel](theta)
    if k.proxy is not None:  # the O(N) set-up, once, outside the timing
        loc = locate(trace, ("w",))
        k.decide(trace, rng, [loc], {("w",): theta}, 0.0, 0.0)
    dirs = np.random.default_rng(12345).standard_normal((n_dirs, len(theta)))
    sections, seconds, accepts, exact = [], [], 0, 0
    urng = np.random.default_rng(777)
    log_us = np.log(urng.random((n_dirs, n_u)))
    # the (θ', u) pairs in an order that mixes the directions, as a chain's proposals come:
    # the default kernel's budget adapts to the decisions it has seen (subsampled.Budget)
    order = np.random.default_rng(4242).permutation(n_dirs * n_u)
    for j in order.tolist():
        new, log_u = theta + SD * dirs[j // n_u], float(log_us[j // n_u, j % n_u])
        loc = locate(trace, ("w",))
        t0 = time.perf_counter()
        acc = k.decide(trace, rng, [loc], {("w",): new}, 0.0, log_u)
        seconds.append(time.perf_counter() - t0)
        sections.append(k.last_outcome.n)
        exact += int(k.last_outcome.exact)
        if acc:  # back to θ (a full rescoring, not timed)
            accepts += 1
            Run(trace, rng, targets={("w",): theta}, mode=RESCORE).execute().commit()
    return {
        "sections_per_decision": float(np.mean(sections)),
        "sections_median": float(np.median(sections)),
        "seconds_per_decision": float(np.median(seconds)),
        "seconds_mean": float(np.mean(seconds)),
        "accept_rate": accepts / len(sections),
        "ran_to_N_rate": exact / len(sections),
        "decisions": len(sections),
    }


def plot(res, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = np.array(res["N"], float)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    a = ax[0]
    a.loglog(ns, ns, "k--", lw=1, label="exact MH (all N)")
    a.loglog(ns, res["chain"]["subsampled"]["sections_per_step"], "o-", label="subsampled, chain")
    for name, mark in zip(FIXED_KERNELS, "svD"):
        a.loglog(ns, res["fixed"][name]["sections_per_decision"], mark + "-",
                 label=f"fixed θ, θ': {name}")
    a.set_xlabel("N")
    a.set_ylabel("sections per step")
    s = res["slopes"]
    a.set_title(
        f"sections/step slope: chain {s['chain_sections_1e4_1e6']:.2f}, fixed "
        + ", ".join(f"{s['fixed_' + k + '_sections_1e4_1e6']:.2f}" for k in FIXED_KERNELS),
        fontsize=8,
    )
    a.legend(fontsize=8)
    a = ax[1]
    a.loglog(ns, res["chain"]["exact"]["seconds_per_step"], "k^-", label="exact MH (th.mh)")
    a.loglog(ns, res["chain"]["subsampled"]["seconds_per_step"], "o-", label="subsampled, chain")
    for name, mark in zip(FIXED_KERNELS, "svD"):
        a.loglog(ns, res["fixed"][name]["seconds_per_decision"], mark + "-",
                 label=f"fixed θ, θ': {name}")
    ref = res["chain"]["exact"]["seconds_per_step"][-1] * ns / ns[-1]
    a.loglog(ns, ref, "k:", lw=1, label="linear")
    a.set_xlabel("N")
    a.set_ylabel("seconds per step")
    a.set_title(
        f"seconds/step slope [1e4,1e6]: subsampled {s['chain_seconds_1e4_1e6']:.2f}, "
        f"exact {s['exact_seconds_1e4_1e6']:.2f}",
        fontsize=9,
    )
    a.legend(fontsize=8)
    fig.suptitle(
        "Subsampled MH vs N (000 Fig. 5): logistic regression, 2-feature data, "
        f"ε={EPSILON}, batch {BATCH}, drift sd {SD}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="N up to 1e5, few steps (smoke run)")
    args = ap.parse_args()
    if args.quick:
        ns = [1_000, 10_000, 100_000]
        rounds, steps, warm_up, n_dirs, n_u = 3, 10, 20, 2, 10
    else:
        ns = [1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000]
        rounds, steps, warm_up, n_dirs, n_u = 5, 100, 200, 5, 40
    t_start = time.perf_counter()
    data = {n: two_feature(n, seed=0) for n in ns}
    modes = {n: laplace(*data[n], PRIOR_VAR)[0] for n in ns}
    theta = modes[ns[-1]]
    chain = {"subsampled": {}, "exact": {}}
    fixed = {name: {} for name in FIXED_KERNELS}
    for n in ns:
        X, y = data[n]
        c = chain_costs(X, y, modes[n], rounds, steps, warm_up)
        for name in chain:
            for key, v in c[name].items():
                chain[name].setdefault(key, []).append(v)
        cs, ce = c["subsampled"], c["exact"]
        print(
            f"N={n:>9,}: chain: subsampled {cs['sections_per_step']:9.0f} sections/step "
            f"{cs['seconds_per_step'] * 1e3:8.2f} ms/step (acc {cs['acceptance_rate']:.2f}) | "
            f"exact {ce['seconds_per_step'] * 1e3:7.2f} ms/step (acc {ce['acceptance_rate']:.2f})",
            flush=True,
        )
        for kname in FIXED_KERNELS:
            f = fixed_costs(X, y, theta, n_dirs, n_u, kname)
            for key, v in f.items():
                fixed[kname].setdefault(key, []).append(v)
            print(
                f"    fixed θ,θ' {kname:>12}: {f['sections_per_decision']:9.0f} sections "
                f"{f['seconds_per_decision'] * 1e3:7.2f} ms, exact decisions "
                f"{f['ran_to_N_rate']:.2f}",
                flush=True,
            )
    lo, hi = 1e4, 1e6
    slopes = {
        "chain_sections_1e4_1e6": slope(ns, chain["subsampled"]["sections_per_step"], lo, hi),
        "chain_seconds_1e4_1e6": slope(ns, chain["subsampled"]["seconds_per_step"], lo, hi),
        "chain_seconds_1e5_1e6": slope(ns, chain["subsampled"]["seconds_per_step"], 1e5, hi),
        **{
            f"fixed_{k}_{what}_1e4_1e6": slope(ns, fixed[k][f"{what}_per_decision"], lo, hi)
            for k in FIXED_KERNELS
            for what in ("sections", "seconds")
        },
        "exact_sections_1e4_1e6": 1.0,  # exact MH executes every element (checked below)
        "exact_elements_1e4_1e6": slope(ns, chain["exact"]["elements_executed_per_step"], lo, hi),
        "exact_seconds_1e4_1e6": slope(ns, chain["exact"]["seconds_per_step"], lo, hi),
        "exact_seconds_1e5_1e6": slope(ns, chain["exact"]["seconds_per_step"], 1e5, hi),
    }
    ratio = [
        s / e
        for s, e in zip(chain["subsampled"]["seconds_per_step"], chain["exact"]["seconds_per_step"])
    ]
    e14, e15 = slopes["exact_seconds_1e4_1e6"], slopes["exact_seconds_1e5_1e6"]
    notes = [
        "Slopes are least-squares fits of log(cost) on log(N).",
        f"Exact MH's seconds/step slope: {e14:.2f} over [1e4, 1e6], {e15:.2f} over [1e5, 1e6]. "
        + (
            "Below 1: a fixed per-step overhead (executing the program, bookkeeping) is "
            "comparable to the O(N) vectorized likelihood at small N."
            if e14 < 0.9
            else "Above 1 when the arrays of one step (X is N x 3 float64, and each NumPy "
            "temporary is 8N bytes) outgrow the CPU caches and large temporaries are freshly "
            "mapped: a plain NumPy log-likelihood shows the same jump between 1e5 and 3e5."
            if e14 > 1.1
            else "About 1, as expected of a linear-cost step."
        ),
        "Fixed protocol kernels: 'default' is th.subsampled_mh with its default max_fraction "
        "(past that fraction of N, exact MH's decision from one full pass, counted as N "
        "sections); 'test_alone' is max_fraction=1 (000 Alg. 2 as written); 'taylor_proxy' "
        "tests the Taylor remainders (proxy='taylor', theta_hat = the largest N's mode).",
        "Sections are plate elements whose log-ratio the sequential test used; subsampled MH "
        "executes more elements than that (rescoring stale ones under θ, evaluating chunks "
        "ahead of the test, committing on accept): see elements_executed_per_step.",
        "seconds_ratio_subsampled_over_exact > 1 means subsampled MH is slower per step.",
        "Subsampled MH's acceptance rate in the chain is far above exact MH's at large N (see "
        "acceptance_rate): with a proposal several posterior sd long, nearly every exact "
        "decision is a rejection, so the sequential test's errors are false accepts "
        "(th.diagnostics.check_subsampling reports them as one-sided errors) and the chain "
        "is overdispersed; its costs are those of that chain.",
        "The machine is shared (2 cores): per-step seconds are medians over rounds, the two "
        "kernels alternating.",
    ]
    res = {
        "settings": {
            "model": "logistic_regression(X, y, prior_var=0.1)",
            "data": "two_feature(N, seed=0): classes at ±(1, 1), intercept column",
            "epsilon": EPSILON,
            "batch_size": BATCH,
            "proposal_sd": SD,
            "chain": {
                "start": "posterior mode",
                "warm_up": warm_up,
                "rounds": rounds,
                "steps_per_round": steps,
            },
            "fixed": {"theta": theta.tolist(), "directions": n_dirs, "u_per_direction": n_u},
            "quick": args.quick,
        },
        "N": ns,
        "chain": chain,
        "fixed": fixed,
        "seconds_ratio_subsampled_over_exact": ratio,
        "slopes": slopes,
        "criteria": {
            "protocol": "000 Fig. 5: the same current and proposed values at every N (fixed)",
            "default_seconds_slope_le_0.6": slopes["fixed_default_seconds_1e4_1e6"] <= 0.6,
            "test_alone_sections_slope_le_0.5": (
                slopes["fixed_test_alone_sections_1e4_1e6"] <= 0.5
            ),
            "taylor_proxy_seconds_slope_le_0.3": (
                slopes["fixed_taylor_proxy_seconds_1e4_1e6"] <= 0.3
            ),
            "chain_sections_slope_le_0.5": slopes["chain_sections_1e4_1e6"] <= 0.5,
            "chain_seconds_slope_le_0.6": slopes["chain_seconds_1e4_1e6"] <= 0.6,
            "exact_seconds_slope_1e4_1e6": slopes["exact_seconds_1e4_1e6"],
            "exact_seconds_slope_1e5_1e6": slopes["exact_seconds_1e5_1e6"],
        },
        "notes": notes,
        "wall_seconds": time.perf_counter() - t_start,
    }
    name = "sublinearity_quick" if args.quick else "sublinearity"
    print()
    print("log-log slopes over N in [1e4, 1e6]:")
    print(
        f"  subsampled chain: sections {slopes['chain_sections_1e4_1e6']:.3f}, "
        f"seconds {slopes['chain_seconds_1e4_1e6']:.3f} "
        f"([1e5,1e6]: {slopes['chain_seconds_1e5_1e6']:.3f})"
    )
    for kname in FIXED_KERNELS:
        print(
            f"  fixed θ,θ' {kname}: sections {slopes[f'fixed_{kname}_sections_1e4_1e6']:.3f}, "
            f"seconds {slopes[f'fixed_{kname}_seconds_1e4_1e6']:.3f}"
        )
    print(
        f"  exact MH: elements {slopes['exact_elements_1e4_1e6']:.3f}, seconds "
        f"{slopes['exact_seconds_1e4_1e6']:.3f} ([1e5,1e6]: {slopes['exact_seconds_1e5_1e6']:.3f})"
    )
    print("  seconds per step, subsampled / exact: " + ", ".join(f"{r:.2f}" for r in ratio))
    print("wrote", write(name, res))
    plot(res, RESULTS / f"{name}.png")
    print("wrote", RESULTS / f"{name}.png")


if __name__ == "__main__":
    main()
