"""Kernels that read the data in sections: subsampled MH, austerity Gibbs, SMH, SGLD and
the Taylor proxies (papers 000, 002, 004)."""
