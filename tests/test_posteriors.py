"""Conjugate and enumerable posteriors: every kernel that applies must sample the exact answer.

Checks (see tests/stat_helpers.py for the machinery and thresholds):

* continuous: |z| < 4.5 for the posterior mean (SE = exact sd / sqrt(ESS)) and KS p > 1e-4
  against the exact posterior CDF on draws thinned to ≈ independence;
* discrete: per-value z-tests of the probabilities (SE from the ESS of the indicator) under a
  Bonferroni threshold at family-wise level 1e-5, and a chi-square p > 1e-4;
* discrete, a kernel whose step has few paths: its exact transition matrix, built from its own
  runs with every draw scripted (tests/exact_kernel.py), πP = π to 1e-10 and P irreducible.

Negative controls: the same draws checked against a slightly wrong posterior must fail, and an
MH kernel that ignores the proposal densities q (prior proposals) must be caught.

Positive-constrained parameters moved by ``th.drift`` are written with a guard (``_pos``/
``_unit``) in the downstream distributions: a proposal outside the support has prior density 0
and is rejected whatever the guard returns, so the posterior is unchanged.  Without the guard
the engine raises (see ``test_drift_outside_support_is_rejected``, an expected failure).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from stat_helpers import (
    P_MIN,
    Z_MAX,
    BrokenMH,
    check_continuous,
    check_discrete,
    chisq_p,
    discrete_posterior,
    element_probs_z,
    ks_p,
    mean_z,
    run,
    z_threshold,
)
from thrifty import dist


def _pos(x):
    """Guard for a positive parameter a drift proposal may push below 0 (see module doc)."""
    return np.maximum(x, 1e-9)


def _unit(x):
    """Guard for a probability a drift proposal may push outside [0, 1] (see module doc)."""
    return np.clip(x, 0.0, 1.0)


# =============================================================================================
# Normal–normal, known variance
# =============================================================================================
NN_M0, NN_S0, NN_SIGMA = 0.5, 1.0, 1.0
NN_Y = np.array([1.2, 0.3, 2.1, 1.7])


@th.model
def normal_normal(y, m0=NN_M0, s0=NN_S0, sigma=NN_SIGMA):
    mu = th.sample("mu", dist.Normal(m0, s0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, sigma), y[i])
    return mu


def nn_posterior(y=NN_Y, m0=NN_M0, s0=NN_S0, sigma=NN_SIGMA, prior_power=1.0):
    """Exact posterior (mean, sd) of mu.  ``prior_power`` = 2 is the stationary law of an MH
    kernel that forgets the q terms of prior proposals: p(mu)^2 L(mu)."""
    prec = prior_power / s0**2 + len(y) / sigma**2
    mean = (prior_power * m0 / s0**2 + y.sum() / sigma**2) / prec
    return mean, prec**-0.5


NN_KERNELS = {
    "mh-drift": lambda: th.mh("mu", th.drift(0.8)),
    "mh-prior": lambda: th.mh("mu", th.prior()),
    "lmh": lambda: th.lmh(),
}


@pytest.fixture(scope="module")
def nn_draws():
    return {
        name: run(normal_normal(NN_Y), make(), 20000, burn_in=1000, seed=11)["mu"]
        for name, make in NN_KERNELS.items()
    }


@pytest.mark.parametrize("kernel", list(NN_KERNELS))
def test_normal_normal(nn_draws, kernel):
    mean, sd = nn_posterior()
    check_continuous(
        nn_draws[kernel], mean, sd, stats.norm(mean, sd).cdf, f"normal-normal {kernel}"
    )


@pytest.mark.parametrize("kernel", list(NN_KERNELS))
def test_normal_normal_negative_control(nn_draws, kernel):
    """The same draws against a posterior off by 0.25 sd (mean) / 25 % (sd) must fail."""
    mean, sd = nn_posterior()
    x = nn_draws[kernel]
    assert abs(mean_z(x, mean + 0.25 * sd, sd)) > Z_MAX
    assert ks_p(x, stats.norm(mean, 1.25 * sd).cdf) < P_MIN


def test_mh_ignoring_q_terms_is_detected():
    """Negative control on the kernel: prior proposals accepted with p(x', y) / p(x, y) only
    target p(mu)^2 L(mu).  The checks reject it against the true posterior and accept it
    against the law it really samples (so the difference is the q terms, nothing else)."""
    x = run(normal_normal(NN_Y), BrokenMH("mu", th.prior()), 20000, burn_in=1000, seed=11)["mu"]
    mean, sd = nn_posterior()
    assert abs(mean_z(x, mean, sd)) > Z_MAX
    wrong_mean, wrong_sd = nn_posterior(prior_power=2.0)
    check_continuous(x, wrong_mean, wrong_sd, stats.norm(wrong_mean, wrong_sd).cdf, "broken")


# =============================================================================================
# Beta–Bernoulli
# =============================================================================================
BB_A, BB_B = 2.0, 3.0
BB_FLIPS = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1])


@th.model
def beta_bernoulli(flips, a=BB_A, b=BB_B):
    p = th.sample("p", dist.Beta(a, b))
    with th.plate("flips", len(flips)) as i:
        th.observe("y", dist.Bernoulli(probs=_unit(p)), flips[i])
    return p


BB_KERNELS = {
    "mh-drift": lambda: th.mh("p", th.drift(0.2)),
    "mh-prior": lambda: th.mh("p", th.prior()),
    "lmh": lambda: th.lmh(),
}


@pytest.fixture(scope="module")
def bb_draws():
    return {
        name: run(beta_bernoulli(BB_FLIPS), make(), 20000, burn_in=1000, seed=12)["p"]
        for name, make in BB_KERNELS.items()
    }


def bb_posterior():
    k = BB_FLIPS.sum()
    return stats.beta(BB_A + k, BB_B + len(BB_FLIPS) - k)


@pytest.mark.parametrize("kernel", list(BB_KERNELS))
def test_beta_bernoulli(bb_draws, kernel):
    post = bb_posterior()
    check_continuous(bb_draws[kernel], post.mean(), post.std(), post.cdf, f"beta-bern {kernel}")


def test_beta_bernoulli_negative_control(bb_draws):
    """Against Beta(a + k + 1, b + n − k) (one success too many) the checks fail."""
    post = bb_posterior()
    k = BB_FLIPS.sum()
    wrong = stats.beta(BB_A + k + 1, BB_B + len(BB_FLIPS) - k)
    for x in bb_draws.values():
        assert abs(mean_z(x, wrong.mean(), post.std())) > Z_MAX
        assert ks_p(x, wrong.cdf) < P_MIN


# =============================================================================================
# Gamma–Poisson
# =============================================================================================
GP_ALPHA, GP_BETA = 3.0, 2.0  # shape, rate
GP_COUNTS = np.array([2, 4, 1, 3, 2, 5])


@th.model
def gamma_poisson(counts, alpha=GP_ALPHA, beta=GP_BETA):
    lam = th.sample("lam", dist.Gamma(alpha, beta))
    with th.plate("data", len(counts)) as i:
        th.observe("y", dist.Poisson(_pos(lam)), counts[i])
    return lam


GP_KERNELS = {
    "mh-drift": lambda: th.mh("lam", th.drift(0.6)),
    "mh-prior": lambda: th.mh("lam", th.prior()),
    "lmh": lambda: th.lmh(),
}


def gp_posterior(extra_rate=0.0):
    return stats.gamma(
        GP_ALPHA + GP_COUNTS.sum(), scale=1.0 / (GP_BETA + len(GP_COUNTS) + extra_rate)
    )


@pytest.fixture(scope="module")
def gp_draws():
    return {
        name: run(gamma_poisson(GP_COUNTS), make(), 20000, burn_in=1000, seed=13)["lam"]
        for name, make in GP_KERNELS.items()
    }


@pytest.mark.parametrize("kernel", list(GP_KERNELS))
def test_gamma_poisson(gp_draws, kernel):
    post = gp_posterior()
    check_continuous(gp_draws[kernel], post.mean(), post.std(), post.cdf, f"gamma-pois {kernel}")


def test_gamma_poisson_negative_control(gp_draws):
    """Against the posterior with rate β + n + 1 (one observation too many) the checks fail."""
    post, wrong = gp_posterior(), gp_posterior(extra_rate=1.0)
    for x in gp_draws.values():
        assert abs(mean_z(x, wrong.mean(), post.std())) > Z_MAX
        assert ks_p(x, wrong.cdf) < P_MIN


# =============================================================================================
# Normal with unknown mean and variance (Normal–InverseGamma)
# =============================================================================================
NIG_M0, NIG_K0, NIG_A0, NIG_B0 = 0.0, 1.0, 3.0, 2.0
NIG_Y = np.array([0.8, 1.9, 1.1, 2.5, 1.4])


@th.model
def normal_inverse_gamma(y, m0=NIG_M0, k0=NIG_K0, a0=NIG_A0, b0=NIG_B0, guard=True):
    s2 = th.sample("sigma2", dist.InverseGamma(a0, b0))
    s2g = _pos(s2) if guard else s2
    mu = th.sample("mu", dist.Normal(m0, np.sqrt(s2g / k0)))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, np.sqrt(s2g)), y[i])
    return mu, s2


def nig_posterior(y=NIG_Y, m0=NIG_M0, k0=NIG_K0, a0=NIG_A0, b0=NIG_B0, forget_mean_term=False):
    """Exact marginals: sigma2 ~ InvGamma(a_n, b_n), mu ~ t_{2 a_n}(m_n, sqrt(b_n/(a_n k_n))).
    ``forget_mean_term`` drops k0 n (ybar − m0)² / (2 k_n) from b_n (a classic slip)."""
    n, ybar = len(y), y.mean()
    kn = k0 + n
    mn = (k0 * m0 + n * ybar) / kn
    an = a0 + n / 2
    bn = b0 + 0.5 * np.sum((y - ybar) ** 2)
    if not forget_mean_term:
        bn += k0 * n * (ybar - m0) ** 2 / (2 * kn)
    mu = stats.t(2 * an, loc=mn, scale=np.sqrt(bn / (an * kn)))
    s2 = stats.invgamma(an, scale=bn)
    return mu, s2


NIG_KERNELS = {
    "cycle-drift": lambda: th.cycle([th.mh("mu", th.drift(0.6)), th.mh("sigma2", th.drift(0.6))]),
    "block-drift": lambda: th.mh(["mu", "sigma2"], th.drift(0.35)),
    "cycle-prior": lambda: th.cycle([th.mh("mu", th.prior()), th.mh("sigma2", th.prior())]),
    "lmh": lambda: th.lmh(),
}


@pytest.fixture(scope="module")
def nig_draws():
    out = {}
    for name, make in NIG_KERNELS.items():
        r = run(normal_inverse_gamma(NIG_Y), make(), 25000, burn_in=1000, seed=14)
        out[name] = (r["mu"], r["sigma2"])
    return out


@pytest.mark.parametrize("kernel", list(NIG_KERNELS))
def test_normal_inverse_gamma(nig_draws, kernel):
    mu_post, s2_post = nig_posterior()
    mu, s2 = nig_draws[kernel]
    check_continuous(mu, mu_post.mean(), mu_post.std(), mu_post.cdf, f"NIG mu {kernel}")
    check_continuous(s2, s2_post.mean(), s2_post.std(), s2_post.cdf, f"NIG sigma2 {kernel}")


def test_normal_inverse_gamma_negative_control(nig_draws):
    """sigma2 against the posterior that forgets the prior-mean term of b_n must fail."""
    _, s2_post = nig_posterior()
    _, wrong = nig_posterior(forget_mean_term=True)
    for _, s2 in nig_draws.values():
        assert abs(mean_z(s2, wrong.mean(), s2_post.std())) > Z_MAX
        assert ks_p(s2, wrong.cdf) < P_MIN


@pytest.mark.filterwarnings("ignore:invalid value encountered in sqrt:RuntimeWarning")
def test_drift_outside_support_is_rejected():
    """The natural model, without the guard: sigma2 ≤ 0 has prior density 0, so the proposal
    is rejected (the run stops at the impossible value instead of executing on with it)."""
    _, s2_post = nig_posterior()
    kernel = th.cycle([th.mh("mu", th.drift(0.6)), th.mh("sigma2", th.drift(0.6))])
    r = run(normal_inverse_gamma(NIG_Y, guard=False), kernel, 5000, burn_in=500, seed=14)
    check_continuous(r["sigma2"], s2_post.mean(), s2_post.std(), s2_post.cdf, "unguarded")


# =============================================================================================
# Discrete latents: a two-component mixture with known means (one Bernoulli per element)
# =============================================================================================
MIX_W, MIX_MEANS = 0.3, np.array([-1.0, 2.0])
MIX_Y = np.array([-0.5, 0.2, 0.5, 0.9, 1.3, 2.0])


@th.model
def mixture2(y, w=MIX_W, means=MIX_MEANS):
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=w))
        th.observe("y", dist.Normal(means[z], 1.0), y[i])


def mix_p1(w=MIX_W, y=MIX_Y):
    """Exact P(z_i = 1 | y_i): the elements are independent a posteriori."""
    l1 = np.log(w) + stats.norm.logpdf(y, MIX_MEANS[1], 1.0)
    l0 = np.log1p(-w) + stats.norm.logpdf(y, MIX_MEANS[0], 1.0)
    return np.exp(l1 - np.logaddexp(l0, l1))


# (kernel, steps): each step of gibbs / mh on "data.z" updates all 6 elements.
MIX_KERNELS = {
    "gibbs": (lambda: th.gibbs("data.z"), 6000),
    "mh-elementwise": (lambda: th.mh("data.z"), 8000),
}
# Kernels that update one element per step: their exact transition matrices on the 2^6 states
# (tests/exact_kernel.py), which the chains above cannot match in power.
MIX_ONE_KERNELS = {
    "gibbs-one": lambda: th.gibbs(th.one("data.z")),
    "mh-one": lambda: th.mh(th.one("data.z")),
    "lmh": lambda: th.lmh(),
}


@pytest.fixture(scope="module")
def mix_draws():
    return {
        name: run(mixture2(MIX_Y), make(), n, burn_in=200, seed=15)["data.z"]
        for name, (make, n) in MIX_KERNELS.items()
    }


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(MIX_KERNELS))
def test_mixture_elementwise_posterior(mix_draws, kernel):
    """Per element: |z| of P(z_i = 1) below the Bonferroni threshold for 6 tests."""
    z = mix_draws[kernel]
    assert z.shape[-1] == len(MIX_Y)
    zs = element_probs_z(z, mix_p1())
    thr = z_threshold(len(MIX_Y))
    assert np.max(np.abs(zs)) < thr, f"{kernel}: z = {np.round(zs, 2)} (threshold {thr:.2f})"


@pytest.mark.slow
def test_mixture_negative_control(mix_draws):
    """Against the answer for a mixture weight of 0.4 instead of 0.3 every kernel fails."""
    wrong = mix_p1(w=0.4)
    thr = z_threshold(len(MIX_Y))
    for name, z in mix_draws.items():
        zs = element_probs_z(z, wrong)
        assert np.max(np.abs(zs)) > thr, f"{name}: negative control passed, z = {zs}"


@pytest.mark.parametrize("kernel", list(MIX_ONE_KERNELS))
def test_mixture_one_element_kernels_leave_the_posterior_invariant(kernel):
    """The exact transition matrix of one step on the 64 labellings, built from the kernel's
    own runs with every draw scripted: πP = π to 1e-10, P irreducible, and every path's
    trace equal to a full execution's; negative control: the posterior for a mixture weight
    of 0.4 is moved (by ≈ 0.01)."""
    from exact_kernel import all_draws, assert_stationary, transition_matrix

    states = list(itertools.product((0, 1), repeat=len(MIX_Y)))

    def posterior(w):
        p1 = mix_p1(w)
        return np.array([np.prod(np.where(np.array(s) == 1, p1, 1.0 - p1)) for s in states])

    P = transition_matrix(mixture2(MIX_Y), MIX_ONE_KERNELS[kernel](), states,
                          lambda s: {"data.z": np.array(s)},
                          lambda t: tuple(int(v) for v in t.values()["data.z"]),
                          draws=all_draws, check=True)
    assert_stationary(posterior(MIX_W), P)
    wrong = posterior(0.4)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-3


# =============================================================================================
# Discrete latents: one Categorical choice, observations in a plate
# =============================================================================================
CAT_P = np.array([0.2, 0.5, 0.3])
CAT_MEANS = np.array([-1.0, 0.0, 1.5])
CAT_Y = np.array([0.9, 1.6, -0.2])


@th.model
def categorical_means(y, probs=CAT_P, means=CAT_MEANS, sd=1.0):
    k = th.sample("k", dist.Categorical(probs))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(means[k], sd), y[i])
    return k


def cat_posterior(sd=1.0) -> dict:
    lw = np.log(CAT_P) + stats.norm.logpdf(CAT_Y[:, None], CAT_MEANS, sd).sum(axis=0)
    return discrete_posterior(dict(enumerate(lw)))


CAT_KERNELS = {  # (gibbs: its exact transition matrix, in test_exact_kernels.py)
    "mh-prior": lambda: th.mh("k", th.prior()),
    "lmh": lambda: th.lmh(),
}


@pytest.mark.parametrize("kernel", list(CAT_KERNELS))
def test_categorical(kernel):
    """One Categorical choice (three states): the exact transition matrix of a step
    (tests/exact_kernel.py: the prior draw and the accept test scripted), πP = π to 1e-10 and
    P irreducible; negative control: the posterior for observation sd 1.2 is moved."""
    from exact_kernel import assert_stationary, lmh_draws, mh_draws, transition_matrix

    states = [0, 1, 2]
    pi = np.array([cat_posterior()[k] for k in states])
    wrong = np.array([cat_posterior(sd=1.2)[k] for k in states])
    P = transition_matrix(categorical_means(CAT_Y), CAT_KERNELS[kernel](), states,
                          lambda k: {"k": k}, lambda t: int(t["k"]),
                          draws=mh_draws if kernel == "mh-prior" else lmh_draws, check=True)
    assert_stationary(pi, P)
    assert np.max(np.abs(wrong @ P - wrong)) > 1e-3


@th.model
def categorical_labels(y):
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Categorical(CAT_P))
        th.observe("y", dist.Normal(CAT_MEANS[z], 1.0), y[i])


def test_one_element_gibbs_over_three_values():
    """``th.gibbs(th.one(...))`` on a label of three values: the values are scored in lanes of
    one execution and the drawn one committed by a second run; the pair of labels (nine
    cells) against the exact posterior, and against the posterior of sd 1.2 (negative
    control: must fail)."""
    y = CAT_Y[:2]
    lw = np.log(CAT_P) + stats.norm.logpdf(y[:, None], CAT_MEANS, 1.0)
    pz = np.exp(lw - np.logaddexp.reduce(lw, axis=1, keepdims=True))
    exact = {3 * a + b: pz[0, a] * pz[1, b] for a in range(3) for b in range(3)}
    z = run(categorical_labels(y), th.gibbs(th.one("data.z")), 6000, burn_in=100,
            seed=3)["data.z"]
    pair = 3 * z[..., 0] + z[..., 1]
    check_discrete(pair, exact, "one-element gibbs, three values")
    lw2 = np.log(CAT_P) + stats.norm.logpdf(y[:, None], CAT_MEANS, 1.2)
    pz2 = np.exp(lw2 - np.logaddexp.reduce(lw2, axis=1, keepdims=True))
    wrong = {3 * a + b: pz2[0, a] * pz2[1, b] for a in range(3) for b in range(3)}
    assert chisq_p(pair, wrong) < P_MIN
