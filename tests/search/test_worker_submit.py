"""How the worker hands batches to a backend (docs/search.md, "feeding the GPU"): an asynchronous
backend (a device queue) is called from the search thread, or from the search's feeder thread
(lc0py/search/feeder.py, the default) so that the next batch queues behind the one in flight;
a host backend computes on the evaluation thread while the search gathers."""

from __future__ import annotations

import threading

import pytest

from lc0py.backends.base import PendingOutput, PlanesBatch
from lc0py.backends.random_backend import RandomBackend
from lc0py.search import worker as worker_module
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits
from lc0py.search.worker import largest_batch, prepare_for_search


class _Recording(RandomBackend):
    """Records which thread called ``evaluate_async`` and what ``prepare`` was asked for."""

    def __init__(self, delay_ms: float) -> None:
        super().__init__(delay_ms=delay_ms)
        self.callers: set[str] = set()
        self.prepared: list[int] = []
        self.sizes: list[int] = []

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        self.callers.add(threading.current_thread().name)
        self.sizes.append(len(batch))
        return super().evaluate_async(batch)

    def prepare(self, max_batch: int) -> None:
        self.prepared.append(max_batch)


@pytest.mark.parametrize("feed", [True, False])
@pytest.mark.parametrize("delay_ms, asynchronous", [(0.0, False), (0.5, True)])
def test_asynchronous_backends_are_fed_from_the_feeder_thread(
    make_search, monkeypatch: pytest.MonkeyPatch, delay_ms: float, asynchronous: bool, feed: bool
) -> None:
    """With the feeder on (``worker.FEED_ASYNC_BACKENDS``, the default) an asynchronous backend
    is called from it; off, from the search thread itself."""
    monkeypatch.setattr(worker_module, "FEED_ASYNC_BACKENDS", feed)
    backend = _Recording(delay_ms)
    assert backend.info.asynchronous is asynchronous
    params = SearchParams(overlap=True, minibatch_size=16)
    s = make_search(backend=backend, params=params, limits=SearchLimits(nodes=300, smart_pruning=False))
    s.run()
    s.join()
    backend.close()
    assert s.playouts >= 300 and s.best_move()[0] is not None
    assert backend.callers, "the backend was never called"
    if asynchronous:  # queued by the feeder or the search thread, never by the evaluation thread
        assert backend.callers == ({"lc0py-feed"} if feed else {"lc0py-search"}), backend.callers
    else:  # computed on the evaluation thread while the search thread gathers
        assert all(name.startswith("lc0py-eval") for name in backend.callers), backend.callers
    assert max(backend.sizes) <= largest_batch(params, backend.info)


def test_prepare_asks_for_the_largest_batch_a_search_sends() -> None:
    backend = _Recording(0.0)
    prepare_for_search(backend, SearchParams(minibatch_size=64))
    prepare_for_search(backend, SearchParams(minibatch_size=0))  # 0: the backend's recommendation
    prepare_for_search(backend, SearchParams(minibatch_size=1, max_prefetch=32))  # topped up to 32
    assert backend.prepared == [66, backend.info.recommended_batch + 2, 32]
