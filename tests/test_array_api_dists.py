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
