"""Run by tests/test_ray.py in a subprocess: Ctrl-C, checkpoint and resume under Ray."""

import json
import os
import sys
import time
import warnings

import numpy as np
import ray

import thrifty as th
from thrifty.models import hmm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shared_models import Slow  # noqa: E402  (importable by the workers: checkpoints)


@th.model
def in_main(y):
    """Defined in the script (``__main__``), which the Ray workers cannot import."""
    mu = th.sample("mu", th.dist.Normal(0.0, 1.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", th.dist.Normal(mu, 1.0), y[i])


class InMainMH(th.Kernel):
    def __init__(self):
        super().__init__()
        self.inner = th.mh("mu", th.drift(0.5))

    def step(self, trace, rng):
        return self.inner.step(trace, rng)

    def kernels(self):
        return self.inner.kernels()

    def label(self):
        return self.inner.label()


# (the convergence check imports ArviZ, seconds of CPU, and bears on nothing checked here)
sys.modules["thrifty.runtime.infer"].check_convergence = lambda result: None
path = sys.argv[1]
# Ray's processes inherit PYTHONPATH (and THRIFTY_TEST_MARK_DIR) from this one
os.environ["PYTHONPATH"] = os.pathsep.join([HERE, *sys.path])
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
# a model and a kernel class defined in the script travel with the job (checkpoints included);
# this run also starts the two Ray workers, so that the chains below start together
y = np.linspace(-1.0, 2.0, 20)
a = th.infer(in_main(y), InMainMH(), num_samples=300, chains=2, seed=2, progress=False,
             executor="ray", checkpoint=path + ".main")
b = th.infer(in_main(y), InMainMH(), num_samples=300, chains=2, seed=2, progress=False, workers=1)
main_equal = bool(np.array_equal(a["mu"], b["mu"]))
kw = dict(num_samples=2000, chains=2, seed=11)
# The test sends SIGINT to this process's group (as Ctrl-C in a terminal does) once both chains
# have marked that they run (Slow, THRIFTY_TEST_MARK_DIR).
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    part = th.infer(hmm(), Slow(th.lmh()), checkpoint=path, checkpoint_every=0.05,
                    executor="ray", progress=True, **kw)
out = {
    "interrupted": part.interrupted,
    "draws": part.num_draws,
    "chain_draws": [len(d["s.z"]) for d in part.chain_draws],
    "warnings": [str(x.message) for x in w],
    "num_samples": kw["num_samples"],
    "main_equal": main_equal,
}
t0 = time.perf_counter()
resumed = th.infer(hmm(), Slow(th.lmh()), checkpoint=path, executor="ray", progress=False,
                   **kw)  # the same kernel: a checkpoint resumes only the run it belongs to
out["resume_seconds"] = time.perf_counter() - t0
straight = th.infer(hmm(), th.lmh(), workers=1, progress=False, **kw)
out["resumed_interrupted"] = resumed.interrupted
out["resumed_steps"] = resumed.stats["run"]["steps"]
out["straight_steps"] = straight.stats["run"]["steps"]
out["equal"] = bool(
    np.array_equal(resumed["s.z"], straight["s.z"])
    and np.array_equal(resumed.sample_stats["lp"], straight.sample_stats["lp"])
)
print(json.dumps(out))
