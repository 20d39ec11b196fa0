"""Run by tests/test_workers.py in a subprocess: th.infer with worker processes, one chain of
which may crash, hang, or run long (argv: mode, flag file)."""

from __future__ import annotations

import os
import sys
import time

import thrifty as th
from thrifty import dist

MODE, FLAG = sys.argv[1], sys.argv[2]


class Faulty(th.Kernel):
    """MH on mu; the first chain to reach step 30 hangs (mode "hang"); "long" never ends."""

    name = "faulty"

    def __init__(self):
        th.Kernel.__init__(self)
        self.inner = th.mh("mu", th.drift(0.5))

    def _step(self, trace, rng):
        if MODE == "hang" and self.inner.stats.steps == 30:
            try:
                os.close(os.open(FLAG, os.O_CREAT | os.O_EXCL))
                while True:  # stuck inside a step, never reporting
                    time.sleep(0.05)
            except FileExistsError:
                pass
        if MODE in ("hang", "long"):
            time.sleep(0.002)
        return self.inner.step(trace, rng)


@th.model
def m():
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    th.observe("y", dist.Normal(mu, 1.0), 0.5)


if __name__ == "__main__":
    print("pid", os.getpid(), flush=True)
    r = th.infer(m(), Faulty(), num_samples=10**7, chains=2, workers=2, seed=0, progress=False)
    print("draws", r.num_draws, "chains", r.chain_ids, flush=True)
