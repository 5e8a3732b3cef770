"""How many BLAS threads the numpy backend's matrix products may use, bounded by default.

numpy's BLAS (OpenBLAS, MKL) starts a thread per core for every product. On a machine whose
cores are busy (a CI runner, the search's own threads, other engines) those threads wait on one
another and a T82 evaluation falls from ~120 positions a second to ~1. lc0's CPU backends use one
BLAS thread unless told otherwise (``blas_cores``, default 1), and so does lc0py's numpy backend:
``--backend-opts threads=N`` (``0``: the BLAS library's own choice, a thread per core) or the
environment variable ``LC0PY_BLAS_THREADS`` change it. The limit is applied around each
evaluation only (threadpoolctl, ~10 us), so the rest of the program's numpy keeps its threads.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from lc0py.errors import BackendOptionError

ENV_BLAS_THREADS = "LC0PY_BLAS_THREADS"
DEFAULT_BLAS_THREADS = 1  # lc0's blas_cores default

_controller: Any = None


def blas_threads(option: int | None = None) -> int:
    """The BLAS thread count: the backend option if given, else ``$LC0PY_BLAS_THREADS``, else 1.
    ``0`` means no limit (the BLAS library's default)."""
    if option is not None:
        return option
    text = os.environ.get(ENV_BLAS_THREADS, "").strip()
    if not text:
        return DEFAULT_BLAS_THREADS
    try:
        value = int(text)
    except ValueError:
        raise BackendOptionError(f"{ENV_BLAS_THREADS}='{text}' is not an integer") from None
    if value < 0:
        raise BackendOptionError(f"{ENV_BLAS_THREADS}={value}: must be 0 (no limit) or more")
    return value


@contextmanager
def blas_limit(threads: int) -> Iterator[None]:
    """At most ``threads`` BLAS threads inside the block (``0``: unchanged)."""
    global _controller
    if threads <= 0:
        with nullcontext():
            yield
        return
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    with _controller.limit(limits=threads, user_api="blas"):
        yield


def current_blas_threads() -> list[int]:
    """The thread counts of the BLAS libraries loaded now (for tests and ``-v``)."""
    from threadpoolctl import threadpool_info

    return [int(lib["num_threads"]) for lib in threadpool_info() if lib.get("user_api") == "blas"]
