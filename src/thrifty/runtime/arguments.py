"""Whether the program changed its own arguments in place while it ran, and whether that matters.

thrifty executes a program many times — in full, and in part: some plate elements, some markov
steps — and every execution must read the same data.  One that changes an argument in place so
that the next execution reads other data (``x *= 2``, or ``xi = x[i]; xi -= c``, where ``x[i]``
is a view of the argument when ``i`` is the slice of every element and a copy when it is a
subset's integer array) samples a model that changes as it is sampled, and changes the
caller's data.  An argument used as a scratch buffer — filled before it is read, in every
execution (``buf[0] = mu`` … ``buf[0]``) — is another matter: a rewrite of the model that gives
its posterior.  A chain's set-up takes a digest of each argument
(:func:`thrifty.fingerprint.value_digest`: values, arrays by their bytes) before the program's
first execution and compares it after the set-up's executions (the first one, and the checks of
how plates are used, :mod:`thrifty.core.output`): when an argument changed, one more full
execution at the trace's values (:func:`thrifty.core.check.check_trace`) decides — one that
disagrees with the trace is a :class:`~thrifty.errors.ModelError` naming the argument; when a
set-up execution fails, its error names the argument that changed as the likely cause.
O(size of the data), twice per chain, at set-up only.  Not seen: a change only later, partial
executions make (check mode's to find, :mod:`thrifty.core.check`); a write that undoes itself
over the set-up's executions (``x *= -1``, run an even number of times); an argument that cannot
be fingerprinted (an object holding a lock); ``th.simulate`` and ``th.predictive``.

>>> import numpy as np, thrifty as th
>>> from thrifty import dist
>>> @th.model
... def doubled(x):
...     x *= 2.0                                   # in place: every execution doubles it again
...     th.observe("x", dist.Normal(th.sample("mu", dist.Normal(0.0, 1.0)), 1.0), x[0])
>>> th.infer(doubled(np.ones(3)), th.mh("mu"), num_samples=2,  # doctest: +ELLIPSIS
...          seed=0, progress=False)
Traceback (most recent call last):
...
thrifty.errors.ModelError: the program changed its argument 'x' in place while it ran, ...
"""

from __future__ import annotations

from thrifty.core.check import check_trace
from thrifty.core.code_errors import arguments
from thrifty.errors import ModelError
from thrifty.fingerprint import value_digest


def argument_digests(program) -> dict[str, str]:
    """A digest of each argument of ``program`` that can be fingerprinted, by name."""
    out = {}
    for name, value in arguments(program).items():
        digest, unhashable = value_digest(value, f"argument:{name}")
        if not unhashable:
            out[name] = digest
    return out


def raise_if_written(program, before: dict, trace) -> None:
    """A :class:`ModelError` naming the arguments whose digest differs from ``before``'s, when a
    full execution at the values of ``trace`` (the chain's initial trace) disagrees with it;
    nothing when none changed, or the change is a buffer's that every execution refills."""
    changed = written(program, before)
    if changed and check_trace(trace):
        raise ModelError(f"the program changed {_which(changed)} in place while it ran, and the "
                         f"next execution read other data: {_WHY}")


def note_written(program, before: dict, error: BaseException) -> BaseException:
    """``error`` (a set-up execution's), with a note naming the arguments that changed since
    ``before`` as its likely cause (the caller raises it from ``error``); ``error`` itself when
    none did."""
    changed = written(program, before)
    if not changed or not isinstance(error, ModelError):
        return error
    return ModelError(f"{error} (The program also changed {_which(changed)} in place while it "
                      f"ran: unless that is a buffer every execution fills before reading it, it "
                      f"is the cause. {_WHY})")


def written(program, before: dict) -> list[str]:
    """The names of the arguments whose digest differs from ``before``'s."""
    if not before:
        return []
    now = argument_digests(program)
    return [name for name, d in before.items() if now.get(name, d) != d]


def _which(names: list[str]) -> str:
    return f"its argument{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}"


_WHY = ("thrifty executes a program many times, in full and on subsets of its plates' elements, "
        "and each execution must read the same data (the caller's array is changed too). "
        "Compute into new arrays instead — x = x * 2, not x *= 2; x[i] - c, not xi = x[i]; "
        "xi -= c (with the slice of every element as the plate's index, x[i] is a view of the "
        "argument)")
