"""How much of a step's cost is the model's own code: the floor under an engine that re-runs it.

``constant_factor.py`` compares a step through ``th.infer`` with the same update written by hand,
where the model's code is inlined as arithmetic on Python floats.  An engine that runs the
model as written pays at least what the model's code costs — building its distributions,
drawing and scoring through them, the calls of ``th.sample`` / ``th.observe`` — however little
it does itself.  This script measures that floor for the two chain updates of
``constant_factor.py``: the user's own ``step`` function (taken from the program, not
rewritten) re-executed through the real primitives, with a frame that does nothing but draw
or replay the one value and keep the log-densities, and the kernel's bookkeeping kept in Python
lists (values and per-step log-densities stored, so each step executes the changed step and the
next one only — what a local update of 001 §2 executes):

1. ``th.lmh()`` on the 3-state HMM (T = 18): step t resampled from its prior given the previous
   state, step t + 1 replayed under the new state; the MH ratio of 001 Eq. 4;
2. MH on one step of a Gaussian random walk (T = 1,000), ``th.drift(0.5)``: step t at the
   drifted value, step t + 1 replayed.

Each round times thrifty (``th.infer``, default arguments), the floor and the hand-written update
in turn; reported are seconds per step and the medians over rounds of the ratios floor / hand
(the model code's share of the constant factor) and thrifty / floor (the engine's).

Writes ``benchmarks/results/model_code_floor.json``.
With ``--check-marginals`` it also shows that the floor's LMH is MH: the largest error of its
marginals of the HMM's states after 400,000 steps against forward–backward, beside thrifty's.

Run: ``python benchmarks/model_code_floor.py`` (``--quick``: fewer steps and rounds;
``--check-marginals``: the check above, ~20 s more).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import constant_factor as cf
import thrifty as th
from _common import machine, steady_heap, write
from thrifty import _context
from thrifty.models import hmm as hmm_model
from thrifty.models.hmm import forward_backward

RESAMPLE, REPLAY = 0, 1


class _Capture:
    """A frame that records the chain's step function instead of executing it."""

    def markov(self, name, step, length, init, args):
        self.step, self.T, self.init = step, length, init
        return [None] * length


class _Run:
    """What the primitives read of an execution: its frame."""

    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame


class _Floor:
    """The least a frame can do: draw (``RESAMPLE``) or replay ``value``, and keep the latent
    and observed log-densities of the step."""

    __slots__ = ("lat", "mode", "obs", "rng", "value")

    def sample(self, name, d):
        if self.mode == RESAMPLE:
            self.value = d.sample(self.rng)
        self.lat = d.log_prob(self.value)
        return self.value

    def observe(self, name, d, value):
        self.obs = d.log_prob(value)
        return value


def chain_of(program):
    """(step, T, init) of the program's one markov chain, as the program defines them."""
    cap = _Capture()
    _context.EXECUTIONS.runs.append(_Run(cap))
    try:
        program.fn(*program.args, **program.kwargs)
    finally:
        _context.EXECUTIONS.runs.pop()
    return cap.step, cap.T, cap.init


def floor_chain_mh(program, steps: int, seed: int, drift: float | None,
                   out: dict | None = None) -> float:
    """MH on one uniformly chosen step; ``drift`` None: a draw from its prior (LMH), else a
    Gaussian random walk of that scale.  Seconds per step (``out["draws"]``: the draws)."""
    step, T, init = chain_of(program)
    rng = np.random.default_rng(seed)
    f = _Floor()
    f.rng, f.obs = rng, 0.0
    _context.EXECUTIONS.runs.append(_Run(f))
    try:
        x, lat, obs = [], [], []
        prev = init
        for t in range(T):  # the initial trace: a draw from the prior
            f.mode, f.obs = RESAMPLE, 0.0
            prev = step(t, prev)
            x.append(f.value)
            lat.append(f.lat)
            obs.append(f.obs)
        draws = np.empty((steps, T) if drift is None else (steps, 2))
        t0 = time.perf_counter()
        for s in range(steps):
            t = int(rng.random() * T)
            prev = init if t == 0 else x[t - 1]
            if drift is None:
                f.mode = RESAMPLE
            else:
                f.mode, f.value = REPLAY, x[t] + drift * rng.standard_normal()
            f.obs = 0.0
            state = step(t, prev)
            new, lat_t, obs_t = f.value, f.lat, f.obs
            if drift is None:  # a prior proposal: the step's own density cancels with q
                if new == x[t]:
                    draws[s] = x
                    continue
                log_a = obs_t - obs[t]
            else:
                log_a = lat_t + obs_t - lat[t] - obs[t]
            changed = [(t, new, lat_t, obs_t)]
            u = t + 1
            while u < T and not (state == x[u - 1]):  # the next steps while the state changed
                f.mode, f.value, f.obs = REPLAY, x[u], 0.0
                state = step(u, state)
                log_a += f.lat + f.obs - lat[u] - obs[u]
                changed.append((u, f.value, f.lat, f.obs))
                u += 1
            if log_a >= 0 or math.log(rng.random()) < log_a:
                for u, v, lv, ov in changed:
                    x[u], lat[u], obs[u] = v, lv, ov
            draws[s] = x if drift is None else (t, x[t])
        seconds = (time.perf_counter() - t0) / steps
        if out is not None:
            out["draws"] = draws
        return seconds
    finally:
        _context.EXECUTIONS.runs.pop()


def interleave3(fns: dict, rounds: int) -> dict:
    times = cf.timed_rounds(fns, rounds)
    ratio = {
        "floor_over_hand": [a / b for a, b in zip(times["floor"], times["hand"])],
        "thrifty_over_floor": [a / b for a, b in zip(times["thrifty"], times["floor"])],
        "thrifty_over_hand": [a / b for a, b in zip(times["thrifty"], times["hand"])],
    }
    return {
        **{f"{k}_seconds_per_step": statistics.median(v) for k, v in times.items()},
        **{k: statistics.median(v) for k, v in ratio.items()},
        "rounds": {**times, **ratio},
    }


def check_marginals(steps: int = 400_000, burn_in: int = 20_000) -> dict:
    """The floor's LMH is MH: the largest error of its marginals of the HMM's states against
    forward–backward, beside thrifty's ``th.lmh()`` over the same number of steps."""
    out: dict = {}
    floor_chain_mh(hmm_model(), steps, 0, None, out)
    r = th.infer(hmm_model(), th.lmh(), num_samples=steps - burn_in, burn_in=burn_in, seed=0,
                 progress=False)
    exact = forward_backward()
    err = {}
    for name, d in (("floor", out["draws"][burn_in:]), ("thrifty", np.asarray(r["s.z"])[0])):
        d = d.astype(np.int64)
        marg = np.stack([(d == k).mean(0) for k in range(exact.shape[1])], 1)
        err[name] = float(np.abs(marg - exact).max())
    return {"steps": steps, "burn_in": burn_in, "max_abs_error": err}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    ap.add_argument("--check-marginals", action="store_true",
                    help="also check the floor's LMH against forward-backward (~20 s)")
    args = ap.parse_args()
    steady_heap()
    rounds, steps = cf.schedule(args.quick)
    t_start = time.perf_counter()
    y_walk = cf.walk_data(1000)
    walk = cf.random_walk(y_walk)
    out = {
        "lmh_hmm_T18": interleave3({
            "thrifty": lambda r: cf.lmh_thrifty(steps, r),
            "floor": lambda r: floor_chain_mh(hmm_model(), steps, r, None),
            "hand": lambda r: cf.lmh_hand(steps, r),
        }, rounds),
        "mh_one_chain_step_T1000": interleave3({
            "thrifty": lambda r: cf.chain_thrifty(y_walk, steps, r),
            "floor": lambda r: floor_chain_mh(walk, steps, r, 0.5),
            "hand": lambda r: cf.chain_hand(y_walk, steps, r),
        }, rounds),
    }
    for name, r in out.items():
        print(
            f"{name:>26}: thrifty {r['thrifty_seconds_per_step'] * 1e6:6.1f} µs, model-code "
            f"floor {r['floor_seconds_per_step'] * 1e6:5.1f} µs, by hand "
            f"{r['hand_seconds_per_step'] * 1e6:5.2f} µs; floor/hand {r['floor_over_hand']:.1f}, "
            f"thrifty/floor {r['thrifty_over_floor']:.1f}, thrifty/hand "
            f"{r['thrifty_over_hand']:.1f}",
            flush=True,
        )
    if args.check_marginals:
        out["marginals"] = check_marginals()
        e = out["marginals"]["max_abs_error"]
        print(f"HMM marginals against forward-backward, {out['marginals']['steps']:,} LMH "
              f"steps: floor within {e['floor']:.4f}, thrifty within {e['thrifty']:.4f}")
    res = {
        "machine": machine(),
        "settings": {"rounds": rounds, "steps_per_round": steps, "quick": args.quick,
                     "timing": "wall seconds of th.infer (default recording) / steps"},
        **out,
        "wall_seconds": time.perf_counter() - t_start,
    }
    print("wrote", write("model_code_floor_quick" if args.quick else "model_code_floor", res))


if __name__ == "__main__":
    main()
