"""``Threads`` (docs/search.md, "Threads: minibatches in flight"): with more than two, minibatches
gathered while the device already has a batch queued wait and go to it as one network batch; each
minibatch must get its own rows of the outputs, and the tree must stay whole."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.base import BackendInfo, NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.random_backend import RandomBackend
from lc0py.search import search as search_module
from lc0py.search import worker as worker_module
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchCallbacks, SearchLimits
from lc0py.search.worker import Batch, batches_in_flight, largest_batch, network_batches_outstanding
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


def test_auto_threads_keep_every_child_of_a_multi_backend_fed() -> None:
    from lc0py.backends.registry import create_backend

    tiny = str(Path(__file__).resolve().parents[2] / "weights" / "tiny-seed1.pb.gz")
    with create_backend("demux", tiny, "backend=random,(),(),()") as demux:
        assert batches_in_flight(SearchParams(), demux) == 2  # each batch already reaches every child
        assert batches_in_flight(SearchParams(threads=2), demux) == 2  # lc0's Threads, as given
        assert batches_in_flight(SearchParams(overlap=False), demux) == 1


def test_a_multi_backend_takes_every_minibatch_in_flight_as_its_own_batch() -> None:
    from lc0py.backends.registry import create_backend

    assert network_batches_outstanding(SearchParams(threads=6)) == 2  # one device: the rest join
    tiny = str(Path(__file__).resolve().parents[2] / "weights" / "tiny-seed1.pb.gz")
    with create_backend("roundrobin", tiny, "backend=random,(),()") as rr:
        assert batches_in_flight(SearchParams(), rr) == 3  # a batch queued on each, one gathering
        assert network_batches_outstanding(SearchParams(), rr) == 3  # auto: children + 1
        assert network_batches_outstanding(SearchParams(threads=5), rr) == 5
        assert network_batches_outstanding(SearchParams(overlap=False), rr) == 2


def test_a_search_over_roundrobin_keeps_within_its_outstanding_limit(
    make_search, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lc0py.backends.registry import create_backend

    outstanding: list[int] = []
    launch = search_module.Search._launch_held

    def recording_launch(self) -> None:  # type: ignore[no-untyped-def]
        if self._held:
            outstanding.append(self._groups_outstanding())
        launch(self)

    monkeypatch.setattr(search_module.Search, "_launch_held", recording_launch)
    tiny = str(Path(__file__).resolve().parents[2] / "weights" / "tiny-seed1.pb.gz")
    with create_backend("roundrobin", tiny, "backend=random,delay_ms=2,(),()") as rr:
        s = make_search(backend=rr, params=SearchParams(threads=4, minibatch_size=8),
                        limits=SearchLimits(nodes=600, smart_pruning=False))
        s.run()
        s.join()
    assert s.error is None and outstanding and max(outstanding) <= 3  # a 4th waits
    check_tree(s.tree)


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


class _Timed:
    """A batch on an in-order device queue: finished ``at`` (perf_counter), whether or not the
    search has read it yet."""

    def __init__(self, backend: RandomBackend, planes: PlanesBatch, at: float, fail: bool) -> None:
        self._backend, self._planes, self._at, self._fail = backend, planes, at, fail

    def done(self) -> bool:
        return time.perf_counter() >= self._at

    def result(self) -> NetworkOutput:
        time.sleep(max(0.0, self._at - time.perf_counter()))
        if self._fail:
            raise RuntimeError("device lost")
        return self._backend.evaluate(self._planes)


class _QueueDevice(_SlowDevice):
    def __init__(self, batch_s: float, fail_from: int = 0) -> None:
        super().__init__()
        self._batch_s, self._fail_from, self._free_at = batch_s, fail_from, 0.0

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        self.sizes.append(len(batch))
        self._free_at = max(time.perf_counter(), self._free_at) + self._batch_s
        return _Timed(self, batch, self._free_at, 0 < self._fail_from <= len(self.sizes))


@pytest.mark.parametrize("minibatch", [8, 14, 20, 64])
def test_finished_batches_waiting_for_backup_never_let_a_batch_outgrow_the_prepared_size(
    make_search, checked_rows, minibatch: int
) -> None:
    """Batches that finish on the device before the search backs them up still count as
    outstanding: otherwise a third batch goes out, the held minibatches keep joining, and a network
    batch outgrows ``largest_batch`` (a graph bucket never captured, mid-search). MaxPrefetch is 0
    here: lc0's prefetch itself may overspend its budget (the last child inherits the previous
    child's share, ``PrefetchIntoCache``), which is lc0's rule and not this test's subject."""
    backend = _QueueDevice(0.0005)
    params = SearchParams(threads=16, minibatch_size=minibatch, max_prefetch=0)
    s = make_search(backend=backend, params=params, limits=SearchLimits(nodes=4000, smart_pruning=False))
    s.run()
    s.join()
    assert s.error is None and s.playouts >= 4000
    assert max(backend.sizes) <= largest_batch(params, backend.info), sorted(backend.sizes)[-5:]
    check_tree(s.tree)


@pytest.mark.parametrize("threads", [2, 6])
def test_a_failing_device_leaves_no_visit_in_flight_and_the_search_still_answers(
    make_search, threads: int
) -> None:
    """A batch that raises ends the search with its error reported; every minibatch's visits in
    flight are undone (a failed result must not stop the release half-way) and bestmove is the
    tree's best move, not a fallback."""
    backend = _QueueDevice(0.002, fail_from=25)
    messages: list[str] = []
    moves: list[object] = []
    callbacks = SearchCallbacks(
        on_bestmove=lambda best, ponder: moves.append(best), on_message=messages.append
    )
    params = SearchParams(threads=threads, minibatch_size=16)
    s = make_search(
        backend=backend,
        params=params,
        limits=SearchLimits(nodes=20000, smart_pruning=False),
        callbacks=callbacks,
    )
    s.run()
    s.join()
    assert isinstance(s.error, RuntimeError) and any("device lost" in m for m in messages)
    check_tree(s.tree)
    assert len(moves) == 1 and moves[0] is not None
    assert s._final is not None and moves[0] == s._final[0]  # the tree's choice, not a fallback
    assert s.root.n > 24  # the tree kept the batches backed up before the failure


@pytest.mark.parametrize("minibatch", [8, 14, 20, 64])
def test_minibatches_join_only_within_the_room_and_two_batches_stay_outstanding(
    make_search, monkeypatch: pytest.MonkeyPatch, minibatch: int
) -> None:
    """With lc0's prefetch on (it tops short minibatches up to 32), on a device whose batches
    finish before the search reads them: a joining minibatch is gathered only while the held ones
    leave room under MinibatchSize, the joined ones fit ``MinibatchSize + 2``, and a network batch
    goes out only while fewer than two are outstanding (finished or not)."""
    rooms: list[int | None] = []
    outstanding: list[int] = []
    joined: list[int] = []
    gather, launch = worker_module.SearchWorker.gather, search_module.Search._launch_held

    def recording_gather(self, remaining, allowed, best, room=None):  # type: ignore[no-untyped-def]
        rooms.append(room)
        return gather(self, remaining, allowed, best, room)

    def recording_launch(self) -> None:  # type: ignore[no-untyped-def]
        if self._held:
            outstanding.append(self._groups_outstanding())
            if len(self._held) > 1:
                joined.append(sum(b.nn_count for b in self._held))
        launch(self)

    monkeypatch.setattr(worker_module.SearchWorker, "gather", recording_gather)
    monkeypatch.setattr(search_module.Search, "_launch_held", recording_launch)
    backend = _QueueDevice(0.0005)
    s = make_search(
        backend=backend, params=SearchParams(threads=16, minibatch_size=minibatch),
        limits=SearchLimits(nodes=4000, smart_pruning=False),
    )
    s.run()
    s.join()
    assert s.error is None
    assert all(r is None or r > 0 for r in rooms), [r for r in rooms if r is not None and r <= 0][:5]
    assert max(outstanding) <= 1
    assert all(n <= minibatch + 2 for n in joined), sorted(joined)[-5:]
    check_tree(s.tree)
