"""The GP hyperparameter model of paper 001 §5.2.

A Gaussian process with mean m(x) = a x² + b x + c and kernel k(x, x′) = d·exp(−(x − x′)²/(2g))
observed at six points, (0, 0.5), (1, 0.4), (2, 0.2), (3, −0.05), (4, −0.2), (5, 0.1); the
program predicts (returns) a, b and c.  001 does not state its priors; here
a, b, c ~ N(0, 1), d ~ Gamma(1, 1) and g ~ Gamma(1, 1) (shape, rate), and the observations get
a nugget of variance 10⁻³ (the kernel alone is nearly singular for large g).
"""

from __future__ import annotations

import numpy as np

import thrifty as th
from thrifty import dist

X = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
Y = np.array([0.5, 0.4, 0.2, -0.05, -0.2, 0.1])
NUGGET = 1e-3


@th.model
def gp_hyperparameters(x=X, y=Y, nugget: float = NUGGET):
    """Five hyperparameters, each its own choice; the output is (a, b, c).

    >>> tr = th.simulate(gp_hyperparameters(), seed=0)
    >>> len(tr.output)
    3
    """
    a = th.sample("a", dist.Normal(0.0, 1.0))
    b = th.sample("b", dist.Normal(0.0, 1.0))
    c = th.sample("c", dist.Normal(0.0, 1.0))
    d = th.sample("d", dist.Gamma(1.0, 1.0))
    g = th.sample("g", dist.Gamma(1.0, 1.0))
    diff = x[:, None] - x[None, :]
    K = d * np.exp(-(diff**2) / (2.0 * g)) + nugget * np.eye(len(x))
    th.observe("y", dist.MvNormal(a * x**2 + b * x + c, K), y)
    return a, b, c
