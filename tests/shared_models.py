"""Small models and checks shared by several test modules (SMH, subsampled MH, proxies), and
models that worker processes unpickle by reference — a module light to import (a spawned worker
imports the module of the model it runs; a test module would bring scipy.stats, ArviZ and
pytest with it, about a second of each worker's start)."""

import copy

import numpy as np

import thrifty as th
from thrifty import dist, glm


@th.model
def mean_of_normals(y):
    """y_i ~ N(mu, 1), mu ~ N(0, 10²)."""
    mu = th.sample("mu", dist.Normal(0.0, 10.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, 1.0), y[i])


@th.model
def robust_with_scale(X, y):
    """Student-t GLM whose noise scale ``s`` is a choice of its own (moved by another kernel)."""
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    s = th.sample("s", dist.Gamma(20.0, 20.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.student_t(X[i], w, 4.0, max(s, 1e-6)), y[i])


@th.model
def bernoulli_model(X, y):
    """Logistic regression written without thrifty.distributions.glm: not a GLM as far as SMH can
    tell."""
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Bernoulli(logits=X[i] @ w), y[i])


@th.model
def extra_plate_term(X, y):
    """GLM observations plus a non-GLM term of ``w`` in the same plate."""
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], w), y[i])
        th.factor("extra", -0.1 * (X[i] @ w) ** 2)


@th.model
def ar_chain(T):
    """AR(1) states with one observation each: φ's sections are the markov steps."""
    phi = th.sample("phi", dist.Uniform(-1.0, 1.0))

    def step(t, prev):
        h = th.sample("h", dist.Normal(0.0 if prev is None else phi * prev, 0.5))
        th.observe("x", dist.Normal(h, 0.2), 0.0)
        return h

    return th.markov("h", step, T)


def assert_copy_replays(kernel, trace, steps=30, seed=5) -> None:
    """A deep copy of ``kernel`` (its cached set-up dropped) continues the same chain."""
    k2 = copy.deepcopy(kernel)
    t1, t2 = copy.deepcopy(trace), copy.deepcopy(trace)
    r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(steps):
        kernel.step(t1, r1)
        k2.step(t2, r2)
    np.testing.assert_array_equal(t1["w"], t2["w"])


class Slow(th.Kernel):
    """Delegates to ``inner`` after sleeping ``Slow.delay`` seconds per step (a class attribute,
    part of a checkpoint's fingerprint of the kernel): slows a run down enough to interrupt it.
    With the environment variable ``THRIFTY_TEST_MARK_DIR`` set, each process running a chain
    creates a file ``chain-<pid>`` there after 100 steps (so that a test knows when to
    interrupt)."""

    delay = 0.001

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def step(self, trace, rng):
        import os
        import time

        time.sleep(Slow.delay)
        mark = os.environ.get("THRIFTY_TEST_MARK_DIR")
        if mark and Slow.delay and not getattr(self, "_marked", False):
            self._steps = getattr(self, "_steps", 0) + 1
            if self._steps >= 100:  # this chain has run (and reported) for a while: say so
                open(os.path.join(mark, f"chain-{os.getpid()}"), "w").close()
                self._marked = True
        return self.inner.step(trace, rng)

    def kernels(self):
        return self.inner.kernels()

    def label(self):
        return self.inner.label()


@th.model
def abs_weights(X, y):
    """Logistic rows whose weights are |w|: equal to the choice w only where w > 0 (the GLM
    section check of SMH and the Taylor proxies must refuse it)."""
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    with th.plate("data", len(y)) as i:
        th.observe("y", glm.logistic(X[i], np.abs(w)), y[i])


@th.model
def small(y):
    """A normal mean and scale (NUTS across worker processes, test_gradient.py)."""
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    sigma = th.sample("sigma", dist.Gamma(5.0, 5.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, sigma), y[i])
