"""What a coupled process provides to the engine: the protocol of exchangeable random procedures.

A *process* (``th.CRP``, ``th.PitmanYor``) is sampled inside a plate, one draw per element:
``z = th.sample("z", crp)``.  Its draws are exchangeable, not independent, so the engine keeps,
in the plate's node, one :class:`State` per process site — the sufficient statistics of the
draws (a seating) — and scores a change of one element by the predictive given the others
(:mod:`thrifty.core.coupled`; Venture's exchangeable SPs with sufficient statistics, paper 000
§4.2).  The engine names no particular process: everything it needs is here.

**A process** (subclass of :class:`Process`) declares ``param_names`` and provides

* ``invalid(params) -> str | None`` — why a tuple of hyperparameter values is invalid;
* ``state(params) -> State`` — the empty statistics under those hyperparameters;
* ``value_error(v) -> str | None`` — why ``v`` cannot be one of its draws.

**A state** (subclass of :class:`State`) provides ``params``, ``with_params(params)`` (the same
draws under other hyperparameters), ``incorporate(v)`` / ``unincorporate(v)``, ``sample(rng)``
(a draw from the predictive given the incorporated draws), ``predictive_log_prob(v)``,
``candidates(v)`` (the values a Gibbs update of a draw now at ``v`` enumerates), ``log_prob()``
(the joint density of the incorporated draws), ``copy()`` and ``fork()``.

**Owned hyperparameters.**  A hyperparameter given as a distribution is drawn *by the process*:
``th.CRP(alpha=dist.Gamma(1.0, 1.0), name="alpha")`` makes an ordinary latent choice at
``("alpha",)`` (so ``result["alpha"]`` and ``th.mh("alpha", ...)`` work as for any choice), and
the process keeps no copy of its value: only its address.  The engine hands the value to the
plate sites that sample the process and to nothing else, so a change of it changes nothing the
model's code computes — by construction, not by convention — and the engine does not re-run
what follows it: the plates re-score their states under the new value (O(K) for K tables),
executing no element.  Asked for an owned hyperparameter (``crp.alpha``), the process raises.
A hyperparameter given as a number (``th.CRP(alpha)``, with ``alpha`` drawn by the model) is the
model's value like any other: program order applies, and a change of it re-runs the plates
that follow (O(N)).

>>> import thrifty as th
>>> from thrifty import dist
>>> @th.model
... def seating(n):
...     crp = th.CRP(alpha=dist.Gamma(2.0, 1.0), name="alpha")   # α drawn at ("alpha",)
...     with th.plate("guests", n):
...         th.sample("table", crp)
>>> t = th.simulate(seating(5), seed=0)
>>> sorted(t.values())
['alpha', 'guests.table']
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

from thrifty import _context
from thrifty.core.address import as_name, fmt
from thrifty.distributions.base import Distribution
from thrifty.errors import (
    DistributionError,
    ModelError,
    NotDifferentiable,
    OwnedParameterError,
)


class Owned:
    """A hyperparameter drawn by a process: the address of its choice and the run that drew it."""

    __slots__ = ("addr", "serial")

    def __init__(self, addr: tuple, serial: int):
        self.addr, self.serial = addr, serial

    def __reduce__(self):
        return (Owned, (self.addr, self.serial))


class Process(ABC):
    """An exchangeable random procedure sampled in a plate (see the module docstring)."""

    coupled = True  # draws coupled across a plate's elements (the engine's marker)
    is_discrete = True
    batch_shape = event_shape = shape = ()
    _error = None
    param_names: tuple[str, ...] = ()

    def __init__(self, name=None, **params):
        owned = [k for k in self.param_names if isinstance(params[k], Distribution)]
        if owned and name is None:
            raise ModelError(
                f"{type(self).__name__}({', '.join(f'{k}=...' for k in owned)}): a "
                "hyperparameter given as a distribution is drawn by the process; name its "
                f"address, e.g. {type(self).__name__}({owned[0]}=dist.Gamma(1.0, 1.0), "
                f"name={owned[0]!r})"
            )
        spec = []
        for k in self.param_names:
            v = params[k]
            if isinstance(v, Distribution):
                where = as_name(name) if len(owned) == 1 else as_name(name) + (k,)
                spec.append(_own(self, where, v))
                continue
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise DistributionError(
                    f"{type(self).__name__}: {k} must be a number or a distribution, got {v!r}"
                ) from None
            spec.append(x)
            object.__setattr__(self, k, x)  # a value of the model's: readable
        self._spec = tuple(spec)
        if not owned:  # invalid values: an error when the model is first run, later a rejection
            self._error = self.invalid(self._spec)

    # -- what a process provides ---------------------------------------------------------------
    @staticmethod
    @abstractmethod
    def invalid(params: tuple) -> str | None:
        """Why the hyperparameter values ``params`` are invalid, or None."""

    @abstractmethod
    def state(self, params: tuple) -> State:
        """The empty statistics under the hyperparameters ``params``."""

    def value_error(self, v) -> str | None:
        """Why ``v`` cannot be a draw of the process, or None."""
        return None

    # -- what the engine asks ------------------------------------------------------------------
    def resolve(self, run) -> tuple:
        """The hyperparameter values in ``run``: numbers as given, owned ones from the run."""
        out = []
        for s in self._spec:
            if type(s) is Owned:
                if s.serial != run.serial:
                    raise ModelError(
                        f"{type(self).__name__} drawing {fmt(s.addr)} was created in another "
                        "execution of the program; create the process in the model's body, so "
                        "that every execution creates its own"
                    )
                s = run.owned[s.addr]
            out.append(s)
        return tuple(out)

    def __getattr__(self, name):
        if name in type(self).param_names:
            s = self._spec[type(self).param_names.index(name)]
            raise OwnedParameterError(
                f"{type(self).__name__}: {name} is drawn by the process at {fmt(s.addr)} and "
                "not handed to the model's code (so an MH step on it re-scores the process "
                "without re-running the model). To use its value in the model, draw it "
                f"yourself — {name} = th.sample({s.addr[-1]!r}, ...); "
                f"{type(self).__name__}({name}) — at the cost of re-running the plates that "
                f"follow at each change of {name}"
            )
        raise AttributeError(name)

    # -- outside a plate ----------------------------------------------------------------------
    def _outside(self):
        raise ModelError(
            f"a {type(self).__name__} draw outside a plate: its draws are coupled, so draw them "
            'inside a plate, one per element (with th.plate("data", N): z = th.sample("z", p))'
        )

    def sample(self, rng, shape=()):
        self._outside()

    def log_prob(self, value):
        self._outside()

    def __repr__(self) -> str:
        parts = [f"{k}={s:.4g}" if type(s) is float else f"{k}=<drawn at {fmt(s.addr)}>"
                 for k, s in zip(self.param_names, self._spec)]
        return f"{type(self).__name__}({', '.join(parts)})"


def _own(process, name: tuple, d) -> Owned:
    """Draw the hyperparameter at ``name`` in the active run (see the module docstring)."""
    runs = _context.EXECUTIONS.runs
    run = runs[-1] if runs else None
    own = getattr(getattr(run, "frame", None), "sample_owned", None)
    if own is None:
        where = ("outside a program run" if run is None
                 else "here (inside a plate or a particle run)")
        raise ModelError(
            f"{type(process).__name__}: a hyperparameter drawn by the process ({fmt(name)}) "
            f"cannot be drawn {where}; create the process in the model's body, outside plates"
        )
    try:
        return Owned(own(name, d), run.serial)
    except NotDifferentiable as e:  # (a gradient run: it takes no owned hyperparameter)
        raise NotDifferentiable(f"{type(process).__name__}: {e}") from None


class State(ABC):
    """The statistics of a process's draws in one plate (see the module docstring)."""

    latent = True  # the joint of latent choices (a plate node's coupled state)
    params: tuple = ()

    @abstractmethod
    def with_params(self, params: tuple) -> State: ...

    @abstractmethod
    def incorporate(self, v) -> None: ...

    @abstractmethod
    def unincorporate(self, v) -> None: ...

    @abstractmethod
    def sample(self, rng): ...

    @abstractmethod
    def predictive_log_prob(self, v) -> float: ...

    @abstractmethod
    def candidates(self, v) -> list: ...

    @abstractmethod
    def log_prob(self) -> float: ...

    @abstractmethod
    def copy(self) -> State: ...

    def fork(self) -> State:
        """The state a forked trace's node keeps: itself (a run changes a copy, never the
        committed statistics)."""
        return self


class Tables(State):
    """A seating of customers at tables labelled by integers (the Chinese-restaurant family).

    Subclasses give the predictive weights — ``weight(c)`` of a table with ``c`` customers,
    ``new_weight()`` of a new table, both over ``n + norm_shift()`` — and ``log_prob()``.  The
    counts are the statistics: ``incorporate`` / ``unincorporate`` are O(1), ``candidates`` and
    ``predictive`` O(K).  A new table gets the smallest label never used.  ``discount`` (0 unless
    a subclass says otherwise) enters the kept sum Σ_k log Γ(n_k − discount).
    """

    discount = 0.0

    def __init__(self, params: tuple):
        self.params = tuple(params)
        self.counts: dict[int, int] = {}
        self.n = 0
        self.next_label = 0
        self._slg = 0.0  # Σ_k log Γ(n_k − discount), kept by incorporate / unincorporate

    @abstractmethod
    def weight(self, c: int) -> float: ...

    @abstractmethod
    def new_weight(self) -> float: ...

    @abstractmethod
    def norm_shift(self) -> float: ...

    def copy(self) -> Tables:
        """The same seating (O(K)): a run changes a copy, never the trace's statistics."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out.counts = dict(self.counts)
        return out

    def with_params(self, params: tuple) -> Tables:
        out = self.copy()
        out.params = tuple(params)
        if out.discount != self.discount:  # the kept sum depends on it: O(K)
            d = out.discount
            out._slg = sum(math.lgamma(c - d) for c in out.counts.values())
        return out

    def incorporate(self, table: int) -> None:
        c = self.counts.get(table, 0)
        # log Γ(c + 1 − d) − log Γ(c − d) = log(c − d); a new table adds log Γ(1 − d)
        self._slg += math.log(c - self.discount) if c else math.lgamma(1.0 - self.discount)
        self.counts[table] = c + 1
        self.n += 1
        if table >= self.next_label:
            self.next_label = table + 1

    def unincorporate(self, table: int) -> None:
        c = self.counts[table] - 1
        if c:
            self.counts[table] = c
            self._slg -= math.log(c - self.discount)
        else:
            del self.counts[table]
            self._slg -= math.lgamma(1.0 - self.discount)
        self.n -= 1

    def predictive(self) -> list[tuple[int, float]]:
        """(table, probability) for the occupied tables and a new one."""
        z = self.n + self.norm_shift()
        out = [(k, self.weight(c) / z) for k, c in self.counts.items()]
        out.append((self.next_label, self.new_weight() / z))
        return out

    def predictive_log_prob(self, table: int) -> float:
        c = self.counts.get(table, 0)
        return math.log((self.weight(c) if c else self.new_weight())
                        / (self.n + self.norm_shift()))

    def sample(self, rng) -> int:
        """A table for the next customer (not incorporated)."""
        u = rng.random() * (self.n + self.norm_shift())
        for k, c in self.counts.items():
            u -= self.weight(c)
            if u < 0:
                return k
        return self.next_label

    def candidates(self, table: int) -> list:
        """The tables a Gibbs update of a customer now at ``table`` chooses among (Neal 2000,
        Alg. 3 and Alg. 8 with one auxiliary table): the occupied ones and a new one — none
        when the customer sits alone, whose own table is then the new one."""
        out = list(self.counts)
        if self.counts[table] > 1:
            out.append(self.next_label)
        return out

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(params={self.params}, {len(self.counts)} tables, "
                f"n={self.n}, log p = {self.log_prob():.4g})")


def table_label_error(v) -> str | None:
    """Why ``v`` is not a table label (a non-negative integer), or None."""
    try:
        k = int(v)
    except (TypeError, ValueError):
        k = -1
    return None if 0 <= k == v else "a table label is a non-negative integer"
