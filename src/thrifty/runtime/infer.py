"""``th.infer``: run MCMC chains — seeds, worker processes, progress, Ctrl-C, checkpoints."""

from __future__ import annotations

import logging
import numbers
import os
import warnings
from functools import reduce
from time import perf_counter

import numpy as np

from thrifty._args import checked_keywords, int_arg, seed_arg
from thrifty._warn import user_stacklevel
from thrifty.core.model import as_program
from thrifty.errors import ArgumentError
from thrifty.inference.kernel import Kernel, warn_zero_acceptance
from thrifty.runtime.chain import ChainRecord, ChainRun, RunConfig
from thrifty.runtime.checkpoint import (
    Checkpoint,
    read_checkpoint,
    run_identity,
    seed_from_key,
    seed_key,
)
from thrifty.runtime.convergence import check_convergence
from thrifty.runtime.interrupt import StopRequest
from thrifty.runtime.parallel import run_parallel, start_method, unspawnable
from thrifty.runtime.progress import Progress
from thrifty.runtime.ray_executor import RayExecutor, run_ray
from thrifty.runtime.recorder import Selector
from thrifty.runtime.result import DENSE_BYTES, Result, build_result

log = logging.getLogger("thrifty")
#: burn-in of ``th.infer`` when none is given and a kernel adapts during it — NUTS's or HMC's
#: step size and mass matrix, ``th.drift()``'s scale — as the default kernel's NUTS does (Stan's
#: and PyMC's default warm-up is 1,000 iterations too)
DEFAULT_KERNEL_BURN_IN = 1000


class InterruptedWarning(UserWarning):
    """``th.infer`` was interrupted (Ctrl-C) and returns the draws collected so far.

    >>> import warnings, thrifty as th
    >>> issubclass(th.InterruptedWarning, UserWarning)  # Ctrl-C: a warning, and the draws so far
    True
    """


@checked_keywords
def infer(
    program,
    kernel=None,
    num_samples: int = 1000,
    burn_in: int | None = None,
    thin: int = 1,
    chains: int = 1,
    seed=None,
    init: dict | None = None,
    progress: bool = True,
    workers: int | None = None,
    checkpoint=None,
    checkpoint_every: float = 60.0,
    record=None,
    exclude=None,
    dense_bytes: int = DENSE_BYTES,
    executor=None,
    check: bool | str = "auto",
    check_every: int | None = None,
) -> Result:
    """Run ``chains`` MCMC chains of ``kernel`` on ``program`` and return their draws.

    Each chain does ``burn_in + num_samples * thin`` kernel steps and records, after the burn-in,
    every ``thin``-th state: the latent values (``result[name]``, shape (chains, draws, ...)),
    the program output (``result.output``) and the log joint density (``result.sample_stats``).
    ``result.stats`` has what each kernel did in the sampling steps and, apart, in the burn-in
    (:class:`~thrifty.runtime.result.Result`).

    Parameters
    ----------
    program : a :class:`~thrifty.Program` (``model(*args)``), or a Model / function of no
        arguments.
    kernel : a kernel (``th.lmh()``, ``th.mh(...)``, ``th.cycle([...])``, ...); each chain runs
        a deep copy, so its statistics are per chain.  ``None``: one kernel per kind of choice
        in a ``th.cycle`` — NUTS for continuous choices, Gibbs for finite discrete ones and
        table labels, PGAS for markov chains, LMH for the rest
        (:mod:`thrifty.inference.default`) — and a sentence saying what it assigned (logged
        and in ``result.notes``).
    num_samples : draws recorded per chain (after the burn-in).
    chains : independent chains, each from its own initial trace and generator.
    thin : kernel steps per recorded draw (every ``thin``-th state is kept).
    burn_in : kernel steps before the first recorded draw, in which kernels adapt (default 1000
        with the default kernel or a kernel that adapts — ``th.nuts``, ``th.hmc`` without a step
        size, ``th.drift()`` without a scale — said in ``result.notes``; else 0).
    seed : an int, None (fresh entropy) or a :class:`numpy.random.SeedSequence`.  Chain ``c``
        uses ``default_rng(SeedSequence(seed).spawn(chains)[c])`` for its initialisation and all
        its steps, so the draws do not depend on ``workers``.  (A Generator is not accepted.)
    init : initial values ``{address: value}`` for every chain (or a list of such dicts, one
        per chain); the other choices are drawn from the prior.
    progress : show a progress bar (stderr): steps/s, acceptance rate, warmup / sampling.
    workers : processes running chains in parallel (default ``min(chains, os.cpu_count())``);
        ``1`` runs the chains one after the other in this process.  Worker processes are
        forked where possible (closures work); with ``spawn`` the program must be picklable.
        Once JAX's runtime has started in this process (a gradient kernel ran here), whatever
        the kernel, workers are not forked (a fork of a multi-threaded process may deadlock)
        but spawned, and only if ``workers`` is given; otherwise the chains run in this process
        (see :mod:`thrifty.runtime.parallel`).  So do the chains of a kernel that computes with
        JAX (``th.nuts``, ``th.hmc``) unless ``workers`` is given: they share one compilation.
    checkpoint, checkpoint_every : a file path, and seconds between writes.  The state of
        every chain (draws, trace, generator state, kernel) is written there every
        ``checkpoint_every`` seconds (default 60), when interrupted and at the end;
        calling ``th.infer`` again with the same path and settings resumes each chain where it
        stopped and gives exactly the draws of an uninterrupted run (with ``seed=None`` the
        checkpoint's seed is used).  A resume with anything else changed — the model's code or
        anything it reaches, the data, the kernel's configuration, ``record``/``exclude``, the
        schedule, thrifty's own source files — is refused
        (:class:`~thrifty.errors.CheckpointError` saying what differs), as is a damaged
        checkpoint or one not written with this user's key (:mod:`thrifty.runtime.sealed`).

    record, exclude : which variables are kept — name patterns (``"w"``, ``"data"``,
        ``["mu", "s.x"]``; ``None``: every latent and deterministic variable).  Recording costs
        what changed since the last draw, never a copy of every plate column per draw.
    dense_bytes : a variable whose dense array (chains × draws × size × itemsize) exceeds
        this many bytes (default 128 MiB) is kept as per-draw changes: ``result[name]``
        materialises it, ``result.sparse(name).mean()`` / ``.var()`` give per-element moments
        without materialising.
    executor : where the chains run: ``None`` (worker processes on this machine, or this
        process; see ``workers``), ``"ray"`` or a :class:`~thrifty.RayExecutor` (Ray tasks on
        the cluster ``ray.init`` connects to — see :mod:`thrifty.runtime.ray_executor`; at most
        ``workers`` at a time, default all chains).  The draws are the same for the same seed.
    check, check_every : check mode (:mod:`thrifty.core.check`, as Gen's ``check=true``): after
        some steps each chain executes the program afresh at its trace's values and compares
        every site's log-density, every node's totals and the log joint with what the
        incremental engine holds; a difference raises :class:`~thrifty.errors.CheckError`
        naming the node and site (a model that breaks what its plates or chains declare, data
        changed during the run, or an engine bug).  ``check="auto"`` (the default) checks after
        step 1 and the last, whenever the steps since the last check took about 33 times what
        it took, and after steps 10, 100, 1000, ... when the steps so far took that much
        (checks take ~3% of the chain's time); the checks after step 1 and the last are left
        out when the chain's checks would then take more than 3% of its time and 10 ms (a
        large model in a short run: each check is a full execution).
        ``check=True`` checks after every step (for debugging and tests: a full execution per
        step), ``check_every=k`` after every k-th step and the last, ``check=False`` never.
        Checking never changes the draws.

    Notes
    -----
    After the draws, a :class:`~thrifty.ConvergenceWarning` names the variables whose split
    R-hat exceeds 1.01 or whose bulk ESS is below 100 per chain (small variables only:
    :mod:`thrifty.runtime.convergence`).
    Ctrl-C stops the chains after their current step (a second Ctrl-C aborts at once) and returns
    the draws so far with ``result.interrupted = True``; chains of unequal lengths are truncated
    to the shortest (chains without draws are left out) and ``result.chain_draws`` keeps them all.

    Examples
    --------
    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m(y):
    ...     mu = th.sample("mu", dist.Normal(0.0, 10.0))
    ...     with th.plate("data", len(y)) as i:
    ...         th.observe("y", dist.Normal(mu, 1.0), y[i])
    >>> r = th.infer(m(np.array([1.0, 2.0, 3.0])), th.mh("mu", th.drift(1.0)), num_samples=2000,
    ...              burn_in=200, chains=2, seed=0, progress=False)
    >>> r["mu"].shape, bool(abs(r["mu"].mean() - 2.0) < 0.2)
    ((2, 2000), True)
    """
    t_start = perf_counter()
    program = _check_program(program)
    assigned = None
    if kernel is None:
        from thrifty.inference.default import default_kernel

        kernel, assigned = default_kernel(program)
        log.info(assigned)
    kernel = _check_kernel(kernel)
    notes: list[str] = [assigned] if assigned else []
    adapting = _adapting(kernel)
    if burn_in is None and (assigned or adapting["gradient"] or adapting["drift"]):
        burn_in = DEFAULT_KERNEL_BURN_IN  # a kernel that needs tuning gets it by default
        if not assigned:
            labels = adapting["gradient"] + adapting["drift"]
            notes.append(f"burn_in={burn_in} by default: {', '.join(labels)} "
                         f"adapt{'s' if len(labels) == 1 else ''} during the burn-in "
                         "(burn_in= sets another)")
            log.info(notes[-1])
    num_samples = _int_arg("num_samples", num_samples, 0)
    burn_in = _int_arg("burn_in", 0 if burn_in is None else burn_in, 0)
    thin = _int_arg("thin", thin, 1)
    chains = _int_arg("chains", chains, 1)
    if workers is not None:
        workers = _int_arg("workers", workers, 1)
    if not isinstance(progress, (bool, np.bool_)):
        raise ArgumentError(f"infer: progress must be True or False, got {progress!r}")
    if (
        isinstance(checkpoint_every, bool)
        or not isinstance(checkpoint_every, numbers.Real)
        or not checkpoint_every >= 0
    ):
        raise ArgumentError(
            f"infer: checkpoint_every must be a number of seconds >= 0, got {checkpoint_every!r}"
        )
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise ArgumentError(
            f"infer: checkpoint must be a file path (str or os.PathLike), got {checkpoint!r}")
    inits = _inits(init, chains)
    ss = _seed_sequence(seed)
    executor = _executor(executor)
    if burn_in == 0:
        _warn_unadapted(adapting)
    if isinstance(dense_bytes, bool) or not isinstance(dense_bytes, numbers.Real):
        raise ArgumentError(f"infer: dense_bytes must be a number of bytes, got {dense_bytes!r}")
    if not dense_bytes >= 0:  # NaN included; inf: every variable dense
        raise ArgumentError(
            f"infer: dense_bytes must be a number of bytes >= 0, got {dense_bytes!r}")
    keep = Selector(record, exclude)
    every, decades = _check_schedule(check, check_every)
    cfg = RunConfig(num_samples, burn_in, thin, None if keep.everything else keep, every, decades)
    config = {
        "num_samples": num_samples,
        "burn_in": burn_in,
        "thin": thin,
        "chains": chains,
        "seed": seed_key(ss),
        "program": program.name,
    }
    if checkpoint is not None:  # a checkpoint never resumes a different run
        config.update(run_identity(program, kernel, keep, inits))
    records = [ChainRecord() for _ in range(chains)]
    ckpt = None
    if checkpoint is not None:
        ckpt = Checkpoint(checkpoint, checkpoint_every, chains)
        saved = read_checkpoint(checkpoint)
        if saved is not None:
            ckpt.check(saved, config, seed_given=seed is not None)
            ss = seed_from_key(saved["config"]["seed"])
            config["seed"] = seed_key(ss)
            records = Checkpoint.records(saved)
            done = sum(r.status == "done" for r in records)
            notes.append(
                f"resumed from checkpoint {ckpt.path!r} ({done} of {chains} chains complete, "
                f"{sum(r.num_draws for r in records)} draws)"
            )
        ckpt.config = config
        ckpt.resume(saved)
    seeds = ss.spawn(chains)

    start_iterations = [r.iteration for r in records]
    todo = [c for c, r in enumerate(records) if r.status != "done"]
    default_workers = chains if executor is not None else os.cpu_count() or 1
    n_workers = min(workers or default_workers, max(len(todo), 1))
    if n_workers > 1 and executor is None:
        why = unspawnable(program, kernel, asked=workers is not None)
        if why is not None:  # a JAX kernel, or a process whose JAX runtime started
            n_workers = 1
            notes.append(f"the chains ran one after another in this process: {why}")
            if workers is not None:
                warnings.warn(notes[-1], UserWarning, stacklevel=user_stacklevel())
    parallel = n_workers > 1 or executor is not None
    stop = StopRequest()
    completed = True
    display = Progress(bool(progress) and bool(todo), chains, cfg, parallel, records)
    # Ctrl-C is handled until the result is returned: one arriving after the last step (the
    # final checkpoint, the convergence check) must not lose the draws
    with stop.installed():
        try:
            if executor is not None and todo:
                completed = run_ray(
                    executor, program, kernel, seeds, inits, cfg, records, n_workers, stop,
                    display, ckpt
                )
            elif parallel:
                completed = run_parallel(
                    program, kernel, seeds, inits, cfg, records, n_workers, stop, display, ckpt
                )
            elif todo:
                with _blas_limit(chains):
                    completed = _run_sequential(
                        program, kernel, seeds, inits, cfg, records, stop, display, ckpt
                    )
        finally:
            stop.stopped = True
            display.close()
            if ckpt is not None and todo:
                ckpt.write(records, cfg.total)

        interrupted = stop.requested or not completed or any(r.status != "done" for r in records)
        new_draws = sum(r.new_draws for r in records)
        new_steps = sum(r.iteration - s for r, s in zip(records, start_iterations))
        run_stats = {
            "wall_time": None,  # set below, once the draws are stacked
            "draws": new_draws,
            "draws_per_second": None,
            "steps": new_steps,
            "steps_per_second": None,
            "chains": chains,
            "workers": n_workers,
            "start_method": "ray" if executor is not None else start_method() if parallel
            else "in-process",
            "init_seconds": [r.init_seconds for r in records],
            "chain_seconds": [r.seconds for r in records],
            "interrupted": interrupted,
        }
        stats = _kernel_stats(records)
        stats["run"] = run_stats
        warn_zero_acceptance(_per_chain(records))
        result = build_result(
            records,
            dense_bytes=dense_bytes,
            program=program,
            stats=stats,
            interrupted=interrupted,
            notes=notes,
            config={k: v for k, v in config.items()
                    if k not in ("kernel", "program", "model", "record", "init")},
        )
        result.failed_chains = {c: r.error for c, r in enumerate(records) if r.error is not None}
        _warn_divergences(result)
        if not interrupted:
            check_convergence(result)
        wall = perf_counter() - t_start
        run_stats["wall_time"] = wall
        run_stats["draws_per_second"] = new_draws / wall if wall > 0 else float("nan")
        run_stats["steps_per_second"] = new_steps / wall if wall > 0 else float("nan")
        if interrupted:
            msg = _interrupt_message(records, result, ckpt, completed, parallel)
            warnings.warn(msg, InterruptedWarning, stacklevel=user_stacklevel())
        return result


def _adapting(kernel) -> dict:
    """The labels of the kernels that adapt during the burn-in: gradient kernels without a step
    size, proposals that adapt (``th.drift()`` without a scale)."""
    return {
        "gradient": [label for label, k in kernel.kernels()
                     if getattr(k, "uses_jax", False) and getattr(k, "step_size", 0) is None],
        "drift": [label for label, k in kernel.kernels()
                  if getattr(getattr(k, "proposal", None), "adaptive", False)],
    }


def _warn_unadapted(adapting: dict) -> None:
    """``burn_in=0`` given with kernels that adapt during the burn-in."""
    gradient, labels = adapting["gradient"], adapting["drift"]
    if gradient:
        warnings.warn(
            f"{', '.join(gradient)}: the step size and mass matrix adapt during the burn-in, "
            "and burn_in=0 leaves them at a unit mass matrix and a heuristic step size (a "
            "badly scaled posterior then mixes slowly); give a burn-in (e.g. burn_in=1000)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    if labels:
        warnings.warn(
            f"{', '.join(labels)}: th.drift() without a scale adapts during the burn-in, and "
            "burn_in=0 leaves it at its initial scale (the Laplace covariance where the chain "
            "starts at the mode, else sd 0.1 per coordinate); give a burn-in "
            "(e.g. burn_in=1000) or a scale, th.drift(s)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _warn_divergences(result) -> None:
    """As Stan and PyMC do: divergent transitions among the draws, and draws at the maximum
    tree depth, of a gradient kernel (per-draw ``diverging`` / ``tree_depth``)."""
    div = result.sample_stats.get("diverging")
    if div is not None and div.size and div.any():
        n = int(div.sum())
        warnings.warn(
            f"{n} of {div.size} draws ({100 * n / div.size:.2g}%) followed a divergent transition: "
            "the sampler could not follow the posterior's curvature there, and the draws may "
            "be biased. Raise target_accept (th.nuts(..., target_accept=0.95)) or "
            "reparameterize (a centred hierarchy made non-centred); where an observation's "
            "support moves with the parameters (y ~ Uniform(0, θ)), the density drops to 0 at "
            "the data, a wall "
            "no step size follows: move those parameters with th.mh(..., th.drift()) (the "
            "default kernel does)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _executor(executor) -> RayExecutor | None:
    if executor is None or executor == "processes":
        return None
    if executor == "ray":
        return RayExecutor()
    if isinstance(executor, RayExecutor):
        return executor
    raise ArgumentError(f"infer: executor must be None, 'processes', 'ray' or a "
                        f"th.RayExecutor, got {executor!r}")


# -- running the chains in this process -----------------------------------------------------------
def _blas_limit(chains: int):
    """The BLAS thread limit of a chain in a worker process, applied here too (several chains):
    the same seed gives the same draws whatever ``workers``."""
    import contextlib

    from thrifty.runtime import parallel

    if chains <= 1 or not parallel.LIMIT_BLAS_THREADS:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=parallel.blas_threads(chains))


def _run_sequential(program, kernel, seeds, inits, cfg, records, stop, display, ckpt) -> bool:
    """Run the chains one after the other; False if a KeyboardInterrupt cut a step short."""
    for c, rec in enumerate(records):
        if rec.status == "done":
            continue
        if stop.requested:
            break
        run = None
        try:
            run = ChainRun(c, program, kernel, seeds[c], inits[c], cfg, rec.snapshot)
            rec.init_seconds = run.init_seconds
            rec.status = "running"
            rec.set_stats(run.stats())
            display.update(c, run.iteration, rec.accepted, rec.proposed, rec.num_draws)

            def tick(r, rec=rec, c=c):
                rec.extend(r.take())
                rec.iteration = r.iteration
                rec.set_stats(r.stats())
                display.update(c, r.iteration, rec.accepted, rec.proposed, rec.num_draws)
                if ckpt is not None and ckpt.due():
                    rec.snapshot = r.snapshot()
                    ckpt.write(records, cfg.total)
                return stop.requested

            done = run.run(tick)
        except KeyboardInterrupt:
            rec.status = "interrupted"
            if run is not None:
                rec.extend(run.take())
                rec.iteration = run.iteration
                rec.set_stats(run.stats())
                rec.seconds = run.seconds
            display.update(
                c, rec.iteration, rec.accepted, rec.proposed, rec.num_draws, "interrupted"
            )
            return False
        rec.extend(run.take())
        rec.iteration = run.iteration
        rec.set_stats(run.stats())
        rec.seconds = run.seconds
        rec.status = "done" if done else "stopped"
        if ckpt is not None:
            rec.snapshot = run.snapshot()
        display.update(c, rec.iteration, rec.accepted, rec.proposed, rec.num_draws, rec.status)
        if not done:
            break
    return True


# -- statistics and messages ----------------------------------------------------------------------
def _per_chain(records) -> dict:
    """label → {chain: Stats}."""
    per: dict = {}
    for c, r in enumerate(records):
        for label, s in r.stats or ():
            per.setdefault(label, {})[c] = s
    return per


def _kernel_stats(records) -> dict:
    """label → aggregate statistics over the chains, with the per-chain ones under "chains"."""
    out = {}
    for label, by_chain in _per_chain(records).items():
        agg = reduce(lambda a, b: a.merge(b), by_chain.values()).as_dict()
        agg["chains"] = [
            by_chain[c].as_dict() if c in by_chain else None for c in range(len(records))
        ]
        out[label] = agg
    return out


def _interrupt_message(records, result, ckpt, completed, parallel) -> str:
    states = {
        "done": "complete",
        "pending": "not started",
        "interrupted": "interrupted inside a step",
        "failed": "failed",
    }
    parts = [
        f"chain {c}: {r.num_draws} draws ({states.get(r.status, 'stopped')})"
        for c, r in enumerate(records)
    ]
    msg = "th.infer was interrupted; " + ", ".join(parts) + "."
    failed = [f"chain {c} failed ({r.error.strip().splitlines()[-1]})"
              for c, r in enumerate(records) if r.error is not None]
    if failed:
        msg += (" " + "; ".join(failed) + ": the result holds the other chains "
                "(result.failed_chains has the errors).")
    if not completed and parallel:
        msg += (
            " Worker processes that did not stop (a second Ctrl-C, or a chain stuck inside a "
            "step for more than 2 s after the first) were terminated: their draws since their "
            "last report are lost."
        )
    if result.truncated:
        ids = result.chain_ids
        left_out = [c for c in range(len(records)) if c not in ids]
        if not ids:
            msg += " The result holds no draws"
        elif any(records[c].num_draws != result.num_draws for c in ids):
            msg += (
                f" The result's arrays hold {_chains(ids)} truncated to the shortest, "
                f"{result.num_draws} draws each"
            )
        else:
            msg += f" The result's arrays hold {_chains(ids)} ({result.num_draws} draws each)"
        failed_out = [c for c in left_out if records[c].status == "failed"]
        empty_out = [c for c in left_out if c not in failed_out]
        if failed_out:
            msg += f"; {_chains(failed_out)} (failed) left out"
        if empty_out:
            msg += f"; {_chains(empty_out)} without draws left out"
        msg += (
            ". Every draw of every chain is in result.chain_draws, result.chain_output and "
            "result.chain_sample_stats."
        )
    if ckpt is not None:
        if not completed:
            msg += (
                " The checkpoint holds each chain's state at its last snapshot (an interrupted "
                "step cannot be resumed exactly)."
            )
        msg += (
            f" Call th.infer again with checkpoint={ckpt.path!r} and the same settings to resume."
        )
    return msg


def _chains(ids) -> str:
    return ("chain " if len(ids) == 1 else "chains ") + ", ".join(str(c) for c in ids)


# -- argument checks ------------------------------------------------------------------------------
def _check_program(program):
    if isinstance(program, Kernel):
        raise ArgumentError(
            "th.infer(program, kernel, ...): the first argument is a kernel; pass the program "
            "(a @th.model applied to its arguments) first"
        )
    return as_program(program)


def _check_kernel(kernel):
    if isinstance(kernel, Kernel):
        return kernel
    hint = ""
    if callable(kernel) and getattr(kernel, "__module__", "").startswith("thrifty"):
        hint = f" (did you mean {getattr(kernel, '__name__', 'kernel')}(...)?)"
    raise ArgumentError(
        "infer: kernel must be a thrifty kernel such as th.lmh(), th.mh(...), th.gibbs(...) or "
        f"th.cycle([...]), got {kernel!r}{hint}"
    )


def _check_schedule(check, check_every) -> tuple[int, bool]:
    """(check every k steps or 0, the "auto" schedule of checks) from ``th.infer``'s
    ``check`` and ``check_every``."""
    if not (isinstance(check, (bool, np.bool_)) or check == "auto"):
        raise ArgumentError(f"infer: check must be True, False or 'auto', got {check!r}")
    if check_every is not None:
        check_every = _int_arg("check_every", check_every, 1)
        if isinstance(check, (bool, np.bool_)) and not check:
            raise ArgumentError(f"infer: check=False and check_every={check_every} contradict each "
                             "other: drop one")
        return check_every, False
    if check == "auto":
        return 0, True
    return (1, False) if check else (0, False)


def _int_arg(name, value, minimum: int) -> int:
    return int_arg("infer", name, value, minimum)


def _seed_sequence(seed) -> np.random.SeedSequence:
    seed = seed_arg("infer", seed)
    if isinstance(seed, np.random.SeedSequence):  # a copy: spawning must not change the caller's
        return np.random.SeedSequence(
            seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size
        )
    return np.random.SeedSequence(None if seed is None else int(seed))


def _inits(init, chains) -> list:
    if init is None or isinstance(init, dict):
        return [init] * chains
    if isinstance(init, (list, tuple)):
        if len(init) != chains or not all(i is None or isinstance(i, dict) for i in init):
            raise ArgumentError(
                f"infer: init: a list of initial values needs one dict (or None) per chain: "
                f"{chains}, got {len(init)} items"
            )
        return list(init)
    raise ArgumentError(
        f"infer: init must be a dict {{address: value}} (or one per chain), got {init!r}")
