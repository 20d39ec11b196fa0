"""Process-wide execution state shared by the distributions and the core.

``RUNS`` is the stack of active program executions (``thrifty.core.run.Run``).  Distributions
consult it only to decide whether an invalid parameter should raise at once (outside a run) or be
reported by ``th.sample``/``th.observe``, which know the address (inside a run).
"""

from __future__ import annotations

RUNS: list = []
