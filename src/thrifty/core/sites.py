"""The primitives ``sample``, ``observe``, ``factor``, ``deterministic``, ``markov``, written once.

Every executor runs the same five functions; the executors are *policies* of them, not
re-implementations (paper 001 §2: a run re-executes the program, replaying each random choice
unless it is proposed anew).  A frame says

* ``site_name(name)``: the site's name in the frame (the executors that keep sites refuse an
  address used twice in one execution);
* ``sample_process``, ``observe_process``: ``None``, or how the executor runs a draw of a
  coupled process and an observation of a collapsed family (their sites move together:
  :mod:`thrifty.core.coupled`);
* ``site_lanes(local, d, what)``: the site's members — one Python value (:class:`ScalarLanes`:
  a block of the model body or a markov step, a choice shared by particles), n values with a
  leading member axis (:class:`BatchLanes`: plate elements, particles, candidate values), or
  one traced value of a gradient run — named for errors, ``d``'s parameters checked;
* ``site_stored(local, lanes)``: the members' stored ``(values, log-densities)``, or ``None``
  (a pinned step stores its reference, a gradient run the choices outside its block);
* ``site_target(local, lanes)``: the members' proposed values, ``RESAMPLE``, or ``None``;
* ``sink``: where the replay decision's fresh, stale and proposal terms go;
* ``keep_latent``, ``keep_observed``, ``keep_value``: where a site's log-density is added and
  its value kept (and, for observations, what follows them: a run that pauses after its k-th
  observation, a plate's watched observations);
* ``chain(local, step, length, init, args)``: its policy of a markov chain (a :class:`Chain`);
* ``run``: the execution, whose ``new_obs`` (observations simulated anew, or ``None``),
  ``obs_values`` (observations the trace holds in place of the data, or ``None``) and
  ``captured`` (observations recorded for the kernels, or ``None``) the observations follow.

The lanes, besides the replay decision's operations, give an observation's ``obs_key``, its
value drawn anew (``simulate``), its ``stored_observation``, its ``observed_lp`` and a
factor's ``factor_lp`` (each ``(lp, total)``: per member and summed), and what ``captured``
records.

The replay decision itself is :func:`thrifty.core.replay.replay`; how an observation is
scored and checked is the lanes' (``observed_lp``).  Frames bind these functions as their
methods (``sample = sites.sample``), so ``th.sample`` costs no extra call.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.replay import replay


def sample(frame, name, d):
    """``th.sample(name, d)`` in ``frame``: the replay decision over the site's members."""
    local = frame.site_name(name)
    if d.coupled and frame.sample_process is not None:  # exchangeable draws (th.CRP)
        return frame.sample_process(local, d)
    lanes = frame.site_lanes(local, d, "sample")
    old = frame.site_stored(local, lanes)
    target = frame.site_target(local, lanes)
    if old is None:
        value, lp, status = replay(lanes, d, None, None, target, frame.sink)
    else:
        value, lp, status = replay(lanes, d, old[0], old[1], target, frame.sink, frame, local)
    if type(value) is np.ndarray:  # kept by the engine: read-only for the model (a value given
        if value is target:  # from outside: a copy); readonly's work, without its call
            value = value.copy()
        if value.flags.writeable:
            value.flags.writeable = False
    return frame.keep_latent(local, lanes, d, value, lp, status, old)


def observe(frame, name, d, value):
    """``th.observe(name, d, value)`` in ``frame``: the value scored over the site's members —
    or, in a run that simulates the observations (Geweke tests, predictive draws), drawn given
    the latent choices; in a run over stored simulated observations, read from the trace."""
    local = frame.site_name(name)
    if d.coupled and frame.observe_process is not None:  # a collapsed family's statistics
        return frame.observe_process(local, d, value)
    lanes = frame.site_lanes(local, d, "observation")
    run = frame.run
    if run.new_obs is not None:
        value = lanes.simulate(d, value)
        run.new_obs[lanes.obs_key] = value
    elif run.obs_values is not None:
        value = lanes.stored_observation(run.obs_values, value)
    lp, total = lanes.observed_lp(d, value)
    if run.captured is not None:
        run.captured.append(lanes.captured(d, value))
    frame.keep_observed(local, lanes, d, value, lp, total)
    return value


def factor(frame, name, log_weight):
    """``th.factor(name, log_weight)`` in ``frame``: a log-weight per member, finite or −∞."""
    local = frame.site_name(name)
    lanes = frame.site_lanes(local, None, "factor")
    lp, total = lanes.factor_lp(log_weight)
    if frame.run.factors is not None:
        frame.run.factors.append(lanes.captured(None, None)[0])
    frame.keep_observed(local, lanes, None, None, lp, total)


def deterministic(frame, name, value):
    """``th.deterministic(name, value)`` in ``frame``: recorded with every draw, returned as
    it is (the kept copy is the engine's: the model may reuse and mutate its buffer)."""
    frame.keep_value(frame.site_name(name), value)
    return value


class Chain:
    """An executor's policy of one chain in one execution (:func:`markov`): ``first()`` → the
    first step to execute (``None``: none), ``enter(t)`` → step ``t``'s frame and ``prev``,
    ``leave(t, frame, state)`` → the next step (``None``: done), ``states()`` → what
    ``th.markov`` returns; ``failed(frame, t, exc)`` may raise an error of the model's code
    that names the step (else the exception goes on as it is)."""

    def failed(self, frame, t: int, exc: BaseException) -> None:
        pass


def markov(frame, name, step, length, init, args):
    """``th.markov(name, step, length, init, *args)`` in ``frame``: ``step(t, prev, *args)``
    executed in a frame of step ``t``, ``prev`` the state the step before returned (``init``
    at the first).  Which steps execute, in which frames, and what the chain returns is the
    executor's policy of the chain (a :class:`Chain` from ``frame.chain(...)``) — every step (a
    first execution, or a change before the chain), the planned steps and those a changed
    state reaches (a local update, 001 §2), the planned sections of a lazy run (000 §3.1),
    every step over a plate's elements at once, a particle run's generations (weighed and
    resampled between steps, 003 §2–4), a gradient run's traced steps."""
    chain = frame.chain(frame.site_name(name), step, length, init, args)
    run = frame.run
    t = chain.first()
    while t is not None:
        step_frame, prev = chain.enter(t)
        run.frame = step_frame
        try:
            state = step(t, prev, *args)
        except Exception as e:
            chain.failed(step_frame, t, e)
            raise
        finally:
            run.frame = frame
        t = chain.leave(t, step_frame, state)
    return chain.states()
