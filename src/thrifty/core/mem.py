"""Memoized random functions: ``f = th.mem("w", lambda k: dist.Normal(0, 1))``.

``f(k)`` draws the choice at address ``("w", k)`` the first time it is read in a trace and returns
the same value afterwards.  Inside a plate ``f`` takes an array of keys (one per element) and
returns the array of values.  A :class:`MemTable` keeps the values, their log-densities, and its
*readers*: how many reads each key has (a key nobody reads any more leaves the trace, as in
Venture) and which plate elements and markov steps read it, so that the local sections of a
memoized choice — one cluster's weights and the points assigned to it — are known without a scan.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.run import NEG_INF, RESAMPLE, StructureChange, check_dist, nan_error, total

KEPT, FRESH, SET = 0, 1, 2


class Mem:
    """A memoized random function (returned by :func:`thrifty.mem`)."""

    __slots__ = ("addr", "fn")

    def __init__(self, addr: tuple, fn):
        self.addr = addr
        self.fn = fn

    def __call__(self, key):
        from thrifty._context import RUNS

        if not RUNS:
            raise RuntimeError(f"mem {fmt(self.addr)} called outside a program run")
        return RUNS[-1].frame.mem_read(self, key)

    def __repr__(self) -> str:
        return f"Mem({fmt(self.addr)})"


class MemTable:
    """Values, log-densities, reference counts and readers of one memoized function."""

    def __init__(self):
        self.values: dict = {}
        self.lp: dict = {}
        self.refs: dict = {}
        self.clock: dict = {}
        self.dist: dict = {}  # key → the distribution its value was last scored under
        self.discrete: bool = False
        self.plate_readers: dict = {}  # plate address → key → set of elements
        self.step_readers: dict = {}  # chain address → key → set of steps

    def __len__(self) -> int:
        return len(self.values)

    def total_lp(self) -> float:
        return float(sum(self.lp.values()))

    def keys(self) -> list:
        return list(self.values)

    def readers(self, key) -> dict:
        """``{plate address: sorted element array}`` of the plate elements that read ``key``."""
        out = {}
        for plate, by_key in self.plate_readers.items():
            elems = by_key.get(key)
            if elems:
                out[plate] = np.fromiter(sorted(elems), dtype=np.int64, count=len(elems))
        return out


class _Entry:
    __slots__ = ("changed", "dist", "lp", "old_lp", "status", "value")

    def __init__(self, value, lp, status, changed, old_lp=0.0):
        self.value = value
        self.lp = lp
        self.status = status
        self.changed = changed
        self.old_lp = old_lp
        self.dist = None


class MemJournal:
    """What one run read from (and drew into) one mem table."""

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
        d = mem.fn(key)
        if d._error is not None:
            check_dist(d, maddr)
        self.discrete = d.is_discrete
        table = self.table
        has_old = table is not None and key in table.values
        targets = run.targets
        target = targets.get(maddr, targets) if targets else targets
        if target is not targets:
            run.n_seen += 1
            if target is RESAMPLE:
                value = d.sample(run.rng)
                lp = total(d.log_prob(value))
                run.q_fwd += lp
                run.q_rev += total(d.log_prob(table.values[key]))
            else:
                value = target
                lp = total(d.log_prob(value))
            entry = _Entry(value, lp, SET, True, table.lp[key] if has_old else 0.0)
            run.lp_new += lp
            run.lp_old += entry.old_lp
        elif has_old:
            value = table.values[key]
            lp = total(d.log_prob(value))
            old_lp = table.lp[key]
            if lp == NEG_INF and not run.strict:
                run.n_stale += 1
                run.lp_stale += old_lp
                value = d.sample(run.rng)
                lp = total(d.log_prob(value))
                run.n_fresh += 1
                run.lp_fresh += lp
                entry = _Entry(value, lp, FRESH, True)
            else:
                entry = _Entry(value, lp, KEPT, False, old_lp)
                run.lp_new += lp
                run.lp_old += old_lp
        else:
            if run.strict:
                raise StructureChange(maddr)
            value = d.sample(run.rng)
            lp = total(d.log_prob(value))
            run.n_fresh += 1
            run.lp_fresh += lp
            entry = _Entry(value, lp, FRESH, True)
        if lp != lp:
            raise nan_error(maddr, d, value)
        entry.dist = d
        self.entries[key] = entry
        return entry

    def finish(self, run) -> None:
        """Keys whose last reader went away leave the trace (stale choices)."""
        table = self.table
        if table is None or run.strict:  # enumeration runs: hypothetical configurations
            return
        for key, delta in self.ref_delta.items():
            if delta < 0 and table.refs.get(key, 0) + delta <= 0 and key in table.values:
                self.stale.append(key)
                entry = self.entries.get(key)
                if entry is not None:  # read, then unread, in this run: undo its accounting
                    if entry.status == FRESH:
                        run.n_fresh -= 1
                        run.lp_fresh -= entry.lp
                    else:
                        run.lp_new -= entry.lp
                        run.lp_old -= entry.old_lp
                run.n_stale += 1
                run.lp_stale += table.lp[key]

    def apply(self, trace, clock) -> None:
        table = self.table
        if table is None:
            table = trace.mems[self.addr] = MemTable()
        table.discrete = self.discrete or table.discrete
        for key, e in self.entries.items():
            if e.changed or key not in table.values:
                table.values[key] = e.value
                table.clock[key] = clock
            table.lp[key] = e.lp
            table.dist[key] = e.dist
        for key, delta in self.ref_delta.items():
            table.refs[key] = table.refs.get(key, 0) + delta
        for key in self.stale:
            for d in (table.values, table.lp, table.refs, table.clock, table.dist):
                d.pop(key, None)
        for key in [k for k, r in table.refs.items() if r <= 0]:
            for d in (table.values, table.lp, table.refs, table.clock, table.dist):
                d.pop(key, None)
        for plate, elems, old_keys, new_keys in self.plate_moves:
            if elems is None:  # the plate is gone
                table.plate_readers.pop(plate, None)
                continue
            readers = table.plate_readers.setdefault(plate, {})
            if old_keys is not None and new_keys is not None:
                moved = old_keys != new_keys
                elems, old_keys, new_keys = elems[moved], old_keys[moved], new_keys[moved]
            if old_keys is not None:
                for e, k in zip(elems.tolist(), old_keys.tolist()):
                    s = readers.get(k)
                    if s is not None:
                        s.discard(e)
                        if not s:
                            del readers[k]
            if new_keys is not None:
                for e, k in zip(elems.tolist(), new_keys.tolist()):
                    readers.setdefault(k, set()).add(e)
        for chain, t, old_keys, new_keys in self.step_moves:
            readers = table.step_readers.setdefault(chain, {})
            for k in old_keys:
                s = readers.get(k)
                if s is not None:
                    s.discard(t)
                    if not s:
                        del readers[k]
            for k in new_keys:
                readers.setdefault(k, set()).add(t)
        if not table.values:
            del trace.mems[self.addr]


def journal(run, addr) -> MemJournal:
    j = run.mem_journals.get(addr)
    if j is None:
        j = run.mem_journals[addr] = MemJournal(run, addr)
    return j


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
    frame.new.mem_reads.append((mem.addr, key))
    if entry.changed:
        frame.dirty = True
    return entry.value


def read_vector(frame, mem, keys):
    """A read of one key per executed element, from a plate body."""
    acc, run = frame.acc, frame.run
    keys = np.asarray(keys)
    n = acc.n
    if keys.ndim == 0:
        keys = np.broadcast_to(keys, (n,))
    if keys.shape[0] != n:
        raise ValueError(
            f"mem {fmt(mem.addr)} read in plate {fmt(acc.addr)} with keys of shape {keys.shape} "
            f"for {n} executed element(s)"
        )
    j = journal(run, mem.addr)
    uniq, inv = np.unique(keys, return_inverse=True)
    vals = [j.resolve(run, mem, k.item() if isinstance(k, np.generic) else k).value for k in uniq]
    callno = acc.mem_calls
    acc.mem_calls += 1
    acc.mem_keys[(mem.addr, callno)] = keys
    if not vals:  # no element executed: an empty array of the values' type
        table = j.table
        sample = next(iter(table.values.values()), 0.0) if table is not None else 0.0
        return np.zeros((0,) + np.shape(sample), dtype=np.asarray(sample).dtype)
    return np.asarray(vals)[inv.reshape(keys.shape)]


def account_block_reads(run, old_block, new_block, chain_addr=None, t=None) -> None:
    """Reference-count changes when a block is re-executed (old reads out, new reads in)."""
    if not old_block.mem_reads and not new_block.mem_reads:
        return
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
        if chain_addr is not None:
            j.step_moves.append((chain_addr, t, old_keys, new_keys))


def account_plate_reads(run, frame, old_node) -> None:
    """Reference-count and reader changes of a plate execution.

    ``old_node`` is the node the frame updates (``None`` for a new node; a replaced node of
    another size is accounted by :func:`account_dropped`).
    """
    idx = frame.idx
    elems = np.arange(frame.N)[idx] if isinstance(idx, slice) else np.asarray(idx)
    calls = set(frame.mem_keys) | (set(old_node.mem_keys) if old_node is not None else set())
    for call in calls:
        j = journal(run, call[0])
        new_keys = frame.mem_keys.get(call)
        old_keys = None
        if old_node is not None and call in old_node.mem_keys:
            old_keys = old_node.mem_keys[call][elems]
        _count(j, old_keys, -1)
        _count(j, new_keys, +1)
        if new_keys is not None:
            j.plate_moves.append((frame.addr, elems, old_keys, np.asarray(new_keys)))
        elif old_keys is not None:
            j.plate_moves.append((frame.addr, elems, old_keys, None))


def account_dropped(run, node, addr) -> None:
    """A node of the old trace is gone: its reads no longer count."""
    from thrifty.core.plate import PlateNode

    if isinstance(node, PlateNode):
        for call, keys in node.mem_keys.items():
            j = journal(run, call[0])
            _count(j, keys, -1)
            j.plate_moves.append((addr, None, None, None))
        return
    blocks = [node.block] if hasattr(node, "block") else list(getattr(node, "steps", []))
    for i, block in enumerate(blocks):
        _drop_block_reads(run, block, addr + (i,) if not hasattr(node, "block") else addr)


def _drop_block_reads(run, block, prefix) -> None:
    for maddr, key in block.mem_reads:
        journal(run, maddr).ref_delta[key] -= 1
    for k, p in block.plates.items():
        account_dropped(run, p, prefix + k)
    for k, c in block.chains.items():
        account_dropped(run, c, prefix + k)


def _count(j, keys, sign) -> None:
    if keys is None or len(keys) == 0:
        return
    uniq, counts = np.unique(np.asarray(keys), return_counts=True)
    for k, c in zip(uniq.tolist(), counts.tolist()):
        j.ref_delta[k] += sign * c
