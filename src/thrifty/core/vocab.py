"""The engine's shared vocabulary: site kinds, execution modes, plans, targets, markers, errors.

Every module of ``thrifty.core`` imports its words from here; this module imports nothing from
the core, so the node modules (plate, markov, mem) and the run orchestrator never import each
other in a circle.

* :class:`Mode` — the kinds of :class:`~thrifty.core.run.Run` (default, strict, rescore, lazy,
  ...), each a fixed set of behaviours;
* :class:`Plan` — which plate elements and markov steps a run executes when nothing before them
  changed;
* :class:`VecTarget` and :data:`RESAMPLE` — proposed values for choices;
* :class:`ZeroProbability`, :class:`StructureChange`, :class:`StaleRead` — how an execution
  ends early;
* the error constructors that name the address at fault.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from enum import Enum
from operator import methodcaller
from types import MappingProxyType

import numpy as np

from thrifty.core.address import fmt
from thrifty.errors import DistributionError, ModelError, NumericalError

LATENT, OBSERVED, FACTOR, DETERMINISTIC = 0, 1, 2, 3
NEG_INF = -math.inf
INF = math.inf


class _Resample:
    """Target marker: draw this choice afresh from its prior (LMH, prior proposals)."""

    def __repr__(self) -> str:
        return "RESAMPLE"

    def __reduce__(self):
        return "RESAMPLE"


RESAMPLE = _Resample()


class Mode(Enum):
    """The kinds of run: every run is one of these (a closed set — no other combination of
    the behaviours below is a run the engine knows).

    Each kind is a set of behaviours:

    strict : never create, redraw or leave out a choice — a missing one, or one the run no
        longer reaches, raises :class:`StructureChange`, and a replayed value outside its
        support scores ``-inf`` (enumerative Gibbs, element-wise MH, PGAS).
    rescore : re-execute every plate element and markov step (a full rescoring; stale elements
        are usually rescored by a run planned on exactly them, ``thrifty.Kernel.rescore``).
    lazy : when something before a plate or chain changed, run only its planned elements or
        steps and leave the others *stale* (subsampling kernels, 000 §3.5).
    capture : record every observation executed in ``run.captured`` as (address, distribution,
        value, element indices) — how kernels that need the likelihood's structure find it.
    simulate_observations : draw every observed value afresh given the latent choices and keep
        it in ``trace.obs_values`` on commit (the successive-conditional half of Geweke's test).
    fresh_reads : compare only against fresh stored log-densities (an exact kernel's run on a
        trace a subsampling kernel left stale, 000 §3.5): stop at the first plate or chain
        where the run would execute or drop stale elements or steps, before executing any of
        them, and name them in ``run.stale_read`` — the caller rescores exactly those and runs
        again (:meth:`thrifty.Kernel.execute`); such a stopped run is never committed.
        ``mode.reading_fresh`` is a kind's counterpart with this behaviour.
    """

    #                 strict rescore lazy   capture simulate_observations fresh_reads
    DEFAULT = (False, False, False, False, False, False)  # replay, propose, rescore what changed
    STRICT = (True, False, False, False, False, False)  # no choice created, redrawn or dropped
    RESCORE = (False, True, False, False, False, False)  # every section re-executed
    LAZY = (False, False, True, False, False, False)  # skipped sections left stale (000 §3.5)
    CAPTURE = (False, False, False, True, False, False)  # observations recorded (check, predictive)
    RESCORE_CAPTURE = (False, True, False, True, False, False)  # the likelihood's structure
    LAZY_CAPTURE = (False, False, True, True, False, False)  # the observations of the sections
    # a sequential test reads
    SIMULATE = (False, False, False, False, True, False)  # observations drawn afresh (Geweke)
    SIMULATE_CAPTURE = (False, False, False, True, True, False)  # (posterior predictive)
    # the kinds above that read stored log-densities, on a trace with stale sections:
    DEFAULT_FRESH = (False, False, False, False, False, True)
    STRICT_FRESH = (True, False, False, False, False, True)
    CAPTURE_FRESH = (False, False, False, True, False, True)
    SIMULATE_FRESH = (False, False, False, False, True, True)
    SIMULATE_CAPTURE_FRESH = (False, False, False, True, True, True)

    def __init__(self, strict, rescore, lazy, capture, simulate_observations, fresh_reads):
        self.strict, self.rescore, self.lazy = strict, rescore, lazy
        self.capture, self.simulate_observations = capture, simulate_observations
        self.fresh_reads = fresh_reads

    @property
    def reading_fresh(self) -> Mode:
        """This kind with ``fresh_reads`` (a lazy or rescoring kind reads no stored density)."""
        if self.lazy or self.rescore:
            raise ValueError(f"{self.name} runs read no stored log-density")
        return Mode(self.value[:5] + (True,))

    def __repr__(self) -> str:
        return self.name


DEFAULT, STRICT, RESCORE, LAZY = Mode.DEFAULT, Mode.STRICT, Mode.RESCORE, Mode.LAZY
CAPTURE, RESCORE_CAPTURE, LAZY_CAPTURE = Mode.CAPTURE, Mode.RESCORE_CAPTURE, Mode.LAZY_CAPTURE
SIMULATE, SIMULATE_CAPTURE = Mode.SIMULATE, Mode.SIMULATE_CAPTURE


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` for small integer arrays, by sorting (NumPy's hash path is slower here)."""
    if len(a) < 2:
        return a.copy()
    if bool(np.all(a[1:] > a[:-1])):  # already sorted and distinct (the usual case)
        return a
    a = np.sort(a)
    if a[-1] == a[0] + len(a) - 1 and (len(a) < 3 or bool(np.all(a[1:] != a[:-1]))):
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


class Plan:
    """Which parts of the structured nodes a run executes when nothing before them changed.

    ``plates``: plate address → sorted element indices; ``steps``: chain address → steps.
    """

    __slots__ = ("plates", "steps")

    def __init__(self, plates: dict | None = None, steps: dict | None = None):
        self.plates = {} if plates is None else plates
        self.steps = {} if steps is None else steps

    def __repr__(self) -> str:
        return f"Plan(plates={self.plates!r}, steps={self.steps!r})"

    def add_elements(self, plate_addr, elems) -> None:
        old = self.plates.get(plate_addr)
        if old is None and type(elems) is list and len(elems) == 1 and type(elems[0]) is int:
            one = self.plates[plate_addr] = np.empty(1, dtype=np.int64)  # (one element: as
            one[0] = elems[0]  # np.array(elems, dtype=np.int64), without its type discovery)
            return
        elems = np.asarray(elems, dtype=np.int64).reshape(-1)
        self.plates[plate_addr] = sorted_unique(
            elems if old is None else np.concatenate([old, elems])
        )

    def add_step(self, chain_addr, t) -> None:
        steps = self.steps.get(chain_addr)
        if steps is None:
            self.steps[chain_addr] = {int(t)}
        else:
            steps.add(int(t))


EMPTY_PLAN = Plan()


@dataclass(slots=True)  # (one per proposal of plate elements)
class VecTarget:
    """Targets at plate elements: ``elems`` (sorted) and their new ``values`` (or RESAMPLE)."""

    elems: np.ndarray
    values: object


@dataclass(frozen=True)
class Candidates:
    """A scoring run of the alternative values of one plate element: the plate at ``plate``
    executes ``k`` *lanes*, each element ``elem`` with the value a :class:`VecTarget` of ``k``
    copies of ``elem`` gives it.  Each lane's log-density is the element's under its value,
    everything else as stored: a coupled site scores the lane by its predictive given the
    other elements (the state is not changed), a site of the element replays strictly.  The
    run is never committed; a kernel commits the chosen value by a run of its own."""

    plate: tuple
    elem: int
    k: int


class Pause(Exception):
    """A run that pauses after a number of observations (``Run(stop=k)``) stops here."""


class Unchanged(Exception):
    """A run of one proposed choice (``Run(identity=True)``) gave it its present value under its
    present distribution: the proposal is the identity move, which MH accepts with probability
    1 (001 Eq. 4 with x' = x) and which leaves the trace as it is, so the run stops there."""


class ZeroProbability(Exception):
    """A proposed value outside its support: the proposal has probability zero, so the run
    stops there (executing on would feed an impossible value to what depends on it)."""

    def __init__(self, addr, d, value):
        super().__init__(f"{value!r} at {fmt(addr)} is outside the support of {d!r}")
        self.addr, self.dist, self.value = addr, d, value


class StaleRead(Exception):
    """A run that compares against the stored log-densities (an exact kernel's, ``fresh_reads``)
    reached plate elements or markov steps whose stored log-density is out of date (left stale
    by a lazy run, paper 000 §3.5).  ``parts`` lists them as ``(kind, address, items)`` —
    ``("plate", plate address, element indices)`` or ``("chain", chain address, steps)`` — so
    the caller rescores exactly those (a run planned on them) and runs again."""

    def __init__(self, parts: list):
        super().__init__(", ".join(f"{len(items)} stale {kind} item(s) at {fmt(addr)}"
                                   for kind, addr, items in parts))
        self.parts = parts


class StructureChange(Exception):
    """Raised in strict runs when a choice would have to be created (Gibbs, PGAS rescoring),
    or (``dropped``) when a strict run left out a choice of the trace."""

    def __init__(self, addr, dropped: bool = False):
        what = "leave out the choice" if dropped else "create the new choice"
        super().__init__(f"re-execution would {what} {fmt(addr)}")
        self.addr = addr


def total(lp) -> float:
    """A log-density (scalar or array over value dimensions) as a Python float."""
    if type(lp) is float:
        return lp
    if type(lp) is np.ndarray:  # (one member: its entry — the same number as the sum's)
        return lp.item() if lp.size == 1 else float(np.add.reduce(lp, axis=None))
    return float(np.sum(lp))


class InvalidParameters(ZeroProbability):
    """A proposal made a distribution's parameters invalid (``Normal(0, σ)`` with σ proposed
    below 0): the proposal has probability zero and is rejected, as in Stan and PyMC."""

    def __init__(self, addr, d):
        Exception.__init__(self, f"invalid parameters at {fmt(addr)}: {d._error}")
        self.addr, self.dist, self.value = addr, d, None


def check_dist(d, addr, run=None) -> None:
    """Raise for a distribution built with invalid parameters: a rejected proposal in a run
    that proposes new values of an existing trace (``run.proposing``), else an error naming the
    address (the initial trace, the data, a rescoring run)."""
    if d._error is not None:
        if run is not None and run.proposing:
            raise InvalidParameters(addr, d)
        raise DistributionError(f"{type(d).__name__} at address {fmt(addr)}: {d._error}")


def infinite_error(addr, d, value) -> NumericalError:
    v = value if np.ndim(value) == 0 else f"an array of shape {np.shape(value)}"
    return NumericalError(
        f"log-density is +inf at address {fmt(addr)}: {d!r} evaluated at {v!r} (a value on "
        "the boundary of an open support, or a density with a singularity there); a chain "
        "could never leave it — reparameterise, or bound the value away from the boundary"
    )


def nan_error(addr, d, value) -> NumericalError:
    return NumericalError(
        f"log-density is NaN at address {fmt(addr)}: {d!r} evaluated at {value!r}"
    )


def outside_support(addr, d, value) -> DistributionError:
    v = value if np.ndim(value) == 0 else f"array of shape {np.shape(value)}"
    return DistributionError(
        f"observed value {v} at address {fmt(addr)} is outside the support of "
        f"{type(d).__name__} ({d.domain!r})"
    )


def take_rows(x: np.ndarray, idx):
    """``x[idx]`` for ``idx`` indexing the leading axis: an integer array is taken by
    ``ndarray.take`` when ``x`` has two or more axes (the same rows, a new C-ordered array; NumPy's
    fancy indexing of such an array costs several times as much)."""
    if type(idx) is np.ndarray and idx.dtype.kind in "iu" and type(x) is np.ndarray and x.ndim > 1:
        return x.take(idx, axis=0)
    return x[idx]


_ND = np.ndarray


def holding(old, new) -> np.ndarray:
    """A copy of the members' values ``old`` into which ``new`` can be written exactly: of the
    dtype NumPy promotes the two to.  A column of ints set to draws of a continuous family (an
    initial value given as ints, a site whose family changed from a discrete one) becomes
    floats, a column of bools set to a category becomes ints — never a draw truncated to the
    column's dtype, which would confine the chain to a lattice (a wrong posterior)."""
    if type(old) is _ND and type(new) is _ND and old.dtype is new.dtype:
        return old.copy()  # (the usual case, without dtype arithmetic)
    a, b = np.asarray(old).dtype, np.asarray(new).dtype
    return np.array(old, dtype=a if a == b else np.promote_types(a, b))


def written(old, at, new) -> np.ndarray:
    """:func:`holding` of ``old`` and ``new``, with ``new`` written at the members ``at``
    (positions): for one member given its whole value, a copy of ``new`` (the same array,
    without the copy of ``old`` and the write)."""
    if (len(at) == 1 and type(new) is _ND and type(old) is _ND and new.shape == old.shape
            and new.dtype is old.dtype):
        return new.copy()
    out = holding(old, new)
    out[at] = new
    return out


def given_value(d, value):
    """A value given from outside (``init=``) for one member of a site of ``d``, held as the
    family's own draws are: a scalar as a Python ``float`` (continuous) or ``int`` (discrete,
    when the value is a whole number), an array as a NumPy array of float64 or int64 — so
    ``init={"mu": 1}``, a NumPy float32 or a JAX array keep no dtype of their own in the
    trace and the recorded draws.  Values of other kinds are left to the family's checks."""
    t, discrete = type(value), d.is_discrete
    if t is (int if discrete else float) or (
            t is _ND and value.dtype == (_I64 if discrete else _F64)):
        return value  # (the engine's own values: proposals)
    a = np.asarray(value) if not isinstance(value, (list, tuple)) else np.array(value)
    if a.dtype.kind not in "biuf":
        return value
    if discrete:
        if a.dtype.kind == "f" and not np.array_equal(a, np.round(a)):
            return value  # (not a whole number: outside the support, said by the family)
        return int(a) if a.ndim == 0 else a.astype(_I64, copy=False)
    return float(a) if a.ndim == 0 else a.astype(_F64, copy=False)


_I64, _F64 = np.dtype(np.int64), np.dtype(np.float64)


def readonly(value):
    """``value`` as the model may see it: an array the engine keeps (a choice's value, a
    memoized value) is handed out read-only, so the model cannot change the trace behind the
    engine's back by writing into it — an attempt is an error (:mod:`.code_errors`), where a
    silent write would corrupt every later replay.  O(1): a flag on the array or its view."""
    if type(value) is np.ndarray and value.flags.writeable:
        value.flags.writeable = False
    return value


_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), np.generic)


def _carries_attributes(value) -> bool:
    """A subclass instance with attributes of its own (a float or tuple subclass with ``.mu``):
    the engine compares the value, not the attributes, so it cannot keep it (an enum member
    or a namedtuple has none of its own)."""
    return bool(getattr(value, "__dict__", None)) and not isinstance(value, Enum)


def frozen_state(state, addr):
    """A markov state as the engine keeps it: compared by value to decide whether the next step
    must run, and handed back as ``prev``, so it must not change after the step returned it.
    Numbers, strings and None are immutable; an array is kept as a read-only copy (the model
    keeps its own array, and a view's base could still be written); tuples and dicts are kept
    with frozen entries (a dict as a read-only mapping).  Any other object could change in
    place unseen: an error naming the chain."""
    t = type(state)
    if t is int or t is float:  # (the usual states: a sampled number, an array)
        return state
    if t is np.ndarray:
        if state.flags.writeable or state.base is not None:  # not already the engine's copy
            state = state.copy()
            state.flags.writeable = False
        return state
    if isinstance(state, _IMMUTABLE) and (t in _IMMUTABLE or not _carries_attributes(state)):
        return state
    if isinstance(state, tuple) and not _carries_attributes(state):
        items = [frozen_state(x, addr) for x in state]
        if all(a is b for a, b in zip(items, state)):
            return state
        return t(*items) if hasattr(state, "_fields") else t(items)
    if t is dict or t is MappingProxyType:
        return MappingProxyType({k: frozen_state(v, addr) for k, v in state.items()})
    raise ModelError(
        f"markov chain {fmt(addr)}: step returned a state of type {t.__name__}; a state is a "
        "number, a NumPy array, or a tuple or dict of them (with no attributes of their own) — "
        "values the engine can keep and compare (it decides from them which steps to re-run), "
        "which a list or another object changed in place would defeat. Return a tuple or an "
        "array"
    )


def sample_error(addr, d, exc: BaseException) -> DistributionError:
    """The sampler of ``d`` refused its parameters — valid for scoring, beyond what NumPy can
    draw from (``Poisson(1e20)``: "lam value too large"; ``Binomial(2**63 + 10, p)``:
    OverflowError)."""
    return DistributionError(
        f"cannot draw {fmt(addr)} from {d!r}: NumPy's sampler raised {type(exc).__name__}: {exc}"
    )


def non_numeric(value) -> str | None:
    """``None`` for a number or an array of numbers (bool, int, float), else a description of
    ``value`` for an error message (``"str 'abc'"``)."""
    if isinstance(value, (int, float, np.number, np.bool_)):
        return None
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
    else:
        try:
            kind = np.asarray(value).dtype.kind
        except (TypeError, ValueError):  # ragged nested lists
            kind = "O"
    if kind in "biuf":
        return None
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(value, (list, tuple)) and value:
        return f"{type(value).__name__} of {type(value[0]).__name__} {text}"
    return f"{type(value).__name__} {text}"


def same_value(a, b) -> bool:
    """Whether two state values are equal (identity first; arrays elementwise; tuples recursive)."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b))
        try:
            return bool(a == b)
        except (TypeError, ValueError):
            return False
    if ta is float or ta is int:  # (two numbers: what a state usually is)
        return a == b
    if ta is np.ndarray:
        return a.shape == b.shape and bool(np.array_equal(a, b))
    if ta is tuple or ta is list:
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if ta is dict or ta is MappingProxyType:
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def chain_length(addr, length, step) -> int:
    """The length of the markov chain at ``addr`` as an int (errors name the chain)."""
    if type(length) is int and length >= 0 and callable(step):
        return length
    if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)):
        raise ModelError(f"markov chain {fmt(addr)}: length must be an int, got {length!r}")
    if length < 0:
        raise ModelError(f"markov chain {fmt(addr)}: length must be >= 0, got {length}")
    if not callable(step):
        raise ModelError(f"markov chain {fmt(addr)}: step must be callable, got {step!r}")
    return int(length)


def _set_run(frame, run) -> None:
    frame._run = weakref.ref(run)


def weak_run() -> property:
    """A frame's run, held weakly: the run holds the frames kernels read after its execution
    (``run.plate_frames``), and a strong reference back would make each run a reference
    cycle — freed by the garbage collector's passes (a share of every plate update's time:
    ``benchmarks/runtime_overheads.py`` measures it), not at once when the kernel drops it.
    (Read through C: ``frame.run`` calls the weak reference with no Python frame.)"""
    return property(methodcaller("_run"), _set_run)
