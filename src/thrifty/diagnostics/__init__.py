"""Diagnostics: Geweke tests, summaries and plots.

>>> import thrifty as th
>>> from thrifty import dist
>>> from thrifty.diagnostics import geweke
>>> @th.model
... def m():
...     th.observe("y", dist.Normal(th.sample("mu", dist.Normal(0.0, 1.0)), 1.0), 0.0)
>>> geweke(m(), th.mh("mu", th.drift(1.0)), num_samples=2000, seed=0).min_p > 1e-4
True
"""

from thrifty.diagnostics.adaptation import adaptation_snapshots, plot_adaptation
from thrifty.diagnostics.geweke import GewekeResult, geweke
from thrifty.diagnostics.kalman import kalman_filter, rts_smoother
from thrifty.diagnostics.subsampling import SubsamplingCheck, check_subsampling

__all__ = [
    "GewekeResult",
    "SubsamplingCheck",
    "adaptation_snapshots",
    "check_subsampling",
    "geweke",
    "kalman_filter",
    "plot_adaptation",
    "rts_smoother",
]
