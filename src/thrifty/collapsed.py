"""Collapsed conjugate families (``th.collapsed``): observation models whose parameter is
integrated out, kept as sufficient statistics with O(1) incorporate/unincorporate (O(d²) for the
Normal–Inverse-Wishart, by rank-one Cholesky updates).  Observe them inside a plate — one family
for every element, or one per cluster through ``th.mem`` with ``th.CRP`` table labels as keys.

* ``BetaBernoulli(a, b)``: p ~ Beta(a, b), x ~ Bernoulli(p);
* ``GammaPoisson(a, b)``: λ ~ Gamma(a, rate b), x ~ Poisson(λ);
* ``NormalGamma(mu0, kappa0, a0, b0)``: 1-d Normal with unknown mean and precision;
* ``NormalInverseWishart(m0, k0, v0, S0)`` (alias ``NIW``): d-dim Normal with unknown mean and
  covariance.

>>> import numpy as np, thrifty as th
>>> @th.model
... def coin(y):
...     with th.plate("flips", len(y)) as i:
...         th.observe("y", th.collapsed.BetaBernoulli(1.0, 1.0), y[i])
>>> t = th.simulate(coin(np.array([1, 1, 0])), seed=0)
>>> round(float(np.exp(t.log_joint())), 6)   # B(3, 2) / B(1, 1) = 1/12
0.083333
"""

from thrifty.processes.collapsed import (
    NIW,
    BetaBernoulli,
    Collapsed,
    GammaPoisson,
    NormalGamma,
    NormalInverseWishart,
)

__all__ = [
    "NIW",
    "BetaBernoulli",
    "Collapsed",
    "GammaPoisson",
    "NormalGamma",
    "NormalInverseWishart",
]
