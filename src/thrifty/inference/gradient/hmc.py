"""Gradient kernels: ``th.nuts`` and ``th.hmc`` on a block of continuous choices.

The algorithms are BlackJAX's (NUTS: Hoffman & Gelman 2014 with multinomial sampling,
Betancourt 2017; HMC: Neal 2011) and the gradients JAX's.  thrifty supplies the target: the
log-density of the block given every other choice, extracted from the program by a gradient
run (:mod:`thrifty.core.gradient`) in the unconstrained space of the block's supports
(:mod:`thrifty.transforms`), compiled with ``jax.jit`` once per structure of the trace and
reused while the structure holds — the values of the other choices are arguments, so a Gibbs or
PGAS step on them in a ``th.cycle`` costs no recompilation.

One step: read the block's values from the trace and map them to ℝⁿ, take one NUTS (or HMC)
transition of the density given the rest, map the new position back and write it into the trace
(one program run with the block's values given).  A transition is an exact MCMC kernel for the
block's conditional, so the step leaves the posterior invariant and composes with any other
kernel.  During the burn-in the step size and a diagonal (or dense) inverse mass matrix adapt by
Stan's windowed scheme (BlackJAX's ``window_adaptation`` stages, updated after every
transition inside the compiled loop, over the chain's burn-in).

Alone in a chain (``th.infer(program, th.nuts(...))``: nothing else writes the trace between
its steps), the kernel computes up to ``AHEAD`` transitions in one compiled call, the i-th with
the key ``fold_in(key(seed), i)`` of one seed drawn per call, and serves them one per step:
each draw's values and log-joint go to the recorder (:meth:`HMC.pending_draw`), and the trace
is written once, at the last — or when the chain reads it (:meth:`HMC.flush`: checks,
snapshots, the end of the burn-in).  The number of transitions per call depends on the
chain's configuration only (the end of the adaptation's schedule, the block's size), so a
seed gives the same draws however the chain is run, and a checkpoint carries the
transitions not yet served with the trace they start from.  The kernel is the same Markov
chain as one transition per step; only the Python around the compiled code is skipped.

Per-draw statistics go to ``result.sample_stats`` under ArviZ's names: ``diverging``,
``tree_depth`` (NUTS), ``n_steps``, ``energy``, ``acceptance_rate``, ``step_size``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from thrifty import _context
from thrifty._args import checked_keywords
from thrifty._warn import user_stacklevel
from thrifty.core.address import dotted, fmt
from thrifty.core.engine import (
    ARGUMENT,
    GradientRun,
    VecTarget,
    chain_column,
    chains,
    computes_values,
    data_arguments,
    is_plate_chain,
    key_name,
    locate,
    other_values,
    plan_elements,
    plan_for,
    plate_chain_column,
    structure,
    top_site,
)
from thrifty.core.engine import plate as plate_view
from thrifty.errors import (
    ArgumentError,
    DistributionError,
    ModelError,
    NotDifferentiable,
    SelectionError,
)
from thrifty.fingerprint import value_digest
from thrifty.inference.selecting import Selecting

INSTALL = "pip install 'thrifty[jax]' (JAX and BlackJAX)"


def _check_installed() -> None:
    """Raise ImportError naming the extra when JAX or BlackJAX is missing (without importing
    them: importing BlackJAX starts JAX's runtime, whose threads a forked chain could not use)."""
    import importlib.util

    missing = [m for m in ("jax", "blackjax") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"th.nuts and th.hmc need JAX and BlackJAX ({', '.join(missing)} "
                          f"not installed): {INSTALL}")


def _jax():
    _check_installed()
    import blackjax
    import jax

    return jax, blackjax


def float64():
    """The context in which a gradient kernel computes: JAX's 64-bit types on for this thread
    while it lasts (:func:`thrifty._context.float64`)."""
    _check_installed()
    import jax  # noqa: F401  (imported: the context then turns its 64-bit types on)

    return _context.float64()


RECOMPILES_WARN = 5  # compilations for new values of discrete choices before a warning
AHEAD = 64  # transitions one compiled call may take (a chain with this kernel alone)
AHEAD_BYTES = 2**20  # ... and at most this many bytes of draws
CHEAP_FLOPS = 4000  # a density this cheap (XLA's estimate) compiles without LLVM's optimisations,
MANY_OPS = 1500  # ... and so does one of this many operations (lines of its lowered module)


class _Compiled:
    """The functions of one structure: ``chunk`` (up to ``length`` transitions in one compiled
    loop, with the adaptation's updates between them, returning each new position's
    constrained values and log-joint), a trace-only probe of the density, and the
    adaptation's stages."""

    def __init__(self, kernel: HMC, program, keys, ushapes, okeys, static):
        jax, blackjax = _jax()
        from functools import partial

        import jax.numpy as jnp

        self.data_inputs = any(k[:1] == (ARGUMENT,) for k in okeys)  # (see HMC._prepare)
        sizes = [int(np.prod(s)) for s in ushapes]
        offsets = np.cumsum([0, *sizes])

        def unflatten(u):
            return {k: u[offsets[i]:offsets[i + 1]].reshape(ushapes[i])
                    for i, k in enumerate(keys)}

        def run(u, ovals, prog=program):
            others = dict(zip(okeys, ovals))
            others.update(static)
            return GradientRun(prog, unflatten(u), others, jnp).execute()

        # (jitted inside the compiled loop: the program is traced once per function, not at
        # every place the sampler evaluates the density or its gradient)
        @jax.jit
        def logdensity(u, ovals):
            lp = run(u, ovals).lp
            return jnp.where(jnp.isnan(lp), -jnp.inf, lp)

        @jax.jit
        def observe(u, ovals):
            """The constrained values at ``u`` and log p(x, y) (no Jacobian)."""
            r = run(u, ovals)
            return [r.values[k] for k in keys], r.lp - r.jac

        def eager(u, ovals, prog=program, jacobian: bool = False) -> float:
            """log p(x, y) at ``u`` (with the log-Jacobians: the compiled density), ``prog``
            executed by JAX one operation at a time — nothing compiled, so each operation reads
            its NumPy operands as they are when it executes (see :meth:`HMC._agrees`)."""
            r = run(jnp.asarray(u), ovals, prog)
            return float(r.lp if jacobian else r.lp - r.jac)

        if kernel.nuts:
            transition = blackjax.nuts.build_kernel()
            init = blackjax.nuts.init
            extra = {"max_num_doublings": kernel.max_tree_depth}
        else:
            transition = blackjax.hmc.build_kernel()
            init = blackjax.hmc.init
            extra = {}
            mean_steps = kernel.num_steps or 10

        from blackjax.adaptation.window_adaptation import base

        with warnings.catch_warnings():  # (BlackJAX 1.7 marks the stepwise stages deprecated
            # in favour of a whole-warmup loop, which a kernel inside th.cycle cannot use)
            warnings.simplefilter("ignore", DeprecationWarning)
            a_init, a_update, a_final = base(not kernel.dense_mass, kernel.target_accept)
        free_step = kernel.step_size is None

        def chunk(seed, n, u0, ovals, a_state, stages, adapting, eps0, imm0):
            """Transitions ``0 .. n-1`` from ``u0`` (``n`` ≤ ``self.length``), the i-th with the
            key ``fold_in(key(seed), i)``: while ``adapting``, with the adaptation's step size
            (unless fixed) and inverse mass matrix, updated after each by its stage
            ``stages[i]``; otherwise with ``eps0`` and ``imm0``.  Returns the last position,
            per transition the constrained values, log-joint, step size and statistics, the
            log-density at ``u0`` (with the log-Jacobians: see :meth:`HMC._agrees`), and the
            adaptation's state."""
            key = jax.random.key(seed)
            density = partial(logdensity, ovals=ovals)
            length = self.length
            out = ([jnp.zeros((length, *v.shape), v.dtype) for v in self.shapes[0]],
                   jnp.zeros(length), jnp.zeros(length),
                   (jnp.zeros(length, bool), jnp.zeros(length), jnp.zeros(length),
                    jnp.zeros(length, int), jnp.zeros(length, int), jnp.zeros(length, bool)))

            def body(i, carry):
                state, a, (vals, lj, eps_out, stats) = carry
                eps = jnp.where(adapting, a.step_size, eps0) if free_step else eps0
                imm = jnp.where(adapting, a.inverse_mass_matrix, imm0)
                k = jax.random.fold_in(key, i)
                steps = {}
                if not kernel.nuts:  # HMC's path length: 1 .. 2L − 1 steps, uniformly (mean L)
                    k, k_steps = jax.random.split(k)
                    steps = {"num_integration_steps": jax.random.randint(
                        k_steps, (), 1, 2 * mean_steps)}
                new, info = transition(k, state, density, eps, imm, **extra, **steps)
                a = jax.lax.cond(adapting, lambda a: a_update(a, (stages[i, 0], stages[i, 1] != 0),
                                                               new.position,
                                                               info.acceptance_rate),
                                 lambda a: a, a)
                x, lj_i = observe(new.position, ovals)
                row = (info.is_divergent, info.energy, info.acceptance_rate,
                       info.num_integration_steps,
                       info.num_trajectory_expansions if kernel.nuts else 0,
                       jnp.any(new.position != state.position))  # (whether it moved)
                vals = [v.at[i].set(xi) for v, xi in zip(vals, x)]
                stats = tuple(s.at[i].set(r) for s, r in zip(stats, row))
                return new, a, (vals, lj.at[i].set(lj_i), eps_out.at[i].set(eps), stats)

            start = init(u0, density)
            state, a_state, out = jax.lax.fori_loop(0, n, body, (start, a_state, out))
            vals, lj, eps_out, stats = out
            # one float64 vector (read back in one transfer, not one per array: see unpack)
            packed = jnp.concatenate([state.position] + [v.reshape(-1) for v in vals]
                                     + [lj, eps_out] + [x.astype(float) for x in stats]
                                     + [jnp.reshape(start.logdensity, 1)])
            return packed, a_state

        def unpack(packed):
            """``chunk``'s vector in NumPy: (last position, per transition the constrained
            values, log-joint, step size and statistics)."""
            length, at = self.length, self.size
            position = packed[:at]
            vals = []
            for v in self.shapes[0]:
                k = length * int(np.prod(v.shape))
                vals.append(packed[at:at + k].reshape((length, *v.shape)).astype(v.dtype))
                at += k
            lj, eps_out = packed[at:at + length], packed[at + length:at + 2 * length]
            at += 2 * length
            stats = tuple(packed[at + j * length:at + (j + 1) * length].astype(t)
                          for j, t in enumerate((bool, float, float, int, int, bool)))
            return position, (vals, lj, eps_out, stats)

        def probe(u, ovals):
            """Trace the program and its derivative (nothing compiled): their errors surface
            before a step's, named by the site (a family with no derivative in a parameter
            on JAX raises as the derivative is traced), the shapes of the constrained values
            are known, and XLA's estimate of the flops of one evaluation of the density."""
            jax.eval_shape(lambda v: jax.jvp(lambda w: run(w, ovals).lp, (v,), (v,)), u)
            lowered = observe.lower(u, ovals)  # (traced once: the shapes are its outputs')
            self.shapes = lowered.out_info
            cost = lowered.cost_analysis()
            cost = cost[0] if isinstance(cost, (list, tuple)) and cost else cost
            self.flops = float((cost or {}).get("flops", math.inf))
            self.ops = lowered.as_text().count("\n")

        def compile_loop(cheap: bool):
            """The compiled loop; ``cheap``: without LLVM's optimisations — for a density of a
            few thousand flops, compiling them costs more than they save in any run, and for
            one of thousands of operations (a chain's steps, unrolled) LLVM's time grows
            faster than the program."""
            options = {"xla_backend_optimization_level": 0} if cheap else None
            self.chunk = jax.jit(chunk, compiler_options=options)

        def moving_supports(u, ovals) -> list:
            """The addresses of the fixed values (observations, choices outside the block)
            whose support's bounds move with the block at ``u``: the bounds' derivative in a
            random direction of ``u`` (``jax.jvp``, executed eagerly, the other values
            constants) is not zero."""
            found: list = []

            def bounds(v):
                r = run(v, ovals)
                found[:] = [a for a, _ in r.bounds]
                return [b * 1.0 for _, b in r.bounds]

            direction = jnp.asarray(np.random.default_rng(0).standard_normal(np.shape(u)))
            _, tangents = jax.jvp(bounds, (u,), (direction,))
            return list(dict.fromkeys(a for a, t in zip(found, tangents)
                                      if bool(jnp.any(t != 0))))

        self.probe = probe
        self.eager = eager
        self.moving_supports = moving_supports
        self.compile_loop = compile_loop
        self.chunk = None
        self.unpack = unpack
        self.adapt_init = a_init
        self.adapt_final = a_final  # (two operations, run once a chain: not compiled for
        # each program)
        self.size = int(offsets[-1])
        self.length = 1  # set by the kernel once the shapes are known (see HMC._compile)
        self.idle = None  # an adaptation state for chunks that do not adapt


def _name(key) -> str:
    """The variable name of a block key (a site, a plate's or a chain's site)."""
    if is_plate_chain(key):
        return dotted(key[0] + key[1] + key[2])
    return dotted(key[0] + key[1]) if key and isinstance(key[0], tuple) else dotted(key)


AGREE = 1e-9  # a compiled log-density agrees within this, relative and absolute: rounding


ROUNDING = 1e-6  # JAX's functions and NumPy's (special functions in far tails) agree within
# this, relative and absolute: a larger difference is another density


def _close(a: float, b: float, tol: float = AGREE) -> bool:
    """Whether two log-densities agree up to rounding (``tol``; both −∞ agree)."""
    return a == b or abs(a - b) <= tol * (1.0 + abs(b))


def jax_tree_map(f, tree):
    import jax

    return jax.tree.map(f, tree)


class _Ahead:
    """Transitions computed from the trace's state at ``clock``, served one per step while
    nothing else writes the trace: per transition the constrained values, log-joint, step
    size and statistics; ``moved``: whether the last position differs from the first."""

    def __init__(self, trace, keys, n, values, lj, eps, stats, moved, reuse):
        self.trace, self.clock, self.keys, self.n = trace, trace.clock, keys, n
        self.values, self.lj, self.eps, self.stats, self.moved = values, lj, eps, stats, moved
        self.reuse = reuse  # (compiled functions, other values): not pickled
        self.served = 0

    def __getstate__(self):
        state = self.__dict__.copy()
        state["reuse"] = None
        return state


_CACHE: dict = {}  # (program key, settings, structure) → compiled functions
_CACHE_SIZE = 64  # discrete values compiled in that keep changing: a bounded cache


def program_key(program, data: dict | None = None) -> tuple:
    """What a compiled density took as constants: the digest of the model's code, everything
    it reaches (closures, globals, buffers) and its arguments (:mod:`thrifty.fingerprint`) —
    of the arguments in ``data`` (:func:`~thrifty.core.gradient.data_arguments`, taken as
    inputs) only the shape and dtype.  Two programs with the same key execute the same code on
    the same constants, so their compiled functions are one: a model applied again to the
    same data (a notebook cell run twice), or to new data of the same shapes, compiles
    nothing; data changed in place changes the key of a density that took them as constants.
    Where the walker met something it cannot hash (a lock, an open file), the key also names
    the program object itself: reused by that program only."""
    data = data or {}

    def arg(k, a):
        return ("<input>", a.shape, a.dtype.str) if (ARGUMENT, k) in data else a

    args = tuple(arg(k, a) for k, a in enumerate(program.args))
    kwargs = {k: arg(k, a) for k, a in program.kwargs.items()}
    digest, unhashable = value_digest((program.fn, args, kwargs), "program")
    return (digest, id(program)) if unhashable else (digest, None)


DATA_AS_CONSTANTS = "data as constants"  # (cached: the program's data cannot be inputs)


def _cached(sig):
    """The compiled functions of ``sig`` (its first entry a :func:`program_key`), or None."""
    hit = _CACHE.get(sig)
    if hit is None and len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    return hit


def _store(sig, comp):
    """Keep ``comp`` (whose functions hold their program: a key naming the program object
    keeps its id from being reused while the entry lives)."""
    _CACHE[sig] = comp


class _ProgramKeys:
    """A program's data (:func:`~thrifty.core.gradient.data_arguments`) as arrays of JAX —
    moved once, not at every call — and its :func:`program_key` with them as inputs; the key
    with them as constants is hashed (O(their size)) only if the density needs it."""

    __slots__ = ("_constants", "data", "key", "program")

    def __init__(self, program):
        jax, _ = _jax()
        self.program = program
        self.data = {k: jax.numpy.asarray(v) for k, v in data_arguments(program).items()}
        self.key = program_key(program, self.data)
        self._constants = None

    def constants_key(self) -> tuple:
        if self._constants is None:
            self._constants = program_key(self.program)
        return self._constants


def _reasonable_step_size(comp, seed, u0, ovals, imm, target: float = 0.5) -> float:
    """Hoffman & Gelman's (2014) Alg. 4 heuristic with the compiled transition: from 1, double
    (or halve) the step size while the transition's mean acceptance stays above (below)
    ``target``; the last step size before it crosses.  Never moves the chain."""
    def acceptance(eps):
        packed, _ = comp.chunk(seed, np.int64(1), u0, ovals, comp.idle, comp.no_stages,
                               np.bool_(False), np.float64(eps), imm)
        a = float(comp.unpack(np.asarray(packed))[1][3][2][0])  # (in NumPy: no compiled slice)
        return a if a == a else 0.0

    eps = 1.0
    up = acceptance(eps) > target
    for _ in range(60):
        nxt = eps * 2.0 if up else eps / 2.0
        if (acceptance(nxt) > target) != up:
            return nxt if not up else eps
        eps = nxt
    return eps


class HMC(Selecting):
    """Hamiltonian Monte Carlo on a block of continuous choices; see :func:`thrifty.hmc`."""

    name = "hmc"
    nuts = False
    uses_jax = True  # (chains in worker processes: see thrifty.runtime.parallel.start_method)
    by_default = False  # assigned by th.infer's default kernel, not by the user

    def __init__(self, selection, step_size: float | None = None, num_steps: int | None = None,
                 *, target_accept: float = 0.8, dense_mass: bool = False,
                 max_tree_depth: int = 10):
        super().__init__(selection)
        if step_size is not None and not (isinstance(step_size, (int, float))
                                          and 0 < step_size < math.inf):
            raise ArgumentError(f"{self.name}: step_size must be a positive number, got "
                             f"{step_size!r}")
        if num_steps is not None and not (isinstance(num_steps, int) and num_steps >= 1):
            raise ArgumentError(f"{self.name}: num_steps must be a positive int, got {num_steps!r}")
        if not 0 < target_accept < 1:
            raise ArgumentError(f"{self.name}: target_accept must be in (0, 1), got "
                             f"{target_accept!r}")
        self.step_size = step_size
        self.num_steps = num_steps
        self.target_accept = float(target_accept)
        self.dense_mass = bool(dense_mass)
        self.max_tree_depth = int(max_tree_depth)
        self._adapt: dict = {}  # per structure of the block (_parameters): [adaptation
        # state, schedule, index] during the burn-in
        self._tuned: dict = {}  # per structure: (step size, inverse mass matrix) after it
        self._first_step = None  # the heuristic's step size, without an adaptation
        self.burn_in_steps = 0
        self._last: dict = {}  # the statistics of the last transition (per-draw stats)
        self._since = None  # ((trace uid, clock, choices), what _prepare gave) after a step
        self._keys: dict = {}  # id(program) → _ProgramKeys: made once a copy
        self._agreed: set = set()  # compiled functions _agrees found to be the program's
        self._found: dict = {}  # compiled functions found in _CACHE (not compiled here) → key
        self._checked: set = set()  # those of them _stale found to be the program's
        self._eager_agreed: set = set()  # compiled functions that agree with the eager run
        self.constants = None  # (names, where, any of them an array): discrete choices compiled
        # in as constants (a compilation per value met)
        self._recompiles = 0  # compilations for new values of them (see _compile)
        self._alone = False  # the chain's only kernel (see run_alone)
        self._ahead: _Ahead | None = None  # transitions computed ahead, being served
        self._pending = None  # a served draw not yet written into the trace
        _check_installed()

    def __getstate__(self):
        """For checkpoints and the copy per chain: the compiled functions stay behind, and the
        adaptation's JAX arrays travel as NumPy arrays (a JAX array unpickled before thrifty
        turns on JAX's float64 would come back as float32, and a resumed chain would differ)."""
        state = self.__dict__.copy()
        state["_since"] = None
        state["_keys"] = {}
        state["_agreed"] = set()
        state["_found"] = {}
        state["_checked"] = set()
        state["_eager_agreed"] = set()
        if self._adapt or self._tuned:
            import jax

            def as_numpy(tree):
                return jax.tree.map(np.asarray, tree)

            state["_adapt"] = {k: [as_numpy(a[0]), *a[1:]] for k, a in self._adapt.items()}
            state["_tuned"] = {k: as_numpy(t) for k, t in self._tuned.items()}
        return state

    def label(self) -> str:
        if self.nuts:
            return f"nuts({self.selection!r})"
        return f"hmc({self.selection!r}, step_size={self.step_size}, num_steps={self.num_steps})"

    def draw_stats(self) -> dict:
        """The statistics of the last transition, recorded with each draw
        (``result.sample_stats``, ArviZ's ``sample_stats`` group) — at a draw no transition of
        this kernel preceded since the last (another kernel's turn in a ``th.mixture``): no
        divergence, no steps, NaN energy, acceptance and step size."""
        last = self._last
        if last:
            self._last = {k: (False if k == "diverging" else 0 if k in ("n_steps", "tree_depth")
                              else math.nan) for k in last}
        return last

    def plan_burn_in(self, n: int) -> None:
        """The chain's burn-in has ``n`` iterations: the adaptation windows span them."""
        self.burn_in_steps = int(n)

    # -- the block --------------------------------------------------------------------------------
    def _block(self, trace, cs):
        """[(key, address for messages, current value, distribution(s), discrete)] of the
        selected choices: top-level sites, plate sites (every element), sites of a top-level
        chain (every step; a distribution per step), sites of a chain inside a plate (every
        element and step; a distribution per step, over the elements)."""
        out = []
        top_chains = {c for p, c in chains(trace) if p is None}
        plate_chains = {(p, c) for p, c in chains(trace) if p is not None}
        steps: dict = {}  # (chain, site) → the steps selected
        for addr in cs.scalars:
            for k in range(1, len(addr) - 1):
                if addr[:k] in top_chains and isinstance(addr[k], int):
                    steps.setdefault((addr[:k], addr[k + 1:]), set()).add(addr[k])
                    break
        for key, ts in steps.items():
            values, dists = chain_column(trace, key[0], key[1], self.name)
            if len(ts) != len(values):
                raise SelectionError(f"{self.name}: select every step of the chain site "
                                     f"{key_name(key)} (a gradient kernel moves all of them "
                                     "as one block)")
            out.append((key, key_name(key), values, dists, any(d.is_discrete for d in dists)))
        self._chain_keys = set(steps)
        for addr in cs.scalars:
            if any(addr[:len(c)] == c for c in top_chains):  # (a chain's step: above)
                continue
            site = top_site(trace, addr)
            if site is None:
                raise SelectionError(f"{self.name}: no top-level choice at {fmt(addr)}")
            out.append((addr, fmt(addr), site.value, site.dist, site.discrete))
        in_chains: dict = {}  # (plate, chain, site) → the steps selected
        groups = []
        for g in cs.groups:
            for k in range(1, len(g.rel) - 1):
                if (g.plate_addr, g.rel[:k]) in plate_chains and isinstance(g.rel[k], int):
                    key = (g.plate_addr, g.rel[:k], g.rel[k + 1:])
                    in_chains.setdefault(key, []).append((g.rel[k], g))
                    break
            else:
                groups.append(g)
        for key, steps in in_chains.items():
            values, dists = plate_chain_column(trace, *key, self.name)
            if len({t for t, _ in steps}) != values.shape[1] or any(
                    g.elems is not None and len(g.elems) != g.size for _, g in steps):
                raise SelectionError(f"{self.name}: select every element and step of the "
                                     f"chain site {key_name(key)} (a gradient kernel moves all "
                                     "of them as one block)")
            out.append((key, key_name(key), values, dists, any(d.is_discrete for d in dists)))
        for g in groups:
            if g.elems is not None and len(g.elems) != g.size:
                raise SelectionError(f"{self.name}: select every element of the plate site "
                                     f"{fmt(g.plate_addr + ('*',) + g.rel)} (a gradient kernel "
                                     "moves all of them as one block)")
            view = plate_view(trace, g.plate_addr)
            key = (g.plate_addr, g.rel)
            out.append((key, key_name(key), view.values(g.rel, np.arange(g.size)),
                        view.support_of(g.rel), view.discrete(g.rel)))
        for _, name, _, _, discrete in out:
            if discrete:
                raise SelectionError(f"{self.name}: {name} is discrete; a gradient kernel moves "
                                     "continuous choices (use th.gibbs or th.mh for it)")
        return out

    # -- one step ---------------------------------------------------------------------------------
    @staticmethod
    def check_installed() -> None:
        """ImportError naming the extra when JAX or BlackJAX is missing."""
        _check_installed()

    def probe(self, trace) -> None:
        """Trace the block's density on ``trace`` once (nothing compiled yet): raises the
        errors a step would (a choice not differentiable, a NumPy-only family, ...)."""
        cs = self.choices(trace)
        if cs is None:
            raise SelectionError(f"{self.name}: {self.selection!r} selects no choice")
        with float64():
            self._prepare(trace, cs)

    def moving_supports(self, trace) -> list[str]:
        """The observations and other fixed values whose support has a bound that moves with
        the block (``y ~ Uniform(0, θ)`` for θ in it) at ``trace``'s values: the density
        drops to 0 where a bound crosses such a value, and trajectories that reach it diverge
        — a random walk (``th.mh(..., th.drift())``) only has its proposals there rejected."""
        import jax.numpy as jnp

        cs = self.choices(trace)
        if cs is None:
            return []
        with float64():
            _, u0, comp, ovals = self._prepare(trace, cs)
            return [dotted(p for p in a if p != "*")
                    for a in comp.moving_supports(jnp.asarray(u0, dtype=float), ovals)]

    def _prepare(self, trace, cs, transitions: bool = False):
        """(block keys, unconstrained start, compiled functions, their other values);
        ``transitions``: for transitions, which the functions' agreement with the program
        (:meth:`_agrees`, once per compiled function and chain) must precede — a probe of the
        density compiles nothing.  Compiled functions that take the program's data as inputs
        and disagree are replaced by those taking them as constants: tracing refuses code that
        needs the data's values (``np.log(y)``, ``if y[0] > 0``), but code that reads their
        *type* (``isinstance(y, np.ndarray)``) traces, and is caught here."""
        keys, u0, ushapes = self._start(trace, cs)
        others = other_values(trace, set(keys))
        program = trace.program
        comp, ovals = self._compile(program, keys, ushapes, others)
        if transitions and comp not in self._agreed and self._stale(comp, u0, ovals, program):
            _CACHE.pop(self._found.pop(comp), None)
            comp, ovals = self._compile(program, keys, ushapes, others)
        if transitions and comp not in self._agreed:
            jac0 = self._start(trace, cs, True)[3]
            agrees = self._agrees(comp, u0, jac0, ovals, trace, keys)
            if not agrees and comp.data_inputs:  # (None: the trace's log-joint is not known —
                # this step takes the data as constants, and a later one checks again)
                if agrees is False:
                    _store(self._marker(self._program(program), keys, ushapes, others),
                           DATA_AS_CONSTANTS)
                comp, ovals = self._compile(program, keys, ushapes, others, True)
                if comp not in self._agreed:
                    agrees = self._agrees(comp, u0, jac0, ovals, trace, keys)
            if agrees:
                self._agreed.add(comp)
        return keys, u0, comp, ovals

    def _stale(self, comp, u0, ovals, program) -> bool:
        """Whether compiled functions found in the cache (compiled for an earlier program of
        the same :func:`program_key`) compute another density than ``program`` executed now,
        at the block's start and at a point beside it: something the model reads that the
        fingerprint cannot see (a file's content, an object whose pickled state leaves out
        what the model reads) changed since they were compiled.  Then they are compiled anew;
        the start alone may not tell (a changed scale of ``mu`` at ``mu = 0``)."""
        if comp not in self._found or comp in self._checked:
            return False
        import jax.numpy as jnp

        imm = jnp.eye(comp.size) if self.dense_mass else jnp.ones(comp.size)
        u0 = np.asarray(u0, dtype=float)
        for u in (u0, u0 + 0.25 + 0.125 * np.arange(u0.size)):
            packed, _ = comp.chunk(np.uint32(0), np.int64(0), u, ovals, comp.idle,
                                   comp.no_stages, np.bool_(False), np.float64(1.0), imm)
            a = float(np.asarray(packed)[-1])
            try:
                e = comp.eager(u, ovals, program, jacobian=True)
            except Exception:  # (the program cannot run eagerly now: compiled anew, as new)
                return True
            if not _close(a, e) and (a == a or e == e):
                return True
        self._checked.add(comp)
        return False

    def _agrees(self, comp, u0, jac0, ovals, trace, keys) -> bool | None:
        """Whether the compiled density is the program's at the trace's state: it gives the
        trace's log-joint there — the program executed by the engine (``jac0``: the block's
        log-Jacobians, which the compiled density includes) — up to rounding (:data:`AGREE`),
        or, where JAX's functions and NumPy's round differently, the program executed by JAX
        one operation at a time (:meth:`_Compiled.eager`).  One compiled call of no transition
        (the loop's start, so nothing is compiled that the transitions do not need), and the
        eager run only when the first comparison fails; None when the trace's log-joint is
        not known (elements left stale by a subsampling kernel).  False when a density taking
        the data as inputs differs from the engine's as the eager run does (the model reads
        the data's type: see :meth:`_prepare`).

        Raises ModelError when the compiled density differs from the eager run: JAX keeps a
        NumPy array that traced code reads by reference until it compiles the whole trace,
        so an array the model refills in place between uses (a buffer refilled at each step
        of a chain) is read with its last contents at every use; and when the eager run
        differs from the engine's by more than JAX's and NumPy's rounding (:data:`ROUNDING`):
        the gradient run computes another density."""
        import jax.numpy as jnp

        b = trace.known_log_joint()
        if b != b and comp in self._eager_agreed:
            return None  # (the compiled density is the eager run's: nothing more to learn)
        imm = jnp.eye(comp.size) if self.dense_mass else jnp.ones(comp.size)
        packed, _ = comp.chunk(np.uint32(0), np.int64(0), u0, ovals, comp.idle, comp.no_stages,
                               np.bool_(False), np.float64(1.0), imm)
        a = float(np.asarray(packed)[-1]) - jac0
        if _close(a, b):
            return True
        # (also when the trace's log-joint is not known — elements left stale: the eager run
        # needs none, and the transitions of this step use this compiled density)
        e = comp.eager(u0, ovals)
        if not _close(a, e):
            raise ModelError(self._disagreement(keys, a, e, b))
        if b == b and not comp.data_inputs and not _close(e, b, ROUNDING):
            raise ModelError(self._another_density(keys, e, b))
        self._eager_agreed.add(comp)
        if b != b:
            return None
        return not comp.data_inputs

    def _another_density(self, keys, eager, engine) -> str:
        """The gradient run computes another density than the engine's (beyond rounding)."""
        names = ", ".join(map(_name, keys))
        who = (f"th.infer's default kernel assigned NUTS to {names}, and the log-density"
               if self.by_default else f"{self.label()}: the log-density of the block {names}")
        return (f"{who} that JAX computes differs from the program's at the trace's state "
                f"({eager:.10g} with JAX, {engine:.10g} the engine's log-joint) by more than "
                "rounding: a family's array path computes another density than its NumPy "
                "one there, or a support's transform differs; a gradient kernel would sample "
                "another posterior. Move these choices with th.mh(..., th.drift()) or th.lmh()")

    def _disagreement(self, keys, compiled, eager, engine) -> str:
        """Why the compiled density is not the program's, and the fixes."""
        names = ", ".join(map(_name, keys))
        who = (f"th.infer's default kernel assigned NUTS to {names}, and its compiled "
               "log-density" if self.by_default else
               f"{self.label()}: the compiled log-density of the block {names}")
        other = (" — or give th.infer a kernel that does not compile the model for these "
                 "choices (th.mh(..., th.drift()) or th.lmh())" if self.by_default else "")
        return (f"{who} disagrees with the program at the trace's state ({compiled:.10g} "
                f"compiled, {eager:.10g} with JAX executing the model one operation at a time, "
                + (f"{engine:.10g} the engine's log-joint" if engine == engine else
                   "the engine's log-joint not known") + "): the model's code probably changes a "
                "NumPy array in place between two uses (a buffer refilled at each step of a "
                "chain, or for a second site) and computes with it and a choice's value; JAX "
                "keeps such an array by reference until it compiles the whole density, so "
                "every use reads its last contents. Build a new array at each use instead "
                f"(w * np.array([x]) rather than buf[0] = x; w * buf){other}")

    def _start(self, trace, cs, jacobian: bool = False):
        """(block keys, the block's values in unconstrained space as one vector, shapes), and
        with ``jacobian`` the sum of their log-Jacobians."""
        from thrifty.transforms import biject_to

        def inverse(support, value):
            b = biject_to(support)
            with np.errstate(divide="ignore", invalid="ignore"):
                u = np.asarray(b.inverse(value))
            if not np.all(np.isfinite(u)):
                raise DistributionError(
                    f"a value lies on the boundary of the support {support!r}, which the "
                    "unconstrained coordinates of a gradient kernel place at infinity "
                    "(Stan's constraint transforms): start it inside the support (init=), or "
                    "move it with th.mh")
            return u, float(np.sum(b.log_abs_det_jacobian(u))) if jacobian else 0.0

        block = self._block(trace, cs)
        keys = tuple(b[0] for b in block)
        us, jac = [], 0.0
        for key, name, value, d, _ in block:
            value = np.asarray(value, dtype=float)
            try:
                u, j = self._inverse(key, value, d, inverse)
            except DistributionError as e:  # (a support with no transform)
                raise DistributionError(f"{self.name}: {name}: {e}") from e
            us.append(u)
            jac += j
        ushapes = tuple(u.shape for u in us)
        u0 = np.concatenate([u.ravel() for u in us]) if us else np.zeros(0)
        return (keys, u0, ushapes, jac) if jacobian else (keys, u0, ushapes)

    @staticmethod
    def _inverse(key, value, d, inverse):
        """A block choice's unconstrained values and their log-Jacobian (see :meth:`_start`)."""
        if type(d) is not list:
            return inverse(d.support, value)
        first = d[0].support  # a chain site's steps: one support, or one per step
        if all(di.support is first for di in d):
            return inverse(first, value)
        axis = 1 if is_plate_chain(key) else 0  # (elements, steps, ...) in a plate
        steps = [inverse(di.support, v) for di, v in zip(d, np.moveaxis(value, axis, 0))]
        return np.stack([u for u, _ in steps], axis=axis), sum(j for _, j in steps)

    def _step(self, trace, rng):
        cs = self.choices(trace)
        if cs is None:
            return trace
        ahead = self._ahead
        if ahead is not None and not (ahead.trace is trace and ahead.clock == trace.clock):
            ahead = self._ahead = None  # (another kernel wrote the trace: computed in vain)
        if ahead is None:
            self.flush(trace)
            with float64():
                ahead = self._ahead = self._transitions(trace, rng, cs)
        i = ahead.served
        ahead.served += 1
        values = [v[i] for v in ahead.values]
        self._record(tuple(s[i] for s in ahead.stats), ahead.eps[i])
        if ahead.served < ahead.n:  # a draw of a chain with this kernel alone: its values go
            self._pending = (ahead.keys, values, float(ahead.lj[i]))  # to the recorder, and
            return trace  # the trace is written at the last transition computed (or a flush)
        self._pending = None
        self._ahead = None
        if ahead.moved:
            self._write(trace, rng, ahead.keys, values)
        # what the next step may reuse if nothing else is committed before it (the trace's
        # clock advances with every commit): the compiled functions and the other values
        if ahead.reuse is not None:
            self._since = ((trace.uid, trace.clock, cs), ahead.reuse)
        return trace

    def _transitions(self, trace, rng, cs) -> _Ahead:
        """The next transitions from the trace's state: one, or — in a chain with this kernel
        alone, nothing else writing the trace between its steps — as many as one compiled call
        takes (up to the end of the adaptation's schedule while it runs).  Their number
        depends on the chain's configuration only, so a seed gives the same draws."""
        last = self._since
        if last is not None and last[0] == (trace.uid, trace.clock, cs):
            # nothing but this kernel's own write committed since its last step: the other
            # choices and the compiled functions hold; the start is read from the trace as
            # always (so that a resumed chain starts from the same numbers)
            keys, u0, _ = self._start(trace, cs)
            comp, ovals = last[1]
        else:
            keys, u0, comp, ovals = self._prepare(trace, cs, transitions=True)
        seed = np.uint32(rng.integers(2**32))
        n = comp.length if self._alone and not computes_values(trace) else 1
        eps, imm = self._parameters(comp, keys, u0, ovals, seed)
        adapting = False
        stages, a_state = comp.no_stages, comp.idle
        adapt = self._adapt.get((keys, comp.size)) if self.tuning else None
        if adapt is not None:
            a_state, schedule, i = adapt
            if i < len(schedule):
                adapting = True
                n = min(n, len(schedule) - i)
                stages = np.zeros_like(comp.no_stages)
                stages[:n] = schedule[i:i + n]
        packed, a_new = comp.chunk(seed, np.int64(n), u0, ovals, a_state, stages,
                                   np.bool_(adapting), np.float64(eps), imm)
        if adapting:
            adapt[0], adapt[2] = a_new, adapt[2] + n
        position, (values, lj, eps_out, stats) = comp.unpack(np.asarray(packed))
        return _Ahead(trace, keys, n, values, lj, eps_out, stats,
                      not np.array_equal(position, u0), (comp, ovals))

    def pending_draw(self):
        """The draw not yet written into the trace (a chain with this kernel alone):
        ``({variable name: value}, log p(x, y))``, or None."""
        if self._pending is None:
            return None
        keys, values, lj = self._pending
        return {_name(k): float(v) if np.ndim(v) == 0 else np.array(v)
                for k, v in zip(keys, values)}, lj

    def flush(self, trace) -> None:
        """Write the draw :meth:`pending_draw` holds into the trace (the chain does before
        anything else reads it).  Its own generator: the draws never depend on when."""
        if self._pending is None:
            return
        keys, values, _ = self._pending
        self._pending = None
        self._write(trace, np.random.default_rng(0), keys, values)
        if self._ahead is not None and self._ahead.trace is trace:
            self._ahead.clock = trace.clock

    def run_alone(self) -> None:
        """The chain's kernel is this one alone: transitions may be computed ahead, many per
        compiled call, and their draws recorded before the trace is written
        (:meth:`pending_draw`, :meth:`flush`)."""
        self._alone = True

    def _compile(self, program, keys, ushapes, others, constants: bool = False):
        """The compiled functions for this structure, and the values they take.  The other
        choices are arguments, and so are the program's numeric array arguments (its data:
        :func:`~thrifty.core.gradient.data_arguments`) unless the model's code needs their
        values, which then are constants; where the program's control flow reads a discrete
        choice (``if z == 1``), those are compiled in as constants too (recompiled when they
        change).  Compiled functions are shared within a process by the programs of one
        :func:`program_key` (with the same settings and structure).  ``constants``: the data
        as constants whatever the model."""
        known = self._program(program)
        if known.data:
            marker = self._marker(known, keys, ushapes, others)
            if _cached(marker) is None and not constants:
                try:
                    return self._compile_for(program, known.key, keys, ushapes,
                                             {**others, **known.data})
                except Exception:  # (the model's code needs the data's values: a tracing
                    # error, or thrifty's explanation of one) — tried once per key
                    self.constants = None
                    _store(marker, DATA_AS_CONSTANTS)
            return self._compile_for(program, known.constants_key(), keys, ushapes, others)
        return self._compile_for(program, known.key, keys, ushapes, others)

    def _program(self, program) -> _ProgramKeys:
        """The program's data as arrays of JAX and its keys, made once a kernel copy (so data
        changed in place between two ``th.infer`` calls are read anew)."""
        known = self._keys.get(id(program))
        if known is None or known.program is not program:
            known = self._keys[id(program)] = _ProgramKeys(program)
        return known

    def _marker(self, known, keys, ushapes, others) -> tuple:
        """Where the cache says that this structure's density takes the data as constants."""
        return (known.key, self._settings(), keys, ushapes, structure(others),
                DATA_AS_CONSTANTS)

    def _compile_for(self, program, key, keys, ushapes, others):
        """:meth:`_compile` for one program key, ``others`` the values the functions take."""
        okeys = tuple(others)
        sig = (key, self._settings(), keys, ushapes, structure(others))
        comp = _cached(sig)
        if isinstance(comp, _Compiled):
            self._found[comp] = sig
        if comp is None:
            comp = _Compiled(self, program, keys, ushapes, okeys, {})
            try:
                self._ready(comp, tuple(others.values()))
            except NotDifferentiable as e:
                if not e.traced:
                    raise
                comp = ("static", e.where)  # (tried below: if the block's values are at fault,
            _store(sig, comp)  # it fails)
        if type(comp) is not tuple:
            return comp, tuple(others.values())
        discrete = {k: v for k, v in others.items()  # (choices: the data stay inputs)
                    if k[:1] != (ARGUMENT,) and np.asarray(v).dtype.kind in "biu"}
        rest = tuple(k for k in okeys if k not in discrete)
        self.constants = (tuple(key_name(k) for k in discrete), comp[1],
                          any(np.ndim(v) for v in discrete.values()))
        ssig = (sig, tuple((k, np.asarray(v).tobytes()) for k, v in discrete.items()))
        comp = _cached(ssig)
        if comp is not None:
            self._found[comp] = ssig
        if comp is None:
            comp = _Compiled(self, program, keys, ushapes, rest, discrete)
            self._ready(comp, tuple(others[k] for k in rest))
            _store(ssig, comp)
            self._recompiles += 1
            # (arrays of states or labels: configurations without end; a top-level choice's
            # few values: each compiled once, then reused — warned about only if many)
            limit = RECOMPILES_WARN * (1 if self.constants[2] else 4)
            if self._recompiles == limit:
                warnings.warn(self.constants_note(f"has compiled its density {limit} times in "
                                                   "this chain"), stacklevel=user_stacklevel())
        return comp, tuple(others[k] for k in rest)

    def constants_note(self, what: str) -> str:
        """Why the density is compiled anew for new values of discrete choices, and the fix."""
        names, where, _ = self.constants
        return (f"{self.label()} {what}: the program reads the discrete choice(s) "
                f"{', '.join(names)} in a way JAX cannot trace ({where}), so "
                "their values are compiled into the density as constants, and every new value "
                "compiles it anew (about a second each). Where another kernel changes them at "
                "every step (PGAS on a chain's states, Gibbs on labels), move these continuous "
                "choices with th.mh(..., th.drift()) — or make that code traceable by indexing "
                "arrays of JAX (A = jnp.asarray(A) once, then A[prev]), at a cost: the other "
                "kernels then compute those sites with JAX arrays, one eager operation at a "
                "time, many times slower than with NumPy)")

    def _ready(self, comp, ovals) -> None:
        """Probe the density (errors before compiling) and size the compiled loop: up to
        AHEAD transitions, and at most AHEAD_BYTES of their draws."""
        import jax.numpy as jnp

        comp.probe(np.zeros(comp.size), ovals)
        comp.compile_loop(comp.flops <= CHEAP_FLOPS or comp.ops >= MANY_OPS)
        nbytes = sum(int(np.prod(v.shape)) * 8 for v in comp.shapes[0]) + 64
        # (a kernel with others in the chain takes one transition per call: a loop of one, its
        # outputs not padded to AHEAD rows that would be copied out at every step)
        comp.length = int(max(1, min(AHEAD, AHEAD_BYTES // nbytes))) if self._alone else 1
        comp.no_stages = np.zeros((comp.length, 2), dtype=np.int64)
        idle = comp.adapt_init(jnp.zeros(comp.size), 1.0)
        comp.idle = jax_tree_map(lambda x: jnp.asarray(x, dtype=jnp.result_type(x)), idle)

    def _settings(self) -> tuple:
        return (self.nuts, self.num_steps, self.target_accept, self.dense_mass,
                self.max_tree_depth, self.step_size is None, self._alone)

    def _parameters(self, comp, keys, u0, ovals, seed):
        """(step size, inverse mass matrix) of the next transitions, per structure of the
        block (its keys and size: another kernel in a ``th.cycle`` may resize a plate of the
        block or create and drop its choices).  During the burn-in the structure's adaptation
        gives them (see :class:`_Compiled`), started at its first transition with the step
        size of Hoffman & Gelman's (2014) Alg. 4 heuristic (:func:`_reasonable_step_size`),
        as Stan starts its dual averaging.  After the burn-in they are fixed per structure and
        depend on the burn-in alone: the adaptation's final values, and for a structure the
        burn-in did not adapt a unit mass matrix and the step size adapted over the most
        transitions — or, with no adaptation at all (no burn-in, a kernel stepped directly),
        the heuristic's at the kernel's first transition.  A step size chosen by the
        heuristic at a later state would make each transition's kernel depend on the state it
        starts from (and on its own random key, which the heuristic shares): the chain would
        no longer leave the posterior invariant (Andrieu & Thoms 2008)."""
        import jax.numpy as jnp

        shape = (keys, comp.size)

        def unit():
            return jnp.eye(comp.size) if self.dense_mass else jnp.ones(comp.size)

        def reasonable():
            if self.step_size is not None:
                return self.step_size
            return _reasonable_step_size(comp, seed, u0, ovals, unit())

        if self.tuning:
            adapt = self._adapt.get(shape)
            if adapt is None:
                from blackjax.adaptation.window_adaptation import build_schedule

                n = max(self.burn_in_steps, 1)
                schedule = build_schedule(n) if n >= 150 else [(0, False)] * n
                a_state = comp.adapt_init(jnp.asarray(u0), reasonable())
                a_state = jax_tree_map(lambda x: jnp.asarray(x, dtype=jnp.result_type(x)),
                                       a_state)
                adapt = self._adapt[shape] = [
                    a_state, np.asarray(schedule, dtype=np.int64).reshape(-1, 2), 0]
            a_state = adapt[0]  # (after the schedule: its last values, not adapting)
            step = a_state.step_size if self.step_size is None else self.step_size
            return np.float64(step), a_state.inverse_mass_matrix
        tuned = self._tuned.get(shape)
        if tuned is None:
            adapt = self._adapt.get(shape)
            if adapt is not None:
                step, imm = comp.adapt_final(adapt[0])
            elif self._adapt:  # (a structure the burn-in did not meet)
                step, _ = comp.adapt_final(max(self._adapt.values(), key=lambda a: a[2])[0])
                imm = unit()
            else:
                if self._first_step is None:
                    self._first_step = reasonable()
                step, imm = self._first_step, unit()
            tuned = self._tuned[shape] = (
                np.float64(step if self.step_size is None else self.step_size), imm)
        return tuned

    def _tune(self, on: bool) -> None:
        if not on and self.tuning:
            self._tuned = {}  # the adaptation's final values are taken at the next step
            self._ahead = None  # (transitions computed with the adaptation's values)
            self.draw_stats()  # (the burn-in's last transition is no draw's: a first draw
            # no transition of this kernel preceded has none)
        self.tuning = on

    def _record(self, stats, step_size) -> None:
        diverging, energy, acceptance, n_steps, depth, moved = stats
        info_d = {
            "diverging": bool(diverging),
            "energy": float(energy),
            "acceptance_rate": float(acceptance),
            "n_steps": int(n_steps),
            "step_size": float(step_size),
        }
        if self.nuts:
            info_d["tree_depth"] = int(depth)
        self._last = info_d
        self.info.proposed += 1
        self.info.accepted += bool(moved)  # (a transition that returns its start: rejected)
        self.info.count("divergences", info_d["diverging"])
        self.info.count("gradient_evaluations", info_d["n_steps"])
        self.info.count("mean_acceptance", info_d["acceptance_rate"])

    def _write(self, trace, rng, keys, values) -> bool:
        """Write the new values into the trace: one run with them given; whether it did."""
        targets, vec, locs = {}, {}, []
        for k, v in zip(keys, values):
            v = np.asarray(v, dtype=float)
            if is_plate_chain(k):  # a plate's chains: every element at every step
                paddr, chain, rel = k
                for t in range(v.shape[1]):
                    vec[(paddr, chain + (t,) + rel)] = VecTarget(np.arange(len(v)), v[:, t])
            elif k and isinstance(k[0], tuple) and k in self._chain_keys:  # a chain's steps
                for t in range(len(v)):
                    addr = k[0] + (t,) + k[1]
                    targets[addr] = v[t] if v[t].ndim else float(v[t])
                    locs.append(locate(trace, addr))
            elif k and isinstance(k[0], tuple):  # a plate site: every element
                vec[k] = VecTarget(np.arange(len(v)), v)
            else:
                targets[k] = v if v.ndim else float(v)
                locs.append(locate(trace, k))
        plan = plan_for(trace, locs)
        planned = {paddr: t.elems for (paddr, _), t in vec.items()}  # (every element: once
        for paddr, elems in planned.items():  # per plate, not once per step of its chains)
            plan_elements(trace, plan, paddr, elems)
        # (through execute: plate elements or chain steps a subsampling kernel left stale are
        # rescored first, 000 §3.5, so that the run's stored log-densities are known)
        run = self.execute(trace, rng, targets=targets, vec=vec, plan=plan)
        if run.log_weight > -math.inf:
            run.commit()
            return True
        self.info.count("refused_at_boundary")  # a constrained value rounded onto its boundary
        return False


class NUTS(HMC):
    """The No-U-Turn sampler on a block of continuous choices; see :func:`thrifty.nuts`."""

    name = "nuts"
    nuts = True

    def __init__(self, selection, *, target_accept: float = 0.8, dense_mass: bool = False,
                 max_tree_depth: int = 10):
        super().__init__(selection, None, None, target_accept=target_accept,
                         dense_mass=dense_mass, max_tree_depth=max_tree_depth)


@checked_keywords
def nuts(selection, *, target_accept: float = 0.8, dense_mass: bool = False,
         max_tree_depth: int = 10) -> NUTS:
    """The No-U-Turn sampler (BlackJAX) on the continuous choices ``selection`` names:
    top-level sites, plate sites (all elements) and sites of a markov chain (all steps; in a
    plate, all elements' steps), moved jointly as one block in the
    unconstrained space of their supports, with gradients from JAX.  Step size and inverse mass
    matrix (diagonal, or dense with ``dense_mass=True``) adapt during the burn-in (Stan's
    windows); usable alone or in ``th.cycle`` / ``th.mixture`` with any other kernel.  Needs
    ``pip install 'thrifty[jax]'``.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m(y):
    ...     mu = th.sample("mu", dist.Normal(0.0, 10.0))
    ...     sigma = th.sample("sigma", dist.HalfNormal(5.0))
    ...     with th.plate("data", len(y)) as i:
    ...         th.observe("y", dist.Normal(mu, sigma), y[i])
    >>> y = np.random.default_rng(0).normal(3.0, 2.0, 50)
    >>> r = th.infer(m(y), th.nuts(["mu", "sigma"]), num_samples=300, burn_in=300, seed=0,
    ...              progress=False)
    >>> bool(abs(r["mu"].mean() - y.mean()) < 0.3), int(r.sample_stats["diverging"].sum())
    (True, 0)
    """
    return NUTS(selection, target_accept=target_accept, dense_mass=dense_mass,
                max_tree_depth=max_tree_depth)


@checked_keywords
def hmc(selection, step_size: float | None = None, num_steps: int | None = None, *,
        target_accept: float = 0.8, dense_mass: bool = False) -> HMC:
    """Hamiltonian Monte Carlo (BlackJAX) on the continuous choices ``selection`` names, with
    leapfrog steps of size ``step_size`` (adapted during the burn-in when not given, with the
    inverse mass matrix; see :func:`nuts`), ``num_steps`` of them on average (10 when not
    given): each transition draws its number uniformly from 1 to 2 · num_steps − 1.  A fixed
    number makes the trajectories of a near-Gaussian target nearly periodic (Neal 2011,
    §5.4.2.2: randomise the path length): on a normal mean the draws alternate about the mean
    and their spread mixes slowly, with no warning from the ESS of the mean.

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m():
    ...     th.sample("x", dist.Gamma(4.0, 2.0))          # moved as log(x) on the real line
    >>> r = th.infer(m(), th.hmc("x", step_size=0.3, num_steps=10), num_samples=1000, seed=0,
    ...              progress=False)
    >>> bool(abs(r["x"].mean() - 2.0) < 0.25), bool((r["x"] > 0).all())
    (True, True)
    """
    return HMC(selection, step_size, num_steps, target_accept=target_accept,
               dense_mass=dense_mass)
