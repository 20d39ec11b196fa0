"""What a chain records at each draw: O(what changed), never a copy of every plate column.

The :class:`Recorder` of a chain keeps, for every recorded variable, its :class:`~.draws.Series`
of events.  Between two draws the trace's commits log the plate elements and markov steps they
wrote (:class:`~thrifty.core.trace.ChangeLog`); at a draw the recorder reads exactly those
elements from the trace's columns:

* top-level sites and deterministic values: compared by identity with the last draw (replayed
  values are the same objects), O(number of top-level sites);
* plate sites (and markov chains inside plates): the logged elements, O(elements written);
* markov chains: the logged steps, O(steps written) — a chain whose steps hold nested plates or
  chains is read in full when one of them changes (documented fallback);
* mem keys: the keys written;
* deterministic values of plate elements and markov steps a lazy run left stale (000 §3.5:
  not executed since a value they read changed): computed afresh on a fork of the trace,
  never committed, O(stale members) — they are values that changed at this draw.

When choices appear or disappear (a commit with fresh or stale choices) the recorder walks the
top-level structure again (O(number of nodes and mem keys)) and records whole values for what
is new.  The log-joint of each draw is ``trace.known_log_joint()`` (O(number of top-level
nodes); NaN while subsampling kernels leave stale elements).  Program outputs are kept by
reference when the last execution was complete or the output does not read plate values;
otherwise the draw's output is marked pending and computed, if asked for, from the recorded
values (:func:`replay_outputs`) — never by a full execution per draw while sampling.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from thrifty.core.address import as_pattern, dotted
from thrifty.core.engine import propose
from thrifty.core.locate import collect_block, same_name, stale_parts, stale_plan
from thrifty.core.trace import ChangeLog
from thrifty.core.vocab import DETERMINISTIC, LATENT, same_value
from thrifty.errors import ArgumentError
from thrifty.runtime.draws import Series


class _Pending:
    """An output not recorded at its draw (it reads plate values that were partly executed)."""

    def __repr__(self) -> str:
        return "PENDING"

    def __reduce__(self):
        return "PENDING"


PENDING = _Pending()


def _keep(kind) -> bool:
    return kind == LATENT or kind == DETERMINISTIC


class Selector:
    """Which variables are recorded: ``record`` (None: all) and ``exclude`` name patterns,
    matched on the dotted names (``"data"`` matches ``"data.z"``)."""

    def __init__(self, record=None, exclude=None):
        self.record = None if record is None else [_pattern(p, "record") for p in _as_list(record)]
        self.exclude = (
            [] if exclude is None else [_pattern(p, "exclude") for p in _as_list(exclude)]
        )

    def missing(self, names) -> list:
        """``(what, pattern)`` of the patterns that name no variable among ``names``."""
        parts = [tuple(n.split(".")) for n in names]
        return [(what, p) for what, pats in (("record", self.record or []),
                                             ("exclude", self.exclude))
                for p in pats if not any(q[: len(p)] == p for q in parts)]

    def check(self, names, where: str = "") -> None:
        """Raise if a pattern names no variable among ``names`` (those of some traces,
        ``where``)."""
        for what, p in self.missing(names)[:1]:
            listed = ", ".join(sorted(names)[:12]) + (", ..." if len(names) > 12 else "")
            raise ArgumentError(
                f"{what}={'.'.join(p)!r} names no variable of the program{where}; its "
                f"variables are {listed or '(none)'}"
            )

    def __call__(self, name: str) -> bool:
        parts = tuple(name.split("."))
        if any(parts[: len(p)] == p for p in self.exclude):
            return False
        return self.record is None or any(parts[: len(p)] == p for p in self.record)

    @property
    def everything(self) -> bool:
        return self.record is None and not self.exclude


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple, set)) and not _is_address(x) else [x]


def _is_address(x) -> bool:
    return isinstance(x, tuple) and all(isinstance(p, (str, int)) for p in x)


def _pattern(p, what: str) -> tuple:
    if isinstance(p, str) and p:
        return tuple(p.split("."))
    if _is_address(p) and p:
        return tuple(str(x) for x in as_pattern(p))
    raise ArgumentError(
        f"{what}: expected a variable name such as 'w' or 'data.z' (or a list of them), "
        f"got {p!r}"
    )


class _Source:
    """Where a recorded variable lives in the trace."""

    __slots__ = ("key", "kind", "latent", "node")

    def __init__(self, kind, node, key, latent=True):
        self.kind, self.node, self.key, self.latent = kind, node, key, latent

    def meta(self) -> tuple:
        """(kind, node address, key, latent): enough to set the variable in a run."""
        if self.kind == "mem":
            return "mem", self.key[0], self.key[1], True
        return self.kind, None if self.node is None else self.node.addr, self.key, self.latent

    def whole(self, trace):
        """The variable's current value (a copy of node columns)."""
        kind, node, key = self.kind, self.node, self.key
        if kind == "root":
            s = trace.root.sites.get(key)
            return None if s is None else s.value
        if kind == "plate":
            return node.sites[key].values.array().copy()
        if kind == "plate_chain":
            return node.chains[key[0]].sites[key[1]].values.array().copy()
        if kind == "chain":
            return _chain_column(node, key, None)
        if kind == "mem":
            return node.values.get(key[1])
        raise ValueError(kind)

    def part(self, members):
        """The values of the elements / steps ``members``."""
        kind, node, key = self.kind, self.node, self.key
        if kind == "plate":
            return node.sites[key].values.take(members)
        if kind == "plate_chain":
            return node.chains[key[0]].sites[key[1]].values.take(members)
        return _chain_column(node, key, members)


def _chain_column(chain, rel, steps):
    s = chain.sites[rel]
    data = s.values.array() if steps is None else s.values.take(steps)
    if s.present is None:
        return data.copy() if steps is None else data
    present = s.present.array() if steps is None else s.present.take(steps)
    out = data.astype(float) if data.dtype.kind != "O" else data.copy()
    out[~present] = np.nan if out.dtype.kind == "f" else None
    return out


def sources(trace, keep) -> tuple[dict, dict, list, set]:
    """``{name: source}`` of the recorded variables of ``trace``, ``{node: [names]}``, the
    top-level chains read in full (with nested nodes): ``[(local, chain, {name: value})]``, and
    the names of the latent variables ``keep`` leaves out."""
    out: dict = {}
    by_node: dict = {}
    generic: list = []
    skipped: set = set()
    seen: dict = {}

    def add(name_parts, src):
        name = dotted(name_parts)
        other = seen.setdefault(name, name_parts)
        if other is not name_parts:
            same_name(name, other, name_parts)
        if keep(name):
            out[name] = src
            if src.node is not None:
                by_node.setdefault(src.node, []).append(name)
        elif src.latent:
            skipped.add(name)

    root = trace.root
    for local, s in root.sites.items():
        if _keep(s.kind):
            add(local, _Source("root", None, local, s.kind == LATENT))
    for local, node in root.plates.items():
        for rel, s in node.sites.items():
            if _keep(s.kind) and s.values is not None:
                add(local + rel, _Source("plate", node, rel, s.kind == LATENT))
        for c, cols in node.chains.items():
            for rel, s in cols.sites.items():
                if _keep(s.kind) and s.values is not None and cols.present[rel].all():
                    src = _Source("plate_chain", node, (c, rel), s.kind == LATENT)
                    add(local + c + rel, src)
        by_node.setdefault(node, [])
    for local, chain in root.chains.items():
        if chain.nested:
            values: dict = {}
            collect_block(_ChainAsBlock(local, chain), (), values, True)
            values = {dotted(k): v for k, v in values.items()}
            if not all(keep(n) for n in values):  # which of the left-out values are latent
                latent: dict = {}
                collect_block(_ChainAsBlock(local, chain), (), latent, False)
                skipped.update(n for n in map(dotted, latent) if not keep(n))
            generic.append((local, chain, {n: v for n, v in values.items() if keep(n)}))
            continue
        for rel, s in chain.sites.items():
            if _keep(s.kind) and s.values is not None:
                add(local + rel, _Source("chain", chain, rel, s.kind == LATENT))
        by_node.setdefault(chain, [])
    for addr, table in trace.mems.items():
        for key in table.values:
            add(addr + (key,), _Source("mem", table, (addr, key)))
        by_node.setdefault(table, [])
    return out, by_node, generic, skipped


def _derives(node) -> bool:
    """Whether a chain or plate holds deterministic sites (in its nested nodes too)."""
    if any(s.kind == DETERMINISTIC for s in node.sites.values()):
        return True
    inner = [*getattr(node, "chains", {}).values()]
    for plates, chains, _ in getattr(node, "nested", {}).values():
        inner += [*plates.values(), *chains.values()]
    return any(_derives(n) for n in inner)


class _ChainAsBlock:
    """A top-level chain seen as a block holding only that chain (for the generic reader)."""

    def __init__(self, local, chain):
        self.sites: dict = {}
        self.plates: dict = {}
        self.chains = {local: chain}


class Recorder:
    """The draws of one chain since the last :meth:`take` (see the module docstring)."""

    def __init__(self, keep: Selector | None = None, needs_plates: bool = False, start: int = 0,
                 live=()):
        self.keep = keep if keep is not None else Selector()
        # the variables present at draw ``start - 1``, recorded by the recorder of a run this
        # one resumes: those absent from the first draw it records end there
        self._live = set(live)
        self.needs_plates = needs_plates
        self.n = start  # index of the next draw in the chain
        self._trace = None
        self._sources: dict = {}
        self._roots_of: list = []  # (name, source) of the top-level sites among _sources
        self._by_node: dict = {}
        self._generic: list = []
        self._last: dict = {}  # name → last recorded whole value of top-level sites / mem keys
        self._dirty: set = set()  # names whose last values came from a kernel, not the trace
        self._derived: list = []  # (name, source) of the deterministic sites of plates, chains
        self._fresh: dict = {}  # name → members recorded afresh (the trace holds stale values)
        self._fresh_generic: set = set()  # chains read in full, recorded afresh likewise
        self._generic_derived: list = []  # the chains read in full with deterministic sites
        self._mem_keys: dict = {}  # name → the memoized key recorded under it
        # the log-joint ``_lp`` of ``_lp_trace`` at its clock ``_lp_clock`` (no stale nodes)
        self._lp, self._lp_trace, self._lp_clock = math.nan, None, -1
        self._new()

    def _new(self) -> None:
        self.meta: dict = {}  # name → source meta of variables (re)located since the last take
        self.unrecorded: set = set()  # latent variables left out by ``keep`` since the last take
        self.series: dict[str, Series] = {}
        self.lp: list = []
        self.n_latent: list = []
        self.outputs: list = []
        self.stats: dict = {}  # name → per-draw kernel statistics (gradient kernels)
        self.count = 0

    def _series(self, name) -> Series:
        s = self.series.get(name)
        if s is None:
            s = self.series[name] = Series()
        return s

    # -- one draw ---------------------------------------------------------------------------------
    def record(self, trace, stats: dict | None = None, pending=None) -> None:
        """Record draw ``self.n`` from ``trace``; ``pending``: ``({name: value}, log-joint)``
        of a draw a kernel computed but has not written into the trace yet — those names'
        values and the log-joint are taken from it, the output is computed on demand, and
        at the next draw read from the trace the names are read in full."""
        d = self.n
        if stats:  # the kernels' statistics of this draw (a name absent before: NaN there)
            for name, v in stats.items():
                col = self.stats.get(name)
                if col is None:
                    col = self.stats[name] = [math.nan] * self.count
                col.append(v)
        log = trace.changes
        if trace is not self._trace or log is None:
            self._walk(trace, d, full=True)
        else:
            walk = log.nodes_changed
            if not walk:
                by_node = self._by_node
                for e in log.entries:
                    if e[0] not in by_node:  # a node the last walk did not see
                        walk = True
                        break
            if walk:
                self._walk(trace, d, full=False)
            if log.entries:  # (a rejected proposal wrote nothing)
                self._entries(trace, log, d)
            if self._roots_of:
                self._roots(trace, d)
            if log.entries or log.nodes_changed:
                log.clear()
        if trace.changes is None or self._trace is not trace:
            trace.changes = ChangeLog()
        self._trace = trace
        if pending is not None:
            self._pending(trace, d, *pending)
        elif self._dirty:
            self._reread(trace, d)
        if pending is None and (trace.stale_nodes or self._fresh or self._fresh_generic):
            self._stale_derived(trace, d)
        if pending is not None:
            self.lp.append(pending[1])
        elif trace.stale_nodes or trace.clock != self._lp_clock or trace is not self._lp_trace:
            self._lp = trace.known_log_joint()  # (NaN while elements may be stale)
            self._lp_trace = None if trace.stale_nodes else trace
            self._lp_clock = trace.clock
            self.lp.append(self._lp)
        else:  # (no commit since the last draw: every commit advances the clock)
            self.lp.append(self._lp)
        self.n_latent.append(trace.n_latent)
        out = trace.output
        if pending is not None:
            self.outputs.append(PENDING)
        elif not self.needs_plates:
            self.outputs.append(out)
        elif trace.output_full and _small(out):  # a copy: it may hold views of plate columns
            self.outputs.append(copy.deepcopy(out))
        else:  # computed from the recorded values if result.output is read
            self.outputs.append(PENDING)
        self.n += 1
        self.count += 1

    def _pending(self, trace, d, values: dict, lp) -> None:
        for name, v in values.items():
            src = self._sources.get(name)
            if src is not None:
                self._series(name).set(d, v)
                self._dirty.add(name)
                if src.kind == "root":  # (the trace's value, unchanged until it is written)
                    self._last[name] = src.whole(trace)

    def _reread(self, trace, d) -> None:
        """Whole values of the names the last draws took from a kernel: whatever the trace
        holds now (the kernel's write may have been refused)."""
        for name in self._dirty:
            src = self._sources.get(name)
            if src is None:
                continue
            v = src.whole(trace)
            if src.kind == "root":
                self._last[name] = v
            self._series(name).set(d, v)
        self._dirty = set()

    def _roots(self, trace, d) -> None:
        sites = trace.root.sites
        last = self._last
        for name, src in self._roots_of:
            s = sites.get(src.key)
            v = None if s is None else s.value
            prev = last.get(name, _NOTHING)
            if src.latent:  # a replayed choice is the same object: identity says "unchanged"
                if v is prev:
                    continue
            elif prev is not _NOTHING and same_value(v, prev):  # a computed value: compare
                continue
            elif type(v) not in (int, float, bool):
                v = copy.deepcopy(v)  # the model may reuse (and mutate) the object it records
            last[name] = v
            self._series(name).set(d, v)

    def _walk(self, trace, d, full: bool) -> None:
        """Structure changed (or a first draw): whole values for what is new or replaced."""
        new, by_node, generic, skipped = sources(trace, self.keep)
        self.unrecorded |= skipped
        old = self._sources
        for name, src in new.items():
            if src.kind == "mem":  # (a key of another type under the same name, at another draw)
                key = self._mem_keys.setdefault(name, src.key)
                if key != src.key:
                    same_name(name, key[0] + (key[1],), src.key[0] + (src.key[1],))
            prev = old.get(name)
            if (
                full
                or prev is None
                or prev.kind != src.kind
                or prev.node is not src.node
                or src.kind == "mem"
            ):
                v = src.whole(trace)
                if src.kind in ("root", "mem"):
                    if not full and prev is not None and v is self._last.get(name, _NOTHING):
                        continue
                    if not src.latent and type(v) not in (int, float, bool):
                        v = copy.deepcopy(v)  # a computed value the model may mutate later
                    self._last[name] = v
                self._series(name).set(d, v)
        for name in old:
            if name not in new:
                self._series(name).set(d, None)
                self._last.pop(name, None)
        for name in list(self._fresh):  # (a replaced node was read whole from the trace)
            prev, src = old.get(name), new.get(name)
            if src is None or prev is None or prev.node is not src.node:
                del self._fresh[name]
        gen_names = set()
        for _, _, values in generic:
            for name, v in values.items():
                gen_names.add(name)
                self._series(name).set(d, v)
        for _, _, values in self._generic:
            for name in values:
                if name not in gen_names and name not in new:
                    self._series(name).set(d, None)
        if self._live:  # (the first walk of a resumed chain)
            for name in self._live - gen_names - new.keys():
                self._series(name).set(d, None)
            self._live = set()
        for name, src in new.items():
            prev = old.get(name)
            if prev is None or prev.kind != src.kind or prev.node is not src.node:
                self.meta[name] = src.meta()
        self._sources, self._by_node, self._generic = new, by_node, generic
        self._roots_of = [(name, src) for name, src in new.items() if src.kind == "root"]
        self._derived = [(name, src) for name, src in new.items()
                         if not src.latent and src.kind in ("plate", "plate_chain", "chain")]
        self._generic_derived = [local for local, chain, values in generic
                                 if values and _derives(chain)]
        if full:
            self._trace = None  # entries logged before this walk are already included

    def _entries(self, trace, log, d) -> None:
        if self._trace is None:
            return
        entries = log.entries
        if len(entries) == 1 and not self._generic and self._one_node(entries[0], d):
            return
        merged: dict = {}  # node → {site key: member parts, or None for all members}
        generic_dirty = False
        sources = self._sources
        for node, members, keys in log.entries:
            names = self._by_node.get(node)
            if names is None:
                generic_dirty = True
                continue
            per_key = merged.setdefault(node, {})
            if keys is None:
                keys = [sources[n].key for n in names]
            for key in keys:
                parts = per_key.get(key, ())
                per_key[key] = None if members is None or parts is None else (*parts, members)
        for node, per_key in merged.items():
            for name in self._by_node[node]:
                src = sources[name]
                if src.kind == "mem":  # a mem table: the keys written
                    v = node.values.get(src.key[1])
                    if v is not self._last.get(name, _NOTHING):
                        self._last[name] = v
                        self._series(name).set(d, v)
                    continue
                if src.key not in per_key:
                    continue
                parts = per_key[src.key]
                if parts is None:
                    self._series(name).set(d, src.whole(trace))
                    continue
                self._change(name, src, parts, d)
        if generic_dirty or (self._generic and any(node in merged for _, node, _ in self._generic)):
            self._refresh_generic(trace, d)

    def _one_node(self, entry, d) -> bool:
        """The usual draw: one commit wrote some elements or steps of one plate or chain (no
        mem table, no chain read in full) — what :meth:`_entries` does, without merging.
        False when the entry is not of that kind."""
        node, members, keys = entry
        names = self._by_node.get(node)
        if names is None or members is None:
            return False
        sources = self._sources
        srcs = [sources[name] for name in names]
        for src in srcs:
            if src.kind == "mem":
                return False
        parts = (members,)
        for name, src in zip(names, srcs):
            if keys is None or src.key in keys:
                self._change(name, src, parts, d)
        return True

    def _change(self, name, src, parts, d) -> None:
        """Record at draw ``d`` the members of source ``name`` its logged ``parts`` wrote: one
        number, a few numbers as lists, or arrays."""
        one = _one(src, parts)
        if one is not None:
            s = self.series.get(name)  # (``_series``, inline)
            (self._series(name) if s is None else s).change_one(d, one[0], one[1])
            return
        few = _few(src, parts)
        if few is not None:
            self._series(name).change_few(d, *few)
        else:
            self._series(name).change(d, *_elements(src, parts))

    def _refresh_generic(self, trace, d) -> None:
        fresh = []
        for local, chain, old_values in self._generic:
            chain = trace.root.chains.get(local, chain)
            values: dict = {}
            collect_block(_ChainAsBlock(local, chain), (), values, True)
            values = {dotted(k): v for k, v in values.items() if self.keep(dotted(k))}
            for name, v in values.items():
                self._series(name).set(d, v)
            for name in old_values:
                if name not in values:
                    self._series(name).set(d, None)
            fresh.append((local, chain, values))
        self._generic = fresh

    def _stale_derived(self, trace, d) -> None:
        """Record the deterministic values of the stale plate elements and markov steps as of
        this draw.  A lazy run (subsampling kernels, 000 §3.5) executes the top level and some
        sections only; the others keep the deterministic values computed under older values
        until a run reads them.  They are computed by one run planned on exactly the stale
        members of the nodes holding recorded deterministic sites
        (:func:`~thrifty.core.locate.stale_plan`: a stale step runs its nested plates and
        chains in full), committed into a fork that is then dropped: the chain's trace and
        generator are untouched.  Members
        recorded so at the last draw are read again (from the trace, once no longer stale)."""
        if not (self._derived or self._generic_derived):
            return
        fork = trace.fork() if trace.stale_nodes else trace
        try:
            stale: dict = {}
            if fork is not trace:
                homes = {src.node.addr for _, src in self._derived}
                generic = self._generic_derived
                parts = [(kind, a, items) for kind, a, items in stale_parts(fork)
                         if a in homes or any(a[: len(local)] == local for local in generic)]
                for _, addr, items in parts:
                    stale.setdefault(addr, []).append(np.asarray(items, dtype=np.int64))
                if parts:  # (a rescoring draws nothing: any generator)
                    propose(fork, np.random.default_rng(0), plan=stale_plan(fork, parts)).commit()
            fresh = {}
            for name, src in self._derived:
                now = stale.get(src.node.addr, [])
                members = [*now, *([self._fresh[name]] if name in self._fresh else [])]
                if not members:
                    continue
                idx = np.unique(np.concatenate(members))
                node = (fork.root.plates if src.kind != "chain" else fork.root.chains)[
                    src.node.addr]
                self._series(name).change(d, idx, _Source(src.kind, node, src.key).part(idx))
                if now:
                    fresh[name] = np.unique(np.concatenate(now))
            self._fresh = fresh
            fresh_generic = set()
            for local, _, values in self._generic:
                if local not in self._generic_derived:
                    continue
                if any(a[: len(local)] == local for a in stale):
                    fresh_generic.add(local)
                elif local not in self._fresh_generic:
                    continue
                out: dict = {}
                collect_block(_ChainAsBlock(local, fork.root.chains[local]), (), out, True)
                for k, v in out.items():
                    if dotted(k) in values:
                        self._series(dotted(k)).set(d, v)
            self._fresh_generic = fresh_generic
        finally:
            if fork is not trace:
                trace.revert(fork)

    # -- handing over ---------------------------------------------------------------------------
    def take(self) -> dict:
        """The draws recorded since the last call (and forget them)."""
        out = {
            "meta": self.meta,
            "unrecorded": self.unrecorded,
            "series": self.series,
            "lp": self.lp,
            "n_latent": self.n_latent,
            "outputs": self.outputs,
            "stats": self.stats,
            "n": self.count,
        }
        self._new()
        return out

    def live_names(self) -> set:
        """The variables present at the last recorded draw."""
        return set(self._sources) | {n for _, _, values in self._generic for n in values}

    def __getstate__(self):
        raise TypeError("a Recorder is not pickled; the chain's draws are in its DrawStore")


_NOTHING = object()
SMALL_OUTPUT = 2**16  # bytes: a plate-reading output this small is copied at its draw


def _small(x, budget: list | None = None) -> bool:
    """Whether ``x`` (numbers, arrays, and containers of them) takes at most SMALL_OUTPUT
    bytes; a larger plate-reading output is not kept per draw (memory O(draws × N))."""
    budget = [SMALL_OUTPUT] if budget is None else budget
    if isinstance(x, np.ndarray):
        budget[0] -= x.nbytes
    elif isinstance(x, (list, tuple)):
        if len(x) > 4096:
            return False
        budget[0] -= 8 * len(x)
        return budget[0] >= 0 and all(_small(v, budget) for v in x)
    elif isinstance(x, dict):
        budget[0] -= 16 * len(x)
        return budget[0] >= 0 and all(_small(v, budget) for v in x.values())
    else:
        budget[0] -= 32
    return budget[0] >= 0


# column dtypes whose elements read as Python numbers (Column.get) and back without change
_EXACT = (np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_))
_F8 = _EXACT[0]
_FEW = 16  # markov steps written in one draw recorded as Python lists (Series.change_few)


def _one(src, parts):
    """``(element, value)`` when the logged parts of a source name one element (a plate
    element, a markov step) of a float64, int64 or bool column of scalars; else None."""
    if len(parts) != 1 or len(parts[0]) != 1:
        return None
    kind = src.kind
    if kind == "plate":
        col = src.node.sites[src.key].values
    elif kind == "chain":
        s = src.node.sites[src.key]
        if s.present is not None:
            return None
        col = s.values
    else:
        return None
    data = col.data
    dt = data.dtype
    if data.ndim != 1 or (dt is not _F8 and dt not in _EXACT):  # (other dtypes keep theirs as
        return None  # arrays)
    members = parts[0]
    i = members.item() if type(members) is np.ndarray else int(members[0])
    return i, col.get(i)


def _few(src, parts):
    """``(steps, values)`` as sorted lists of Python ints and numbers, when the logged parts
    of a source name a few markov steps (one list of at most ``_FEW``) of a float64, int64 or
    bool column of scalars; else None."""
    steps = parts[0] if len(parts) == 1 else None
    if type(steps) is not list or len(steps) > _FEW or src.kind != "chain":
        return None
    s = src.node.sites[src.key]
    if s.present is not None:
        return None
    col = s.values
    data = col.data
    dt = data.dtype
    if data.ndim != 1 or (dt is not _F8 and dt not in _EXACT):
        return None
    idx = sorted(set(steps))
    return idx, [col.get(t) for t in idx]


def _elements(src, parts) -> tuple:
    """(sorted distinct members, their values) of the logged member parts of a source."""
    if len(parts) == 1:
        idx = parts[0]
        if isinstance(idx, list):  # markov steps, in execution order
            idx = np.array(sorted(set(idx)) if len(idx) > 1 else idx, dtype=np.int64)
    else:
        idx = np.unique(np.concatenate([np.asarray(p, dtype=np.int64) for p in parts]))
    values = src.part(idx)  # (an index array takes a copy of the column's values already)
    return idx, values if type(idx) is np.ndarray else np.array(values)
