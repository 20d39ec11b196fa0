"""Bad inputs that used to fail with messages naming nothing (or the wrong cause) get errors
that name the argument, site or address at fault; ``summary()`` of a program whose structure
varies summarises each site over the draws where it exists.

Each test checks the message (``pytest.raises(..., match=...)``); before the change each of
these was silently accepted, a bare NumPy / Python error, or a misleading hint (a "shape" hint
for a string, "applies to programs with th.markov chains" for a program that has one).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import thrifty as th
from thrifty import dist
from thrifty.errors import ArgumentError, DistributionError, ModelError, SelectionError
from thrifty.models.lds import generate_lds, lds

Y_LDS, C_LDS, _ = generate_lds(T=5, D=2, seed=0)


def _infer(prog, kernel=None, **kw):
    kw.setdefault("num_samples", 5)
    return th.infer(prog, kernel or th.lmh(), seed=0, progress=False, **kw)


@th.model
def normal_mean():
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(mu, 1.0), 0.3)


@th.model
def plate_mean(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


# -- th.smc(fixed=...) ------------------------------------------------------------------------
def test_smc_fixed_with_a_misspelled_key_names_the_missing_choice_and_the_key():
    with pytest.raises(ModelError, match=r"fixed= gives no value for \('q',\).*'qq'.*did you "
                                         r"mean 'q'"):
        th.smc(lds(Y_LDS, C_LDS, 0.1), particles=10, fixed={"omega": 0.4, "qq": 0.1}, seed=0)


def test_smc_fixed_with_an_unknown_key_is_an_error_naming_it():
    with pytest.raises(ModelError, match=r"fixed= names 'bogus'.*not a latent choice outside "
                                         r"the chains.*'omega', 'q'"):
        th.smc(lds(Y_LDS, C_LDS, 0.1), particles=10,
               fixed={"omega": 0.4, "q": 0.1, "bogus": 1.0}, seed=0)
    with pytest.raises(ModelError, match=r"fixed= names 'x\.z'.*not a latent choice outside"):
        th.smc(lds(Y_LDS, C_LDS, 0.1), particles=10,
               fixed={"omega": 0.4, "q": 0.1, "x.z": 1.0}, seed=0)


def test_smc_fixed_on_a_program_without_chains_says_it_has_none():
    with pytest.raises(ModelError, match=r"fixed= applies to programs with th\.markov chains; "
                                         r"this program has none"):
        th.smc(normal_mean(), particles=10, fixed={"mu": 0.1}, seed=0)


# -- a Python `if` in a markov step run over particles -------------------------------------
@th.model
def branching_chain():
    def step(t, prev):
        z = th.sample("z", dist.Normal(prev, 1.0))
        if z > 0:
            th.observe("y", dist.Normal(z, 1.0), 0.5)
        return z

    th.markov("x", step, 5, 0.0)


def test_python_if_in_a_markov_step_under_smc_names_the_step_and_the_fix():
    with pytest.raises(ModelError, match=r"step 0 of chain \('x',\) over 10 particles.*`if`.*"
                                         r"\('x', 0, 'z'\).*np\.where"):
        th.smc(branching_chain(), particles=10, seed=0)


def test_python_if_in_a_markov_step_under_pgibbs_names_the_step():
    with pytest.raises(ModelError, match=r"chain \('x',\) over 10 particles.*`if`.*np\.where"):
        _infer(branching_chain(), th.pgibbs("x", particles=10))


# -- collapsed families: hyperparameters checked at construction ------------------------------
@pytest.mark.parametrize("make, match", [
    (lambda: th.collapsed.BetaBernoulli(np.inf, 1.0), r"BetaBernoulli: a and b must be "
                                                      r"positive and finite, got a=inf"),
    (lambda: th.collapsed.GammaPoisson(1.0, np.inf), r"GammaPoisson: a and b must be "
                                                     r"positive and finite.*b=inf"),
    (lambda: th.collapsed.NormalGamma(mu0=np.inf), r"NormalGamma: mu0 must be finite, got inf"),
    (lambda: th.collapsed.NormalGamma(mu0=np.nan), r"NormalGamma: mu0 must be finite, got nan"),
    (lambda: th.collapsed.NormalGamma(b0=np.inf), r"NormalGamma: kappa0, a0 and b0 must be "
                                                  r"positive and finite"),
])
def test_collapsed_hyperparameters_must_be_finite(make, match):
    with pytest.raises(DistributionError, match=match):
        make()


def test_normal_inverse_wishart_with_a_scale_that_is_not_positive_definite():
    S0 = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    with pytest.raises(DistributionError, match=r"NormalInverseWishart: S0 must be symmetric "
                                                r"positive definite"):
        th.collapsed.NormalInverseWishart(np.zeros(2), 1.0, 4.0, S0)
    with pytest.raises(DistributionError, match=r"NormalInverseWishart: S0 must be symmetric"):
        th.collapsed.NormalInverseWishart(np.zeros(2), 1.0, 4.0, np.array([[1.0, 0.5],
                                                                          [0.0, 1.0]]))
    with pytest.raises(DistributionError, match=r"NormalInverseWishart: m0 must be finite"):
        th.collapsed.NormalInverseWishart(np.array([np.nan, 0.0]), 1.0, 4.0, np.eye(2))


# -- kernels and their arguments ---------------------------------------------------------------
def test_pmmh_on_a_chain_site_says_it_updates_global_choices():
    with pytest.raises(SelectionError, match=r"pmmh: 'x\.z' is a site of the chain \('x',\).*"
                                             r"global.*th\.pgibbs\('x'"):
        _infer(lds(Y_LDS, C_LDS, 0.1), th.pmmh("x.z", particles=10))


def test_drift_with_an_infinite_scale():
    with pytest.raises(ArgumentError, match=r"drift: scale must be positive and finite, got inf"):
        th.drift(np.inf)


def test_subsampled_mh_with_a_fractional_batch_size():
    with pytest.raises(ArgumentError, match=r"subsampled_mh: batch_size must be a positive int, "
                                            r"got 2\.5"):
        th.subsampled_mh("mu", batch_size=2.5)


def test_smc_with_particles_true():
    with pytest.raises(ArgumentError, match=r"smc: particles must be a positive int, got True"):
        th.smc(lds(Y_LDS, C_LDS, 0.1, omega=0.4, q=0.1), particles=True)


def test_predictive_with_a_fractional_num_samples():
    with pytest.raises(ArgumentError, match=r"predictive: num_samples must be a positive int, "
                                            r"got 2\.7"):
        th.predictive(normal_mean(), num_samples=2.7)


def test_predictive_with_a_dict_in_place_of_a_result():
    with pytest.raises(ArgumentError, match=r"predictive: result must be the Result of "
                                            r"th\.infer.*got dict"):
        th.predictive(normal_mean(), {"mu": np.zeros((1, 5))})


# -- values that are not numbers -------------------------------------------------------------
def test_init_value_that_is_not_a_number_names_the_address():
    with pytest.raises(ArgumentError, match=r"init: the value for 'mu' is str 'abc'; initial "
                                            r"values are numbers"):
        _infer(normal_mean(), th.mh("mu", th.drift(0.1)), init={"mu": "abc"})


def test_factor_of_a_string_names_the_factor():
    @th.model
    def m():
        th.sample("mu", dist.Normal(0.0, 1.0))
        th.factor("f", "abc")

    with pytest.raises(ModelError, match=r"th\.factor\('f', \.\.\.\): the log-weight must be a "
                                         r"number or an array of numbers, got str 'abc'"):
        _infer(m())


def test_sampling_beyond_numpys_range_names_the_site():
    @th.model
    def poisson():
        th.sample("k", dist.Poisson(1e20))

    with pytest.raises(DistributionError, match=r"cannot draw \('k',\) from Poisson\(rate=1e\+20"
                                                r"\).*lam value too large") as e:
        _infer(poisson())
    assert "shape" not in str(e.value)

    @th.model
    def binomial():
        th.sample("k", dist.Binomial(2**63 + 10, 0.5))

    with pytest.raises(DistributionError, match=r"cannot draw \('k',\) from Binomial.*"
                                                r"OverflowError"):
        _infer(binomial())

    @th.model
    def in_plate():
        with th.plate("p", 3):
            th.sample("k", dist.Poisson(1e20))

    with pytest.raises(DistributionError, match=r"cannot draw \('p', \*, 'k'\) from Poisson"):
        _infer(in_plate())


# -- data read by position ---------------------------------------------------------------------
def test_dict_data_indexed_by_the_plate_names_the_argument():
    with pytest.raises(ModelError, match=r"plate \('data',\).*argument 'y' is a dict.*read by "
                                         r"position.*array"):
        _infer(plate_mean({0: 1.0, 1: 2.0}), th.mh("mu", th.drift(0.1)))


def test_list_of_strings_as_data_says_what_is_supported():
    with pytest.raises(ModelError, match=r"observation \('data', \*, 'y'\): the observed value "
                                         r"is not numeric \(list of str.*argument 'y' is a list "
                                         r"of str.*numbers"):
        _infer(plate_mean(["a", "b"]), th.mh("mu", th.drift(0.1)))


def test_two_dimensional_data_under_a_scalar_distribution_in_a_plate():
    """``Normal(mu, 1)`` observed at ``y[i]`` with ``y`` of shape (N, 3) inside a plate over N:
    each element's value has shape (3,), the distribution's per-element value shape ().  thrifty
    refuses it, as NumPyro and Pyro refuse a batch shape that does not match the plate (Pyro:
    "Shape mismatch inside plate"): broadcasting would silently make each element three iid
    observations, and a model that means that says so with parameters of shape (n, 3) — which
    is accepted (checked below), as is a vector distribution with event shape (3,)."""
    with pytest.raises(ModelError, match=r"observation \('data', \*, 'y'\): each element's "
                                         r"observed value has shape \(3,\).*Normal.*values of "
                                         r"shape \(\) per element"):
        _infer(plate_mean(np.zeros((4, 3))), th.mh("mu", th.drift(0.1)))

    @th.model
    def explicit(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu * np.ones(y[i].shape), 1.0), y[i])

    y = np.random.default_rng(0).normal(size=(4, 3))
    tr = th.simulate(explicit(y), seed=0, init={"mu": 0.5})
    expected = float(dist.Normal(0.0, 1.0).log_prob(0.5)) + float(
        np.sum(dist.Normal(0.5, 1.0).log_prob(y)))
    assert tr.log_joint() == pytest.approx(expected, rel=1e-12)
    assert _infer(explicit(y), th.mh("mu", th.drift(0.1)))["mu"].shape == (1, 5)


def test_a_plate_too_large_for_memory_names_the_plate():
    @th.model
    def big():
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", 10**12):
            th.observe("y", dist.Normal(mu, 1.0), 0.0)

    with pytest.raises(ModelError, match=r"plate \('data',\) of 1000000000000 elements.*"
                                         r"MemoryError"):
        _infer(big(), th.mh("mu", th.drift(0.1)))


# -- ArviZ conversion ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_result():
    return _infer(normal_mean(), th.mh("mu", th.drift(0.5)), num_samples=20)


def test_to_arviz_coords_must_be_a_dict(small_result):
    with pytest.raises(ArgumentError, match=r"to_arviz: coords must be a dict \{dimension: "
                                            r"values\}, got str 'abc'"):
        small_result.to_arviz(coords="abc")


def test_to_arviz_dims_of_an_unknown_variable(small_result):
    with pytest.raises(ArgumentError, match=r"to_arviz: dims names 'nope', not a variable.*mu"):
        small_result.to_arviz(dims={"nope": ["a"]})
    with pytest.raises(ArgumentError, match=r"to_arviz: dims\['mu'\] must be a list of "
                                            r"dimension names, got str"):
        small_result.to_arviz(dims={"mu": "feature"})


def test_to_arviz_coords_of_an_unknown_dimension(small_result):
    with pytest.raises(ArgumentError, match=r"to_arviz: coords names the dimension 'school', "
                                            r"which no variable has"):
        small_result.to_arviz(coords={"school": [0, 1]})


def test_to_arviz_dims_and_coords_of_another_size_are_named():
    """dims giving a scalar two dimension names were cut to none silently, and coords of
    the wrong length raised xarray's CoordinateValidationError naming no argument."""
    @th.model
    def m():
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("data", 3) as i:
            th.observe("y", dist.Normal(mu, 1.0), np.zeros(3)[i])

    r = _infer(m(), th.mh("mu", th.drift(0.5)), num_samples=5)
    with pytest.raises(ArgumentError, match=r"dims\['mu'\] names 2 dimensions, but the "
                                            r"values of 'mu' have 0 axes"):
        r.to_arviz(dims={"mu": ["a", "b"]})
    with pytest.raises(ArgumentError, match=r"coords\['data'\] has 2 values, but the "
                                            r"dimension 'data' has 3 \(in 'data\.y'\)"):
        r.to_arviz(coords={"data": ["a", "b"]})
    data = r.to_arviz(coords={"data": ["a", "b", "c"]})
    assert list(data["observed_data"]["data"].values) == ["a", "b", "c"]


def test_to_arviz_var_names_unknown(small_result):
    with pytest.raises(SelectionError, match=r"no variable 'nope' in the result; variables: mu"):
        small_result.to_arviz(var_names=["nope"])


# -- summary of a program whose structure varies -----------------------------------------------
@th.model
def two_branches():
    k = th.sample("k", dist.Bernoulli(0.5))
    if k:
        th.sample("a", dist.Normal(3.0, 1.0))
    else:
        th.sample("b", dist.Normal(-3.0, 1.0))
    w = th.mem("w", lambda key: dist.Normal(10.0 * key, 1.0))
    w(int(k))


def test_summary_of_sites_present_in_some_draws_uses_those_draws_and_says_so():
    r = th.infer(two_branches(), th.lmh(), num_samples=300, chains=2, seed=1, progress=False)
    frac_a = float(np.mean(~np.isnan(r["a"])))
    assert 0.2 < frac_a < 0.8
    with pytest.warns(UserWarning, match=r"exist in some draws only.*'a' \(\d+% of draws\).*"
                                         r"'b' \(\d+%.*'w\[0\]'"):
        s = r.summary()
    for name in ("a", "b"):
        assert np.isfinite(s.loc[name]).all(), s.loc[name]
        assert s.loc[name, "mean"] == pytest.approx(np.nanmean(r[name]), rel=1e-12)
        assert s.loc[name, "sd"] == pytest.approx(np.nanstd(r[name], ddof=1), rel=1e-9)
    w = r["w"]  # (chains, draws, 2 keys)
    for key in (0, 1):
        row = s.loc[f"w[{key}]"]
        assert np.isfinite(row).all(), row
        assert row["mean"] == pytest.approx(np.nanmean(w[:, :, key]), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a site present in every draw: no warning
        assert np.isfinite(r.summary(var_names=["k"]).loc["k"]).all()


def test_summary_note_of_many_varying_sites_names_the_most_present_and_counts_the_rest():
    """A DP mixture's table parameters: hundreds of mem keys, most in a few draws.  The note
    names the 8 present in the most draws and counts the others; the warning's ``sites``
    lists every one."""
    from thrifty.runtime.summary import SHOWN, VaryingStructureWarning, partial_note

    partial = [(f"mu[{k}]", 0.5 if k < 3 else 0.01 * (k % 7)) for k in range(300)]
    note = partial_note(partial)
    assert "300 of them" in note and "the other 292 exist in at most 6% of draws" in note
    assert note.count("% of draws)") == SHOWN and "'mu[0]' (50% of draws)" in note
    w = VaryingStructureWarning.of(partial)
    assert len(w.sites) == 300 and str(w) == note
    assert "in the most draws" not in partial_note(partial[:SHOWN])  # few: each one named


def test_a_memoized_function_that_draws_is_named():
    """th.mem's function returns a distribution; one that calls th.sample gets an error naming
    the memoized function, not a repeated address."""

    @th.model
    def m(y):
        mu = th.mem("mu", lambda k: th.sample("mu", dist.Normal(0.0, 1.0)))
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu(0), 1.0), y[i])

    with pytest.raises(ModelError, match=r"th\.mem \('mu',\): its function called th\.sample"):
        th.infer(m(np.zeros(3)), num_samples=5, seed=0, progress=False)


def test_mixture_and_cycle_name_the_entry_that_is_not_a_kernel():
    """``th.mixture([k1, k2])`` (kernels without their probabilities) raised a bare "cannot
    unpack non-iterable MH object"; a NaN probability and ``repeats=2.5`` were accepted."""
    a, b = th.mh("mu", th.drift(0.5)), th.lmh()
    with pytest.raises(ArgumentError, match=r"entry 0 is .*\(probability, kernel\)"):
        th.mixture([a, b])
    with pytest.raises(ArgumentError, match="entry 1 is"):
        th.mixture([(0.5, a), (0.5, "lmh")])
    with pytest.raises(ArgumentError, match="finite"):
        th.mixture([(float("nan"), a), (0.5, b)])
    with pytest.raises(ArgumentError, match="entry 1 is 'lmh'"):
        th.cycle([a, "lmh"])
    with pytest.raises(ArgumentError, match="repeats must be an integer"):
        th.cycle([a, b], repeats=2.5)
    assert th.mixture([(1, a), (np.float64(3.0), b)]).probs.tolist() == [0.25, 0.75]


MU2 = np.array([-1.0, 1.0])


@th.model
def chain_then_choice(y, reads_states):
    def step(t, prev):
        z = th.sample("z", dist.Bernoulli(0.5))
        th.observe("y", dist.Normal(MU2[z], 1.0), y[t])
        return z

    xs = th.markov("s", step, len(y))
    th.sample("theta", dist.Normal(MU2[xs[-1]] if reads_states else 0.0, 1.0))


def test_particle_methods_name_a_choice_after_the_chain():
    """A latent choice after the chain, not in ``fixed=``: th.smc listed "latent choices
    outside it ()", naming none.  One whose parameters read the chain's states (an axis of the
    particles): th.pgibbs said the given value had the wrong shape and to check init= or the
    proposal."""
    y = np.array([0.5, -0.3, 1.1])
    with pytest.raises(ModelError, match=r"latent choice \('theta',\) comes after a markov"):
        th.smc(chain_then_choice(y, False), 10, seed=0)
    assert np.isfinite(th.smc(chain_then_choice(y, False), 10, seed=0,
                              fixed={"theta": 0.2}).log_evidence)
    kernel = th.cycle([th.pgibbs("s", 5), th.mh("theta", th.drift(1.0))])
    with pytest.raises(ModelError, match=r"\('theta',\) outside the chains has parameters with "
                                         "an axis of the 5 particles"):
        _infer(chain_then_choice(y, True), kernel)


@pytest.mark.parametrize("call, key, meant", [
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "draws", "num_samples"),
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "tune", "burn_in"),
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "num_warmup", "burn_in"),
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "random_seed", "seed"),
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "cores", "workers"),
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "num_chain", "chains"),
    (lambda kw: th.infer(normal_mean(), progress=False, **kw), "num_sample", "num_samples"),
    (lambda kw: th.smc(normal_mean(), **kw), "num_particles", "particles"),
    (lambda kw: th.predictive(normal_mean(), **kw), "draws", "num_samples"),
    (lambda kw: th.simulate(normal_mean(), **kw), "rng_key", "seed"),
    (lambda kw: th.nuts("mu", **kw), "target_accept_prob", "target_accept"),
    (lambda kw: th.pgibbs("s", **kw), "num_particles", "particles"),
    (lambda kw: th.hmc("mu", **kw), "num_leapfrog", "num_steps"),
])
def test_another_librarys_argument_name_says_which_it_is_here(call, key, meant):
    """PyMC's draws / tune / random_seed / cores, NumPyro's num_warmup / num_particles, a
    misspelling: the error names the argument given and the one meant (Python's TypeError
    named only the first)."""
    with pytest.raises(ArgumentError, match=rf"no argument named '{key}'; did you mean {meant}="):
        call({key: 2})


def test_an_unknown_argument_lists_the_arguments():
    with pytest.raises(ArgumentError, match=r"no argument named 'zzz' \(its arguments: program, "
                                            r"kernel, num_samples, burn_in"):
        th.infer(normal_mean(), zzz=1)


def test_warnings_of_infer_point_at_the_users_line():
    """A warning raised deep inside th.infer (the convergence check, a kernel's) names the
    line of the user's code that called it, not a line of thrifty."""
    with pytest.warns(th.ConvergenceWarning) as caught:
        th.infer(normal_mean(), th.mh("mu", th.drift(0.01)), num_samples=20, burn_in=0, seed=0,
                 progress=False)
    assert {w.filename for w in caught} == {__file__}
