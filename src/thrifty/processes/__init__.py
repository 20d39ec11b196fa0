"""Exchangeable random procedures (issue 10, in progress): the Chinese restaurant process and
collapsed conjugate families, with O(1) incorporate/unincorporate of one draw.  Usable on their
own today; not yet as sites of a model (see each module's status note).

>>> from thrifty.processes import CRP, collapsed
>>> crp = CRP(2.0)
>>> crp.incorporate(0)
>>> round(crp.log_prob(), 6)     # one customer: probability 1
0.0
"""

from thrifty.processes import collapsed
from thrifty.processes.crp import CRP

__all__ = ["CRP", "collapsed"]
