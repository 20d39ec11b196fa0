"""Programs executed by several threads at once (``th.infer`` in a thread pool, a notebook's
background thread): each thread's primitives reach its own execution, never another thread's.

The executions are made to overlap deterministically: thread ``a`` starts its first execution
and waits after its first choice; thread ``b`` then starts its own, and waits after its first
choice until ``a`` has finished its whole job (its other primitives and executions run while
``b``'s first execution is under way, and ``b`` goes on after ``a``'s have ended).
"""

from __future__ import annotations

import threading

import numpy as np

import thrifty as th
from thrifty import dist


def _overlapping(job):
    """``job(m, y)`` run in two threads on the data of ``a`` and ``b`` at once (see the module
    docstring), then alone in this thread: ``(at once, alone)`` per key."""
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    first = threading.local()

    @th.model
    def m(y):
        mu = th.sample("mu", dist.Normal(0.0, 1.0))
        if not getattr(first, "done", False):
            first.done = True
            if y[0] > 0:  # thread a
                a_in.set()
                assert b_in.wait(60)
            else:  # thread b, whose execution started while a's was under way
                b_in.set()
                assert a_done.wait(60)
        with th.plate("data", len(y)) as i:
            th.observe("y", dist.Normal(mu, 1.0), y[i])
        return mu

    out: dict = {}

    def run(key):
        try:
            if key == "b":
                assert a_in.wait(60)
            out[key] = job(m, DATA[key])
        except Exception as e:  # (reported by the assertion, with its message)
            out[key] = e
        finally:
            if key == "a":
                a_done.set()

    threads = [threading.Thread(target=run, args=(k,)) for k in DATA]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first.done = True  # (the runs alone, in this thread: no waiting)
    return {k: (out[k], job(m, y)) for k, y in DATA.items()}


DATA = {"a": np.full(20, 3.0), "b": np.full(20, -3.0)}


def test_two_threads_simulating_at_once_each_score_their_own_data():
    for key, (at_once, alone) in _overlapping(lambda m, y: th.simulate(m(y), seed=0)).items():
        assert not isinstance(at_once, Exception), f"thread {key}: {at_once!r}"
        assert at_once.output == alone.output
        assert at_once.log_joint() == alone.log_joint()


def test_two_threads_running_th_infer_at_once_give_the_draws_of_each_run_alone():
    def job(m, y):
        return th.infer(m(y), th.mh("mu", th.drift(0.3)), num_samples=300, burn_in=100, seed=1,
                        progress=False)["mu"]

    for key, (at_once, alone) in _overlapping(job).items():
        assert not isinstance(at_once, Exception), f"thread {key}: {at_once!r}"
        np.testing.assert_array_equal(at_once, alone)
