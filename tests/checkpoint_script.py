"""Run by tests/test_checkpoint_kill.py in a subprocess: for each line read from stdin, a forked
child (thrifty imported once, here) runs chains that checkpoint at every tick until it is killed
from outside (argv: checkpoint path).  Prints ``started <pid>`` for each child and, once it has
ended, ``ended <wait status>``."""

from __future__ import annotations

import os
import sys

import thrifty as th
from thrifty.models import hmm

if __name__ == "__main__":
    for _ in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                th.infer(hmm(), th.lmh(), num_samples=5_000, thin=3, chains=2, workers=1, seed=3,
                         progress=False, checkpoint=sys.argv[1], checkpoint_every=0.0)
            finally:
                os._exit(0)
        print("started", pid, flush=True)
        print("ended", os.waitpid(pid, 0)[1], flush=True)
