"""Count families: ``NegativeBinomial``, ``NegativeBinomial2`` (mean / concentration) and
``Multinomial`` (vector-valued, ``event_shape = (K,)``)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import (
    betainc,
    betaincc,
    gammaln,
    log_expit,
)

from thrifty.distributions import _saddle as saddle
from thrifty.distributions import _special as sm
from thrifty.distributions import constraints
from thrifty.distributions.base import (
    Distribution,
    all_true,
    as_params,
    describe,
    is_integral,
    scalar_or_array,
)
from thrifty.distributions.cumulative import (
    Cumulative,
    as_counts,
    stats_module,
    xp_log1mexp,
    xp_log_inside,
)
from thrifty.distributions.discrete import (
    ARRAY_PATH,
    ProbsLogits,
    check_logits,
    log_softmax,
    probs_or_logits,
    scalar_count,
    xmul_array,
    xp_counts,
    xp_xmul,
)
from thrifty.distributions.xp import (
    ArrayAPIShape,
    asfloat,
    entries,
    finish,
    holds_foreign,
    is_foreign,
    namespace,
    special,
    takes_foreign,
)
from thrifty.errors import DistributionError

INF = math.inf


_STIRLING_MIN = 1e3  # from here on the Stirling series (3 terms) is exact to double precision


def _stirling_tail(x):
    """``log Γ(x) - ((x - 1/2) log x - x + log(2π)/2)`` for ``x >= 1e3`` (error < 1e-24);
    evaluated everywhere, and kept where ``x >= 1e3`` (a Python float as a NumPy one: a tiny
    ``x`` gives ``inf``, not ZeroDivisionError)."""
    if type(x) is float:
        x = np.float64(x)
    x2 = x * x
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / (1260.0 * x2)) / x2) / x


def _lgamma_diff(a, b, xp=np, x=None):
    """``log Γ(a + b) - log Γ(a)`` (``a, a + b > 0``), without the cancellation of two large
    log-gammas: for ``a, a + b >= 1e3`` the Stirling forms are subtracted analytically,
    ``(a - 1/2) log1p(b/a) + b log(a + b) - b`` plus the difference of the series tails.
    ``x``: ``a + b`` computed by the caller without rounding (``k + r`` where ``b = r - 1``
    rounds a tiny ``r`` away: ``log Γ(0)``).  Arrays of namespace ``xp``."""
    lgamma = special(xp).gammaln
    if x is None:
        x = a + b
    big = xp.minimum(a, x) >= _STIRLING_MIN
    with np.errstate(all="ignore"):
        direct = lgamma(x) - lgamma(a)
        stirling = (a - 0.5) * xp.log1p(b / a) + b * xp.log(x) - b
        stirling = stirling + (_stirling_tail(x) - _stirling_tail(a))
    return xp.where(big, stirling, direct)


def _nb_log_coeff(r, k, xp=np):
    """``log Γ(k + r) - log Γ(r) - log k!`` (the log binomial coefficient of the negative
    binomial), expanding around the larger of ``r`` and ``k + 1``."""
    lgamma = special(xp).gammaln
    with np.errstate(all="ignore"):
        from_r = _lgamma_diff(r, k, xp) - lgamma(k + 1.0)
        from_k = _lgamma_diff(k + 1.0, r - 1.0, xp, k + r) - lgamma(r)
    return xp.where(r >= k + 1.0, from_r, from_k)


class NegativeBinomial(Cumulative, ProbsLogits):
    """Negative binomial: the number of successes before the ``total_count``-th failure, in
    Bernoulli trials whose success probability is ``probs`` (or ``logits = log(p / (1 - p))``).

    This is the NumPyro / PyTorch convention (``NegativeBinomialProbs`` /
    ``NegativeBinomialLogits``): with ``r = total_count`` (any real ``r > 0``) and ``p = probs``,

        P(k) = Γ(k + r) / (Γ(r) k!) · p^k (1 - p)^r,   k = 0, 1, 2, ...

    mean ``r p / (1 - p)`` (``r exp(logits)``), variance ``mean / (1 - p)``.  In scipy's
    convention (failures before the ``n``-th success) this is ``scipy.stats.nbinom(r, 1 - p)``.
    ``probs`` must be in ``[0, 1)`` (``p = 0`` is a point mass at 0); ``logits`` below ``+inf``.
    It is also the Gamma-Poisson mixture: ``k ~ Poisson(λ)``, ``λ ~ Gamma(r, rate=(1 - p) / p)``.
    For the mean / dispersion form of Stan and PyMC see :class:`NegativeBinomial2`.

    >>> from thrifty import dist
    >>> d = dist.NegativeBinomial(2.0, probs=0.25)
    >>> round(d.log_prob(0), 6), round(d.mean, 6)  # 2 log(3/4); mean 2 · (1/4) / (3/4)
    (-0.575364, 0.666667)
    """

    is_discrete = True
    domain = constraints.nonnegative_integer
    array_api = True

    def __init__(
        self,
        total_count: float | np.ndarray,
        probs: float | np.ndarray | None = None,
        logits: float | np.ndarray | None = None,
    ):
        (self.total_count,) = probs_or_logits(self, probs, logits, total_count)
        self._check_positive("total_count", self.total_count)
        self._check_nb_probs()

    def _check_nb_probs(self):
        if self.logits is not None:
            lg = self.logits
            if type(lg) is not float and is_foreign(lg):
                self._invalid_unless(lg < INF)
            elif not all_true(lg < INF):  # NaN fails too
                self._fail(f"logits must not be NaN or +inf, got {describe(lg)}")
            return
        p = self._probs
        if type(p) is not float and is_foreign(p):
            self._invalid_unless((p >= 0) & (p < 1))
        elif not all_true((p >= 0) & (p < 1)):
            self._fail(f"probs must be in [0, 1), got {describe(p)}")

    def _log_p_q(self):  # (log p, log(1 - p)); p = 0 gives log p = -inf
        if self.logits is not None:
            return log_expit(self.logits), log_expit(-self.logits)
        with np.errstate(divide="ignore"):
            return np.log(self._probs), np.log1p(-self._probs)

    def _failure_prob(self):
        """``1 - p`` (scipy's success probability), precise from either parameter."""
        if self.logits is not None:
            return np.exp(log_expit(-np.asarray(self.logits, dtype=float)))
        return 1.0 - np.asarray(self._probs, dtype=float)

    def sample(self, rng, shape=()):
        q = self._failure_prob()  # numpy counts failures before n successes of probability q
        if not shape and not self.batch_shape:
            return int(rng.negative_binomial(self.total_count, float(q)))
        return rng.negative_binomial(self.total_count, q, tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        r = self.total_count
        if not self.batch_shape:
            k = scalar_count(value)
            if k is not ARRAY_PATH:
                if not 0 <= k < INF:
                    return -INF
                if r < _STIRLING_MIN and k < _STIRLING_MIN:
                    lp = math.lgamma(k + r) - math.lgamma(r) - math.lgamma(k + 1.0)
                else:  # large arguments: without the cancellation of the log-gammas
                    lp = float(_nb_log_coeff(r, float(k)))
                if self.logits is None:
                    return lp + sm.xlogy(k, self._probs) + r * math.log1p(-self._probs)
                lg = self.logits
                return lp + sm.xmul(k, sm.log_expit(lg)) + r * sm.log_expit(-lg)
        xp = namespace(value, r, self.logits, self._probs)
        sp = special(xp)
        _, ok, k = xp_counts(xp, value)
        lp = _nb_log_coeff(r, k, xp)
        if self.logits is None:
            lp = lp + sp.xlogy(k, self._probs) + sp.xlog1py(r, -self._probs)
        else:
            lp = lp + xp_xmul(xp, k, sp.log_expit(self.logits)) + r * sp.log_expit(-self.logits)
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    # P(X <= k) = I_{1-p}(r, k + 1) (regularized incomplete beta), the survival function its
    # complement, each computed directly
    def cdf(self, value):
        k = np.floor(np.asarray(value, dtype=float))
        with np.errstate(invalid="ignore"):
            c = betainc(self.total_count, np.maximum(k, 0.0) + 1.0, self._failure_prob())
        return scalar_or_array(np.where(k < 0, 0.0, c))

    def sf(self, value):
        k = np.floor(np.asarray(value, dtype=float))
        with np.errstate(invalid="ignore"):
            s = betaincc(self.total_count, np.maximum(k, 0.0) + 1.0, self._failure_prob())
        return scalar_or_array(np.where(k < 0, 1.0, s))

    def icdf(self, q):
        return as_counts(stats_module().nbinom.ppf(q, self.total_count, self._failure_prob()))

    def isf(self, s):
        return as_counts(stats_module().nbinom.isf(s, self.total_count, self._failure_prob()))

    # On the array API: I_q(r, k + 1) and I_p(k + 1, r), except that P(X <= 0) = q^r is taken
    # in closed form at fixed (NumPy) points k <= 0 (zero truncation): differentiable in r
    array_api_cdf = True

    def _xp_log_q(self, xp):
        if self.logits is not None:
            return special(xp).log_expit(-self.logits)
        return xp.log1p(-asfloat(xp, self._probs))

    def _xp_at_zero(self, x):
        return not is_foreign(x) and bool(np.all(np.floor(x) <= 0))

    def _xp_log_cdf(self, xp, x):
        if self._xp_at_zero(x):
            log_q0 = self.total_count * self._xp_log_q(xp)
            return xp.where(asfloat(xp, np.floor(x)) < 0, -INF, log_q0)
        q = xp.exp(self._xp_log_q(xp))
        f = special(xp).betainc
        k = xp.floor(asfloat(xp, x))
        return xp_log_inside(xp, k >= 0, lambda k: f(self.total_count, k + 1.0, q), k, 0.0, -INF)

    def _xp_log_sf(self, xp, x):
        if self._xp_at_zero(x):
            log_q0 = self.total_count * self._xp_log_q(xp)
            return xp.where(asfloat(xp, np.floor(x)) < 0, 0.0, xp_log1mexp(xp, log_q0))
        p = -xp.expm1(self._xp_log_q(xp))
        f = special(xp).betainc
        k = xp.floor(asfloat(xp, x))
        return xp_log_inside(xp, k >= 0, lambda k: f(k + 1.0, self.total_count, p), k, 0.0, 0.0)

    @property
    def mean(self):
        if self.logits is not None:
            e = np.exp(self.logits) if self.batch_shape else math.exp(self.logits)
            return self.total_count * e
        return self.total_count * self._probs / (1.0 - self._probs)

    @property
    def variance(self):
        return self.mean / scalar_or_array(self._failure_prob())

    def _params_repr(self):
        return f"total_count={describe(self.total_count)}, {self._pq_repr()}"


class NegativeBinomial2(NegativeBinomial):
    """Negative binomial by its ``mean`` μ and ``concentration`` φ (Stan's ``neg_binomial_2``,
    PyMC's ``NegativeBinomial(mu, alpha)``, NumPyro's ``NegativeBinomial2``).

    Variance ``μ + μ² / φ``; as φ -> inf it tends to ``Poisson(μ)``.  It is
    ``NegativeBinomial(total_count=φ, logits=log(μ / φ))`` (success probability
    ``μ / (μ + φ)``), i.e. ``scipy.stats.nbinom(φ, φ / (μ + φ))``.  Both parameters must be
    positive.

    >>> from thrifty import dist
    >>> d = dist.NegativeBinomial2(3.0, 2.0)
    >>> d.mean, d.variance, round(d.log_prob(0), 6)  # 3 + 9/2; log (2/5)^2
    (3.0, 7.5, -1.832581)
    """

    def __init__(self, mean: float | np.ndarray, concentration: float | np.ndarray):
        (self._mean, self.concentration), self.batch_shape = as_params(
            mean, concentration, owner=self
        )
        self._check_positive("mean", self._mean)
        self._check_positive("concentration", self.concentration)
        self.total_count = self.concentration
        self._probs = None
        if type(self.batch_shape) is ArrayAPIShape:  # parameters of another library (JAX)
            xp = namespace(self._mean, self.concentration)
            self.logits = xp.log(self._mean) - xp.log(self.concentration)
            return
        with np.errstate(all="ignore"):
            lg = np.log(self._mean) - np.log(self.concentration)
        self.logits = lg if self.batch_shape else float(lg)

    @property
    def mean(self):
        return self._mean

    @property
    def variance(self):
        return self._mean + self._mean**2 / self.concentration

    def _params_repr(self):
        return f"mean={describe(self._mean)}, concentration={describe(self.concentration)}"


class Multinomial(Distribution):
    """Multinomial: the counts in ``K`` categories of ``total_count`` independent draws with
    probabilities ``probs`` (or ``logits``, normalised over the last axis); ``event_shape = (K,)``.

        P(x) = n! / (x_1! ... x_K!) · p_1^x_1 ... p_K^x_K,   x_i >= 0 integers, Σ x_i = n

    (``scipy.stats.multinomial(n, p)``; NumPyro's ``Multinomial(total_count, probs, logits)``).
    ``log_prob`` is ``-inf`` for vectors that are not non-negative integers summing to
    ``total_count``.  ``batch_shape`` broadcasts ``total_count`` with ``probs.shape[:-1]``.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Multinomial(3, np.array([0.5, 0.25, 0.25]))
    >>> round(d.log_prob(np.array([1, 1, 1])), 6), d.event_shape  # log(6 / 32)
    (-1.673976, (3,))
    """

    is_discrete = True
    domain = constraints.nonnegative_integer_vector
    array_api = True

    def __init__(
        self,
        total_count: int | np.ndarray,
        probs: np.ndarray | None = None,
        logits: np.ndarray | None = None,
    ):
        if (probs is None) == (logits is None):
            self._fail("give exactly one of probs or logits")
            probs, logits = np.ones(1), None
        if holds_foreign(probs) or holds_foreign(logits) or is_foreign(total_count):
            return self._init_array_api(total_count, probs, logits)
        name = "probs" if logits is None else "logits"
        a = np.asarray(probs if logits is None else logits, dtype=float)
        if a.ndim == 0:
            self._fail(f"{name} must have at least one dimension, got {describe(a)}")
            a = np.ones(1) if logits is None else np.zeros(1)
        if logits is None:
            if not (all_true(a >= 0) and all_true(np.abs(a.sum(-1) - 1.0) < 1e-6)):
                self._fail(f"probs must be non-negative and sum to 1, got {describe(a)}")
            self.probs = a
            with np.errstate(divide="ignore"):
                self._logp = np.log(a)
        else:
            if a.size and not check_logits(self, a):
                a = np.zeros(a.shape)
            self._logp = log_softmax(a)
            self.probs = np.exp(self._logp)
        n = np.asarray(total_count, dtype=float)
        if not all_true(is_integral(n) & (n >= 0)):
            self._fail(f"total_count must be a non-negative integer, got {describe(n)}")
            n = np.zeros(())
        try:
            self.batch_shape = np.broadcast_shapes(n.shape, a.shape[:-1])
        except ValueError:
            self._fail(f"total_count shape {n.shape} and {name} shape {a.shape} do not broadcast")
            n, self.batch_shape = np.zeros(()), a.shape[:-1]
        self.total_count = float(n) if n.ndim == 0 else n
        self.event_shape = a.shape[-1:]

    def _init_array_api(self, total_count, probs, logits):
        """Parameters of another library (JAX): where they are invalid is recorded
        (``_valid``), not raised."""
        name = "probs" if logits is None else "logits"
        xp = namespace(total_count, *entries(probs if logits is None else logits))
        a = asfloat(xp, probs if logits is None else logits)
        if a.ndim == 0:
            self._fail(f"{name} must have at least one dimension, got a 0-d array")
            a = xp.reshape(a, (1,))
        if logits is None:
            valid = xp.all(a >= 0, axis=-1) & (xp.abs(xp.sum(a, axis=-1) - 1.0) < 1e-6)
            self.probs, self._logp = a, xp.log(a)
        else:
            valid = xp.all(a == a, axis=-1)
            z = a - xp.max(a, axis=-1, keepdims=True)  # (as log_softmax)
            self._logp = z - special(xp).logsumexp(z, axis=-1, keepdims=True)
            self.probs = xp.exp(self._logp)
        n = asfloat(xp, total_count)
        try:
            batch = np.broadcast_shapes(n.shape, a.shape[:-1])
        except ValueError:
            self._fail(f"total_count shape {n.shape} and {name} shape {a.shape} do not broadcast")
            n, batch = xp.zeros(()), a.shape[:-1]
        self._invalid_unless(valid & (n == xp.floor(n)) & (n >= 0) & (n < INF))
        self.total_count, self.batch_shape, self.event_shape = n, ArrayAPIShape(batch), a.shape[-1:]

    @property
    def logits(self):
        return self._logp

    def sample(self, rng, shape=()):
        n = np.asarray(self.total_count).astype(np.int64)
        p = self.probs / self.probs.sum(-1, keepdims=True)  # numpy rejects sums above 1 + 1e-12
        size = tuple(shape) + tuple(self.batch_shape)
        return rng.multinomial(n, p, size=size or None)

    def log_prob(self, value):
        if takes_foreign(self, value):
            return self._xp_log_prob(value)
        x = np.asarray(value, dtype=float)
        K = self.event_shape[0]
        if x.ndim == 0 or x.shape[-1] != K:
            raise DistributionError(f"Multinomial: value must have shape (..., {K}), got {x.shape}")
        n = self.total_count
        ok = np.all(is_integral(x) & (x >= 0), axis=-1) & (x.sum(-1) == n)
        k = np.where(is_integral(x) & (x >= 0), x, 0.0)
        lp = (gammaln(np.asarray(n) + 1.0) - gammaln(k + 1.0).sum(-1)
              + xmul_array(k, self._logp).sum(-1))
        big = np.asarray(n) >= saddle.LARGE
        if np.any(big):  # log n! would cancel away the digits
            lp = np.where(big, _multinomial_saddle(k, np.where(big, n, saddle.LARGE), self._logp),
                          lp)
        return scalar_or_array(np.where(ok, lp, -np.inf))

    def _xp_log_prob(self, value):
        """``log_prob`` on the array API (no saddle-point form: counts beyond 1e7 lose digits)."""
        n, logp = self.total_count, self._logp
        xp = namespace(value, n, logp)
        sp = special(xp)
        x = asfloat(xp, value)
        K = self.event_shape[0]
        if x.ndim == 0 or x.shape[-1] != K:
            raise DistributionError(f"Multinomial: value must have shape (..., {K}), got "
                                    f"{tuple(x.shape)}")
        count = (x == xp.floor(x)) & (x >= 0) & (x < INF)
        ok = xp.all(count, axis=-1) & (xp.sum(x, axis=-1) == n)
        k = xp.where(count, x, 0.0)
        lp = (sp.gammaln(n + 1.0) - xp.sum(sp.gammaln(k + 1.0), axis=-1)
              + xp.sum(xp_xmul(xp, k, logp), axis=-1))
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):
        n = np.asarray(self.total_count)[..., None]
        return np.broadcast_to(n * self.probs, self.batch_shape + self.event_shape)

    @property
    def variance(self):
        n = np.asarray(self.total_count)[..., None]
        p = self.probs
        return np.broadcast_to(n * p * (1.0 - p), self.batch_shape + self.event_shape)

    def _params_repr(self):
        return f"total_count={describe(self.total_count)}, probs={describe(self.probs)}"


def _multinomial_saddle(x, n, log_p):
    """log Multinomial(x; n, p) in Loader's saddle-point form (see :mod:`._saddle`): with
    δ Stirling's error and D the deviance, summing over the categories with x_i > 0,

        δ(n) + ½ log 2πn − n Σ_{x_i = 0} p_i − Σ_i [D(x_i, n p_i) + δ(x_i) + ½ log 2πx_i],

    every term of the size of the result: each category's x log x cancels against n log n,
    and Σ_{x_i > 0} (n p_i − x_i) = −n Σ_{x_i = 0} p_i, by Σ x_i = n and Σ p_i = 1, before
    anything is rounded (as in Loader's binomial, of which this is the K-category form)."""
    n = np.asarray(n, dtype=float)
    nn = n[..., None]
    pos = x > 0
    xi = np.where(pos, x, 1.0)
    with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
        m = nn * np.exp(log_p)
        term = (saddle.bd0_array(xi, m, np.log(nn) + log_p) + saddle.stirlerr_array(xi)
                + saddle.HALF_LOG_2PI + 0.5 * np.log(xi))
        absent = n * np.where(pos, 0.0, np.exp(log_p)).sum(-1)
    return (saddle.stirlerr_array(n) + saddle.HALF_LOG_2PI + 0.5 * np.log(n) - absent
            - np.where(pos, term, 0.0).sum(-1))
