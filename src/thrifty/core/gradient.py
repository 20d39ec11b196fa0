"""The gradient run: the log-density of a block of continuous choices given every other choice,
as a function that an array library (JAX) can differentiate and compile.

A gradient kernel (HMC, NUTS) needs ``u ↦ log p(x(u), rest)`` for the block's unconstrained
coordinates ``u`` with everything else held at its value in the trace.  :class:`GradientRun`
executes the program once with

* each block choice's value ``forward(u)`` through the bijection of its support
  (:mod:`thrifty.transforms`), the support read from the distribution the program builds *in
  this execution* (bounds that depend on other block choices move with them, as in Stan), and
  ``log |det J|`` added;
* every other latent choice's value read from ``others`` (address → value; a plate site's or a
  chain site's whole column), which the caller takes from the trace, and so are observations
  the trace holds in place of the data (Geweke's successive-conditional simulator);
* every site's log-density summed, in the namespace of the arrays (sites that do not depend on
  the block add constants, which a gradient ignores).

Plates execute all their elements at once (``i = slice(0, size)``); a markov chain runs its
steps in order with each step's choices read from the stored columns — a chain inside a plate
runs each step over all the plate's elements at once, ``prev`` holding their states, as the
batched executor runs it (:mod:`thrifty.core.plate_chain`).  The run never writes the trace.
What it cannot differentiate it refuses, naming the site: a coupled process or collapsed family
(their log-densities are NumPy state), a memoized function, a plate inside a plate or a step,
a chain inside a step, and model code that hands a block value to a NumPy-only function or to
Python control flow (``np.exp(mu)``, ``if mu > 0``) — see :func:`explain`.

Because ``others`` is an argument, the compiled function is reused while the *structure* (the
addresses and shapes of the block and of the other choices) holds; values of other choices
(labels a Gibbs kernel moved, states PGAS drew) change without recompiling.
"""

from __future__ import annotations

import traceback

import numpy as np

from thrifty import _context
from thrifty.core import sites
from thrifty.core.address import as_name, fmt
from thrifty.core.vocab import DETERMINISTIC, LATENT
from thrifty.distributions.base import Distribution
from thrifty.distributions.xp import SUMMED, is_foreign
from thrifty.errors import ModelError, NotDifferentiable

OBSERVED = "<observed>"  # key prefix of simulated observations in ``others``
ARGUMENT = "<argument>"  # key prefix of the program's array arguments in ``others``

BLOCK_HINT = (
    "write that code with arithmetic and indexing (mu + tau * eta[i], X[i] @ w) or with "
    "jax.numpy functions (jnp.exp(mu)), or update the choice with another kernel (th.mh, "
    "th.gibbs)"
)


def other_values(trace, block: set) -> dict:
    """Every latent choice of ``trace`` outside ``block``: address → value (top-level sites),
    (plate address, site) → column over the elements, (chain address, site) → column over the
    steps, (plate address, chain, site) → (elements, steps, ...) columns of a chain inside a
    plate.  The keys name the structure; :func:`structure` adds the shapes."""
    root = trace.root
    out: dict = {}
    for local, site in root.sites.items():
        if site.kind == LATENT and local not in block:
            out[local] = site.value
    for paddr, node in root.plates.items():
        for rel, col in node.sites.items():
            if col.kind == LATENT and (paddr, rel) not in block:
                out[(paddr, rel)] = col.values.frozen()
        for crel, cols in node.chains.items():
            for rel, col in cols.sites.items():
                if col.kind == LATENT and (paddr, crel, rel) not in block:
                    out[(paddr, crel, rel)] = col.values.frozen()
    for caddr, node in root.chains.items():
        for rel, site in node.sites.items():
            if site.kind == LATENT and (caddr, rel) not in block:
                out[(caddr, rel)] = site.values.frozen()
    for key, value in (trace.obs_values or {}).items():  # observations simulated in place of
        out[(OBSERVED, key)] = value  # the data (Geweke's successive-conditional simulator)
    return out


def data_arguments(program) -> dict:
    """The program's arguments a compiled density may take as inputs rather than constants:
    ``(ARGUMENT, position or keyword) → array`` for each top-level argument that is a numeric
    NumPy array (float or integer; boolean masks select by value, which JAX cannot trace).
    Given in ``others``, :meth:`GradientRun.execute` passes them to the model in place of the
    program's own, so that one compiled density serves every data set of the same shapes; a
    model whose code needs their values (``np.log(y)``, ``if y[0] > 0``) cannot be traced so,
    and the caller compiles the data in as constants instead."""
    out = {}
    items = [*enumerate(program.args), *program.kwargs.items()]
    for k, a in items:
        if type(a) is np.ndarray and a.dtype.kind in "fiu":
            out[(ARGUMENT, k)] = a
    return out


def computes_values(trace) -> bool:
    """Whether the program records computed values (``th.deterministic``), which a gradient
    run does not return: draws that skip the trace's write must then not be recorded."""
    root = trace.root
    nodes = [root, *root.plates.values(), *root.chains.values(),
             *(cols for p in root.plates.values() for cols in p.chains.values())]
    return any(s.kind == DETERMINISTIC for n in nodes for s in n.sites.values())


def structure(values: dict) -> tuple:
    """The addresses, shapes and dtypes of ``values``: what a compiled density depends on."""
    return tuple((k, np.shape(v), _dtype(v)) for k, v in values.items())


def _dtype(v) -> str:
    dt = getattr(v, "dtype", None)  # (an array of JAX: read without a copy to the host)
    return np.dtype(dt).str if dt is not None else np.asarray(v).dtype.str


class GradientRun:
    """One execution of ``program`` with the block's values given unconstrained (see the module
    docstring).  ``block``: key → unconstrained array, keys as in :func:`other_values`;
    ``others``: the other latent choices.  After :meth:`execute`, ``lp`` is the log-density
    (with the block's log-Jacobians, also kept apart in ``jac``) and ``values`` the block's
    constrained values."""

    def __init__(self, program, block: dict, others: dict, xp):
        self.program = program
        self.block = block
        self.others = others
        self.xp = xp
        self.lp = 0.0
        self.ok = True  # every site's parameters valid (see score)
        self.jac = 0.0  # the block's log-Jacobians (part of lp): lp - jac is log p(x, y)
        self.values: dict = {}
        self.frame = _Frame(self, ())
        self.mem_fns: dict = {}
        self.last = None  # the address of the last site executed (for error messages)
        self.new_obs = None  # (a run that simulates no observation)
        self.obs_values = others  # observations the trace holds in place of the data
        self.captured = self.factors = None
        self.bounds: list = []  # (address, bound) of fixed values on supports with array bounds

    def execute(self):
        program = self.program
        args, kwargs = program.args, program.kwargs
        if any(type(k) is tuple and k[:1] == (ARGUMENT,) for k in self.others):  # (data
            # given as inputs: data_arguments)
            args = tuple(self.others.get((ARGUMENT, j), a) for j, a in enumerate(args))
            kwargs = {k: self.others.get((ARGUMENT, k), a) for k, a in kwargs.items()}
        _context.EXECUTIONS.runs.append(self)
        try:
            program.fn(*args, **kwargs)
        except ModelError:
            raise
        except Exception as e:
            raise explain(self, e) from e
        finally:
            _context.EXECUTIONS.runs.pop()
        for k, v in list(self.values.items()):  # a chain's steps, stacked
            if type(v) is dict:
                axis = 1 if is_plate_chain(k) else 0  # (elements, steps, ...) in a plate
                if sorted(v) != list(range(self.block[k].shape[axis])):
                    raise ModelError(f"the gradient run did not meet every step of the block's "
                                     f"chain site {key_name(k)}")
                self.values[k] = self.xp.stack([v[t] for t in range(len(v))], axis=axis)
        xp = self.xp  # (NaN and invalid parameters anywhere: the density is 0)
        self.lp = xp.where(self.ok & ~xp.isnan(self.lp), self.lp, -float("inf"))
        missing = [k for k in self.block if k not in self.values]
        if missing:
            raise ModelError(f"the gradient run did not meet the block's choice "
                             f"{key_name(missing[0])}: the program's structure depends on "
                             "values the kernel changes")
        return self

    def note_bounds(self, addr, d) -> None:
        """A value held fixed (an observation, a choice outside the block) whose family's
        support has bounds of the array library: where they move with the block (``y ~
        Uniform(0, θ)``), the density jumps to 0 as a bound crosses the value, a wall a
        gradient kernel's trajectories cannot follow (:meth:`HMC.moving_supports` finds which
        do)."""
        try:
            support = d.support
        except (AttributeError, NotImplementedError, TypeError, ValueError):
            return
        for bound in (getattr(support, "lower", None), getattr(support, "upper", None)):
            if bound is not None and is_foreign(bound):
                self.bounds.append((addr, bound))

    def score(self, d, x):
        """``sum(d.log_prob(x))`` as the formula gives it; NaN and invalid parameters
        (``d._valid``) are applied to the total at the end (:func:`finish`)."""
        SUMMED.append(d)
        try:
            lp = d.log_prob(x)
        finally:
            SUMMED.pop()
        valid = getattr(d, "_valid", None)
        if valid is not None:
            self.ok = self.ok & self.xp.all(valid)
        return self.xp.sum(lp)



class _Lanes:
    """One site of a gradient run: one traced value (a plate's elements, or a plate's chain
    step, taken together).  There is no replay decision to make — a block choice's value is
    given, its unconstrained coordinates through the bijection of its support (``log |det J|``
    added); every other choice is read from the trace — and nothing is checked per site: NaN
    and invalid parameters zero the total at the end (:meth:`GradientRun.execute`)."""

    __slots__ = ("addr", "jac", "key", "okey", "run", "t")

    strict = True

    def __init__(self, run, key, addr, t, okey):
        self.run, self.key, self.addr, self.t, self.okey = run, key, addr, t, okey

    # -- latent choices (thrifty.core.replay) ---------------------------------------------------
    @staticmethod
    def fits(d, value) -> bool:
        return True

    @staticmethod
    def finite(lp) -> bool:
        return True  # (a traced value: applied to the total at the end)

    @staticmethod
    def values_of(target):
        return target

    def log_prob(self, d, value):
        d = _own(d)
        self.run.note_bounds(self.addr, d)
        return self.run.score(d, value)

    def given(self, d, u, acct):
        from thrifty.transforms import biject_to

        run = self.run
        d = _own(d)
        b = biject_to(d.support)
        x = b.forward(u)
        jac = run.xp.sum(b.log_abs_det_jacobian(u))
        run.jac = run.jac + jac
        self.jac = jac  # (added to the total after the density: keep_latent)
        return x, run.score(d, x)

    def fresh(self, d, acct):
        raise ModelError(f"{fmt(self.addr)}: the gradient run met a choice the trace does not "
                         "have (the program's structure depends on the block's values, which a "
                         "gradient kernel needs fixed)")

    # -- observations and factors (thrifty.core.sites) ------------------------------------------
    def stored_observation(self, obs_values, value):
        stored = obs_values.get((OBSERVED, self.okey))
        return value if stored is None else stored

    def observed_lp(self, d, value):
        d = _own(d)
        self.run.note_bounds(self.addr, d)
        return self.run.score(d, _own(value)), None

    def factor_lp(self, log_weight):
        return self.run.xp.sum(log_weight), None


def _own(x, depth: int = 0):
    """``x`` with the NumPy arrays it holds copied: a NumPy array, or a distribution whose
    attributes (its parameters, a wrapped base distribution, lists of them) are.  JAX keeps a
    NumPy array that traced code reads as a constant of the compiled function *by reference*
    until it lowers the whole trace, so an array the model fills again after the site (a buffer
    refilled at every step of a chain, or shared by two sites) would be read with its last
    contents; a copy holds what the site was given, as every other executor reads it.  Tracing
    runs once per compiled density: the copies cost nothing per transition."""
    t = type(x)
    if t is np.ndarray:
        return x.copy()
    if depth > 3 or not isinstance(x, Distribution):
        if (t is list or t is tuple) and depth <= 3 and any(
                type(v) is np.ndarray or isinstance(v, Distribution) for v in x):
            return t(_own(v, depth + 1) for v in x)
        return x
    state = getattr(x, "__dict__", None)
    if not state:
        return x
    owned = {k: _own(v, depth + 1) for k, v in state.items()}
    if all(owned[k] is v for k, v in state.items()):
        return x
    y = object.__new__(t)
    y.__dict__.update(owned)
    return y


def _column(value, key, t):
    """A chain column's entry at step ``t`` (axis 1 of a chain inside a plate)."""
    if t is None:
        return value
    return value[:, t] if is_plate_chain(key) else value[t]


class _Frame:
    """The primitives in a gradient run (this executor's policy of :mod:`thrifty.core.sites`):
    top level (``plate is None``), a plate's elements all at once, one step of a top-level
    chain, or one step of a plate's chains (every element's at once)."""

    def __init__(self, run: GradientRun, prefix: tuple, plate=None, step=None):
        self.run = run
        self.prefix = prefix
        self.scope = ()
        self.plate_addr = plate  # the plate's address
        self.step = step  # (chain address, t); in a plate: (the chain's name in the plate, t)
        self.t = None if step is None else step[1]

    def _key(self, local):
        if self.plate_addr is not None:
            if self.step is not None:
                chain, t = self.step
                return ((self.plate_addr, chain, local),
                        self.plate_addr + ("*",) + chain + (t,) + local)
            return (self.plate_addr, local), self.plate_addr + ("*",) + local
        if self.step is not None:
            chain, t = self.step
            return (chain, local), chain + (t,) + local
        return local, local

    sample = sites.sample
    observe = sites.observe
    factor = sites.factor
    deterministic = sites.deterministic
    sink = None  # (no fresh, stale or proposal terms: nothing is drawn)

    def site_name(self, name) -> tuple:
        return self.scope + as_name(name)

    def site_lanes(self, local, d, what):
        key, addr = self._key(local)
        self.run.last = addr
        if self.step is None:
            okey = key
        elif self.plate_addr is None:
            okey = addr
        else:  # (the key the batched executor stores it under: plate, relative address)
            okey = (self.plate_addr, addr[len(self.plate_addr) + 1:])
        return _Lanes(self.run, key, addr, self.t, okey)

    def site_stored(self, local, lanes):
        run, key = self.run, lanes.key
        if key in run.block:
            return None
        x = run.others.get(key)
        return None if x is None else (_column(x, key, self.t), None)

    def site_target(self, local, lanes):
        u = self.run.block.get(lanes.key)
        return None if u is None else _column(u, lanes.key, self.t)

    def keep_latent(self, local, lanes, d, value, lp, status, old):
        run = self.run
        run.lp = run.lp + lp
        if status:  # a block choice: its log |det J| and its constrained value
            run.lp = run.lp + lanes.jac
            key = lanes.key
            if self.t is None:
                run.values[key] = value
            else:
                run.values.setdefault(key, {})[self.t] = value
        return value

    def keep_observed(self, local, lanes, d, value, lp, total) -> None:
        self.run.lp = self.run.lp + lp

    def keep_value(self, local, value) -> None:
        pass

    def sample_process(self, local, d):
        raise ModelError(f"{fmt(self._key(local)[1])}: a gradient kernel cannot differentiate "
                         "through a coupled process or collapsed family (its state is NumPy); "
                         "update the choices it depends on with th.mh or th.gibbs")

    def observe_process(self, local, d, value):
        raise ModelError(f"{fmt(self._key(local)[1])}: a gradient kernel cannot differentiate "
                         "through a collapsed family (its sufficient statistics are NumPy "
                         "state)")

    def sample_owned(self, name, d):
        """A hyperparameter drawn by a coupled process (``th.CRP(alpha=dist.Gamma(1.0, 1.0),
        name="alpha")``): its density given the process's draws is the process's, computed on
        NumPy state, so a gradient run neither differentiates with respect to it nor runs the
        process.  (The process adds its name to the message.)"""
        addr = self._key(self.site_name(name))[1]
        raise NotDifferentiable(
            f"the hyperparameter {fmt(addr)} is drawn by the process, a coupled process "
            "whose density is computed on NumPy state: a gradient kernel (th.nuts, "
            "th.hmc) takes neither it nor the process's draws; update it with th.mh "
            "(th.infer's default kernel gives it adaptive MH) and the draws with th.gibbs")

    def mem_read(self, mem, key):
        raise ModelError(f"{fmt(mem.addr)}: a gradient run does not read memoized functions "
                         "yet; update the choices of this program with th.mh")

    def plate(self, name, size):
        if self.plate_addr is not None or self.step is not None:
            raise ModelError(f"plate {name!r}: a gradient run executes plates at the top level "
                             "only (not inside a plate or a chain step)")
        return _PlateContext(self, self.scope + as_name(name), int(size))

    markov = sites.markov

    def chain(self, local, step, length, init, args):
        if self.step is not None:
            raise ModelError(f"markov chain {fmt(self.prefix + local)}: a chain inside a "
                             "markov step")
        return _TracedSteps(self, local, int(length), init)


class _TracedSteps(sites.Chain):
    """A chain in a gradient run (its policy of :func:`thrifty.core.sites.markov`): every step
    in order, each in a frame that reads the step's entries of the chain's columns."""

    def __init__(self, frame: _Frame, local: tuple, T: int, init):
        self.frame, self.local, self.T, self.prev, self.out = frame, local, T, init, []

    def first(self):
        return 0 if self.T else None

    def enter(self, t):
        frame = self.frame
        sf = _Frame(frame.run, self.local + (t,), plate=frame.plate_addr, step=(self.local, t))
        return sf, self.prev

    def leave(self, t, frame, state):
        self.out.append(state)
        self.prev = state
        return t + 1 if t + 1 < self.T else None

    def states(self):
        return self.out


class _PlateContext:
    def __init__(self, parent: _Frame, local: tuple, size: int):
        self.parent, self.local, self.size = parent, local, size

    def __enter__(self):
        run = self.parent.run
        run.frame = _Frame(run, self.local, plate=self.local)
        return slice(0, self.size)

    def __exit__(self, *exc):
        self.parent.run.frame = self.parent
        return False


def is_plate_chain(key) -> bool:
    """Whether ``key`` is ``(plate address, chain, site)``: a site of a chain inside a plate."""
    return len(key) == 3 and all(type(p) is tuple for p in key)


def key_name(key) -> str:
    if is_plate_chain(key):
        return fmt(key[0] + ("*",) + key[1] + ("*",) + key[2])
    if key and isinstance(key[0], tuple):
        return fmt(key[0] + ("*",) + key[1])
    return fmt(key)


_JAX_TRACER_ERRORS = ("TracerArrayConversionError", "TracerBoolConversionError",
                      "ConcretizationTypeError", "TracerIntegerConversionError")


def explain(run: GradientRun, e: BaseException) -> ModelError:
    """A ModelError for an exception raised by the model's code in a gradient run: which block
    choices were read, the line of the model's code, and what to write instead."""
    where = _user_line(e)
    after = f" after the site {fmt(run.last)}" if run.last is not None else ""
    block = ", ".join(key_name(k) for k in run.values) or "none yet"
    name = type(e).__name__
    family = _family_of(e)
    if family is not None and name in _JAX_TRACER_ERRORS:  # inside a family's own code
        site = f"{fmt(run.last) if run.last else 'the model'}{where}"
        if not getattr(type(family), "array_api", False):  # a NumPy-only family
            from thrifty.distributions.base import not_array_api

            return NotDifferentiable(f"{site}: {not_array_api(family, run.xp)}")
        # a family that takes the array API failed on a traced value: say what failed
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return NotDifferentiable(
            f"{site}: {type(family).__name__} failed on the traced values of a gradient run "
            f"({name}: {text}), so a gradient kernel cannot differentiate through it here; "
            "update the choices it depends on with another kernel (th.mh, th.gibbs)")
    if family is not None and name != "DistributionError":  # a derivative JAX lacks (the
        # incomplete beta function's in its shape parameters), met as the gradient is traced
        return NotDifferentiable(
            f"the model's code{where}{after}: {type(family).__name__} failed on the traced "
            "values of a gradient run "
            f"({name}: {str(e).strip()}), so a gradient kernel cannot differentiate through it "
            "here; update the choices it depends on with another kernel (th.mh, th.gibbs)")
    if name in _JAX_TRACER_ERRORS:
        what = ("a NumPy function or Python control flow (if, int(), float()) was given a value "
                "that depends on the gradient kernel's block or on another continuous choice "
                "(the other choices are traced too, e.g. a chain's states in prev, so that "
                "another kernel can move them without a recompilation)")
        if name == "TracerBoolConversionError" or name == "ConcretizationTypeError":
            what = ("Python control flow (if, while, int(), float()) depends on a value the "
                    "gradient kernel's block or another continuous choice changes (the other "
                    "choices are traced too), or a NumPy function was given one")
        err = NotDifferentiable(f"the model's code{where}{after} cannot be differentiated: "
                                f"{what} (block choices read so far: {block}); {BLOCK_HINT}")
        err.traced, err.where = True, f"the model's code{where}"
        return err
    if name == "DistributionError":
        return ModelError(f"{fmt(run.last) if run.last else 'the model'}: {e}")
    return ModelError(f"the model's code{where}{after} raised {name} in a gradient run: {e} "
                      f"(block choices read so far: {block}); {BLOCK_HINT}")


def _family_of(e: BaseException):
    """The distribution whose own code raised ``e`` (its constructor or ``log_prob``), if any."""
    from thrifty.distributions.base import Distribution

    tb, found = e.__traceback__, None
    while tb is not None:
        if "/thrifty/distributions/" in tb.tb_frame.f_code.co_filename:
            me = tb.tb_frame.f_locals.get("self")
            if isinstance(me, Distribution):
                found = me
        tb = tb.tb_next
    return found


def _user_line(e: BaseException) -> str:
    """`` at file:line (`source`)`` of the innermost frame outside thrifty, JAX and NumPy."""
    frames = traceback.extract_tb(e.__traceback__)
    skip = ("/thrifty/", "/jax/", "/jaxlib/", "/numpy/", "/scipy/", "/blackjax/")
    for f in reversed(frames):
        if not any(s in f.filename for s in skip):
            code = f" (`{f.line}`)" if f.line else ""
            return f" at {f.filename.rsplit('/', 1)[-1]}:{f.lineno}{code}"
    return ""
