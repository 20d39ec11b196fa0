r"""Taylor proxies for one memoized choice: a cluster's GLM weights (paper 000 §4.2).

``th.subsampled_mh(th.one("w"), proxy="taylor")`` with ``w = th.mem("w", ...)`` read as
``th.observe("y", glm.logistic(X[i], w(z)), y[i])`` in a plate: the local sections of ``w(k)``
are its *readers*, the elements seated at table k (paper 000 §4.2).  As for a top-level θ
(:mod:`.proxy`), the sequential test reads the Taylor remainders −Δ_i of the sections, with

    Σ_{i∈R_k} ΔÛ_i = G_k·(θ' − θ) + ½ [(θ' − θ̂_k)ᵀ H_k (θ' − θ̂_k) − (θ − θ̂_k)ᵀ H_k (θ − θ̂_k)],
    G_k = Σ_{i∈R_k} ∇U_i(θ̂_k),   H_k = Σ_{i∈R_k} ∇²U_i(θ̂_k),

exact in O(d²).  The readers R_k change with every label update, so the statistics of a key
follow them: a moved element is unincorporated from its old key's sums and incorporated into
its new key's (O(d²) each), the moves read from the mem table's reader log
(:class:`~thrifty.core.mem.ReaderLog`) — never a pass over the readers.  The centre θ̂_k is the
mode of k's conditional given its readers (Newton from the chain's value, O(N_k)), found when
the key is first proposed and again once its readers have changed by half since (amortised
O(d²) per move): any centre keeps the test exact, a good one keeps the remainders small.

Set-up, once per chain (O(N)): one execution of the program that captures the observations,
giving each element's row x_i and y_i, and a second one with every key perturbed, which checks
that ``w`` reaches the plate only through one glm observation whose rows are ``w(z_i)`` itself
for each reader (not ``2 * w(z)``, a mask, a branch on the key; a key first read later is checked
by one run of its readers).  A function equal to the value near the values seen there
(``np.abs(w(z))`` with w(k) > 0) is not seen: the proposals' rows are not executed.  The
rows are computed by the plate's body, so they can change only where the engine executes an
element (a label moved, a per-element choice changed, a value before the plate changed) or
leaves it stale.  The proxy reads them from the plate's execution log
(:class:`~thrifty.core.exec_log.ExecLog`), which carries the observation's distribution as each
execution computed it: a changed row is moved out of its key's sums and back in, O(d²) per
executed element.  Whatever the log cannot vouch for (every element executed, elements left
stale by a lazy change before the plate or of another memoized value they read, a run that
did not meet the observation) sets up again.  A change of the glm family's parameters (a noise
scale another kernel moved) or of the observed data rebuilds the statistics.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.engine import (
    LAZY_CAPTURE,
    RESCORE_CAPTURE,
    Plan,
    executions_since,
    plan_elements,
    run_plate_lps,
    same_value,
    watch,
    watch_rows,
)
from thrifty.distributions.glm import GLM
from thrifty.errors import SelectionError
from thrifty.inference.subsampling.smh import positive_definite, prior_model

_FULL = RESCORE_CAPTURE
_MIN_MOVES = 10  # a key is re-centred after max(_MIN_MOVES, n/2) moves since its build


def proxy_sum(G, H, theta_hat, theta, theta_new) -> float:
    """Σ_i ΔÛ_i = G·(θ' − θ) + ½ [(θ' − θ̂)ᵀ H (θ' − θ̂) − (θ − θ̂)ᵀ H (θ − θ̂)], exact in O(d²)
    from G = Σ_i ∇U_i(θ̂) and H = Σ_i ∇²U_i(θ̂)."""
    dv, dv_new = theta - theta_hat, theta_new - theta_hat
    return float(G @ (theta_new - theta)) + 0.5 * float(dv_new @ H @ dv_new - dv @ H @ dv)


class _Key:
    """The statistics of one key: centre, sums over its readers, and the readers themselves
    (a dense array with swap-remove, to draw minibatches from)."""

    __slots__ = ("G", "H", "count", "id", "key", "members", "moves", "n_built", "theta_hat")

    def __init__(self, kid: int, key, d: int):
        self.id, self.key = kid, key
        self.G, self.H = np.zeros(d), np.zeros((d, d))
        self.members = np.empty(16, dtype=np.int64)
        self.count = self.moves = self.n_built = 0
        self.theta_hat = np.zeros(d)


class KeySections:
    """The readers of one key for one proposal θ → θ', scored as Taylor remainders."""

    full_pass = False  # the remainders settle in a few minibatches: no budget

    def __init__(self, proxy: MemTaylor, key: _Key, theta, theta_new):
        self.proxy, self.key = proxy, key
        self.theta, self.theta_new = theta, theta_new
        self.N = key.count
        # Σ_i l_i = offset + Σ_i evaluate(i)
        self.offset = -proxy_sum(key.G, key.H, key.theta_hat, theta, theta_new)

    def evaluate(self, idx: np.ndarray) -> np.ndarray:
        """−Δ_i = l_i + ΔÛ_i for the readers at positions ``idx``."""
        p = self.proxy
        e = self.key.members[idx]
        c = len(e)
        eta2 = p.X[e] @ np.stack([self.theta, self.theta_new], axis=1)  # (c, 2): η and η'
        u2 = p.fam.potential(eta2.T.reshape(-1), np.tile(p.y[e], 2))
        eh = p.eta_hat[e]
        dl, dl_new = eta2[:, 0] - eh, eta2[:, 1] - eh
        delta = u2[c:] - u2[:c] - p.g[e] * (dl_new - dl) - 0.5 * p.h[e] * (dl_new**2 - dl**2)
        return -delta

    def commit(self, skeleton) -> None:
        skeleton.commit()  # θ' with its readers stale (rescored when next read, 000 §3.5)


class MemTaylor:
    """Per-key second-order Taylor proxies of the glm readers of one memoized function."""

    def __init__(self):
        self.trace = self.maddr = self.obs = None  # what the statistics describe

    # -- the scorer of one proposal ------------------------------------------------------------
    def sections(self, kernel, trace, skeleton, loc, theta_new) -> tuple[KeySections, bool]:
        """The scorer for ``loc`` (one key of a mem table) → ``theta_new``, and whether an O(N)
        set-up was (re)done."""
        name, maddr, key = kernel.name, loc.mem_addr, loc.addr[-1]
        table = trace.mems[maddr]
        fresh = self.trace is not trace or self.maddr != maddr or self.obs is not trace.obs_values
        if not fresh and not self._same_family(skeleton):
            fresh = True
        if fresh:
            self._setup(kernel, trace, loc)
        plates = [p for p, by in table.plate_readers.items() if by.get(key)]
        steps = [c for c, by in table.step_readers.items() if by.get(key)]
        if steps or plates not in ([], [self.plate]):
            where = fmt((steps or plates)[0])
            raise SelectionError(
                f"{name}(proxy='taylor'): {fmt(loc.addr)} is read in {where}; the Taylor proxy "
                f"of a memoized choice covers the glm observations of one plate, {fmt(self.plate)}"
                " (use proxy=None)"
            )
        if not (self._sync(table) and self._follow_rows(trace)):
            self._setup(kernel, trace, loc)  # (the log cannot vouch for the rows kept)
            fresh = True
        k = self.keys.get(key)
        n_now = len(table.plate_readers.get(self.plate, {}).get(key, ()))
        if k is None or k.count != n_now or k.moves > max(_MIN_MOVES, k.n_built // 2):
            if key not in self.checked:  # a key the set-up did not see read
                self._check_key(kernel, trace, loc, table.plate_readers[self.plate][key])
                self.checked.add(key)
            k = self._build(table, key, np.asarray(loc.value, dtype=float))
            kernel.info.count("cluster_builds")
        theta = np.asarray(loc.value, dtype=float)
        return KeySections(self, k, theta, np.asarray(theta_new, dtype=float)), fresh

    # -- set-up: the data rows, the glm family, the reader log ---------------------------------
    def _setup(self, kernel, trace, loc) -> None:
        self._capture(kernel, trace, loc)
        self.trace, self.maddr, self.obs = trace, loc.mem_addr, trace.obs_values
        self._reset(trace.mems[loc.mem_addr])
        self.rows_seen = watch_rows(trace, self.plate, self.obs_rel)
        self.clock = trace.clock

    def _capture(self, kernel, trace, loc) -> None:
        """The data rows x_i, y_i and the glm family, checked (see the module docstring)."""
        name, addr = kernel.name, loc.addr
        rng0 = np.random.default_rng(20240602)  # set-up never touches the chain's generator
        value = np.asarray(loc.value, dtype=float)
        run_a = kernel.execute(trace, rng0, mode=_FULL)
        table = trace.mems[loc.mem_addr]
        moved = {}  # every key like the selected one, moved (each reader is checked)
        for key, v in table.values.items():
            if isinstance(v, np.ndarray) and v.shape == value.shape and v.dtype.kind == "f":
                moved[loc.mem_addr + (key,)] = v + 0.1 * (1.0 + np.abs(v)) * rng0.standard_normal(
                    v.shape)
        moved[addr] = value + 0.1 * (1.0 + np.abs(value)) * rng0.standard_normal(value.shape)
        run_b = kernel.execute(trace, rng0, targets=moved, mode=_FULL)
        b_entries = {c[0]: c for c in run_b.captured}
        found = []
        for caddr, dist, y, elems in run_a.captured:
            other = b_entries.get(caddr)
            if not isinstance(dist, GLM) or other is None or elems is None:
                continue
            if np.shape(dist.theta) != np.shape(other[1].theta):
                continue
            rows = np.flatnonzero(np.any(np.asarray(dist.theta) != other[1].theta, axis=-1))
            if len(rows) and np.ndim(dist.theta) == 2:
                found.append((caddr, dist, np.asarray(y), np.asarray(elems), other[1]))
        if len(found) != 1:
            what = "no glm observation" if not found else "several glm observations"
            raise SelectionError(
                f"{name}(proxy='taylor'): {what} in a plate read(s) {fmt(addr)} as rows of its "
                "weights; the proxy of a memoized choice needs exactly one, like "
                "th.observe('y', glm.logistic(X[i], w(z)), y[i]) (or use proxy=None)"
            )
        if value.ndim != 1:
            raise SelectionError(f"{name}(proxy='taylor'): {fmt(addr)} must be a real vector")
        caddr, dist, y, elems, dist_b = found[0]
        plate = caddr[: caddr.index("*")]
        if not same_value(dist.family.params(), dist_b.family.params()):
            raise SelectionError(
                f"{name}(proxy='taylor'): the glm family at {fmt(caddr)} depends on {fmt(addr)};"
                " only the linear predictor may"
            )
        fa, fb = run_plate_lps(run_a)[plate], run_plate_lps(run_b)[plate]
        diff = fb - fa
        expected = dist_b.log_prob(y) - dist.log_prob(y)
        bad = ~(np.abs(diff - expected) <= 1e-7 * (1.0 + np.abs(fa) + np.abs(fb)))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise SelectionError(
                f"{name}(proxy='taylor'): {fmt(addr)} enters plate {fmt(plate)} through terms "
                f"that are not the glm observation {fmt(caddr)} (element {j}); use proxy=None"
            )
        self.caddr, self.plate = caddr, plate
        self._check_rows(kernel, table, dist, dist_b, elems, moved)
        self.checked = {k for k, es in table.plate_readers.get(plate, {}).items() if es}
        n = len(fa)
        self.X = np.empty((n, len(value)))
        self.X[elems] = dist.X
        self.y = np.empty(n, dtype=y.dtype)
        self.y[elems] = np.broadcast_to(y, (len(elems),))
        self.fam, self.fam_params = dist.family, dist.family.params()
        self.obs_rel = caddr[len(plate) + 1 :]

    def _check_key(self, kernel, trace, loc, readers) -> None:
        """Refuse a key not seen read at set-up whose readers' glm weights are not its value
        (see :meth:`_check_rows`): one run of its readers with the key moved, O(N_k), once."""
        value = np.asarray(loc.value, dtype=float)
        rng0 = np.random.default_rng(20240603)  # never the chain's generator
        moved = {loc.addr: value + 0.1 * (1.0 + np.abs(value)) * rng0.standard_normal(
            value.shape)}
        elems = np.sort(np.fromiter(readers, dtype=np.int64, count=len(readers)))
        plan = plan_elements(trace, Plan(), self.plate, elems)
        run = kernel.execute(trace, rng0, targets=moved, plan=plan, mode=LAZY_CAPTURE)
        for caddr, dist, _, done in run.captured:
            if caddr == self.caddr and isinstance(dist, GLM) and done is not None:
                self._check_rows(kernel, trace.mems[loc.mem_addr], None, dist, done, moved)
                return
        self._check_rows(kernel, trace.mems[loc.mem_addr], None, None, np.zeros(0, int), moved)

    def _check_rows(self, kernel, table, dist_a, dist_b, elems, moved) -> None:
        """Refuse rows of the glm weights that are not the memoized value itself.

        The remainders are computed from the data as U(x_i·θ, y_i) with θ = w(k) for every
        reader i of key k: a reader whose weights are another function of w(k) (``2 * w(z)``,
        ``w(z) * s``, a mask, a branch on the key), that reads several keys or observes no glm
        would make its U_i(θ') wrong, and so would an element that reads no key but whose
        weights moved with them.  ``dist_a``, ``dist_b``: the glm of the executed ``elems`` at
        the values and with the keys in ``moved`` (targets by address) moved (``dist_a`` None:
        only the latter is compared)."""
        maddr = next(iter(moved))[:-1]
        elems = np.asarray(elems, dtype=np.int64)
        by_key = [(k, es) for k, es in table.plate_readers.get(self.plate, {}).items() if es]
        n = max([int(elems.max(initial=-1)) + 1] + [max(es) + 1 for _, es in by_key])
        key_ix = np.full(n, -1, dtype=np.int64)  # element → its key's index (-2: several)
        hits = np.zeros(n, dtype=np.int64)
        d = len(next(iter(moved.values())))
        vals, moves = np.full((len(by_key), d), np.nan), np.full((len(by_key), d), np.nan)
        for j, (key, es) in enumerate(by_key):
            es = np.fromiter(es, dtype=np.int64, count=len(es))
            key_ix[es] = j
            hits[es] += 1
            if maddr + (key,) in moved:
                vals[j], moves[j] = table.values[key], moved[maddr + (key,)]
        key_ix[hits > 1] = -2
        ki = key_ix[elems]
        at = np.maximum(ki, 0)
        reader = (ki >= 0) & ~np.isnan(moves[at, 0]) if by_key else np.zeros(len(ki), bool)
        if len(elems):
            rows_b = np.asarray(dist_b.theta)
            ok = np.where(reader, np.all(rows_b == moves[at], axis=-1), ki != -2)
            if dist_a is not None:
                rows_a = np.asarray(dist_a.theta)
                ok &= np.where(reader, np.all(rows_a == vals[at], axis=-1),
                               np.all(rows_a == rows_b, axis=-1))
        else:
            ok = reader
        if not ok.all():
            self._refuse(kernel, int(elems[np.flatnonzero(~ok)[0]]))
        for j, (key, es) in enumerate(by_key):  # every reader observed its glm
            if maddr + (key,) in moved and int(np.sum(reader & (ki == j))) != len(es):
                self._refuse(kernel, min(set(es) - set(elems[ki == j].tolist())))

    def _refuse(self, kernel, e) -> None:
        raise SelectionError(
            f"{kernel.name}(proxy='taylor'): the weights of the glm observation "
            f"{fmt(self.caddr)} at element {e} of {fmt(self.plate)} are not the memoized "
            "value it reads (a function of it: scaled, shifted, masked, chosen by a branch; "
            "several values; or no glm observation); the proxy of a memoized choice needs "
            "glm.<family>(X[i], w(z)) with the memoized value itself (or use proxy=None)"
        )

    def _same_family(self, skeleton) -> bool:
        for caddr, dist, _, _ in skeleton.captured or ():
            if caddr == self.caddr and isinstance(dist, GLM):
                return same_value(dist.family.params(), self.fam_params)
        return True

    def _reset(self, table) -> None:
        """Forget every key's statistics and start reading the log from now."""
        n = len(self.X)
        self.owner = np.full(n, -1, dtype=np.int64)  # element → id of the key it is summed in
        self.slot = np.zeros(n, dtype=np.int64)  # its position in that key's members
        self.eta_hat, self.g, self.h = np.zeros(n), np.zeros(n), np.zeros(n)
        self.keys: dict = {}
        self.by_id: dict = {}
        self.next_id = 0
        self.seen = watch(table)

    # -- following the readers -----------------------------------------------------------------
    def _sync(self, table) -> bool:
        """Apply the reader moves logged since the last step; False when the log does not reach
        back to it (another lineage of the trace): then the statistics are rebuilt."""
        entry, new = table.log, []
        while entry is not None and entry is not self.seen:
            new.append(entry)
            entry = entry.prev
        if entry is None:
            return False
        for e in reversed(new):
            if e.plate is None or e.plate != self.plate:
                continue  # a mark, or another plate (refused when its key is proposed)
            if e.elems is None:
                return False  # the plate left
            elems, old, new_keys = e.elems, e.old, e.new
            if old is not None and new_keys is not None:
                moved = old != new_keys
                elems, new_keys = elems[moved], new_keys[moved]
            self._unincorporate(elems)
            if new_keys is not None:
                self._incorporate(elems, new_keys)
        self.seen = table.log
        self.seen.prev = None  # older entries are needed by no one
        return True

    def _follow_rows(self, trace) -> bool:
        """Apply the rows of the elements executed since the last step, read from the plate's
        execution log; False when the log cannot vouch for every row kept (see the module
        docstring): then the rows are captured again."""
        since = executions_since(trace, self.plate, self.obs_rel, self.rows_seen, self.maddr,
                                 self.clock)
        if since is None:
            return False
        new, head = since
        pending, d_x = [], self.X.shape[1]
        for e in new:  # newest first
            d, y = e.obs.get(self.obs_rel, (None, None))
            n = len(e.idx)
            if not isinstance(d, GLM) or d.X.shape != (n, d_x):
                return False
            y = np.asarray(y)
            pending.append((e.idx, d.X, y if y.shape == (n,) else np.broadcast_to(y, (n,))))
        if len(pending) == 1:
            self._replace_rows(*pending[0])
        elif pending:
            idx, rows, ys = zip(*pending)
            elems, first = np.unique(np.concatenate(idx), return_index=True)  # newest row
            self._replace_rows(elems, np.concatenate(rows)[first], np.concatenate(ys)[first])
        self.rows_seen = head
        self.rows_seen.prev = None  # older entries are needed by no one
        self.clock = trace.clock
        return True

    def _replace_rows(self, elems: np.ndarray, X: np.ndarray, y: np.ndarray) -> None:
        """Give elements ``elems`` the rows ``X``, ``y``: each changed one leaves its key's sums
        with the old row and comes back with the new (its membership unchanged)."""
        moved = np.any(self.X[elems] != X, axis=1) | (self.y[elems] != y)
        if not moved.any():
            return
        es, X, y = elems[moved], X[moved], y[moved]
        ids = self.owner[es]
        keys = [(self.by_id[kid], es[ids == kid]) for kid in np.unique(ids[ids >= 0]).tolist()]
        for k, sel in keys:
            self._sums_out(k, sel)
        self.X[es], self.y[es] = X, y
        for k, sel in keys:
            self._sums_in(k, sel)

    def _sums_out(self, k: _Key, es: np.ndarray) -> None:
        """Take elements ``es`` out of key ``k``'s sums, with the terms they were added with."""
        x = self.X[es]
        k.G -= x.T @ self.g[es]
        k.H -= x.T @ (self.h[es][:, None] * x)

    def _sums_in(self, k: _Key, es: np.ndarray) -> None:
        """Add elements ``es`` to key ``k``'s sums, expanded at its centre θ̂_k."""
        x, y = self.X[es], self.y[es]
        eta = x @ k.theta_hat
        g, h = self.fam.d1(eta, y), self.fam.d2(eta, y)
        self.eta_hat[es], self.g[es], self.h[es] = eta, g, h
        k.G += x.T @ g
        k.H += x.T @ (h[:, None] * x)

    def _unincorporate(self, elems: np.ndarray) -> None:
        ids = self.owner[elems]
        for kid in np.unique(ids[ids >= 0]).tolist():
            k = self.by_id[kid]
            es = elems[ids == kid]
            members = k.members
            self._sums_out(k, es)
            for e in es.tolist():  # swap-remove
                s, last = self.slot[e], members[k.count - 1]
                members[s] = last
                self.slot[last] = s
                k.count -= 1
            self.owner[es] = -1
            k.moves += len(es)
            if k.count == 0:
                self._drop(k)

    def _incorporate(self, elems: np.ndarray, keys: np.ndarray) -> None:
        for key in np.unique(keys).tolist():
            k = self.keys.get(key)
            if k is not None:
                self._add(k, elems[keys == key])
                k.moves += int(np.sum(keys == key))

    def _add(self, k: _Key, es: np.ndarray) -> None:
        """Incorporate elements ``es`` into key ``k`` at its centre θ̂_k."""
        self._sums_in(k, es)
        need = k.count + len(es)
        if need > len(k.members):
            grown = np.empty(max(need, 2 * len(k.members)), dtype=np.int64)
            grown[: k.count] = k.members[: k.count]
            k.members = grown
        k.members[k.count : need] = es
        self.slot[es] = np.arange(k.count, need)
        self.owner[es] = k.id
        k.count = need

    def _drop(self, k: _Key) -> None:
        del self.keys[k.key], self.by_id[k.id]

    def _build(self, table, key, value) -> _Key:
        """(Re)build key ``key``: its readers, centre θ̂ (Newton from ``value``) and sums."""
        old = self.keys.get(key)
        if old is not None:
            self._unincorporate(old.members[: old.count].copy())  # drops it when emptied
            if old.id in self.by_id:
                self._drop(old)
        readers = table.plate_readers[self.plate][key]
        es = np.fromiter(readers, dtype=np.int64, count=len(readers))
        stray = es[self.owner[es] >= 0]  # summed under another key: the log missed a move
        if len(stray):
            self._unincorporate(stray)
        k = _Key(self.next_id, key, len(value))
        self.next_id += 1
        self.keys[key], self.by_id[k.id] = k, k
        k.theta_hat = self._mode(table.dist[key], es, value)
        self._add(k, es)
        k.n_built, k.moves = k.count, 0
        return k

    def _mode(self, prior, es, theta) -> np.ndarray:
        """Newton on −Σ_{i∈es} log p(y_i | x_i·θ) − log prior(θ), from ``theta``."""
        x, y, fam = self.X[es], self.y[es], self.fam
        logp = prior_model(prior, len(theta))

        def objective(t):
            eta = x @ t
            lp, gp, hp = logp(t)
            f = float(np.sum(fam.potential(eta, y))) - lp
            grad = x.T @ fam.d1(eta, y) - gp
            hess = x.T @ (np.maximum(fam.d2(eta, y), 0.0)[:, None] * x) - hp
            return f, grad, hess

        f, grad, hess = objective(theta)
        if not np.isfinite(f):
            return theta.copy()
        for _ in range(50):
            step = np.linalg.solve(positive_definite(hess), grad)
            dec = float(grad @ step)
            if not dec > 1e-10:
                break
            t = 1.0
            while t > 1e-8:
                f2, g2, h2 = objective(theta - t * step)
                if f2 <= f - 1e-4 * t * dec:
                    break
                t *= 0.5
            else:
                break
            theta, f, grad, hess = theta - t * step, f2, g2, h2
        return np.array(theta, dtype=float)
