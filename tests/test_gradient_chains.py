"""Gradient kernels on chains and against Geweke's test (split from test_gradient.py so the two
files run in parallel): NUTS + PGAS and NUTS on a chain's states against a Kalman-likelihood
grid; Geweke's joint-distribution test for NUTS and NUTS-within-cycle, with a negative control
(a missing log-Jacobian).  Thresholds as in stat_helpers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import check_continuous
from test_gradient import _marginal, small
from thrifty import dist
from thrifty.diagnostics import geweke

GEWEKE_N = 10_000  # successive-conditional steps (and prior draws)
GEWEKE_BURN = 1_000  # adapting first (without it NUTS keeps the heuristic's step size at the
# first state, and diverges in 9% of the transitions, under-visiting small sigma: z = -2.1)


@pytest.mark.parametrize("make, n", [(lambda: th.nuts(["mu", "sigma"]), GEWEKE_N),
                                     (lambda: th.cycle([th.hmc("mu", 0.3, 5), th.nuts("sigma")]),
                                      GEWEKE_N // 2)],  # (two transitions per step)
                         ids=["nuts", "hmc-nuts-cycle"])
def test_geweke(make, n):
    g = geweke(small(np.zeros(3)), make(), num_samples=n, seed=41, burn_in=GEWEKE_BURN)
    assert g.min_p > 1e-4, g


def test_geweke_sees_a_missing_jacobian(monkeypatch):
    """Negative control: NUTS on a density without the log-Jacobian of sigma's transform (the
    target is then p(sigma) / sigma in sigma's space) must fail the same test."""
    from thrifty import transforms
    from thrifty.inference.gradient import hmc

    monkeypatch.setattr(transforms.ExpAbove, "log_abs_det_jacobian", lambda self, u: 0.0 * u)
    # (compiled densities are reused by programs of the same model's code and constants; the
    # code of thrifty itself is not part of that key, and this test changes it)
    monkeypatch.setattr(hmc, "_CACHE", {})
    g = geweke(small(np.zeros(3)), th.nuts(["mu", "sigma"]), num_samples=GEWEKE_N, seed=41,
               burn_in=GEWEKE_BURN)
    assert g.min_p < 1e-6, g


@th.model
def funnel(y):
    q = th.sample("q", dist.HalfNormal(1.0))
    with th.plate("g", len(y)) as i:
        x = th.sample("x", dist.Normal(0.0, q))
        th.observe("y", dist.Normal(x, 0.5), y[i])


def test_geweke_reports_the_divergences_of_a_gradient_kernel():
    """A funnel (a scale near 0 with centred choices under it) makes NUTS diverge, and so
    under-visit the neck — a Geweke difference that is not a bug of the kernel's code (pure
    BlackJAX NUTS shows the same on this joint): geweke counts the divergences and says so."""
    with pytest.warns(UserWarning, match=r"geweke: the kernel reported \d+ divergent"):
        g = geweke(funnel(np.zeros(4)), th.nuts(["q", "g.x"]), num_samples=300, seed=0)
    assert g.divergences > 0 and "divergent transitions" in repr(g)


@th.model
def ssm(y):
    a = th.sample("a", dist.Uniform(-1.0, 1.0))
    q = th.sample("q", dist.HalfNormal(1.0))

    def step(t, prev):
        x = th.sample("x", dist.Normal(a * prev, q))
        th.observe("y", dist.Normal(x, 0.5), y[t])
        return x

    th.markov("s", step, len(y), 0.0)


def _kalman_grid(y):
    """Marginal posterior grids of a and q: the Kalman filter's likelihood p(y | a, q) on a
    300 × 300 grid times the prior; ``y`` one series, or rows of independent series sharing a
    and q."""
    A = np.linspace(-0.999, 0.999, 300)
    Q = np.linspace(0.005, 2.5, 300)
    AA, QQ = np.meshgrid(A, Q, indexing="ij")
    ll = np.zeros_like(AA)
    for row in np.atleast_2d(y):
        m, P = np.zeros_like(AA), np.zeros_like(AA)
        for yt in row:
            mp, Pp = AA * m, AA**2 * P + QQ**2
            S = Pp + 0.25
            ll += stats.norm.logpdf(yt, mp, np.sqrt(S))
            K = Pp / S
            m, P = mp + K * (yt - mp), (1 - K) * Pp
    lp = ll + stats.halfnorm.logpdf(QQ)
    w = np.exp(lp - lp.max())
    return {"a": _marginal(A, w.sum(1)), "q": _marginal(Q, w.sum(0))}


def ssm_data(T: int, seed: int) -> np.ndarray:
    """y of the model with a = 0.8, q = 0.6."""
    rng = np.random.default_rng(seed)
    x, prev = np.zeros(T), 0.0
    for t in range(T):
        prev = 0.8 * prev + 0.6 * rng.standard_normal()
        x[t] = prev
    return x + 0.5 * rng.standard_normal(T)


def test_nuts_with_pgas_on_a_state_space_model_matches_the_kalman_grid():
    """th.cycle([th.nuts(parameters), th.pgibbs(states)]): the parameters' marginal posterior
    against the Kalman-likelihood grid (the states integrated out exactly)."""
    y = ssm_data(30, seed=0)
    r = th.infer(ssm(y), th.cycle([th.nuts(["a", "q"]), th.pgibbs("s", particles=10)]),
                 num_samples=1500, burn_in=500, seed=4, progress=False)
    for name, (mean, sd, cdf) in _kalman_grid(y).items():
        check_continuous(r[name], mean, sd, cdf, what=name)


def test_nuts_on_a_chain_s_states_and_its_parameters_matches_the_kalman_grid():
    """One NUTS block of the parameters and every state of the chain (the states' densities
    run step by step in the gradient run) — what th.infer assigns when no kernel is given.
    Two chains: q, the scale of the centred states, mixes slowly, and one chain's ESS
    overstates what 1,000 of its draws know (over 22 seeds, single chains gave |z| up to 3.9
    and KS p down to 6e-5)."""
    y = ssm_data(20, seed=1)
    r = th.infer(ssm(y), chains=2, seed=5, progress=False)  # (1,000 draws after 1,000)
    assert "assigned NUTS to a, q, s.x" in r.notes[0]
    for name, (mean, sd, cdf) in _kalman_grid(y).items():
        check_continuous(r[name], mean, sd, cdf, what=name)
    assert r["s.x"].shape == (2, 1000, 20)
    # NUTS alone: draws computed ahead and recorded with their log-joint, here recomputed
    a, q, x = r["a"], r["q"], r["s.x"]
    prev = np.concatenate([np.zeros(a.shape + (1,)), x[..., :-1]], axis=-1)
    lp = (stats.uniform(-1, 2).logpdf(a) + stats.halfnorm.logpdf(q)
          + stats.norm(a[..., None] * prev, q[..., None]).logpdf(x).sum(-1)
          + stats.norm(x, 0.5).logpdf(y).sum(-1))
    np.testing.assert_allclose(r.sample_stats["lp"], lp, rtol=1e-9)


@th.model
def panel(y):
    """The state-space model above for each row of ``y``: one chain per unit of a plate,
    sharing a and q."""
    a = th.sample("a", dist.Uniform(-1.0, 1.0))
    q = th.sample("q", dist.HalfNormal(1.0))
    with th.plate("unit", y.shape[0]) as i:
        def step(t, prev):
            x = th.sample("x", dist.Normal(a * prev, q))
            th.observe("y", dist.Normal(x, 0.5), y[i, t])
            return x

        th.markov("s", step, y.shape[1], 0.0)


def test_nuts_on_the_states_of_chains_in_a_plate_matches_the_kalman_grid():
    """Chains inside a plate in the gradient run: each step runs over every element at once,
    and the states of all of them join the NUTS block with the parameters — what th.infer
    assigns with no kernel given.  a and q against the Kalman grid of the rows; the recorded
    log-joint recomputed with scipy."""
    y = np.stack([ssm_data(8, seed=s) for s in (2, 3, 4)])
    r = th.infer(panel(y), chains=2, seed=6, progress=False)  # (1,000 draws after 1,000)
    assert "assigned NUTS to a, q, unit.s.x" in r.notes[0]
    for name, (mean, sd, cdf) in _kalman_grid(y).items():
        check_continuous(r[name], mean, sd, cdf, what=name)
    assert r["unit.s.x"].shape == (2, 1000, 3, 8)
    a, q, x = r["a"][..., None, None], r["q"][..., None, None], r["unit.s.x"]
    prev = np.concatenate([np.zeros(x.shape[:-1] + (1,)), x[..., :-1]], axis=-1)
    lp = (stats.uniform(-1, 2).logpdf(r["a"]) + stats.halfnorm.logpdf(r["q"])
          + stats.norm(a * prev, q).logpdf(x).sum((-2, -1))
          + stats.norm(x, 0.5).logpdf(y).sum((-2, -1)))
    np.testing.assert_allclose(r.sample_stats["lp"], lp, rtol=1e-9)


def test_the_gradient_run_of_chains_in_a_plate_reads_the_trace_and_its_simulated_data():
    """With no block, the gradient run's density is the trace's log-joint: every state read
    from the (elements, steps) columns, and the observations Geweke's simulator stores in
    place of the data read from where the batched executor keeps them."""
    from thrifty.core.gradient import GradientRun, other_values
    from thrifty.diagnostics.geweke import _simulate_joint

    y = np.stack([ssm_data(5, seed=s) for s in (2, 3)])
    program = panel(y)
    for trace in (th.simulate(program, seed=0), _simulate_joint(program, np.random.default_rng(1))):
        run = GradientRun(program, {}, other_values(trace, set()), np).execute()
        assert float(run.lp) == pytest.approx(trace.log_joint(), rel=1e-12)


def test_values_computed_in_a_plate_s_chains_are_recorded_with_nuts_alone():
    """A ``th.deterministic`` inside the steps of a chain in a plate: NUTS alone then writes
    the trace at every transition (draws computed ahead would skip the values), so each draw
    records the value its states give."""
    @th.model
    def with_value(y):
        q = th.sample("q", dist.HalfNormal(1.0))
        with th.plate("unit", y.shape[0]) as i:
            def step(t, prev):
                x = th.sample("x", dist.Normal(0.5 * prev, q))
                th.deterministic("m", 2.0 * x)
                th.observe("y", dist.Normal(x, 0.5), y[i, t])
                return x

            th.markov("s", step, y.shape[1], 0.0)

    r = th.infer(with_value(np.zeros((2, 3))), th.nuts(["q", "unit.s.x"]), num_samples=50,
                 burn_in=50, seed=0, progress=False)
    np.testing.assert_allclose(r["unit.s.m"], 2.0 * r["unit.s.x"], rtol=1e-12)


def test_a_chain_inside_a_step_is_refused_naming_its_address():
    @th.model
    def m():
        def outer(t, prev):
            def inner(s, p):
                return th.sample("v", dist.Normal(0.0, 1.0))

            th.markov("inner", inner, 2)
            return th.sample("x", dist.Normal(prev, 1.0))

        th.markov("s", outer, 2, 0.0)

    with pytest.raises(th.errors.ModelError,
                       match=r"markov chain \('s', 0, 'inner'\): a chain inside a markov step"):
        th.infer(m(), th.nuts("s.x"), num_samples=5, burn_in=5, seed=0, progress=False)
