"""What a plate body reads: the dependency of a plate on the values that precede it.

Program order is the engine's dependency graph: a plate met after a changed value runs every
element (or, lazily, leaves them stale).  That is too coarse for a plate whose elements read the
changed value only through a coupled process.  In a DP mixture ::

    alpha = th.sample("alpha", dist.Gamma(1.0, 1.0))
    crp = th.CRP(alpha)
    with th.plate("data", N) as i:
        z = th.sample("z", crp)

the labels' joint density (Ewens) depends on α only through (α, K, n): the plate's coupled
state *absorbs* its applications (Venture's absorbing at applications; paper 000 §4.2), so a
change of α re-scores the state in O(1) and changes no element.  Re-executing the N elements
would pay O(N) where the paper pays O(1).

The body of ``with th.plate(...)`` is Python code of the enclosing function; what it can read
from outside is its free *names* (locals, cells, globals), found once per ``with`` statement
from the source (:func:`body_names`).  At plate entry after a change, the engine takes a
*snapshot* of the values of those names (:func:`snapshot`) and compares it with the one stored
in the plate node at its last such entry:

* numbers, strings, tuples, lists and dicts (small) are compared by value, NumPy arrays by
  identity or value, functions by their code, defaults and closure cells, thrifty objects
  (distributions, ``th.mem`` functions) by their class and attributes, modules, classes and
  builtins by identity; any other object (``self`` of a model written as a class, which may hold
  choices a run wrote into it; long or deep containers) counts as changed — program order;
* a coupled process (``th.CRP``) is compared *without its parameters* (``_reads_key``): the
  plate's coupled site compares the parameters itself and re-scores its state under the new
  ones (:mod:`thrifty.core.coupled`) — the exact change of the joint, Ewens(α') − Ewens(α).

When every read value is the same, nothing an element computes changed: the plate runs only the
elements it is asked for (none, for an MH step on α) and the coupled state is re-scored.  When
α also reaches the elements another way (``dist.Normal(alpha, 1)`` in the body, a function
closing over α, a value derived from it), the snapshot differs and the plate runs in full, as
before.  A name read in any branch of the body counts.  When the source is not available, or
is not the code's (a file edited since import: the bytecode's loads at the body's lines are
checked against it), the body's reads are unknown: the plate runs in full.

Assumptions (new with this refinement; program order needed neither): the model does not write
choices into arrays that outlive a run (arguments, globals — compared by identity first) or into
module globals read by functions it calls, and it reads a ``th.CRP`` in a plate only through
``th.sample``.
"""

from __future__ import annotations

import ast
import dis
import inspect
import pickle
import textwrap
import types
from functools import lru_cache

import numpy as np

_SCALARS = (type(None), bool, int, float, complex, str, bytes)
_DEPTH = 4  # deeper values are compared by identity
_LONG = 64  # longer containers are compared by identity
_SMALL = 1 << 14  # arrays up to this size are pickled by value (checkpoints)
# objects that hold no choices, compared by identity: modules, classes, builtins, ufuncs
_CONSTANT = (types.ModuleType, type, types.BuiltinFunctionType, np.ufunc)


class Reads:
    """The snapshot of the names a plate body reads: ``{name: snapshot of its value}``."""

    __slots__ = ("values",)

    def __init__(self, values: dict):
        self.values = values

    def __reduce__(self):  # a checkpoint keeps what pickles; a snapshot that does not is lost
        try:
            pickle.dumps(self.values)
        except Exception:
            return (_lost_reads, ())
        return (Reads, (self.values,))

    def same(self, other) -> bool:
        """Whether ``other`` (the stored snapshot, or None) holds the same values."""
        if other is None or other.values.keys() != self.values.keys():
            return False
        return all(_same(v, other.values[k]) for k, v in self.values.items())


def plate_entry(run, dirty: bool, old, fresh_node: bool, frame) -> tuple[bool, Reads | None]:
    """(whether the plate entered in the Python ``frame`` must run in full — something before
    it changed *and* its body reads a changed value —, the snapshot to store)."""
    if not (dirty or fresh_node):
        return dirty, None
    read = body_reads(frame)
    if read is not None and dirty and not fresh_node and not (
        run.mode.rescore or run.mode.simulate_observations
    ):
        dirty = not read.same(getattr(old, "reads", None))
    return dirty, read


def body_reads(frame) -> Reads | None:
    """The snapshot of what the ``with th.plate(...)`` body being entered in the Python frame
    ``frame`` reads, or None when unknown (no source)."""
    names = body_names(frame.f_code, frame.f_lineno)
    if names is None:
        return None
    local, glob, builtins = frame.f_locals, frame.f_globals, frame.f_builtins
    out = {}
    for name in names:
        for scope in (local, glob, builtins):
            if name in scope:
                out[name] = snapshot(scope[name])
                break
        else:
            out[name] = _UNBOUND
    return Reads(out)


@lru_cache(maxsize=512)
def body_names(code, lineno: int) -> frozenset | None:
    """The free names read by the body of the ``with`` statement at ``lineno`` of ``code``
    (the ``as`` targets excluded), or None when its source cannot be found."""
    try:
        lines, start = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    rel = lineno - max(start, 1) + 1
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and node.lineno <= rel <= max(
            it.context_expr.end_lineno for it in node.items
        ):
            if best is None or node.lineno > best.lineno:
                best = node
    if best is None:
        return None
    targets = {it.optional_vars.id for it in best.items if isinstance(it.optional_vars, ast.Name)}
    read = _loads(best.body)
    # the source must be the code's (a file edited since it was imported is not): the names the
    # bytecode loads at the body's lines are among those the source reads there
    first, last = best.body[0].lineno + start - 1, best.end_lineno + start - 1
    header = _loads(it.context_expr for it in best.items)
    if not _bytecode_loads(code, first, last) <= read | header | targets:
        return None
    return frozenset(read - targets)


def _loads(nodes) -> set:
    return {n.id for t in nodes for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bytecode_loads(code, first: int, last: int) -> set:
    out = set()
    for ins in dis.get_instructions(code):
        line = ins.positions.lineno if ins.positions is not None else None
        if line is None or not first <= line <= last:
            continue
        if ins.opname.startswith(("LOAD_FAST", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME",
                                  "LOAD_CLOSURE")):
            val = ins.argval
            out.update(val if isinstance(val, tuple) else (val,))
    return out


# -- snapshots of values --------------------------------------------------------------------------
class _Leaf:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __reduce__(self):  # a checkpoint does not keep references: compared as changed
        return (_lost, ())


class _Id(_Leaf):
    """An object compared by identity."""

    def same(self, other) -> bool:
        return type(other) is _Id and other.v is self.v


class _Arr(_Leaf):
    """An array: the same object, or the same values."""

    def same(self, other) -> bool:
        if type(other) is not _Arr:
            return False
        a, b = self.v, other.v
        return a is b or (a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b))

    def __reduce__(self):
        return (_Arr, (self.v,)) if self.v.size <= _SMALL else (_lost, ())


class _Lost:
    """A value not kept by a checkpoint: never the same."""

    def same(self, other) -> bool:
        return False


_LOST = _Lost()
_UNBOUND = ("<unbound>",)


def _lost():
    return _LOST


def _lost_reads():
    return None


def snapshot(v, depth: int = 0):
    """A comparable description of ``v`` (see the module docstring)."""
    t = type(v)
    if t in _SCALARS or isinstance(v, np.generic):
        return v
    if t is np.ndarray:
        return _Arr(v)
    key = getattr(t, "_reads_key", None)
    if key is not None:
        return (t, "absorbed", key(v))
    if isinstance(v, _CONSTANT):
        return _Id(v)
    if depth >= _DEPTH:
        return _LOST
    d = depth + 1
    if t in (tuple, list):
        return (t, *(snapshot(x, d) for x in v)) if len(v) <= _LONG else _LOST
    if t is dict:
        if len(v) > _LONG:
            return _LOST
        return (t, *((k, snapshot(x, d)) for k, x in v.items()))
    if t is types.FunctionType:
        cells = tuple(
            snapshot(c.cell_contents, d) if _full(c) else _UNBOUND for c in v.__closure__ or ()
        )
        return ("fn", _code_key(v.__code__), snapshot(v.__defaults__, d),
                snapshot(v.__kwdefaults__, d), cells)
    if t is types.MethodType:
        return ("method", snapshot(v.__func__, d), snapshot(v.__self__, d))
    if t.__module__.startswith("thrifty.") and not isinstance(v, (type, types.ModuleType)):
        attrs = dict(getattr(v, "__dict__", {}))
        for cls in t.__mro__:
            for s in getattr(cls, "__slots__", ()):
                if s not in attrs and hasattr(v, s):
                    attrs[s] = getattr(v, s)
        return (t, *((k, snapshot(x, d)) for k, x in sorted(attrs.items())))
    return _LOST  # any other object may hold choices a run wrote into it: assume it changed


def _full(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _code_key(code) -> tuple:
    """A code object as plain values (so that a checkpoint can keep it)."""
    consts = tuple(_code_key(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return (code.co_filename, code.co_firstlineno, code.co_name, code.co_code, consts,
            code.co_names)


def _same(a, b) -> bool:
    if isinstance(a, (_Leaf, _Lost)):
        return a.same(b)
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False
