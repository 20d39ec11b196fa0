"""The checks that a plate's elements score the same whichever elements run with them, and
that a markov chain's steps hand on nothing but their states (:func:`steps_alone`).

Kernels execute a plate on the elements they change: LMH and one-element Gibbs (paper 001
§3) one element alone, subsampled MH (paper 000 §3) and SMH (paper 002 §3) a batch of data
rows.  An element's score then has to be a function of its own values and of what comes from
outside the plate — not of which elements, or how many, run beside it.  Code that reads the
vector of the executed elements breaks this without reading any other element's *values*:

* ``len(i)`` or ``np.size(z)`` — a likelihood scaled by ``N / len(i)``, as Pyro's subsample
  scale does (thrifty scales a subset itself: paper 000 eq. 5);
* ``X[i] - X[i].mean()`` — data standardised over the executed rows;
* ``i.max()``, ``i[0]``, ``np.roll(X[i], 1)`` — positions within the executed vector;
* ``X[i]`` of a pandas Series or DataFrame that is not an argument of the program (a global,
  an attribute): it reads positions when ``i`` is the slice of every element and labels when
  it is the integer array of a subset (thrifty reads the program's arguments by position).

The value moves of :mod:`thrifty.core.output` cannot see these (every run of that check
executes every element); five runs here can: the plate's first element alone, then its last
element alone, then its second and last elements, then its elements of odd position, then
those of even position after the first (each plate of the program at once, every markov step
run), each element's score compared with its score in the full execution, at the tolerance of
the check mode (:mod:`thrifty.core.agree`).  The last two run every element but the first in
a subset of about half the plate, so a reader by label is seen wherever a label differs from
its position.  A reader of the executed vector's
length, mean or ends scores otherwise on one element than on all of them; a reader of a
position's parity (``(-1) ** np.arange(len(i))``) scores the second element otherwise at
position 0 than at position 1, whatever the number of elements; the pair runs a subset of
neither one nor every element.  Before them the program runs once from its prior, into a trace
of its own (:func:`_elsewhere`): a buffer the plate fills then holds another
execution's values wherever those runs do not write it, so an element that reads it elsewhere
scores otherwise.  Coupled plates (a process's draws) are left out: their elements' scores
depend on each other by design.  The cost is one full execution, three of O(1) elements
and two of half the elements per plate at initialisation (about two full executions).

>>> import numpy as np, thrifty as th
>>> from thrifty import dist
>>> @th.model
... def scaled(y):
...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
...     with th.plate("data", len(y)) as i:
...         th.factor("f", dist.Normal(mu, 1.0).log_prob(y[i]) * len(y) / np.size(y[i]))
>>> th.infer(scaled(np.zeros(4)), th.mh("mu"), num_samples=2, seed=0, progress=False)
Traceback (most recent call last):
...
thrifty.errors.ModelError: the element 0 of the plate ('data',) scores otherwise when it runs ...
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.agree import ATOL, RTOL
from thrifty.core.run import Plan, Run
from thrifty.core.vocab import RESAMPLE
from thrifty.errors import ModelError


def elements_alone(trace, plates: dict, steps: Callable[[], Plan]) -> None:
    """Raise if an element of one of ``plates`` (address → node, the plates inside markov steps
    at each step's address) scores otherwise when it runs alone than in the fully executed
    ``trace``; ``steps()`` gives a plan holding every step of every chain."""
    plates = {a: node for a, node in plates.items() if node.size > 1 and not node.procs}
    if not plates:
        return
    _elsewhere(trace)
    for what, pick in _PICKS:
        plan = steps()
        # the elements this run executes, per plate (a plate of two: one for the pair)
        elems = {addr: pick(node.size) for addr, node in plates.items()}
        for addr, es in elems.items():
            plan.add_elements(addr, es)
        try:  # (one row's mean or spread may divide by zero: the scores differ, quietly)
            with np.errstate(all="ignore"):
                run = Run(trace, np.random.default_rng(0), plan=plan).execute()
        except Exception as e:
            which = ", ".join(fmt(a) for a in sorted(plates, key=repr)[:3])
            raise ModelError(
                f"running the plate(s) {which} on {what} failed ({type(e).__name__}: "
                f"{e}); {_WHY}") from e
        for addr, node in plates.items():
            es = elems[addr]
            frame = run.plate_frames.get(addr)
            want = node.elem_lp.array()[es]
            if frame is None or run.aborted is not None:
                got = np.full(len(es), np.nan)
                bad = np.ones(len(es), dtype=bool)
            else:
                got = np.asarray(frame.elem_lp, dtype=float)
                bad = ~np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
            if bad.any():
                j = int(np.flatnonzero(bad)[0])
                k = int(es[j])
                others = [str(e) for e in es if e != k]
                alone = (f"among {what} ({len(es)} elements)" if len(others) > 2 else
                         f"with the element(s) {', '.join(others)}" if others else "alone")
                raise ModelError(
                    f"the element {k} of the plate {fmt(addr)} scores otherwise when it runs "
                    f"{alone} ({float(got[j])!r}) than when every element runs "
                    f"({float(want[j])!r}): {_WHY}")


def steps_alone(trace) -> None:
    """Raise if the program scores otherwise when one step of each of its top-level markov
    chains re-executes (a local update, 001 §2: here one that changes nothing) after another
    execution than in the trace: a step that reads a global or buffer that other steps or
    executions write, or code after the chain that reads something of its steps other than
    their states — a buffer the steps fill (``buf[t] = x`` … ``buf.sum()``), which a local
    update leaves holding what other executions wrote, a rejected proposal's values among them
    (check mode saw it only hundreds of steps later).  The other execution redraws one step's
    choices (:func:`_step_elsewhere`, O(1) steps: a rejected proposal there): the last step's,
    before step 0 re-executes (what a step hands to the next execution's first), then step
    0's, before step 1 re-executes (what a step hands to the next through a buffer,
    ``buf[t - 1]``).  A continuous redraw moves what is read; with discrete choices (a state
    of few values) a redraw may leave it as it was, so each pair is then tried with up to
    eight draws."""
    chains = [local for local, node in trace.root.chains.items() if node.T > 1]
    if not chains:
        return
    tries = 8 if any(s.discrete for local in chains
                     for s in trace.root.chains[local].sites.values()) else 1
    for dirty, checked in ((-1, 0), (0, 1)):
        plan = Plan()
        for local in chains:
            plan.add_step(local, checked)
        for seed in range(1, tries + 1):
            redrawn = _step_elsewhere(trace, chains, dirty, seed)
            if not redrawn:  # (steps of other sites: one simulation from the prior, O(T), once)
                _elsewhere(trace)
            try:
                with np.errstate(all="ignore"):
                    run = Run(trace, np.random.default_rng(0), plan=plan).execute()
            except Exception:  # (an error of the model's code: the plates' probes and the
                return  # first step raise it, with their context)
            w = run.log_weight
            if run.aborted is None and not np.isclose(w, 0.0, rtol=0.0, atol=ATOL + RTOL * abs(
                    run.lp_old), equal_nan=False):
                raise _steps_error(trace, run, chains, w)
            if not redrawn:
                return


def _steps_error(trace, run, chains, w) -> ModelError:
    changed = f"(the log-density changes by {w!r} though no value changed)"
    for local in chains:  # a step's own site: the step reads what other executions wrote
        node = trace.root.chains[local]
        for t, blk in run.chain_frames.get(local, {}).items():
            for rel, site in blk.sites.items():
                old = node.step_view(t).get_site(rel)
                if old is not None and old.lp != site.lp:
                    return ModelError(
                        f"the site at {fmt(local + (t,) + rel)} scores otherwise when step {t} "
                        f"of the markov chain {fmt(local)} re-executes after another execution "
                        f"of the program than in the trace {changed}: a step may read its "
                        "choices, its previous state, the data and what precedes the chain — "
                        "not a global or buffer that other steps or executions write "
                        "(G['last'] = x, read by the next step): a kernel re-executes a few "
                        "steps. Pass it in the state")
    sites = [local for local, s in trace.root.sites.items()
             if (new := run.root.sites.get(local)) is not None and new.lp != s.lp]
    which = f"the site at {fmt(sites[0])}" if sites else "a site after it (in a plate)"
    return ModelError(
        f"{which} scores otherwise when one step of the markov chain {fmt(chains[0])} "
        f"re-executes than when every step runs {changed}: code after a chain may read only "
        "what th.markov returns, its states — not what its steps leave elsewhere (a buffer "
        "they fill, buf[t] = x … buf.sum()): a kernel re-executes a few steps, and the rest "
        "of such a buffer holds what other executions wrote, rejected proposals among them. "
        "Compute it from the states (np.asarray(states)), or record it with th.deterministic "
        "inside the step")


def _step_elsewhere(trace, chains, t: int, seed: int) -> bool:
    """One execution, never committed, with step ``t``'s choices of each chain redrawn (``-1``:
    the last step's; a kernel's rejected proposal there, O(1) steps): a global or buffer the
    steps write then holds another value than the trace's.  False (nothing done) for a chain
    whose steps differ in their sites."""
    targets, plan = {}, Plan()
    for local in chains:
        node = trace.root.chains[local]
        if not node.uniform() or not node.latent_sites():
            return False
        step = t % node.T
        plan.add_step(local, step)
        targets.update({local + (step,) + rel: RESAMPLE for rel in node.latent_sites()})
    try:
        with np.errstate(all="ignore"):
            Run(trace, np.random.default_rng(seed), targets=targets, plan=plan).execute()
    except Exception:
        pass
    return True


def _elsewhere(trace) -> None:
    """One execution of the program from its prior, into a trace of its own (as a kernel's
    rejected proposal, it leaves the trace as it is): what the program keeps between its
    executions — a buffer the plate fills, ``buf[i] = mu`` — then holds another execution's
    values where the runs of a few elements do not write it, and an element that reads it
    elsewhere (``np.roll(buf, 1)[i]``) scores otherwise than in the trace, even in a plate with
    no latent choice of its own (subsampled MH on ``mu`` would read the values of earlier
    batches and of rejected proposals).  A failure of this execution (a prior draw the
    program refuses) is no finding: the elements' runs then follow the trace's executions."""
    try:
        with np.errstate(all="ignore"):
            Run(trace.blank(), np.random.default_rng(1)).execute()
    except Exception:
        pass


# the elements each run executes (of a plate of ``n`` > 1), as its error names them
_PICKS = (
    ("the first element alone", lambda n: np.array([0])),
    ("the last element alone", lambda n: np.array([n - 1])),
    ("the second and last elements", lambda n: np.unique([1, n - 1])),
    ("the elements of odd position", lambda n: np.arange(1, n, 2)),
    ("the elements of even position after the first", lambda n: np.arange(2, n, 2)),
)
_WHY = (
    "kernels run a plate on any subset of its elements (one element, a batch of data rows), "
    "so an element may read only its own values and what comes from outside the plate — not "
    "which or how many elements run with it (len(i), np.size(z), a scale N / len(i): thrifty "
    "scales subsets itself; X[i].mean(), i.max(), np.roll(X[i], 1)), nor what another "
    "element's execution left in a buffer (np.roll(buf, 1)[i] after buf[i] = mu), nor read "
    "its data by label (a pandas Series or DataFrame kept outside the program's arguments, a "
    "global or an attribute, reads X[i] by label when i is the integer array of a subset and "
    "by position when it is the slice of every element: pass it as an argument, which thrifty "
    "reads by position, or use X.to_numpy()). Compute quantities of the whole data outside the "
    "plate")
