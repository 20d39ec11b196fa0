"""Proposals of the MH-family kernels and their adaptation."""
