"""Discrete families."""

from __future__ import annotations

import bisect
import math
import threading

import numpy as np
from scipy.special import expit, gammaln, log_expit, xlog1py, xlogy

from thrifty.distributions import _saddle as saddle
from thrifty.distributions import _special as sm
from thrifty.distributions import constraints, cumulative
from thrifty.distributions.base import (
    F64,
    NP_SCALARS,
    ONE,
    Distribution,
    all_true,
    as_params,
    describe,
    is_integral,
    is_scalar,
    owned,
    scalar_or_array,
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

INF = math.inf
_INT64_MAX = int(np.iinfo(np.int64).max)
ARRAY_PATH = object()  # sentinel of scalar_count: not a scalar, take the array path
_ZERO_ONE = np.array([0, 1])  # (Bernoulli's support, copied for each caller)


def log_softmax(a: np.ndarray) -> np.ndarray:
    """Log-probabilities from logits along the last axis: each row shifted by its largest logit
    before its log-normaliser, ``(a − m) − log Σ exp(a − m)`` (``a − logsumexp(a)`` subtracts a
    normaliser rounded at the scale of the logits, which drops its ``log Σ exp(a − m)`` part
    once they are around 1e16: ``[1e16, 1e16]`` gave log-probabilities ``[0, 0]``).  A row
    whose largest logit is +∞ is the limit of softmax: its mass shared by its +∞ entries."""
    m = a.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        z = np.where(m == INF, np.where(a == INF, 0.0, -INF), a - m)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def check_logits(owner, lg: np.ndarray) -> bool:
    """Logits a categorical family can normalise: none NaN and, in each row, one above −∞
    (else no category has positive probability); False after the owner's error."""
    if not all_true(~np.isnan(lg)):
        owner._fail(f"logits must not be NaN, got {describe(lg)}")
        return False
    if not all_true(lg.max(axis=-1) > -INF):
        owner._fail(f"logits must have an entry above -inf in each row (else no category "
                    f"has positive probability), got {describe(lg)}")
        return False
    return True


def _is_int_scalar(value) -> bool:
    t = type(value)
    if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
        value = NP_SCALARS[t](value)
        t = type(value)
    return t is int or t is bool or isinstance(value, np.integer)


def scalar_count(value):
    """For a Python number or NumPy integer: the value if integral, NaN if not (every support
    test then fails, so ``log_prob`` is -inf).  ``ARRAY_PATH`` for anything else."""
    t = type(value)
    if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
        value = NP_SCALARS[t](value)
        t = type(value)
    if t is int:
        return value
    if t is float:
        return value if value.is_integer() else math.nan
    if t is bool or isinstance(value, np.integer):
        return int(value)
    return ARRAY_PATH


def xmul_array(a, y):
    """``a * y`` elementwise with ``0 * y = 0`` even where ``y`` is infinite."""
    return a * np.where(a == 0, 0.0, y)


def xp_xmul(xp, a, y):
    """:func:`xmul_array` in namespace ``xp``."""
    return a * xp.where(a == 0, 0.0, y)


def xp_counts(xp, value):
    """``(x, ok, k)`` of the array paths of the count families: ``value`` as a float array of
    ``xp``, where it is a non-negative integer (finite), and ``x`` with 0 elsewhere."""
    x = asfloat(xp, value)
    ok = (x == xp.floor(x)) & (x >= 0) & (x < INF)
    return x, ok, xp.where(ok, x, 0.0)


def probs_or_logits(d: Distribution, probs, logits, *others):
    """Shared constructor step of the probs/logits families: ``(others..., p or logits)``."""
    if (probs is None) == (logits is None):
        d._fail("give exactly one of probs or logits")
        probs, logits = 0.5, None
    params, d.batch_shape = as_params(*others, probs if logits is None else logits, owner=d)
    if logits is None:
        d._probs, d.logits = params[-1], None
    else:
        d._probs, d.logits = None, params[-1]
    return params[:-1]


class ProbsLogits(Distribution):
    """Mixin of the families parameterized by ``probs`` or ``logits`` (exactly one is stored)."""

    _probs = None
    logits = None

    @property
    def probs(self):
        if self._probs is None:
            if not self.batch_shape:
                return sm.expit(self.logits)
            self._probs = expit(self.logits)
        return self._probs

    _finite = False  # all logits finite (lets the array log_prob skip the ±inf fix-up)

    # the constructor's parameters before ``probs=None, logits=None`` (see
    # ``Distribution._member_params``); None: :meth:`member` cannot construct an entry
    _member_others: tuple[str, ...] | None = None

    def _member_args(self, k: int) -> dict | None:
        if self._member_others is None:
            return None
        given = ("logits", self.logits) if self.logits is not None else ("probs", self._probs)
        return self._entry([(n, getattr(self, n)) for n in self._member_others] + [given], k)

    def _check_probs(self, closed_at_zero=True):
        if self.logits is not None:
            lg = self.logits
            if type(lg) is not float and is_foreign(lg):
                return self._check(lg == lg if closed_at_zero else lg > -INF, "")
            if closed_at_zero:
                if type(lg) is np.ndarray:
                    self._finite = bool(np.isfinite(lg).all())
                    if not self._finite and np.isnan(lg).any():
                        self._fail(f"logits must not be NaN, got {describe(lg)}")
                elif not lg == lg:
                    self._fail(f"logits must not be NaN, got {describe(lg)}")
            elif not all_true(lg > -INF):
                self._fail(f"logits must not be NaN or -inf, got {describe(lg)}")
            return
        p = self._probs
        if type(p) is not float and is_foreign(p):
            return self._check(((p >= 0) if closed_at_zero else (p > 0)) & (p <= 1), "")
        if closed_at_zero:
            if not all_true((p >= 0) & (p <= 1)):
                self._fail(f"probs must be in [0, 1], got {describe(p)}")
        elif not all_true((p > 0) & (p <= 1)):
            self._fail(f"probs must be in (0, 1], got {describe(p)}")

    def _log_p_q(self):
        """``(log p, log(1 - p))`` as arrays (array path)."""
        if self.logits is not None:
            return log_expit(self.logits), log_expit(-self.logits)
        with np.errstate(divide="ignore"):
            return np.log(self._probs), np.log1p(-self._probs)

    def _xp_log_p_q(self, xp):
        """``(log p, log(1 - p))`` in namespace ``xp``."""
        if self.logits is not None:
            sp = special(xp)
            return sp.log_expit(self.logits), sp.log_expit(-self.logits)
        return xp.log(self._probs), xp.log1p(-self._probs)

    def _pq_repr(self):
        if self.logits is not None:
            return f"logits={describe(self.logits)}"
        return f"probs={describe(self._probs)}"


_SCRATCH = threading.local()


def _scratch(shape: tuple, slot: int) -> np.ndarray:
    """A reusable float work array per thread (fresh large arrays cost page faults)."""
    bufs = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    a = bufs.get(slot)
    if a is None or a.shape != shape:
        a = bufs[slot] = np.empty(shape)
    return a


def bernoulli_logits_lp(x: np.ndarray, z: np.ndarray, finite: bool = False) -> np.ndarray:
    """``x·z − softplus(z)`` for values ``x`` in {0, 1} — the hot path of logistic likelihoods.

    softplus(z) = max(z, 0) + log1p(exp(−|z|)) is evaluated in two reused work arrays, so the
    returned array is the only new allocation; infinite logits and values outside {0, 1} fall
    back to the exact general formula.
    """
    sp, m = _scratch(z.shape, 0), _scratch(z.shape, 1)
    np.abs(z, out=sp)
    np.negative(sp, out=sp)
    np.exp(sp, out=sp)
    np.log1p(sp, out=sp)
    np.maximum(z, 0.0, out=m)
    sp += m
    lp = x * z if x.dtype != np.bool_ else np.where(x, z, 0.0)
    lp -= sp
    if x.dtype.kind in "iu" and x.size and (x.min() < 0 or x.max() > 1):
        lp[(x != 0) & (x != 1)] = -np.inf
    elif x.dtype.kind == "f" and not np.all((x == 0) | (x == 1)):
        lp[(x != 0) & (x != 1)] = -np.inf
    if not finite and not np.all(np.isfinite(z)):  # ±inf logits: 0·inf, inf − inf
        pos = np.isposinf(z)
        neg = np.isneginf(z)
        lp[pos] = np.where(x[pos] == 1, 0.0, -np.inf)
        lp[neg] = np.where(x[neg] == 0, 0.0, -np.inf)
    return lp


class Bernoulli(ProbsLogits):
    """Bernoulli distribution on {0, 1}, given ``probs`` or ``logits`` (exactly one).

    >>> from thrifty import dist
    >>> dist.Bernoulli(probs=0.25).log_prob(1) == __import__("math").log(0.25)
    True
    """

    support_varies = False  # ({0, 1})
    is_discrete = True
    has_enumerate_support = True
    domain = constraints.boolean
    array_api = True

    _member_others = ()

    def __init__(self, probs=None, logits=None):
        if type(probs) is float and logits is None and 0.0 <= probs <= 1.0:
            # (a valid scalar probability: the common case, checked here; the attributes the
            # general path sets, so that the object reads and pickles the same)
            self.batch_shape, self._probs, self.logits = (), probs, None
            return
        probs_or_logits(self, probs, logits)
        self._check_probs()

    def sample(self, rng, shape=()):
        p = self.probs
        if not shape and not self.batch_shape:
            return int(rng.random() < p)
        return (rng.random(tuple(shape) + self.batch_shape) < p).astype(np.int64)

    def log_prob(self, value):
        if not self.batch_shape:
            if type(value) is np.ndarray:
                if value.shape == ONE and value.dtype.kind in "biuf":
                    k = value.item()  # one plate element: the array path's terms, on floats
                    if k != 0 and k != 1:
                        return np.array([-INF])
                    out = np.empty(1)  # (``np.array([lp])`` without its type discovery)
                    out[0] = self._scalar_lp(k == 1)
                    return out
                k = scalar_count(value) if not value.ndim else ARRAY_PATH
            else:
                k = scalar_count(value)
            if k is not ARRAY_PATH:
                if k != 0 and k != 1:
                    return -INF
                if self.logits is not None:
                    return sm.log_expit(self.logits if k else -self.logits)
                p = self._probs
                if k:
                    return math.log(p) if p > 0 else -INF
                return math.log1p(-p) if p < 1 else -INF
        if takes_foreign(self, value):
            xp = namespace(value, self.logits, self._probs)
            x = asfloat(xp, value)
            log_p, log_q = self._xp_log_p_q(xp)
            lp = xp.where(x == 1, log_p, log_q)
            return finish(xp, self, xp.where((x == 0) | (x == 1), lp, -INF))
        x = np.asarray(value)
        lg = self.logits
        if type(lg) is np.ndarray and lg.ndim and x.shape == lg.shape and x.dtype.kind in "biuf":
            return bernoulli_logits_lp(x, lg, self._finite)
        if not self.batch_shape and x.dtype.kind in "biuf":  # one p: its two terms by math
            lp1, lp0 = self._scalar_lp(True), self._scalar_lp(False)
            if x.ndim and x.dtype.kind in "biu" and x.size and 0 <= x.min() and x.max() <= 1:
                return np.array([lp0, lp1])[x.astype(np.intp, copy=False)]  # (a gather: two
                # where()s on random labels mispredict a branch per element, ~10x slower)
            return scalar_or_array(np.where(x == 1, lp1, np.where(x == 0, lp0, -INF)))
        ok = (x == 0) | (x == 1)
        log_p, log_q = self._log_p_q()
        return scalar_or_array(np.where(ok, np.where(x == 1, log_p, log_q), -np.inf))

    def _scalar_lp(self, one: bool) -> float:
        """log P(x = 1) (``one``) or log P(x = 0) for a scalar parameter."""
        lg = self.logits
        if lg is not None:
            return sm.log_expit(lg if one else -lg)
        p = self._probs
        if one:
            return math.log(p) if p > 0 else -INF
        return math.log1p(-p) if p < 1 else -INF

    def enumerate_support(self):
        return _ZERO_ONE.copy()  # (``np.array([0, 1])``, without its type discovery)

    def support_size(self) -> int:
        return 2

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        p = self.probs
        return p * (1 - p)

    def _params_repr(self):
        return self._pq_repr()


class Categorical(Distribution):
    """Categorical distribution on {0, ..., K-1}, given ``probs`` or ``logits`` (last axis K).

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Categorical(np.array([0.2, 0.8]))
    >>> d.enumerate_support().tolist(), round(d.log_prob(1), 4)
    ([0, 1], -0.2231)
    """

    support_varies = False  # (0..K-1, K the last axis of every entry)
    is_discrete = True
    has_enumerate_support = True
    domain = constraints.nonnegative_integer
    array_api = True
    _cdf = None

    _q = None  # the probabilities as a list of Python floats (one small distribution)

    def __init__(self, probs=None, logits=None):
        if (logits is None and type(probs) is np.ndarray and probs.dtype is F64
                and probs.ndim == 1 and 0 < probs.shape[0] <= 16):
            # the common small case (a row of a transition matrix): checked on Python floats,
            # which sample and log_prob then read
            q = probs.tolist()
            if min(q) >= 0 and abs(sum(q) - 1.0) < 1e-6:
                self.probs, self._q, self.num_categories = probs, q, len(q)
                return
        if (probs is None) == (logits is None):
            self._fail("give exactly one of probs or logits")
            probs = np.ones(1)
        if probs is not None:
            if type(probs) is np.ndarray:
                p = probs
            elif holds_foreign(probs):
                return self._init_array_api(probs, None)
            else:
                p = np.asarray(probs, dtype=float)
            if p.dtype is not F64 and p.dtype != np.float64:  # (identity: the usual dtype)
                p = p.astype(float)
            if p.ndim == 0:
                self._fail(f"probs must have at least one dimension, got {describe(p)}")
                p = p.reshape(1)
            if p.ndim == 1 and 0 < p.shape[0] <= 16:  # the common small case: Python is faster
                q = p.tolist()
                if min(q) >= 0 and abs(sum(q) - 1.0) < 1e-6:
                    self.probs, self._q = p, q  # (valid: the rest of the shape is known)
                    self.num_categories = len(q)
                    return
                ok = False
            else:
                ok = all_true(p >= 0) and all_true(np.abs(p.sum(-1) - 1.0) < 1e-6)
            if not ok:
                self._fail(f"probs must be non-negative and sum to 1, got {describe(p)}")
            self.probs = p
            self._logp = None  # computed on first use
        else:
            if holds_foreign(logits):
                return self._init_array_api(None, logits)
            lg = np.asarray(logits, dtype=float)
            if lg.ndim == 0:
                self._fail(f"logits must have at least one dimension, got {describe(lg)}")
                lg = lg.reshape(1)
            if lg.size and not check_logits(self, lg):
                lg = np.zeros(lg.shape)
            self._logp = log_softmax(lg)
            self._logits = lg  # (as given: the entries of a batch are built from it)
            self.probs = np.exp(self._logp)
        self.batch_shape = self.probs.shape[:-1]
        self.num_categories = self.probs.shape[-1]

    _logits = None  # the logits it was given (None: given probs)
    _logp = None  # the log-probabilities (given probs: computed on first use)

    def _member_args(self, k: int) -> dict | None:
        if self._logits is not None:
            return {"logits": self._logits[k]}
        return {"probs": self.probs[k]}

    def _init_array_api(self, probs, logits):
        """``probs`` or ``logits`` an array of another library (JAX): where they are invalid is
        recorded (``_valid``), not raised."""
        xp = namespace(*entries(probs if logits is None else logits))
        a = asfloat(xp, probs if logits is None else logits)
        if a.ndim == 0:
            name = "probs" if logits is None else "logits"
            self._fail(f"{name} must have at least one dimension, got a 0-d array")
            a = xp.reshape(a, (1,))
        if logits is None:
            self._invalid_unless(xp.all(a >= 0, axis=-1)
                                 & (xp.abs(xp.sum(a, axis=-1) - 1.0) < 1e-6))
            self.probs, self._logp = a, xp.log(a)
        else:
            self._invalid_unless(xp.all(a == a, axis=-1))
            z = a - xp.max(a, axis=-1, keepdims=True)  # (as log_softmax)
            self._logp = z - special(xp).logsumexp(z, axis=-1, keepdims=True)
            self.probs = xp.exp(self._logp)
        self.batch_shape = ArrayAPIShape(a.shape[:-1])
        self.num_categories = a.shape[-1]

    @property
    def logits(self):
        if self._logp is None:
            with np.errstate(divide="ignore"):
                self._logp = np.log(self.probs)
        return self._logp

    @property
    def support(self):
        return constraints.integer_interval(0, self.num_categories - 1)

    def sample(self, rng, shape=()):
        K = self.num_categories
        if not shape and not self.batch_shape and K <= 16:
            u = rng.random()
            acc = 0.0
            q = self._q
            for k, p in enumerate(self.probs.tolist() if q is None else q):
                acc += p
                if u < acc:
                    return k
            return K - 1
        if self._cdf is None:
            self._cdf = np.cumsum(self.probs, axis=-1)
        if not shape and not self.batch_shape:
            return min(bisect.bisect_right(self._cdf, rng.random()), K - 1)
        shape = tuple(shape) + tuple(self.batch_shape)
        u = rng.random((*shape, 1))
        return np.minimum((u >= self._cdf).sum(-1), K - 1).astype(np.int64)

    def log_prob(self, value):
        q = self._q
        if q is not None and type(value) is int:  # (one small distribution, an int value)
            if not 0 <= value < len(q):
                return -INF
            p = q[value]
            return math.log(p) if p > 0 else -INF
        K = self.num_categories
        if not self.batch_shape and (type(value) is int or _is_int_scalar(value)):
            if not 0 <= value < K:
                return -INF
            probs = self.probs  # (NumPy's item: the Python float that float(probs[k]) is)
            p = probs.item(int(value)) if type(probs) is np.ndarray else float(probs[int(value)])
            return math.log(p) if p > 0 else -INF
        if takes_foreign(self, value):  # the array API: the log-probability picked by a one-hot
            logp = self.logits
            xp = namespace(value, logp)
            x = asfloat(xp, value)
            ok = (x >= 0) & (x < K) & (x == xp.floor(x))
            hot = x[..., None] == xp.arange(K, dtype=xp.float64)
            lp = xp.sum(xp.where(hot, logp, 0.0), axis=-1)
            return finish(xp, self, xp.where(ok, lp, -INF), masked=True)
        x = np.asarray(value)
        ok = (x >= 0) & (x < K) & (x == np.floor(x))
        xi = np.where(ok, x, 0).astype(np.int64)
        shape = np.broadcast_shapes(xi.shape, tuple(self.batch_shape))
        logp = np.broadcast_to(self.logits, (*shape, K))
        lp = np.take_along_axis(logp, np.broadcast_to(xi, shape)[..., None], axis=-1)[..., 0]
        return scalar_or_array(np.where(ok, lp, -np.inf))

    def enumerate_support(self):
        return np.arange(self.num_categories)

    def support_size(self) -> int:
        return self.num_categories

    @property
    def mean(self):
        return (self.probs * np.arange(self.num_categories)).sum(-1)

    @property
    def variance(self):
        k = np.arange(self.num_categories)
        m = self.mean
        return (self.probs * k**2).sum(-1) - m**2

    def _params_repr(self):
        return f"probs={describe(self.probs)}"


class Binomial(ProbsLogits):
    """Number of successes in ``total_count`` Bernoulli trials with success ``probs`` / ``logits``.

    >>> from thrifty import dist
    >>> d = dist.Binomial(2, probs=0.5)
    >>> d.enumerate_support().tolist(), round(d.log_prob(1), 6)  # log(1/2)
    ([0, 1, 2], -0.693147)
    """

    is_discrete = True
    has_enumerate_support = True
    domain = constraints.nonnegative_integer
    array_api = True

    _member_others = ("total_count",)

    def __init__(self, total_count, probs=None, logits=None):
        (n,) = probs_or_logits(self, probs, logits, total_count)
        self.total_count = n = owned(n)  # (its support: read after the site)
        if type(self.batch_shape) is ArrayAPIShape and type(n) is not float:
            if is_foreign(total_count):  # (a traced count: where it is invalid is recorded)
                xp = namespace(n)
                self._invalid_unless((n == xp.floor(n)) & (n >= 0) & (n < INF))
            else:  # NumPy data beside parameters of another library: checked as given
                n = np.asarray(total_count, dtype=float)
        if type(n) is float or type(n) is np.ndarray:
            if not all_true(is_integral(n) & (n >= 0)):
                self._fail(f"total_count must be a non-negative integer, got {describe(n)}")
        self._check_probs()

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return rng.binomial(int(self.total_count), self.probs)
        n = np.asarray(self.total_count).astype(np.int64)  # numpy refuses float arrays
        return rng.binomial(n, self.probs, tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        n = self.total_count
        if not self.batch_shape:
            k = scalar_count(value)
            if k is not ARRAY_PATH:
                if not 0 <= k <= n:
                    return -INF
                if n >= saddle.LARGE:  # lgamma(n + 1) would cancel away the digits
                    return saddle.binomial(float(k), float(n), *self._scalar_pq())
                lp = math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)
                if self.logits is None:
                    return lp + sm.xlogy(k, self._probs) + sm.xlog1my(n - k, self._probs)
                lg = self.logits
                return lp + sm.xmul(k, sm.log_expit(lg)) + sm.xmul(n - k, sm.log_expit(-lg))
        xp = namespace(value, n, self.logits, self._probs)
        if xp is not np:  # (no saddle-point form: counts beyond 1e7 lose digits)
            sp = special(xp)
            x = asfloat(xp, value)
            ok = (x == xp.floor(x)) & (x >= 0) & (x <= n)
            k = xp.where(ok, x, 0.0)
            log_p, log_q = self._xp_log_p_q(xp)
            lp = (sp.gammaln(n + 1.0) - sp.gammaln(k + 1.0) - sp.gammaln(n - k + 1.0)
                  + xp.where(k > 0, k * log_p, 0.0) + xp.where(n - k > 0, (n - k) * log_q, 0.0))
            return finish(xp, self, xp.where(ok, lp, -INF), masked=True)
        x = np.asarray(value, dtype=float)
        ok = is_integral(x) & (x >= 0) & (x <= n)
        k = np.where(ok, x, 0.0)
        lp = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
        if self.logits is None:
            lp = lp + xlogy(k, self._probs) + xlog1py(n - k, -self._probs)
        else:
            lp = (lp + xmul_array(k, log_expit(self.logits))
                  + xmul_array(n - k, log_expit(-self.logits)))
        big = np.asarray(n) >= saddle.LARGE
        if big.any():  # saddle-point form for large total counts
            lp = np.where(big, saddle.binomial_array(k, n, *self._array_pq()), lp)
        return scalar_or_array(np.where(ok, lp, -np.inf))

    def _scalar_pq(self) -> tuple:
        """(p, q, log p, log q) of scalar parameters, from probs or (exactly) from logits."""
        if self.logits is None:
            p = float(self._probs)
            return p, 1.0 - p, math.log(p) if p > 0 else -INF, sm.xlog1my(1.0, p)
        lg = float(self.logits)
        return sm.expit(lg), sm.expit(-lg), sm.log_expit(lg), sm.log_expit(-lg)

    def _array_pq(self) -> tuple:
        """:meth:`_scalar_pq` of array parameters."""
        if self.logits is None:
            p = np.asarray(self._probs, dtype=float)
            with np.errstate(divide="ignore"):
                return p, 1.0 - p, np.log(p), np.log1p(-p)
        lg = np.asarray(self.logits, dtype=float)
        return expit(lg), expit(-lg), log_expit(lg), log_expit(-lg)

    def enumerate_support(self):
        return np.arange(int(np.max(self.total_count)) + 1)

    def support_size(self) -> int:
        return int(np.max(self.total_count)) + 1

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def variance(self):
        p = self.probs
        return self.total_count * p * (1 - p)

    def _params_repr(self):
        return f"total_count={describe(self.total_count)}, {self._pq_repr()}"


class Poisson(cumulative.PoissonCDF, Distribution):
    """Poisson distribution with mean ``rate`` (``rate >= 0``; ``rate = 0`` is a point mass at 0).

    >>> from thrifty import dist
    >>> dist.Poisson(2.0).log_prob(0) == -2.0, dist.Poisson(2.0).log_prob(1.5)
    (True, -inf)
    """

    is_discrete = True
    domain = constraints.nonnegative_integer
    array_api = True

    _member_params = ("rate",)

    def __init__(self, rate):
        (self.rate,), self.batch_shape = as_params(rate, owner=self)
        self._check_nonnegative("rate", self.rate)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return rng.poisson(self.rate)
        return rng.poisson(self.rate, tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        rate = self.rate
        if not self.batch_shape:
            k = scalar_count(value)
            if k is not ARRAY_PATH:
                if not 0 <= k < INF:
                    return -INF
                if k >= saddle.LARGE:  # lgamma(k + 1) would cancel away the digits
                    return saddle.poisson(float(k), float(rate))
                return sm.xlogy(k, rate) - rate - math.lgamma(k + 1.0)
        xp = namespace(value, rate)
        if xp is not np:  # (no saddle-point form: counts beyond 1e7 lose digits)
            sp = special(xp)
            x = asfloat(xp, value)
            ok = (x == xp.floor(x)) & (x >= 0) & (x < INF)
            k = xp.where(ok, x, 0.0)
            return finish(xp, self, xp.where(ok, sp.xlogy(k, rate) - rate - sp.gammaln(k + 1.0),
                                              -INF))
        x = np.asarray(value, dtype=float)
        ok = is_integral(x) & (x >= 0)
        k = np.where(ok, x, 0.0)
        lp = xlogy(k, rate) - rate - gammaln(k + 1.0)
        big = k >= saddle.LARGE
        if big.any():  # saddle-point form for large counts
            lp = np.where(big, saddle.poisson_array(np.where(big, k, saddle.LARGE), rate), lp)
        return scalar_or_array(np.where(ok, lp, -np.inf))

    @property
    def mean(self):
        return self.rate

    @property
    def variance(self):
        return self.rate

    def _params_repr(self):
        return f"rate={describe(self.rate)}"


class Geometric(ProbsLogits):
    """Number of failures before the first success in Bernoulli trials with success ``probs``.

    Support {0, 1, 2, ...}; pmf ``p (1 - p)^k`` (``scipy.stats.geom(p, loc=-1)``).  ``probs`` must
    be in (0, 1] (``logits`` not ``-inf``).

    >>> from thrifty import dist
    >>> d = dist.Geometric(probs=0.5)
    >>> round(d.log_prob(0), 6), round(d.log_prob(2), 6), d.mean
    (-0.693147, -2.079442, 1.0)
    """

    is_discrete = True
    domain = constraints.nonnegative_integer
    array_api = True

    _member_others = ()

    def __init__(self, probs=None, logits=None):
        probs_or_logits(self, probs, logits)
        self._check_probs(closed_at_zero=False)

    def sample(self, rng, shape=()):
        # numpy counts trials, we count failures; it returns int64's largest for a count
        # beyond it (p ≲ 1e-18): a refusal (a DistributionError naming the site), not a draw
        if not shape and not self.batch_shape:
            k = rng.geometric(self.probs)
            if k == _INT64_MAX:
                raise OverflowError(f"a count beyond int64's largest, {_INT64_MAX}")
            return k - 1
        k = rng.geometric(self.probs, tuple(shape) + self.batch_shape)
        if (k == _INT64_MAX).any():
            raise OverflowError(f"a count beyond int64's largest, {_INT64_MAX}")
        return k - 1

    def log_prob(self, value):
        if not self.batch_shape:
            k = scalar_count(value)
            if k is not ARRAY_PATH:
                if not 0 <= k < INF:
                    return -INF
                if self.logits is None:
                    return math.log(self._probs) + sm.xlog1my(k, self._probs)
                return sm.log_expit(self.logits) + sm.xmul(k, sm.log_expit(-self.logits))
        xp = namespace(value, self.logits, self._probs)
        sp = special(xp)
        _, ok, k = xp_counts(xp, value)
        if self.logits is None:
            lp = xp.log(self._probs) + sp.xlog1py(k, -self._probs)
        else:
            lp = sp.log_expit(self.logits) + xp_xmul(xp, k, sp.log_expit(-self.logits))
        return finish(xp, self, xp.where(ok, lp, -INF), masked=True)

    @property
    def mean(self):  # (1 - p) / p, which is exp(-logits)
        if self.logits is not None:
            return np.exp(-self.logits) if self.batch_shape else math.exp(-self.logits)
        return (1.0 - self._probs) / self._probs

    @property
    def variance(self):  # (1 - p) / p^2
        return self.mean / self.probs

    def _params_repr(self):
        return self._pq_repr()


class DiscreteUniform(Distribution):
    """Uniform distribution on the integers ``low, low + 1, ..., high`` (both included).

    >>> from thrifty import dist
    >>> d = dist.DiscreteUniform(1, 4)
    >>> d.enumerate_support().tolist(), d.log_prob(4) == -__import__("math").log(4), d.log_prob(5)
    ([1, 2, 3, 4], True, -inf)
    """

    is_discrete = True
    has_enumerate_support = True
    domain = constraints.integer
    array_api = True

    _member_params = ("low", "high")

    def __init__(self, low=0, high=1):
        (lo, hi), self.batch_shape = as_params(low, high, owner=self)
        self.low, self.high = owned(lo), owned(hi)  # (its support: read after the site)
        if type(self.batch_shape) is ArrayAPIShape:  # bounds of another library: recorded
            xp = namespace(self.low, self.high)
            lo, hi = asfloat(xp, self.low), asfloat(xp, self.high)
            self._invalid_unless((lo == xp.floor(lo)) & (hi == xp.floor(hi)) & (lo <= hi)
                                 & (lo > -INF) & (hi < INF))
        elif not all_true(is_integral(self.low)):
            self._fail(f"low must be an integer, got {describe(self.low)}")
        elif not all_true(is_integral(self.high)):
            self._fail(f"high must be an integer, got {describe(self.high)}")
        elif not all_true(self.low <= self.high):
            self._fail(
                f"low must not exceed high, got low={describe(self.low)}, "
                f"high={describe(self.high)}"
            )

    @property
    def support(self):
        return constraints.integer_interval(self.low, self.high)

    def sample(self, rng, shape=()):
        if not shape and not self.batch_shape:
            return int(rng.integers(int(self.low), int(self.high) + 1))
        low = np.asarray(self.low, dtype=np.int64)
        high = np.asarray(self.high, dtype=np.int64)
        return rng.integers(low, high + 1, tuple(shape) + self.batch_shape)

    def log_prob(self, value):
        if not self.batch_shape:
            k = scalar_count(value)
            if k is not ARRAY_PATH:
                if self.low <= k <= self.high:
                    return -math.log(self.high - self.low + 1.0)
                return -INF
        low, high = self.low, self.high
        xp = namespace(value, low, high)
        x = asfloat(xp, value)
        ok = (x == xp.floor(x)) & (x >= low) & (x <= high)  # (the bounds are finite)
        return finish(xp, self, xp.where(ok, -xp.log(high - low + 1.0), -INF), masked=True)

    def enumerate_support(self):
        return np.arange(int(np.min(self.low)), int(np.max(self.high)) + 1)

    def support_size(self) -> int:
        return int(np.max(self.high)) - int(np.min(self.low)) + 1

    @property
    def mean(self):
        return 0.5 * (self.low + self.high)

    @property
    def variance(self):
        n = self.high - self.low + 1.0
        return (n * n - 1.0) / 12.0

    def _params_repr(self):
        return f"low={describe(self.low)}, high={describe(self.high)}"


class Delta(Distribution):
    """Point mass at ``value`` with log-density ``log_density`` there (for deterministic sites).

    ``event_shape`` is the shape of ``value``; ``log_prob(x)`` is ``log_density`` where ``x``
    equals ``value`` (all of the event) and ``-inf`` elsewhere.

    >>> import numpy as np
    >>> from thrifty import dist
    >>> d = dist.Delta(np.array([1.0, 2.0]))
    >>> d.event_shape, d.log_prob(np.array([1.0, 2.0])), d.log_prob(np.array([1.0, 3.0]))
    ((2,), 0.0, -inf)
    """

    is_discrete = True
    has_enumerate_support = True
    domain = constraints.any_value
    array_api = True

    def __init__(self, value, log_density=0.0):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if t is float or t is int or t is bool:
            nan = value != value
        elif is_foreign(value):
            return self._init_array_api(value, log_density)
        else:
            if is_scalar(value):
                value = value.item() if isinstance(value, (np.generic, np.ndarray)) else value
            else:
                value = np.array(value)
                self.event_shape = value.shape
            v = np.asarray(value)
            nan = v.dtype.kind in "fc" and not all_true(~np.isnan(v))
        self.value = value
        if nan:
            self._fail(f"value must not be NaN, got {describe(value)}")
        t = type(log_density)
        if t is not float and t is not int:
            if is_foreign(log_density):
                return self._init_array_api(self.value, log_density)
            if not is_scalar(log_density):
                self._fail(f"log_density must be a scalar, got {describe(log_density)}")
                log_density = 0.0
            log_density = float(log_density)
        self.log_density = float(log_density)
        self._check_finite("log_density", log_density)

    def _init_array_api(self, value, log_density):
        """``value`` or ``log_density`` an array of another library (JAX): a NaN value or a
        non-finite density is recorded (``_valid``), not raised."""
        xp = namespace(value, log_density)
        if is_foreign(value):
            self.event_shape = tuple(value.shape)
            self._invalid_unless(xp.all(value == value))
        elif not is_scalar(value):
            value = np.array(value)
            self.event_shape = value.shape
        self.value = value
        if getattr(log_density, "ndim", 0):
            self._fail("log_density must be a scalar, got an array of shape "
                       f"{tuple(log_density.shape)}")
            log_density = 0.0
        self.log_density = asfloat(xp, log_density)
        self._invalid_unless(xp.abs(self.log_density) < INF)
        self.batch_shape = ArrayAPIShape(())

    def sample(self, rng, shape=()):
        if not shape and not self.event_shape:
            return self.value
        return np.array(np.broadcast_to(self.value, tuple(shape) + self.event_shape))

    def log_prob(self, value):
        t = type(value)
        if t in NP_SCALARS:  # a NumPy scalar (data indexed one by one)
            value = NP_SCALARS[t](value)
            t = type(value)
        if not self.event_shape and (t is float or t is int or t is bool) and not self.batch_shape:
            return self.log_density if value == self.value else -INF
        if takes_foreign(self, value):
            xp = namespace(value, self.value, self.log_density)
            eq = xp.asarray(value) == xp.asarray(self.value)
            if self.event_shape:
                eq = xp.all(eq, axis=tuple(range(-len(self.event_shape), 0)))
            return finish(xp, self, xp.where(eq, self.log_density, -INF), masked=True)
        eq = np.asarray(value) == self.value
        if self.event_shape:
            eq = np.all(eq, axis=tuple(range(-len(self.event_shape), 0)))
        return scalar_or_array(np.where(eq, self.log_density, -np.inf))

    def enumerate_support(self):
        return np.asarray(self.value)[None]

    @property
    def mean(self):
        return self.value if not self.event_shape else self.value.copy()

    @property
    def variance(self):
        return np.zeros(self.event_shape) if self.event_shape else 0.0

    def _params_repr(self):
        return f"value={describe(self.value)}, log_density={self.log_density!r}"
