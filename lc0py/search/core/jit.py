"""The one decorator every compiled function of the search core is declared with.

``cache=True``: compiled once, cached on disk next to the source in ``__pycache__`` (or in
``NUMBA_CACHE_DIR``); ``nogil=True``: compiled code releases the GIL, so the backend's thread runs
at the same time. ``NUMBA_DISABLE_JIT=1`` runs the same source uncompiled (debugging).
"""

from __future__ import annotations

import functools

import numba

njit = functools.partial(numba.njit, cache=True, nogil=True, fastmath=False)
