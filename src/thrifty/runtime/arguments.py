"""Whether the program changed its own arguments in place while it ran.

thrifty executes a program many times — in full, and in part: some plate elements, some markov
steps — and every execution must read the same data.  One that changes an argument in place
(``x *= 2``, or ``xi = x[i]; xi -= c``, where ``x[i]`` is a view of the argument when ``i`` is
the slice of every element and a copy when it is a subset's integer array) leaves the next
execution other data: the posterior of a model that changes as it is sampled, and the caller's
data changed behind their back.  A chain's set-up takes a digest of each argument
(:func:`thrifty.fingerprint.value_digest`: values, arrays by their bytes) before the program's
first execution and compares it after the set-up's executions (the first one, and the checks of
how plates are used, :mod:`thrifty.core.output`), or when one of them fails: a change is a
:class:`~thrifty.errors.ModelError` naming the argument.  O(size of the data), twice per chain,
at set-up only; a change made only by later, partial executions is not seen (check mode,
:mod:`thrifty.core.check`, is the backstop there).

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
thrifty.errors.ModelError: the program changed its argument 'x' in place while it ran: ...
"""

from __future__ import annotations

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


def raise_if_written(program, before: dict, cause: BaseException | None = None) -> None:
    """A :class:`ModelError` naming the arguments whose digest differs from ``before``'s (raised
    from ``cause``, the error the change led to); nothing when none changed."""
    if not before:
        return
    now = argument_digests(program)
    changed = [name for name, d in before.items() if now.get(name, d) != d]
    if not changed:
        return
    names = ", ".join(repr(n) for n in changed)
    raise ModelError(
        f"the program changed its argument{'s' if len(changed) > 1 else ''} {names} in place "
        "while it ran: thrifty executes a program many times, in full and on subsets of its "
        "plates' elements, and each execution must read the same data (the caller's array is "
        "changed too). Compute into new arrays instead — x = x * 2, not x *= 2; x[i] - c, not "
        "xi = x[i]; xi -= c (with the slice of every element as the plate's index, x[i] is a "
        "view of the argument)") from cause
