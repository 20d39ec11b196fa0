"""Check mode: what the incremental engine holds, compared with a full execution of the program.

The engine skips work: a plate re-runs only the elements a change can reach, a markov chain only
from the changed step until a state comes out as before, subsampling kernels leave elements
*stale* (paper 000 §3.5), mem tables keep a reader index and reference counts, coupled sites
(``th.CRP``, collapsed families) keep running statistics, and every node keeps running totals.
Each shortcut is sound only if the model keeps what its plates and chains declare — an element
reads nothing another element wrote, a step hands the next one nothing but its returned state,
data do not change between steps — and if the engine has no bug.  :func:`check_trace` is the
safety net (as Gen's ``check=true``): it executes the program **afresh** — a new trace, every
plate over all its elements, every chain from its first step, every mem table, reader index and
coupled state rebuilt — with every latent choice set to its value in the trace, and compares,
node by node:

* every site of the model body and of every markov step: its log-density, and the value of
  observations and deterministic sites;
* every plate: its size, its sites' log-densities per element, each element's log-density
  (``elem_lp``, observations included), its total, deterministic values, the mem keys its
  elements read, the joint log-density of its coupled sites, and the chains inside it;
* every markov chain: its length, states, sites and totals per step, and its total;
* every mem table: each key's log-density, reference counts, readers (plate elements and steps)
  and total;
* the structure: a choice a full execution creates that the trace lacks, and the reverse;
* the trace's number of latent choices |x| (kept as |x| + fresh − stale by the commits) and its
  log joint;
* the program's output, when the trace holds that of a run over every plate element: where it
  is data (numbers, strings, numeric arrays, and tuples, lists, sequences and dicts of them),
  within the tolerance of deterministic values, as the trace held it before the full execution;
  other objects in it are not compared, nor is an output that a second full execution gives
  otherwise (random numbers drawn outside ``th.sample``).

Stale elements and steps are legitimately out of date and are not compared for log-densities;
node totals and the log joint are compared only when nothing in them is stale.  Log-densities
agree when ``|a − b| ≤ 1e-9 + 1e-9·max(|a|, |b|)`` (a total: ``1e-9 + 1e-9·Σ|terms|``, the
bound for a sum taken in another order); deterministic values and states within the same
tolerance (vectorised arithmetic over another number of elements may round differently); the
latent values are the full execution's inputs.

The full execution draws from a private generator (only for a choice the trace lacks) and never
touches the trace, so checking does not change a chain's draws.  It costs one execution of the
program from scratch, O(size of the trace).

>>> import numpy as np, thrifty as th
>>> from thrifty import dist
>>> from thrifty.core.check import check_trace
>>> @th.model
... def m(y):
...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
...     with th.plate("data", len(y)) as i:
...         th.observe("y", dist.Normal(mu, 1.0), y[i])
>>> y = np.array([0.5, 1.5])
>>> tr = th.simulate(m(y), seed=0)
>>> check_trace(tr)
[]
>>> y[1] = 9.0                     # data changed behind the engine's back
>>> d = check_trace(tr)[0]
>>> d.what, d.site, round(d.held, 2), round(d.full, 2)
('log-density of the observations', ('data', 1, 'y'), -1.86, -40.3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.agree import approx as _approx
from thrifty.core.agree import bad as _bad
from thrifty.core.agree import close as _close
from thrifty.core.agree import first_difference, snapshot
from thrifty.core.run import Run
from thrifty.core.trace import Trace
from thrifty.core.vocab import CAPTURE, DETERMINISTIC, LATENT, OBSERVED, ZeroProbability
from thrifty.errors import CheckError, ThriftyError

_FULL = CAPTURE  # the captured observations name a plate's observed sites

_LEAK = ("a value reaching it from code a run may skip, other than through what that code "
         "returns (a global or buffer written inside a markov step, a plate element or a "
         "memoized function — possibly by a rejected proposal)")
TOP = ("a model body reading a value changed between steps (a global, data mutated in place), "
       f"{_LEAK}, or an engine bug")
PLATE = (f"a plate element reading what another element wrote (a shared buffer), {_LEAK}, data "
         "changed between steps, or an engine bug in partial plate execution")
CHAIN = ("a markov step passing information to the next through something other than its "
         "returned state (a global, a buffer, data read in the order the steps run — next(it) "
         "— rather than by t), data changed between steps, or an engine bug in partial chain "
         "execution")
MEM = ("a th.mem function whose distribution depends on something other than its key and the "
       "values before its reads, or an engine bug in the mem table")
READERS = "an engine bug in the mem table's reference counts or reader index"
COUPLED = "an engine bug in the running statistics of a coupled site (th.CRP, collapsed family)"
STRUCTURE = ("a model whose structure depends on something other than its choices (a global, "
             "data changed between steps), or an engine bug")
TOTALS = "an engine bug in the running totals kept by commits"
OUTPUT = ("an output computed from something other than the choices and the data (a global "
          "changed between steps), an output holding a buffer the program writes again at its "
          "next execution — a rejected proposal's values then replace the trace's (return a "
          "copy) —, or an engine bug in the output kept by commits")


@dataclass(frozen=True)
class Discrepancy:
    """One difference between the incremental trace and a full execution.

    ``node``: the address of the node (``()`` the model body, else a plate, chain or mem table);
    ``site``: the address at fault (element or step included); ``held`` / ``full``: what the
    trace holds and what the full execution gives; ``more``: how many other elements or steps
    of the node differ the same way; ``hint``: what to suspect.
    """

    node: tuple
    site: tuple
    what: str
    held: Any = None
    full: Any = None
    more: int = 0
    hint: str = ""
    kind: str = ""  # of the node: "plate", "markov chain", "mem table" or ""

    def __str__(self) -> str:
        where = f" in {self.kind} {fmt(self.node)}" if self.kind and self.node != self.site \
            else ""
        at = f" at {fmt(self.site)}" if self.site else ""
        if self.held is None:  # the full execution could not run: why
            return f"{self.what}{at}{where}: {self.full}"
        out = (f"{self.what}{at or ' of the trace'}{where}: the trace holds {_show(self.held)}, "
               f"a full execution gives {_show(self.full)}")
        if self.more:
            out += f" (and {self.more} other element(s) or step(s) of this node)"
        return out


def _show(v) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, np.ndarray) and v.size > 6:
        return f"an array of shape {v.shape}"
    return repr(v.item() if isinstance(v, np.generic) else v)


def check_trace(trace: Trace) -> list[Discrepancy]:
    """Compare ``trace`` with a full execution of its program at its values (module docstring);
    returns the discrepancies found (empty: consistent)."""
    targets = _choices(trace)
    held = snapshot(trace.output)  # (before the execution: it may write a buffer the output holds)
    try:
        fresh, run = _full_run(trace, targets, 0)
    except ThriftyError as e:
        return [Discrepancy((), (), "a full execution at the trace's values failed", None,
                            f"{type(e).__name__}: {e}", hint=STRUCTURE)]
    if run.aborted is not None:
        e: ZeroProbability = run.aborted
        return [Discrepancy((), e.addr, "value", e.value, f"probability zero under {e.dist!r}",
                            hint=STRUCTURE)]
    run.commit()
    return _Comparison(trace, fresh, run, held).compare(targets)


def _full_run(trace, targets, seed: int) -> tuple:
    """A new trace of the program and the full execution into it at ``targets``."""
    fresh = trace.blank()
    return fresh, Run(fresh, np.random.default_rng(seed), targets=targets, mode=_FULL).execute()


def raise_if_inconsistent(trace: Trace, where: str = "") -> None:
    """Raise :class:`~thrifty.errors.CheckError` naming the node and site of each discrepancy
    :func:`check_trace` finds (at most five in the message; all in ``error.discrepancies``)."""
    found = check_trace(trace)
    if not found:
        return
    n = f"{len(found)} discrepanc{'y' if len(found) == 1 else 'ies'}"
    lines = [f"check mode{' ' + where if where else ''}: the incremental trace disagrees with a "
             f"full execution of the program ({n}):"]
    hints: list = []
    for d in found[:5]:
        lines.append(f"  - {d}")
        if d.hint and d.hint not in hints:
            hints.append(d.hint)
    if len(found) > 5:
        lines.append(f"  - ... and {len(found) - 5} more (error.discrepancies lists them)")
    lines += [f"  suspect: {h}" for h in hints]
    raise CheckError("\n".join(lines), found)


# -- the choices of a trace, as targets of the full execution -------------------------------------
def _values(col) -> np.ndarray:
    """A column's values, read without changing it."""
    return col.take(slice(0, len(col)))


def _choices(trace) -> dict:
    """address → value of every latent choice (a plate site: one array over its elements)."""
    out: dict = {}
    _block_choices(trace.root, (), out)
    for maddr, table in trace.mems.items():
        for key, value in table.values.items():
            out[maddr + (key,)] = value
    return out


def _block_choices(block, prefix: tuple, out: dict) -> None:
    for local, s in block.sites.items():
        if s.kind == LATENT:
            out[prefix + local] = s.value
    for local, node in block.plates.items():
        pa = prefix + local
        for rel, s in node.sites.items():
            if s.kind == LATENT and s.values is not None:
                out[pa + rel] = np.array(_values(s.values))
        for c, cols in node.chains.items():
            for rel, s in cols.sites.items():
                if s.kind == LATENT and s.values is not None:
                    vals = _values(s.values)
                    for t in np.flatnonzero(cols.present[rel]).tolist():
                        out[pa + c + (t,) + rel] = np.array(vals[:, t])
    for local, chain in block.chains.items():
        for t in range(chain.T):
            _block_choices(chain.step_view(t), prefix + local + (t,), out)


def _union(a, b) -> list:
    return list(dict.fromkeys([*a, *b]))


# -- the comparison -------------------------------------------------------------------------------
class _Comparison:
    """Walks the incremental trace and the fresh one side by side, collecting discrepancies."""

    def __init__(self, old, new, run, held=None):
        self.old, self.new, self.run, self.held = old, new, run, held
        self.out: list[Discrepancy] = []
        self.kinds: dict = {}  # node address → "plate", "markov chain" or "mem table"
        self.obs: dict = {}  # plate address → relative addresses of its observed sites
        for addr, *_ in run.captured:
            if "*" in addr:
                k = addr.index("*")
                self.obs.setdefault(addr[:k], []).append(addr[k + 1:])

    def add(self, node, *args, **kw) -> None:
        self.out.append(Discrepancy(node, *args, kind=self.kinds.get(node, ""), **kw))

    def compare(self, targets) -> list[Discrepancy]:
        self.structure(targets)
        self.block(self.old.root, self.new.root, (), TOP)
        self.mems()
        self.totals()
        self.output(targets)
        return self.out

    def output(self, targets) -> None:
        """The program's output, when the trace holds one of a run over every plate element
        and nothing is stale: compared where it is data (numbers, strings, numeric arrays, and
        tuples, lists, sequences and dicts of them) — what it holds besides is not compared —
        as the trace held it before the full execution.  An output that differs between two
        full executions at the same values (random numbers drawn outside th.sample: a
        replicated observation as Stan's generated quantities draw one) is no function of
        the choices, and is not compared."""
        old, new = self.old, self.new
        if not (old.output_full and new.output_full) or old.stale_nodes:
            return
        found = first_difference(self.held, new.output)
        if found is not None:
            try:
                again = _full_run(old, targets, 1)[1]
            except ThriftyError:
                again = None
            if again is None or again.aborted is not None or first_difference(
                    again.output, new.output) is None:
                at, held, full = found
                self.add((), (), f"program output{at}", held, full, hint=OUTPUT)

    # -- structure --------------------------------------------------------------------------------
    def structure(self, targets) -> None:
        for addr, count in self.run.fresh_choices or ():
            if count == 0:  # (a coupled site with every element given notes none)
                continue
            self.add(addr, addr, "the incremental trace lacks a choice", "nothing",
                     f"{count} new choice(s)", hint=STRUCTURE)
        made = _choices(self.new)
        for addr in targets:
            if addr not in made:
                self.add(addr, addr, "a choice a full execution does not make",
                         "a choice", "nothing", hint=STRUCTURE)

    # -- blocks: the model body, a markov step ------------------------------------------------
    def block(self, a, b, prefix: tuple, hint: str, sites: bool = True) -> None:
        if sites:
            sa, sb = a.sites, b.sites
            for local in _union(sa, sb):
                self.site(sa.get(local), sb.get(local), prefix, prefix + local, hint)
        for local in _union(a.plates, b.plates):
            p, q = a.plates.get(local), b.plates.get(local)
            if p is None or q is None:
                self.add(prefix + local, prefix + local, "a plate", _there(p), _there(q),
                         hint=STRUCTURE)
            else:
                self.plate(p, q, prefix + local)
        for local in _union(a.chains, b.chains):
            c, d = a.chains.get(local), b.chains.get(local)
            if c is None or d is None:
                self.add(prefix + local, prefix + local, "a markov chain", _there(c),
                         _there(d), hint=STRUCTURE)
            else:
                self.chain(c, d, prefix + local)

    def site(self, s, t, node, addr, hint) -> None:
        if s is None or t is None or s.kind != t.kind:
            if (s is None or s.kind != LATENT) and (t is None or t.kind != LATENT):
                self.add(node, addr, "a site", _there(s), _there(t), hint=STRUCTURE)
            return
        if not _close(s.lp, t.lp):
            self.add(node, addr, "log-density", s.lp, t.lp, hint=hint)
        if s.kind in (OBSERVED, DETERMINISTIC) and not _approx(s.value, t.value):
            what = "observed value" if s.kind == OBSERVED else "deterministic value"
            self.add(node, addr, what, s.value, t.value, hint=hint)

    # -- plates ---------------------------------------------------------------------------------
    def columns(self, node, site_of, a, b, mask, what, hint) -> None:
        """Compare two arrays over elements (or steps) where ``mask``; report the first."""
        bad = _bad(a, b)
        if mask is not None:
            bad &= mask
        if bad.any():
            where = np.flatnonzero(bad)
            e = int(where[0])
            self.add(node, site_of(e), what, _item(a, e), _item(b, e), len(where) - 1, hint)

    def same_kind(self, addr, rel, s, t) -> bool:
        """Whether the per-element (per-step) site ``rel`` of ``addr`` exists in both runs with
        one kind, to be compared; otherwise a difference is reported unless a latent choice is
        involved."""
        if s is not None and t is not None and s.kind == t.kind:
            return True
        if LATENT not in (getattr(s, "kind", None), getattr(t, "kind", None)):
            self.add(addr, addr + ("*",) + rel, "a site", _there(s), _there(t), hint=STRUCTURE)
        return False

    def plate(self, p, q, addr) -> None:
        self.kinds[addr] = "plate"
        before = len(self.out)  # a total is compared when its terms agree
        if p.size != q.size:
            self.add(addr, addr, "plate size", p.size, q.size, hint=STRUCTURE)
            return
        fresh = None
        if p.n_stale or p.mem_stale:  # stale elements: out of date by design, not compared
            fresh = np.ones(p.size, dtype=bool)
            fresh[p.stale_elements(None, self.old.mems)] = False
        for rel in _union(p.sites, q.sites):
            s, t = p.sites.get(rel), q.sites.get(rel)
            if not self.same_kind(addr, rel, s, t):
                continue
            at = _elem_site(addr, rel)
            if s.lp is not None and t.lp is not None:
                self.columns(addr, at, _values(s.lp), _values(t.lp), fresh, "log-density", PLATE)
            if s.kind == DETERMINISTIC:
                self.columns(addr, at, _values(s.values), _values(t.values), fresh,
                             "deterministic value", PLATE)
        obs = self.obs.get(addr, [])
        what, rel = "log-density of the element", ()
        if len(obs) == 1 and not any(r and r[0] in p.chains for r in obs):
            what, rel = "log-density of the observations", obs[0]
        self.columns(addr, _elem_site(addr, rel), _values(p.elem_lp), _values(q.elem_lp), fresh,
                     what, PLATE)
        if fresh is None and p.lp_sum == p.lp_sum and len(self.out) == before:
            scale = float(np.abs(_values(q.elem_lp)).sum())
            if not _close(p.lp_sum, q.lp_sum, scale):
                self.add(addr, addr, "total log-density of the plate", p.lp_sum, q.lp_sum,
                         hint=TOTALS)
        for rel in _union(p.procs, q.procs):
            s, t = p.procs.get(rel), q.procs.get(rel)
            if s is None or t is None:
                self.add(addr, addr + ("*",) + rel, "a coupled site", _there(s), _there(t),
                         hint=STRUCTURE)
            elif not _close(s.log_prob(), t.log_prob()):
                self.add(addr, addr + ("*",) + rel, "joint log-density of the coupled site",
                         s.log_prob(), t.log_prob(), hint=COUPLED)
        for key in _union(p.mem_keys, q.mem_keys):
            s, t = p.mem_keys.get(key), q.mem_keys.get(key)
            site = _elem_site(addr, ("mem", key[0]))
            if s is None or t is None:
                self.add(addr, addr + ("*",), f"a read of mem {fmt(key[0])}", _there(s),
                         _there(t), hint=STRUCTURE)
            else:
                self.columns(addr, site, _values(s), _values(t), None,
                             f"key read from mem {fmt(key[0])}", PLATE)
        for c in _union(p.chains, q.chains):
            s, t = p.chains.get(c), q.chains.get(c)
            if s is None or t is None or s.T != t.T:
                self.add(addr, addr + ("*",) + c, "a markov chain in the plate",
                         _length(s), _length(t), hint=STRUCTURE)
            else:
                self.plate_chain(s, t, addr, c, fresh)

    def plate_chain(self, s, t, addr, c, fresh) -> None:
        """A chain inside a plate: (N, T, ...) columns per site."""
        for rel in _union(s.sites, t.sites):
            a, b = s.sites.get(rel), t.sites.get(rel)
            if a is None or b is None or not np.array_equal(s.present[rel], t.present[rel]):
                self.add(addr, addr + ("*",) + c + ("*",) + rel, "a site of the chain",
                         _there(a), _there(b), hint=STRUCTURE)
                continue
            for t_ in np.flatnonzero(s.present[rel]).tolist():
                at = _elem_site(addr, c + (t_,) + rel)
                self.columns(addr, at, _values(a.lp)[:, t_], _values(b.lp)[:, t_], fresh,
                             "log-density", CHAIN)
                if a.kind == DETERMINISTIC:
                    self.columns(addr, at, _values(a.values)[:, t_], _values(b.values)[:, t_],
                                 fresh, "deterministic value", CHAIN)

    # -- markov chains ----------------------------------------------------------------------------
    def chain(self, c, d, addr) -> None:
        self.kinds[addr] = "markov chain"
        before = len(self.out)  # a total is compared when its terms agree
        if c.T != d.T:
            self.add(addr, addr, "length of the markov chain", c.T, d.T, hint=STRUCTURE)
            return
        T = c.T
        fresh = None
        if c.n_stale:  # stale steps: out of date by design, not compared
            fresh = _values(c.stamp) >= c.valid_from
        bad = [t for t in range(T) if not _approx(c.states[t], d.states[t])]
        if bad:
            t = bad[0]
            self.add(addr, addr + (t,), "state returned by the step", c.states[t], d.states[t],
                     len(bad) - 1, CHAIN)
        step = lambda rel: lambda t: addr + (t,) + rel  # noqa: E731
        for name in _union(c.sites, d.sites):
            a, b = c.sites.get(name), d.sites.get(name)
            if _at_no_step(a) or _at_no_step(b):  # (a column the trace kept, at no step now)
                a, b = (None if _at_no_step(a) else a), (None if _at_no_step(b) else b)
                if a is None and b is None:
                    continue
            if not self.same_kind(addr, name, a, b):
                continue
            pa = np.ones(T, dtype=bool) if a.present is None else _values(a.present)
            pb = np.ones(T, dtype=bool) if b.present is None else _values(b.present)
            if not np.array_equal(pa, pb):
                if a.kind != LATENT:
                    t = int(np.flatnonzero(pa != pb)[0])
                    self.add(addr, addr + (t,) + name, "a site", bool(pa[t]), bool(pb[t]),
                             hint=STRUCTURE)
                continue
            mask = pa if fresh is None else pa & fresh
            self.columns(addr, step(name), _values(a.lp), _values(b.lp), mask, "log-density",
                         CHAIN)
            if a.kind == DETERMINISTIC:
                self.columns(addr, step(name), _values(a.values), _values(b.values), mask,
                             "deterministic value", CHAIN)
        for t in sorted(set(c.nested) | set(d.nested)):
            if fresh is not None and not fresh[t]:
                continue  # (a stale step's plates and chains are as out of date as it is)
            self.block(c.step_view(t), d.step_view(t), addr + (t,), CHAIN, sites=False)
        self.columns(addr, step(()), _values(c.step_total), _values(d.step_total), fresh,
                     "log-density of the step", CHAIN)
        self.columns(addr, step(()), _values(c.counts), _values(d.counts), None,
                     "number of latent choices of the step", STRUCTURE)
        if fresh is None and len(self.out) == before:
            scale = float(np.abs(_values(d.step_total)).sum())
            if not _close(c.total_lp(), d.total_lp(), scale):
                self.add(addr, addr, "total log-density of the chain", c.total_lp(),
                         d.total_lp(), hint=TOTALS)

    # -- mem tables -------------------------------------------------------------------------------
    def mems(self) -> None:
        for maddr, a in self.old.mems.items():
            self.kinds[maddr] = "mem table"
            before = len(self.out)  # a total is compared when its terms agree
            b = self.new.mems.get(maddr)
            if b is None:
                continue  # its keys are reported as choices a full execution does not make
            for key in a.lp:
                if key in b.lp and not _close(a.lp[key], b.lp[key]):
                    self.add(maddr, maddr + (key,), "log-density", a.lp[key], b.lp[key],
                             hint=MEM)
            ra = {k: r for k, r in a.refs.items() if r > 0}
            rb = {k: r for k, r in b.refs.items() if r > 0}
            for key in _union(ra, rb):
                if ra.get(key, 0) != rb.get(key, 0):
                    self.add(maddr, maddr + (key,), "number of reads", ra.get(key, 0),
                             rb.get(key, 0), hint=READERS)
            for kind, ia, ib in (("plate", a.plate_readers, b.plate_readers),
                                 ("markov chain", a.step_readers, b.step_readers)):
                na, nb = _readers(ia), _readers(ib)
                for node, key in _union(na, nb):
                    x, y = na.get((node, key), []), nb.get((node, key), [])
                    if x != y:
                        self.add(maddr, maddr + (key,), f"readers in {kind} {fmt(node)}",
                                 x, y, hint=READERS)
            scale = float(sum(abs(v) for v in b.lp.values()))
            if len(self.out) == before and not _close(a.total_lp(), b.total_lp(), scale):
                self.add(maddr, maddr, "total log-density of the mem table", a.total_lp(),
                         b.total_lp(), hint=TOTALS)

    # -- the trace --------------------------------------------------------------------------------
    def totals(self) -> None:
        old, new = self.old, self.new
        if old.n_latent != new.n_latent:
            self.add((), (), "number of latent choices |x|", old.n_latent, new.n_latent,
                     hint=TOTALS)
        if not old.stale_nodes and not self.out:  # the terms agree: their sum must too
            a, b = old.known_log_joint(), new.known_log_joint()
            if not _close(a, b, _scale(new)):
                self.add((), (), "log joint", a, b, hint=TOTALS)


def _at_no_step(s) -> bool:
    """Whether a chain's site column exists at no step (a branch no step takes any more)."""
    return s is not None and s.present is not None and not _values(s.present).any()


def _there(x) -> str:
    return "nothing" if x is None else "one"


def _length(cols) -> str:
    return "nothing" if cols is None else f"a chain of length {cols.T}"


def _elem_site(addr, rel):
    return lambda e: addr + (e,) + rel


def _item(a, e):
    v = np.asarray(a)[e] if not isinstance(a, list) else a[e]
    return v.item() if isinstance(v, np.generic) else v


def _readers(index: dict) -> dict:
    """(node, key) → sorted elements or steps, without empty entries."""
    return {(node, key): sorted(members) for node, by in index.items()
            for key, members in by.items() if members}


def _scale(trace) -> float:
    """Σ|terms| of the log joint (the scale of a sum taken in another order)."""
    root = trace.root
    out = sum(abs(s.lp) for s in root.sites.values())
    for node in root.plates.values():
        out += float(np.abs(_values(node.elem_lp)).sum())
        out += sum(abs(p.log_prob()) for p in node.procs.values())
    for node in root.chains.values():
        out += float(np.abs(_values(node.step_total)).sum())
    for table in trace.mems.values():
        out += sum(abs(v) for v in table.lp.values())
    return out
