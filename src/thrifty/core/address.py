"""Addresses: hierarchical tuples naming every random choice of a trace.

A site named ``"w"`` at the top level has address ``("w",)``; inside element 17 of plate
``"data"`` a site ``"z"`` has address ``("data", 17, "z")``; inside step 3 of markov chain ``"s"``
a site ``"x"`` has ``("s", 3, "x")``.  ``th.call("sub", model)`` prefixes the sub-model's names
with ``"sub"``.  The *name* of an address drops the structural indices (``"data.z"``, ``"s.x"``):
it is the key under which a ``Result`` stacks the values.
"""

from __future__ import annotations

import numpy as np

from thrifty.errors import ModelError

Address = tuple
# str name → its address part (name,): a model names the same sites at every execution, so each
# name is checked once; bounded, for names a model makes up anew (f"x{i}") in long runs
ONE_PART: dict = {}
ONE_PART_MAX = 4096


def as_name(name) -> tuple:
    """Normalise a user-given name (str, int or tuple of those) to a tuple."""
    t = type(name)
    if t is str:
        out = ONE_PART.get(name)
        if out is not None:
            return out
        if "." in name:
            raise ModelError(f"name {name!r}: '.' separates address parts and cannot be in a name")
        out = (name,)
        if len(ONE_PART) < ONE_PART_MAX:
            ONE_PART[name] = out
        return out
    if t is tuple:
        for part in name:
            if type(part) is str and "." in part:
                raise ModelError(f"name {name!r}: '.' cannot be in a name")
        return name
    if t is int or isinstance(name, np.integer):
        return (int(name),)
    raise ModelError(f"an address part must be a str, an int or a tuple of those, got {name!r}")


def as_pattern(pattern) -> tuple:
    """A selection pattern: ``"data.z"`` → ``("data", "z")``; tuples are kept as they are."""
    if isinstance(pattern, str):
        return tuple(int(p) if p.lstrip("-").isdigit() else p for p in pattern.split("."))
    if isinstance(pattern, tuple):
        return pattern
    if isinstance(pattern, (int, np.integer)):
        return (int(pattern),)
    raise TypeError(f"a selection pattern must be a str or a tuple, got {pattern!r}")


def dotted(parts) -> str:
    """``("data", "z")`` → ``"data.z"``."""
    return ".".join(str(p) for p in parts)


def fmt(addr) -> str:
    """Readable form of an address for messages: ``('data', 17, 'z')``; a ``"*"`` part (any
    element of a plate) prints bare: ``('data', *, 'z')``."""
    parts = ["*" if p == "*" else repr(p) for p in addr]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
