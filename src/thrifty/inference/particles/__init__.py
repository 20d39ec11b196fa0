"""Particle methods: SMC, particle Gibbs with ancestor sampling, PMMH (paper 003)."""
