"""Memoized random functions: ``f = th.mem("w", lambda k: dist.Normal(0, 1))``.

``f(k)`` draws the choice at address ``("w", k)`` the first time it is read in a trace and returns
the same value afterwards.  Inside a plate ``f`` takes an array of keys (one per element) and
returns the array of values.  A :class:`MemTable` keeps the values, their log-densities, and its
*readers*: how many reads each key has (a key nobody reads any more leaves the trace, as in
Venture) and which plate elements and markov steps read it — a reader index with O(1) insertion
and removal — so that the local sections of a memoized choice (one cluster's weights and the
points assigned to it) are known without a scan.

A key's value goes through the same replay decision as every other choice
(:mod:`thrifty.core.replay`, one member).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from thrifty import _context
from thrifty.core import replay as decision
from thrifty.core.address import fmt
from thrifty.core.mem_call import call_fn
from thrifty.core.node import Node, Update
from thrifty.core.vocab import RESAMPLE, check_dist, readonly
from thrifty.distributions.base import Distribution
from thrifty.errors import ModelError
from thrifty.processes.collapsed import Collapsed, CollapsedView

KEPT, FRESH, SET = 0, 1, 2


class Mem:
    """A memoized random function (returned by :func:`thrifty.mem`)."""

    __slots__ = ("addr", "fn")

    def __init__(self, addr: tuple, fn):
        self.addr = addr
        self.fn = fn

    def __call__(self, key):
        if not (runs := _context.EXECUTIONS.runs):  # (the calling thread's executions)
            raise RuntimeError(f"mem {fmt(self.addr)} called outside a program run")
        return runs[-1].frame.mem_read(self, key)

    def __repr__(self) -> str:
        return f"Mem({fmt(self.addr)})"


class ReaderLog:
    """One entry of a table's log of plate-reader moves: ``elems`` of ``plate`` stopped reading
    ``old`` and started reading ``new`` (either ``None`` when the elements appeared or left;
    ``elems`` ``None`` when the plate left; ``plate`` ``None`` for a mark).  Entries are
    immutable and linked newest first, so a cloned table shares its history; a kernel that keeps
    per-key statistics of the readers (:mod:`thrifty.inference.subsampling.mem_proxy`) reads the
    entries newer than the one it saw last — O(moves), never a scan of the readers."""

    __slots__ = ("elems", "new", "old", "plate", "prev")

    def __init__(self, prev, plate=None, elems=None, old=None, new=None):
        self.prev, self.plate, self.elems, self.old, self.new = prev, plate, elems, old, new


class MemTable(Node):
    """Values, log-densities, reference counts and readers of one memoized function."""

    watched = False  # whether reader moves are logged (set by a kernel that needs them)
    log = None  # the newest ReaderLog entry
    lazy_clock = 0  # clock of the newest lazy commit that changed a value, leaving readers stale

    def __init__(self):
        self.values: dict = {}
        self.lp: dict = {}
        self.refs: dict = {}
        self.clock: dict = {}
        self.dist: dict = {}  # key → the distribution its value was last scored under
        self.discrete: bool = False
        self.plate_readers: dict = {}  # plate address → key → {element: None}
        self.step_readers: dict = {}  # chain address → key → {step: None}
        self._lp = 0.0
        self._readers_owned = True

    # -- the node interface -----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.values)

    @property
    def n_latent(self) -> int:
        return len(self.values)

    def total_lp(self) -> float:
        return self._lp

    def latent_lp(self) -> float:
        return self._lp

    def stored_dist(self, key):
        """The distribution the value of ``key`` was last scored under (None: none)."""
        return self.dist.get(key)

    def clone(self) -> MemTable:
        out = object.__new__(MemTable)
        out.__dict__.update(self.__dict__)
        for name in ("values", "lp", "refs", "clock", "dist"):
            setattr(out, name, dict(getattr(self, name)))
        out._readers_owned = self._readers_owned = False
        return out

    def _own_readers(self) -> None:
        if not self._readers_owned:
            self.plate_readers = {
                p: {k: dict(s) for k, s in by.items()} for p, by in self.plate_readers.items()
            }
            self.step_readers = {
                c: {k: dict(s) for k, s in by.items()} for c, by in self.step_readers.items()
            }
            self._readers_owned = True

    # -- reading ----------------------------------------------------------------------------------
    def keys(self) -> list:
        return list(self.values)

    def readers(self, key) -> dict:
        """``{plate address: element array}`` of the plate elements that read ``key`` (in the
        order they started reading; O(number of readers), no sort)."""
        out = {}
        for plate, by_key in self.plate_readers.items():
            elems = by_key.get(key)
            if elems:
                out[plate] = np.fromiter(elems, dtype=np.int64, count=len(elems))
        return out

    def step_reader_steps(self, key) -> dict:
        """``{chain address: steps}`` of the markov steps that read ``key``."""
        return {c: list(by.get(key, ())) for c, by in self.step_readers.items() if by.get(key)}

    def key_clocks(self, keys: np.ndarray) -> np.ndarray:
        """The clock of the last change of each key (one lookup per distinct key)."""
        if len(keys) == 0:
            return np.zeros(0, dtype=np.int64)
        clock = self.clock
        if len(keys) <= 64:  # a few elements (one-element runs, small batches): no sort
            return np.array([clock.get(k, 0) for k in keys.tolist()], dtype=np.int64)
        uniq, inv = np.unique(keys, return_inverse=True)
        c = np.array([clock.get(k, 0) for k in uniq.tolist()], dtype=np.int64)
        return c[inv]


class _Entry:
    __slots__ = ("changed", "dist", "lp", "old_lp", "stale", "status", "value")

    def __init__(self, value, lp, status, changed, old_lp=0.0):
        self.value = value
        self.lp = lp
        self.status = status
        self.changed = changed
        self.old_lp = old_lp
        self.dist = None
        self.stale = False  # the old value was out of support and counted stale


class MemJournal(Update):
    """What one run read from (and drew into) one mem table."""

    __slots__ = ("addr", "discrete", "entries", "plate_moves", "ref_delta", "stale",
                 "step_moves", "table")

    def __init__(self, run, addr):
        self.addr = addr
        self.table = run.trace.mems.get(addr)
        self.entries: dict = {}
        self.ref_delta: dict = defaultdict(int)
        self.plate_moves: list = []  # (plate address, elems, old keys or None, new keys)
        self.step_moves: list = []  # (chain address, t, old keys, new keys)
        self.stale: list = []
        self.discrete = False

    def resolve(self, run, mem, key) -> _Entry:
        entry = self.entries.get(key)
        if entry is not None:
            return entry
        maddr = self.addr + (key,)
        d = call_fn(run, mem, key)
        if getattr(d, "coupled", False) and not isinstance(d, Distribution):
            raise ModelError(
                f"th.mem {fmt(self.addr)} returns {d!r}, a collapsed family or exchangeable "
                "procedure: read it inside a plate with one key per element and observe it "
                '(th.observe("x", feats(z), x[i]))'
            )
        if not isinstance(d, Distribution):
            raise ModelError(
                f"th.mem {fmt(self.addr)}: its function must return a distribution (e.g. "
                f"lambda k: dist.Normal(0.0, 1.0)); for key {key!r} it returned "
                f"{type(d).__name__} {d!r}"
            )
        if d._error is not None:
            check_dist(d, maddr, run)
        self.discrete = d.is_discrete
        table = self.table
        has_old = table is not None and key in table.values
        targets = run.targets
        target = targets.get(maddr) if targets is not None else None
        if target is not None:
            run.n_seen += 1
        created = None
        if run.created is not None and not has_old:  # a new key, its draw made by another run
            created = run.created.get(maddr)
            if created is not None:
                target = created
        lanes = run.lanes  # (the run's one-member replay decision, named for this key)
        lanes.addr = maddr
        old_value = table.values[key] if has_old else None
        old_lp = table.lp[key] if has_old else 0.0
        value, lp, status = decision.replay(lanes, d, old_value, old_lp, target, run,
                                            table, key)
        if type(value) is np.ndarray:  # the engine's: read-only for the model (vocab.readonly)
            value = readonly(value.copy() if value is target else value)
        if created is not None:  # fresh, as if this run had drawn it
            run.n_fresh += 1
            run.lp_fresh += lp
        if created is not None or status >= decision.FRESH:
            entry = _Entry(value, lp, FRESH, True)
            entry.stale = status == decision.REDRAWN
            if entry.stale:
                run.note_stale(maddr)
            run.note_fresh(maddr)
        else:
            entry = _Entry(value, lp, SET if target is not None else KEPT,
                           target is not None, old_lp)
            run.lp_new += lp
            run.lp_old += old_lp
        entry.dist = d
        self.entries[key] = entry
        return entry

    def finish(self, run) -> None:
        """Keys whose last reader went away leave the trace (stale: strict runs refuse them)."""
        table = self.table
        if table is None:
            return
        for key, delta in self.ref_delta.items():
            if delta < 0 and table.refs.get(key, 0) + delta <= 0 and key in table.values:
                self.stale.append(key)
                entry = self.entries.get(key)
                maddr = self.addr + (key,)
                if entry is not None:  # read, then unread, in this run: undo its accounting
                    if entry.status == FRESH:
                        run.n_fresh -= 1
                        run.lp_fresh -= entry.lp
                        run.fresh_choices.remove((maddr, 1))
                        if entry.stale:  # its old value is counted stale already
                            continue
                    else:
                        run.lp_new -= entry.lp
                        run.lp_old -= entry.old_lp
                        if run.targets is not None and run.targets.get(maddr) is RESAMPLE:
                            run.q_fwd -= entry.lp  # a draw nobody reads: no proposal term
                            run.q_rev -= entry.old_lp  # (its old value is stale, 001 Eq. 4)
                run.n_stale += 1
                run.lp_stale += table.lp[key]
                run.note_stale(maddr)

    def apply(self, trace, clock) -> None:
        table = self.table
        if table is None:
            table = trace.mems[self.addr] = MemTable()
            table.owner = trace.tokens[0]
            if trace.changes is not None:
                trace.changes.nodes_changed = True
        else:
            t2 = trace.own(table)
            if t2 is not table:
                trace.mems[self.addr] = table = t2
        table.discrete = self.discrete or table.discrete
        written = []
        for key, e in self.entries.items():
            if e.changed or key not in table.values:
                table.values[key] = e.value
                table.clock[key] = clock
                written.append(key)
            table._lp += e.lp - table.lp.get(key, 0.0)
            table.lp[key] = e.lp
            table.dist[key] = e.dist
        for key, delta in self.ref_delta.items():
            table.refs[key] = table.refs.get(key, 0) + delta
        gone = [k for k in self.stale if k in table.values]
        gone += [k for k, r in table.refs.items() if r <= 0 and k in table.values and k not in gone]
        for key in gone:
            table._lp -= table.lp[key]
            for d in (table.values, table.lp, table.refs, table.clock, table.dist):
                d.pop(key, None)
        for key in [k for k, r in table.refs.items() if r <= 0]:
            table.refs.pop(key, None)
        if self.plate_moves or self.step_moves:
            table._own_readers()
        for plate, elems, old_keys, new_keys in self.plate_moves:
            _move_plate_readers(table, plate, elems, old_keys, new_keys)
            if table.watched:
                table.log = ReaderLog(table.log, plate, *_copies(elems, old_keys, new_keys))
        for chain, t, old_keys, new_keys in self.step_moves:
            readers = table.step_readers.setdefault(chain, {})
            for k in old_keys:
                s = readers.get(k)
                if s is not None:
                    s.pop(t, None)
                    if not s:
                        del readers[k]
            for k in new_keys:
                readers.setdefault(k, {})[t] = None
        if not table.values:
            del trace.mems[self.addr]
            if trace.changes is not None:
                trace.changes.nodes_changed = True
        elif trace.changes is not None and (written or gone):
            trace.changes.wrote(table, written + gone)
            if gone:
                trace.changes.nodes_changed = True


def _copies(*arrays):
    return [None if a is None else np.array(a) for a in arrays]


def watch(table: MemTable) -> ReaderLog:
    """Start logging ``table``'s reader moves (if not yet) and return a fresh mark: the
    entries newer than it are the moves from now on."""
    table.watched = True
    table.log = ReaderLog(table.log)
    return table.log


def _move_plate_readers(table, plate, elems, old_keys, new_keys) -> None:
    if elems is None:  # the plate is gone
        table.plate_readers.pop(plate, None)
        return
    readers = table.plate_readers.setdefault(plate, {})
    if old_keys is not None and new_keys is not None:
        moved = old_keys != new_keys
        elems, old_keys, new_keys = elems[moved], old_keys[moved], new_keys[moved]
    if old_keys is not None:
        for e, k in zip(elems.tolist(), old_keys.tolist()):
            s = readers.get(k)
            if s is not None:
                s.pop(e, None)
                if not s:
                    del readers[k]
    if new_keys is not None:
        for e, k in zip(elems.tolist(), new_keys.tolist()):
            s = readers.get(k)
            if s is None:
                readers[k] = {e: None}
            else:
                s[e] = None


def journal(run, addr) -> MemJournal:
    j = run.mem_journals.get(addr)
    if j is None:
        j = run.mem_journals[addr] = MemJournal(run, addr)
    return j


class ReadCounts:
    """How nodes leaving the trace give back their mem reads (``Node.drop_reads``)."""

    __slots__ = ("run",)

    def __init__(self, run):
        self.run = run

    def read(self, maddr, key, delta: int) -> None:
        journal(self.run, maddr).ref_delta[key] += delta

    def read_many(self, maddr, keys, sign: int) -> None:
        _count(journal(self.run, maddr), keys, sign)

    def forget_plate(self, maddr, plate_addr) -> None:
        journal(self.run, maddr).plate_moves.append((plate_addr, None, None, None))

    def unread_step(self, maddr, chain, t, key) -> None:
        journal(self.run, maddr).step_moves.append((chain, t, [key], []))


# -- reads ----------------------------------------------------------------------------------------
def read_scalar(frame, mem, key):
    """A read of one key from a block (the model body or a markov step)."""
    try:
        hash(key)
    except TypeError:
        raise TypeError(f"mem {fmt(mem.addr)}: key {key!r} is not hashable") from None
    if isinstance(key, np.generic):
        key = key.item()
    run = frame.run
    j = journal(run, mem.addr)
    entry = j.resolve(run, mem, key)
    new = frame.new
    if type(new.mem_reads) is tuple:  # (a block without reads shares the empty tuple)
        new.mem_reads = []
    new.mem_reads.append((mem.addr, key))
    if entry.changed:
        frame.dirty = True
    return entry.value


FEW_KEYS = 16  # up to this many keys, distinct keys are found in Python (no sort)


def read_batch(frame, mem, keys):
    """A read of one key per member, from a batch (plate body)."""
    acc, run = frame.acc, frame.run
    if type(keys) is slice:  # the plate's index, slice(0, size): its positions (not one key)
        keys = np.arange(keys.start or 0, keys.stop, keys.step or 1)
    keys = np.asarray(keys)
    n = acc.n
    if keys.ndim == 0:
        keys = np.broadcast_to(keys, (n,))
    if keys.shape[0] != n:
        raise ValueError(f"mem {fmt(mem.addr)} read in {acc.where()} with keys of shape "
                         f"{keys.shape} for {n} executed element(s)")
    if n == 1:  # one element (Gibbs, MH on one element): no sort
        uniq, inv = keys.reshape(1), np.zeros(1, dtype=np.intp)
    elif n <= FEW_KEYS and keys.ndim == 1 and keys.dtype.kind in "iu":
        uniq, inv = _few_unique(keys)
    else:
        uniq, inv = np.unique(keys, return_inverse=True)
    collapsed = run.trace.collapsed_mems
    if mem.addr in collapsed or (
        mem.addr not in run.mem_journals and mem.addr not in run.trace.mems
        and _collapsed(frame.run, mem, uniq)
    ):  # one collapsed family per key: a coupled observation (thrifty.core.coupled)
        collapsed.setdefault(mem.addr, None)
        return CollapsedView(mem.addr, mem.fn, keys)
    j = journal(run, mem.addr)
    vals = [j.resolve(run, mem, k.item() if isinstance(k, np.generic) else k).value for k in uniq]
    callno = acc.mem_calls
    acc.mem_calls += 1
    acc.mem_keys[(mem.addr, callno)] = keys
    if not vals:  # no element executed: an empty array of the values' type
        table = j.table
        sample = next(iter(table.values.values()), 0.0) if table is not None else 0.0
        return np.zeros((0,) + np.shape(sample), dtype=np.asarray(sample).dtype)
    return np.asarray(vals)[inv.reshape(keys.shape)]


def _collapsed(run, mem, uniq) -> bool:
    """Whether ``mem``'s function returns collapsed families (asked of its first key; with no
    key executed, of key 0 — a function that cannot take it is not a collapsed one)."""
    if len(uniq):
        k = uniq[0]
        return isinstance(call_fn(run, mem, k.item() if isinstance(k, np.generic) else k),
                          Collapsed)
    try:
        return isinstance(call_fn(run, mem, 0), Collapsed)
    except ModelError:
        raise
    except Exception:
        return False


def account_block_reads(run, old_block, new_block, step_of=None) -> None:
    """Reference-count changes when a block is re-executed (old reads out, new reads in)."""
    per_table: dict = defaultdict(lambda: ([], []))
    for addr, key in old_block.mem_reads:
        per_table[addr][0].append(key)
    for addr, key in new_block.mem_reads:
        per_table[addr][1].append(key)
    for addr, (old_keys, new_keys) in per_table.items():
        j = journal(run, addr)
        for k in old_keys:
            j.ref_delta[k] -= 1
        for k in new_keys:
            j.ref_delta[k] += 1
        if step_of is not None:
            j.step_moves.append((step_of[0], step_of[1], old_keys, new_keys))


def account_plate_reads(run, frame, old_node) -> None:
    """Reference-count and reader changes of a plate execution.

    ``old_node`` is the node the frame updates (``None`` for a new node; a replaced node of
    another size is accounted when it is dropped).  The node keeps one sequence of reads (a
    key column per call) for all its elements, which only a run of every element may change.
    """
    elems = frame.member_indices()
    calls = set(frame.mem_keys) | (set(old_node.mem_keys) if old_node is not None else set())
    if old_node is not None and not frame.full and len(elems) and set(
            frame.mem_keys) != set(old_node.mem_keys):
        raise ModelError(
            f"plate {fmt(frame.addr)}: a run of {len(elems)} of its {frame.N} elements read "
            "memoized values in another sequence than the other elements (a call of mem "
            f"{', '.join(sorted({fmt(c[0]) for c in calls}))} made or left out): the calls "
            "must not depend on which elements run (a test of the batch, as z.any()), and a "
            "choice that decides them needs a kernel whose runs execute every element")
    for call in calls:
        j = journal(run, call[0])
        new_keys = frame.mem_keys.get(call)
        old_keys = None
        if old_node is not None and call in old_node.mem_keys:
            old_keys = old_node.mem_keys[call].take(elems)
        _count(j, old_keys, -1)
        _count(j, new_keys, +1)
        if new_keys is not None:
            j.plate_moves.append((frame.addr, elems, old_keys, np.asarray(new_keys)))
        elif old_keys is not None:
            j.plate_moves.append((frame.addr, elems, old_keys, None))


def write_plate_keys(node, frame, idx) -> None:
    """Commit the keys the elements ``idx`` read into the plate ``node`` (a column per call);
    after a run of every element, the calls it did not make leave (their reads were given
    back by :func:`account_plate_reads`)."""
    from thrifty.core.column import Column

    for call in [c for c in node.mem_keys if frame.full and c not in frame.mem_keys]:
        del node.mem_keys[call]
    for call, keys in frame.mem_keys.items():
        col = node.mem_keys.get(call)
        if col is None:
            col = node.mem_keys[call] = Column(np.empty(node.size, dtype=np.asarray(keys).dtype))
        col.put(idx, keys)


def _few_unique(keys: np.ndarray) -> tuple:
    """``np.unique(keys, return_inverse=True)`` for a few integer keys, in Python (a sort's
    fixed cost is most of a small batch's read)."""
    at: dict = {}
    for k in sorted(set(keys.tolist())):
        at[k] = len(at)
    inv = np.fromiter((at[k] for k in keys.tolist()), dtype=np.intp, count=len(keys))
    return np.fromiter(at, dtype=keys.dtype, count=len(at)), inv


def _count(j, keys, sign) -> None:
    if keys is None or len(keys) == 0:
        return
    if len(keys) == 1:
        k = keys[0]
        j.ref_delta[k.item() if isinstance(k, np.generic) else k] += sign
        return
    if len(keys) <= FEW_KEYS:  # (no sort: a Python loop over a few keys)
        keys = np.asarray(keys)
        if keys.ndim == 1 and keys.dtype.kind in "iu":
            for k in keys.tolist():
                j.ref_delta[k] += sign
            return
    uniq, counts = np.unique(np.asarray(keys), return_counts=True)
    for k, c in zip(uniq.tolist(), counts.tolist()):
        j.ref_delta[k] += sign * c
