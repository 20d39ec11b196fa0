"""Work scaling: a local update executes a number of plate elements / markov steps that does
not depend on the size of the plate / chain (issue requirement).

Work is read from the kernels' own counters (``kernel.stats.elements`` and
``kernel.stats.chain_steps``, per step), never from wall-clock time.  Kernels are stepped
directly on a trace (``initialize`` + ``kernel.step``) so every step's work is visible.

Negative controls: kernels whose steps genuinely touch every element / step (a Gibbs sweep of
the whole plate, a move of a parameter that precedes the chain) show work that grows with the
size — the counters do see O(N) work when it happens.
"""

from __future__ import annotations

import numpy as np
import pytest

import thrifty as th
from stat_helpers import run, stats_of
from thrifty import dist
from thrifty.core.simulate import initialize

MEANS = np.array([-1.0, 2.0])
SIZES = (1_000, 100_000)
STEPS = 200


@th.model
def mixture(y, with_global=True):
    """Two classes with known means; optionally a global shift mu that every element reads."""
    mu = th.sample("mu", dist.Normal(0.0, 0.1)) if with_global else 0.0
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.3))
        th.observe("y", dist.Normal(MEANS[z] + mu, 1.0), y[i])


def mixture_data(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.3
    return MEANS[z.astype(int)] + rng.standard_normal(n)


def per_step_work(program, kernel, steps=STEPS, seed=0, counter="elements"):
    """Work counter increments of ``kernel`` over ``steps`` steps (one entry per step)."""
    rng = np.random.default_rng(seed)
    trace = initialize(program, rng)
    out = []
    for _ in range(steps):
        before = getattr(kernel.stats, counter)
        trace = kernel.step(trace, rng)
        out.append(getattr(kernel.stats, counter) - before)
    assert kernel.stats.steps == steps
    return np.array(out)


# (kernel factory, model has a global mu, most elements one step may execute)
PLATE_KERNELS = {
    # two enumeration runs (z = 0, 1) of one element, plus one to commit a changed value
    "gibbs-one": (lambda: th.gibbs(th.one("data.z")), True, 3),
    # one run of one element; an accepted run is committed as it is
    "mh-one": (lambda: th.mh(th.one("data.z")), True, 1),
    # LMH restricted to the plate-local choices
    "lmh-selected": (lambda: th.lmh("data.z"), True, 1),
    # plain LMH on a program whose only choices are plate-local
    "lmh": (lambda: th.lmh(), False, 1),
}


@pytest.mark.parametrize("name", list(PLATE_KERNELS))
def test_plate_local_update_work_is_constant(name):
    make, with_global, bound = PLATE_KERNELS[name]
    work = {n: per_step_work(mixture(mixture_data(n), with_global), make(), seed=1) for n in SIZES}
    small, large = work[SIZES[0]], work[SIZES[1]]
    # the same (small) work per step at N = 10^3 and N = 10^5
    assert small.max() == large.max() <= bound, (small.max(), large.max())
    assert small.min() == large.min() >= 1
    assert set(np.unique(small)) == set(np.unique(large))
    # and on average: elements per step within the bound whatever N
    assert small.mean() <= bound and large.mean() <= bound


def test_plate_work_reported_by_infer():
    """``Result.stats`` reports the same elements_per_step at both sizes: one — the run of
    the other value, committed when it is drawn (the current value's density is stored)."""
    eps = []
    for n in SIZES:
        r = run(mixture(mixture_data(n)), th.gibbs(th.one("data.z")), 10, burn_in=200, seed=2)
        s = stats_of(r, "gibbs")
        assert s["steps"] == 10 and s["burn_in"]["steps"] == 200
        eps += [s["elements_per_step"], s["burn_in"]["elements_per_step"]]
    assert all(e == 1.0 for e in eps), eps


def test_negative_control_full_plate_sweep_scales():
    """A Gibbs sweep over every element, or LMH picking the global mu, executes O(N)."""
    for n in SIZES:
        y = mixture_data(n)
        sweep = per_step_work(mixture(y), th.gibbs("data.z"), steps=3)
        assert sweep.min() >= 2 * n  # one vectorized run per support value, all N elements
        glob = per_step_work(mixture(y), th.mh("mu", th.drift(0.01)), steps=3)
        assert glob.min() == n


# -- markov chains -------------------------------------------------------------------------------
TRANS = np.array([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
LENGTHS = (20, 2000)


@th.model
def chain(ys, with_global=False):
    """An HMM; optionally a global shift mu read by every step (it precedes the chain)."""
    mu = th.sample("mu", dist.Normal(0.0, 0.1)) if with_global else 0.0

    def step(t, prev):
        z = th.sample("z", dist.Categorical(np.full(3, 1 / 3) if t == 0 else TRANS[prev]))
        th.observe("y", dist.Normal(MEANS.tolist()[z % 2] + mu, 1.0), ys[t])
        return z

    return th.markov("s", step, len(ys))


def chain_data(T, seed=0):
    return np.random.default_rng(seed).standard_normal(T)


# (kernel factory, most markov steps one kernel step may execute): changing z_t re-executes
# step t and step t + 1 (whose transition reads z_t), so ≤ 2 steps per run; LMH and MH do one
# run per step, Gibbs one per alternative value (3 values − the current one; the chosen run is
# committed as it is).
CHAIN_KERNELS = {
    "lmh": (lambda: th.lmh(), 2),
    "gibbs-one": (lambda: th.gibbs(th.one("s")), 4),
    "mh-one": (lambda: th.mh(th.one("s")), 2),
}


@pytest.mark.parametrize("name", list(CHAIN_KERNELS))
def test_markov_local_update_work_is_constant(name):
    make, bound = CHAIN_KERNELS[name]
    work = {
        T: per_step_work(chain(chain_data(T)), make(), seed=3, counter="chain_steps")
        for T in LENGTHS
    }
    small, large = work[LENGTHS[0]], work[LENGTHS[1]]
    assert small.max() <= bound and large.max() <= bound, (small.max(), large.max())
    assert small.max() == large.max()
    # the mean work does not grow with T (it can only differ by the end effect at t = T − 1,
    # where there is no step t + 1 to re-execute)
    assert large.mean() <= small.mean() * 1.25 + 0.1, (small.mean(), large.mean())


def test_negative_control_global_move_reexecutes_the_chain():
    """Moving mu, which every step reads, re-executes all T steps: the counter sees O(T)."""
    for T in LENGTHS:
        work = per_step_work(
            chain(chain_data(T), with_global=True),
            th.mh("mu", th.drift(0.01)),
            steps=3,
            counter="chain_steps",
        )
        assert work.min() == T
