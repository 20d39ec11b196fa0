"""Coupled processes and collapsed conjugate families: exchangeable random procedures with
sufficient statistics, O(1) incorporate/unincorporate of one draw.  :mod:`.base` states what a
process provides to the engine; the Chinese restaurant process (:mod:`.crp`) and the
Pitman–Yor process (:mod:`.pitman_yor`) are its users.

>>> from thrifty.processes import CRP, collapsed
>>> s = CRP(2.0).state((2.0,))
>>> s.incorporate(0)
>>> round(s.log_prob(), 6)     # one customer: probability 1
0.0
"""

from thrifty.processes import collapsed
from thrifty.processes.base import Process, State, Tables
from thrifty.processes.crp import CRP
from thrifty.processes.pitman_yor import PitmanYor

__all__ = ["CRP", "PitmanYor", "Process", "State", "Tables", "collapsed"]
