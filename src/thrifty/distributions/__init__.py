"""thrifty's distributions (``from thrifty import dist``).

Every family follows the conventions of :mod:`thrifty.distributions.base`: fast scalar paths,
vectorized ``log_prob`` that broadcasts over plate elements, ``-inf`` outside the support, and
errors that name the distribution (and, inside a program run, the address).

>>> from thrifty import dist
>>> round(dist.HalfCauchy(1.0).log_prob(0.0), 6)
-0.451583
"""

from thrifty.distributions import constraints
from thrifty.distributions.base import Distribution
from thrifty.distributions.continuous import (
    Beta,
    Cauchy,
    Exponential,
    Gamma,
    InverseGamma,
    Laplace,
    LogNormal,
    Normal,
    StudentT,
    Uniform,
)
from thrifty.distributions.counts import Multinomial, NegativeBinomial, NegativeBinomial2
from thrifty.distributions.discrete import (
    Bernoulli,
    Binomial,
    Categorical,
    Delta,
    DiscreteUniform,
    Geometric,
    Poisson,
)
from thrifty.distributions.lkj import LKJCholesky
from thrifty.distributions.multivariate import Dirichlet, MvNormal
from thrifty.distributions.positive import HalfCauchy, HalfNormal, HalfStudentT
from thrifty.distributions.wishart import Wishart
from thrifty.distributions.wrappers import Mixture, Truncated

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Delta",
    "Dirichlet",
    "DiscreteUniform",
    "Distribution",
    "Exponential",
    "Gamma",
    "Geometric",
    "HalfCauchy",
    "HalfNormal",
    "HalfStudentT",
    "InverseGamma",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "Mixture",
    "Multinomial",
    "MvNormal",
    "NegativeBinomial",
    "NegativeBinomial2",
    "Normal",
    "Poisson",
    "StudentT",
    "Truncated",
    "Uniform",
    "Wishart",
    "constraints",
]
