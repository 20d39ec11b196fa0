"""``th.nuts`` against NumPyro's NUTS in the same process: effective samples per second, set-up
and compilation included, and posterior agreement.

Models (both libraries write the same density; NumPyro's in its own modelling language):

* ``eight_schools`` — non-centred eight schools (mu ~ N(0, 5), tau ~ HalfCauchy(5),
  eta_j ~ N(0, 1), y_j ~ N(mu + tau eta_j, s_j));
* ``hier_logistic`` — hierarchical logistic regression: J = 8 groups, N = 800 points, d = 3
  features; group intercepts a_j ~ N(mu_a, sigma_a), shared weights w ~ N(0, 1), y ~
  Bernoulli(logits = a_g + X w); data from a fixed seed;
* ``ssm`` — a linear-Gaussian state-space model with unknown dynamics (T = 100): a ~ U(−1, 1),
  q ~ HalfNormal(1), x_t ~ N(a x_{t−1}, q), y_t ~ N(x_t, 0.5).  thrifty: ``th.cycle([th.nuts(["a",
  "q"]), th.pgibbs("s", 10)])`` on the model with its states; NumPyro: NUTS on the
  marginalised model (the Kalman filter's log-likelihood in a ``lax.scan``, ``numpyro.factor``)
  — the peer's best case, with no states to sample;
* ``ssm_default`` — the same, thrifty with no kernel given: ``th.infer(model)`` assigns NUTS
  to a, q and the 100 states as one block (the states' steps unrolled in the compiled
  density).

Each round runs, for each library, one chain of ``warmup`` + ``samples`` NUTS transitions from
a fresh start (thrifty: ``th.infer(model, th.nuts([...]), burn_in=warmup)``, default
recording; NumPyro: ``MCMC(NUTS(model), num_warmup=warmup, num_samples=samples,
progress_bar=False)``, whose whole chain is one compiled ``lax.scan``), interleaved, with the
wall time of the call (compilation included; each round builds a new program / model
closure).  ESS is ArviZ's bulk ESS, the minimum over the parameters (the slowest-mixing one);
ESS/s = that over the wall time.  Reported: per round
and median, and the ratio thrifty / NumPyro.  Posterior agreement: per parameter, the
difference of the two posterior means in units of their combined Monte Carlo standard error.

The rounds after the first measure a *warm* process: JAX's caches of small compiled operations
are filled by the runs before (NumPyro's first run in a process takes several times its later
ones).  They alternate between two kinds (``ROUND_KINDS``): the *same data again* — a new
program of the same model on the same data, as a notebook cell run twice: thrifty's compiled
density is keyed by the digest of the model's code and data, so it compiles nothing, while
NumPyro's ``MCMC`` compiles its chain anew — and *new data* of the same shapes (both libraries
compile).  Medians are reported per kind.

``--cold K`` also measures what a script pays on its first run: K pairs of fresh processes,
each running both libraries once (imports done before the clocks start), one with thrifty
first and one with NumPyro first; reported per process and as the median ratio.

Run: ``cd benchmarks && ../.venv/bin/python nuts_numpyro.py`` (``--quick``: fewer draws).
Needs the ``bench`` extra (``pip install -e '.[jax,bench]'``).  Writes
``results/nuts_numpyro.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import thrifty as th
from _common import write
from thrifty import dist
from thrifty.diagnostics._arviz import ess

Y8 = np.array([28.0, 8, -3, 7, -1, 1, 18, 12])
S8 = np.array([15.0, 10, 16, 11, 9, 11, 10, 18])


@th.model
def schools(y, sd):
    mu = th.sample("mu", dist.Normal(0.0, 5.0))
    tau = th.sample("tau", dist.HalfCauchy(5.0))
    with th.plate("school", len(y)) as i:
        eta = th.sample("eta", dist.Normal(0.0, 1.0))
        th.observe("y", dist.Normal(mu + tau * eta, sd[i]), y[i])


def logistic_data(seed=0, J=8, N=800, d=3):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, J, N)
    X = rng.normal(size=(N, d))
    a = rng.normal(0.3, 0.8, J)
    w = np.array([1.0, -0.5, 0.25])[:d]
    y = (rng.random(N) < 1 / (1 + np.exp(-(a[g] + X @ w)))).astype(float)
    return g, X, y, J


@th.model
def hier_logistic(g, X, y, J):
    mu_a = th.sample("mu_a", dist.Normal(0.0, 2.0))
    sigma_a = th.sample("sigma_a", dist.HalfNormal(1.0))
    w = th.sample("w", dist.MvNormal(np.zeros(X.shape[1]), np.eye(X.shape[1])))
    with th.plate("group", J):
        a = th.sample("a", dist.Normal(mu_a, sigma_a))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Bernoulli(logits=a[g[i]] + X[i] @ w), y[i])


@th.model
def ssm(y):
    a = th.sample("a", dist.Uniform(-1.0, 1.0))
    q = th.sample("q", dist.HalfNormal(1.0))

    def step(t, prev):
        x = th.sample("x", dist.Normal(a * prev, q))
        th.observe("y", dist.Normal(x, 0.5), y[t])
        return x

    th.markov("s", step, len(y), 0.0)


def ssm_data(seed=0, T=100):
    rng = np.random.default_rng(seed)
    x, prev = np.zeros(T), 0.0
    for t in range(T):
        prev = 0.8 * prev + 0.6 * rng.standard_normal()
        x[t] = prev
    return x + 0.5 * rng.standard_normal(T)


def data(name, variant: int):
    """The data set ``variant`` of model ``name`` (0: the one described above; others: eight
    schools' effects shifted by ``variant``, the other models' data drawn from seed
    ``variant``) — the same shapes, other values."""
    if name == "eight_schools":
        return Y8 + variant, S8
    if name in ("ssm", "ssm_default"):
        return (ssm_data(seed=variant),)
    return logistic_data(seed=variant)


def thrifty_run(name, warmup, samples, seed, variant=0):
    if name == "ssm_default":
        t0 = time.perf_counter()
        r = th.infer(ssm(*data(name, variant)), num_samples=samples, burn_in=warmup, seed=seed,
                     progress=False)
        seconds = time.perf_counter() - t0
        assert "NUTS to a, q, s.x" in r.notes[0], r.notes[0]
        draws = {n: np.asarray(r[n])[0] for n in ("a", "q")}
        return seconds, draws, float(r.sample_stats["diverging"].mean())
    if name == "ssm":
        t0 = time.perf_counter()
        r = th.infer(ssm(*data(name, variant)), th.cycle([th.nuts(["a", "q"]), th.pgibbs("s", 10)]),
                     num_samples=samples, burn_in=warmup, seed=seed, progress=False)
        seconds = time.perf_counter() - t0
        draws = {n: np.asarray(r[n])[0] for n in ("a", "q")}
        return seconds, draws, float(r.sample_stats["diverging"].mean())
    if name == "eight_schools":
        prog, sel = schools(*data(name, variant)), ["mu", "tau", "school.eta"]
        names = ["mu", "tau"]
    else:
        prog = hier_logistic(*data(name, variant))
        sel, names = ["mu_a", "sigma_a", "w", "group.a"], ["mu_a", "sigma_a", "w"]
    t0 = time.perf_counter()
    r = th.infer(prog, th.nuts(sel), num_samples=samples, burn_in=warmup, seed=seed,
                 progress=False)
    seconds = time.perf_counter() - t0
    draws = {n: np.asarray(r[n])[0] for n in names + [s for s in sel if s not in names]}
    return seconds, draws, float(r.sample_stats["diverging"].mean())


def numpyro_run(name, warmup, samples, seed, variant=0):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as nd
    from numpyro.infer import MCMC, NUTS

    if name == "eight_schools":
        def model(y, sd):
            mu = numpyro.sample("mu", nd.Normal(0.0, 5.0))
            tau = numpyro.sample("tau", nd.HalfCauchy(5.0))
            with numpyro.plate("school", len(y)):
                eta = numpyro.sample("school.eta", nd.Normal(0.0, 1.0))
                numpyro.sample("y", nd.Normal(mu + tau * eta, sd), obs=y)

        args = tuple(jnp.asarray(a) for a in data(name, variant))
    elif name in ("ssm", "ssm_default"):
        def model(y):
            a = numpyro.sample("a", nd.Uniform(-1.0, 1.0))
            q = numpyro.sample("q", nd.HalfNormal(1.0))

            def kalman(carry, yt):  # one step of the filter: (mean, variance), log p(y_t | ...)
                m, P = carry
                mp, Pp = a * m, a * a * P + q * q
                S = Pp + 0.25
                ll = -0.5 * (jnp.log(2 * jnp.pi * S) + (yt - mp) ** 2 / S)
                K = Pp / S
                return (mp + K * (yt - mp), (1 - K) * Pp), ll

            _, ll = jax.lax.scan(kalman, (0.0, 0.0), y)
            numpyro.factor("loglik", ll.sum())

        args = (jnp.asarray(data(name, variant)[0]),)
    else:
        g, X, y, J = data(name, variant)

        def model(g, X, y):
            mu_a = numpyro.sample("mu_a", nd.Normal(0.0, 2.0))
            sigma_a = numpyro.sample("sigma_a", nd.HalfNormal(1.0))
            w = numpyro.sample("w", nd.MultivariateNormal(jnp.zeros(X.shape[1]),
                                                           jnp.eye(X.shape[1])))
            with numpyro.plate("group", J):
                a = numpyro.sample("group.a", nd.Normal(mu_a, sigma_a))
            with numpyro.plate("data", len(y)):
                numpyro.sample("y", nd.Bernoulli(logits=a[g] + X @ w), obs=y)

        args = (jnp.asarray(g), jnp.asarray(X), jnp.asarray(y))
    t0 = time.perf_counter()
    mcmc = MCMC(NUTS(model), num_warmup=warmup, num_samples=samples, progress_bar=False)
    mcmc.run(jax.random.key(seed), *args, extra_fields=("diverging",))
    s = mcmc.get_samples()
    jax.block_until_ready(s)
    seconds = time.perf_counter() - t0
    draws = {k: np.asarray(v) for k, v in s.items()}
    div = float(np.asarray(mcmc.get_extra_fields()["diverging"]).mean())
    return seconds, draws, div


ROUND_KINDS = ("first", "same data again", "new data")
"""Round 0 is the process's first run of the model; then rounds alternate between the data of
the round before (``same data again``) and a new data set of the same shapes (``new data``)."""


def min_ess(draws: dict) -> tuple[float, str]:
    best = (np.inf, "")
    for n, v in draws.items():
        a = v.reshape(len(v), -1)
        for j in range(a.shape[1]):
            e = ess(a[:, j][None, :], method="bulk")
            if e < best[0]:
                best = (e, n if a.shape[1] == 1 else f"{n}[{j}]")
    return best


def agreement(a: dict, b: dict) -> dict:
    out = {}
    for n in a:
        if n not in b:
            continue
        x, y = a[n].reshape(len(a[n]), -1), b[n].reshape(len(b[n]), -1)
        for j in range(x.shape[1]):
            se = np.hypot(x[:, j].std() / np.sqrt(ess(x[:, j][None, :])),
                          y[:, j].std() / np.sqrt(ess(y[:, j][None, :])))
            out[n if x.shape[1] == 1 else f"{n}[{j}]"] = float(
                (x[:, j].mean() - y[:, j].mean()) / se)
    return out


def one_cold(name: str, first: str, warmup: int, samples: int, seed: int) -> dict:
    """Both libraries once in this (fresh) process, ``first`` first; both imported before."""
    import numpyro  # noqa: F401  (imports are not timed, for either library)

    out = {"first": first}
    for lib in (first, "numpyro" if first == "thrifty" else "thrifty"):
        seconds, draws, _ = (thrifty_run if lib == "thrifty" else numpyro_run)(
            name, warmup, samples, seed)
        e, slowest = min_ess(draws)
        out[lib] = {"seconds": seconds, "min_ess": e, "slowest": slowest,
                    "ess_per_s": e / seconds}
    out["ratio_ess_per_s"] = out["thrifty"]["ess_per_s"] / out["numpyro"]["ess_per_s"]
    return out


def cold(name: str, pairs: int, warmup: int, samples: int) -> dict:
    """``pairs`` × 2 fresh processes, each running both libraries once (the first run of a
    script: JAX's caches empty), alternating which goes first."""
    import json
    import subprocess
    import sys

    rounds = []
    for k in range(pairs):
        for first in ("thrifty", "numpyro"):
            proc = subprocess.run(
                [sys.executable, __file__, "--one-cold", first, "--models", name,
                 "--seed", str(20 + k)] + (["--quick"] if warmup < 1000 else []),
                capture_output=True, text=True, check=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            rounds.append(row)
            print(f"{name} cold ({first} first, seed {20 + k}): thrifty "
                  f"{row['thrifty']['seconds']:.1f} s, min ESS {row['thrifty']['min_ess']:.0f} | "
                  f"numpyro {row['numpyro']['seconds']:.1f} s, min ESS "
                  f"{row['numpyro']['min_ess']:.0f} | ratio {row['ratio_ess_per_s']:.2f}",
                  flush=True)
    return {"rounds": rounds,
            "median_ratio_ess_per_s": statistics.median(r["ratio_ess_per_s"] for r in rounds),
            "min_ratio_ess_per_s": min(r["ratio_ess_per_s"] for r in rounds)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--cold", type=int, default=0,
                    help="also this many pairs of fresh processes per model (see cold())")
    ap.add_argument("--models", default="eight_schools,hier_logistic,ssm,ssm_default")
    ap.add_argument("--one-cold", choices=("thrifty", "numpyro"), help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=20, help=argparse.SUPPRESS)
    args = ap.parse_args()
    warmup, samples = (300, 300) if args.quick else (1000, 1000)
    if args.one_cold:  # (a child process of cold())
        import json

        print(json.dumps(one_cold(args.models, args.one_cold, warmup, samples, args.seed)))
        return
    # (imported before any round: importing NumPyro defines JAX options of its own, which
    # changes the tracing context of every jitted function and so retraces thrifty's)
    import numpyro  # noqa: F401

    out = {"warmup": warmup, "samples": samples, "models": {}}
    for name in args.models.split(","):
        rounds = []
        for k in range(args.rounds):
            variant = k // 2  # (rounds 2j and 2j + 1 share data set j)
            kind = ROUND_KINDS[0 if k == 0 else 1 if k % 2 else 2]
            ts, td, tdiv = thrifty_run(name, warmup, samples, seed=10 + k, variant=variant)
            ns, nd_, ndiv = numpyro_run(name, warmup, samples, seed=10 + k, variant=variant)
            te, tn = min_ess(td)
            ne, nn = min_ess(nd_)
            row = {"kind": kind, "data_variant": variant,
                   "thrifty": {"seconds": ts, "min_ess": te, "slowest": tn,
                               "ess_per_s": te / ts, "divergent": tdiv},
                   "numpyro": {"seconds": ns, "min_ess": ne, "slowest": nn,
                               "ess_per_s": ne / ns, "divergent": ndiv},
                   "mean_difference_in_se": agreement(td, nd_)}
            row["ratio_ess_per_s"] = row["thrifty"]["ess_per_s"] / row["numpyro"]["ess_per_s"]
            rounds.append(row)
            print(f"{name} round {k} ({kind}): thrifty {ts:.1f} s, min ESS {te:.0f} ({tn}), "
                  f"{te / ts:.1f}/s | numpyro {ns:.1f} s, min ESS {ne:.0f} ({nn}), "
                  f"{ne / ns:.1f}/s | ratio {row['ratio_ess_per_s']:.2f}", flush=True)
        med = {lib: {k: statistics.median(r[lib][k] for r in rounds)
                     for k in ("seconds", "min_ess", "ess_per_s")}
               for lib in ("thrifty", "numpyro")}
        med["ratio_ess_per_s"] = statistics.median(r["ratio_ess_per_s"] for r in rounds)
        med["max_abs_mean_difference_in_se"] = max(
            abs(v) for r in rounds for v in r["mean_difference_in_se"].values())
        med["ratio_ess_per_s_by_kind"] = {
            kind: statistics.median(r["ratio_ess_per_s"] for r in rounds if r["kind"] == kind)
            for kind in ROUND_KINDS if any(r["kind"] == kind for r in rounds)}
        out["models"][name] = {"rounds": rounds, "median": med}
        print(f"{name} median: {med}", flush=True)
        if args.cold:
            out["models"][name]["cold"] = c = cold(name, args.cold, warmup, samples)
            print(f"{name} cold: median ratio {c['median_ratio_ess_per_s']:.2f}, "
                  f"min {c['min_ratio_ess_per_s']:.2f}", flush=True)
    write("nuts_numpyro" if args.models == ap.get_default("models") and not args.quick
          else "nuts_numpyro_partial", out)


if __name__ == "__main__":
    main()
