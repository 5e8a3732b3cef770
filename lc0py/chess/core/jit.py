"""The one decorator every compiled function of ``lc0py.chess.core`` is declared with.

``nogil=True``: compiled code releases the GIL, so a backend's thread runs at the same time.
``NUMBA_DISABLE_JIT=1`` runs the same source uncompiled (debugging).

Cached on disk by ``lc0py.storage.compiled.cached_njit`` (lc0py's cache folder, ``numba/``).
numba checks only the timestamp of a function's own file, so a function that calls into another
file would keep running the old machine code of its callee after that file changed: the cache
folder's name therefore carries a digest of every source file of this package
(``numba/chess-<digest>``), and a compiled package calling into this one (the search core) adds
this digest to its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lc0py.storage.compiled import cached_njit, numba_cache_folder

TAG = "chess"


def sources_digest(*folders: Path) -> str:
    """A digest of every ``*.py`` file of ``folders`` (names and contents)."""
    h = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


FOLDER = Path(__file__).parent
DIGEST = sources_digest(FOLDER)


def njit(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``@njit`` or ``@njit(inline="always")``: numba's njit, nogil, cached in lc0py's folder."""
    decorate = cached_njit(TAG, DIGEST, nogil=True, fastmath=False, **options)
    return decorate if func is None else decorate(func)


def cache_folder() -> Path | None:
    """Where this package's machine code is cached (None: not cached, compiled in each process)."""
    return numba_cache_folder(TAG, DIGEST)
