"""When two values agree, in check mode (:mod:`thrifty.core.check`) and in the probes that
compare a run with another (:mod:`thrifty.core.alone`): numbers within ``ATOL + RTOL·max(|a|,
|b|)`` (a total: with the scale of its terms, for a sum taken in another order), arrays entry by
entry, values (states, deterministic values, outputs) recursively."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from thrifty.core.vocab import same_value

RTOL = ATOL = 1e-9


def close(a, b, scale: float = 0.0) -> bool:
    if a == b:
        return True
    return bool(abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b), scale))


def bad(a, b) -> np.ndarray:
    """Per leading entry: whether ``a`` and ``b`` differ beyond the tolerance."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return np.ones(len(a) if a.ndim else 1, dtype=bool)
    if a.dtype == object or b.dtype == object:
        return np.array([not approx(x, y) for x, y in zip(a, b)], dtype=bool)
    if a.dtype.kind not in "fc" and b.dtype.kind not in "fc":
        bad = a != b
    else:
        bad = ~np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
    return bad.reshape(len(bad), -1).any(axis=1) if bad.ndim > 1 else np.atleast_1d(bad)


def approx(a, b) -> bool:
    """Whether two values (states, deterministic values) agree within the tolerance."""
    if same_value(a, b):
        return True
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(approx(x, y) for x, y in zip(a, b))
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:
        return False
    if x.dtype == object or y.dtype == object or x.shape != y.shape:
        return False
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        return bool(np.allclose(x, y, rtol=RTOL, atol=ATOL, equal_nan=True))
    return False


_DATA = (int, float, complex, bool, str, bytes, type(None), np.number, np.bool_)


def snapshot(value):
    """``value`` as it is now, for a later comparison: its arrays copied (in tuples, lists and
    dicts), so that a buffer written again afterwards is compared as it was."""
    t = type(value)
    if t is np.ndarray:
        return value.copy()
    if t is tuple or t is list:
        return t(snapshot(x) for x in value)
    if t is dict:
        return {k: snapshot(v) for k, v in value.items()}
    return value


def first_difference(a, b) -> tuple | None:
    """Where two program outputs first differ beyond the tolerance, as data: ``(path, part of
    a, part of b)``, the path as Python indexes it (``"['trend'][3]"``); None where they agree
    — or where what differs is not data (an object, a function, an array of another library),
    which is not compared."""
    if a is b:
        return None
    if isinstance(a, _DATA) and isinstance(b, _DATA):
        if isinstance(a, (str, bytes)) or isinstance(b, (str, bytes)) or a is None or b is None:
            same = a == b if type(a) is type(b) else False
        else:
            same = approx(a, b)
        return None if same else ("", a, b)
    pairs = None
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.dtype.kind not in "biufc" or b.dtype.kind not in "biufc":
            return None
        if a.shape == b.shape and approx(a, b):
            return None
        if a.shape == b.shape and a.ndim:
            with np.errstate(all="ignore"):
                off = ~np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
            if off.any():
                j = np.unravel_index(int(np.argmax(off)), a.shape)
                return f"[{', '.join(map(str, j))}]", a[j].item(), b[j].item()
        return "", a, b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            return "", a, b
        pairs = ((f"[{k!r}]", a[k], b[k]) for k in a)
    elif (isinstance(a, Sequence) and isinstance(b, Sequence)
          and not isinstance(a, (str, bytes)) and not isinstance(b, (str, bytes))):
        if len(a) != len(b):
            return "", a, b
        pairs = ((f"[{j}]", x, y) for j, (x, y) in enumerate(zip(a, b)))
    for at, x, y in pairs or ():
        inner = first_difference(x, y)
        if inner is not None:
            return at + inner[0], inner[1], inner[2]
    return None
