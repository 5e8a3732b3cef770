"""The one decorator every compiled function of the search core is declared with.

``cache=True``: compiled once, cached on disk; ``nogil=True``: compiled code releases the GIL, so
the backend's thread runs at the same time. ``NUMBA_DISABLE_JIT=1`` runs the same source
uncompiled (debugging).

Where the cache lives: numba checks only the timestamp of a function's own file, so a function
that calls into another file would keep running the old machine code of its callee after that
file changed. The cache directory therefore carries a digest of every source file of this
package: ``core/__pycache__/numba-<digest>`` (or ``$NUMBA_CACHE_DIR/lc0py-core-<digest>`` when
that variable is set); any change to the core compiles everything afresh, once.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numba
from numba.core import config


def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _cache_dir() -> str:
    digest = _sources_digest()
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return os.path.join(user, f"lc0py-core-{digest}")
    return str(Path(__file__).parent / "__pycache__" / f"numba-{digest}")


config.CACHE_DIR = _cache_dir()  # read by numba when each function below is decorated

njit = functools.partial(numba.njit, cache=True, nogil=True, fastmath=False)
