"""Traces, program execution and the modeling language."""
