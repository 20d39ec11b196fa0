"""What is stale in a plate (paper 000 §3.5): the elements whose stored log-density was computed
before something they read changed — a value that precedes the plate, changed by a lazy run
(``valid_from`` past the element's ``stamp``), or a mem key the element read (the key's clock).

:class:`StaleElements` is the part of :class:`~thrifty.core.plate.PlateNode` that answers it:
O(1) when nothing is stale (``n_stale``, ``mem_stale``), one vectorized scan of the asked
elements otherwise.
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)


class StaleElements:
    """Staleness of a plate's elements (reads the node's ``stamp``, ``valid_from``,
    ``full_clock``, ``n_stale``, ``mem_stale``, ``mem_keys``, ``elem_lp``, ``lp_sum``)."""

    def has_stale(self, mems=None, exact: bool = False) -> bool:
        if not exact or self.n_stale:
            return bool(self.n_stale or self.mem_stale)
        if self.mem_stale and not self.any_stale(None, mems):
            self.mem_stale = False
        if not self.mem_stale and self.lp_sum != self.lp_sum:
            self.lp_sum = float(self.elem_lp.array().sum())  # every element fresh again
        return self.mem_stale

    def stale_parts(self, mems=None) -> list:
        return [("plate", self.addr, b)] if len(b := self.stale_elements(None, mems)) else []

    def stale_elements(self, idx=None, mems=None) -> np.ndarray:
        """Indices (among ``idx``, default all) whose log-density is out of date: executed
        before something that precedes the plate changed (``valid_from``), or before a mem
        key they read changed (the key's clock in ``mems``)."""
        found = self._stale(idx, mems)
        if found is None:
            return _EMPTY
        idx, bad = found
        if type(bad) is bool:
            return idx if bad else _EMPTY
        where = np.flatnonzero(bad)
        return where if idx is None else np.asarray(idx)[where]

    def any_stale(self, idx=None, mems=None) -> bool:
        """Whether :meth:`stale_elements` would find any (without listing them)."""
        found = self._stale(idx, mems)
        if found is None:
            return False
        bad = found[1]
        return bad if type(bad) is bool else bool(bad.any())

    def _stale(self, idx, mems):
        """``(idx, stale)`` for the asked elements (``idx`` None: all; a slice asks for all):
        ``stale`` a bool for one element (Gibbs, MH on one element: no array), else a mask;
        None when nothing in the plate is stale (O(1))."""
        if not self.n_stale and not self.mem_stale:
            return None
        if isinstance(idx, slice):
            idx = None
        elif idx is not None and len(idx) == 1:
            return idx, self._stale_one(int(idx[0]), mems)
        return idx, self._stale_mask(idx, mems)

    def _stale_mask(self, idx, mems) -> np.ndarray:
        """Per element of ``idx`` (None: all), whether it is stale (see :meth:`stale_elements`)."""
        stamp = self.stamp.array() if idx is None else self.stamp.take(idx)
        if self.full_clock >= self.valid_from:  # (max(stamp, full_clock) < valid_from: none)
            bad = np.zeros(len(stamp), dtype=bool)
        else:
            bad = stamp < self.valid_from
        if mems and self.mem_stale:
            stamp = np.maximum(stamp, self.full_clock)
            for (maddr, _), keys in self.mem_keys.items():
                table = mems.get(maddr)
                if table is not None:
                    k = keys.array() if idx is None else keys.take(idx)
                    bad |= stamp < table.key_clocks(k)
        return bad

    def _stale_one(self, e: int, mems) -> bool:
        stamp = max(self.stamp.get(e), self.full_clock)
        if stamp < self.valid_from or not (mems and self.mem_stale):
            return stamp < self.valid_from
        return any(stamp < mems[m].clock.get(keys.get(e), 0)
                   for (m, _), keys in self.mem_keys.items() if m in mems)
