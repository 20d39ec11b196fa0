"""``from thrifty import dist`` — the distributions (see :mod:`thrifty.distributions`).

>>> from thrifty import dist
>>> d = dist.Normal(0.0, 2.0)
>>> round(d.log_prob(0.0), 6), d.mean
(-1.612086, 0.0)
"""

from thrifty.distributions import *  # noqa: F403
from thrifty.distributions import __all__  # noqa: F401
