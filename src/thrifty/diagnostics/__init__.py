"""Diagnostics: Geweke tests, summaries and plots."""

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
