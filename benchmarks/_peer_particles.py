"""The peer side of ``pgas_lds.py`` and ``smc_evidence.py``: the ``particles`` library (Chopin).

Runs in its own virtual environment (``particles`` 0.4 pins ``numpy<2``; see
``peer_python()`` in ``_common.py``), never imported by thrifty's scripts.  Reads one JSON
request on stdin::

    {"npz": "<path with y (T, D), C (D, 2), r, q, omega>",
     "tasks": [{"kind": "csmc", "N": 100, "ess_min": 1.0, "sweeps": 500, "burn_in": 50,
                "seed": 0, "draws": true},
               {"kind": "bootstrap", "N": 100, "repeats": 100, "seed": 0}]}

and prints one JSON object on stdout: ``{"versions": {...}, "results": [one per task]}``.

* ``csmc``: iterated conditional SMC with the library's own classes, exactly as
  ``particles.mcmc.ParticleGibbs.update_states`` does it (no ancestor sampling, no backward
  step): the first trajectory from an unconditional ``particles.SMC(..., store_history=True)``,
  then per sweep ``particles.mcmc.CSMC(fk=Bootstrap(ssm, data), N, xstar=x, ESSrmin=ess_min)``,
  ``.run()``, ``x = cpf.hist.extract_one_trajectory()``.  (``ParticleGibbs`` itself also
  updates θ every sweep through an abstract ``update_theta``; with θ fixed this loop is its
  state update alone.)  Returns ``seconds_per_sweep`` (the ``sweeps`` sweeps after ``burn_in``,
  trajectory extraction included) and, with ``"draws": true``, ``z_t[0]`` of every kept sweep
  (sweeps × T).
* ``bootstrap``: ``particles.SMC(fk=Bootstrap(ssm, data), N, resampling="systematic")``
  (adaptive resampling at ESS < N/2, the library default, as ``th.smc``), ``repeats`` runs:
  their ``logLt`` and seconds.

The model is 003's LDS: ``z_0 ~ N(A (1, 0), q I)``, ``z_t ~ N(A z_{t-1}, q I)``,
``y_t ~ N(C z_t, r I)``, A the rotation by ω — written as a ``StateSpaceModel`` with
``particles.distributions.MvNormal`` (vectorised over the particles).
"""

from __future__ import annotations

import json
import sys
import time
from importlib import metadata

import numpy as np
import particles
import particles.distributions as dists
import particles.mcmc
import particles.state_space_models as ssms
import scipy


class LDS(ssms.StateSpaceModel):
    """003's linear dynamical system; parameters A (2, 2), C (D, 2), q, r."""

    def PX0(self):
        return dists.MvNormal(loc=self.A @ np.array([1.0, 0.0]), scale=np.sqrt(self.q),
                              cov=np.eye(2))

    def PX(self, t, xp):
        return dists.MvNormal(loc=xp @ self.A.T, scale=np.sqrt(self.q), cov=np.eye(2))

    def PY(self, t, xp, x):
        return dists.MvNormal(loc=x @ self.C.T, scale=np.sqrt(self.r), cov=self.eye_d)


def load(path):
    d = np.load(path)
    omega = float(d["omega"])
    c, s = np.cos(omega), np.sin(omega)
    ssm = LDS(A=np.array([[c, -s], [s, c]]), C=np.asarray(d["C"], float), q=float(d["q"]),
              r=float(d["r"]), eye_d=np.eye(d["C"].shape[0]))
    return ssm, np.asarray(d["y"], float)


def csmc(fk, task):
    n, ess_min = int(task["N"]), float(task.get("ess_min", 1.0))
    sweeps, burn_in = int(task["sweeps"]), int(task.get("burn_in", 0))
    np.random.seed(int(task.get("seed", 0)))  # noqa: NPY002 (particles draws from the global RNG)
    pf = particles.SMC(fk=fk, N=n, store_history=True)
    pf.run()
    x = pf.hist.extract_one_trajectory()
    for _ in range(burn_in):
        cpf = particles.mcmc.CSMC(fk=fk, N=n, xstar=x, ESSrmin=ess_min)
        cpf.run()
        x = cpf.hist.extract_one_trajectory()
    draws = np.empty((sweeps, len(x)))
    t0 = time.perf_counter()
    for i in range(sweeps):
        cpf = particles.mcmc.CSMC(fk=fk, N=n, xstar=x, ESSrmin=ess_min)
        cpf.run()
        x = cpf.hist.extract_one_trajectory()
        draws[i] = [xt[0] for xt in x]
    seconds = time.perf_counter() - t0
    out = {"kind": "csmc", "N": n, "ess_min": ess_min, "sweeps": sweeps, "burn_in": burn_in,
           "seconds_per_sweep": seconds / sweeps}
    if task.get("draws", True):
        out["draws"] = draws.tolist()
    return out


def bootstrap(fk, task):
    n, repeats = int(task["N"]), int(task["repeats"])
    np.random.seed(int(task.get("seed", 0)))  # noqa: NPY002 (particles draws from the global RNG)
    logz, secs = [], []
    for _ in range(repeats):
        pf = particles.SMC(fk=fk, N=n, resampling="systematic", collect="off")
        t0 = time.perf_counter()
        pf.run()
        secs.append(time.perf_counter() - t0)
        logz.append(float(pf.logLt))
    return {"kind": "bootstrap", "N": n, "repeats": repeats, "log_evidence": logz,
            "seconds": secs}


def main():
    req = json.load(sys.stdin)
    ssm, y = load(req["npz"])
    fk = ssms.Bootstrap(ssm=ssm, data=y)
    results = []
    for task in req["tasks"]:
        results.append({"csmc": csmc, "bootstrap": bootstrap}[task["kind"]](fk, task))
    versions = {"particles": metadata.version("particles"), "numpy": np.__version__,
                "scipy": scipy.__version__, "python": sys.version.split()[0]}
    json.dump({"versions": versions, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
