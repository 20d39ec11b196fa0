"""Geweke's (2004) joint-distribution test of an MCMC kernel.

Two ways to sample the joint p(x, y) of a program: *marginal-conditional* (x from the prior,
y given x — independent draws) and *successive-conditional* (alternate one kernel step on x
given y with a fresh y given x).  If the kernel leaves p(x | y) invariant, both give the same
distribution of x; a wrong acceptance ratio shows up as a difference.  Each test function g
(default: every scalar latent value and its square) is compared with a z-test whose standard
error uses the effective sample size of the successive-conditional chain.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from thrifty._warn import user_stacklevel
from thrifty.core.address import dotted
from thrifty.core.model import as_program
from thrifty.core.run import Run
from thrifty.core.simulate import simulate_run
from thrifty.core.vocab import SIMULATE

_SIMULATE = SIMULATE


def _heavy_tailed(trace) -> dict[str, str]:
    """``{name: distribution}`` of the sites whose distribution has no finite variance (a
    z-test of the mean of x or x² is then meaningless)."""
    out = {}
    blocks = [((), trace.root.sites)] + [
        (addr, node.sites) for addr, node in trace.root.plates.items()
    ]
    for prefix, sites in blocks:
        for local, site in sites.items():
            d = getattr(site, "dist", None)
            if d is None:
                continue
            with np.errstate(all="ignore"):
                var = np.asarray(d.variance, dtype=float)
            if not np.all(np.isfinite(var)):
                out[dotted(prefix + local)] = type(d).__name__
    return out


def _default_functions(names: list, prior: list, heavy: dict) -> dict:
    """x and x² per scalar; for a site without finite variance, the bounded
    arctan((x − m)/s) and 1{x > m} (m, s: median and half the IQR of its prior draws)."""
    functions = {}
    for n in names:
        base = n.split("[")[0]
        if base in heavy:
            a = np.array([v[n] for v in prior if n in v], dtype=float)
            m, s = np.median(a), max(float(np.subtract(*np.percentile(a, [75, 25]))) / 2, 1e-12)
            functions[f"arctan({n})"] = lambda v, n=n, m=m, s=s: np.arctan(
                (v.get(n, np.nan) - m) / s
            )
            functions[f"{n}>median"] = lambda v, n=n, m=m: float(v[n] > m) if n in v else np.nan
            continue
        functions[n] = lambda v, n=n: v.get(n, np.nan)
        functions[f"{n}^2"] = lambda v, n=n: v.get(n, np.nan) ** 2
    for base, family in heavy.items():
        warnings.warn(
            f"geweke: {base!r} has a prior without finite variance ({family}); its test "
            "functions are arctan((x − median)/scale) and 1{x > median} instead of x and x²",
            stacklevel=user_stacklevel(),
        )
    return functions


@dataclass
class GewekeResult:
    """z-scores and two-sided p-values per test function; ``divergences``: the divergent
    transitions the kernel (NUTS, HMC) reported during the successive-conditional chain."""

    z: dict
    p: dict
    prior: dict
    successive: dict
    divergences: int = 0

    @property
    def min_p(self) -> float:
        return min(self.p.values())

    def __repr__(self) -> str:
        rows = ", ".join(f"{k}: z={self.z[k]:+.2f}" for k in self.z)
        div = f"; {self.divergences} divergent transitions" if self.divergences else ""
        return f"GewekeResult({rows}; min p = {self.min_p:.3g}{div})"


def _divergences(kernel) -> int:
    """The divergent transitions the kernel and its parts (NUTS, HMC) have counted so far."""
    return int(sum(k.stats.extra.get("divergences", 0) for _, k in kernel.kernels()))


def _simulate_joint(program, rng):
    trace, _ = simulate_run(program, rng)
    Run(trace, rng, mode=_SIMULATE).execute().commit()
    return trace


def _scalars(values: dict) -> dict:
    out = {}
    for k, v in values.items():
        a = np.asarray(v, dtype=float)
        if a.ndim == 0:
            out[k] = float(a)
        else:
            for i, x in enumerate(a.ravel()):
                out[f"{k}[{i}]"] = float(x)
    return out


def geweke(
    program,
    kernel,
    num_samples: int = 20000,
    num_prior: int | None = None,
    steps_per_sample: int = 1,
    seed=None,
    functions: dict | None = None,
    burn_in: int = 0,
) -> GewekeResult:
    """Run the test; see the module docstring.

    ``functions`` maps names to functions of the dict of scalar latent values (default: each
    value and its square).  ``burn_in``: successive-conditional steps run first with the
    kernel adapting, as in ``th.infer``'s burn-in, and not compared; the test then checks the
    adapted kernel, frozen (NUTS and HMC: the step size and mass matrix adapted over joint
    draws, instead of the step size their heuristic picks at the first state).

    >>> import thrifty as th
    >>> from thrifty import dist
    >>> from thrifty.diagnostics import geweke
    >>> @th.model
    ... def m():
    ...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
    ...     th.observe("y", dist.Normal(mu, 1.0), 0.0)
    >>> geweke(m(), th.mh("mu", th.drift(1.0)), num_samples=3000, seed=0).min_p > 1e-4
    True
    """
    from thrifty.diagnostics._arviz import ess as az_ess

    program = as_program(program)
    rng = np.random.default_rng(seed)
    num_prior = num_prior or num_samples
    prior = [_scalars(simulate_run(program, rng)[0].values(False)) for _ in range(num_prior)]
    kernel = copy.deepcopy(kernel)
    trace = _simulate_joint(program, rng)
    if burn_in:
        kernel.plan_burn_in_all(burn_in)
        kernel.set_tuning(True)
        for _ in range(burn_in):
            trace = kernel.step(trace, rng)
            Run(trace, rng, mode=_SIMULATE).execute().commit()
        kernel.set_tuning(False)
    before = _divergences(kernel)  # (only those of the compared steps count)
    succ = []
    for _ in range(num_samples):
        for _ in range(steps_per_sample):
            trace = kernel.step(trace, rng)
        Run(trace, rng, mode=_SIMULATE).execute().commit()
        succ.append(_scalars(trace.values(False)))
    divergences = _divergences(kernel) - before
    if divergences:
        warnings.warn(
            f"geweke: the kernel reported {divergences} divergent transitions in "
            f"{num_samples * steps_per_sample} steps: where the joint has regions a gradient "
            "kernel cannot follow at its step size (a funnel: a scale near 0 with centred "
            "choices under it), it visits them too rarely, which the test can show as a "
            "difference even when the kernel's code is right.  "
            + ("" if burn_in else "Give a burn_in= (the step size and mass matrix then adapt "
               "over joint draws before the test), ")
            + "reparameterize (non-centred), or test on a model without such regions",
            stacklevel=user_stacklevel(),
        )
    names = sorted(set().union(*prior) & set().union(*succ))
    if functions is None:
        functions = _default_functions(names, prior, _heavy_tailed(trace))
    z, p, pv, sv = {}, {}, {}, {}
    for name, g in functions.items():
        a = np.array([g(v) for v in prior], dtype=float)
        b = np.array([g(v) for v in succ], dtype=float)
        a, b = a[~np.isnan(a)], b[~np.isnan(b)]
        if len(a) < 10 or len(b) < 10:
            continue
        ess = az_ess(b[None, :])
        se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / max(ess, 1.0))
        z[name] = float((b.mean() - a.mean()) / se) if se > 0 else 0.0
        p[name] = float(2 * ndtr(-abs(z[name])))
        pv[name], sv[name] = a, b
    return GewekeResult(z, p, pv, sv, divergences)
