"""The configuration of kernels, proposals and selections: their constructor arguments, exactly.

A checkpoint compares the kernel of the run it resumes with the kernel passed to ``th.infer``.
A label (``mh('w', drift(0.5))``) omits settings and rounds numbers, so every kernel, proposal
and selection records the arguments it was constructed with (:class:`Configured`, through
its metaclass: a subclass needs no cooperation) and reports them with :meth:`Configured.config`
— every constructor argument, defaults included, floats exactly, arrays by content, kernels
inside kernels (``th.cycle``, ``th.mixture``) recursively, and for a class defined outside
thrifty its code (the methods' code and all they reach, its class attributes; see
:mod:`thrifty.fingerprint`).

On resume the chain runs the kernel passed to ``th.infer`` and takes from the checkpoint only
what the kernel learnt while running (:func:`restore_state`).
"""

from __future__ import annotations

import copyreg
import inspect
from collections.abc import Iterator

import numpy as np

from thrifty.fingerprint import class_digest, is_library, value_digest


class _Recording(type):
    """The metaclass of :class:`Configured`: every instance records the arguments it was
    constructed with.  A one-shot iterator argument (``th.cycle(k for k in ks)``) is made a
    list first, so the constructor and the record see the same items."""

    def __call__(cls, *args, **kwargs):
        args = tuple(_materialised(a) for a in args)
        kwargs = {k: _materialised(v) for k, v in kwargs.items()}
        obj = super().__call__(*args, **kwargs)
        obj._init_args = (args, kwargs)
        return obj


def _materialised(x):
    return list(x) if isinstance(x, Iterator) else x


class Configured(metaclass=_Recording):
    """Records its constructor arguments; :meth:`config` reports them."""

    def config(self) -> dict:
        """The constructor arguments (with their defaults) as plain data, exactly.

        >>> import thrifty as th
        >>> th.mixture([(0.3, th.lmh()), (0.7, th.mh("mu", th.drift(0.5)))]).config()["args"][
        ...     "weighted"][0]
        {'tuple': [0.3, {'class': 'thrifty.inference.mcmc.mh.LMH', 'args': {'selection': None, \
'exclude': None}}]}
        """
        return self.config_and_warnings()[0]

    def config_and_warnings(self) -> tuple[dict, list]:
        """(:meth:`config`, [what could not be fingerprinted])."""
        unhashable: list = []
        cls = type(self)
        out = {"class": f"{cls.__module__}.{cls.__qualname__}",
               "args": {k: _encode(v, f"{cls.__qualname__}({k}=...)", unhashable)
                        for k, v in self.arguments().items()}}
        if not is_library(cls.__module__):
            out["code"], more = class_digest(cls)
            unhashable += more
        return out, unhashable


    def arguments(self) -> dict:
        """The constructor arguments by name, defaults included."""
        args, kwargs = getattr(self, "_init_args", ((), {}))
        try:
            bound = inspect.signature(type(self).__init__).bind(None, *args, **kwargs)
            bound.apply_defaults()
            return dict(list(bound.arguments.items())[1:])
        except (TypeError, ValueError):  # a signature inspect cannot read
            return {"args": list(args), "kwargs": dict(kwargs)}


def shared_parts(root: Configured) -> list[list[str]]:
    """The places of ``root``'s configuration that hold one object, for each object held at
    more than one: ``th.cycle([k, k])`` steps one kernel twice (one adaptation of its
    proposal, one set of statistics), ``th.cycle([k1, k2])`` two kernels — equal
    configurations (:meth:`Configured.config`) of two runs."""
    places: dict = {}

    def walk(x, path):
        if isinstance(x, Configured):
            seen = places.setdefault(id(x), (x, []))[1]
            seen.append(path)
            if len(seen) == 1:
                for name, v in x.arguments().items():
                    walk(v, f"{path}.{name}" if path else name)
        elif type(x) in (list, tuple):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif type(x) is dict:
            for k, v in x.items():
                walk(v, f"{path}[{k!r}]")

    for name, v in root.arguments().items():
        walk(v, f"args.{name}")
    return [paths for _, paths in places.values() if len(paths) > 1]


def _encode(v, where: str, unhashable: list):
    """A constructor argument as JSON-ready data: exact, readable where it can be."""
    if isinstance(v, Configured):
        cfg, more = v.config_and_warnings()
        unhashable += more
        return cfg
    if v is None or type(v) in (bool, int, float, str):
        return v
    if type(v) is list:
        return [_encode(x, where, unhashable) for x in v]
    if type(v) is tuple:
        return {"tuple": [_encode(x, where, unhashable) for x in v]}
    if type(v) is dict and all(type(k) is str for k in v):
        return {"dict": {k: _encode(x, where, unhashable) for k, x in v.items()}}
    if isinstance(v, np.generic):
        return {"numpy": v.dtype.str, "bytes": np.asarray(v).tobytes().hex()}
    if type(v) is np.ndarray and not v.dtype.hasobject:
        out = {"array": v.dtype.str, "shape": list(v.shape)}
        if v.size <= 16:
            out["bytes"] = np.ascontiguousarray(v).tobytes().hex()
        else:
            out["sha256"], _ = value_digest(v, where)
        return out
    digest, more = value_digest(v, where)  # functions (by their code), other objects
    unhashable += more
    return {"object": f"{type(v).__module__}.{type(v).__qualname__}", "sha256": digest}


def restore_state(mine, saved) -> None:
    """Give ``mine`` (the kernel passed to ``th.infer``, configured as ``saved``) the state
    ``saved`` reached while running: every attribute of ``saved`` except its configured parts
    (kernels, proposals, selections — in attributes or lists), which keep their identity in
    ``mine`` and get their own state recursively.  Whatever ``saved`` shares with the trace it
    was pickled with (a mem table's reader log) stays shared."""
    if mine is saved:
        return
    for slot in copyreg._slotnames(type(saved)):  # a subclass's __slots__, if any
        if hasattr(saved, slot):
            setattr(mine, slot, getattr(saved, slot))
    state = vars(saved)
    own = vars(mine)
    for name in [n for n in own if n not in state and n != "_init_args"]:
        del own[name]
    for name, value in state.items():
        if name == "_init_args":  # the configuration: the one passed to th.infer
            continue
        cur = own.get(name)
        if _same_kind(cur, value):
            restore_state(cur, value)
        elif (type(cur) in (list, tuple) and type(value) is type(cur) and len(cur) == len(value)
              and all(_same_kind(a, b) for a, b in zip(cur, value))):
            for a, b in zip(cur, value):
                restore_state(a, b)
        else:
            own[name] = value


def _same_kind(a, b) -> bool:
    return isinstance(a, Configured) and type(a) is type(b) and hasattr(b, "__dict__")
