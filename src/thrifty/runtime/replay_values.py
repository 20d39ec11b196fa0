"""Program outputs computed from recorded draws (only when ``result.output`` asks for them).

A chain whose program returns values computed from plate sites cannot keep its output at a
draw that followed a partial execution (the code after the plate saw only some elements).
Instead of a full execution per draw while sampling, the draw is marked pending; here, one full
execution per pending draw sets every latent choice to its recorded value (proposal targets:
top-level sites, plate columns, markov steps, mem keys) and returns the program's output.
"""

from __future__ import annotations

import numpy as np

from thrifty.core.run import RESCORE, Run, VecTarget
from thrifty.core.simulate import initialize
from thrifty.errors import RecordingError, SelectionError
from thrifty.runtime.recorder import PENDING


def _targets(meta: dict, values: dict) -> tuple[dict, dict]:
    targets, vec = {}, {}
    for name, value in values.items():
        kind, addr, key, latent = meta[name]
        if not latent or value is None:
            continue
        if kind == "root":
            targets[key] = value
        elif kind == "mem":
            targets[addr + (key,)] = value
        elif kind == "plate":
            vec[(addr, key)] = VecTarget(np.arange(len(value)), value)
        elif kind == "plate_chain":
            local, rel = key
            elems = np.arange(len(value))
            for t in range(value.shape[1]):
                vec[(addr, local + (t,) + rel)] = VecTarget(elems, value[:, t])
        elif kind == "chain":
            for t in range(len(value)):
                v = value[t]
                if not (isinstance(v, float) and v != v):  # NaN: no such site at that step
                    targets[addr + (t,) + key] = v.item() if isinstance(v, np.generic) else v
    return targets, vec


def recorded_latents(store) -> list[str]:
    """Names of the latent variables of ``store``; a :class:`RecordingError` naming the latent
    variables that were not recorded (``record=``/``exclude=`` of ``th.infer``) or were read
    generically, since a replay would draw them afresh from their prior instead of setting
    them to the chain's values."""
    missing = set(store.unrecorded)
    missing.update(n for n, m in store.meta.items() if m[3] and n not in store.series)
    generic = [n for n in store.series if n not in store.meta]  # whole values of a chain
    if missing:
        names = sorted(missing)
        listed = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
        raise RecordingError(
            "replaying the recorded draws (for outputs that read plate values, the pointwise "
            "log-likelihood or the posterior predictive) needs every latent variable, but "
            f"these were not recorded: {listed}; record them (th.infer(..., record=None), or "
            "add them to record= / remove them from exclude=)"
        )
    if generic:
        raise RecordingError(
            "replaying the recorded draws (for outputs that read plate values, the pointwise "
            f"log-likelihood or the posterior predictive) cannot set {', '.join(generic[:8])}: "
            "a markov chain whose steps hold plates or chains is recorded as whole values, "
            "which a replay cannot set"
        )
    return [n for n, m in store.meta.items() if m[3]]


def draw_values(store, names: list[str]):
    """``(d, values)`` for each draw ``d`` of ``store``: the recorded value of each variable in
    ``names`` at that draw (one dict, updated in place from draw to draw)."""
    events = {n: store.series[n].events() for n in names}
    ahead = {n: next(it, None) for n, it in events.items()}  # each variable's next event
    cur: dict = {}
    for d in range(store.n):
        for n in names:  # advance every variable to draw d
            ev = ahead[n]
            while ev is not None and ev[0] <= d:
                _, e, v = ev
                if e is None:
                    cur[n] = None if v is None else np.array(v) if isinstance(v, np.ndarray) else v
                else:
                    cur[n][e] = v
                ev = next(events[n], None)
            ahead[n] = ev
        yield d, cur


def replay(trace, rng, meta: dict, values: dict, d: int, mode=RESCORE, commit=True) -> Run:
    """One full execution of ``trace``'s program with every latent choice set to ``values``
    (draw ``d``), committed to ``trace`` unless ``commit`` is False."""
    targets, vec = _targets(meta, values)
    try:
        run = Run(trace, rng, targets=targets, vec=vec, mode=mode).execute()
        run.check_targets(len(targets), vec.keys())
    except SelectionError as e:
        raise RecordingError(
            f"draw {d} cannot be replayed from the recorded values ({e}): the program's "
            "latent choices at that draw differ from the recorded ones (th.predictive's "
            "program must be the result's model, applied to inputs that keep its latent "
            "choices)"
        ) from None
    if commit:
        run.commit()
    return run


def outputs_from_values(program, store) -> list:
    """The outputs of ``store`` (a chain's :class:`~thrifty.runtime.draws.DrawStore`) with the
    pending ones computed from the recorded values."""
    outputs = list(store.outputs)
    if not any(o is PENDING for o in outputs):
        return outputs
    names = recorded_latents(store)
    rng = np.random.default_rng(0)
    trace = initialize(program, rng)
    for d, cur in draw_values(store, names):
        if outputs[d] is PENDING:
            replay(trace, rng, store.meta, cur, d)
            outputs[d] = trace.output
    return outputs
