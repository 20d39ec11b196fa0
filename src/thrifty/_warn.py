"""Where thrifty's warnings point: the user's line that called thrifty."""

from __future__ import annotations

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` of a ``warnings.warn`` call made by thrifty's code that names the
    first frame outside the package — the line of the user's code that called ``th.infer``,
    a kernel or a result's method — however deep thrifty's own calls are (as pandas'
    ``find_stack_level``).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("x", stacklevel=user_stacklevel())
    >>> w[0].filename.startswith(_PACKAGE)
    False
    """
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
