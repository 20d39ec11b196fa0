"""The progress display of ``th.infer``: one tqdm bar for the whole run.

The bar counts kernel steps of all chains (its rate is steps/s over all chains).  Its description
says which chain runs and whether it is in warmup (burn-in) or sampling — ``chain 2/4 warmup``
when chains run one after the other, ``4 chains: 1 warmup, 2 sampling, 1 done`` when they run
in parallel — and its postfix the acceptance rate (accepted / proposed over every kernel of the
running and finished chains) and the number of draws recorded.  It is updated by the chains'
ticks (about ten times per second per chain), never per step.
"""

from __future__ import annotations

import sys
import warnings

with warnings.catch_warnings():  # tqdm.auto in Jupyter without ipywidgets: a text bar, quietly
    warnings.simplefilter("ignore")
    from tqdm.auto import tqdm


class _Bar(tqdm):
    monitor_interval = 0  # no monitor thread: worker processes are forked from this process


class Progress:
    """No-op when ``enabled`` is False."""

    def __init__(self, enabled, chains, cfg, parallel, records):
        self.enabled = enabled
        self.chains = chains
        self.cfg = cfg
        self.parallel = parallel
        self.iteration = [r.iteration for r in records]
        self.status = [r.status for r in records]
        self.acc = [(r.accepted, r.proposed) for r in records]
        self.draws = [r.num_draws for r in records]
        self.current = None
        self.bar = None
        if enabled:
            tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
            self.bar = _Bar(
                total=chains * cfg.total,
                initial=sum(self.iteration),
                unit="step",
                dynamic_ncols=True,
                mininterval=0.1 if tty else 5.0,
                file=sys.stderr,
                desc=self._desc(),
            )

    def _phase(self, c) -> str:
        if self.status[c] in ("done", "stopped", "interrupted", "failed"):
            return "done"
        return "warmup" if self.iteration[c] < self.cfg.burn_in else "sampling"

    def _desc(self) -> str:
        if not self.parallel:
            c = self.current if self.current is not None else 0
            return f"chain {c + 1}/{self.chains} {self._phase(c)}"
        counts: dict = {}
        for c in range(self.chains):
            if self.status[c] != "pending" or self.iteration[c]:
                p = self._phase(c)
                counts[p] = counts.get(p, 0) + 1
        parts = [f"{counts[p]} {p}" for p in ("warmup", "sampling", "done") if p in counts]
        return f"{self.chains} chains: " + (", ".join(parts) or "starting")

    def update(self, c, iteration, accepted, proposed, num_draws, status="running"):
        if not self.enabled:
            return
        delta = iteration - self.iteration[c]
        self.iteration[c] = iteration
        self.status[c] = status
        self.acc[c] = (accepted, proposed)
        self.draws[c] = num_draws
        self.current = c
        acc = sum(a for a, _ in self.acc)
        prop = sum(p for _, p in self.acc)
        # (draws as a str: tqdm writes the number 10000 as 1e+4)
        post = {"acc": f"{acc / prop:.3f}" if prop else "-", "draws": str(sum(self.draws))}
        self.bar.set_description_str(self._desc(), refresh=False)
        self.bar.set_postfix(post, refresh=False)
        self.bar.update(delta)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
