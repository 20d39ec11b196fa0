"""What one step costs through ``th.infer`` against the same update written by hand.

The engine's cost in the *size* of the data is measured elsewhere (``engine_scaling.py``); this
is its constant factor.  Each update is run through ``th.infer`` with default arguments and
default recording (wall time of the whole call over its steps), and written by hand in plain
Python/NumPy — the same update, the same proposal, with the state kept in arrays — timed in the
same process, the two alternating round by round.  Reported: seconds per step of each and the
median over rounds of their ratio.

1. one-element Gibbs on a two-class mixture's labels (z_i ~ Bernoulli(1/2),
   y_i ~ N(2 z_i − 1, 1)), N = 10⁵: ``th.gibbs(th.one("data.z"))``; by hand: pick i, the two
   log-weights of z_i, a Gumbel-max draw;
2. ``th.lmh()`` on the 3-state HMM of paper 001 §5 (T = 18): pick one of the 18 states, propose
   it from its prior given the previous state, accept by the MH ratio of the next transition
   and the emission (the single-site MH of 001 §2);
3. MH on one step of a Gaussian random-walk chain (x_t ~ N(x_{t−1}, 1), y_t ~ N(x_t, 1),
   T = 1,000): ``th.mh(th.one("x.z"), th.drift(0.5))``; by hand: pick t, x_t' = x_t + 0.5 ε,
   the ratio of the two transitions and the emission;
4. one PGAS sweep (paper 003 §4.4) on the LDS of 003 §5 (``thrifty.models.lds``, T = 100,
   D = 4, r = 0.5, ω and q at the truth), N = 10 particles: ``th.pgibbs("x", 10)``; by hand,
   the same algorithm in NumPy over the (N, 2) particle array: bootstrap proposals with the
   reference in slot 0, multinomial resampling of the N − 1 others at every step, the
   reference's ancestor drawn ∝ w_{t−1}^l · N(x_t^ref; A x_{t−1}^l, q I), the new reference
   traced back from a draw of the final weights.  Per step: sweep seconds / T are not used —
   the row reports seconds per sweep.

Writes ``benchmarks/results/constant_factor.json``.
Run: ``python benchmarks/constant_factor.py`` (``--quick``: fewer steps and rounds).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import thrifty as th
from _common import machine, steady_heap, write
from thrifty import dist
from thrifty.models import hmm as hmm_model
from thrifty.models.hmm import INITIAL, MEANS, OBSERVATIONS, TRANSITIONS
from thrifty.models.lds import X0, generate_lds, lds, rotation


# -- 1. one-element Gibbs on a mixture's labels ----------------------------------------------------
@th.model
def mixture(y):
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.5))
        th.observe("y", dist.Normal(2.0 * z - 1.0, 1.0), y[i])


def mixture_data(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.normal(size=n) + np.where(rng.random(n) < 0.5, 1.0, -1.0)


def gibbs_thrifty(y, steps: int, seed: int) -> float:
    t0 = time.perf_counter()
    th.infer(mixture(y), th.gibbs(th.one("data.z")), num_samples=steps, seed=seed,
             progress=False)
    return (time.perf_counter() - t0) / steps


def gibbs_hand(y, steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    n = len(y)
    z = (rng.random(n) < 0.5).astype(np.int64)
    draws = np.empty(steps, dtype=np.int64)
    t0 = time.perf_counter()
    idx = rng.integers(n, size=steps).tolist()  # the random numbers of every step, drawn at once
    gumbel = (-np.log(-np.log(rng.random((steps, 2))))).tolist()
    for s in range(steps):
        i = idx[s]
        yi = float(y[i])
        lw0 = -0.5 * (yi + 1.0) ** 2  # z = 0: mean −1 (the prior 1/2 cancels)
        lw1 = -0.5 * (yi - 1.0) ** 2
        g0, g1 = gumbel[s]
        z[i] = int(lw1 + g1 > lw0 + g0)
        draws[s] = z[i]
    return (time.perf_counter() - t0) / steps


# -- 2. LMH on the HMM ----------------------------------------------------------------------------
def lmh_thrifty(steps: int, seed: int) -> float:
    t0 = time.perf_counter()
    th.infer(hmm_model(), th.lmh(), num_samples=steps, seed=seed, progress=False)
    return (time.perf_counter() - t0) / steps


def lmh_hand(steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    T, K = len(OBSERVATIONS) + 2, len(INITIAL)
    logA = np.log(TRANSITIONS).tolist()
    cum_a = np.cumsum(TRANSITIONS, axis=1).tolist()
    cum_0 = np.cumsum(INITIAL).tolist()
    means, ys = MEANS.tolist(), OBSERVATIONS.tolist()
    z = [int(k) for k in rng.integers(0, K, size=T)]
    draws = np.empty((steps, T), dtype=np.int64)

    def emit(t, k):
        return -0.5 * (ys[t - 1] - means[k]) ** 2 if 1 <= t <= len(ys) else 0.0

    def draw(cum, u):
        for k, c in enumerate(cum):
            if u < c:
                return k
        return len(cum) - 1

    t0 = time.perf_counter()
    ts = rng.integers(T, size=steps).tolist()
    us = rng.random((steps, 2)).tolist()
    for s in range(steps):
        t = ts[s]
        u_new, u_acc = us[s]
        new = draw(cum_0 if t == 0 else cum_a[z[t - 1]], u_new)  # the prior given the past
        old = z[t]
        log_a = emit(t, new) - emit(t, old)
        if t + 1 < T:
            log_a += logA[new][z[t + 1]] - logA[old][z[t + 1]]
        if log_a >= 0 or math.log(u_acc) < log_a:
            z[t] = new
        draws[s] = z
    return (time.perf_counter() - t0) / steps


# -- 3. MH on one step of a random-walk chain -----------------------------------------------------
@th.model
def random_walk(y):
    def step(t, prev):
        x = th.sample("z", dist.Normal(0.0 if t == 0 else prev, 1.0))
        th.observe("y", dist.Normal(x, 1.0), y[t])
        return x

    th.markov("x", step, len(y))


def walk_data(T: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.cumsum(rng.normal(size=T)) + rng.normal(size=T)


def chain_thrifty(y, steps: int, seed: int) -> float:
    t0 = time.perf_counter()
    th.infer(random_walk(y), th.mh(th.one("x.z"), th.drift(0.5)), num_samples=steps, seed=seed,
             progress=False)
    return (time.perf_counter() - t0) / steps


def chain_hand(y, steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    T = len(y)
    x = (np.cumsum(rng.normal(size=T))).tolist()
    ys = y.tolist()
    draws = np.empty((steps, 2))

    def local(t, v):  # log-density terms that contain x_t = v
        prev = 0.0 if t == 0 else x[t - 1]
        lp = -0.5 * (v - prev) ** 2 - 0.5 * (ys[t] - v) ** 2
        if t + 1 < T:
            lp += -0.5 * (x[t + 1] - v) ** 2
        return lp

    t0 = time.perf_counter()
    ts = rng.integers(T, size=steps).tolist()
    eps = rng.standard_normal(steps).tolist()
    log_us = np.log(rng.random(steps)).tolist()
    for s in range(steps):
        t = ts[s]
        old = x[t]
        new = old + 0.5 * eps[s]
        log_a = local(t, new) - local(t, old)
        if log_a >= 0 or log_us[s] < log_a:
            x[t] = new
        draws[s] = (t, x[t])
    return (time.perf_counter() - t0) / steps


# -- 4. one PGAS sweep on the LDS ------------------------------------------------------------------
LDS_T, LDS_D, LDS_R, LDS_Q, PGAS_N = 100, 4, 0.5, 0.1, 10


def lds_data():
    y, C, _ = generate_lds(T=LDS_T, D=LDS_D, r=LDS_R, q=LDS_Q, seed=0)
    return y, C


def pgas_thrifty(data, sweeps: int, seed: int) -> float:
    y, C = data
    program = lds(y, C, LDS_R, omega=4 * np.pi / LDS_T, q=LDS_Q)
    t0 = time.perf_counter()
    th.infer(program, th.pgibbs("x", PGAS_N), num_samples=sweeps, seed=seed, progress=False)
    return (time.perf_counter() - t0) / sweeps


def pgas_hand(data, sweeps: int, seed: int) -> float:
    y, C = data
    rng = np.random.default_rng(seed)
    T, N = len(y), PGAS_N
    A, sq = rotation(4 * np.pi / T), math.sqrt(LDS_Q)
    At, Ct = A.T, C.T
    x_ref = np.zeros((T, 2))
    draws = np.empty((sweeps, T, 2))
    t0 = time.perf_counter()
    for s in range(sweeps):
        X = np.empty((T, N, 2))
        anc = np.empty((T, N), dtype=np.int64)
        X[0] = X0 @ At + sq * rng.standard_normal((N, 2))
        X[0, 0] = x_ref[0]
        resid = y[0] - X[0] @ Ct
        logw = -0.5 * (resid * resid).sum(axis=1) / LDS_R
        for t in range(1, T):
            w = np.exp(logw - logw.max())
            w /= w.sum()
            a = np.minimum(np.searchsorted(np.cumsum(w), rng.random(N)), N - 1)
            mean = X[t - 1] @ At  # ancestor sampling: w_{t-1}^l · p(x_t^ref | x_{t-1}^l)
            d = x_ref[t] - mean
            la = logw - 0.5 * (d * d).sum(axis=1) / LDS_Q
            wa = np.exp(la - la.max())
            a[0] = min(int(np.searchsorted(np.cumsum(wa), rng.random() * wa.sum())), N - 1)
            anc[t] = a
            X[t] = mean[a] + sq * rng.standard_normal((N, 2))
            X[t, 0] = x_ref[t]
            resid = y[t] - X[t] @ Ct
            logw = -0.5 * (resid * resid).sum(axis=1) / LDS_R
        w = np.exp(logw - logw.max())
        k = min(int(np.searchsorted(np.cumsum(w), rng.random() * w.sum())), N - 1)
        for t in range(T - 1, -1, -1):  # trace the drawn particle back
            x_ref[t] = X[t, k]
            k = anc[t, k] if t else k
        draws[s] = x_ref
    return (time.perf_counter() - t0) / sweeps


def schedule(quick: bool) -> tuple[int, int]:
    """(rounds, steps per round) of the timed updates."""
    return (3, 2000) if quick else (7, 10_000)


def timed_rounds(fns: dict, rounds: int) -> dict:
    """name → its seconds per step in each round, the functions (of the round) taking turns."""
    times: dict = {k: [] for k in fns}
    for r in range(rounds):
        for k, fn in fns.items():
            times[k].append(fn(r))
    return times


def interleave(a, b, rounds: int) -> dict:
    t = timed_rounds({"a": a, "b": b}, rounds)
    ta, tb = t["a"], t["b"]
    ratios = [x / y for x, y in zip(ta, tb)]
    return {
        "thrifty_seconds_per_step": statistics.median(ta),
        "hand_seconds_per_step": statistics.median(tb),
        "ratio": statistics.median(ratios),
        "ratio_rounds": ratios,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    args = ap.parse_args()
    steady_heap()
    rounds, steps = schedule(args.quick)
    t_start = time.perf_counter()
    sweeps = 50 if args.quick else 200
    y_mix, y_walk, lds_xy = mixture_data(100_000), walk_data(1000), lds_data()
    out = {
        "gibbs_one_element_mixture_N1e5": interleave(
            lambda r: gibbs_thrifty(y_mix, steps, r), lambda r: gibbs_hand(y_mix, steps, r),
            rounds,
        ),
        "lmh_hmm_T18": interleave(
            lambda r: lmh_thrifty(steps, r), lambda r: lmh_hand(steps, r), rounds
        ),
        "mh_one_chain_step_T1000": interleave(
            lambda r: chain_thrifty(y_walk, steps, r), lambda r: chain_hand(y_walk, steps, r),
            rounds,
        ),
        "pgas_sweep_lds_T100_N10": interleave(
            lambda r: pgas_thrifty(lds_xy, sweeps, r), lambda r: pgas_hand(lds_xy, sweeps, r),
            rounds,
        ),
    }
    for name, r in out.items():
        unit = "sweep" if name.startswith("pgas") else "step"
        print(
            f"{name:>34}: thrifty {r['thrifty_seconds_per_step'] * 1e6:8.1f} µs/{unit}, by hand "
            f"{r['hand_seconds_per_step'] * 1e6:7.2f} µs/{unit}, ratio {r['ratio']:.1f}",
            flush=True,
        )
    res = {
        "machine": machine(),
        "settings": {"rounds": rounds, "steps_per_round": steps, "quick": args.quick,
                     "pgas_sweeps_per_round": sweeps,
                     "timing": "wall seconds of th.infer (default recording) / steps"},
        **out,
        "wall_seconds": time.perf_counter() - t_start,
    }
    print("wrote", write("constant_factor_quick" if args.quick else "constant_factor", res))


if __name__ == "__main__":
    main()
