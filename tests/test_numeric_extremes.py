"""Families and kernels at numerical extremes: exact answers where the parameters are valid,
errors naming the site or argument where they are not (never a silent NaN, ±inf or another
answer).

* Logits of a categorical family around 1e16 and beyond: equal logits give equal
  probabilities whatever their size (the reference is exact: log 1/K), a +inf logit the limit
  of softmax, a row of -inf logits an error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.errors import (
    ArgumentError,
    DistributionError,
    InitializationError,
    ModelError,
    NumericalError,
    RecordingError,
    SelectionError,
)

# short chains on purpose: what is checked is the values drawn, not their mixing
pytestmark = pytest.mark.filterwarnings("ignore::thrifty.ConvergenceWarning")


@pytest.mark.parametrize("size", [0.0, 1e3, 1e15, 1e16, 1e300, -1e300])
def test_equal_logits_are_equally_likely_whatever_their_size(size):
    lg = np.full(3, size)
    cat = dist.Categorical(logits=lg)
    assert np.allclose(cat.probs, 1 / 3, rtol=1e-15, atol=0)
    assert cat.log_prob(2) == pytest.approx(-math.log(3), rel=1e-15)
    multi = dist.Multinomial(4, logits=lg)
    assert multi.log_prob(np.array([4, 0, 0])) == pytest.approx(-4 * math.log(3), rel=1e-14)
    # through a program: the draws of k are uniform (they were all 0 at 1e16)
    @th.model
    def m():
        th.sample("k", dist.Categorical(logits=lg))

    k = th.infer(m(), th.mh("k", th.prior()), num_samples=600, seed=0, progress=False)["k"]
    counts = np.bincount(k.ravel(), minlength=3)
    chi2 = float(((counts - 200.0) ** 2 / 200.0).sum())
    assert chi2 < 18.4  # chi-square with 2 degrees of freedom: p = 1e-4


def test_infinite_logits_are_the_limit_of_softmax_and_minus_inf_rows_are_refused():
    assert dist.Categorical(logits=np.array([np.inf, 0.0])).probs.tolist() == [1.0, 0.0]
    assert dist.Categorical(logits=np.array([np.inf, np.inf, 1.0])).probs.tolist() == [
        0.5, 0.5, 0.0]
    for make in (lambda lg: dist.Categorical(logits=lg), lambda lg: dist.Multinomial(2, logits=lg)):
        with pytest.raises(DistributionError, match="entry above -inf in each row"):
            make(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))


def test_draws_past_what_float64_and_int64_hold_are_refused_naming_the_site():
    """Geometric(p ≲ 1e-18): NumPy returns int64's largest for a count beyond it (at p = 1e-19
    for 40% of the draws), which th.infer kept as draws; Uniform(-1e308, 1e308): its width
    overflows, every draw was inf and every log-density -inf."""
    def program(make):
        @th.model
        def m():
            th.sample("x", make())
            th.observe("y", dist.Normal(0.0, 1.0), 0.0)

        return m()

    with pytest.raises(DistributionError, match=r"cannot draw \('x',\) from Geometric"):
        th.infer(program(lambda: dist.Geometric(1e-19)), th.lmh(), num_samples=50, seed=0,
                 progress=False)
    with pytest.raises(DistributionError, match="high - low must be a finite float64"):
        dist.Uniform(-1e308, 1e308)
    with pytest.raises(DistributionError, match=r"\('x',\).*high - low must be a finite"):
        th.infer(program(lambda: dist.Uniform(-1e308, 1e308)), th.lmh(), num_samples=5, seed=0,
                 progress=False)
    # just below: exact, and draws of tiny success probabilities within int64 are kept
    assert dist.Uniform(-8e307, 8e307).log_prob(0.0) == pytest.approx(-math.log(1.6e308))
    r = th.infer(program(lambda: dist.Geometric(1e-17)), th.mh("x", th.prior()), num_samples=20,
                 seed=0, progress=False)
    assert (r["x"] < np.iinfo(np.int64).max - 1).all()


def test_simulate_refuses_an_initial_value_outside_the_support_and_an_overflowed_draw():
    """th.simulate with init= outside the support returned an empty trace (no values, output
    None, log-joint 0.0); a draw past float64's largest (Normal(0, 1e308) at seed 3: inf, of
    density 0) was returned as a value.  Both are errors naming the site now."""
    from thrifty.errors import InitializationError

    def program(make):
        @th.model
        def m():
            x = th.sample("x", make())
            th.observe("y", dist.Normal(0.0, 1.0), 0.5)
            return x

        return m()

    for bad in (-1.0, np.inf, np.nan):
        with pytest.raises(InitializationError, match=r"initial value .* \('x',\) is outside"):
            th.simulate(program(lambda: dist.Exponential(1.0)), seed=0, init={"x": bad})
    with pytest.raises(DistributionError, match="the draw of 'x' is inf"):
        th.simulate(program(lambda: dist.Normal(0.0, 1e308)), seed=3)

    @th.model
    def in_plate():
        with th.plate("d", 50):
            th.sample("z", dist.Exponential(1e-320))

    with pytest.raises(DistributionError, match=r"the draw of 'd\.z' is inf in an entry"):
        th.simulate(in_plate(), seed=0)
    t = th.simulate(program(lambda: dist.Exponential(1.0)), seed=0, init={"x": 2.0})
    assert t.output == 2.0 and math.isfinite(t.log_joint())


def test_gibbs_over_many_values_is_exact_in_bounded_memory_and_refuses_too_many():
    """A top-level Gibbs step kept the run of every value of the support: O(K²) memory for a
    Categorical of K values (8000 values: 640 MB; 10⁵: the process killed).  The chosen value's
    run is now executed again past 64 values; a support beyond 2^20 values is a SelectionError
    (DiscreteUniform(0, 2**62) was a bare NumPy 'array is too big', also for th.infer's
    default kernel, which now counts the support and gives it LMH)."""
    import tracemalloc

    def program(K):
        @th.model
        def m():
            k = th.sample("k", dist.Categorical(np.full(K, 1.0 / K)))
            th.observe("y", dist.Normal(k / K, 0.1), 0.5)

        return m()

    th.infer(program(10), th.gibbs("k"), num_samples=1, seed=0, progress=False)  # (imports)
    tracemalloc.start()
    th.infer(program(3000), th.gibbs("k"), num_samples=1, seed=0, progress=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 20e6  # (72 MB of probability vectors when every run was kept)
    # exact: the draws are independent draws of the full conditional; chi-square on 8 bins
    K, n = 80, 800
    k = th.infer(program(K), th.gibbs("k"), num_samples=n, seed=1, progress=False)["k"].ravel()
    w = np.exp(-((np.arange(K) / K - 0.5) ** 2) / 0.02)
    edges = np.arange(0, K + 1, K // 8)
    expected = n * np.add.reduceat(w / w.sum(), edges[:-1])
    observed = np.histogram(k, bins=edges)[0]
    assert float(((observed - expected) ** 2 / expected).sum()) < 29.9  # chi2(7): p = 1e-4

    @th.model
    def huge():
        k = th.sample("k", dist.DiscreteUniform(0, 2**62))
        th.observe("y", dist.Normal(k / 2**62, 0.1), 0.5)

    with pytest.raises(SelectionError, match=r"\('k',\).*4611686018427387905 values"):
        th.infer(huge(), th.gibbs("k"), num_samples=1, seed=0, progress=False)
    r = th.infer(huge(), num_samples=2, burn_in=0, seed=0, progress=False)
    assert "LMH to k" in r.notes[0]


def test_a_chain_no_particle_can_explain_is_an_initialization_error_for_every_kernel():
    """y = 5 under Uniform(x, x + 1) with x in (0, 1): impossible whatever the particles.
    th.infer's default kernel tried PGAS on a prior trace (impossible too) and stopped with a
    bare FloatingPointError from the ancestor draw; th.smc names the step."""
    y = np.array([0.5, 0.5, 5.0, 0.5])

    @th.model
    def m():
        def step(t, prev):
            shape = np.shape(prev)
            x = th.sample("x", dist.Uniform(np.zeros(shape), np.ones(shape)))
            th.observe("y", dist.Uniform(x, x + 1.0), y[t])
            return x

        th.markov("c", step, len(y), 0.0)

    for kernel in (None, th.pgibbs("c", particles=5)):
        with pytest.raises(InitializationError, match=r"\('c', 2, 'y'\)"):
            th.infer(m(), kernel, num_samples=2, seed=0, progress=False)
    with pytest.raises(NumericalError, match=r"\('c', 2\)"):
        th.smc(m(), particles=10, seed=0)


def test_an_initialization_error_names_the_kind_of_site_that_is_impossible():
    """Draws whose value leaves float64 (Exponential(1e-320): inf, of density 0) and factors of
    -inf were reported as 'the observation at address ...'."""
    @th.model
    def drawn():
        th.sample("x", dist.Exponential(1e-320))

    @th.model
    def factored():
        x = th.sample("x", dist.Normal(0.0, 1.0))
        th.factor("f", -np.inf if x < 10 else 0.0)

    with pytest.raises(InitializationError,
                       match=r"latent choice at address \('x',\) impossible \(value inf"):
        th.infer(drawn(), th.lmh(), num_samples=2, seed=0, progress=False)
    with pytest.raises(InitializationError, match=r"factor at address \('f',\) impossible"):
        th.infer(factored(), th.lmh(), num_samples=2, seed=0, progress=False)


def _coin():
    @th.model
    def m():
        x = th.sample("x", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(x, 1.0), 0.3)

    return m()


@pytest.mark.parametrize("call, names", [
    (lambda: th.infer(_coin(), th.lmh(), seed=-1), "infer: seed"),
    (lambda: th.infer(_coin(), th.lmh(), seed=1.5), "infer: seed"),
    (lambda: th.infer(_coin(), th.lmh(), checkpoint_every=float("nan")), "checkpoint_every"),
    (lambda: th.infer(_coin(), th.lmh(), dense_bytes=-1), "dense_bytes"),
    (lambda: th.infer(_coin(), th.lmh(), check="bogus"), "check"),
    (lambda: th.infer(_coin(), th.lmh(), init=5), "init"),
    (lambda: th.infer(_coin(), th.lmh(), chains=1, init=[{}, {}]), "init"),
    (lambda: th.infer(_coin(), th.lmh(), record="zz"), "record='zz'"),
    (lambda: th.infer(_coin(), "lmh"), "kernel"),
    (lambda: th.predictive(_coin(), num_samples=3, seed=-1), "predictive: seed"),
    (lambda: th.predictive(_coin(), num_samples=3, seed="a"), "predictive: seed"),
    (lambda: th.predictive(th.infer(_coin(), th.lmh(), num_samples=3, progress=False)),
     "predictive: the first argument is the program"),
    (lambda: th.hmc("x", step_size=0.0), "step_size"),
    (lambda: th.hmc("x", num_steps=0), "num_steps"),
    (lambda: th.adaptive_lmh(exploration=-1.0), "exploration"),
    (lambda: th.smh("x", order=3), "order"),
    (lambda: th.pgibbs("c", particles=3, resample="systematic"), "resample"),
    (lambda: th.pgibbs("c", particles=3, ancestor_sampling="no"), "ancestor_sampling"),
    (lambda: th.pmmh("x", particles=3, proposal="abc"), "proposal"),
    (lambda: th.mh("x", "abc"), "proposal"),
    (lambda: th.ordered_range("c", 3, 1), "ordered_range"),
])
def test_invalid_arguments_are_argument_errors_naming_them(call, names):
    """These raised bare ValueError / TypeError (or NumPy's own 'expected non-negative
    integer' for the predictive's seed); an ArgumentError is both."""
    with pytest.raises(ArgumentError, match=names):
        call()


def test_a_result_without_variables_or_a_name_says_so_as_thrifty_errors():
    """summary() of a result that holds no variable (exclude= every one) was ArviZ's bare
    'Can not extract posterior'; an unknown name of a result, a predictive or an SMC result a
    bare KeyError; summary() of one draw a bare ValueError."""
    r = th.infer(_coin(), th.lmh(), num_samples=3, exclude="x", seed=0, progress=False)
    with pytest.raises(RecordingError, match="no variable to show"):
        r.summary()
    r = th.infer(_coin(), th.lmh(), num_samples=1, seed=0, progress=False)
    with pytest.raises(RecordingError, match="at least 2 draws"):
        r.summary()
    with pytest.raises(SelectionError, match="no variable 'zz'"):
        r["zz"]
    with pytest.raises(SelectionError, match="no observation 'zz'"):
        th.predictive(_coin(), num_samples=2, seed=0)["zz"]


def test_the_command_line_refuses_bad_flags_as_usage_errors(tmp_path):
    """``thrifty demo --seed -1`` and ``--out`` naming a file ended in bare tracebacks
    (th.infer's seed check, FileExistsError from mkdir) after the demo had started."""
    from click.testing import CliRunner

    from thrifty.cli import main

    a_file = tmp_path / "f"
    a_file.write_text("")
    for args, flag in ((["demo", "--seed", "-1"], "'--seed'"),
                       (["demo", "--out", str(a_file), "--quick"], "'--out'"),
                       (["demo", "--out", str(a_file / "x"), "--quick"], "'--out'")):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2 and flag in res.output, (args, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit)


def test_an_initial_value_for_an_observation_is_refused():
    """init={"y": 0.1} for the observed y was met by the run reaching y and then ignored: the
    chain started from the prior, as if init= had not been given."""
    with pytest.raises(SelectionError, match=r"init: \('y',\) is an observation"):
        th.infer(_coin(), th.lmh(), init={"y": 0.1}, num_samples=2, seed=0, progress=False)
    r = th.infer(_coin(), th.lmh(), init={"x": 0.1}, num_samples=2, seed=0, progress=False)
    assert r["x"].shape == (1, 2)


def test_a_pandas_value_observed_in_a_plate_is_refused_and_at_the_top_level_read_in_order():
    """A Series the model's code reads from outside its arguments (which are converted, read
    by position): y[i] with the plate's index array reads it by label.  With labels 2, 1, 0 a
    one-element MH chain gave E[z_0] = 3.86, the element at label 0 (position 2) having the
    count 50 — while whole-plate runs (a slice) read by position; Normal's log-density of a
    Series was a ModelError 'shape mismatch ... output array is read-only'."""
    pd = pytest.importorskip("pandas")
    y = pd.Series([0, 0, 50], index=[2, 1, 0])

    @th.model
    def in_plate():
        with th.plate("data", 3) as i:
            z = th.sample("z", dist.Normal(np.zeros(np.arange(3)[i].shape), 2.0))
            th.observe("y", dist.Poisson(np.exp(z)), y[i])

    with pytest.raises(ModelError, match=r"th.observe\('y', ...\) in plate \('data',\).*label"):
        th.infer(in_plate(), th.mh(th.one("data.z"), th.drift(0.5)), num_samples=5, seed=0,
                 progress=False)
    ys = pd.Series([0.1, 0.2, 5.0], index=[2, 1, 0])

    def top(data):
        @th.model
        def m():
            mu = th.sample("mu", dist.Normal(0.0, 1.0))
            th.observe("y", dist.Normal(np.full(3, mu), 1.0), data)

        return m()

    a = th.infer(top(ys.to_numpy()), th.lmh(), num_samples=30, seed=0, progress=False)["mu"]
    b = th.infer(top(ys), th.lmh(), num_samples=30, seed=0, progress=False)["mu"]
    assert np.array_equal(a, b)


def test_smc_on_a_chain_of_no_steps_says_so():
    """The message blamed 'latent choices outside it ()' — none."""
    @th.model
    def m():
        def step(t, prev):
            return th.sample("x", dist.Normal(prev, 1.0))

        th.markov("c", step, 0, 0.0)

    with pytest.raises(ModelError, match="'c' has 0 steps"):
        th.smc(m(), particles=5, seed=0)


def test_summary_of_values_around_1e300_and_1e_minus_300():
    """ArviZ's variance of draws around 1e300 overflows and of draws around 1e-300 underflows:
    summary() gave sd = inf and MCSE NaN for the first, sd = 0 (silently) for the second.
    Reference: NumPy's sd of the draws divided by their scale (ddof = 1, as ArviZ)."""
    @th.model
    def m():
        th.sample("v", dist.Normal(np.array([1e300, 1.0, 1e-300]), np.array([1e300, 1.0, 1e-300])))

    r = th.infer(m(), th.mh("v", th.prior()), num_samples=200, chains=2, seed=0, workers=1,
                 progress=False)
    table = r.summary()
    v = r["v"].reshape(-1, 3)
    scale = np.array([1e300, 1.0, 1e-300])
    sd = (v / scale).std(axis=0, ddof=1) * scale
    assert np.allclose(table["sd"].to_numpy(), sd, rtol=1e-10, atol=0)
    assert np.allclose(table["mean"].to_numpy(), v.mean(axis=0), rtol=1e-12, atol=0)
    assert np.isfinite(table.to_numpy(dtype=float)).all()
