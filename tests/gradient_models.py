"""Models that worker processes unpickle by reference: in a module of their own, light to
import (a spawned worker imports the module of the model it runs — test_gradient.py would bring
scipy.stats, ArviZ and pytest with it, about a second of each worker's start)."""

import thrifty as th
from thrifty import dist


@th.model
def small(y):
    mu = th.sample("mu", dist.Normal(0.0, 1.0))
    sigma = th.sample("sigma", dist.Gamma(5.0, 5.0))
    with th.plate("data", len(y)) as i:
        th.observe("y", dist.Normal(mu, sigma), y[i])
