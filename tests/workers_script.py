"""Run by tests/test_workers.py in a subprocess: th.infer with worker processes, one chain of
which may crash, hang, or run long; or ("after_jax") chains of an MH kernel once a gradient
kernel has started JAX's runtime (argv: mode, flag file)."""

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


def after_jax():
    """Chains of th.mh with workers=1, then (once NUTS has started JAX) with workers=2 and
    with the default: the start methods, whether the draws are the same, and the number of
    warnings about a fork of a multi-threaded process."""
    import warnings

    import numpy as np

    # (the convergence check imports ArviZ, seconds of CPU, and bears on nothing printed here)
    sys.modules["thrifty.runtime.infer"].check_convergence = lambda result: None
    kw = dict(num_samples=50, burn_in=50, chains=2, seed=0, progress=False)
    a = th.infer(m(), th.mh("mu", th.drift(0.5)), workers=1, **kw)
    th.infer(m(), th.nuts("mu"), num_samples=20, burn_in=20, seed=0, progress=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        b = th.infer(m(), th.mh("mu", th.drift(0.5)), workers=2, **kw)
        c = th.infer(m(), th.mh("mu", th.drift(0.5)), **kw)
    same = np.array_equal(a["mu"], b["mu"]) and np.array_equal(a["mu"], c["mu"])
    forks = sum("fork()" in str(w.message) for w in said)
    print(b.stats["run"]["start_method"], c.stats["run"]["start_method"], same, forks)


if __name__ == "__main__" and MODE == "after_jax":
    after_jax()
elif __name__ == "__main__":
    print("pid", os.getpid(), flush=True)
    r = th.infer(m(), Faulty(), num_samples=10**7, chains=2, workers=2, seed=0, progress=False)
    print("draws", r.num_draws, "chains", r.chain_ids, flush=True)
