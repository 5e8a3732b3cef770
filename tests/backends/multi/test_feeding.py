"""Each child's host work on its own thread (lc0py/backends/multi/feeding.py): results in
submission order whatever order the children finish in, a failing child named in one error
without a hang or harm to the others, close with batches in flight, outputs equal to one
backend's, and joined outputs that are never reused."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.base import BackendInfo, NetworkOutput, PlanesBatch
from lc0py.backends.multi.backends import DemuxBackend, MultiBackend, RoundRobinBackend
from lc0py.backends.multi.children import Child, ChildSpec
from lc0py.backends.multi.feeding import LAUNCH_DEPTH, JoinedOutput, OutputPool
from lc0py.backends.options import BackendOptions
from lc0py.backends.registry import create_backend
from lc0py.errors import Lc0pyError

ROOT = Path(__file__).resolve().parents[3]
TINY = str(ROOT / "weights" / "tiny-seed1.pb.gz")
HANG_GUARD = 60  # seconds: a hang fails the test instead of stopping the suite, never a measurement


def _batch(n: int, seed: int) -> PlanesBatch:
    rng = np.random.default_rng(seed)
    return PlanesBatch(
        rng.integers(0, 2**63, (n, 112), dtype=np.uint64), rng.random((n, 112), dtype=np.float32)
    )


def expected(batch: PlanesBatch) -> NetworkOutput:
    """What every ``GatedDevice`` computes: a function of each row's planes alone."""
    key = (batch.masks[:, :8] % 1000).astype(np.float32) + batch.values[:, :8]
    policy = np.tile(key, (1, 1858 // 8 + 1))[:, :1858]
    wdl = np.stack([key[:, 0], key[:, 1], key[:, 2]], axis=1)
    return NetworkOutput(policy.astype(np.float32), wdl.astype(np.float32), key[:, 3].astype(np.float32))


class _Pending:
    def __init__(self, device: GatedDevice, batch: PlanesBatch, gate: threading.Event) -> None:
        self.device, self.batch, self.gate = device, batch, gate

    def result(self) -> NetworkOutput:
        if not self.gate.wait(HANG_GUARD):
            raise AssertionError("gate never opened")
        if self.device.fail_result:
            raise RuntimeError("device lost")
        return expected(self.batch)

    def done(self) -> bool:
        return self.gate.is_set()


class GatedDevice:
    """An asynchronous backend whose batches finish when the test opens their gates."""

    name = "gated"

    def __init__(self, gated: bool = True) -> None:
        self.info = BackendInfo(1, True, True, 256, asynchronous=True)
        self.gates: list[threading.Event] = []
        self.sizes: list[int] = []
        self.gated = gated
        self.fail_launch: set[int] = set()  # launch numbers that raise
        self.fail_result = False
        self.rows_short = False
        self.closed = False
        self.inside = 0  # threads inside evaluate_async at once (must stay <= 1)
        self.most_inside = 0

    def evaluate_async(self, batch: PlanesBatch) -> _Pending:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        try:
            number = len(self.sizes)
            self.sizes.append(len(batch))
            gate = threading.Event()
            if not self.gated:
                gate.set()
            self.gates.append(gate)
            if number in self.fail_launch:
                raise RuntimeError(f"launch {number} refused\nsecond line")
            if self.rows_short:
                batch = PlanesBatch(batch.masks[1:], batch.values[1:])
            return _Pending(self, batch, gate)
        finally:
            self.inside -= 1

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        return self.evaluate_async(batch).result()

    def prepare(self, max_batch: int) -> None:
        return None

    def close(self) -> None:
        self.closed = True


def _children(devices: list[GatedDevice]) -> list[Child]:
    return [
        Child(ChildSpec(f"child [{k}]", "gated", BackendOptions({}, "gated"), 1, 256), d)
        for k, d in enumerate(devices)
    ]


def _wait_for(predicate: object, what: str) -> None:
    done = threading.Event()
    for _ in range(HANG_GUARD * 100):
        if predicate():  # type: ignore[operator]
            return
        done.wait(0.01)
    raise AssertionError(f"never happened: {what}")


def _same(out: NetworkOutput, batch: PlanesBatch) -> None:
    want = expected(batch)
    for name in ("policy", "wdl", "moves_left"):
        assert np.array_equal(getattr(out, name), getattr(want, name)), name


def _open(device: GatedDevice) -> None:
    for gate in list(device.gates):
        gate.set()


@pytest.mark.parametrize("mode", ["resolve", "threads"])
@pytest.mark.parametrize("kind", ["demux", "roundrobin"])
def test_results_in_submission_order_when_children_finish_out_of_order(
    kind: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lc0py.backends.multi import backends

    monkeypatch.setattr(backends, "CHILD_FEEDING", mode)
    devices = [GatedDevice(), GatedDevice(), GatedDevice()]
    children = _children(devices)
    multi: MultiBackend = DemuxBackend(children) if kind == "demux" else RoundRobinBackend(children)
    try:
        batches = [_batch(30 + k, k) for k in range(4)]
        handles = [multi.evaluate_async(b) for b in batches]
        # demux: every batch a part on each child (4 a child); roundrobin: batches 0 and 3 on
        # child 0, 1 on child 1, 2 on child 2. The last child finishes first, child 0 last.
        parts = [4, 4, 4] if kind == "demux" else [2, 1, 1]
        launched = list(zip(devices, parts, strict=True))
        _wait_for(lambda: all(len(d.gates) >= min(LAUNCH_DEPTH, n) for d, n in launched), "launches")
        assert not any(h.done() for h in handles)
        for k in (2, 1):
            _wait_for(lambda k=k: _open(devices[k]) or children[k].profile().parts == parts[k], f"child {k}")
            if kind == "roundrobin":
                assert handles[k].done()
            assert not handles[0].done() and not handles[3].done()
        _wait_for(lambda: _open(devices[0]) or all(h.done() for h in handles), "child 0")
        for batch, handle in zip(batches, handles, strict=True):
            _same(handle.result(), batch)
        assert all(d.most_inside == 1 for d in devices)
    finally:
        for d in devices:
            _open(d)
        multi.close()


def test_demux_parts_go_to_each_child_in_lc0s_sizes_and_order() -> None:
    devices = [GatedDevice(gated=False) for _ in range(3)]
    with DemuxBackend(_children(devices)) as demux:
        batch = _batch(10, 1)
        _same(demux.evaluate(batch), batch)
        assert [d.sizes for d in devices] == [[4], [4], [2]]  # ceil(10 / 3) = 4 a part
        _same(demux.evaluate(_batch(1, 2)), _batch(1, 2))  # one part: child [0], next in turn
        assert [len(d.sizes) for d in devices] == [2, 1, 1]


@pytest.mark.parametrize("where", ["launch", "result", "rows"])
def test_a_failing_child_is_named_and_the_others_go_on(where: str) -> None:
    devices = [GatedDevice(gated=False) for _ in range(3)]
    if where == "launch":
        devices[1].fail_launch = {0}
    elif where == "result":
        devices[1].fail_result = True
    else:
        devices[1].rows_short = True
    demux = DemuxBackend(_children(devices))
    try:
        handles = [demux.evaluate_async(_batch(9, k)) for k in range(3)]
        with pytest.raises(Lc0pyError) as info:
            handles[0].result()
        message = str(info.value)
        assert message.startswith("child [1]: ") and "\n" not in message
        why = {"launch": "launch 0 refused", "result": "device lost", "rows": "returned 2 rows"}
        assert why[where] in message
        if where == "launch":  # only that launch failed: the next batches are whole
            for k, h in enumerate(handles[1:], 1):
                _same(h.result(), _batch(9, k))
        else:
            for h in handles[1:]:
                with pytest.raises(Lc0pyError, match=r"^child \[1\]: "):
                    h.result()
        assert [len(d.sizes) for d in devices] == [3, 3, 3]  # every part of every batch ran
    finally:
        demux.close()


def test_the_first_failing_part_is_the_one_raised() -> None:
    devices = [GatedDevice(gated=False) for _ in range(3)]
    devices[1].fail_result = True
    devices[2].fail_launch = {0}
    with DemuxBackend(_children(devices)) as demux:
        with pytest.raises(Lc0pyError, match=r"^child \[1\]: device lost$"):
            demux.evaluate(_batch(9, 0))


@pytest.mark.parametrize("mode", ["resolve", "threads"])
def test_close_with_batches_in_flight_settles_each_and_joins_every_thread(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lc0py.backends.multi import backends

    monkeypatch.setattr(backends, "CHILD_FEEDING", mode)
    devices = [GatedDevice(), GatedDevice()]
    demux = DemuxBackend(_children(devices))
    batches = [_batch(8, k) for k in range(5)]
    handles = [demux.evaluate_async(b) for b in batches]
    # threads: LAUNCH_DEPTH launched a child, the rest queued; resolve: all five launched here
    _wait_for(lambda: all(len(d.gates) >= LAUNCH_DEPTH for d in devices), "two launches a child")
    threads = [t for c in demux.children if c._feeder is not None for t in c._feeder._threads]
    closer = threading.Thread(target=demux.close)
    closer.start()

    def open_all() -> bool:
        for d in devices:
            for g in list(d.gates):
                g.set()
        return all(h.done() for h in handles)

    _wait_for(open_all, "every batch settled")
    closer.join(HANG_GUARD)
    assert not closer.is_alive() and len(threads) == (4 if mode == "threads" else 2)
    assert not any(t.is_alive() for t in threads)
    assert all(d.closed for d in devices)
    for batch, handle in zip(batches, handles, strict=True):
        _same(handle.result(), batch)
    with pytest.raises(Lc0pyError, match="closed"):
        demux.evaluate_async(_batch(4, 9))


def test_a_joined_output_is_never_reused_while_the_caller_holds_it() -> None:
    devices = [GatedDevice(gated=False) for _ in range(2)]
    with DemuxBackend(_children(devices)) as demux:
        first = demux.evaluate(_batch(16, 1))
        kept = NetworkOutput(first.policy.copy(), first.wdl.copy(), first.moves_left.copy())
        wdl_view = first.wdl[3:5]  # a slice keeps the whole block out of the pool too
        address = first.policy.ctypes.data
        del first
        later = [demux.evaluate(_batch(16, k)) for k in range(2, 6)]
        assert all(o.policy.ctypes.data != address for o in later)
        assert np.array_equal(wdl_view, kept.wdl[3:5])
        for o in later:
            assert not np.shares_memory(wdl_view, o.wdl)
        del wdl_view
        later.clear()  # now every block is free: the next batch reuses one
        assert demux._outputs.free_blocks() >= 1
        again = demux.evaluate(_batch(16, 7))
        _same(again, _batch(16, 7))


def test_the_output_pool_shapes_and_reuse() -> None:
    pool = OutputPool(keep=1)
    policy, wdl, mlh = pool.arrays(5)
    assert policy.shape == (5, 1858) and wdl.shape == (5, 3) and mlh.shape == (5,)
    assert not np.shares_memory(policy, wdl) and not np.shares_memory(wdl, mlh)
    address = policy.ctypes.data
    del policy, wdl, mlh
    assert pool.free_blocks() == 1
    policy, _, _ = pool.arrays(7)  # the same power-of-two block (8 rows)
    assert policy.ctypes.data == address and pool.free_blocks() == 0


def test_a_joined_output_waits_for_every_part() -> None:
    joined = JoinedOutput(4, 2)
    out = expected(_batch(4, 3))
    joined.part(1, 2, 4).deliver(NetworkOutput(out.policy[2:], out.wdl[2:], out.moves_left[2:]), None)
    assert not joined.done()
    joined.part(0, 0, 2).deliver(NetworkOutput(out.policy[:2], out.wdl[:2], out.moves_left[:2]), None)
    assert joined.done()
    assert np.array_equal(joined.result().policy, out.policy)


@pytest.mark.parametrize("kind", ["demux", "roundrobin"])
@pytest.mark.parametrize("child", ["random", "numpy"])
def test_many_batches_in_flight_equal_one_backend(kind: str, child: str) -> None:
    opts = "seed=5" if child == "random" else ""
    single = create_backend(child, TINY, opts)
    sizes = [7, 1, 12, 5, 9, 3, 16, 2] if child == "numpy" else [40, 1, 77, 13, 64, 5, 100, 33]
    batches = [_batch(n, 10 + k) for k, n in enumerate(sizes)]
    try:
        want = [single.evaluate(b) for b in batches]
    finally:
        single.close()
    group = f"backend={child}" + (f",{opts}" if opts else "")
    groups = "(),(),(delay_ms=1)" if child == "random" else "(),()"
    with create_backend(kind, TINY, f"{group},{groups}") as multi:
        handles = [multi.evaluate_async(b) for b in batches]  # all in flight at once
        got = [h.result() for h in handles]
    for w, g in zip(want, got, strict=True):
        if child == "random":
            assert np.array_equal(w.policy, g.policy) and np.array_equal(w.wdl, g.wdl)
            assert np.array_equal(w.moves_left, g.moves_left)
        else:  # fp32 BLAS sums differ by batch size
            np.testing.assert_allclose(g.policy, w.policy, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(g.wdl, w.wdl, rtol=1e-4, atol=1e-4)
            assert not np.isnan(g.policy).any()


def test_profile_counts_each_childs_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The children's threads' profile (the resolve path: small ``demux`` batches on the "auto"
    path never reach a child's thread)."""
    from lc0py.backends.multi import backends

    monkeypatch.setattr(backends, "CHILD_FEEDING", "resolve")
    devices = [GatedDevice(gated=False) for _ in range(2)]
    with DemuxBackend(_children(devices)) as demux:
        demux.evaluate(_batch(4, 0))
        demux.reset_profile()
        for k in range(3):
            demux.evaluate(_batch(10, k))
        rows = demux.profile()
        counts = [(r["child"], r["parts"], r["rows"]) for r in rows]
        assert counts == [("child [0]", 3, 15), ("child [1]", 3, 15)]
        assert all(r["launch_s"] >= 0 and r["wait_s"] >= 0 and r["max_launched"] >= 1 for r in rows)


@pytest.mark.parametrize("mode", ["caller", "threads"])
@pytest.mark.parametrize("kind", ["demux", "roundrobin"])
def test_the_other_feeding_modes_give_the_same_outputs_and_errors(
    kind: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lc0py.backends.multi import backends

    monkeypatch.setattr(backends, "CHILD_FEEDING", mode)
    devices = [GatedDevice(gated=False) for _ in range(3)]
    children = _children(devices)
    with (DemuxBackend(children) if kind == "demux" else RoundRobinBackend(children)) as multi:
        batches = [_batch(9 + k, k) for k in range(4)]
        for batch, handle in zip(batches, [multi.evaluate_async(b) for b in batches], strict=True):
            _same(handle.result(), batch)
        devices[1].fail_result = True
        with pytest.raises(Lc0pyError, match=r"^child \[1\]: device lost$"):
            for k in range(3):
                multi.evaluate(_batch(9, k))
        feeders = [c._feeder for c in children]
        if mode == "caller":
            assert all(f is None for f in feeders)  # no child thread was started
        else:  # a launcher thread of the child's own
            assert all(f is not None and f._launcher is not None for f in feeders)


def test_auto_feeding_joins_small_demux_batches_on_the_caller_and_large_on_the_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The default path: a ``demux`` batch of at most ``CALLER_ROWS`` positions is launched and
    joined on the caller's thread (no child thread), a larger one on the children's resolver
    threads; batches of both sizes, interleaved, come back whole and in order. ``roundrobin``
    keeps ``resolve``."""
    from lc0py.backends.multi import backends

    assert backends.CHILD_FEEDING == "auto"
    monkeypatch.setattr(backends, "CALLER_ROWS", 20)
    assert backends.feeding_path(20, splits=True) == "caller"
    assert backends.feeding_path(21, splits=True) == "resolve"
    assert backends.feeding_path(5, splits=False) == "resolve"
    devices = [GatedDevice(gated=False) for _ in range(2)]
    children = _children(devices)
    with DemuxBackend(children) as demux:
        small = [_batch(12 + k, k) for k in range(3)]
        for batch, handle in zip(small, [demux.evaluate_async(b) for b in small], strict=True):
            assert not isinstance(handle, JoinedOutput)
            _same(handle.result(), batch)
        assert all(c._feeder is None for c in children)  # nothing handed to a child's thread
        mixed = [_batch(n, 10 + n) for n in (13, 40, 7, 33, 20, 21)]
        handles = [demux.evaluate_async(b) for b in mixed]
        assert [isinstance(h, JoinedOutput) for h in handles] == [False, True, False, True, False, True]
        for batch, handle in zip(mixed, handles, strict=True):
            _same(handle.result(), batch)
        assert all(c._feeder is not None for c in children)


class _BrokenSink:
    """A sink whose delivery always fails: the resolver thread breaks on it."""

    def deliver(self, out: NetworkOutput | None, error: Lc0pyError | None) -> None:
        raise RuntimeError("sink broken")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_broken_child_thread_settles_every_part_and_refuses_new_ones() -> None:
    from lc0py.backends.multi.feeding import ChildFeeder, OneOutput

    device = GatedDevice()
    feeder = ChildFeeder("child [0]", device, threading.Lock())  # type: ignore[arg-type]
    feeder.launch_here(_batch(3, 0), _BrokenSink())
    waiting = OneOutput()
    feeder.launch_here(_batch(3, 1), waiting)
    _open(device)
    _wait_for(waiting.done, "the part behind the broken one settled")
    with pytest.raises(Lc0pyError, match=r"^child \[0\]: sink broken$"):
        waiting.result()
    with pytest.raises(Lc0pyError, match="closed"):
        feeder.launch_here(_batch(3, 2), OneOutput())
    feeder.close()  # joins: no hang


class _HeldLaunch(GatedDevice):
    """A device whose next launch waits inside ``evaluate_async`` until the test lets it go."""

    def __init__(self, gated: bool) -> None:
        super().__init__(gated=gated)
        self.entered, self.go = threading.Event(), threading.Event()

    def evaluate_async(self, batch: PlanesBatch) -> _Pending:
        self.entered.set()
        assert self.go.wait(HANG_GUARD)  # hang guard only
        return super().evaluate_async(batch)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("ending", ["close", "broken"])
def test_a_part_launched_while_the_resolver_ends_still_settles(ending: str) -> None:
    """A part whose launch is under way when the resolver is told to end (``close`` from
    another thread, or the resolver broken by an earlier part) reaches the queue behind the end
    marker: no thread would deliver it and its caller's ``result()`` would wait forever."""
    from lc0py.backends.multi.feeding import ChildFeeder, OneOutput

    device = _HeldLaunch(gated=ending == "broken")
    feeder = ChildFeeder("child [0]", device, threading.Lock())  # type: ignore[arg-type]
    if ending == "broken":  # its gate opens once the next part's launch is under way
        device.go.set()
        feeder.launch_here(_batch(3, 0), _BrokenSink())
        device.go.clear()
        device.entered.clear()
    late, batch = OneOutput(), _batch(5, 1)
    launcher = threading.Thread(target=feeder.launch_here, args=(batch, late))
    launcher.start()
    assert device.entered.wait(HANG_GUARD)
    if ending == "close":
        feeder.close()  # the resolver ends: the part is not on its queue yet
    else:
        _open(device)
        _wait_for(lambda: not feeder._threads[0].is_alive(), "the resolver broke")
    device.go.set()
    _wait_for(lambda: len(device.gates) == (2 if ending == "broken" else 1), "the late launch")
    _open(device)
    launcher.join(HANG_GUARD)
    assert not launcher.is_alive()
    assert late.done()
    _same(late.result(), batch)
    feeder.close()


@pytest.mark.parametrize("mode", ["resolve", "threads"])
@pytest.mark.parametrize("kind", ["demux", "roundrobin"])
def test_a_whole_batch_with_the_wrong_rows_is_refused(
    kind: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that goes whole to one child (roundrobin; demux below one part a child) is handed
    through as the child gave it: one row short, the search would read past its end."""
    from lc0py.backends.multi import backends

    monkeypatch.setattr(backends, "CHILD_FEEDING", mode)
    devices = [GatedDevice(gated=False) for _ in range(2)]
    devices[0].rows_short = True
    children = _children(devices)
    whole = DemuxBackend(children, minimum_split_size=64) if kind == "demux" else RoundRobinBackend(children)
    with whole as multi:
        with pytest.raises(Lc0pyError, match=r"^child \[0\]: returned 6 rows for a part of 7$"):
            multi.evaluate(_batch(7, 0))
        _same(multi.evaluate(_batch(7, 1)), _batch(7, 1))  # child [1], whole


class _Exiting(GatedDevice):
    """A device whose first launch raises ``SystemExit`` (not an ``Exception``)."""

    def evaluate_async(self, batch: PlanesBatch) -> _Pending:
        if not self.sizes:
            self.sizes.append(len(batch))
            raise SystemExit("device gone")
        return super().evaluate_async(batch)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_multiplexing_worker_outlives_a_base_exception_and_settles_its_requests() -> None:
    """A worker thread that died of it left its requests' futures unset (their ``result()``
    waited forever) and nobody to serve the next ones."""
    from lc0py.backends.multi.backends import MultiplexingBackend

    device = _Exiting(gated=False)
    mux = MultiplexingBackend(_children([device]))
    try:
        first = mux.evaluate_async(_batch(3, 0))
        _wait_for(lambda: first.done() or not any(t.is_alive() for t in mux._workers), "the worker")
        assert first.done()
        with pytest.raises(Lc0pyError, match=r"^multiplexing: child \[0\]: device gone$"):
            first.result()
        second = _batch(4, 1)
        _same(mux.evaluate_async(second).result(), second)
    finally:
        mux.close()


@pytest.mark.parametrize("path", ["submit", "multiplexing", "caller"])
def test_a_childs_output_with_the_wrong_rows_is_refused_on_every_path(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Child.submit`` handles (bulk-eval feeds each child through them and reduces the rows in
    place: one short, ``run.wdl[a:b] = out.wdl`` even broadcasts a single row), multiplexing's
    workers (one short output sliced per request leaves the last request short) and the
    ``caller`` feeding path: the same one-line error as a resolver thread's."""
    from lc0py.backends.multi import backends
    from lc0py.backends.multi.backends import MultiplexingBackend

    monkeypatch.setattr(backends, "CHILD_FEEDING", "caller")
    device = GatedDevice(gated=False)
    device.rows_short = True
    children = _children([device])
    multi = MultiplexingBackend(children) if path == "multiplexing" else RoundRobinBackend(children)
    with multi:
        with pytest.raises(Lc0pyError, match=r"child \[0\]: returned 1 rows for a part of 2$"):
            if path == "submit":
                children[0].submit(_batch(2, 0)).result()
            else:
                multi.evaluate(_batch(2, 0))


def test_a_multiplexing_request_made_as_the_backend_closes_is_refused_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``close`` from another thread between ``evaluate_async``'s check and its queueing: the
    workers had ended, so the request queued behind them was never computed (``result()`` waited
    forever)."""
    from lc0py.backends.multi import backends
    from lc0py.backends.multi.backends import MultiplexingBackend

    mux = MultiplexingBackend(_children([GatedDevice(gated=False)]))
    real = backends._Request

    def closed_meanwhile(batch: PlanesBatch) -> object:
        closer = threading.Thread(target=mux.close)
        closer.start()
        closer.join(HANG_GUARD)
        return real(batch)

    monkeypatch.setattr(backends, "_Request", closed_meanwhile)
    with pytest.raises(Lc0pyError, match="closed"):
        mux.evaluate_async(_batch(2, 0))
