"""The program output per draw, and the check that plates are used as plates.

Kernels execute plates on subsets of their elements, so the code after a ``with th.plate``
block sees the values of the executed elements only.  That is harmless when the code after the
plate does not read them — the rule of plates — and :func:`probe` checks it once, at
initialisation, by executing the program with every plate empty and comparing with the full
execution:

* a site after a plate whose log-density changes reads values from the plate: an error, since
  its score would be wrong whenever the plate runs a subset;
* an output that changes depends on the plate's values: it is then recomputed by a full
  execution whenever a draw is recorded after a partial one (O(N) per draw).
"""

from __future__ import annotations

import math

from thrifty.core.address import fmt
from thrifty.core.run import RESCORE, Run
from thrifty.core.vocab import OBSERVED, same_value
from thrifty.errors import ModelError


def _has_plates(block) -> bool:
    return bool(block.plates) or any(
        _has_plates(c.step_view(t)) for c in block.chains.values() for t in c.nested
    )


def probe(trace, rng) -> bool:
    """Check plate usage on a fully executed ``trace``; return whether the output needs the
    plates' values (see the module docstring)."""
    if not _has_plates(trace.root):
        return False
    try:
        run = Run(trace, rng).execute()  # nothing planned: every plate runs zero elements
    except Exception as e:  # the code after a plate failed on empty plate values
        if getattr(e, "in_plate", False):  # the plate's own body failed on no element
            raise ModelError(
                f"{e} (found by running the program with its plates on no element: thrifty "
                "runs plates on any subset of their elements, so the body must work for any)"
            ) from e
        raise ModelError(
            "executing the program with its plates running no element failed "
            f"({type(e).__name__}: {e}). thrifty runs plates on subsets of their elements, "
            "so the program must work for any subset, including an empty one; the usual cause "
            "is using values sampled inside a plate after it"
        ) from e
    for local, site in trace.root.sites.items():
        new = run.root.sites.get(local)
        if new is None:
            continue
        a, b = site.lp, new.lp
        if not (a == b or (math.isnan(a) and math.isnan(b))) or (
            site.kind != OBSERVED and not same_value(site.value, new.value)
        ):
            raise ModelError(
                f"the site at {fmt(local)} depends on values sampled inside a plate after the "
                "plate ended; values from a plate must only be used inside it (move the site "
                "into the plate, or use a Python loop)"
            )
    return not same_value(trace.output, run.output)


def current_output(trace, rng, needs_plates: bool):
    """The program output at ``trace`` (a full re-execution if it needs the plates' values)."""
    if trace.output_full or not needs_plates:
        return trace.output
    run = Run(trace, rng, mode=RESCORE).execute()
    run.commit()
    return trace.output
