"""Load (or compile, once per installation) the search core before the first timed ``go``.

numba compiles on first call and caches the machine code on disk (``core/jit.py``, in lc0py's
cache folder); loading it back still costs about a second per process, compiling it the first
time about half a minute on an idle 2-core machine. ``start_in_background()`` starts that work in
a thread at process start (the UCI loop calls it before it reads its first command, so ``uciok``
goes out at once and the GUI's ``isready`` finds the core ready or nearly so); ``warm_up()`` runs
it, or waits for the background run, telling the caller once (``on_wait``) when the wait is the
first compile, so that a GUI sees why the engine is silent."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lc0py.search.precompile import FEN, FlatBackend, compile_in_parallel

_lock = threading.Lock()  # held by whoever runs the warm-up
_done = threading.Event()  # set once the core is loaded
_background: threading.Thread | None = None
_background_lock = threading.Lock()
MARKER = "warm"  # written into the core's cache folder once a warm-up there finished

COMPILING = (
    "compiling the search core (once after installing or updating lc0py; "
    "about a minute on a small machine, then cached)"
)


def _marker() -> Path | None:
    from lc0py.search.core.jit import cache_folder

    folder = cache_folder()
    return None if folder is None else folder / MARKER


def is_cached() -> bool:
    """Whether the core's machine code is in the cache (a warm-up there finished before)."""
    marker = _marker()
    return marker is not None and marker.is_file()


def is_warm() -> bool:
    """Whether this process has loaded the core."""
    return _done.is_set()


def _run() -> float:
    """The tiny search on a flat fake network (every compiled function with the argument types
    the search uses); returns the seconds it took."""
    from lc0py.search.core import gather
    from lc0py.search.core import nncache as cache_core
    from lc0py.search.core.nncache import NNCache
    from lc0py.search.core.tree import NodeTree
    from lc0py.search.params import SearchParams
    from lc0py.search.search import Search, SearchLimits

    start = time.perf_counter()
    tree = NodeTree()
    tree.reset_to_position(FEN, [])
    # root noise on: its compiled hook is loaded too (DirichletNoiseEpsilon); one task worker
    # from the first leaf on: the task workers' scan is loaded too (TaskWorkers)
    params = SearchParams(
        overlap=False, minibatch_size=16, verbose_move_stats=False, noise_epsilon=0.25, random_seed=0,
        task_workers=1, minimum_processing_work=1,
    )
    limits = SearchLimits(nodes=64, smart_pruning=False)
    search = Search(tree, FlatBackend(), params, limits, NNCache(1000))
    search.run()
    search.join()
    search.info()
    search.iteration_stats()  # the stoppers' root statistics (this search's limits skip them)
    search.best_move()
    # What this tiny search never reaches, compiled here with the argument types the search
    # passes (a first call does nothing): undoing the visits of a batch still in flight when a
    # search stops -- which a cold cache would otherwise compile after `stop`, before bestmove.
    gather.cancel_visits(tree.arrays, search.worker.root_id, np.zeros((1, 5), np.int32), 0)
    # ... and the NN cache's growth (its first doubling, deep into a long search)
    cache_core.grown(cache_core.allocate(1), 2)
    tree.reset_to_position(FEN, ["a1a2"])
    return time.perf_counter() - start


def warm_up(on_wait: Callable[[str], None] | None = None) -> float:
    """Load (or compile) the search core in this process, or wait for the background run; returns
    the seconds spent here (0 when already warm). ``on_wait(text)`` is called once, before a wait
    that is a first compile (nothing cached), or one that has lasted half a second."""
    if _done.is_set():
        return 0.0
    start = time.perf_counter()
    told = False
    if on_wait is not None and not is_cached():
        on_wait(COMPILING)
        told = True
    if not _lock.acquire(blocking=False):  # the background thread is at it
        if not told and on_wait is not None and not _done.wait(0.5):
            on_wait(COMPILING if not is_cached() else "loading the compiled search core")
        _lock.acquire()
    try:
        if not _done.is_set():
            if is_cached():
                _run()
            else:  # the first compile: on two processes (precompile.py)
                compile_in_parallel(_run)
            _done.set()
            marker = _marker()
            if marker is not None and not marker.exists():
                with contextlib.suppress(OSError):
                    marker.write_bytes(b"")
    finally:
        _lock.release()
    return time.perf_counter() - start


def _background_run() -> None:
    with contextlib.suppress(BaseException):  # a failure shows again in the caller's own warm_up()
        warm_up()


def start_in_background() -> None:
    """Start ``warm_up()`` in a daemon thread (once per process; no-op when already warm)."""
    global _background
    if _done.is_set():
        return
    with _background_lock:
        if _background is None:
            _background = threading.Thread(target=_background_run, name="lc0py-warm-up", daemon=True)
            _background.start()
