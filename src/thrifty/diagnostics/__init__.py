"""Diagnostics: Geweke tests, summaries and plots."""

from thrifty.diagnostics.geweke import GewekeResult, geweke
from thrifty.diagnostics.kalman import kalman_filter, rts_smoother
from thrifty.diagnostics.subsampling import SubsamplingCheck, check_subsampling

__all__ = [
    "GewekeResult",
    "SubsamplingCheck",
    "check_subsampling",
    "geweke",
    "kalman_filter",
    "rts_smoother",
]
