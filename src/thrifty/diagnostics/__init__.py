"""Diagnostics: Geweke tests, summaries and plots."""

from thrifty.diagnostics.geweke import GewekeResult, geweke

__all__ = ["GewekeResult", "geweke"]
