"""Fingerprints of everything a run depends on that thrifty can see: code and values.

A checkpoint must never resume a different run, so it stores a fingerprint of the program and
compares it on resume.  :class:`Walker` follows the program's model function *transitively*:

* a function contributes its code (bytecode, constants — nested code objects included — and
  the names it uses), the module-level values its names resolve to, its closure cells, its
  defaults and keyword defaults; a function it reaches that way (a helper, a ``th.call``
  sub-model, a ``th.mem`` function, a method of a class it uses) is walked the same way;
* values hash by value: numbers, strings, arrays (dtype, shape, bytes), containers
  (sets order-free), instances through their pickling reduction (class and state), a
  ``@th.model`` through its function, a ``functools.partial`` through its parts; a class
  also through its metaclass;
* modules, and functions and classes of libraries (thrifty itself, the standard library,
  installed packages), by name; a module of the user's reached by any path (a global, a
  closure cell, an argument, an attribute, a submodule) also through its attributes named in
  the code walked — its names, and, once any code walked looks a name up at run time
  (:data:`DYNAMIC`: ``getattr(m, "x")``, ``globals()["x"]``, ``vars``, ``eval``, …), the
  strings of the code walked that are identifiers.  Without such a lookup a string is data,
  not a name: a site named ``"mu"`` does not make the module-level ``mu`` (the user's draws,
  ``mu = r["mu"]``, defined after the run) part of the fingerprint;
* a value that cannot be hashed deterministically (a lock, an open file, a generator) is listed
  in :attr:`Walker.unhashable`, so that the caller says so (a warning at checkpoint time) rather
  than silently not noticing a change.

Each thing found is an *item* with its own digest — ``code:<module>.<function>``,
``global:<module>.<name>``, ``closure:<function>:<name>``, ``argument:y``, … — so a mismatch
can say what changed.  The cost is one pass over the code and the data, O(size of the data).

>>> import numpy as np
>>> w = Walker()
>>> w.add("argument:y", {"y": np.arange(3.0), "scale": 2.0})
>>> list(w.items), len(w.items["argument:y"]), w.unhashable
(['argument:y'], 64, [])
"""

from __future__ import annotations

import copyreg
import functools
import hashlib
import os
import sys
import sysconfig
import types

import numpy as np

_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_SKIP_CLASS_ATTRS = frozenset({
    "__dict__", "__weakref__", "__module__", "__qualname__", "__doc__", "__firstlineno__",
    "__static_attributes__", "__annotations__", "__slots__", "__orig_bases__", "__parameters__",
    "__slotnames__", "_abc_impl",  # caches that pickling and abc add to a class
})
_MAX_DEPTH = 200
DYNAMIC = frozenset({
    "getattr", "hasattr", "globals", "vars", "locals", "__dict__", "__getattribute__",
    "attrgetter", "eval", "exec", "evaluate", "query", "__import__", "import_module", "modules",
    "_getframe", "currentframe", "f_globals", "f_locals", "f_back",
})
"""Names whose use in the code walked means that strings may name values: code that looks
names up at run time (by ``getattr``, a module's or frame's namespace, an evaluated string)."""
_BUILTINS = (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodDescriptorType,
             types.WrapperDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType,
             np.ufunc)


@functools.cache
def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    import site

    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # virtualenvs of old versions
        pass
    dirs.add(getattr(site, "USER_SITE", None))
    return tuple(sorted(os.path.realpath(d) + os.sep for d in dirs if d))


@functools.lru_cache(maxsize=4096)
def is_library(module: str | None) -> bool:
    """Whether ``module`` belongs to thrifty, the standard library or an installed package
    (its functions and classes are fingerprinted by name) rather than to the user's code."""
    if not module:
        return False
    top = module.split(".")[0]
    if top == "thrifty" or top == "builtins" or top in sys.stdlib_module_names:
        return True
    if top == "__main__":
        return False
    mod = sys.modules.get(top)
    path = getattr(mod, "__file__", None)
    if mod is not None and path is None:
        return getattr(mod, "__path__", None) is None  # a built-in module (not a namespace)
    return path is not None and os.path.realpath(path).startswith(_library_dirs())


def _name(obj) -> str:
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', type(obj).__name__)}"


class Walker:
    """Collects the items (name → SHA-256 hex digest) of what it is given; see the module doc."""

    def __init__(self):
        self.items: dict[str, str] = {}
        self.unhashable: list[tuple] = []  # (item, why) of what could not be hashed
        self._keys: dict[int, str] = {}  # id of a walked function or class → its item key
        self._used: set = set()
        self._queue: list = []
        self._alive: list = []  # objects whose ids are used as keys stay alive
        self._digests: dict[int, bytes] = {}  # id → digest of an array or container hashed
        self._stack: list = []  # ids of the containers being hashed (cycles)
        self._names: dict = {}  # every name the code walked uses (ordered: a set's order varies)
        self._strings: dict = {}  # every identifier-like string constant of the code walked
        self._dynamic = False  # whether any code walked looks names up at run time (DYNAMIC)
        self._pending: list = []  # (globals, module, strings) of functions walked before then
        self._modules: dict = {}  # name → a user's module reached, as a value

    # -- entry points ------------------------------------------------------------------------------
    def root(self, fn) -> None:
        """Walk ``fn`` (its code even when it is a library function) and all it reaches."""
        if isinstance(fn, types.FunctionType):
            self._function_key(fn, force=True)
        else:
            self.add("model", fn)
        self._drain()

    def add(self, key: str, value) -> None:
        """An item ``key`` holding the digest of ``value`` (and walk the code it reaches)."""
        self._add(key, value)
        self._drain()

    def _add(self, key: str, value) -> None:  # the code it reaches is queued, walked later
        h = hashlib.sha256()
        self._value(h, value, key, 0)
        self.items[key] = h.hexdigest()

    def digest(self) -> str:
        """One digest of every item."""
        h = hashlib.sha256()
        for k, v in self.items.items():
            h.update(f"{k}={v};".encode())
        return h.hexdigest()

    # -- functions and classes ---------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        key, n = base, 1
        while key in self._used:
            n += 1
            key = f"{base}#{n}"
        self._used.add(key)
        return key

    def _function_key(self, fn, force: bool = False) -> str:
        k = self._keys.get(id(fn))
        if k is None:
            if not force and is_library(fn.__module__):
                return "library:" + _name(fn)
            k = self._keys[id(fn)] = self._unique(f"{fn.__module__}.{fn.__qualname__}")
            self._alive.append(fn)
            self._queue.append(("function", fn, k))
        return k

    def _class_key(self, cls) -> str:
        k = self._keys.get(id(cls))
        if k is None:
            if is_library(cls.__module__):
                return "library:" + _name(cls)
            k = self._keys[id(cls)] = self._unique(f"{cls.__module__}.{cls.__qualname__}")
            self._alive.append(cls)
            self._queue.append(("class", cls, k))
        return k

    def _drain(self) -> None:
        while True:
            while self._queue:
                kind, obj, key = self._queue.pop(0)
                if kind == "function":
                    self._walk_function(obj, key)
                else:
                    self._walk_class(obj, key)
            names = [*self._names, *(self._strings if self._dynamic else ())]
            missing = [(m, n) for m in list(self._modules.values()) for n in names
                       if n in vars(m) and f"global:{m.__name__}.{n}" not in self.items]
            if not missing:
                return
            for m, n in missing:  # (their values may reach more code and modules: again)
                self._global(m.__name__, n, vars(m)[n], ())

    def _walk_function(self, fn, key: str) -> None:
        h = hashlib.sha256()
        names: dict = {}
        strings: dict = {}
        self._code(h, fn.__code__, names, strings)
        self.items["code:" + key] = h.hexdigest()
        glob = getattr(fn, "__globals__", {})
        module = glob.get("__name__", fn.__module__)
        self._names.update(names)
        self._strings.update(strings)
        if not self._dynamic and not DYNAMIC.isdisjoint(names):
            self._dynamic = True  # strings are names from now on, those seen before too
            for g, m, st in self._pending:
                self._resolve(g, m, st, st)
            self._pending.clear()
        if self._dynamic:
            self._resolve(glob, module, [*names, *strings], {**names, **strings})
        else:
            self._resolve(glob, module, names, names)
            self._pending.append((glob, module, strings))
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self._add(f"closure:{key}:{var}", v)
        if fn.__defaults__:
            self._add(f"defaults:{key}", fn.__defaults__)
        if fn.__kwdefaults__:
            self._add(f"kwdefaults:{key}", fn.__kwdefaults__)
        if getattr(fn, "__dict__", None):
            attrs = {k: v for k, v in fn.__dict__.items() if k != "__wrapped__"}
            if attrs:
                self._add(f"attributes:{key}", attrs)

    def _resolve(self, glob: dict, module: str, which, names) -> None:
        """The module-level values (and the user's modules imported in a function) that the
        names ``which`` of a function with globals ``glob`` resolve to."""
        for name in which:
            if name in glob:
                self._global(module, name, glob[name], names)
            elif name in sys.modules and not is_library(name):  # imported in the function
                self._modules.setdefault(name, sys.modules[name])

    def _global(self, module: str, name: str, value, names) -> None:
        key = f"global:{module}.{name}"
        if key in self.items:
            return
        self._add(key, value)
        if isinstance(value, types.ModuleType) and not is_library(value.__name__):
            for attr in names:  # ``helpers.SIGMA``: attributes of the user's module it names
                if attr != name and attr in getattr(value, "__dict__", {}):
                    self._global(value.__name__, attr, value.__dict__[attr], ())

    def _walk_class(self, cls, key: str) -> None:
        h = hashlib.sha256()
        h.update(f"meta {self._class_key(type(cls))};bases".encode())
        for b in cls.__bases__:
            h.update(self._class_key(b).encode() + b";")
        for name in sorted(vars(cls)):
            if name in _SKIP_CLASS_ATTRS:
                continue
            h.update(f"attr {name}=".encode())
            self._value(h, vars(cls)[name], f"class:{key}.{name}", 0)
        self.items["class:" + key] = h.hexdigest()

    def _code(self, h, code, names: dict, strings: dict) -> None:
        """Bytecode, signature counts, names and constants (nested code objects recursively);
        not line numbers, file names or the function's own name.  Collects the names the code
        uses in ``names``, its identifier-like string constants in ``strings``."""
        h.update(b"code")
        h.update(code.co_code)
        h.update(repr((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                       code.co_flags, code.co_names, code.co_varnames, code.co_freevars,
                       code.co_cellvars)).encode())
        for n in code.co_names:
            names.setdefault(n, None)
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                self._code(h, c, names, strings)
            else:
                if type(c) is str and c.isidentifier():  # getattr(m, "x"), globals()["x"]
                    strings.setdefault(c, None)
                self._value(h, c, "a constant", 0)

    # -- values ------------------------------------------------------------------------------------
    def _value(self, h, x, where: str, depth: int) -> None:
        t = type(x)
        if t in _ATOMS:
            h.update(f"{t.__name__}:{x!r};".encode())
            return
        if isinstance(x, np.generic):
            h.update(f"np:{x.dtype.str}:".encode() + np.asarray(x).tobytes() + b";")
            return
        if depth > _MAX_DEPTH:
            self.unhashable.append((where, f"nested more than {_MAX_DEPTH} deep"))
            h.update(b"<deep>")
            return
        d = self._digests.get(id(x))
        if d is None:
            if id(x) in self._stack:  # a cycle: say where it points back to
                h.update(f"<cycle {len(self._stack) - self._stack.index(id(x))}>".encode())
                return
            inner = hashlib.sha256()
            self._stack.append(id(x))
            try:
                self._compound(inner, x, where, depth + 1)
            finally:
                self._stack.pop()
            d = self._digests[id(x)] = inner.digest()
            self._alive.append(x)
        h.update(d)

    def _compound(self, h, x, where: str, depth: int) -> None:
        from thrifty.core.model import Model, Program

        t = type(x)
        if t is np.ndarray:
            h.update(f"nd:{x.dtype.str}:{x.shape};".encode())
            if x.dtype.hasobject:
                for v in x.ravel():
                    self._value(h, v, where, depth)
            elif x.size:  # (an empty array is its header: memoryview refuses to cast it)
                h.update(memoryview(np.ascontiguousarray(x)).cast("B"))
        elif t in (list, tuple):
            h.update(f"{t.__name__}{len(x)};".encode())
            for v in x:
                self._value(h, v, where, depth)
        elif t is dict:
            h.update(f"dict{len(x)};".encode())
            for k, v in x.items():
                self._value(h, k, where, depth)
                self._value(h, v, where, depth)
        elif t in (set, frozenset):
            parts = []
            for v in x:
                sub = hashlib.sha256()
                self._value(sub, v, where, depth)
                parts.append(sub.digest())
            h.update(f"{t.__name__}{len(x)};".encode() + b"".join(sorted(parts)))
        elif t is types.FunctionType:
            h.update(("function:" + self._function_key(x)).encode())
        elif isinstance(x, type):
            h.update(("class:" + self._class_key(x)).encode())
        elif t is types.ModuleType:
            h.update(f"module:{x.__name__}".encode())
            if not is_library(x.__name__):
                self._modules.setdefault(x.__name__, x)
        elif t is types.MethodType:
            h.update(b"method")
            self._value(h, x.__func__, where, depth)
            self._value(h, x.__self__, where, depth)
        elif isinstance(x, _BUILTINS):  # C functions and methods, ufuncs: by name
            name = getattr(x, "__qualname__", None) or getattr(x, "__name__", "?")
            h.update(f"builtin:{getattr(x, '__module__', None)}.{name}".encode())
            owner = getattr(x, "__self__", None)
            if owner is not None and not isinstance(owner, types.ModuleType):
                self._value(h, owner, where, depth)  # a bound method: its object too
        elif isinstance(x, (staticmethod, classmethod)):
            self._value(h, x.__func__, where, depth)
        elif isinstance(x, property):
            for f in (x.fget, x.fset, x.fdel):
                self._value(h, f, where, depth)
        elif isinstance(x, types.CodeType):
            self._code(h, x, {}, {})
        elif isinstance(x, Model):
            h.update(b"model")
            self._value(h, x.fn, where, depth)
        elif isinstance(x, Program):
            h.update(b"program")
            self._value(h, (x.fn, x.args, x.kwargs), where, depth)
        elif callable(x) and isinstance(getattr(x, "__wrapped__", None), types.FunctionType):
            h.update(f"wrapper:{_name(type(x))}".encode())  # functools.lru_cache, ...
            self._value(h, x.__wrapped__, where, depth)
        else:
            self._reduced(h, x, where, depth)

    def _reduced(self, h, x, where: str, depth: int) -> None:
        """Any other object: its class and state, as pickling reduces it."""
        try:
            rv = x.__reduce_ex__(4)
        except Exception as e:  # a lock, an open file, a generator, ...
            self.unhashable.append((where, f"a {_name(type(x))} ({type(e).__name__}: {e})"))
            h.update(f"<unhashable {_name(type(x))}>".encode())
            return
        if isinstance(rv, str):  # a module-level singleton, by name
            h.update(f"global:{_name(type(x))}:{rv}".encode())
            return
        h.update(b"reduce")
        func, args = rv[0], rv[1] if len(rv) > 1 else ()
        if func is copyreg.__newobj__ or func is getattr(copyreg, "__newobj_ex__", None):
            self._value(h, args[0], where, depth)
            args = args[1:]
        else:
            self._value(h, func, where, depth)
        self._value(h, args, where, depth)
        for part in rv[2:]:
            if part is None:
                h.update(b"-")
            elif isinstance(part, (dict, tuple, list)) or not hasattr(part, "__next__"):
                self._value(h, part, where, depth)
            else:  # list / dict items as iterators
                self._value(h, list(part), where, depth)


def fingerprint_program(program) -> tuple[dict, list]:
    """``({item: digest}, [what could not be fingerprinted])`` of ``program``: its model
    function and everything it reaches, and its arguments.

    >>> import thrifty as th
    >>> from thrifty.models import hmm
    >>> items, unhashable = fingerprint_program(hmm())
    >>> any(k.startswith("code:") for k in items), unhashable
    (True, [])
    """
    w = Walker()
    w.root(program.fn)
    for i, a in enumerate(program.args):
        w.add(f"argument:{i}", a)
    for k, v in program.kwargs.items():
        w.add(f"argument:{k}", v)
    return w.items, w.unhashable


def value_digest(value, where: str) -> tuple[str, list]:
    """(digest, [what could not be fingerprinted]) of ``value`` and all the code it reaches.

    >>> a, _ = value_digest({"scale": 1.0}, "x")
    >>> a == value_digest({"scale": 1.0}, "x")[0], a == value_digest({"scale": 1.5}, "x")[0]
    (True, False)
    """
    w = Walker()
    w.add(where, value)
    return w.digest(), w.unhashable


def class_digest(cls) -> tuple[str, list]:
    """(digest, unhashable) of a user's class: its methods' code (and all they reach) and its
    class attributes."""
    w = Walker()
    k = w._class_key(cls)
    w._drain()
    if k.startswith("library:"):
        return k, []
    return w.digest(), w.unhashable
