"""One execution of a program against a trace: the orchestrator of the engine.

A :class:`Run` re-executes the model body with a :class:`~thrifty.core.frame.BlockFrame`.
Choices present in the trace are replayed (and rescored under their possibly changed parents);
*targets* get proposed values or are resampled from their prior; choices the trace lacks are
drawn fresh — all through the one replay decision of :mod:`thrifty.core.replay`.  Structured
nodes execute only what is needed (see :class:`~thrifty.core.vocab.Plan`): a plate runs the
element indices it is asked for, a markov chain the steps it is asked for plus the steps their
changed states reach; both run in full when a value that precedes them in the enclosing body
changed.  Program order is the dependency graph: what the engine skips follows from what it
observes as the program runs (the choices it replays, the values handed to its primitives),
never from reading the model's source.

The run never touches the trace; it writes journal entries (one :class:`~thrifty.core.node.Update`
per changed node) that :meth:`Run.commit` applies.  It keeps the quantities of paper 001 Eq. 4:

* ``lp_new`` — log-density of the re-executed part of the new trace, fresh choices excluded;
* ``lp_old`` — log-density of the same part of the old trace, stale choices excluded;
* ``n_fresh`` / ``n_stale`` — choices created / dropped (so |x'| = |x| + n_fresh − n_stale);
* ``q_fwd`` / ``q_rev`` — prior densities of resampled targets at the new / old value.

The MH log-acceptance of a proposal that resamples or sets targets is then
``lp_new − lp_old + q_rev − q_fwd`` (+ the proposal's own correction and |x|/|x'| for LMH).

This module is the only one that knows every node module; the nodes reach one another through
the run's hooks (``open_plate``, ``run_chain``, ``mem_read_*``, ``drop_node``), so ``core/``
has no import cycle.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from thrifty import _context
from thrifty.core import chain_run, mem, plate, plate_chain
from thrifty.core.address import fmt
from thrifty.core.batch import check_data_rows
from thrifty.core.code_errors import WRAPPED, code_error, converted_error, wraps
from thrifty.core.column import ColumnSite
from thrifty.core.frame import BlockFrame
from thrifty.core.locate import plan_elements
from thrifty.core.node import Node
from thrifty.core.replay import ScalarLanes
from thrifty.core.trace import Block
from thrifty.core.vocab import (  # noqa: F401  (re-exported: the engine's words)
    DEFAULT,
    EMPTY_PLAN,
    LATENT,
    LAZY,
    NEG_INF,
    RESAMPLE,
    RESCORE,
    STRICT,
    Candidates,
    Mode,
    Pause,
    Plan,
    StaleRead,
    StructureChange,
    Unchanged,
    VecTarget,
    ZeroProbability,
    check_dist,
    nan_error,
    outside_support,
    sorted_unique,
    total,
)
from thrifty.errors import ModelError, SelectionError

NAN = math.nan
_SERIAL = itertools.count(1)  # run numbers: a process's owned hyperparameter names its run
_SLOTS = (
    "trace", "rng", "mode", "targets", "vec", "plan", "candidates", "created", "stop", "written",
    "serial", "identity", "proposing", "fresh_reads", "lp_new", "lp_old", "lp_fresh", "lp_stale",
    "q_fwd", "q_rev", "n_fresh", "n_stale", "n_seen", "work_elements", "work_steps", "root",
    "frame", "output", "full", "aborted", "stale_read", "paused", "unchanged", "n_obs", "inc",
    "captured", "factors", "new_obs", "fresh_choices", "stale_choices", "replayed", "owned",
    "obs_values", "vec_seen", "updates", "plate_frames", "chain_frames", "mem_fns", "sections",
    "mem_journals", "lanes", "obs_lanes", "data_rows", "impossible", "open_plate", "run_chain",
    "mem_read_scalar", "mem_read_batch", "__weakref__",
)  # (slots: one layout for every run, attributes read without a dict)


class Run:
    """One execution of ``trace.program`` against ``trace`` (see the module docstring).

    Parameters
    ----------
    trace : the trace to replay (an empty trace simulates the program from its prior).
    rng : a ``numpy.random.Generator``.
    targets : address → proposed value or ``RESAMPLE``, for choices outside plates and mem keys.
    vec : (plate address, address within the element) → :class:`VecTarget`.
    plan : the :class:`Plan` of plate elements and markov steps to execute.
    mode : a :class:`~thrifty.core.vocab.Mode`, the run's kind (strict, rescore, lazy, capture,
        simulate observations, fresh reads); the module constants ``STRICT``, ``RESCORE`` and
        ``LAZY`` name the usual ones.
    candidates : a :class:`~thrifty.core.vocab.Candidates`: the run scores alternative values
        of one plate element in lanes (such a run is never committed).
    stop : pause right after the ``stop``-th observation or factor of the model body
        (``paused``; ``inc`` its log-density; ``root`` the block executed so far): one
        particle of a program without chains, replayed up to its next observation (003 §3).
    created : memoized keys the run creates → their values: drawn by another run (a candidate
        lane's new table), accounted as this run's fresh draws.
    written : chain address → :class:`~thrifty.core.written.WrittenChain`: those chains' steps
        are written from the given columns (a trajectory particle Gibbs drew), not executed.
    """

    __slots__ = _SLOTS

    def __init__(
        self,
        trace,
        rng,
        targets: dict | None = None,
        vec: dict | None = None,
        plan: Plan | None = None,
        mode: Mode = DEFAULT,
        candidates: Candidates | None = None,
        created: dict | None = None,
        stop: int | None = None,
        written: dict | None = None,
        identity: bool = False,
    ):
        self.trace = trace
        self.rng = rng
        self.mode = mode
        self.targets = targets or None
        self.vec = vec or None
        self.plan = plan or EMPTY_PLAN
        self.candidates = candidates
        self.created = created or None
        self.stop = stop  # pause after this many observations (see ``stop`` above)
        self.written = written or None  # chain address → its steps as columns (see above)
        self.serial = next(_SERIAL)
        # one choice proposed (a scalar, or one element's): its present value again stops the
        # run (Unchanged)
        self.identity = identity and (len(targets) == 1 and not vec if targets else (
            vec is not None and len(vec) == 1 and sum(len(v.elems) for v in vec.values()) == 1))
        # proposing new values of an existing trace: invalid parameters reject the proposal
        self.proposing = trace.clock > 0 and (self.targets is not None or self.vec is not None)
        self.fresh_reads = mode.fresh_reads  # stop before stale sections (see Mode)
        # per-run totals and results
        self.lp_new = self.lp_old = self.lp_fresh = self.lp_stale = 0.0
        self.q_fwd = self.q_rev = 0.0
        self.n_fresh = self.n_stale = self.n_seen = 0  # choices created / dropped; targets met
        self.work_elements = self.work_steps = 0  # plate elements / markov steps executed
        self.root: Block | None = None
        self.frame = None
        self.output = None
        self.full = True  # every plate ran all its elements (the output is the program's)
        self.aborted: ZeroProbability | None = None
        self.stale_read: StaleRead | None = None  # a fresh-reads run that met stale sections
        self.paused = False
        self.unchanged = False  # an identity run whose proposal was the present value
        self.n_obs = 0
        self.inc = 0.0  # the log-density of the observation it paused after
        # (address, distribution, value, element indices) / the addresses of the factors
        # executed (capture)
        self.captured, self.factors = ([], []) if mode.capture else (None, None)
        self.new_obs = {} if mode.simulate_observations else None  # simulated observations
        self.fresh_choices: list | None = None  # (address, count) of the choices created
        self.stale_choices: list | None = None  # (address, count) of the choices dropped
        self.replayed: dict | None = None  # (plate, site) → its old distributions
        self.owned: dict = {}  # address → value of the hyperparameters processes drew
        self.obs_values = trace.obs_values
        self.vec_seen: set = set()
        self.updates: list = []  # journal entries of plates and chains, in finalize order
        self.plate_frames: dict = {}
        self.chain_frames: dict = {}  # chain address → {t: new step block} (executed steps)
        self.mem_fns: dict = {}  # mem address → its function, as defined in this execution
        # the local sections a lazy run met: ("plate" | "chain", address, number of sections)
        self.sections: list = []
        self.mem_journals: dict = {}
        self.lanes = ScalarLanes(None, rng, mode.strict, self)  # the replay decision, one member
        self.obs_lanes = ScalarLanes(None, rng, mode.strict, self)  # observations, factors
        self.data_rows: dict = {}  # argument → rows its plates observe (first executions)
        self.impossible: list = []
        # hooks of the frames (the node modules; a particle's replay replaces some)
        self.open_plate = plate.PlateContext
        self.run_chain = chain_run.run_chain
        self.mem_read_scalar = mem.read_scalar
        self.mem_read_batch = mem.read_batch

    @property
    def reads(self) -> mem.ReadCounts:
        """How dropped nodes give back their mem reads."""
        return mem.ReadCounts(self)

    # -- execution ------------------------------------------------------------------------------
    def execute(self) -> Run:
        program = self.trace.program
        mode = self.mode
        frame = BlockFrame(
            self, (), self.trace.root, dirty=mode.rescore or mode.simulate_observations
        )
        self.frame = frame
        _context.EXECUTIONS.runs.append(self)
        try:
            self.output = program.fn(*program.args, **program.kwargs)
            self.frame = None
            if self.data_rows:
                check_data_rows(self.data_rows)
            frame.finalize()
            self.root = frame.new
            if self.targets and self.n_seen < len(self.targets):
                self._resolve_unread_mem_targets()
        except ZeroProbability as e:  # a proposal outside the support: weight 0, never committed
            self.aborted = e
            self.lp_new = NEG_INF
            return self
        except StaleRead as e:  # stale elements or steps ahead: rescore them, run again
            self.stale_read = e
            self.lp_new = NAN
            return self
        except Unchanged:  # the identity move: nothing to commit
            self.unchanged = True
            return self
        except Pause:  # the observation it was to stop after (never committed)
            self.paused = True
            self.root = frame.new
            return self
        except WRAPPED as e:
            if not wraps(e):
                raise
            raise code_error(self, e) from e
        except AttributeError as e:
            err = converted_error(self, e)
            if err is None:
                raise
            raise err from e
        except RecursionError:
            last = self.lanes.addr
            raise ModelError(
                "the program recursed deeper than Python allows (unbounded recursion?); the "
                f"last choice executed was at {fmt(last) if last else 'the start'} — bound the "
                "recursion (e.g. a maximum depth) or write it as a loop or th.markov"
            ) from None
        finally:
            _context.EXECUTIONS.runs.pop()
            self.frame = None
        for journal in self.mem_journals.values():
            journal.finish(self)
        if self.n_stale and mode.strict:  # a choice left out: as much a change of structure
            # as one created (the step back would have to create it)
            raise StructureChange(self.stale_choices[0][0] if self.stale_choices else (),
                                  dropped=True)
        return self

    def _resolve_unread_mem_targets(self) -> None:
        """A proposed mem value whose readers were not executed (a lazy run): score it anyway."""
        for addr in self.targets:
            maddr, key = addr[:-1], addr[-1]
            fn = self.mem_fns.get(maddr)
            table = self.trace.mems.get(maddr)
            if fn is None or table is None or key not in table.values:
                continue
            j = mem.journal(self, maddr)
            if key not in j.entries:
                j.resolve(self, mem.Mem(maddr, fn), key)

    def observed(self, lp: float) -> None:
        """An observation or factor of a run that pauses (``stop``): pause after the last."""
        self.n_obs += 1
        if self.n_obs == self.stop:
            self.inc = lp
            raise Pause

    @property
    def log_weight(self) -> float:
        """``lp_new − lp_old + q_rev − q_fwd``: the MH log-ratio before proposal corrections."""
        return self.lp_new - self.lp_old + self.q_rev - self.q_fwd

    # -- hooks of the frames (the node modules) -------------------------------------------------
    # (plain functions of the node modules, called as ``run.hook(frame, ...)``)
    run_batch_chain = staticmethod(plate_chain.run_batch_chain)

    def account_block_reads(self, old, new, step_of) -> None:
        mem.account_block_reads(self, old, new, step_of)

    def account_plate_reads(self, frame, old_node) -> None:
        mem.account_plate_reads(self, frame, old_node)

    def note_impossible(self, addr, d, value) -> None:
        self.impossible.append((addr, d, value))

    def element_dist(self, plate_addr: tuple, rel: tuple, e: int, elems: np.ndarray):
        """Element ``e``'s distribution of the site ``rel`` (of the plate body or of one of its
        chains' steps) in the trace this run replays, from a strict replay there of the
        elements ``elems`` that this run executes (once per site; never committed, drawing
        nothing): the old distribution a redraw's reverse move replays under
        (:func:`thrifty.core.replay._reversed_by_redraw`) when the plate did not keep it."""
        if self.replayed is None:
            self.replayed = {}
        site = self.replayed.get((plate_addr, rel))
        if site is None:
            plan = plan_elements(self.trace, Plan(), plate_addr, elems)
            other = Run(self.trace, np.random.default_rng(0), plan=plan, mode=STRICT).execute()
            d = other.plate_frames[plate_addr].site_at(rel).dist
            site = self.replayed[(plate_addr, rel)] = ColumnSite(None, None, LATENT, True, d, elems)
        return site.member_dist(e)

    # -- which choices a proposal creates and drops (adaptive LMH needs them, not only counts) --
    def note_fresh(self, addr, count: int = 1) -> None:
        """``count`` choices at ``addr`` were created (a generic address with ``"*"`` for the
        elements of a plate).  ``fresh_choices`` sums to ``n_fresh``."""
        if self.fresh_choices is None:
            self.fresh_choices = []
        self.fresh_choices.append((addr, count))

    def note_stale(self, addr, count: int = 1) -> None:
        """``count`` choices at ``addr`` were dropped; ``stale_choices`` sums to ``n_stale``."""
        if self.stale_choices is None:
            self.stale_choices = []
        self.stale_choices.append((addr, count))

    def drop_node(self, node, addr) -> None:
        """A plate, chain or step of the old trace that this execution did not create again."""
        if self.fresh_reads and isinstance(node, Node) and node.has_stale(self.trace.mems):
            parts = node.stale_parts(self.trace.mems)
            if parts:  # its stored log-density is out of date: rescore it first
                raise StaleRead(parts)
        latent_lp = node.latent_lp()
        self.lp_old += node.total_lp() - latent_lp
        self.lp_stale += latent_lp
        self.n_stale += node.n_latent
        if node.n_latent:
            self.note_stale(addr, node.n_latent)  # every choice of the node (or step) at addr
        node.drop_reads(self.reads, addr)

    def check_targets(self, n_scalar: int, vec_keys=(), may_drop=()) -> None:
        """Raise if some targets were not met (an address the program did not reach), except
        those of ``may_drop``: choices of the trace that a proposal resampling them from the
        prior drops with the structure around them (stale, as in 001 Eq. 4)."""
        if self.aborted is not None:  # stopped at an impossible proposal: nothing to check
            return
        missing = []
        if self.n_seen < n_scalar:
            seen = self._seen_addresses()
            missing += [a for a in self.targets if a not in seen and a not in may_drop]
        missing += [k for k in vec_keys if k not in self.vec_seen]
        if missing:
            names = ", ".join(
                fmt(a[0] + ("*",) + a[1])
                if len(a) == 2 and isinstance(a[0], tuple) and isinstance(a[1], tuple)
                else fmt(a)
                for a in missing[:5]
            )
            raise SelectionError(f"the program did not reach the address(es) {names}")

    def _seen_addresses(self) -> set:
        seen = set(_block_addresses(self.root, ()))
        for addr, blocks in self.chain_frames.items():  # (the steps this run executed)
            for t, block in blocks.items():
                seen.update(_block_addresses(block, addr + (t,)))
        for addr, journal in self.mem_journals.items():
            seen.update(addr + (k,) for k in journal.entries)
        return seen

    def _mark_mem_readers_stale(self, trace) -> None:
        """A lazy run changed mem keys: plates that read them may now have stale elements."""
        for addr, journal in self.mem_journals.items():
            table = trace.mems.get(addr)
            if table is None or not any(e.changed for e in journal.entries.values()):
                continue
            table.lazy_clock = trace.clock
            for plate_addr in table.plate_readers:
                node = _find_plate(trace.root, plate_addr)
                if node is not None:
                    node.mem_stale = True
                    trace.stale_nodes.add(node)

    # -- commit ---------------------------------------------------------------------------------
    def commit(self, trace=None) -> None:
        """Make this execution the state of ``trace`` (default: the trace it replayed; or a
        fork of it — :meth:`~thrifty.core.trace.Trace.fork`)."""
        if self.aborted is not None:
            raise RuntimeError(f"cannot commit a run with probability zero: {self.aborted}")
        if self.stale_read is not None:
            raise RuntimeError(f"cannot commit a run stopped at stale elements: {self.stale_read}")
        if self.candidates is not None or self.paused:
            raise RuntimeError("cannot commit a run that scores candidate values in lanes or "
                               "that paused")
        trace = self.trace if trace is None else trace
        trace.clock += 1
        clock = trace.clock
        if self.n_fresh or self.n_stale or self.root.sites.keys() != trace.root.sites.keys():
            trace.layout += 1  # (a node's new columns, a new node's too: its update counts them)
        if self.n_fresh or self.n_stale:
            trace.structure += 1
            if trace._n_latent is not None:
                trace._n_latent += self.n_fresh - self.n_stale
            if trace.changes is not None:
                trace.changes.nodes_changed = True
        for upd in self.updates:
            upd.apply(trace, clock)
        for journal in self.mem_journals.values():
            journal.apply(trace, clock)
        if self.new_obs is not None:
            trace.obs_values = self.new_obs
        trace.root = self.root
        trace.output = self.output
        trace.output_full = self.full
        if self.mode.lazy and self.mem_journals:
            self._mark_mem_readers_stale(trace)
        elif self.mode.rescore and trace.stale_nodes:
            trace.stale_nodes = {n for n in trace.stale_nodes if n.has_stale(trace.mems)}
        self.trace = trace



def _block_addresses(block, prefix: tuple):
    for local in block.sites:
        yield prefix + local
    for local, chain in block.chains.items():
        for t in range(chain.T):
            yield from _block_addresses(chain.step_view(t), prefix + local + (t,))


def _find_plate(block, addr):
    """The plate node at ``addr`` under ``block`` (through markov steps), or None."""
    node = block.plates.get(addr)
    if node is not None:
        return node
    for local, chain in block.chains.items():
        k = len(local)
        if addr[:k] == local and len(addr) > k + 1 and isinstance(addr[k], int):
            t = addr[k]
            if 0 <= t < chain.T:
                return _find_plate(chain.step_view(t), addr[k + 1 :])
    return None
