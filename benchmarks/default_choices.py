"""Two choices of ``th.infer``'s default kernel, against the kernel it would otherwise pick.

1. ``y_i ~ Uniform(0, θ)``, θ ~ Exponential(0.1), 20 points: ``th.nuts(["theta"])`` against the
   default (adaptive MH, since the observations' support moves with θ): the fraction of
   divergent transitions, bulk ESS of θ per chain and its posterior mean against the exact one
   (numerical integration).
2. A two-cluster DP mixture (``thrifty.models.dp_means``: 60 points, ``th.CRP(1.0)``, table
   means ``th.mem`` N(0, 5²)):
   the previous default, ``th.cycle([th.gibbs("data.z"), th.lmh(exclude=["data.z"])])`` (LMH
   draws the table means from their prior), against the default (adaptive MH on the table
   means): bulk ESS of the mean of the table of point 0, and chain seconds.

Both through ``th.infer`` with default recording, 2 chains × 1,000 draws after 1,000 burn-in
steps (the default's own).  Writes ``benchmarks/results/default_choices.json``.  Run: ``python
benchmarks/default_choices.py`` (about a minute).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import integrate

import thrifty as th
from _common import write
from thrifty import dist
from thrifty.diagnostics._arviz import ess as az_ess
from thrifty.models import dp_means

KW = dict(num_samples=1000, burn_in=1000, chains=2, seed=0, progress=False)


@th.model
def uniform_scale(y):
    theta = th.sample("theta", dist.Exponential(0.1))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Uniform(0.0, theta), y[i])


def _quiet(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f()


def moving_support() -> dict:
    y = np.random.default_rng(0).uniform(0.0, 5.0, size=20)
    f = lambda t: np.exp(-0.1 * t - 20 * np.log(t / y.max()))  # noqa: E731
    exact = integrate.quad(lambda t: t * f(t), y.max(), np.inf)[0] / integrate.quad(
        f, y.max(), np.inf)[0]
    out = {"exact_mean": exact}
    for label, kernel in (("nuts", th.nuts(["theta"])), ("default", None)):
        r = _quiet(lambda k=kernel: th.infer(uniform_scale(y), k, **KW))
        div = r.sample_stats.get("diverging")
        out[label] = {"divergent_fraction": float(div.mean()) if div is not None else 0.0,
                      "ess_per_chain": float(az_ess(r["theta"])) / 2,
                      "mean": float(r["theta"].mean())}
        print(f"y ~ Uniform(0, θ), {label:7}: {100 * out[label]['divergent_fraction']:4.1f}% "
              f"divergent, ESS {out[label]['ess_per_chain']:5.0f} a chain, mean "
              f"{out[label]['mean']:.3f} (exact {exact:.3f})")
    return out


def memoized_means() -> dict:
    y = np.concatenate([np.random.default_rng(0).normal(-3, 1, 30),
                        np.random.default_rng(1).normal(3, 1, 30)])
    out = {}
    for label, kernel in (("gibbs + lmh", th.cycle([th.gibbs("data.z"),
                                                    th.lmh(exclude=["data.z"])])),
                          ("default", None)):
        r = _quiet(lambda k=kernel: th.infer(dp_means(y), k, **KW))
        z = r["data.z"][..., 0].astype(int)  # (chains, draws): the table of point 0
        mu0 = np.array([[r[f"mu.{z[c, d]}"][c, d] for d in range(z.shape[1])]
                        for c in range(z.shape[0])])
        secs = sum(r.stats["run"]["chain_seconds"])
        out[label] = {"ess": float(az_ess(mu0)), "chain_seconds": secs,
                      "mean": float(mu0.mean())}
        print(f"DP mixture, {label:11}: ESS of point 0's table mean {out[label]['ess']:5.0f} "
              f"in {secs:.1f} s (mean {out[label]['mean']:.3f})")
    out["ess_ratio"] = out["default"]["ess"] / out["gibbs + lmh"]["ess"]
    print(f"ESS ratio default / gibbs + lmh: {out['ess_ratio']:.1f}")
    return out


if __name__ == "__main__":
    path = write("default_choices", {"settings": KW, "moving_support": moving_support(),
                                     "memoized_means": memoized_means()})
    print(f"wrote {path}")
