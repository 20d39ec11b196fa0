"""What adaptive LMH learned: per-choice unit rewards and sample counts (paper 001 Fig. 1–2).

:func:`adaptation_snapshots` runs one chain of ``th.adaptive_lmh`` and records, at chosen step
counts, each choice's unit reward, selection probability and how often it was selected and
accepted; :func:`plot_adaptation` draws them as 001's bar plots: normalised unit rewards beside
normalised sample counts, and the sample counts split into accepted and rejected proposals.
"""

from __future__ import annotations

import copy

import numpy as np

from thrifty.core.address import fmt
from thrifty.core.model import as_program


def adaptation_snapshots(program, kernel=None, at=(1000, 10_000, 100_000), seed=None) -> dict:
    """``{steps: {address: stats}}`` after each number of steps in ``at`` of one chain
    (``kernel``: an adaptive LMH kernel, default ``th.adaptive_lmh()``; it is copied).

    >>> import thrifty as th
    >>> from thrifty.models import hmm
    >>> snaps = adaptation_snapshots(hmm(predict=(0, 17)), at=(200, 400), seed=0)
    >>> sorted(snaps), len(snaps[400])
    ([200, 400], 18)
    """
    from thrifty.core.simulate import initialize
    from thrifty.inference.mcmc.adaptive import AdaptiveLMH, adaptive_lmh

    kernel = adaptive_lmh() if kernel is None else copy.deepcopy(kernel)
    if not isinstance(kernel, AdaptiveLMH):
        raise TypeError(f"adaptation_snapshots needs a th.adaptive_lmh kernel, got {kernel!r}")
    rng = np.random.default_rng(seed)
    trace = initialize(as_program(program), rng)
    out, done = {}, 0
    for n in sorted(int(a) for a in at):
        for _ in range(n - done):
            trace = kernel.step(trace, rng)
        done = n
        out[n] = kernel.adaptation()
    return out


def plot_adaptation(snapshots: dict, path=None, labels=None):
    """001 Fig. 1's bars, one row per snapshot: left, the normalised unit rewards (red) and
    sample counts (blue) of each choice; right, its sample count split into accepted (green)
    and rejected (yellow) proposals.  Returns the matplotlib figure (saved to ``path``)."""
    from thrifty.runtime.result import use_agg_without_display

    use_agg_without_display()
    import matplotlib.pyplot as plt

    rows = sorted(snapshots)
    fig, axes = plt.subplots(len(rows), 2, figsize=(11, 2.4 * len(rows)), squeeze=False,
                             layout="constrained")
    for ax, n in zip(axes, rows):
        snap = snapshots[n]
        addrs = list(snap)
        x = np.arange(len(addrs))
        reward = np.array([snap[a]["unit_reward"] for a in addrs])
        sel = np.array([snap[a]["selected"] for a in addrs], dtype=float)
        acc = np.array([snap[a]["accepted"] for a in addrs], dtype=float)
        ax[0].bar(x - 0.2, reward / max(reward.sum(), 1e-300), 0.4, color="tab:red",
                  label="unit reward")
        ax[0].bar(x + 0.2, sel / max(sel.sum(), 1.0), 0.4, color="tab:blue",
                  label="sample count")
        ax[0].set_ylabel(f"{n:,} steps\nnormalised")
        ax[1].bar(x, acc, color="tab:green", label="accepted")
        ax[1].bar(x, sel - acc, bottom=acc, color="gold", label="rejected")
        ax[1].set_ylabel("samples")
        names = labels or [fmt(a) for a in addrs]
        for a in ax:
            a.set_xticks(x)
            a.set_xticklabels(names, rotation=90 if len(x) > 8 else 0, fontsize=7)
    axes[0][0].legend(fontsize=7)
    axes[0][1].legend(fontsize=7)
    axes[-1][0].set_xlabel("choice")
    axes[-1][1].set_xlabel("choice")
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
