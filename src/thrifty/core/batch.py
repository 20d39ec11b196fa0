"""The batched executor: one execution of a body, vectorized over n *members*.

A :class:`BatchFrame` runs a body (a plate's, or a markov step inside a plate) once for an index
array of members — plate elements today, particles in the particle methods — with

* per-member targets (proposed values for some members: :meth:`BatchFrame.target_for`);
* per-member latent and observation log-densities kept apart (``lat_lp``, ``obs_lp``);
* the replay decision of :mod:`thrifty.core.replay` applied member-wise (strict mode included);
* per-member proposal corrections ``q`` (log q_rev − log q_fwd of resampled targets).

A site's distribution has batch shape ``()`` (shared by the members) or a leading axis of
length n (one per member); its value has one entry per member.  The *accumulating* frame (the
body's outermost frame, ``acc``) holds the members and the totals; frames of markov steps inside
the body share it.  Subclasses say what the members are: their addresses (for errors), where
their targets come from, and what happens at the end (:mod:`thrifty.core.plate`).
"""

from __future__ import annotations

import numpy as np

from thrifty.core import coupled, sites
from thrifty.core.address import ONE_PART, as_name, fmt
from thrifty.core.replay import SET, BatchLanes
from thrifty.core.vocab import (
    DETERMINISTIC,
    FACTOR,
    INF,
    LATENT,
    NEG_INF,
    OBSERVED,
    Unchanged,
    check_dist,
    infinite_error,
    outside_support,
    readonly,
    total,
)
from thrifty.errors import ModelError, NumericalError

_F64 = np.dtype(np.float64)


class MemberSite:
    """A site over the members of a batch: values (n, ...) and log-densities (n,)."""

    __slots__ = ("discrete", "dist", "kind", "lp", "values")

    def __init__(self, values, lp, kind, discrete=False, dist=None):
        self.values = values
        self.lp = lp
        self.kind = kind
        self.discrete = discrete
        self.dist = dist


class BatchFrame:
    """Executes a body over the members of its accumulating frame (see the module docstring).

    ``old`` is the store of the members' previous values (``old.get(local)`` → a
    :class:`MemberSite` aligned with the members, or ``None``); ``rel`` the address of this body
    relative to a member.
    """

    scope = ()
    strict = False  # replay strictly whatever the run's mode (a pinned step: never redraw)
    lanes = False  # the members are lanes of one element with candidate values (Candidates)
    # totals of the accumulating frame (class defaults; a frame sets its own as it goes)
    lat_lp: np.ndarray | None = None  # per member: latent log-densities
    obs_lp: np.ndarray | None = None  # per member: observations and factors
    q: np.ndarray | None = None  # per member: log q_rev − log q_fwd of resampled targets
    lp_total = lp_fresh = lp_stale = q_fwd = q_rev = 0.0
    n_fresh = n_stale = mem_calls = 0
    coupled: dict | None = None  # rel → CoupledSite (plates only: thrifty.core.coupled)
    fresh_node = False  # a plate's first execution (every element, none stored yet)
    watch: frozenset | None = None  # a plate's watched observations (thrifty.core.exec_log)
    keeps_observed = False  # observations are sites of ``new`` too (a chain step's members)
    obs_names: set | None = None  # the accumulating frame's observations (``rel``), by name
    # the run is an MH proposal: a resampled member's prior densities are its q terms (a
    # particle run weighs its members by their observations instead, and keeps none)
    proposal_terms = True
    # the members are particles of one program (003 §3), not elements: observed values, and
    # parameters without a leading axis of the members, are the same for every member — as in
    # a run of one particle, a distribution of batch shape (k,) draws a k-vector per member
    shared_data = False

    def __init__(self, run, acc, rel: tuple, old):
        self.run = run
        self._acc = acc  # (None: this frame accumulates — not held as itself: a reference
        # cycle would keep a dropped frame, its sites and arrays until the garbage collector)
        self.rel = rel
        self.old = old
        self.new: dict[tuple, MemberSite] = {}
        self.changed: set = set()

    # -- the accumulating frame ---------------------------------------------------------------
    @property
    def acc(self) -> BatchFrame:
        acc = self._acc
        return self if acc is None else acc

    def init_members(self, n: int) -> None:
        """Make this frame the accumulating frame of ``n`` members."""
        self.n = n
        self.new_chains: dict[tuple, list] = {}
        self.mem_keys: dict[tuple, np.ndarray] = {}

    def stored_member_dist(self, local, j: int):
        """Member ``j``'s distribution of ``local`` in the trace the run replays, as the
        accumulating frame has it (a chain step's in a plate: the plate's, at the step)."""
        acc = self._acc
        return None if acc is None else acc.stored_member_dist(self.rel + local, j)

    # member addressing and targets: supplied by subclasses
    def member_addr(self, j: int, rel: tuple) -> tuple:
        raise NotImplementedError

    def generic(self, rel: tuple) -> tuple:
        raise NotImplementedError

    def require_full(self, what: str, rel: tuple) -> None:
        pass

    def generic_all(self, rel: tuple) -> tuple:
        """The address of ``rel`` in every member (``"*"`` in place of the member)."""
        raise NotImplementedError

    def member_indices(self) -> np.ndarray:
        raise NotImplementedError

    def obs_key(self, rel: tuple):
        """Key of the observation ``rel`` in ``trace.obs_values`` (simulated observations)."""
        raise NotImplementedError

    def take_members(self, stored):
        """The members' entries of an array over all possible members."""
        raise NotImplementedError

    def target_for(self, rel: tuple):
        """``(positions, values or RESAMPLE)`` of the targeted members at ``rel``, or None."""
        return None

    def target(self, rel: tuple):
        """The targets of this frame's site ``rel``: the accumulating frame's (a frame with a
        policy of its own — a step of conditional SMC — says otherwise)."""
        return (self._acc or self).target_for(rel)

    def total_member_lp(self) -> np.ndarray:
        """Per-member log-density of the execution (latent + observed)."""
        lat, obs = self.lat_lp, self.obs_lp
        if lat is None and obs is None:
            return np.zeros(self.n)
        if lat is None:
            return obs
        if obs is None:
            return lat
        return lat + obs

    def note_fresh(self, rel, count) -> None:
        self.run.note_fresh(self.generic_all(rel), count)

    def note_stale(self, rel, count) -> None:
        self.run.note_stale(self.generic_all(rel), count)

    def add_q(self, pos, dq) -> None:
        if self.q is None:
            self.q = np.zeros(self.n)
        self.q[pos] += dq

    def _add(self, which: str, lp: np.ndarray, s: float, owned: bool = False) -> None:
        """Accumulate per-member log-densities (``owned``: ``lp`` is nobody else's array)."""
        self.lp_total += s
        cur = getattr(self, which)
        if cur is None:
            setattr(self, which, lp if owned else lp.copy())
        else:
            cur += lp

    def member_lp(self, lp, rel, what, value=None, d=None) -> np.ndarray:
        """Per member, the log-density ``lp`` of a site (``value``, ``d``: an observation's)."""
        n = self.n
        if (type(lp) is np.ndarray and lp.dtype is _F64 and lp.ndim == 1 and lp.shape[0] == n
                and not self.shared_data):
            return lp  # (one per member already: the usual case, as the checks below find it)
        lp = np.asarray(lp, dtype=float)
        if lp.ndim == 0:
            return np.full(n, float(lp))
        if self.shared_data and what != "sample" and (
                d is None or n == 1 or lp.ndim <= (value.ndim if type(value) is np.ndarray
                                                   else np.ndim(value))
        ) and self._shared_lp(lp, rel, value, d):  # (more axes than the value: the members')
            return np.full(n, np.add.reduce(lp, axis=None))
        if lp.shape[0] != n:
            raise ModelError(
                f"shape mismatch in {self.where()} at {what} {fmt(self.generic(rel))}: "
                f"log-density of shape {lp.shape} for {n} executed element(s)"
            )
        if lp.ndim == 2:  # (n, k) → (n,)
            lp = np.add.reduce(lp, axis=1)
        elif lp.ndim > 2:  # (n, ...) → (n,); n may be 0 (a run of no element)
            lp = lp.sum(axis=tuple(range(1, lp.ndim)))
        return lp

    def _shared_lp(self, lp, rel, value, d) -> bool:
        """Whether a factor's or an observation's log-density, in a batch whose observed values
        are shared (``shared_data``), is one term shared by the members (a run of one member
        sums it): a factor's without an axis of length n; an observation's of exactly the axes
        of the observed value (the members' parameters add their axis in front).  An axis of
        length n elsewhere cannot be told from the members' (a parameter of the members
        broadcast against the value's last axis, or a value of each member's own): an error."""
        n = self.n
        if n == 1:
            return True
        if d is None:
            if lp.shape[0] == n:
                return False
            shared = n not in lp.shape
        else:
            vb = value.shape if type(value) is np.ndarray else np.shape(value)
            es = d.event_shape
            if len(es):
                vb = vb[: len(vb) - len(es)]
            if lp.shape != vb:
                return False  # (one per member; else the shape check below refuses it)
            shared = n not in vb
        if shared:
            return True
        what = "factor" if d is None else "observation"
        raise ModelError(
            f"{what} {fmt(self.generic(rel))} in {self.where()}: its log-density has shape "
            f"{lp.shape}, with an axis of length {n} that may be the {n} members' or the "
            "observed data's — the members' own terms cannot be told from terms they share. In "
            "a particle step, give per-particle parameters a leading particle axis (x[:, "
            "None], not np.array([x])); observed values are shared by the particles (score "
            "a value of each particle's own with th.factor); with data of an axis of length "
            f"{n}, run another number of particles"
        )

    def shape_code(self, d, rel, what) -> int:
        """0: parameters shared by the members; 1: one per member; 2: a broadcast axis of 1
        (members that are particles: :meth:`_particle_code`)."""
        n = self.n
        bs = d.batch_shape
        if len(bs) == 0:  # (not ``not bs``: an array-API family's shape is never false)
            return 0
        if bs[0] == n:
            return 1
        if bs[0] == 1:
            return 2
        raise ModelError(
            f"shape mismatch in {self.where()} at {what} {fmt(self.generic(rel))}: "
            f"{type(d).__name__} has batch shape {tuple(bs)} but the plate is executing {n} "
            f"element(s); parameters must be scalars or have a leading axis of length {n} "
            "(index your data with the plate's index)"
        )

    def _particle_code(self, d, rel, what, frame, local) -> int:
        """:meth:`shape_code` where the members are particles (``shared_data``): parameters
        without an axis of the members are shared, and every member draws a value of their
        whole batch shape, as a particle run alone does (003 §3); one member's value's shape,
        when the site's ``frame`` knows it (a reference), tells shared parameters from the
        members' where the shapes alone cannot (n = 1, or k = n)."""
        n, bs = self.n, d.batch_shape
        if type(bs) is not tuple:
            bs = tuple(bs)
        if bs[0] != n and (n == 1 or n not in bs):  # (no axis of the members)
            return 0
        ref = frame.ref_values  # (a reference's value: one member's shape)
        v = None if ref is None else ref.get(local)
        if v is not None:
            vs, es = v.shape if type(v) is np.ndarray else np.shape(v), d.event_shape
            if len(vs) == 1 + len(bs) + len(es) and vs[1:] == bs + tuple(es):
                return 0
        if bs[0] == n:
            return 1
        raise ModelError(
            f"shape mismatch in {self.where()} at {what} {fmt(self.generic(rel))}: "
            f"{type(d).__name__} has batch shape {bs}, with an axis of the {n} members that is "
            "not its leading axis; give per-particle parameters a leading particle axis "
            "(x[:, None], not np.array([x]))"
        )

    def where(self) -> str:
        return "a batch"

    def shape_note(self) -> str:
        """What a shape error in this batch should add about how it runs (nothing here)."""
        return ""

    def check_observed_shape(self, rel, d, value) -> None:
        """An observed value has one entry per member (plates: data indexed by the plate's
        index), each of the shape of one of the distribution's values: an observed value
        with more (or other) axes per member than the distribution's is refused, not broadcast
        into several observations per member (as NumPyro and Pyro refuse a batch shape that
        does not match the plate)."""
        shape = value.shape if type(value) is np.ndarray else np.shape(value)
        if not shape:
            return
        if shape[0] != self.n:
            if len(d.batch_shape) and len(shape) <= len(d.event_shape):
                return  # one value shared by the members
            raise ModelError(
                f"shape mismatch in {self.where()} at observation {fmt(self.generic(rel))}: "
                f"observed value of shape {shape} for {self.n} executed element(s); index the "
                f"data with the plate's index{self.shape_note()}"
            )
        if len(shape) == 1 and len(d.batch_shape) <= 1 and not d.event_shape:
            return  # (one number per member, of a distribution of numbers: the usual case)
        bs, es = tuple(d.batch_shape), tuple(d.event_shape)
        per = bs[1:] + es if bs else es  # the shape of one member's value
        if shape[1:] == per or shape == bs + es:
            return
        if len(shape) - 1 == len(per):
            try:
                if np.broadcast_shapes(per, shape[1:]) == shape[1:]:
                    return  # axes of length 1 in the parameters, broadcast
            except ValueError:
                pass
        raise ModelError(
            f"shape mismatch at observation {fmt(self.generic(rel))}: each element's observed "
            f"value has shape {shape[1:]} (data of shape {shape} for {self.n} executed "
            f"element(s) of {self.where()}), but {d!r} draws values of shape {per} per element "
            f"(batch shape {bs}, event shape {es}). To observe values of shape {shape[1:]} per "
            "element, give the distribution parameters with those axes (e.g. mu * "
            f"np.ones(y[i].shape)) or a distribution with that event shape{self.shape_note()}"
        )

    def check_data_length(self, rel, value) -> None:
        """At the program's first execution (every plate in full): note which rows of an
        argument of the program the observed value holds; at the end of the run, an argument
        some of whose rows no plate observed, read from its first row by a plate of another
        length, is an error (:func:`check_data_rows`) — ``y[i]`` of ``y`` of
        length 4 under a plate of 3 would observe 3 of the 4 points (NumPyro refuses the same
        mismatch), while plates over ``y[:10]`` and ``y[10:]`` observe them all.
        O(number of arguments), once per plate."""
        run = self.run
        if run.trace.clock:  # (the program's first execution sees every plate at once)
            return
        found = run.trace.program.rows_of(value)
        for name, length, start in found:  # (several: arguments sharing memory — each one
            # must be right, since thrifty cannot tell which of them the model indexed)
            shared = tuple(other for other, _, _ in found if other != name)
            view = (start, self.n, length, self.where(), fmt(self.generic_all(rel)), shared)
            if start + self.n > length:  # past the data's end: no other plate can make it right
                check_data_rows({name: [view]})
            run.data_rows.setdefault(name, []).append(view)

    def _check_observed(self, lp, rel, d, value) -> float:
        """``lp.sum()``; NaN → error naming the member; an observation outside the family's
        domain → error naming the member."""
        s = lp.item() if type(lp) is np.ndarray and lp.size == 1 else total(lp)  # (total's)
        if NEG_INF < s < INF:
            return s
        if np.isposinf(lp).any() and not np.isnan(lp).any():
            j = int(np.flatnonzero(np.isposinf(lp))[0])
            v = np.asarray(value)
            raise infinite_error(self.member_addr(j, rel), d, v if v.ndim == 0 else v[j])
        bad = np.isnan(lp)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise NumericalError(
                f"log-density is NaN at address {fmt(self.member_addr(j, rel))}: {d!r}"
            )
        j = int(np.flatnonzero(np.isneginf(lp))[0])
        v = np.asarray(value)
        vj = v if v.ndim == 0 else v[j]
        if not d.in_domain(vj):
            raise outside_support(self.member_addr(j, rel), d, vj)
        self.run.note_impossible(self.member_addr(j, rel), d, vj)
        return s

    # -- names ----------------------------------------------------------------------------------
    def site_name(self, name) -> tuple:
        local = ONE_PART.get(name) if type(name) is str else None  # (a name met before)
        if local is None:
            local = as_name(name)
        if self.scope:
            local = self.scope + local
        if local in self.new or (self._acc is None and local in self.new_chains):
            acc = self.acc
            raise ModelError(f"address {fmt(acc.member_addr(0, self.rel + local))} is used twice")
        return local

    # -- the primitives (thrifty.core.sites) and this executor's policy of them -----------------
    sample = sites.sample
    observe = sites.observe
    factor = sites.factor
    deterministic = sites.deterministic

    def site_lanes(self, local, d, what):
        """The accumulating frame's members, at ``rel + local`` (their parameters: shared, or
        one row per member)."""
        rel = self.rel + local
        acc = self._acc
        if acc is None:  # (the acc property's work, on the path of every site)
            acc = self
        if d is None:  # (a factor)
            return BatchLanes(acc, rel, None)
        if d._error is not None:
            check_dist(d, acc.generic(rel), acc.run)
        lanes = BatchLanes(acc, rel, acc._particle_code(d, rel, what, self, local)
                           if acc.shared_data and len(d.batch_shape) else
                           acc.shape_code(d, rel, what))
        if self.strict:
            lanes.strict = True
        return lanes

    # site → the references' values (G, ...) when the frame has references (conditional SMC):
    # one member's value's shape, which tells shared parameters from the members'
    ref_values: dict | None = None

    def site_stored(self, local, lanes):
        old = self.old.get(local) if self.old is not None else None
        if old is None or old.kind != LATENT:
            return None
        return old.values, old.lp

    def site_target(self, local, lanes):
        return self.target(lanes.rel)  # (target: what a step of conditional SMC overrides)

    @property
    def sink(self):
        acc = self._acc
        return self if acc is None else acc

    def keep_latent(self, local, lanes, d, value, lp, status, old):
        acc = lanes.frame  # (the accumulating frame: site_lanes)
        # lp's sum as its check (BatchLanes.finite, check_nan) computed it, if it checked this
        # very array (the replay decision returns it to be kept, never written in place)
        s = lanes.summed
        acc.lp_total += float(s[1]) if s is not None and s[0] is lp else total(lp)
        if acc.lat_lp is None:  # (``_add("lat_lp", ...)``, inline: one per site)
            acc.lat_lp = lp.copy()
        else:
            acc.lat_lp += lp
        self.new[local] = MemberSite(value, lp, LATENT, d.is_discrete, d)
        if status:
            if status == SET and self.run.identity and old is not None and acc.n == 1 and (
                    value.tolist() == old[0].tolist() and lp.tolist() == old[1].tolist()):
                raise Unchanged  # (one element's one proposed choice: see BlockFrame)
            self.changed.add(local)
        return value

    def keep_observed(self, local, lanes, d, value, lp, total):
        acc = lanes.frame  # (the accumulating frame: site_lanes)
        if d is None or self.keeps_observed:  # (kept: the totals get their own copy)
            self.new[local] = MemberSite(None, lp, OBSERVED if d is not None else FACTOR)
            acc._add("obs_lp", lp, total)
        else:  # (``_add``, inline)
            acc.lp_total += total
            if acc.obs_lp is None:
                acc.obs_lp = lp if lp.flags.writeable and lp.base is None else lp.copy()
            else:
                acc.obs_lp += lp
            names = acc.obs_names  # (names only: the layout, thrifty.core.layout)
            if names is None:
                acc.obs_names = {lanes.rel}
            else:
                names.add(lanes.rel)
        if d is not None and acc.watch and lanes.rel in acc.watch:  # a watched observation
            acc.watched[lanes.rel] = (d, value)

    def keep_value(self, local, value) -> None:
        v = np.asarray(value)
        n = self.acc.n
        if v.ndim == 0 or v.shape[0] != n:
            v = np.broadcast_to(v, (n,) + v.shape).copy()
        self.new[local] = MemberSite(v, None, DETERMINISTIC)
        self.changed.add(local)

    def sample_process(self, local, d):
        """A draw of a coupled process (:mod:`thrifty.core.coupled`): exchangeable, not
        independent — its sites' values move together through the process's state."""
        value, changed = coupled.sample(self, local, self.rel + local, d)
        value = readonly(value)
        self.new[local] = MemberSite(value, np.zeros(self.acc.n), LATENT, True, d)
        if changed:
            self.changed.add(local)
        return value

    def observe_process(self, local, d, value):
        """An observation of a collapsed family: coupled through its statistics."""
        return coupled.observe(self, local, self.rel + local, d, value)

    def mem_read(self, mem, keys):
        return self.run.mem_read_batch(self, mem, keys)

    def plate(self, name, size):
        raise ModelError(
            f"plate {name!r} inside {self.acc.where()}: nested plates are not supported; "
            "give the inner plate's sites a trailing axis instead"
        )

    markov = sites.markov

    def chain(self, local, step, length, init, args):
        if self is not self.acc:
            raise ModelError("a markov chain cannot be nested inside a markov step")
        return self.run.run_batch_chain(self, local, step, length, init, args)


def check_data_rows(data_rows: dict) -> None:
    """A plate of n elements whose observation reads the first n rows of an argument of L ≠ n
    rows is an error unless the plates of the run observe every row of it (``y[:10]`` and
    ``y[10:]``): else the other rows would silently not be observed; so is a plate reading
    past the data's end.  ``data_rows``: argument → (start row, plate size, length, plate,
    observation, other arguments whose memory holds the same rows) of each plate's first
    execution."""
    for name, views in data_rows.items():
        length = views[0][2]
        covered = np.zeros(length, dtype=bool)
        for start, n, *_ in views:
            covered[start : start + n] = True
        for start, n, _, where, obs, shared in views:
            if start + n > length:
                what = (f"reads {name}, which has only {length} rows" if start == 0 else
                        f"reads rows {start} to {start + n - 1} of {name}, which has {length}")
            elif start == 0 and n < length and not covered.all():
                what = (f"reads the first {n} rows of {name}, which has {length}: the "
                        f"other {int((~covered).sum())} would not be observed")
            else:
                continue
            also = ""
            if shared:
                also = (f" (The observed rows are also those of {', '.join(shared)}, whose "
                        "memory they share: data are read by position, and thrifty cannot "
                        "tell which argument the model indexed — if it is the other one, pass "
                        "it as a copy, e.g. y[:-1].copy().)")
            raise ModelError(
                f"{where} has {n} element(s), but its observation {obs} {what}. Give the "
                "plate the data's length (th.plate(name, len(data))), or pass only the rows "
                "to observe as the program's argument (data[:n]); rows selected in the model "
                "(a split, th.call(..., y[:n])) are views of the argument's memory, which this "
                f"check reads: observe a copy of them (y[:n].copy()).{also}")
