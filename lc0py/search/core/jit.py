"""The one decorator every compiled function of the search core is declared with.

``nogil=True``: compiled code releases the GIL, so the backend's thread runs at the same time.
``NUMBA_DISABLE_JIT=1`` runs the same source uncompiled (debugging).

Cached on disk by ``lc0py.storage.compiled.cached_njit`` (lc0py's cache folder, ``numba/``; a
temporary folder, then no cache, when that is not writable; numba's process-wide settings are
left alone). numba checks only the timestamp of a function's own file, so a function that calls
into another file would keep running the old machine code of its callee after that file changed:
the cache folder's name therefore carries a digest of every source file of this package
(``numba/core-<digest>``), and any change to the core compiles everything afresh, once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lc0py.chess.core.jit import FOLDER as CHESS_CORE
from lc0py.chess.core.jit import sources_digest
from lc0py.storage.compiled import cached_njit, numba_cache_folder

TAG = "core"


DIGEST = sources_digest(Path(__file__).parent, CHESS_CORE)


def njit(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@njit`` or ``@njit(inline="always")``: numba's njit, nogil, cached in lc0py's folder."""
    decorate = cached_njit(TAG, DIGEST, nogil=True, fastmath=False, **options)
    return decorate if func is None else decorate(func)


def cache_folder() -> Path | None:
    """Where the core's machine code is cached (None: not cached, compiled in each process)."""
    return numba_cache_folder(TAG, DIGEST)
