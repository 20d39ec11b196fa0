"""Numerical building blocks: the sequential test, alias tables, resampling schemes."""
