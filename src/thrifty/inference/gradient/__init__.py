"""Gradient kernels (HMC, NUTS) on blocks of continuous choices, through JAX and BlackJAX."""
