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


def test_multivariate_on_jax():
    L = np.array([[1.0, 0.0], [0.5, 2.0]])
    d = dist.MvNormal(np.array([0.1, -0.2]), scale_tril=L)
    xs = np.array([[0.3, 1.0], [-1.0, 2.0]])
    np.testing.assert_allclose(np.asarray(jax.jit(d.log_prob)(jnp.asarray(xs))), d.log_prob(xs))
    got = jax.jit(lambda m: dist.MvNormal(m, scale_tril=L).log_prob(xs))(jnp.array([0.1, -0.2]))
    np.testing.assert_allclose(np.asarray(got), d.log_prob(xs))
    dd = dist.Dirichlet(np.array([1.5, 2.0, 3.0]))
    x = np.array([0.2, 0.3, 0.5])
    assert np.isclose(float(jax.jit(dd.log_prob)(jnp.asarray(x))), dd.log_prob(x))


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
    (lambda r, lg: dist.NegativeBinomial(r, logits=lg), (2.5, -0.4)),
    (dist.NegativeBinomial2, (3.0, 2.0)),
    (dist.NegativeBinomial2, (3000.0, 1e6)),  # the coefficient's Stirling form
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


def test_invalid_array_parameters_of_more_families_give_minus_infinity():
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
    ]
    f = jax.jit(lambda args: jnp.stack([jnp.asarray(fn(a)) for (fn, _), a in zip(cases, args)]))
    got = np.asarray(f([a for _, a in cases]))
    assert np.all(got == -np.inf), got
    with pytest.raises(DistributionError, match="probs must be non-negative and sum to 1"):
        dist.Categorical(P + 0.1)
