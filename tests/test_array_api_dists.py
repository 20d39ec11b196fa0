"""The families' array paths on JAX arrays (the gradient kernels' log-densities): the same
numbers as the NumPy path under ``jax.jit``, derivatives equal to central differences of the
NumPy path, invalid array-API parameters giving ``-inf`` (never an exception under ``jit``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from thrifty import dist
from thrifty.errors import DistributionError

jax.config.update("jax_enable_x64", True)

CASES = [
    (dist.Normal, (0.3, 1.7), [-1.0, 0.5, 2.0]),
    (dist.LogNormal, (0.3, 1.7), [0.1, 0.5, 2.0, -1.0]),
    (dist.StudentT, (3.0, 0.3, 1.7), [-1.0, 0.5, 2.0]),
    (dist.Cauchy, (0.3, 1.7), [-1.0, 0.5, 2.0]),
    (dist.Laplace, (0.3, 1.7), [-1.0, 0.5, 2.0]),
    (dist.Uniform, (-1.5, 1.7), [-1.0, 0.5, 2.0]),
    (dist.Exponential, (1.7,), [-1.0, 0.5, 2.0]),
    (dist.Gamma, (2.5, 1.7), [-1.0, 0.5, 2.0]),
    (dist.InverseGamma, (2.5, 1.7), [-1.0, 0.5, 2.0]),
    (dist.Beta, (2.5, 1.7), [-1.0, 0.5, 0.2]),
    (dist.HalfNormal, (1.7,), [-1.0, 0.5, 2.0]),
    (dist.HalfCauchy, (1.7,), [-1.0, 0.5, 2.0]),
    (dist.HalfStudentT, (3.0, 1.7), [-1.0, 0.5, 2.0]),
    (dist.Poisson, (1.7,), [0.0, 1.0, 3.0, 1.5, -1.0]),
]


@pytest.mark.parametrize("cls, params, xs", CASES, ids=[c[0].__name__ for c in CASES])
def test_jax_log_prob_equals_numpy(cls, params, xs):
    ref = cls(*params).log_prob(np.array(xs))
    traced_params = jax.jit(lambda p, x: cls(*p).log_prob(x))(
        tuple(jnp.asarray(p) for p in params), jnp.asarray(xs))
    traced_value = jax.jit(lambda x: cls(*params).log_prob(x))(jnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(traced_params), ref, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(traced_value), ref, rtol=1e-12)
    # a 0-d array parameter with a Python float value goes to the array path (not math)
    g = jax.grad(lambda p0: cls(p0, *params[1:]).log_prob(xs[1]))(jnp.asarray(params[0]))
    e = 1e-6
    fd = (cls(params[0] + e, *params[1:]).log_prob(xs[1])
          - cls(params[0] - e, *params[1:]).log_prob(xs[1])) / (2 * e)
    assert np.isclose(float(g), fd, rtol=1e-5), (float(g), fd)


@pytest.mark.parametrize("kw", [{"logits": 0.3}, {"probs": 0.3}])
def test_bernoulli_and_binomial_on_jax(kw):
    (name, v), = kw.items()
    ref = dist.Bernoulli(**kw).log_prob(np.array([0, 1, 2]))
    got = jax.jit(lambda p: dist.Bernoulli(**{name: p}).log_prob(jnp.array([0, 1, 2])))(v)
    np.testing.assert_allclose(np.asarray(got), ref)
    ref = dist.Binomial(5, **kw).log_prob(np.array([0, 1, 5, 6]))
    got = jax.jit(lambda p: dist.Binomial(5, **{name: p}).log_prob(jnp.array([0, 1, 5, 6])))(v)
    np.testing.assert_allclose(np.asarray(got), ref)


def test_binomial_total_count_as_data_or_traced():
    """An array total_count (data beside a traced p, as in ``Binomial(n[i], p)`` of a plate) is
    checked as the NumPy array it is; a traced total_count (another choice of the gradient run)
    gives -inf where it is not a non-negative integer, as Multinomial's does."""
    n, k, p = np.array([10.0, 3.0, 1.0]), np.array([4, 2, 0]), np.array([0.3, 0.6, 0.2])
    ref = dist.Binomial(n, p).log_prob(k)
    for make in (lambda n_, p_: dist.Binomial(n, p_), lambda n_, p_: dist.Binomial(n_, p),
                 lambda n_, p_: dist.Binomial(n_, p_),
                 lambda n_, p_: dist.Binomial(n, logits=jnp.log(p_) - jnp.log1p(-p_))):
        got = jax.jit(lambda n_, p_, make=make: make(n_, p_).log_prob(k))(n, p)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12)
    g = jax.grad(lambda p_: jnp.sum(dist.Binomial(n, p_).log_prob(k)))(jnp.asarray(p))
    np.testing.assert_allclose(np.asarray(g), k / p - (n - k) / (1 - p), rtol=1e-12)
    # a 0-d traced total_count with a Python float probability
    got = jax.jit(lambda n_: dist.Binomial(n_, 0.3).log_prob(2))(7.0)
    assert np.isclose(float(got), dist.Binomial(7, 0.3).log_prob(2))
    bad = jax.jit(lambda n_: dist.Binomial(n_, jnp.asarray(p)).log_prob(k))
    assert np.array_equal(np.isneginf(np.asarray(bad(np.array([2.5, 3.0, 1.0])))),
                          [True, False, False])
    assert float(jax.jit(lambda n_: dist.Binomial(n_, 0.3).log_prob(0))(-1.0)) == -np.inf
    # NumPy data that is not a count is refused at once, even beside a traced p
    with pytest.raises(DistributionError, match="total_count must be a non-negative integer"):
        jax.jit(lambda p_: dist.Binomial(np.array([2.5, 3.0]), p_).log_prob(1))(0.3)


def test_multivariate_on_jax():
    L = np.array([[1.0, 0.0], [0.5, 2.0]])
    d = dist.MvNormal(np.array([0.1, -0.2]), scale_tril=L)
    xs = np.array([[0.3, 1.0], [-1.0, 2.0]])
    np.testing.assert_allclose(np.asarray(jax.jit(d.log_prob)(jnp.asarray(xs))), d.log_prob(xs))
    got = jax.jit(lambda m: dist.MvNormal(m, scale_tril=L).log_prob(xs))(jnp.array([0.1, -0.2]))
    np.testing.assert_allclose(np.asarray(got), d.log_prob(xs))
    cov = L @ L.T  # traced matrices, each way of giving one
    for name, m in (("scale_tril", L), ("cov", cov), ("precision", np.linalg.inv(cov))):
        got = jax.jit(lambda m, name=name: dist.MvNormal(np.array([0.1, -0.2]), **{name: m})
                      .log_prob(xs))(jnp.asarray(m))
        np.testing.assert_allclose(np.asarray(got), d.log_prob(xs), rtol=1e-12)
    bad = jax.jit(lambda m: dist.MvNormal(np.zeros(2), cov=m).log_prob(xs))  # not PD: density 0
    assert np.all(np.asarray(bad(jnp.array([[1.0, 2.0], [2.0, 1.0]]))) == -np.inf)
    a = np.array([1.5, 2.0, 3.0])
    dd = dist.Dirichlet(a)
    x = np.array([0.2, 0.3, 0.5])
    assert np.isclose(float(jax.jit(dd.log_prob)(jnp.asarray(x))), dd.log_prob(x))
    lp = jax.jit(lambda a: dist.Dirichlet(a).log_prob(x))  # traced concentration
    assert np.isclose(float(lp(jnp.asarray(a))), dd.log_prob(x), rtol=1e-12)
    g = jax.grad(lambda a: dist.Dirichlet(a).log_prob(x))(jnp.asarray(a))
    fd = _central(lambda a: dist.Dirichlet(a).log_prob(x), a)
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6)
    assert float(lp(jnp.array([1.5, -2.0, 3.0]))) == -np.inf


def test_invalid_array_parameters_give_minus_infinity():
    assert float(jax.jit(lambda s: dist.Normal(0.0, s).log_prob(1.0))(-1.0)) == -np.inf
    assert float(jax.jit(lambda a: dist.Gamma(a, 1.0).log_prob(1.0))(np.nan)) == -np.inf
    lo = jax.jit(lambda lo: dist.Uniform(lo, 1.0).log_prob(0.5))
    assert float(lo(2.0)) == -np.inf and np.isclose(float(lo(0.0)), 0.0)
    # outside a trace the NumPy path still raises at once
    with pytest.raises(DistributionError, match="scale must be positive"):
        dist.Normal(0.0, -1.0)



def _central(f, x, e=1e-6):
    """Central differences of the NumPy function ``f`` at the float vector ``x``."""
    x = np.asarray(x, dtype=float)
    return np.array([(f(x + e * u) - f(x - e * u)) / (2 * e) for u in np.eye(x.size)])


COUNT_CASES = [
    (lambda p: dist.Geometric(probs=p), (0.3,)),
    (lambda lg: dist.Geometric(logits=lg), (0.3,)),
    (lambda r, p: dist.NegativeBinomial(r, probs=p), (2.5, 0.3)),
    (dist.NegativeBinomial2, (3000.0, 1e6)),  # (logits; the coefficient's Stirling form)
]


def test_count_families_on_jax():
    xs = np.array([0.0, 1.0, 3.0, 1.5, -1.0, 2000.0])

    @jax.jit
    def run(params):  # (one compilation for every case)
        return [(make(*p).log_prob(xs), make(*c).log_prob(jnp.asarray(xs)),
                 jax.grad(lambda p, make=make: make(*p).log_prob(3))(p))
                for (make, c), p in zip(COUNT_CASES, params)]

    out = run([jnp.asarray(c) for _, c in COUNT_CASES])
    for (make, c), (traced_params, traced_value, g) in zip(COUNT_CASES, out):
        ref = make(*c).log_prob(xs)
        np.testing.assert_allclose(np.asarray(traced_params), ref, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(traced_value), ref, rtol=1e-12)
        fd = _central(lambda p, make=make: make(*p).log_prob(3), c, e=1e-6 * c[-1])
        np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-5, atol=1e-9)


def test_categorical_and_multinomial_on_jax():
    P = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    xs = np.array([[0, 2], [1, 3], [2, -1]])  # 3 and -1 are off the support
    counts = np.array([[1, 2, 2], [0, 0, 5], [1, 1, 1], [-1, 3, 3]])
    grads = (lambda a: dist.Categorical(logits=a).log_prob(2),
             lambda a: dist.Multinomial(4, logits=a).log_prob(np.array([1, 0, 3])))

    @jax.jit
    def run(p, lg, x, c, lg1):
        return ((dist.Categorical(p).log_prob(xs), dist.Categorical(logits=lg).log_prob(xs),
                 dist.Categorical(P).log_prob(x)),
                (dist.Multinomial(5, p[0]).log_prob(counts),
                 dist.Multinomial(5, logits=lg[0]).log_prob(counts),
                 dist.Multinomial(5, P[0]).log_prob(c)),
                [jax.grad(f)(lg1) for f in grads])

    cat, mult, g = run(P, np.log(P) + 1.0, xs, counts, np.array([0.3, -0.2, 1.1]))
    for got in cat:
        np.testing.assert_allclose(np.asarray(got), dist.Categorical(P).log_prob(xs), rtol=1e-12)
    for got in mult:
        np.testing.assert_allclose(np.asarray(got), dist.Multinomial(5, P[0]).log_prob(counts),
                                   rtol=1e-12)
    for f, gf in zip(grads, g):
        np.testing.assert_allclose(np.asarray(gf), _central(f, [0.3, -0.2, 1.1]), rtol=1e-6)


def test_discrete_uniform_and_delta_on_jax():
    xs = np.array([0, 1, 4, 5, 2.5])
    v = np.array([1.0, 2.0])

    @jax.jit
    def run(lo, x, a, y):
        return (dist.DiscreteUniform(lo, 4).log_prob(xs), dist.DiscreteUniform(1, 4).log_prob(x),
                dist.Delta(a).log_prob(v), dist.Delta(v, -0.5).log_prob(y))

    lo, x, a, y = run(1.0, jnp.asarray(xs), 1.0, np.array([[1.0, 2.0], [1.0, 3.0]]))
    for got in (lo, x):
        np.testing.assert_allclose(np.asarray(got), dist.DiscreteUniform(1, 4).log_prob(xs))
    np.testing.assert_allclose(np.asarray(a), dist.Delta(1.0).log_prob(v))
    np.testing.assert_allclose(np.asarray(y), [-0.5, -np.inf])


def test_lkj_cholesky_on_jax():
    from thrifty.transforms import biject_to

    d = dist.LKJCholesky(3, 2.0)
    L = d.sample(np.random.default_rng(0), (3,))
    bad = L.copy()
    bad[0, 0, 1], bad[1, 2, 2], bad[2, 1, 1] = 0.1, -bad[1, 2, 2], 1.1 * bad[2, 1, 1]
    xs = np.concatenate([L, bad])
    t = biject_to(d.support)  # the value as a gradient kernel moves it
    u = t.inverse(L[0])

    @jax.jit
    def run(c, x, u):
        g = jax.grad(lambda u, c: dist.LKJCholesky(3, c).log_prob(t.forward(u)), (0, 1))(u, c)
        return dist.LKJCholesky(3, c).log_prob(xs), d.log_prob(x), g

    traced_c, traced_x, (gu, gc) = run(2.0, xs, u)
    for got in (traced_c, traced_x):
        np.testing.assert_allclose(np.asarray(got), d.log_prob(xs), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gu), _central(lambda u: d.log_prob(t.forward(u)), u),
                               rtol=1e-6)
    fd = _central(lambda c: dist.LKJCholesky(3, c[0]).log_prob(L[0]), [2.0])[0]
    assert np.isclose(float(gc), fd, rtol=1e-6), (float(gc), fd)





def test_beta_normaliser_on_jax_equals_numpy_where_jax_betaln_switches_formulas():
    """JAX's ``betaln`` is off by up to 1.3e-6 where the larger argument is near 8; the
    families' JAX path computes log B(a, b) from log-gammas there, as the NumPy path does."""
    a = np.array([2.4, 2.4, 8.0, 3.1, 8.02, 0.3, 150.0, 2e3])
    b = np.array([8.0, 7.9, 2.3, 8.1, 8.02, 9.0, 4.0, 5.0])
    x = np.full(a.shape, 0.3)
    ref = dist.Beta(a, b).log_prob(x)
    got = jax.jit(lambda a, b: dist.Beta(a, b).log_prob(x))(a, b)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)
    grad = jax.grad(lambda a: dist.Beta(a, 8.0).log_prob(0.3))(2.4)
    fd = _central(lambda v: dist.Beta(v[0], 8.0).log_prob(0.3), [2.4])[0]
    assert np.isclose(float(grad), fd, rtol=1e-6), (float(grad), fd)


WRAPPER_CASES = [  # (family of two parameters, the parameters, values)
    (lambda a, b: dist.Truncated(dist.Cauchy(a, b), -0.5, 2.0), (0.3, 1.7), [-1.0, 0.2, 1.9]),
    (lambda a, b: dist.Truncated(dist.Exponential(a * b), 0.0, 2.0), (1.3, 1.0), [-1.0, 0.6]),
    (lambda a, b: dist.Mixture([a, 1.0 - a], [dist.Normal(-1.0, b), dist.Laplace(1.0, 2.0)]),
     (0.3, 0.5), [-2.0, 0.0, 0.7, np.nan]),
]


def test_truncated_and_mixture_on_jax():
    @jax.jit
    def run(params):  # (one compilation for every case)
        return [(make(*p).log_prob(np.array(xs)), make(*c).log_prob(jnp.asarray(xs)),
                 jax.grad(lambda p, make=make, x=xs[1]: make(*p).log_prob(x))(p))
                for (make, c, xs), p in zip(WRAPPER_CASES, params)]

    out = run([jnp.asarray(c) for _, c, _ in WRAPPER_CASES])
    for (make, c, xs), (traced_params, traced_value, g) in zip(WRAPPER_CASES, out):
        ref = make(*c).log_prob(np.array(xs))
        np.testing.assert_allclose(np.asarray(traced_params), ref, rtol=1e-10)
        np.testing.assert_allclose(np.asarray(traced_value), ref, rtol=1e-10)
        fd = _central(lambda p, make=make, x=xs[1]: make(*p).log_prob(x), c)
        np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-5, atol=1e-9)


TRUNCATED_BASES = [  # (base of JAX parameters, the parameters, low, high)
    (lambda a, b: dist.Normal(a, b), (0.3, 1.7), -0.5, 2.0),
    (lambda a, b: dist.LogNormal(a, b), (0.3, 0.7), 0.5, None),
    (lambda a, b: dist.StudentT(3.0, a, b), (0.0, 1.7), 0.0, None),  # at the centre
    (lambda a, b: dist.Laplace(a, b), (0.3, 1.7), -0.5, 2.0),
    (lambda a, b: dist.Uniform(a, b), (-1.0, 2.5), -0.5, None),
    (lambda a, b: dist.Gamma(a, b), (2.3, 1.2), 0.5, 2.0),
    (lambda a, b: dist.InverseGamma(a, b), (2.3, 1.2), 0.5, 2.0),
    (lambda a, b: dist.Beta(a, b), (2.3, 1.2), 0.2, 0.7),
    (lambda a, b: dist.HalfNormal(a * b), (1.3, 1.0), 0.5, 2.0),
    (lambda a, b: dist.HalfCauchy(a * b), (1.3, 1.0), None, 2.0),
    (lambda a, b: dist.HalfStudentT(3.0, a * b), (1.3, 1.0), 0.5, 2.0),
    (lambda a, b: dist.Poisson(a * b), (2.5, 1.0), 2, 5),
    (lambda a, b: dist.NegativeBinomial(a, probs=b), (2.5, 0.4), 2, 6),
    (lambda a, b: dist.NegativeBinomial2(a, b), (2.5, 3.0), 1, None),  # zero-truncated
]



def test_truncated_cdfs_on_the_array_api():
    """Every cdf on the array API equals the NumPy one: the formulas in the NumPy namespace
    (each JAX special function compiles for a second or so), and the log-normaliser of JAX
    parameters and its derivatives for the cases where they take a special form (the t at its
    centre, the negative binomial at 0)."""
    for make, params, _, _ in TRUNCATED_BASES:
        base = make(*params)
        xs = np.array([-1.0, 0.0, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 6.0])
        with np.errstate(divide="ignore"):
            np.testing.assert_allclose(base._xp_log_cdf(np, xs), base.log_cdf(xs), rtol=1e-10)
            np.testing.assert_allclose(base._xp_log_sf(np, xs), base.log_sf(xs), rtol=1e-10)
    cases = (TRUNCATED_BASES[2], TRUNCATED_BASES[-1])

    def log_z(m, lo, hi):
        return lambda p: dist.Truncated(m(*p), lo, hi)._log_z

    @jax.jit
    def run(params):
        return [jax.value_and_grad(log_z(m, lo, hi))(p) for (m, _, lo, hi), p in zip(cases, params)]

    for (m, c, lo, hi), (got, g) in zip(cases, run([jnp.asarray(c) for _, c, _, _ in cases])):
        ref = dist.Truncated(m(*c), lo, hi)._log_z
        assert np.isclose(float(got), ref, rtol=1e-10), (m(*c), float(got), ref)
        np.testing.assert_allclose(np.asarray(g), _central(log_z(m, lo, hi), c), rtol=1e-6)


def test_the_log_normaliser_of_a_far_tail_has_its_derivative():
    """Truncated to a far tail (40 sd from the centre, either side): the branch of the
    log-normaliser not taken is log 0 there, and its derivative must not reach the one taken
    (NaN: every NUTS trajectory diverged).  Against central differences of the NumPy
    normaliser (exact in log space)."""
    cases = ((40.0, None), (None, -40.0), (38.0, 45.0))

    @jax.jit
    def run(mu):
        return [jax.value_and_grad(lambda m, lo=lo, hi=hi: dist.Truncated(
            dist.Normal(m, 1.0), lo, hi)._log_z)(mu) for lo, hi in cases]

    for (lo, hi), (got, g) in zip(cases, run(jnp.asarray(0.3))):
        def ref(p, lo=lo, hi=hi):
            return dist.Truncated(dist.Normal(p[0], 1.0), lo, hi)._log_z

        assert np.isclose(float(got), ref([0.3]), rtol=1e-9), (lo, hi)
        np.testing.assert_allclose(float(g), _central(ref, (0.3,))[0], rtol=1e-6)


def test_glm_on_jax():
    from thrifty import glm

    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 3))
    w = np.array([0.5, -0.3, 0.8])
    bits = np.array([0, 1, 1, 2, 0.5])  # 2 and 0.5 are off the support
    reals = np.array([0.3, -1.2, 1e200, 0.8, np.nan])
    cases = [(lambda X, w, s: glm.logistic(X, w), bits), (lambda X, w, s: glm.probit(X, w), bits),
             (lambda X, w, s: glm.gaussian(X, w, s), reals),
             (lambda X, w, s: glm.student_t(X, w, 3.0, s), reals),
             (lambda X, w, s: glm.logistic(X, w + 0.0 * X), bits)]  # a theta per observation

    def first_two(make, ys):  # the log-density of the first two observations, of (theta, s)
        return lambda v: make(X[:2], v[:3], v[3]).log_prob(ys[:2]).sum()

    @jax.jit
    def run(v, y):
        return [(make(X, v[:3], v[3]).log_prob(ys), make(X, w, 0.7).log_prob(y[j]),
                 jax.grad(first_two(make, ys))(v)) for j, (make, ys) in enumerate(cases)]

    v = np.append(w, 0.7)
    out = run(v, [ys for _, ys in cases])
    for (make, ys), (traced_params, traced_value, g) in zip(cases, out):
        with np.errstate(over="ignore"):  # (the NumPy Gaussian at y = 1e200)
            ref = make(X, w, 0.7).log_prob(ys)
        np.testing.assert_allclose(np.asarray(traced_params), ref, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(traced_value), ref, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(g), _central(first_two(make, ys), v), rtol=1e-6,
                                   atol=1e-9)


def test_invalid_array_parameters_of_more_families_give_minus_infinity():
    from thrifty import glm

    P = np.array([0.2, 0.3, 0.5])
    cases = [
        (lambda p: dist.Geometric(probs=p).log_prob(1), 0.0),
        (lambda lg: dist.Geometric(logits=lg).log_prob(1), -np.inf),
        (lambda r: dist.NegativeBinomial(r, probs=0.3).log_prob(1), -1.0),
        (lambda p: dist.NegativeBinomial(2.0, probs=p).log_prob(1), 1.0),
        (lambda lg: dist.NegativeBinomial(2.0, logits=lg).log_prob(1), np.inf),
        (lambda m: dist.NegativeBinomial2(m, 2.0).log_prob(1), 0.0),
        (lambda p: dist.Categorical(P + p).log_prob(1), 0.1),  # does not sum to 1
        (lambda lg: dist.Categorical(logits=P + lg).log_prob(1), np.nan),
        (lambda p: dist.Multinomial(2, P - p).log_prob(np.array([1, 1, 0])), 0.25),
        (lambda n: dist.Multinomial(n, P).log_prob(np.array([1, 1, 0])), 2.5),
        (lambda lo: dist.DiscreteUniform(lo, 4).log_prob(2), 1.5),
        (lambda lo: dist.DiscreteUniform(lo, 4).log_prob(2), 5.0),
        (lambda a: dist.Delta(a).log_prob(1.0), np.nan),
        (lambda c: dist.LKJCholesky(2, c).log_prob(np.eye(2)), -1.0),
        (lambda s: dist.Truncated(dist.Cauchy(0.0, s), low=0.0).log_prob(1.0), -1.0),
        (lambda lo: dist.Truncated(dist.Cauchy(0.0, 1.0), lo, 1.0).log_prob(1.0), 1.5),
        (lambda w: dist.Mixture(P[:2] + w, [dist.Normal(0.0, 1.0)] * 2).log_prob(0.0), 0.5),
        (lambda s: dist.Mixture([0.5, 0.5], [dist.Normal(0.0, s), dist.Normal(0.0, 1.0)])
         .log_prob(0.0), -1.0),
        (lambda w: glm.logistic(np.ones(3), P + w).log_prob(1), np.nan),
        (lambda s: glm.gaussian(np.ones(3), P, s).log_prob(0.3), -1.0),
        (lambda df: glm.student_t(np.ones(3), P, df, 1.0).log_prob(0.3), 0.0),
    ]
    f = jax.jit(lambda args: jnp.stack([jnp.asarray(fn(a)) for (fn, _), a in zip(cases, args)]))
    got = np.asarray(f([a for _, a in cases]))
    assert np.all(got == -np.inf), got
    with pytest.raises(DistributionError, match="probs must be non-negative and sum to 1"):
        dist.Categorical(P + 0.1)


def test_numpy_only_parts_are_named():
    from thrifty import glm
    from thrifty.distributions.glm import GLM, GLMFamily

    class NumPyCDF(dist.Normal):
        array_api_cdf = False

    with pytest.raises(DistributionError, match="the cdf of NumPyCDF is written for NumPy only"):
        jax.jit(lambda m: dist.Truncated(NumPyCDF(m, 1.0), low=0.0).log_prob(1.0))(0.5)

    class Squared(GLMFamily):
        def potential(self, eta, y):
            return (eta - y) ** 2

    with pytest.raises(DistributionError, match="family Squared has no xp_log_density"):
        jax.jit(lambda w: GLM(Squared(), np.ones((2, 3)), w).log_prob(np.zeros(2)))(np.ones(3))
    with pytest.raises(ValueError, match="sigma must be positive"):  # the NumPy path raises
        glm.gaussian(np.ones(3), np.ones(3), -1.0)
