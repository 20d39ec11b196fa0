"""Single-trace MCMC kernels: MH, LMH, enumerative Gibbs, adaptive LMH (papers 000, 001)."""
