"""``from thrifty import dist`` — the distributions (see :mod:`thrifty.distributions`)."""

from thrifty.distributions import *  # noqa: F403
from thrifty.distributions import __all__  # noqa: F401
