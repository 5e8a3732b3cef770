"""The feeder of asynchronous backends (lc0py/search/feeder.py): results in submission order,
errors raised on the caller's thread, no hang after one, and a search fed by it takes exactly the
decisions of one whose search thread calls the backend itself. (Not ``test_feeder.py``:
tests/tools/bulk has one, and pytest needs unique test file names.)"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import numpy as np
import pytest

from lc0py.backends.base import NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.random_backend import RandomBackend
from lc0py.errors import Lc0pyError
from lc0py.search import worker as worker_module
from lc0py.search.feeder import Feeder
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchCallbacks, SearchLimits


def _planes(rows: int, rng: np.random.Generator) -> PlanesBatch:
    masks = rng.integers(0, 2**63, (rows, 112), dtype=np.uint64)
    return PlanesBatch(masks, rng.random((rows, 112), dtype=np.float32))


class _Handle:
    """A device batch: ``result()`` notes the order it is asked in; the first one waits for
    ``gate`` (so the batches behind it are all queued, launched, and waiting to be resolved)."""

    def __init__(self, device: _Device, k: int, done: Future[NetworkOutput]) -> None:
        self.device, self.k, self.done_ = device, k, done

    def result(self) -> NetworkOutput:
        self.device.resolved.append(self.k)
        if self.k == 0:
            assert self.device.gate.wait(60)  # hang guard only
        return self.done_.result()

    def done(self) -> bool:
        return self.done_.done()


class _Device:
    """Outputs that name their batch (policy = the first mask word); the ``fail_launch``-th /
    ``fail_result``-th call raises."""

    def __init__(self, fail_launch: int = -1, fail_result: int = -1) -> None:
        self.calls = 0
        self.threads: set[str] = set()
        self.fail_launch, self.fail_result = fail_launch, fail_result
        self.resolved: list[int] = []
        self.gate = threading.Event()
        self.gate.set()

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        self.threads.add(threading.current_thread().name)
        k = self.calls
        self.calls += 1
        if k == self.fail_launch:
            raise RuntimeError(f"launch {k} failed")
        done: Future[NetworkOutput] = Future()
        n = len(batch)
        if k == self.fail_result:
            done.set_exception(RuntimeError(f"device error in batch {k}"))
        else:
            policy = np.full((n, 1858), float(batch.masks[0, 0] % 1_000_003), np.float32)
            wdl = np.full((n, 3), 1 / 3, np.float32)
            done.set_result(NetworkOutput(policy, wdl, np.zeros(n, np.float32)))
        return _Handle(self, k, done)


def test_results_come_back_in_submission_order_from_the_feeder_thread() -> None:
    rng = np.random.default_rng(1)
    device = _Device()
    device.gate.clear()  # the first batch is resolved only once all 50 are handed over
    feeder = Feeder(device)  # type: ignore[arg-type]
    batches = [_planes(int(rng.integers(1, 40)), rng) for _ in range(50)]
    handles = [feeder.submit(b) for b in batches]
    device.gate.set()
    for b, h in zip(batches, handles, strict=True):
        out = h.result()
        assert h.done()
        assert out.policy.shape[0] == len(b)
        assert out.policy[0, 0] == np.float32(b.masks[0, 0] % 1_000_003)
    feeder.close()
    assert device.threads == {"lc0py-feed"}  # launched there; resolved on "lc0py-feed-wait"
    assert device.resolved == list(range(50))


@pytest.mark.parametrize("where", ["launch", "result"])
def test_an_error_reaches_its_batch_and_the_later_ones_still_resolve(where: str) -> None:
    rng = np.random.default_rng(2)
    device = _Device(fail_launch=3 if where == "launch" else -1, fail_result=3 if where == "result" else -1)
    feeder = Feeder(device)  # type: ignore[arg-type]
    handles = [feeder.submit(_planes(4, rng)) for _ in range(6)]
    for k, h in enumerate(handles):
        if k == 3:
            with pytest.raises(RuntimeError, match="3"):
                h.result()
            with pytest.raises(RuntimeError, match="3"):  # every later call raises it again
                h.result()
        else:
            assert h.result().policy.shape == (4, 1858)
    feeder.close()  # returns: the thread ended


class _Raising:
    """A device whose launch (or whose result) raises ``exc``: not an ``Exception`` either."""

    def __init__(self, exc: type[BaseException], at_launch: bool) -> None:
        self.exc, self.at_launch = exc, at_launch

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        if self.at_launch:
            raise self.exc("launch")
        done: Future[NetworkOutput] = Future()
        done.set_exception(self.exc("result"))
        return done


@pytest.mark.parametrize("at_launch", [True, False])
@pytest.mark.parametrize("exc", [SystemExit, KeyboardInterrupt])
def test_a_base_exception_on_a_feeder_thread_reaches_its_batch(
    exc: type[BaseException], at_launch: bool
) -> None:
    """``SystemExit``/``KeyboardInterrupt`` from the backend settle the batch (raised on the
    caller's thread), and the threads go on to the next batch and end on close."""
    rng = np.random.default_rng(4)
    feeder = Feeder(_Raising(exc, at_launch))  # type: ignore[arg-type]
    handles = [feeder.submit(_planes(2, rng)) for _ in range(3)]
    for h in handles:
        with pytest.raises(exc):
            h.result()
    feeder.close()
    assert not any(t.is_alive() for t in feeder._threads)


def test_a_batch_handed_over_after_close_is_refused_not_lost() -> None:
    """Queued behind the end marker it would never be settled, and its ``result()`` would wait
    forever: it is refused at once instead."""
    feeder = Feeder(_Device())  # type: ignore[arg-type]
    feeder.close()
    with pytest.raises(Lc0pyError, match="closed"):
        feeder.submit(_planes(3, np.random.default_rng(5)))
    feeder.close()  # a second close returns too


def test_a_batch_is_launched_while_the_previous_one_is_awaited() -> None:
    """Batch 1 must reach the device while batch 0's result is still awaited: a thread that
    launched it only after that wait kept the device idle for a launch between every two batches
    (T82 on an H100 5 % slower than with no feeder) and a second GPU idle while the first
    computed."""
    rng = np.random.default_rng(3)
    device = _Device()
    device.gate.clear()
    feeder = Feeder(device)  # type: ignore[arg-type]
    first = feeder.submit(_planes(4, rng))
    while not device.resolved:  # the resolver now waits on batch 0 (gate closed)
        threading.Event().wait(0.001)
    second = feeder.submit(_planes(5, rng))
    launched = threading.Event()
    for _ in range(60_000):  # hang guard only: a launch is microseconds
        if device.calls == 2:
            launched.set()
            break
        threading.Event().wait(0.001)
    assert launched.is_set() and not first.done()
    device.gate.set()
    assert first.result().policy.shape == (4, 1858)
    assert second.result().policy.shape == (5, 1858)
    feeder.close()
    assert device.threads == {"lc0py-feed"}


def _search_tree(make_search, feed: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[object, ...]:
    monkeypatch.setattr(worker_module, "FEED_ASYNC_BACKENDS", feed)
    backend = RandomBackend(delay_ms=0.05, seed=7)
    assert backend.info.asynchronous
    params = SearchParams(overlap=True, minibatch_size=24, threads=3)
    s = make_search(backend=backend, params=params, limits=SearchLimits(nodes=1500, smart_pruning=False))
    s.run()
    s.join()
    backend.close()
    t, k = s.tree.arrays, s.tree.num_nodes
    return (s.best_move(), s.playouts, s.batches) + tuple(
        np.ascontiguousarray(a[:k]).tobytes() for a in (t.n, t.wl, t.d, t.m, t.parent, t.index)
    )


def test_a_fed_search_takes_the_same_decisions(make_search, monkeypatch: pytest.MonkeyPatch) -> None:
    fed = _search_tree(make_search, True, monkeypatch)
    direct = _search_tree(make_search, False, monkeypatch)
    assert fed[:3] == direct[:3]
    assert fed == direct


class _FailingDevice(RandomBackend):
    """An asynchronous random backend whose ``fail_at``-th batch fails on the device (or, with
    ``at_launch``, in ``evaluate_async`` itself)."""

    def __init__(self, fail_at: int, at_launch: bool) -> None:
        super().__init__(delay_ms=0.05)
        self.fail_at, self.calls, self.at_launch = fail_at, 0, at_launch

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        self.calls += 1
        if self.calls == self.fail_at:
            if self.at_launch:
                raise RuntimeError("device lost")
            failed: Future[NetworkOutput] = Future()
            failed.set_exception(RuntimeError("device lost"))
            return failed
        return super().evaluate_async(batch)


@pytest.mark.parametrize("at_launch", [False, True])
def test_a_device_error_ends_the_search_with_a_bestmove(make_search, at_launch: bool) -> None:
    backend = _FailingDevice(fail_at=4, at_launch=at_launch)
    messages: list[str] = []
    answers: list[object] = []
    callbacks = SearchCallbacks(on_message=messages.append, on_bestmove=lambda m, p: answers.append(m))
    params = SearchParams(overlap=True, minibatch_size=16)
    s = make_search(
        backend=backend, params=params, callbacks=callbacks,
        limits=SearchLimits(nodes=100_000, smart_pruning=False),
    )
    s.start()
    assert s.wait(60) and s.join(60)  # hang guards only: nothing here is timed
    backend.close()
    assert isinstance(s.error, RuntimeError) and "device lost" in str(s.error)
    assert any("device lost" in m for m in messages), messages
    assert len(answers) == 1 and answers[0] is not None
    assert s.worker._feeder is None  # closed with the search
    assert not [t for t in threading.enumerate() if t.name in ("lc0py-feed", "lc0py-feed-wait")]
