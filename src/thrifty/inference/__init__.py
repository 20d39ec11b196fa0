"""Kernels and inference programs."""
