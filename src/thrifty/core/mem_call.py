"""Calling a memoized function (``th.mem``): it returns the distribution of a key's value,
which the engine draws — the function itself draws nothing."""

from __future__ import annotations

from thrifty.core.address import fmt
from thrifty.errors import ModelError


def call_fn(run, mem, key):
    """``mem.fn(key)``: the distribution of the key's value, which thrifty draws — the
    function itself draws nothing (a th.sample or th.observe inside it is an error naming the
    memoized function, not a repeated address)."""
    frame = run.frame
    run.frame = _MemBody(mem.addr, frame)
    try:
        return mem.fn(key)
    finally:
        run.frame = frame


class _MemBody:
    """``run.frame`` while a memoized function runs: reading other memoized functions is
    fine; drawing, observing or opening a plate or chain is refused."""

    __slots__ = ("addr", "frame")

    def __init__(self, addr, frame):
        self.addr, self.frame = addr, frame

    def __getattr__(self, name):
        return getattr(self.frame, name)

    def _refuse(self, what, name):
        raise ModelError(
            f"th.mem {fmt(self.addr)}: its function called th.{what}({name!r}); it must return "
            "a distribution (e.g. lambda k: dist.Normal(0.0, 1.0)), whose value thrifty draws "
            "once per key")

    def sample(self, name, d):
        self._refuse("sample", name)

    def observe(self, name, d, value):
        self._refuse("observe", name)

    def factor(self, name, log_weight):
        self._refuse("factor", name)

    def deterministic(self, name, value):
        self._refuse("deterministic", name)

    def plate(self, name, size):
        self._refuse("plate", name)

    def markov(self, name, step, length, init, args):
        self._refuse("markov", name)
