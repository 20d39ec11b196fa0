"""Plates: conditionally independent elements, stored as per-element arrays.

``with th.plate("data", N) as i:`` runs its body once, vectorized over the element indices ``i``
chosen by the engine: every element (then ``i`` is ``slice(0, N)``, so ``X[i]`` is a view and
costs nothing), a minibatch, or one element (then ``i`` is a sorted integer array).  A site in
the body has one value per executed element (its distribution's batch shape is ``()`` or starts
with ``len(i)``).

A :class:`PlateNode` keeps, for all N elements, the values of each site, the log-density of each
element (``elem_lp``), and the clock at which it was computed (``stamp``).  When something that
precedes the plate changes, ``valid_from`` advances: elements stamped earlier are *stale* (paper
000 §3.5) and are rescored when next read, never by a sweep after each step.  Executing one
element costs O(1) whatever N is.

Values produced inside a plate are local to it: code after the ``with`` block must not depend on
them (the engine may have run only some elements).  Markov chains may run inside a plate (one
chain per element, vectorized over the elements).
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import as_name, fmt
from thrifty.core.run import (
    NEG_INF,
    RESAMPLE,
    StructureChange,
    check_dist,
    outside_support,
)
from thrifty.core.trace import DETERMINISTIC, LATENT
from thrifty.errors import ModelError, NumericalError

_EMPTY = np.zeros(0, dtype=np.int64)


class PlateSite:
    """Values (N, ...) of one site over a plate's elements, and per-element log-densities."""

    __slots__ = ("discrete", "dist", "kind", "lp", "values")

    def __init__(self, values, lp, kind, discrete=False, dist=None):
        self.values = values
        self.lp = lp
        self.kind = kind
        self.discrete = discrete
        self.dist = dist  # the distribution of the last execution (for its support)


class PlateNode:
    """The stored state of one plate (see the module docstring)."""

    def __init__(self, size: int):
        self.size = size
        self.sites: dict[tuple, PlateSite] = {}
        self.chains: dict[tuple, list[dict]] = {}  # markov chains inside: per step, sites
        self.elem_lp = np.zeros(size)
        self.stamp = np.zeros(size, dtype=np.int64)  # clock of each element's last execution
        self.full_clock = 0  # clock of the last execution of every element
        self.valid_from = 0
        self.lp_sum = 0.0
        self.n_latent_elem = 0
        self.mem_keys: dict[tuple, np.ndarray] = {}  # (mem address, call number) → keys
        self.maybe_stale = False

    @property
    def n_latent(self) -> int:
        return self.size * self.n_latent_elem

    def total_lp(self) -> float:
        return self.lp_sum

    def latent_lp(self) -> float:
        out = sum(float(s.lp.sum()) for s in self.sites.values() if s.kind == LATENT)
        for steps in self.chains.values():
            out += sum(float(s.lp.sum()) for st in steps for s in st.values() if s.kind == LATENT)
        return out

    def stale_elements(self, idx=None, mems=None) -> np.ndarray:
        """Indices (among ``idx``, default all) whose log-density is out of date: executed
        before something that precedes the plate changed (``valid_from``), or before a mem
        key they read changed (the key's clock in ``mems``)."""
        if not self.maybe_stale:
            return _EMPTY
        if isinstance(idx, slice):
            idx = None
        stamp = np.maximum(self.stamp if idx is None else self.stamp[idx], self.full_clock)
        bad = stamp < self.valid_from
        if mems:
            for (maddr, _), keys in self.mem_keys.items():
                table = mems.get(maddr)
                if table is not None:
                    bad |= stamp < key_clocks(table, keys if idx is None else keys[idx])
        where = np.flatnonzero(bad)
        return where if idx is None else np.asarray(idx)[where]

    def has_stale(self, mems=None) -> bool:
        if self.maybe_stale and not len(self.stale_elements(None, mems)):
            self.maybe_stale = False
        return self.maybe_stale

    def latent_names(self) -> list[tuple]:
        """Addresses, relative to an element, of its latent choices (chain steps included)."""
        names = [k for k, s in self.sites.items() if s.kind == LATENT]
        for local, steps in self.chains.items():
            for t, st in enumerate(steps):
                names += [local + (t,) + k for k, s in st.items() if s.kind == LATENT]
        return names

    def site(self, rel: tuple) -> PlateSite | None:
        """The stored site at address ``rel`` relative to an element."""
        s = self.sites.get(rel)
        if s is not None:
            return s
        for local, steps in self.chains.items():
            k = len(local)
            if (
                rel[:k] == local
                and len(rel) > k
                and isinstance(rel[k], int)
                and rel[k] < len(steps)
            ):
                return steps[rel[k]].get(rel[k + 1 :])
        return None


def key_clocks(table, keys: np.ndarray) -> np.ndarray:
    """The clock of the last change of each key (one lookup per distinct key)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inv = np.unique(keys, return_inverse=True)
    clock = table.clock
    c = np.array([clock.get(k, 0) for k in uniq.tolist()], dtype=np.int64)
    return c[inv]


class PlateContext:
    """The context manager returned by ``th.plate``; see :func:`thrifty.plate`."""

    __slots__ = ("frame", "local", "parent", "size")

    def __init__(self, parent, local, size):
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
            raise ModelError(
                f"plate {fmt(parent.prefix + local)}: size must be an int, got {size!r}"
            )
        if size < 0:
            raise ModelError(f"plate {fmt(parent.prefix + local)}: size must be >= 0, got {size}")
        self.parent = parent
        self.local = local
        self.size = int(size)
        self.frame = None

    def __enter__(self):
        parent = self.parent
        run = parent.run
        addr = parent.prefix + self.local
        old = parent.old.plates.get(self.local)
        N = self.size
        if old is None or old.size != N:
            idx, fresh_node = None, True
        else:
            fresh_node = False
            planned = run.plan.plates.get(addr, _EMPTY)
            if parent.dirty and not run.plan.lazy:
                idx = None
            else:
                idx = planned if len(planned) < N else None
        frame = PlateFrame(run, parent, addr, self.local, old, idx, N, fresh_node)
        run.plate_frames[addr] = frame
        if parent.dirty and run.plan.lazy and not fresh_node:
            run.sections.append(("plate", addr, N))
        self.frame = frame
        run.frame = frame
        return frame.user_index

    def __exit__(self, exc_type, exc, tb):
        self.parent.run.frame = self.parent
        if exc_type is None:
            self.frame.finalize()
        return False


def _draw(d, n, code, rng):
    """Draw one value per executed element (``code`` from :func:`_plate_shape`)."""
    if code == 0:
        return d.sample(rng, (n,))
    if code == 1:
        return d.sample(rng)
    v = d.sample(rng, (n,))  # batch shape (1, ...) broadcast over the elements
    return v.reshape((n,) + v.shape[2:])


class VecFrame:
    """Executes a plate body (or a markov step inside a plate) vectorized over elements."""

    def __init__(self, run, acc, rel, old_store):
        self.run = run
        self.acc = acc if acc is not None else self
        self.rel = rel  # address of this body relative to an element
        self.scope = ()
        self.old_store = old_store
        self.new_store: dict[tuple, PlateSite] = {}
        self.changed: set = set()

    # -- helpers --------------------------------------------------------------------------------
    def _local(self, name) -> tuple:
        local = self.scope + as_name(name) if self.scope else as_name(name)
        if local in self.new_store or (self is self.acc and local in self.new_chains):
            raise ModelError(
                f"address {fmt(self.acc.elem_addr(0, self.rel + local))} is used twice"
            )
        return local

    def _shape_code(self, d, rel, what) -> int:
        n = self.acc.n
        bs = d.batch_shape
        if not bs:
            return 0
        if bs[0] == n:
            return 1
        if bs[0] == 1:
            return 2
        acc = self.acc
        raise ModelError(
            f"shape mismatch in plate {fmt(acc.addr)} at {what} {fmt(acc.generic(rel))}: "
            f"{type(d).__name__} has batch shape {tuple(bs)} but the plate is executing {n} "
            f"element(s); parameters must be scalars or have a leading axis of length {n} "
            "(index your data with the plate's index)"
        )

    def _elem_lp(self, lp, rel, what) -> np.ndarray:
        n = self.acc.n
        lp = np.asarray(lp, dtype=float)
        if lp.ndim == 0:
            return np.full(n, float(lp))
        if lp.shape[0] != n:
            acc = self.acc
            raise ModelError(
                f"shape mismatch in plate {fmt(acc.addr)} at {what} {fmt(acc.generic(rel))}: "
                f"log-density of shape {lp.shape} for {n} executed element(s)"
            )
        if lp.ndim > 1:
            lp = lp.reshape(n, -1).sum(axis=1)
        return lp

    def _check_finite(self, lp, rel, d, value, observed):
        """Return ``lp.sum()``; NaN → error naming the element; an impossible observation
        outside the family's domain → error naming the element."""
        s = float(lp.sum())
        if s == s and s > NEG_INF:
            return s
        acc = self.acc
        bad = np.isnan(lp)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise NumericalError(
                f"log-density is NaN at address {fmt(acc.elem_addr(j, rel))}: {d!r}"
            )
        if observed:
            j = int(np.flatnonzero(np.isneginf(lp))[0])
            v = np.asarray(value)
            vj = v if v.ndim == 0 else v[j]
            if not d.in_domain(vj):
                raise outside_support(acc.elem_addr(j, rel), d, vj)
            self.run.note_impossible(acc.elem_addr(j, rel), d, vj)
        return s

    # -- primitives -----------------------------------------------------------------------------
    def sample(self, name, d):
        local = self._local(name)
        rel = self.rel + local
        acc, run = self.acc, self.run
        if d._error is not None:
            check_dist(d, acc.generic(rel))
        n = acc.n
        code = self._shape_code(d, rel, "sample")
        old = self.old_store.get(local) if self.old_store is not None else None
        if old is not None and old.kind != LATENT:
            old = None
        changed = False
        if old is None:
            if run.strict:
                raise StructureChange(acc.generic(rel))
            acc.require_full("a new choice", rel)
            value = np.asarray(_draw(d, n, code, run.rng))
            lp = self._elem_lp(d.log_prob(value), rel, "sample")
            acc.n_fresh += n
            acc.fresh_lp += float(lp.sum())
            changed = True
        else:
            value = old.values[acc.idx]
            tgt = run.vec.get((acc.addr, rel)) if run.vec else None
            pos = None
            if tgt is not None:
                run.vec_seen.add((acc.addr, rel))
                pos = acc.positions(tgt.elems)
                value = np.array(value)
                if tgt.values is RESAMPLE:
                    lp_old = self._elem_lp(d.log_prob(value), rel, "sample")
                    value[pos] = np.asarray(_draw(d, n, code, run.rng))[pos]
                    lp = self._elem_lp(d.log_prob(value), rel, "sample")
                    run.q_fwd += float(lp[pos].sum())
                    run.q_rev += float(lp_old[pos].sum())
                    if acc.q_elem is None:
                        acc.q_elem = np.zeros(acc.n)
                    acc.q_elem[pos] += lp_old[pos] - lp[pos]
                else:
                    value[pos] = tgt.values
                    lp = self._elem_lp(d.log_prob(value), rel, "sample")
                    bad = pos[~(lp[pos] > NEG_INF)]
                    if len(bad):  # proposals outside the support: probability zero; the rest
                        value[bad] = old.values[acc.idx][bad]  # of the body sees valid values
                        lp[bad] = NEG_INF
                changed = True
            else:
                lp = self._elem_lp(d.log_prob(value), rel, "sample")
            if not run.strict:
                bad = np.isneginf(lp)
                if pos is not None:
                    bad[pos] = (
                        False  # a proposed value outside the support is rejected, not redrawn
                    )
                if bad.any():  # replayed values outside the support: stale, redrawn fresh
                    value = np.array(value)
                    fresh = np.asarray(_draw(d, n, code, run.rng))
                    value[bad] = fresh[bad]
                    lp = lp.copy()
                    lp[bad] = self._elem_lp(d.log_prob(value), rel, "sample")[bad]
                    k = int(bad.sum())
                    acc.n_stale += k
                    acc.stale_lp += float(old.lp[acc.idx][bad].sum())
                    acc.n_fresh += k
                    acc.fresh_lp += float(lp[bad].sum())
                    changed = True
        acc.add(lp, self._check_finite(lp, rel, d, value, observed=False), owned=False)
        self.new_store[local] = PlateSite(value, lp, LATENT, d.is_discrete, d)
        if changed:
            self.changed.add(local)
        return value

    def observe(self, name, d, value):
        local = self._local(name)
        rel = self.rel + local
        acc, run = self.acc, self.run
        if d._error is not None:
            check_dist(d, acc.generic(rel))
        code = self._shape_code(d, rel, "observation")
        if run.new_obs is not None:
            value = np.asarray(_draw(d, acc.n, code, run.rng))
            run.new_obs[(acc.addr, rel)] = value
        elif run.obs_values is not None:
            stored = run.obs_values.get((acc.addr, rel))
            if stored is not None:
                value = stored[acc.idx]
        shape = np.shape(value)
        if shape and shape[0] != acc.n and not (d.batch_shape and len(shape) <= len(d.event_shape)):
            raise ModelError(
                f"shape mismatch in plate {fmt(acc.addr)} at observation {fmt(acc.generic(rel))}: "
                f"observed value of shape {shape} for {acc.n} executed element(s); index the data "
                "with the plate's index"
            )
        try:
            lp = d.log_prob(value)
        except ValueError as e:
            raise ModelError(
                f"shape mismatch in plate {fmt(acc.addr)} at observation "
                f"{fmt(acc.generic(rel))}: {e}"
            ) from None
        lp = self._elem_lp(lp, rel, "observation")
        acc.add(lp, self._check_finite(lp, rel, d, value, observed=True), owned=True)
        if run.captured is not None:
            elems = np.arange(acc.N)[acc.idx] if acc.full else acc.idx
            run.captured.append((acc.addr + ("*",) + rel, d, value, elems))
        return value

    def factor(self, name, log_weight):
        local = self._local(name)
        rel = self.rel + local
        lp = self._elem_lp(log_weight, rel, "factor")
        s = float(lp.sum())
        if s != s:
            raise NumericalError(f"factor {fmt(self.acc.generic(rel))} is NaN")
        self.acc.add(lp, s, owned=False)
        self.new_store[local] = PlateSite(None, lp, 2)

    def deterministic(self, name, value):
        local = self._local(name)
        v = np.asarray(value)
        n = self.acc.n
        if v.ndim == 0 or v.shape[0] != n:
            v = np.broadcast_to(v, (n,) + v.shape).copy()
        self.new_store[local] = PlateSite(v, None, DETERMINISTIC)
        self.changed.add(local)
        return value

    def mem_read(self, mem, keys):
        from thrifty.core.mem import read_vector

        return read_vector(self, mem, keys)

    def plate(self, name, size):
        raise ModelError(
            f"plate {name!r} inside plate {fmt(self.acc.addr)}: nested plates are not supported; "
            "give the inner plate's sites a trailing axis instead"
        )

    def markov(self, name, step, length, init, args):
        if self is not self.acc:
            raise ModelError("a markov chain cannot be nested inside a markov step")
        return self.acc.run_chain(name, step, length, init, args)


class PlateFrame(VecFrame):
    """The frame of a plate body: executes element indices ``idx`` and journals the result."""

    def __init__(self, run, parent, addr, local, old, idx, N, fresh_node):
        super().__init__(run, None, (), None if fresh_node else old.sites)
        self.parent = parent
        self.dirty = parent.dirty  # did something that precedes the plate change?
        self.addr = addr
        self.local = local
        self.old = old
        self.fresh_node = fresh_node
        self.N = N
        self.full = idx is None
        if idx is None:
            self.idx = slice(0, N)
            self.n = N
        else:
            self.idx = idx
            self.n = len(idx)
            run.full = False
        self.user_index = self.idx
        self.elem_lp = None  # per-element log-density of this execution (see add)
        self.lp_total = 0.0
        self.q_elem = None  # per element: q_rev − q_fwd of resampled targets (when there are)
        run.work_elements += self.n
        self.fresh_lp = 0.0
        self.stale_lp = 0.0
        self.n_fresh = 0
        self.n_stale = 0
        self.new_chains: dict[tuple, list] = {}
        self.mem_calls = 0
        self.mem_keys: dict[tuple, np.ndarray] = {}

    def add(self, lp: np.ndarray, s: float, owned: bool) -> None:
        """Accumulate a site's per-element log-densities (``s`` is their sum)."""
        self.lp_total += s
        if self.elem_lp is None:
            self.elem_lp = lp if owned else lp.copy()
        else:
            self.elem_lp += lp

    # -- addresses ------------------------------------------------------------------------------
    def elem_addr(self, j: int, rel: tuple) -> tuple:
        """Address of executed element number ``j`` (position in ``idx``) at ``rel``."""
        i = j if self.full else int(self.idx[j]) if self.n else "*"
        return self.addr + (i,) + rel

    def generic(self, rel: tuple) -> tuple:
        """``('data', '*', 'z')``-style address naming a site of every element."""
        if self.n == 1:
            return self.elem_addr(0, rel)
        return self.addr + ("*",) + rel

    def positions(self, elems: np.ndarray) -> np.ndarray:
        """Where the elements ``elems`` are among the executed ones."""
        if self.full:
            return elems
        if len(elems) == self.n and np.array_equal(elems, self.idx):  # exactly these, in order
            return np.arange(self.n)
        pos = np.searchsorted(self.idx, elems)
        if np.any(pos >= self.n) or np.any(self.idx[np.minimum(pos, self.n - 1)] != elems):
            raise RuntimeError("targets at plate elements that the run does not execute")
        return pos

    def require_full(self, what: str, rel: tuple) -> None:
        if not self.full:
            raise ModelError(
                f"plate {fmt(self.addr)}: {what} at {fmt(self.generic(rel))} appeared while "
                "running a subset of the elements; a plate's structure must not depend on its "
                "elements' values"
            )

    def value_at(self, rel: tuple) -> np.ndarray:
        """The values (one per executed element) this execution gave the site ``rel``."""
        s = self.new_store.get(rel)
        if s is not None:
            return s.values
        for local, steps in self.new_chains.items():
            k = len(local)
            if rel[:k] == local and len(rel) > k:
                return steps[rel[k]].new_store[rel[k + 1 :]].values
        raise KeyError(rel)

    # -- markov chain inside the plate ------------------------------------------------------------
    def run_chain(self, name, step, length, init, args):
        local = self._local(name)
        run = self.run
        T = int(length)
        old_steps = None if self.fresh_node else self.old.chains.get(local)
        if old_steps is not None and len(old_steps) != T:
            self.require_full(f"a chain of length {T} (was {len(old_steps)})", local)
        states, prev = [], init
        new_steps = []
        for t in range(T):
            old_store = old_steps[t] if old_steps is not None and t < len(old_steps) else None
            if old_store is None and old_steps is not None:
                old_store = {}
            sf = VecFrame(run, self, local + (t,), old_store)
            run.frame = sf
            try:
                prev = step(t, prev, *args)
            finally:
                run.frame = self
            new_steps.append(sf)
            states.append(prev)
        self.new_chains[local] = new_steps
        return states

    # -- end of the plate body ------------------------------------------------------------------
    def _stores(self):
        """(old store, new frame) pairs of the plate body and each chain step."""
        yield (None if self.fresh_node else self.old.sites), self
        for local, steps in self.new_chains.items():
            old_steps = None if self.fresh_node else self.old.chains.get(local)
            for t, sf in enumerate(steps):
                yield (old_steps[t] if old_steps is not None and t < len(old_steps) else None), sf

    def finalize(self) -> None:
        run = self.run
        if self.elem_lp is None:
            self.elem_lp = np.zeros(self.n)
        n_latent_elem = sum(
            1 for _, f in self._stores() for s in f.new_store.values() if s.kind == LATENT
        )
        lp_new = self.lp_total
        if self.fresh_node:
            node = PlateNode(self.N)
            for _, f in self._stores():
                store = node.sites if f is self else None
                if store is None:
                    local, t = f.rel[:-1], f.rel[-1]
                    steps = node.chains.setdefault(local, [])
                    steps.append({})
                    store = steps[t]
                for k, s in f.new_store.items():
                    store[k] = PlateSite(
                        np.array(s.values) if s.values is not None else None,
                        None if s.lp is None else s.lp.copy(),
                        s.kind,
                        s.discrete,
                        s.dist,
                    )
            node.elem_lp = self.elem_lp
            node.lp_sum = lp_new
            node.n_latent_elem = n_latent_elem
            node.mem_keys = {k: np.asarray(v).copy() for k, v in self.mem_keys.items()}
            if self.old is not None:
                run.drop_node(self.old, self.addr)
            update = _NewPlate(node)
        else:
            node = self.old
            if self.full and not node.maybe_stale:
                old_lp = node.lp_sum
            else:
                old_lp = float(node.elem_lp[self.idx].sum())
            if node.maybe_stale and len(node.stale_elements(self.idx, run.trace.mems)):
                old_lp = float("nan")  # unknown: this run can rescore, not compare
            stale_sites = self._check_structure(n_latent_elem)
            for st_lp, count in stale_sites:
                self.stale_lp += st_lp
                self.n_stale += count
            run.lp_old += old_lp - self.stale_lp
            update = _PlateUpdate(self, node, n_latent_elem)
        if self.mem_keys or (self.old is not None and self.old.mem_keys):
            from thrifty.core.mem import account_plate_reads

            account_plate_reads(run, self, None if self.fresh_node else self.old)
        run.lp_new += lp_new - self.fresh_lp
        run.n_fresh += self.n_fresh
        run.n_stale += self.n_stale
        run.lp_fresh += self.fresh_lp
        run.lp_stale += self.stale_lp
        self.parent.new.plates[self.local] = node
        run.plate_updates.append(update)

    def _check_structure(self, n_latent_elem):
        """Sites of the old plate not met again: stale (full runs) or an error (subsets)."""
        node = self.old
        out = []
        if (
            n_latent_elem == node.n_latent_elem
            and all(set(f.new_store) == set(o or ()) for o, f in self._stores())
            and set(self.new_chains) == set(node.chains)
        ):
            return out
        self.require_full("a change of the sites", ())
        for old_store, f in self._stores():
            for k, s in (old_store or {}).items():
                if k not in f.new_store and s.kind == LATENT:
                    out.append((float(s.lp.sum()), node.size))
        for local, steps in node.chains.items():
            new_steps = self.new_chains.get(local, [])
            for t in range(len(new_steps), len(steps)):
                for s in steps[t].values():
                    if s.kind == LATENT:
                        out.append((float(s.lp.sum()), node.size))
        return out


class _NewPlate:
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def apply(self, clock: int) -> None:
        node = self.node
        node.full_clock = clock
        node.valid_from = clock


class _PlateUpdate:
    """Writes a plate frame's results into its node on commit."""

    __slots__ = ("frame", "n_latent_elem", "node")

    def __init__(self, frame, node, n_latent_elem):
        self.frame = frame
        self.node = node
        self.n_latent_elem = n_latent_elem

    def apply(self, clock: int) -> None:
        f, node = self.frame, self.node
        idx = f.idx
        restructured = f.full and self.n_latent_elem != node.n_latent_elem
        _write(node.sites, f, idx, node.size)
        for local, steps in f.new_chains.items():
            old_steps = node.chains.setdefault(local, [])
            for t, sf in enumerate(steps):
                if t >= len(old_steps):
                    old_steps.append({})
                _write(old_steps[t], sf, idx, node.size)
            del old_steps[len(steps) :]
        if f.full:
            for local in [k for k in node.chains if k not in f.new_chains]:
                del node.chains[local]
        if restructured or f.full:
            node.n_latent_elem = self.n_latent_elem
        if f.full:
            node.elem_lp = f.elem_lp
            node.lp_sum = f.lp_total
            node.full_clock = clock
            node.maybe_stale = False
            if f.dirty:
                node.valid_from = clock
        else:
            node.lp_sum += f.lp_total - float(node.elem_lp[idx].sum())
            node.elem_lp[idx] = f.elem_lp
            node.stamp[idx] = clock
            if f.dirty:  # what precedes the plate changed: unexecuted elements are stale
                node.valid_from = clock
                node.maybe_stale = True
                node.lp_sum = float("nan")
        for key, keys in f.mem_keys.items():
            store = node.mem_keys.get(key)
            if store is None:
                store = node.mem_keys[key] = np.empty(node.size, dtype=np.asarray(keys).dtype)
            store[idx] = keys


def _write(store: dict, frame: VecFrame, idx, size: int) -> None:
    """Write a frame's new site values and log-densities at ``idx`` into ``store``."""
    for k in [k for k in store if k not in frame.new_store]:
        if frame.acc.full:
            del store[k]
    for k, s in frame.new_store.items():
        cur = store.get(k)
        if cur is None or cur.kind != s.kind:
            values = None
            if s.values is not None:
                v = np.asarray(s.values)
                values = np.zeros((size,) + v.shape[1:], dtype=v.dtype)
            lp = np.zeros(size) if s.lp is not None else None
            cur = store[k] = PlateSite(values, lp, s.kind, s.discrete)
            changed = True
        else:
            changed = k in frame.changed
        cur.dist = s.dist
        full = frame.acc.full
        if changed and s.values is not None:
            if full:  # the execution's arrays are its own: keep them
                cur.values = np.asarray(s.values)
            else:
                if (
                    cur.values.dtype != np.asarray(s.values).dtype
                    and cur.values.dtype.kind in "iub"
                ):
                    cur.values = cur.values.astype(np.result_type(cur.values, s.values))
                cur.values[idx] = s.values
        if s.lp is not None:
            if full:
                cur.lp = s.lp
            else:
                cur.lp[idx] = s.lp
