"""Load (or compile, once per installation) the search core before the first timed ``go``.

numba compiles on first call and caches the machine code on disk (``core/jit.py``); loading it
back still costs about a second per process. ``warm_up()`` pays that at engine start
(``isready`` / the backend's creation), so the first ``go`` answers within its budget."""

from __future__ import annotations

import threading
import time

import numpy as np

from lc0py.backends.base import POLICY_SIZE, BackendBase, BackendInfo, NetworkOutput, PlanesBatch

_lock = threading.Lock()


class _FlatBackend(BackendBase):
    """Uniform policy, value 0: enough to drive every compiled function once."""

    name = "warm-up"

    def __init__(self) -> None:
        self.info = BackendInfo(input_format=1, has_wdl=True, has_moves_left=False, recommended_batch=16)

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        n = len(batch)
        wdl = np.tile(np.array([0.25, 0.5, 0.25], np.float32), (n, 1))
        return NetworkOutput(np.zeros((n, POLICY_SIZE), np.float32), wdl, np.zeros(n, np.float32))


_done = False


def warm_up() -> float:
    """Run a tiny search on a flat fake network (every compiled function with the argument
    types the search uses); returns the seconds it took (0 when already warm)."""
    global _done
    with _lock:
        if _done:
            return 0.0
        from lc0py.search.core.nncache import NNCache
        from lc0py.search.core.tree import NodeTree
        from lc0py.search.params import SearchParams
        from lc0py.search.search import Search, SearchLimits

        start = time.perf_counter()
        tree = NodeTree()
        tree.reset_to_position("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", [])
        # root noise on: its compiled hook is loaded too (DirichletNoiseEpsilon)
        params = SearchParams(
            overlap=False, minibatch_size=16, verbose_move_stats=False, noise_epsilon=0.25, random_seed=0
        )
        limits = SearchLimits(nodes=64, smart_pruning=False)
        search = Search(tree, _FlatBackend(), params, limits, NNCache(1000))
        search.run()
        search.join()
        search.info()
        search.best_move()
        # What this tiny search never reaches, compiled here with the argument types the search
        # passes (a first call does nothing): undoing the visits of a batch still in flight when a
        # search stops -- which a cold cache would otherwise compile after `stop`, before bestmove.
        from lc0py.search.core import gather

        gather.cancel_visits(tree.arrays, search.worker.root_id, np.zeros((1, 5), np.int32), 0)
        # ... and the NN cache's growth (its first doubling, deep into a long search)
        from lc0py.search.core import nncache as cache_core

        cache_core.grown(cache_core.allocate(1), 2)
        tree.reset_to_position("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", ["a1a2"])
        _done = True
        return time.perf_counter() - start
