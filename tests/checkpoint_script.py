"""Run by tests/test_checkpoint_kill.py in a subprocess: a run checkpointing at every tick,
killed from outside at random moments (argv: checkpoint path)."""

from __future__ import annotations

import sys

import thrifty as th
from thrifty.models import hmm

if __name__ == "__main__":
    print("started", flush=True)
    th.infer(hmm(), th.lmh(), num_samples=20_000, thin=3, chains=2, workers=1, seed=3,
             progress=False, checkpoint=sys.argv[1], checkpoint_every=0.0)
    print("done", flush=True)
