"""Gradient kernels (th.nuts, th.hmc; JAX + BlackJAX) against exact answers, through th.infer.

* eight schools (non-centred) against a grid posterior of (mu, tau) with the school effects
  integrated out exactly (y_j ~ N(mu, s_j² + tau²));
* a conjugate model per transform: unconstrained (Normal–Normal), positive (Gamma–Poisson),
  unit interval (Beta–Binomial), interval with bounds that depend on another choice of the block
  (Uniform(0, b)), simplex (a Dirichlet prior);
* NUTS inside th.cycle with Gibbs on discrete labels (a two-component mixture, exact by
  enumeration of the labels);
* (Geweke's test and the chains: test_gradient_chains.py)
* errors: NumPy-only model code, a discrete choice selected, a NumPy-only family, a coupled
  process; sample_stats under ArviZ's names; the same seed gives the same draws.

Thresholds as in stat_helpers: |z| < Z_MAX (4.5) per mean, KS p > P_MIN (1e-4) on draws
thinned to ≈ independence, Geweke min p > 1e-4 (Bonferroni over its test functions).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import thrifty as th
from shared_models import small  # (run by spawned workers: a module light to import)
from stat_helpers import P_MIN, Z_MAX, check_continuous, ks_p, mean_z
from thrifty import dist
from thrifty.errors import DistributionError, ModelError, NotDifferentiable, SelectionError

Y8 = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
S8 = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])


@th.model
def schools(y, sd):
    mu = th.sample("mu", dist.Normal(0.0, 5.0))
    tau = th.sample("tau", dist.HalfCauchy(5.0))
    with th.plate("school", len(y)) as i:
        eta = th.sample("eta", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu + tau * eta, sd[i]), y[i])


def _marginal(grid, p):
    """(mean, sd, cdf) of a posterior marginal on a grid with probabilities ``p``."""
    p = p / p.sum()
    mean = float((grid * p).sum())
    sd = float(np.sqrt(((grid - mean) ** 2 * p).sum()))
    cdf = np.cumsum(p)
    return mean, sd, lambda x: np.interp(x, grid, cdf)


def _schools_grid():
    """Marginal posterior grids of mu and tau (eta integrated out): (mu grid, p(mu) cdf,
    tau grid, p(tau) cdf, means, sds)."""
    mu = np.linspace(-40.0, 50.0, 1201)
    logtau = np.linspace(-12.0, 6.5, 1501)
    tau = np.exp(logtau)
    M, T = np.meshgrid(mu, tau, indexing="ij")
    var = S8[None, None, :] ** 2 + T[..., None] ** 2
    ll = (-0.5 * ((Y8 - M[..., None]) ** 2) / var - 0.5 * np.log(var)).sum(-1)
    lp = ll + stats.norm(0, 5).logpdf(M) + stats.halfcauchy(scale=5).logpdf(T) + np.log(T)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    return {"mu": _marginal(mu, w.sum(1)), "tau": _marginal(tau, w.sum(0))}


def test_eight_schools_matches_the_grid_posterior():
    r = th.infer(schools(Y8, S8), th.nuts(["mu", "tau", "school.eta"]), num_samples=4000,
                 burn_in=1000, seed=1, progress=False)
    grid = _schools_grid()
    for name in ("mu", "tau"):
        mean, sd, cdf = grid[name]
        check_continuous(r[name], mean, sd, cdf, what=name)
    assert r.sample_stats["diverging"].mean() < 0.02
    # negative control: the same draws against a grid of a prior twice as wide on mu fail
    mean, sd, cdf = grid["tau"]
    assert abs(mean_z(r["tau"], mean * 1.3, sd)) > Z_MAX or ks_p(
        r["tau"], lambda x: cdf(x / 1.3)) < P_MIN


@th.model
def constrained(n, k, counts):
    m = th.sample("m", dist.Normal(0.0, 2.0))
    th.observe("y", dist.Normal(m, 1.0), 1.5)
    lam = th.sample("lam", dist.Gamma(3.0, 2.0))
    with th.plate("obs", len(counts)) as i:
        th.observe("c", dist.Poisson(lam), counts[i])
    p = th.sample("p", dist.Beta(2.0, 3.0))
    th.observe("k", dist.Binomial(n, probs=p), k)
    b = th.sample("b", dist.Gamma(4.0, 1.0))
    th.sample("u", dist.Uniform(0.0, b))
    th.sample("w", dist.Dirichlet(np.array([1.0, 2.0, 3.0])))


def test_each_transform_gives_the_conjugate_posterior():
    counts = np.array([2, 0, 3, 1, 4])
    n, k = 10, 7
    r = th.infer(constrained(n, k, counts), th.nuts(["m", "lam", "p", "b", "u", "w"]),
                 num_samples=3000, burn_in=1000, seed=2, progress=False)
    exact = {
        "m": stats.norm(1.5 * 4 / 5, np.sqrt(4 / 5)),
        "lam": stats.gamma(3.0 + counts.sum(), scale=1 / (2.0 + len(counts))),
        "p": stats.beta(2.0 + k, 3.0 + n - k),
        # b ~ Gamma(4, 1) with u | b ~ U(0, b) and nothing observed: the prior
        "b": stats.gamma(4.0),
    }
    for name, d in exact.items():
        check_continuous(r[name], d.mean(), d.std(), d.cdf, what=name)
    # u marginal: E[u] = E[b] / 2; its cdf P(u ≤ x) = E[min(x / b, 1)]
    bs = stats.gamma(4.0).rvs(200_000, random_state=0)
    u_cdf = np.vectorize(lambda x: np.minimum(x / bs, 1.0).mean())
    check_continuous(r["u"], 2.0, np.sqrt(np.mean(bs**2) / 3 - 4.0), u_cdf, what="u")
    w = r["w"]  # Dirichlet(1, 2, 3): marginals Beta(a_j, 6 - a_j)
    for j, a in enumerate([1.0, 2.0, 3.0]):
        d = stats.beta(a, 6.0 - a)
        check_continuous(w[..., j], d.mean(), d.std(), d.cdf, what=f"w[{j}]")
    assert np.allclose(w.sum(-1), 1.0)


@th.model
def one_sided(upper):
    """A truncation bound that is another choice of the block, the other side open: x's support
    is (a, ∞) or (−∞, a)."""
    a = th.sample("a", dist.Normal(0.0, 1.0))
    x = th.sample("x", dist.Truncated(dist.Normal(0.0, 1.0), **{"high" if upper else "low": a}))
    th.observe("y", dist.Normal(x, 1.0), 0.5)


@pytest.mark.parametrize("upper", [False, True])
def test_a_one_sided_truncation_at_a_choice_of_the_block_gives_the_grid_posterior(upper):
    """x | a ~ N(0, 1) truncated to (a, ∞) (or (−∞, a)), y = 0.5 ~ N(x, 1): (a, x) on a grid.
    Both sides open in x's transform give x = a + exp(u) (a − exp(u)); a transform for a
    finite interval would put x at ±∞."""
    r = th.infer(one_sided(upper), th.nuts(["a", "x"]), num_samples=1500, burn_in=500, seed=5,
                 progress=False)
    A, X = np.meshgrid(np.linspace(-7, 7, 701), np.linspace(-9, 9, 901), indexing="ij")
    inside = X < A if upper else X > A
    tail = stats.norm.logcdf(A) if upper else stats.norm.logsf(A)
    lp = stats.norm.logpdf(A) + stats.norm.logpdf(X) - tail + stats.norm.logpdf(0.5, X, 1.0)
    w = np.exp(np.where(inside, lp, -np.inf) - lp[inside].max())
    for name, g, axis in (("a", A[:, 0], 1), ("x", X[0], 0)):
        mean, sd, cdf = _marginal(g, w.sum(axis))
        check_continuous(r[name], mean, sd, cdf, what=name)


@th.model
def upper_truncated_scale():
    s = th.sample("s", dist.Gamma(2.0, 1.0))
    th.sample("x", dist.Truncated(dist.HalfNormal(s), high=3.0))


def test_a_truncation_above_a_positive_family_moves_within_its_support():
    """x ~ HalfNormal(s) truncated above at 3 moves in [0, 3], its support within the base's,
    not in (−∞, 3], whose negative half has density 0 (a wall: 75% of the transitions
    diverged).  s keeps its prior Gamma(2, 1); x against a grid of the joint."""
    r = th.infer(upper_truncated_scale(), th.nuts(["s", "x"]), num_samples=1000, burn_in=500,
                 seed=8, progress=False)
    g = stats.gamma(2.0)
    check_continuous(r["s"], g.mean(), g.std(), g.cdf, what="s")
    S, X = np.meshgrid(np.linspace(1e-3, 15.0, 1500), np.linspace(1e-4, 3.0, 600),
                       indexing="ij")
    w = g.pdf(S) * stats.halfnorm.pdf(X, scale=S) / stats.halfnorm.cdf(3.0, scale=S)
    check_continuous(r["x"], *_marginal(X[0], w.sum(0)), what="x")
    assert r.sample_stats["diverging"].mean() < 0.02


@th.model
def far_tail():
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.sample("x", dist.Truncated(dist.Normal(mu, 1.0), low=40.0))


def test_a_truncation_in_a_far_tail_gives_the_prior():
    """x | mu truncated 40 sd above mu's prior mean, nothing observed: mu keeps its prior
    N(0, 1).  (The log-normaliser's derivative was NaN there: every transition diverged and
    mu stayed at its start.)"""
    r = th.infer(far_tail(), th.nuts(["mu", "x"]), num_samples=500, burn_in=200, seed=6,
                 progress=False)
    check_continuous(r["mu"], 0.0, 1.0, stats.norm.cdf, what="mu")
    assert r.sample_stats["diverging"].mean() < 0.02


@th.model
def mixtures(gap):
    x = th.sample("x", dist.Mixture(np.array([0.3, 0.7]), [dist.Uniform(0.0, 1.0),
                                                          dist.Uniform(3.0 if gap else 0.5, 3.5)]))
    th.observe("y", dist.Normal(x, 1.0), 1.5)
    g = th.sample("g", dist.Mixture(np.array([0.5, 0.5]), [dist.Gamma(2.0, 1.0),
                                                          dist.LogNormal(0.0, 1.0)]))
    th.observe("k", dist.Poisson(g), 3)


def test_nuts_on_mixtures_moves_in_the_span_of_their_supports_and_refuses_a_gap():
    """x's components are uniform on [0, 1] and [0.5, 3.5]: x moves in [0, 3.5] (its support
    was the real line, the components' domain); g's are a gamma and a log-normal, supports
    [0, ∞) and (0, ∞): (0, ∞) (it was refused).  With [0, 1] and [3, 3.5], a gap NUTS could
    never cross: refused by name (x stayed in the component it started in: P(x < 2) = 0 or 1
    against the exact 0.54)."""
    r = th.infer(mixtures(False), th.nuts(["x", "g"]), num_samples=1000, burn_in=500, seed=7,
                 progress=False)
    gx, gg = np.linspace(1e-9, 3.5 - 1e-9, 70001), np.linspace(1e-9, 60.0, 120001)
    px = (0.3 * stats.uniform(0, 1).pdf(gx) + 0.7 * stats.uniform(0.5, 3).pdf(gx)) * \
        stats.norm.pdf(1.5, gx, 1.0)
    pg = (0.5 * stats.gamma(2.0).pdf(gg) + 0.5 * stats.lognorm(1.0).pdf(gg)) * \
        stats.poisson.pmf(3, gg)
    check_continuous(r["x"], *_marginal(gx, px), what="x")
    check_continuous(r["g"], *_marginal(gg, pg), what="g")
    with pytest.raises(DistributionError, match=r"nuts: \('x',\).*cannot cross the gap"):
        th.infer(mixtures(True), th.nuts("x"), num_samples=5, progress=False)


@th.model
def truncated_mixture(low, high):
    base = dist.Mixture(np.array([0.3, 0.7]), [dist.Uniform(0.0, 1.0), dist.Uniform(3.0, 3.5)])
    x = th.sample("x", dist.Truncated(base, low=low, high=high))
    th.observe("y", dist.Normal(x, 1.0), 1.5)


def test_a_truncated_mixture_keeps_the_gap_between_its_parts():
    """Truncated to [0.5, 3.2], the mixture's support is [0.5, 1] ∪ [3, 3.2]: NUTS (started
    at x = 0.6 by init=) gave P(x < 2) = 0 against the exact 0.59 — the truncation's support
    was the whole of [0.5, 3.2], so the gap went unseen; it is now refused by name.  Truncated
    to [0.1, 0.8], within one part, it moves there: the exact posterior by quadrature."""
    with pytest.raises(DistributionError, match=r"nuts: \('x',\).*cannot cross the gap"):
        th.infer(truncated_mixture(0.5, 3.2), th.nuts("x"), num_samples=5, progress=False,
                 init={"x": 0.6})
    r = th.infer(truncated_mixture(0.1, 0.8), th.nuts("x"), num_samples=1000, burn_in=500,
                 seed=3, progress=False, init={"x": 0.6})
    gx = np.linspace(0.1, 0.8, 20001)
    check_continuous(r["x"], *_marginal(gx, stats.norm.pdf(1.5, gx, 1.0)), what="x")


@th.model
def rats(n, k):
    """Beta–Binomial with a count per group: ``Binomial(n[i], p)``, an array total_count."""
    with th.plate("g", len(n)) as i:
        p = th.sample("p", dist.Beta(1.0, 1.0))
        th.observe("k", dist.Binomial(n[i], p), k[i])


RATS_N, RATS_K = np.array([10, 3, 25, 1]), np.array([9, 0, 5, 1])


def test_binomial_with_a_count_per_element_gives_the_conjugate_posterior():
    r = th.infer(rats(RATS_N, RATS_K), th.nuts("g.p"), num_samples=2000, burn_in=500, seed=4,
                 progress=False)
    for j, (n, k) in enumerate(zip(RATS_N, RATS_K)):
        d = stats.beta(1.0 + k, 1.0 + n - k)
        check_continuous(r["g.p"][..., j], d.mean(), d.std(), d.cdf, what=f"g.p[{j}]")


@th.model
def latent_count(y):
    n = th.sample("n", dist.Poisson(4.0))
    p = th.sample("p", dist.Beta(2.0, 2.0))
    th.observe("y", dist.Binomial(n, p), y)


def test_nuts_beside_a_latent_total_count():
    """The count is another (discrete) choice, traced in the gradient run: NUTS takes p, LMH
    takes n.  p's exact marginal: a mixture over n of Beta(2 + y, 2 + n - y), weights
    Poisson(n; 4) C(n, y) B(2 + y, 2 + n - y)."""
    from scipy.special import betaln, gammaln

    y = 3
    r = th.infer(latent_count(y), th.cycle([th.nuts("p"), th.lmh("n")]), num_samples=4000,
                 burn_in=500, seed=1, progress=False)
    ns = np.arange(y, 120)
    lw = (ns * np.log(4.0) - gammaln(ns + 1) + gammaln(ns + 1) - gammaln(ns - y + 1)
          + betaln(2.0 + y, 2.0 + ns - y))
    w = np.exp(lw - lw.max())
    w /= w.sum()
    parts = [stats.beta(2.0 + y, 2.0 + n - y) for n in ns]
    mean = sum(wi * d.mean() for wi, d in zip(w, parts))
    sd = np.sqrt(sum(wi * (d.var() + d.mean() ** 2) for wi, d in zip(w, parts)) - mean**2)
    check_continuous(r["p"], mean, sd, lambda x: sum(wi * d.cdf(x) for wi, d in zip(w, parts)),
                     what="p")


@th.model
def correlations(y):
    """Cholesky factors of correlation matrices: a 3 × 3 one with nothing observed (its prior)
    and a 2 × 2 one behind bivariate normal data."""
    th.sample("L3", dist.LKJCholesky(3, 2.0))
    L2 = th.sample("L2", dist.LKJCholesky(2, 1.5))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.MvNormal(np.zeros(2), scale_tril=L2), y[i])


def test_the_correlation_cholesky_transform_gives_the_exact_posterior():
    """NUTS in the unconstrained space of LKJCholesky's support (canonical partial
    correlations): each correlation of the 3 × 3 factor has its prior, (r + 1)/2 ~ Beta(η − 1 +
    d/2, η − 1 + d/2); the 2 × 2 one, r given 15 points, its posterior on a grid of r."""
    rng = np.random.default_rng(0)
    y = rng.multivariate_normal(np.zeros(2), [[1.0, 0.6], [0.6, 1.0]], size=15)
    r = th.infer(correlations(y), th.nuts(["L3", "L2"]), num_samples=2000, burn_in=1000,
                 seed=3, progress=False)
    L3 = r["L3"]
    R3 = L3 @ np.swapaxes(L3, -1, -2)
    b = stats.beta(2.0 - 1 + 1.5, 2.0 - 1 + 1.5, loc=-1, scale=2)
    for i, j in ((1, 0), (2, 0), (2, 1)):
        check_continuous(R3[..., i, j], b.mean(), b.std(), b.cdf, what=f"L3 r{i}{j}")
    g = np.linspace(-0.999, 0.999, 4001)
    det = 1 - g**2
    quad = (y[:, 0, None] ** 2 - 2 * g * y[:, 0, None] * y[:, 1, None]
            + y[:, 1, None] ** 2) / det
    lp = 0.5 * np.log(det) - 0.5 * (len(y) * np.log(det) + quad.sum(0))  # η = 1.5
    check_continuous(r["L2"][..., 1, 0], *_marginal(g, np.exp(lp - lp.max())), what="L2 r")


@th.model
def precision(y):
    """A Wishart prior on the precision of bivariate normal data (conjugate)."""
    lam = th.sample("lam", dist.Wishart(4.0, scale=np.array([[1.0, 0.3], [0.3, 0.5]])))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.MvNormal(np.zeros(2), precision=lam), y[i])


def test_the_positive_definite_transform_gives_the_conjugate_wishart_posterior():
    """NUTS on a positive-definite matrix (X = L Lᵀ, L's diagonal exp(u)): the posterior is
    Wishart(4 + n, (S₀⁻¹ + Σ y yᵀ)⁻¹); its diagonal entries are Gamma(df/2, scale 2 S_ii)
    (mean and KS), the off-diagonal one has mean df S_01 and variance df (S_01² + S_00 S_11)."""
    rng = np.random.default_rng(1)
    y = rng.multivariate_normal(np.zeros(2), [[1.0, -0.4], [-0.4, 2.0]], size=12)
    r = th.infer(precision(y), th.nuts("lam"), num_samples=2000, burn_in=1000, seed=4,
                 progress=False)
    lam = r["lam"]
    assert np.allclose(lam, np.swapaxes(lam, -1, -2))
    df = 4.0 + len(y)
    S = np.linalg.inv(np.linalg.inv(np.array([[1.0, 0.3], [0.3, 0.5]])) + y.T @ y)
    for j in range(2):
        g = stats.gamma(df / 2, scale=2 * S[j, j])
        check_continuous(lam[..., j, j], g.mean(), g.std(), g.cdf, what=f"lam[{j},{j}]")
    z = mean_z(lam[..., 0, 1], df * S[0, 1], np.sqrt(df * (S[0, 1] ** 2 + S[0, 0] * S[1, 1])))
    assert abs(z) < Z_MAX, z


@th.model
def mixture(y):
    mu = th.sample("mu", dist.Normal(0.0, 3.0))
    with th.plate("data", len(y)) as i:
        z = th.sample("z", dist.Bernoulli(probs=0.5))
        th.observe("y", dist.Normal(mu * z, 1.0), y[i])  # background N(0, 1) or N(mu, 1)


MIXTURE_Y = np.array([2.8, 3.1, -0.2, 0.4, 2.5])


def mixture_grid(y):
    """mu's posterior by enumeration of the labels: p(mu | y) ∝ N(mu; 0, 3²) Π_i ½(N(y_i; 0,
    1) + N(y_i; mu, 1)), on a grid: (mean, sd, cdf).  (Not the symmetric ±mu mixture: its two
    modes are joined only through mu ≈ 0, which NUTS-within-Gibbs crosses too rarely for a
    test with power.)"""
    g = np.linspace(-12, 12, 4001)
    lp = stats.norm(0, 3).logpdf(g) + np.log(
        0.5 * stats.norm.pdf(y[:, None]) + 0.5 * stats.norm.pdf(y[:, None] - g)).sum(0)
    return _marginal(g, np.exp(lp - lp.max()))


@pytest.mark.parametrize("compose", ["cycle", "mixture"])
def test_nuts_with_gibbs_on_labels(compose):
    kernels = [th.nuts("mu"), th.gibbs("data.z")]
    k = th.cycle(kernels) if compose == "cycle" else th.mixture([(0.5, kernels[0]),
                                                                 (0.5, kernels[1])])
    r = th.infer(mixture(MIXTURE_Y), k, num_samples=3000, burn_in=500, seed=3, progress=False)
    if compose == "mixture":  # draws after Gibbs's turn: no NUTS transition, no statistics
        idle = r.sample_stats["n_steps"][0] == 0
        assert 0.4 < idle.mean() < 0.6 and np.isnan(r.sample_stats["energy"][0][idle]).all()
        assert not r.sample_stats["diverging"][0][idle].any()
    check_continuous(r["mu"], *mixture_grid(MIXTURE_Y), what="mu")


def test_nuts_compiling_after_gibbs_leaves_the_labels_writable():
    """NUTS's first step compiles its density, probing it with the other choices' values: the
    plate's column of labels that Gibbs, stepping first, owns and writes in place.  The probe's
    run handed that array to the model read-only — as a run hands every value it keeps — by
    marking the array itself, and Gibbs's next write raised ValueError ("assignment
    destination is read-only")."""
    from thrifty.inference.gradient import hmc

    hmc._CACHE.clear()  # (compiled by the tests above: no probe)
    r = th.infer(mixture(MIXTURE_Y), th.cycle([th.gibbs("data.z"), th.nuts("mu")]),
                 num_samples=20, burn_in=10, seed=0, progress=False)
    assert r.num_draws == 20 and len(np.unique(r["mu"])) > 10


def test_a_chain_resumed_where_nuts_compiles_anew_gives_the_same_draws(tmp_path, monkeypatch):
    """A checkpoint resumed in a new process, whose NUTS compiles its density anew (the cache
    cleared here): the unpickled trace owns every column, and the probe made the labels' array
    read-only — Gibbs's first write after the resume raised ValueError."""
    from test_runtime import ARMED, Interrupting
    from thrifty.inference.gradient import hmc

    def kernel():
        return Interrupting(th.cycle([th.nuts("mu"), th.gibbs("data.z")]), after=15,
                            how="raise")

    kw = dict(num_samples=20, burn_in=10, seed=1, progress=False)
    straight = th.infer(mixture(MIXTURE_Y), kernel(), **kw)
    path = tmp_path / "run.ckpt"
    monkeypatch.setenv(ARMED, "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = th.infer(mixture(MIXTURE_Y), kernel(), checkpoint=path, checkpoint_every=0.0,
                        **kw)
    assert part.interrupted
    hmc._CACHE.clear()
    resumed = th.infer(mixture(MIXTURE_Y), kernel(), checkpoint=path, **kw)
    np.testing.assert_array_equal(resumed["mu"], straight["mu"])
    np.testing.assert_array_equal(resumed["data.z"], straight["data.z"])




def test_same_seed_same_draws_whatever_the_workers_and_stats_names():
    """Two chains in this process and in two worker processes (spawned: JAX has started
    here) give the same draws."""
    y = np.array([0.3, -0.2, 0.8])
    a = th.infer(small(y), th.nuts(["mu", "sigma"]), num_samples=50, burn_in=50, chains=2,
                 workers=1, seed=5, progress=False)
    b = th.infer(small(y), th.nuts(["mu", "sigma"]), num_samples=50, burn_in=50, chains=2,
                 workers=2, seed=5, progress=False)
    assert b.stats["run"]["start_method"] == "spawn"
    assert np.array_equal(a["mu"], b["mu"]) and np.array_equal(a["sigma"], b["sigma"])
    ss = a.to_arviz().sample_stats
    for name in ("diverging", "tree_depth", "energy", "acceptance_rate", "step_size", "n_steps"):
        assert name in ss, name
    assert ss["diverging"].dtype == bool and ss["tree_depth"].dtype.kind == "i"


@th.model
def numpy_only(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(np.exp(mu), 1.0), y)


@th.model
def with_label(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    k = th.sample("k", dist.Categorical(logits=np.zeros(3)))
    th.observe("y", dist.Normal(mu + k, 1.0), y)


class Wedge(dist.Exponential):
    """A user's family whose density is written for NumPy only (every family of thrifty's
    own takes the array API)."""

    array_api = False

    def log_prob(self, value):
        return np.log(self.rate) - self.rate * np.abs(value)


@th.model
def own_family_obs(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.observe("y", Wedge(1.0 + mu * mu), y)


@th.model
def poisson_obs(y):
    lam = th.sample("lam", dist.Gamma(2.0, 1.0))
    th.observe("y", dist.Poisson(lam), y)


def test_a_family_failing_on_traced_values_is_not_called_numpy_only(monkeypatch):
    """A family that takes the array API but whose code hands a traced value to NumPy (here a
    parameter check made to convert its argument): the error says what failed."""
    monkeypatch.setattr(dist.Poisson, "_check_nonnegative", lambda self, name, v: np.asarray(v))
    with pytest.raises(ModelError, match=r"Poisson failed on the traced values.*"
                                         r"TracerArrayConversionError: The numpy") as e:
        th.infer(poisson_obs(2), th.nuts("lam"), num_samples=5, progress=False)
    assert "NumPy only" not in str(e.value)


@th.model
def truncated_t(y):
    nu = th.sample("nu", dist.Gamma(2.0, 0.5))
    th.observe("y", dist.Truncated(dist.StudentT(nu, 0.0, 1.0), low=0.0), y)


def test_a_derivative_jax_lacks_is_refused_by_the_probe():
    """The truncated t's normaliser is an incomplete beta function, which JAX differentiates
    in x only: tracing the derivative raises.  The probe traces it, so the error names the
    model's line before a step (it was JAX's ValueError from the first step), and th.infer's
    default kernel moves nu with MH (it chose NUTS, which then failed)."""
    with pytest.raises(NotDifferentiable, match=r"Truncated\(dist.StudentT.*StudentT failed "
                                                r"on the traced values.*Betainc gradient"):
        th.infer(truncated_t(1.3), th.nuts("nu"), num_samples=5, progress=False)
    r = th.infer(truncated_t(1.3), num_samples=5, burn_in=5, seed=0, progress=False)
    assert next(iter(r.stats)) == "mh('nu', drift())"


def test_a_gradient_run_computing_another_density_is_refused(monkeypatch):
    """A family whose array path (JAX) computes another density than its NumPy one: the
    compiled density agrees with JAX's eager run but not with the engine's log-joint, and
    NUTS would sample another posterior (here Gamma(2, 0.7) for Gamma(2, 1), silently)."""
    from thrifty.distributions.xp import is_foreign

    numpy_path = dist.Gamma.log_prob

    def tilted(self, value):
        return numpy_path(self, value) + (0.3 * value if is_foreign(value) else 0.0)

    monkeypatch.setattr(dist.Gamma, "log_prob", tilted)
    with pytest.raises(ModelError, match=r"differs from the program's .* by more than "
                                         "rounding"):
        th.infer(poisson_obs(2), th.nuts("lam"), num_samples=5, progress=False)


@th.model
def beta_prior():
    th.sample("p", dist.Beta(2.4, 8.0))


def test_a_beta_site_where_its_log_density_is_near_zero_is_not_refused():
    """JAX's betaln was off by 1.3e-6 at (2.4, 8.0): started where log p(x) = 0, the compiled
    density differed from the engine's by more than rounding, and NUTS refused the program as
    computing another density."""
    from scipy.optimize import brentq

    x0 = brentq(stats.beta(2.4, 8.0).logpdf, 0.2, 0.9)  # log p(x0) = 0
    r = th.infer(beta_prior(), th.nuts("p"), num_samples=3, burn_in=0, init={"p": x0},
                 progress=False)  # (checked at the first step: no burn-in needed)
    assert r["p"].shape == (1, 3)


@th.model
def crp_model(x):
    crp = th.CRP(1.0)
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    with th.plate("data", len(x)) as i:
        th.sample("z", crp)
        th.observe("x", dist.Normal(mu, 1.0), x[i])


def test_errors_name_the_site_and_the_fix():
    with pytest.raises(ModelError, match=r"np.exp\(mu\).*jax.numpy"):
        th.infer(numpy_only(1.0), th.nuts("mu"), num_samples=5, progress=False)
    with pytest.raises(SelectionError, match=r"'k'.*discrete"):
        th.infer(with_label(1.0), th.nuts(["mu", "k"]), num_samples=5, progress=False)
    with pytest.raises(ModelError, match=r"Wedge takes no jax\.numpy arrays"):
        th.infer(own_family_obs(1.0), th.nuts("mu"), num_samples=5, progress=False)
    with pytest.raises(ModelError, match="coupled process"):
        th.infer(crp_model(np.zeros(4)), th.nuts("mu"), num_samples=5, progress=False)


@th.model
def mixed_bounds(low):
    with th.plate("data", len(low)) as i:
        x = th.sample("x", dist.Truncated(dist.Normal(0.0, 1.0), low=low[i]))
        th.observe("y", dist.Normal(x, 1.0), 0.5)


@th.model
def on_an_interval():
    u = th.sample("u", dist.Uniform(0.0, 2.0))
    th.observe("y", dist.Normal(u, 1.0), 0.3)


def test_supports_without_a_transform_and_values_on_a_boundary_are_refused_by_name():
    """A plate's bound infinite for some elements only (ExpAbove put those at −∞: NaN draws),
    and a value on a closed boundary, which the unconstrained coordinates place at infinity
    (a NaN log-density, reported as a buffer rewritten in place)."""
    with pytest.raises(DistributionError, match=r"nuts: \('data', \*, 'x'\).*infinite on "
                                                "some entries"):
        th.infer(mixed_bounds(np.array([-np.inf, 0.0])), th.nuts("data.x"), num_samples=5,
                 progress=False)
    with pytest.raises(DistributionError, match=r"nuts: \('u',\).*boundary of the support"):
        th.infer(on_an_interval(), th.nuts("u"), num_samples=5, progress=False,
                 init={"u": 2.0})


def test_the_examples_run():
    import doctest

    import thrifty.distributions.xp
    import thrifty.inference.gradient.hmc

    for mod in (thrifty.inference.gradient.hmc, thrifty.distributions.xp):
        res = doctest.testmod(mod, verbose=False, report=False)
        assert res.attempted > 0 and res.failed == 0, mod.__name__


def test_factor_takes_traced_log_weights():
    @th.model
    def m():
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        th.factor("f", -0.5 * (mu - 3.0) ** 2)  # with the prior: N(2.97, 0.995²)

    r = th.infer(m(), th.nuts("mu"), num_samples=2000, burn_in=500, seed=0, progress=False)
    prec = 1 / 100 + 1
    d = stats.norm(3.0 / prec, np.sqrt(1 / prec))
    check_continuous(r["mu"], d.mean(), d.std(), d.cdf, what="mu")


def test_chains_of_a_model_spawned_workers_cannot_import_run_here():
    """JAX has started in this process, so a JAX kernel's workers would be spawned; a model
    defined inside a function cannot be re-imported there: the chains run here instead, with
    the same draws (and a note saying so)."""
    import jax.numpy as jnp

    jnp.zeros(1)  # JAX's runtime started in this process (whatever ran before)

    @th.model
    def local(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu, 1.0), y)

    a = th.infer(local(0.5), th.nuts("mu"), num_samples=30, burn_in=30, chains=2, seed=1,
                 progress=False)
    assert any("one after another in this process" in n for n in a.notes)
    b = th.infer(local(0.5), th.nuts("mu"), num_samples=30, burn_in=30, chains=2, workers=1,
                 seed=1, progress=False)
    assert np.array_equal(a["mu"], b["mu"])


def test_the_chains_of_a_gradient_kernel_share_its_compilation_unless_workers_are_given():
    """Without ``workers``, the chains of a JAX kernel run in this process whether or not JAX
    has started, sharing one compiled density (each worker process would compile its
    own)."""
    r = th.infer(small(np.zeros(3)), th.nuts("mu"), num_samples=20, burn_in=20, chains=2,
                 seed=4, progress=False)
    assert r.stats["run"]["workers"] == 1
    assert any("share its compiled code" in n for n in r.notes), r.notes
    plain = th.infer(small(np.zeros(3)), th.mh("mu", th.drift(0.5)), num_samples=20,
                     chains=2, seed=4, progress=False)
    assert not any("share its compiled code" in n for n in plain.notes)


def test_the_adaptation_travels_in_float64():
    """A checkpoint pickles the kernel: its adaptation state goes as NumPy float64 arrays (a
    JAX array unpickled before float64 is turned on comes back float32, and a resumed chain
    would drift from the uninterrupted one)."""
    import pickle

    k = th.nuts(["mu", "sigma"])
    trace = th.initialize(small(np.zeros(3)), seed=0)
    k.plan_burn_in(200)
    k.set_tuning(True)
    rng = np.random.default_rng(0)
    for _ in range(5):
        trace = k.step(trace, rng)
    [(state, *_)] = pickle.loads(pickle.dumps(k)).__dict__["_adapt"].values()  # (one block)
    leaves = [state.inverse_mass_matrix, state.step_size]
    assert all(type(v) is np.ndarray and v.dtype == np.float64 for v in leaves)


def test_a_wrong_name_in_a_list_is_an_error():
    with pytest.raises(SelectionError, match=r"'sigm' \(in \['mu', 'sigm'\]\) selects no"):
        th.infer(small(np.zeros(3)), th.nuts(["mu", "sigm"]), num_samples=5, progress=False)


def test_data_changed_in_place_between_runs_is_read_anew():
    """The compiled density takes the data as constants and is shared by later runs of the
    same program: data written in place between two th.infer calls must be seen (the
    program's code and arguments are fingerprinted before a compiled density is reused)."""
    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    y = np.zeros(5)
    prog = m(y)
    th.infer(prog, th.nuts("mu"), num_samples=50, burn_in=50, seed=0, progress=False)
    y[:] = 5.0
    r = th.infer(prog, th.nuts("mu"), num_samples=1000, burn_in=300, seed=0, progress=False)
    prec = 1 / 100 + 5
    d = stats.norm(25.0 / prec, np.sqrt(1 / prec))
    check_continuous(r["mu"], d.mean(), d.std(), d.cdf, what="mu")


def test_a_program_of_the_same_model_and_data_shapes_reuses_the_compiled_density():
    """Compiled functions are keyed by the digest of the model's code and constants, and take
    the program's numeric array arguments (its data) as inputs: the same model applied again
    to equal data (a notebook cell run twice) compiles nothing and gives the same draws, so
    does new data of the same shapes — and gives that data's posterior; data of another shape
    compile anew."""
    from thrifty.inference.gradient import hmc

    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    def run(y):
        return th.infer(m(y), th.nuts("mu"), num_samples=1000, burn_in=300, seed=0,
                        progress=False)["mu"]

    hmc._CACHE.clear()  # (not full: a miss then clears it)
    y = np.array([0.5, -0.25, 1.0])
    first = run(y)
    n = len(hmc._CACHE)
    np.testing.assert_array_equal(run(y.copy()), first)
    assert len(hmc._CACHE) == n  # (nothing compiled)
    prec = 1 / 100 + 3
    for shift in (4.0, -7.0):
        other = run(y + shift)
        assert len(hmc._CACHE) == n
        d = stats.norm((y + shift).sum() / prec, np.sqrt(1 / prec))
        check_continuous(other, d.mean(), d.std(), d.cdf, what=f"mu (data + {shift})")
    run(np.append(y, 2.0))
    assert len(hmc._CACHE) == n + 1


def _settings_module():
    """A module of the user's (no file: not a library's) holding a submodule, as a package of
    settings would."""
    import types

    cfg = types.ModuleType("user_settings")
    cfg.sub = types.ModuleType("user_settings.sub")
    cfg.scale = cfg.sub.scale = 1.0
    return cfg


def test_nuts_after_a_change_to_a_module_the_model_reaches_by_value_uses_the_new_value():
    """A module of the user's that the model reaches through a closure and reads with
    ``getattr(cfg, "scale")``: the walker followed only the attributes that a function's own
    globals name, so the program key did not change with ``cfg.scale`` and the second run
    reused the density compiled with the old scale.  Started where the scale does not enter
    the density (mu = 0), the compiled density agreed with the program there, and NUTS
    silently sampled the old posterior: E[mu] 0.834 for scale 2 (exact 0.406, the draws of the
    run with scale 1)."""
    cfg = _settings_module()

    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu * getattr(cfg, "scale"), 1.0),  # noqa: B009
                       y[i])

    y = np.array([0.5, -0.25, 1.0, 2.0])
    for scale in (1.0, 2.0):
        cfg.scale = scale
        r = th.infer(m(y), th.nuts("mu"), num_samples=500, burn_in=200, seed=0,
                     init={"mu": 0.0}, progress=False)
        prec = 1 / 100 + scale**2 * len(y)
        d = stats.norm(scale * y.sum() / prec, np.sqrt(1 / prec))
        check_continuous(r["mu"], d.mean(), d.std(), d.cdf, what=f"mu (scale {scale})")


def test_nuts_after_a_change_the_fingerprint_cannot_see_compiles_the_density_anew(tmp_path):
    """The model reads its scale from a file: the program key (the path) stays the same when
    the file is rewritten, and the second run found the density compiled with the old scale
    in the cache.  Started at mu = 0, where the scale does not enter the density, the
    agreement check at the start passed and NUTS silently sampled the old posterior: E[mu]
    0.769 for scale 2 (exact 0.406, z = 15).  A density found in the cache is compared with the
    program executed now at the start and beside it, and compiled anew when they differ."""
    path = tmp_path / "scale.txt"

    @th.model
    def m(y, settings):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        with open(settings) as f:
            scale = float(f.read())
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu * scale, 1.0), y[i])

    y = np.array([0.5, -0.25, 1.0, 2.0])
    for scale in (1.0, 2.0):
        path.write_text(str(scale))
        r = th.infer(m(y, str(path)), th.nuts("mu"), num_samples=500, burn_in=200, seed=0,
                     init={"mu": 0.0}, progress=False)
        prec = 1 / 100 + scale**2 * len(y)
        d = stats.norm(scale * y.sum() / prec, np.sqrt(1 / prec))
        check_continuous(r["mu"], d.mean(), d.std(), d.cdf, what=f"mu (scale {scale})")


@pytest.mark.parametrize("path", ["closure", "argument", "attribute", "submodule", "getattr",
                                  "globals", "metaclass"])
def test_the_program_key_follows_what_the_model_reads_of_a_module_or_metaclass(path):
    """Each path by which a model reads a value of the user's module (or its class's
    metaclass) changes the key of its compiled density when that value changes."""
    import types

    from thrifty.inference.gradient import hmc

    cfg = _settings_module()
    holder = types.SimpleNamespace(cfg=cfg)
    meta = type("Meta", (type,), {"scale": 1.0})
    cls = meta("WithMeta", (), {})
    read = {"closure": lambda c: cfg.scale, "argument": lambda c: c.scale,
            "attribute": lambda c: holder.cfg.scale, "submodule": lambda c: cfg.sub.scale,
            "getattr": lambda c: getattr(cfg, "scale"),  # noqa: B009
            "globals": lambda c: globals()["_GLOBAL_SETTINGS"].scale,
            "metaclass": lambda c: cls.scale}[path]
    globals()["_GLOBAL_SETTINGS"] = types.SimpleNamespace(scale=1.0)

    @th.model
    def m(y, c):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        th.observe("y", dist.Normal(mu * read(c), 1.0), y)

    before = hmc.program_key(m(1.0, cfg))
    assert hmc.program_key(m(1.0, cfg)) == before
    cfg.scale = cfg.sub.scale = meta.scale = globals()["_GLOBAL_SETTINGS"].scale = 2.0
    assert hmc.program_key(m(1.0, cfg)) != before


@pytest.mark.parametrize("reads", ["values", "type"])
def test_a_model_that_reads_its_data_gets_them_compiled_in_as_constants(reads):
    """Data a model's code needs as values (``np.log(y)``: NumPy on the data) or whose type it
    reads (``isinstance(y, np.ndarray)``: a branch that tracing follows without error) cannot
    be inputs of the compiled density: they are compiled in as constants, and the posterior is
    the model's (the second is found by comparing the compiled log-joint with the trace's;
    without that check its data would be doubled: z = 28)."""
    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 10.0))
        if reads == "values":
            y = np.log(y)
        elif not isinstance(y, np.ndarray):
            y = 2.0 * y
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    x = np.array([0.5, 1.0, 1.5])
    r = th.infer(m(np.exp(x) if reads == "values" else x), th.nuts("mu"), num_samples=1000,
                 burn_in=300, seed=1, progress=False)
    prec = 1 / 100 + 3
    d = stats.norm(x.sum() / prec, np.sqrt(1 / prec))
    check_continuous(r["mu"], d.mean(), d.std(), d.cdf, what="mu")


def test_nuts_alone_records_the_draws_it_computes_ahead():
    """Alone in a chain, NUTS takes up to 64 transitions per compiled call and writes the
    trace once per call: each recorded draw's values and log p(x, y) are a state of the
    chain (the log-joint recomputed here from the recorded values), and the trace is written
    a few times per 64 draws, not at every draw."""
    y = np.array([0.3, -0.2, 0.8, 1.1])
    r = th.infer(small(y), th.nuts(["mu", "sigma"]), num_samples=300, burn_in=100, seed=2,
                 progress=False)
    mu, sigma = r["mu"][0], r["sigma"][0]
    lp = (stats.norm(0, 1).logpdf(mu) + stats.gamma(5.0, scale=1 / 5.0).logpdf(sigma)
          + stats.norm(mu[:, None], sigma[:, None]).logpdf(y).sum(1))
    np.testing.assert_allclose(r.sample_stats["lp"][0], lp, rtol=1e-9)
    assert len(np.unique(mu)) > 250  # (the draws move)
    st = r.stats["nuts(['mu', 'sigma'])"]
    assert st["runs_per_step"] < 0.1  # (the trace written once per compiled call)
    assert st["acceptance_rate"] > 0.8  # transitions that moved (not trace writes)


def test_result_stats_of_nuts_are_those_of_its_draws_transitions():
    """``result.stats`` sums the sampling steps (the burn-in's, while the step size and mass
    matrix adapt, under "burn_in"): with thin=1 each sampling step is one draw's transition,
    so the per-step divergences, gradient evaluations and mean acceptance are the means of
    the draws' ``diverging``, ``n_steps`` and ``acceptance_rate`` (to rounding).  Before, they
    were means over the burn-in's transitions too."""
    y = np.array([0.3, -0.2, 0.8, 1.1])
    r = th.infer(small(y), th.nuts(["mu", "sigma"]), num_samples=300, burn_in=200, seed=2,
                 progress=False)
    st = r.stats["nuts(['mu', 'sigma'])"]
    assert st["steps"] == 300 and st["burn_in"]["steps"] == 200
    ss = r.sample_stats
    for key, per_draw in (("divergences", "diverging"), ("gradient_evaluations", "n_steps"),
                          ("mean_acceptance", "acceptance_rate")):
        assert st[f"{key}_per_step"] == pytest.approx(ss[per_draw].mean(), rel=1e-12), key
        assert f"{key}_per_step" in st["burn_in"]


def test_a_snapshot_between_draws_computed_ahead_resumes_the_same_draws():
    """A checkpoint pickles the trace and the kernel together (after the chain's flush): the
    transitions computed ahead travel with them, and the resumed chain serves the same ones."""
    import copy
    import pickle

    def draw(k, trace):
        pending = k.pending_draw()
        if pending is not None:
            return pending[0]["mu"], pending[0]["sigma"]
        return trace["mu"], trace["sigma"]

    k = th.nuts(["mu", "sigma"])
    k.run_alone()
    trace = th.initialize(small(np.array([0.3, -0.2, 0.8])), seed=0)
    rng = np.random.default_rng(1)
    for _ in range(10):
        trace = k.step(trace, rng)
    k.flush(trace)
    trace2, k2 = pickle.loads(pickle.dumps((trace, k)))
    rng2 = copy.deepcopy(rng)
    a, b = [], []
    for _ in range(100):
        trace, trace2 = k.step(trace, rng), k2.step(trace2, rng2)
        a.append(draw(k, trace))
        b.append(draw(k2, trace2))
    assert a == b and len(set(a)) > 50


@pytest.mark.parametrize("kernel", ["nuts", "mh"])
def test_jax_numpy_in_a_plate_body_works_under_every_kernel(kernel):
    """``jnp.exp(mu)`` as a plate site's shared scale — the fix the differentiability error
    suggests — gives a family with array-API parameters of batch shape (), whose shape is
    never false: the plate must still read it as shared by the elements (it raised an
    IndexError naming the plate).  Posterior of mu against a grid."""
    import jax.numpy as jnp

    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(0.0, jnp.exp(mu)), y[i])

    y = np.array([0.5, -1.0, 2.0])
    grid = np.linspace(-6.0, 6.0, 24001)
    logp = stats.norm.logpdf(grid) + stats.norm.logpdf(y[:, None], 0.0, np.exp(grid)).sum(0)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = float((w * grid).sum())
    sd = float(np.sqrt((w * (grid - mean) ** 2).sum()))
    cdf = np.cumsum(w)
    sel = th.nuts("mu") if kernel == "nuts" else th.mh("mu", th.drift())
    r = th.infer(m(y), sel, num_samples=3000, burn_in=500, seed=3, progress=False)
    check_continuous(r["mu"][0], mean, sd, lambda x: np.interp(x, grid, cdf), what="mu")


def test_a_gradient_kernel_leaves_jax_precision_of_the_process_as_it_was():
    """thrifty computes in float64 inside its runs (a thread's scoped ``jax.enable_x64``), not
    by switching JAX to 64 bits for the process: that broke JAX code compiled before it
    (NumPyro's chains then received float32 buffers where they expected float64); model code
    written with ``jax.numpy`` runs in float64 wherever thrifty executes it (here
    ``th.simulate``).  In a fresh process, since other tests of this one turn 64 bits on."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import numpy as np, jax, jax.numpy as jnp
        import thrifty as th
        from thrifty import dist

        @th.model
        def m(y):
            mu = th.sample("mu", dist.Normal(0.0, 1.0))
            with th.plate("d", len(y)) as i:
                th.observe("y", dist.Normal(mu, 1.0), y[i])

        @th.model
        def uses_jnp():
            x = th.sample("x", dist.Normal(0.0, 1.0))
            return th.deterministic("e", jnp.exp(x))

        f = jax.jit(lambda a: a - 1.0)
        before = f(jnp.ones(3))
        r = th.infer(m(np.zeros(3)), th.nuts("mu"), num_samples=20, burn_in=20, seed=0,
                     progress=False)
        after = f(jnp.ones(3))
        e = th.simulate(uses_jnp(), seed=0)["e"]
        print(jax.config.jax_enable_x64, before.dtype, after.dtype, r["mu"].dtype, e.dtype)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "float32", "float32", "float64", "float64"], out


def test_a_run_without_jax_does_not_import_it():
    """Some packages register a lazy module for ``jax`` in ``sys.modules`` (ArviZ's NumPyro
    converter does, when NumPyro is installed): a run of a model that does not use JAX must not
    import JAX through that module when it decides whether to switch on JAX's 64-bit types (a
    second's import, and JAX's memory, in every such process).  In a fresh process, with the
    lazy module registered as those packages do."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys, importlib.util
        spec = importlib.util.find_spec("jax")
        spec.loader = importlib.util.LazyLoader(spec.loader)
        lazy = importlib.util.module_from_spec(spec)
        sys.modules["jax"] = lazy
        spec.loader.exec_module(lazy)
        import thrifty as th
        from thrifty import dist

        @th.model
        def m():
            th.sample("mu", dist.Normal(0.0, 1.0))

        th.simulate(m(), seed=0)
        print("jax._src.config" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False"], out


def test_hmc_draws_its_path_length_so_the_variance_mixes():
    """th.hmc with its defaults on a normal mean: with a fixed number of leapfrog steps the
    adapted trajectories were nearly periodic (the draws alternate about the mean; with the
    number fixed at 10, this test's KS test fails); drawn uniformly from 1 to 2L − 1, the
    draws' variance mixes (the ESS of the squared deviations is checked)."""
    from stat_helpers import ess

    rng = np.random.default_rng(1)
    y = rng.normal(1.0, 1.0, 20)

    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 2.0))
        with th.plate("d", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])

    pv = 1 / (1 / 4 + len(y))
    pm = pv * y.sum()
    r = th.infer(m(y), th.hmc("mu"), num_samples=2000, seed=1, progress=False)
    mu = r["mu"][0]
    check_continuous(mu, pm, np.sqrt(pv), stats.norm(pm, np.sqrt(pv)).cdf, what="mu")
    e = ess(((mu - pm) ** 2)[None, :], "mean")
    assert e > 200, f"ESS of the squared deviations {e:.0f} of 2,000 draws"


def test_data_stay_inputs_when_the_model_reads_them_as_arrays():
    """On a model that only computes with its data, the compiled density's log-joint at the
    chain's start agrees with the trace's (the block's log-Jacobians taken out), so the data
    stay inputs — not compiled in as constants after a false alarm."""
    from thrifty.inference.gradient import hmc

    hmc._CACHE.clear()
    th.infer(small(np.array([0.3, -0.2, 0.8, 1.1])), th.nuts(["mu", "sigma"]),
             num_samples=20, burn_in=20, seed=0, progress=False)
    assert hmc.DATA_AS_CONSTANTS not in hmc._CACHE.values()
    assert [c.data_inputs for c in hmc._CACHE.values()] == [True]


@th.model
def resized(k):
    n = th.sample("n", dist.Categorical(probs=np.ones(k) / k)) + 1
    th.sample("mu", dist.Gamma(2.0, 1.0))
    with th.plate("data", n):
        th.sample("x", dist.Normal(0.0, 1.0))


def test_a_block_resized_by_another_kernel_keeps_one_step_size_per_size_after_the_burn_in():
    """th.hmc on [mu, data.x] with th.mh resizing the plate at most steps: the step size
    was chosen anew by the heuristic at the current state (and with the transition's own
    random key) whenever the block's size changed after the burn-in, so each transition
    depended on its start through its step size, and the chain left the posterior: E[log mu]
    z = +6.2 and E[mu] z = +5.5 against Gamma(2, 1) (mean 2.15 for 2.0).  After the burn-in
    the parameters are fixed per structure of the block."""
    from scipy import special

    from stat_helpers import z_threshold

    r = th.infer(resized(8), th.cycle([th.mh("n"), th.hmc(["mu", "data.x"], num_steps=1)]),
                 num_samples=4000, burn_in=200, seed=1, progress=False)
    n, eps = r["n"][0], r.sample_stats["step_size"][0]
    assert all(np.unique(eps[n == v]).size == 1 for v in np.unique(n))
    mu = r["mu"]
    zs = [mean_z(mu, 2.0, np.sqrt(2.0)),
          mean_z(np.log(mu), special.digamma(2.0), np.sqrt(special.polygamma(1, 2.0)))]
    assert max(map(abs, zs)) < z_threshold(2), zs


@th.model
def latent_means(y):
    mu = th.sample("mu", dist.Normal(0.0, 3.0))
    with th.plate("data", len(y)) as i:
        x = th.sample("x", dist.Normal(mu, 1.0))
        th.observe("y", dist.Normal(x, 1.0), y[i])


def test_a_checkpoint_after_nuts_read_elements_a_subsampling_kernel_left_stale(tmp_path):
    """Where the trace's log-joint is not known (elements left stale by th.subsampled_mh),
    NUTS checks its compiled density against the model executed eagerly and remembers the
    compiled functions that agreed: those went into the checkpoint's pickle of the kernel,
    which failed (TypeError: can't pickle local object '_Compiled.__init__.<locals>.probe').
    They stay behind, as the other compiled functions do.  (100 elements, batches of 10 and
    at most 20 of them per decision: the elements a step does not read stay stale, so every
    NUTS step meets an unknown log-joint; a short burn-in, so the adaptation's state is in
    the pickle too — 1,000 elements and the default burn-in of 1,000 steps checked nothing
    more, at three times the cost.)"""
    y = np.random.default_rng(0).normal(1.0, 1.5, 100)
    k = th.mixture([(0.5, th.subsampled_mh("mu", batch_size=10, epsilon=0.1, max_fraction=0.2)),
                    (0.5, th.nuts("data.x"))])
    r = th.infer(latent_means(y), k, num_samples=20, burn_in=20, seed=0, progress=False,
                 checkpoint=str(tmp_path / "c.ckpt"))
    assert r["data.x"].shape == (1, 20, 100)



def test_the_first_draw_of_a_mixture_has_no_statistics_of_the_burn_in():
    """In th.mixture, a draw no NUTS transition preceded has no NUTS statistics; the first
    draw after the burn-in showed the burn-in's last transition (a step size of the
    adaptation, 0.40 beside the 0.25 fixed after it; its divergence counted among the
    draws')."""
    k = th.mixture([(0.3, th.nuts(["mu", "sigma"])), (0.7, th.mh("mu", th.drift(0.3)))])
    r = th.infer(small(np.array([0.3, -0.2, 0.8])), k, num_samples=40, burn_in=160, seed=0,
                 progress=False)
    eps = r.sample_stats["step_size"][0]
    assert np.unique(eps[~np.isnan(eps)]).size == 1
