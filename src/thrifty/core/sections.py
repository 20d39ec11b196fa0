"""What kernels read of the engine beyond a run's log-weight: sections and plates.

A *section* is one element of a plate or one step of a markov chain.  Kernels that weigh
sections one by one — element-wise MH and Gibbs, the sequential test of subsampled MH (000 §3),
the Taylor proxies — read them through this module rather than through the engine's frames and
nodes:

* :func:`run_lp` — the log-densities of sections in a run (under the run's values), with
  :func:`run_values` and :func:`run_q` (a site's values there, the proposal's log-ratios);
* :func:`stored_lp` — those the trace holds (under the current values), and :func:`stale`,
  the sections among them whose stored log-density is out of date (000 §3.5);
* :class:`PlateView` (:func:`plate`) — a plate of a trace as a kernel may see it: its size,
  whether its sites are coupled (a process's draws), a site's distribution and stored values,
  the support of some of its elements (``support_of``), a plan of some elements, a coupled
  site's candidate values;
* :func:`lane_lps`, :func:`lane_choices` — the lanes of a candidate run (one element's
  alternative values scored in one execution);
* :func:`run_plate_lps`, :func:`plate_clock` — every executed element's log-density per
  plate of a run; when a plate last ran;
* :func:`watch_rows`, :func:`executions_since` — a plate's execution log, for kernels that
  keep what its body computed (:mod:`thrifty.core.exec_log`);
* :func:`top_choice` — a top-level choice's value and log-density; :func:`run_observed`, a
  run's top-level observations;
* :func:`memo_density_changes` — memoized values whose density a run changed.

``kind`` is ``"plate"`` (``items`` are element indices) or ``"chain"`` (step indices).

>>> import numpy as np, thrifty as th
>>> from thrifty import dist
>>> from thrifty.core.run import Plan, Run, VecTarget
>>> @th.model
... def m(y):
...     with th.plate("data", len(y)) as i:
...         z = th.sample("z", dist.Bernoulli(probs=0.5))
...         th.observe("y", dist.Normal(2.0 * z - 1.0, 1.0), y[i])
>>> trace = th.simulate(m(np.array([1.0, -1.0, 0.5])), seed=0)
>>> elems = np.array([0, 2])
>>> plan = Plan()
>>> plan.add_elements(("data",), elems)
>>> run = Run(trace, np.random.default_rng(0), plan=plan,
...           vec={(("data",), ("z",)): VecTarget(elems, np.array([1, 1]))}).execute()
>>> new = run_lp(run, "plate", ("data",), elems)
>>> bool(np.isclose(run.log_weight, (new - stored_lp(trace, "plate", ("data",), elems)).sum()))
True
>>> plate(trace, ("data",)).size, plate(trace, ("data",)).coupled
(3, False)
"""

from __future__ import annotations

import numpy as np

from thrifty.core.exec_log import ExecLog, watch_plate
from thrifty.core.locate import enclosing_steps, find_plate, plan_elements, trace_chain
from thrifty.core.mem import FRESH, KEPT
from thrifty.core.run import Run
from thrifty.core.vocab import FACTOR, LATENT, OBSERVED, STRICT, Plan
from thrifty.errors import SelectionError


# -- a run's sections ------------------------------------------------------------------------------
def run_lp(run, kind: str, addr: tuple, items) -> np.ndarray:
    """Log-densities of the sections ``items`` of the plate or chain at ``addr`` in ``run``
    (each executed by it)."""
    items = np.asarray(items)
    if kind == "plate":
        frame = run.plate_frames[addr]
        return frame.elem_lp[frame.positions(items)]
    blocks = run.chain_frames[addr]
    return np.array([blocks[t].total_lp() for t in items.tolist()])


def run_values(run, plate: tuple, rel: tuple, elems) -> np.ndarray:
    """The values ``run`` gave the site ``rel`` of the plate at ``plate`` at elements
    ``elems`` (each executed by it)."""
    frame = run.plate_frames[plate]
    return frame.site_at(rel).values[frame.positions(np.asarray(elems))]


def run_q(run, plate: tuple, elems) -> np.ndarray | None:
    """The proposal's log-ratios log q(old | new) − log q(new | old) of the elements ``elems``
    in ``run`` (values resampled from their prior), or None when it proposed none."""
    frame = run.plate_frames[plate]
    return None if frame.q is None else frame.q[frame.positions(np.asarray(elems))]


def lane_lps(run, plate: tuple) -> np.ndarray:
    """Per lane, the log-density of the element a candidate run scored in lanes
    (:class:`~thrifty.core.vocab.Candidates`): differences between lanes are the log-ratios
    of the element's full conditional at the lanes' values."""
    return run.plate_frames[plate].elem_lp


def lane_choices(run, plate: tuple, lane: int) -> dict:
    """The choices lane ``lane`` of a candidate run read that the run drew afresh (a new
    cluster's memoized parameters), by address: what a run that commits the lane's value is
    given, so that its trace is the one the lane was scored with (Neal 2000, Alg. 8: the
    auxiliary table's parameters are kept when it is chosen)."""
    frame = run.plate_frames[plate]
    out = {}
    for (maddr, _), keys in frame.mem_keys.items():
        k = keys[lane]
        k = k.item() if isinstance(k, np.generic) else k
        entry = run.mem_journals[maddr].entries.get(k)
        if entry is not None and entry.status == FRESH:
            out[maddr + (k,)] = entry.value
    return out


# -- a trace's sections ----------------------------------------------------------------------------
def stored_lp(trace, kind: str, addr: tuple, items) -> np.ndarray:
    """Log-densities of the sections ``items`` as the trace holds them (stale ones included:
    see :func:`stale`)."""
    if kind == "plate":
        return find_plate(trace, addr).elem_lp.take(np.asarray(items))
    return trace_chain(trace, addr).step_lp(items)


def stale(trace, kind: str, addr: tuple, items) -> np.ndarray:
    """The sections among ``items`` whose stored log-density is out of date."""
    if kind == "plate":
        return find_plate(trace, addr).stale_elements(np.asarray(items), trace.mems)
    return trace_chain(trace, addr).stale_steps(items)


class PlateView:
    """A plate of a trace as a kernel sees it (read-only; see the module docstring)."""

    __slots__ = ("_node", "_steps", "_trace", "addr")

    def __init__(self, trace, addr: tuple):
        self.addr = addr
        self._trace = trace
        self._steps = enclosing_steps(trace, addr)
        self._node = find_plate(trace, addr, self._steps)

    def plan(self, elems) -> Plan:
        """A plan that runs the elements ``elems`` of this plate (and the markov steps that
        enclose it)."""
        plan = Plan()  # (plan_elements with the enclosing steps known, without its call)
        plan.add_elements(self.addr, elems)
        for chain, t in self._steps:
            plan.add_step(chain, t)
        return plan

    @property
    def size(self) -> int:
        return self._node.size

    @property
    def coupled(self) -> bool:
        """Whether some site of the plate is coupled across elements (a process's draws,
        collapsed observations): then its elements are not conditionally independent."""
        return bool(self._node.procs)

    def is_coupled(self, rel: tuple) -> bool:
        """Whether the site ``rel`` holds a process's draws."""
        site = self._node.site(rel)
        return site is not None and site.dist is not None and bool(site.dist.coupled)

    def dist(self, rel: tuple):
        """The distribution the site ``rel`` was last executed under, or None: its family and
        shapes (it may be of the elements of the last run only: for a support, see
        :meth:`support_of`)."""
        site = self._node.site(rel)
        return None if site is None else site.dist

    def support_of(self, rel: tuple, elems=None):
        """A distribution of the site ``rel`` whose support is that of the elements ``elems``
        (``None``: every element, its entries in element order; one element: that element's
        own; several: a distribution covering each's — values outside one's support score
        −∞ there).  A plate's stored distribution is that of its last run, which may have
        executed other elements; it serves when its family's support does not depend on the
        parameters (``support_varies``) or when that run executed these elements; otherwise
        the elements are executed as they are now (a strict replay, never committed, on a
        generator of its own) for theirs."""
        site = self._node.site(rel)
        d = site.dist
        if d is None or not d.support_varies:
            return d
        have = site.dist_elems  # (None: the last run executed every element)
        if elems is None:
            if have is None:
                return d
        else:
            want = np.asarray(elems).reshape(-1)
            if len(want) == 1:
                one = site.member_dist(int(want[0]))
                if one is not None:
                    return one
            elif have is None or np.isin(want, have).all():
                return d  # (covering a superset of them: values outside one's support score −∞)
        return _executed(self._trace, self.addr, self._steps,
                         np.arange(self.size) if elems is None else want).site_at(rel).dist

    def discrete(self, rel: tuple) -> bool:
        return bool(self._node.site(rel).discrete)

    def values(self, rel: tuple, elems) -> np.ndarray:
        """The stored values of the site ``rel`` at elements ``elems``."""
        return self._node.site(rel).take(np.asarray(elems))

    def value(self, rel: tuple, e: int):
        """The stored value of the site ``rel`` at element ``e`` (a Python scalar for a site
        of scalars)."""
        return self._node.site(rel).values.get(e)

    def candidates(self, rel: tuple, current) -> list:
        """The values a Gibbs update of a process's draw weighs (its state's candidates: for a
        CRP, the occupied tables and a new one)."""
        return self._node.procs[rel].candidates(current)


def _executed(trace, addr, steps, elems):
    """The frame of the plate at ``addr`` (enclosed by the markov ``steps``) in a replay of its
    elements ``elems`` — strict, never committed, on a generator of its own."""
    plan = plan_elements(trace, Plan(), addr, elems, steps)
    run = Run(trace, np.random.default_rng(0), plan=plan, mode=STRICT).execute()
    return run.plate_frames[addr]


def plate(trace, addr: tuple) -> PlateView:
    """The :class:`PlateView` of the plate at ``addr``."""
    return PlateView(trace, addr)


def top_choice(trace, addr: tuple):
    """``(value, log-density)`` of the top-level latent choice at ``addr``, or None."""
    return trace.root.value_lp(addr)


def run_observed(run) -> dict:
    """The top-level observations and factors of ``run``: address → log-density."""
    return {k: s.lp for k, s in run.root.sites.items() if s.kind in (OBSERVED, FACTOR)}


def top_site(trace, addr: tuple):
    """The record (value, log-density, distribution, kind) of the top-level site at ``addr``,
    or None."""
    return trace.root.get_site(addr)


def top_discrete(trace, addr: tuple) -> bool:
    """Whether the top-level choice at ``addr`` is discrete."""
    return bool(trace.root.get_site(addr).discrete)


def chains(trace, latent: bool = False) -> list[tuple]:
    """The markov chains at the top level and in top-level plates: ``(plate address or None,
    chain address within it)`` for each (``latent``: those that hold a latent choice)."""
    root = trace.root
    return [(None, c) for c, node in root.chains.items() if not latent or node.n_latent] + [
        (p, c) for p, node in root.plates.items() for c, cols in node.chains.items()
        if not latent or any(s.kind == LATENT for s in cols.sites.values())]


def chain_column(trace, chain: tuple, rel: tuple, who: str) -> tuple:
    """``(values, dists)`` of the latent site ``rel`` of the top-level markov chain at
    ``chain``: its values over the T steps (a (T, ...) array) and each step's distribution.
    SelectionError (naming ``who``) when there is no such chain or site, or the site is
    missing from some steps."""
    node = trace.root.chains.get(chain)
    site = node.sites.get(rel) if node is not None else None
    name = ".".join(map(str, chain + rel))
    if site is None or site.kind != LATENT:
        raise SelectionError(f"{who}: no latent site {name!r} of a top-level markov chain")
    if site.present is not None and not site.present.array().all():
        raise SelectionError(f"{who}: the site {name!r} is not present in every step")
    return np.asarray(site.values.array()), list(site.dists.array())


def plate_chain_column(trace, plate: tuple, chain: tuple, rel: tuple, who: str) -> tuple:
    """``(values, dists)`` of the latent site ``rel`` of the markov chain ``chain`` inside the
    top-level plate ``plate``: its values over the elements and steps (an (N, T, ...) array)
    and each step's distribution (over the elements).  SelectionError (naming ``who``) when
    there is no such chain or site, or the site is missing from some steps."""
    node = trace.root.plates.get(plate)
    cols = node.chains.get(chain) if node is not None else None
    site = cols.sites.get(rel) if cols is not None else None
    name = ".".join(map(str, plate + chain + rel))
    if site is None or site.kind != LATENT:
        raise SelectionError(f"{who}: no latent site {name!r} of a markov chain in a plate")
    if not cols.present[rel].all():
        raise SelectionError(f"{who}: the site {name!r} is not present in every step")
    dists = list(cols.dists[rel])
    if cols.dist_elems is not None and any(d.support_varies for d in dists):
        # (the last run executed some elements only: each step's over every element, now)
        steps = _executed(trace, plate, (), np.arange(node.size)).new_chains[chain]
        dists = [sf.new[rel].dist for sf in steps]
    return np.asarray(site.values.array()), dists


def chain_states(trace) -> dict:
    """The latent states of each markov chain — at the top level or in a top-level plate —
    whose steps all hold the same choices: chain name → (its length: T, or (N, T) in a plate
    of N elements; {site name: discrete in some step})."""
    out = {}
    root = trace.root
    for caddr, node in root.chains.items():
        if not node.uniform():
            continue
        name = ".".join(map(str, caddr))
        out[name] = (node.T, {
            ".".join(map(str, caddr + rel)): any(bool(getattr(d, "is_discrete", True))
                                                for d in node.sites[rel].dists.array())
            for rel in node.latent_sites()})
    for paddr, pnode in root.plates.items():
        for crel, cols in pnode.chains.items():
            latent = [rel for rel, s in cols.sites.items() if s.kind == LATENT]
            if not all(cols.present[rel].all() for rel in latent):
                continue
            out[".".join(map(str, paddr + crel))] = ((pnode.size, cols.T), {
                ".".join(map(str, paddr + crel + rel)): any(
                    bool(getattr(d, "is_discrete", True)) for d in cols.dists[rel])
                for rel in latent})
    return out


def chain_references(trace, chain: tuple, who: str):
    """The current trajectories of the markov chain at ``chain`` — at the top level or in a
    top-level plate — as particle Gibbs reads them: ``(plate address or None, chain address
    within it, T, refs)`` with ``refs[t][site]`` the values of step t's latent sites, with a
    leading axis of groups (1 for a top-level chain, the plate's elements for a chain in a
    plate).  SelectionError (naming ``who``) when there is no such chain or its steps do not
    all have the same choices."""
    name = ".".join(map(str, chain))
    root = trace.root
    node = root.chains.get(chain)
    if node is not None:
        if not node.uniform():
            partial = [".".join(map(str, chain + k)) for k, s in node.sites.items()
                       if s.present is not None and not s.present.array().all()]
            if partial:
                raise SelectionError(
                    f"{who}: in the chain {name!r} its site {partial[0]!r} is not present in "
                    "every step; particle Gibbs needs the same choices in every step"
                )
            t, (in_plates, in_chains, _) = next(iter(node.nested.items()))
            inner = [*in_plates, *in_chains]
            what = "plate" if in_plates else "chain"
            raise SelectionError(
                f"{who}: step {t} of the chain {name!r} holds a {what} of its own "
                f"({'.'.join(map(str, chain + (t,) + tuple(inner[0])))}); particle Gibbs runs "
                "a step once over all its particles and does not run plates or chains nested "
                "in a step: give the step's observations a trailing axis instead of a plate "
                "(one th.observe of a vector y[t] with parameters of that shape)"
            )
        cols = {k: node.sites[k].values.array() for k in node.latent_sites()}
        return None, chain, node.T, [{k: v[t][None] for k, v in cols.items()}
                                     for t in range(node.T)]
    for k in range(1, len(chain)):
        plate_addr, local = chain[:k], chain[k:]
        pnode = root.plates.get(plate_addr)
        cc = pnode.chains.get(local) if pnode is not None else None
        if cc is not None:
            cols = {}
            for rel, site in cc.sites.items():
                if site.kind != LATENT:
                    continue
                if not np.all(cc.present[rel]):
                    raise SelectionError(f"{who}: the site {rel} of chain {name!r} is not "
                                         "present in every step")
                cols[rel] = site.values.array()
            return plate_addr, local, cc.T, [{k2: v[:, t] for k2, v in cols.items()}
                                             for t in range(cc.T)]
    names = [".".join(map(str, (p or ()) + c)) for p, c in chains(trace)]
    raise SelectionError(
        f"{who}: no markov chain {name!r} at the top level or in a top-level plate; the "
        f"program's chains are {names}"
    )


def run_plate_lps(run) -> dict:
    """Per plate the run executed: the log-densities of its executed elements, in order."""
    return {addr: frame.elem_lp for addr, frame in run.plate_frames.items()}


def plate_clock(trace, addr: tuple) -> int:
    """The trace clock of the newest commit that executed elements of the plate at ``addr``
    or left some stale (O(1): kept by the engine); the data its body computes can have changed
    only then.  KeyError when there is no such plate."""
    node = find_plate(trace, addr)
    return max(node.exec_clock, node.valid_from)


def plate_sizes(trace) -> dict:
    """Top-level plates' sizes, by address."""
    return {addr: node.size for addr, node in trace.root.plates.items()}


def latent_sites(trace) -> dict:
    """name → (distribution, discrete) of the latent sites at the top level and in top-level
    plates (a plate site once, named ``plate.site``; chain steps and memoized values apart)."""
    out = {}
    root = trace.root
    for local, site in root.sites.items():
        if site.kind == LATENT:
            out[".".join(map(str, local))] = (site.dist, bool(site.discrete))
    for paddr, node in root.plates.items():
        for rel, col in node.sites.items():
            if col.kind == LATENT:
                out[".".join(map(str, paddr + rel))] = (col.dist, bool(col.discrete))
    return out


def memo_names(trace) -> list:
    """The names of the trace's memoized functions (``"w"`` for ``th.mem("w", ...)``)."""
    return [".".join(map(str, m)) for m in trace.mems]


def memo_families(trace) -> dict:
    """Name → (the distribution one of its values was scored under, or None when it holds no
    value, and whether its values are discrete) of each of the trace's memoized functions."""
    return {".".join(map(str, m)): (next(iter(t.dist.values()), None), t.discrete)
            for m, t in trace.mems.items()}


def top_values(trace, kind) -> list:
    """The values of the top-level sites of ``kind`` (e.g. deterministic values)."""
    return [s.value for s in trace.root.sites.values() if s.kind == kind]


def memo_density_changes(run) -> list[tuple]:
    """The memoized values whose density ``run`` changed without re-drawing them (their
    prior's parameters moved): ``(address of the mem table, key)`` for each."""
    return [(j.addr, key) for j in run.mem_journals.values() for key, e in j.entries.items()
            if e.status == KEPT and e.lp != e.old_lp]


def watch_rows(trace, plate: tuple, obs_rel: tuple) -> ExecLog:
    """Start logging the executions of the plate at ``plate`` with its observation
    ``obs_rel`` (:func:`thrifty.core.exec_log.watch_plate`); returns the mark to read from."""
    return watch_plate(find_plate(trace, plate), obs_rel)


def executions_since(trace, plate: tuple, obs_rel: tuple, seen: ExecLog, maddr, clock: int):
    """The entries of the plate's log newer than ``seen`` (newest first) and the log's head,
    or None when the log cannot vouch for the rows of the elements not in them: the plate or
    its watch is gone, an entry is of another lineage or of every element or left elements
    stale, or another memoized value (not at ``maddr``) its elements read changed lazily after
    ``clock``."""
    try:
        node = find_plate(trace, plate)
    except KeyError:
        return None
    if obs_rel not in node.watch_obs:
        return None
    entry, new = node.exec_log, []
    while entry is not seen:
        if entry is None or entry.idx is None or entry.dirty:
            return None  # another lineage; every element; stale elements
        if len(entry.idx):  # (not a mark)
            new.append(entry)
        entry = entry.prev
    if node.mem_stale:  # another memoized value its elements read, changed lazily
        for addr, _ in node.mem_keys:
            table = trace.mems.get(addr)
            if addr != maddr and table is not None and table.lazy_clock > clock:
                return None
    return new, node.exec_log
