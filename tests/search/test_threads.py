"""``Threads`` (docs/search.md, "Threads: minibatches in flight"): with more than two, minibatches
gathered while the device already has a batch queued wait and go to it as one network batch; each
minibatch must get its own rows of the outputs, and the tree must stay whole."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.base import BackendInfo, NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.random_backend import RandomBackend
from lc0py.search import worker as worker_module
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits
from lc0py.search.worker import Batch, batches_in_flight, largest_batch
from tests.search.conftest import check_tree


class _Lazy:
    """A device that finishes a batch only when its result is asked for: every batch handed over
    counts as still computing until the search waits for it, so merging does not depend on
    timing."""

    def __init__(self, backend: RandomBackend, planes: PlanesBatch) -> None:
        self._backend, self._planes = backend, planes
        self._out: NetworkOutput | None = None

    def result(self) -> NetworkOutput:
        if self._out is None:
            self._out = self._backend.evaluate(self._planes)
        return self._out

    def done(self) -> bool:
        return self._out is not None


class _SlowDevice(RandomBackend):
    def __init__(self) -> None:
        super().__init__()
        base = self.info
        self.info = BackendInfo(
            base.input_format, base.has_wdl, base.has_moves_left, base.recommended_batch, asynchronous=True
        )
        self.sizes: list[int] = []

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        self.sizes.append(len(batch))
        return _Lazy(self, batch)


@pytest.fixture
def checked_rows(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Every minibatch's rows of the network batch it travelled in are compared with the same
    backend run on that minibatch alone (a mismatch fails the test at its end: raised inside the
    search it would only end the search); yields the number of minibatches per network batch."""
    reference = RandomBackend()
    per_launch: list[int] = []
    wrong: list[int] = []
    submit, apply = worker_module.SearchWorker.submit, worker_module.SearchWorker.apply

    def recording_submit(self: worker_module.SearchWorker, batches: list[Batch]) -> None:
        per_launch.append(len(batches))
        submit(self, batches)

    def checking_apply(self: worker_module.SearchWorker, batch: Batch, out: NetworkOutput, to_tree: bool):
        alone = reference.evaluate(batch.planes())
        rows = slice(batch.offset, batch.offset + batch.nn_count)
        if not (np.array_equal(out.policy[rows], alone.policy) and np.array_equal(out.wdl[rows], alone.wdl)):
            wrong.append(batch.offset)
        return apply(self, batch, out, to_tree)

    monkeypatch.setattr(worker_module.SearchWorker, "submit", recording_submit)
    monkeypatch.setattr(worker_module.SearchWorker, "apply", checking_apply)
    yield per_launch
    assert not wrong, f"{len(wrong)} minibatches got rows of other positions"


def test_batches_in_flight_follow_threads_and_overlap() -> None:
    assert batches_in_flight(SearchParams(overlap=False, threads=8)) == 1
    assert [batches_in_flight(SearchParams(threads=t)) for t in (0, 1, 2, 3, 6)] == [2, 2, 2, 3, 6]


@pytest.mark.parametrize("minibatch", [64, 256])
def test_more_threads_join_minibatches_on_a_busy_device(make_search, checked_rows, minibatch: int) -> None:
    backend = _SlowDevice()
    params = SearchParams(threads=6, minibatch_size=minibatch)
    s = make_search(backend=backend, params=params, limits=SearchLimits(nodes=3000, smart_pruning=False))
    s.run()
    s.join()
    assert s.error is None and s.playouts >= 3000
    assert max(checked_rows) >= 2, "no minibatches were joined"
    assert len(backend.sizes) < s.worker.batches  # fewer network batches than minibatches
    assert max(backend.sizes) <= largest_batch(params, backend.info)
    check_tree(s.tree)  # no visit left in flight, N = 1 + children's N


def test_two_threads_keep_one_minibatch_per_network_batch(make_search, checked_rows) -> None:
    backend = _SlowDevice()
    s = make_search(
        backend=backend, params=SearchParams(threads=2, minibatch_size=16), limits=SearchLimits(nodes=1500)
    )
    s.run()
    s.join()
    assert s.error is None and checked_rows and set(checked_rows) == {1}
