"""Prior and posterior predictive simulation, and the pointwise log-likelihood of draws.

Each is one full execution of the program per draw, in ``capture`` mode (the run lists every
observation it executes; :mod:`thrifty.runtime.observations` names and shapes them):

* prior predictive — the program run from scratch with every observed value drawn from its
  distribution (latent choices from the prior, then observations given them);
* posterior predictive — for each kept draw, the latent choices set to the draw's values and
  every observed value drawn afresh given them;
* pointwise log-likelihood — for each kept draw, the log-density of every observation (each
  plate element's and each markov step's observation a point), for ``az.loo``/``az.compare``.

An observation whose value is ``None`` is allowed in predictive runs (``th.predictive`` of a
program applied to new inputs with ``y=None``): only its simulated value is used.  The
observations are simulated one by one in program order, but the program keeps computing with
the values it was given (an autoregressive model that reads ``y[t-1]`` predicts one step ahead).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from thrifty._args import checked_keywords, int_arg, seed_arg
from thrifty._context import float64
from thrifty.core.model import as_program
from thrifty.core.run import Run
from thrifty.core.trace import Trace
from thrifty.core.vocab import CAPTURE, SIMULATE_CAPTURE
from thrifty.errors import ArgumentError, ModelError, SelectionError
from thrifty.runtime import observations as obs
from thrifty.runtime.draws import DrawStore
from thrifty.runtime.pointwise import draw_stores, observed_data, per_draw, stack_chains
from thrifty.runtime.recorder import Recorder
from thrifty.runtime.result import Result, stack_stores

_CAPTURE = CAPTURE
_SIMULATE = SIMULATE_CAPTURE


class Predictive(Mapping):
    """Simulated observations (``"prior"`` or ``"posterior"`` predictive), named like the
    result's variables: ``pred["data.y"]`` has shape (chains, draws, N, ...).

    ``latent`` holds the prior draws of the latent choices (prior predictive only),
    ``observed`` the observed data (when the program has any) and ``dims`` the dimension
    names; ``to_arviz()`` gives the groups ``prior``/``prior_predictive`` or
    ``posterior_predictive``, with ``observed_data``.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m(n):
    ...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
    ...     with th.plate("data", n) as i:
    ...         th.observe("y", dist.Normal(mu, 1.0), None)
    >>> pred = th.predictive(m(4), num_samples=10, seed=0)
    >>> pred.kind, pred["data.y"].shape, sorted(pred.groups())
    ('prior', (1, 10, 4), ['observed_data', 'prior', 'prior_predictive'])
    """

    def __init__(self, kind: str, simulated: dict, dims: dict, latent: dict | None = None,
                 observed: dict | None = None, meta: dict | None = None):
        self.kind = kind
        self.simulated = simulated
        self.dims = dims
        self.latent = latent or {}
        self.observed = observed or {}
        self.meta = meta or {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name in self.simulated:
            return self.simulated[name]
        raise SelectionError(f"no observation {name!r}; simulated: {', '.join(self.simulated)}")

    def __iter__(self):
        return iter(self.simulated)

    def __len__(self) -> int:
        return len(self.simulated)

    def groups(self) -> dict[str, dict]:
        """``{ArviZ group: {variable: array}}``."""
        if self.kind == "prior":
            return {"prior": dict(self.latent), "prior_predictive": dict(self.simulated),
                    "observed_data": dict(self.observed)}
        return {"posterior_predictive": dict(self.simulated),
                "observed_data": dict(self.observed)}

    def to_arviz(self):
        """The predictive groups as an ArviZ ``DataTree`` (``InferenceData`` on ArviZ 0.2x)."""
        from thrifty.runtime.arviz_io import to_arviz_groups

        return to_arviz_groups(self.groups(), self.meta, self.dims)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}: {a.shape}" for n, a in self.simulated.items())
        return f"Predictive({self.kind}: {shapes})"


@checked_keywords
def predictive(program, result=None, num_samples: int = 500, seed=None) -> Predictive:
    """Prior predictive (no ``result``: ``num_samples`` runs of ``program`` from scratch) or
    posterior predictive (every kept draw of ``result``, per chain) simulations of the
    observations.  With a result, the predictive is also kept on it
    (``result.posterior_predictive``) so that ``result.to_arviz()`` includes it.  ``program``
    may be the model applied to new inputs (observed values may then be ``None``) as long as
    its latent choices are those of the result's draws.

    >>> import numpy as np, thrifty as th
    >>> from thrifty import dist
    >>> @th.model
    ... def m(y):
    ...     mu = th.sample("mu", dist.Normal(0.0, 1.0))
    ...     with th.plate("data", len(y)) as i:
    ...         th.observe("y", dist.Normal(mu, 1.0), y[i])
    >>> prior = th.predictive(m(np.zeros(3)), num_samples=100, seed=0)
    >>> prior["data.y"].shape
    (1, 100, 3)
    >>> r = th.infer(m(np.zeros(3)), th.mh("mu", th.drift(1.0)), num_samples=50, seed=0)
    >>> th.predictive(m(np.zeros(3)), r, seed=1)["data.y"].shape
    (1, 50, 3)
    """
    if isinstance(program, Result):
        raise ArgumentError(
            "predictive: the first argument is the program (the model applied to its inputs) "
            "and the result the second: th.predictive(model(y), result)")
    program = as_program(program)
    if result is None:
        num_samples = int_arg("predictive", "num_samples", num_samples)
    elif not isinstance(result, Result):
        raise ArgumentError(
            f"predictive: result must be the Result of th.infer (or None for the prior "
            f"predictive), got {type(result).__name__}"
        )
    try:
        observed, obs_dims = observed_data(program)
    except Exception:
        observed, obs_dims = {}, {}
    with float64():  # (model code written with jax.numpy: float64, as in the run)
        if result is None:
            return _prior(program, num_samples, seed, observed)
        seqs = np.random.SeedSequence(seed_arg("predictive", seed)).spawn(result.num_chains)
        per_chain = [
            per_draw(program, st, np.random.default_rng(sq), _SIMULATE, "value")
            for st, sq in zip(draw_stores(result), seqs)
        ]
    simulated, dims = stack_chains(per_chain)
    meta = result._meta()
    pred = Predictive("posterior", simulated, {**obs_dims, **dims}, observed=observed, meta=meta)
    result.posterior_predictive = pred
    return pred


def _prior(program, num_samples: int, seed, observed: dict) -> Predictive:
    rng = np.random.default_rng(
        seed if isinstance(seed, np.random.Generator) else seed_arg("predictive", seed))
    recorder = Recorder()
    draws = []
    for _ in range(num_samples):
        trace = Trace(program)
        run = Run(trace, rng, mode=_SIMULATE).execute()
        if run.factors:
            raise ModelError(
                f"predictive: the program has the factor(s) "
                f"{', '.join(repr(obs.layout(a)[0]) for a in run.factors)}, which reweight its "
                "joint density; the prior predictive draws each choice from its distribution "
                "in program order and cannot apply them (its draws would be of another "
                "prior). Give a result for the posterior predictive, or write the factor as a "
                "distribution of the choices it constrains")
        run.commit()
        recorder.record(trace)
        draws.append(obs.gather(run.captured, "value"))
    store = DrawStore()
    store.extend(recorder.take())
    latent = {n: np.asarray(a) for n, a in stack_stores([store], num_samples).items()}
    simulated, dims = stack_chains([draws])
    return Predictive("prior", simulated, dims, latent=latent, observed=observed, meta=store.meta)
