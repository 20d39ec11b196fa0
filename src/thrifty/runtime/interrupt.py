"""Ctrl-C during ``th.infer``: the first one stops the chains cleanly, the second aborts.

While ``th.infer`` runs (in the main thread), SIGINT is handled by :class:`StopRequest`: the first
Ctrl-C sets a flag (and a multiprocessing Event the worker processes poll) and the chains stop at
their next tick, between two steps — a state that can be checkpointed and resumed exactly.  A
second Ctrl-C raises ``KeyboardInterrupt`` at once (for a step that never ends); ``th.infer``
still returns the draws recorded so far.  Once the chains have stopped (the last checkpoint,
the result being built) a Ctrl-C changes nothing: the draws are returned.  Worker processes
ignore SIGINT.
"""

from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager


class StopRequest:
    """A stop flag set by the first SIGINT (or by :meth:`request`)."""

    def __init__(self):
        self.requested = False
        self.count = 0
        self.event = None  # the workers' stop flag (set, is_set), when they run in processes
        self.stopped = False  # the chains are over: th.infer is returning their draws

    def request(self) -> None:
        self.requested = True
        if self.event is not None:
            self.event.set()

    def __call__(self, signum, frame):
        if self.stopped:
            sys.stderr.write("\nthrifty: the chains have stopped; returning their draws\n")
            sys.stderr.flush()
            return
        self.count += 1
        if self.count == 1:
            self.request()
            sys.stderr.write(
                "\nthrifty: interrupted — stopping the chains after their current step "
                "(press Ctrl-C again to abort at once)\n"
            )
            sys.stderr.flush()
        else:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self):
        """Handle SIGINT with this object (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        try:
            old = signal.signal(signal.SIGINT, self)
        except ValueError:  # not the main thread of the main interpreter
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, old if old is not None else signal.SIG_DFL)
