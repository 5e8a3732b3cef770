"""The runner's host-side logic without a GPU."""

from __future__ import annotations

import threading
import time

import pytest

from lc0py.backends.gpu.runner import wait_without_gil


class _Binding:
    def __init__(self, releases_gil: bool) -> None:
        self.sync_releases_gil = releases_gil


class _DeviceEvent:
    """An event completed by another thread. Where the binding holds the GIL in synchronize, it
    must only be reached once the event is done; where it releases it, it blocks until done."""

    def __init__(self, releases_gil: bool = False) -> None:
        self.platform = _Binding(releases_gil)
        self.done = threading.Event()
        self.polls = 0
        self.syncs = 0

    def query(self) -> bool:
        self.polls += 1
        return self.done.is_set()

    def synchronize(self) -> None:
        self.syncs += 1
        if self.platform.sync_releases_gil:
            assert self.done.wait(120)
        assert self.done.is_set(), "blocked in synchronize (a binding may hold the GIL there)"


def test_wait_polls_until_done_and_lets_other_threads_run() -> None:
    ev = _DeviceEvent()
    progress: list[int] = []

    def other_thread() -> None:  # Python work that must go on while the waiter waits
        for i in range(200):
            progress.append(i)
        ev.done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    wait_without_gil(ev)  # type: ignore[arg-type]
    t.join(120)
    assert len(progress) == 200 and ev.done.is_set() and ev.polls >= 1


def test_wait_blocks_in_synchronize_where_the_binding_releases_the_gil() -> None:
    """No polling (each poll's sleep overshoots by ~0.1 ms of idle GPU): one synchronize."""
    ev = _DeviceEvent(releases_gil=True)
    t = threading.Thread(target=lambda: (time.sleep(0.01), ev.done.set()))
    t.start()
    wait_without_gil(ev)  # type: ignore[arg-type]
    t.join(120)
    assert ev.done.is_set() and ev.polls == 0 and ev.syncs == 1


def test_submits_from_two_threads_never_launch_into_a_capture() -> None:
    """A capture is per stream; another thread's launch on that stream while it runs is an error
    on CUDA (a finished search's evaluation thread can still be submitting when the next search
    submits). The platform below fails the same way; GpuNetwork must serialise enqueuing."""
    import numpy as np

    from lc0py.backends.base import PlanesBatch
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.gpu.platform import GpuError
    from lc0py.weights.presets import random_network
    from tests.backends.gpu.test_layers import PointerPlatform

    class CapturingPlatform(PointerPlatform):
        def __init__(self) -> None:
            super().__init__()
            self.capturing: int | None = None
            self.errors: list[str] = []

        def begin_capture(self, stream: int) -> None:
            self.capturing = threading.get_ident()
            time.sleep(0.005)  # a capture takes a while: let the other thread run meanwhile

        def end_capture(self, stream: int) -> int:
            self.capturing = None
            return super().end_capture(stream)

        def _check_capture(self, what: str) -> None:
            if self.capturing is not None and self.capturing != threading.get_ident():
                self.errors.append(what)
                raise GpuError(f"{what} failed (operation not permitted when stream is capturing)")

        def launch(self, *a, **k):  # type: ignore[no-untyped-def]
            self._check_capture("launch")
            return super().launch(*a, **k)

        def launch_graph(self, graph: int, stream: int) -> None:
            self._check_capture("cuGraphLaunch")

        def gemm(self, *a, **k):  # type: ignore[no-untyped-def]
            self._check_capture("gemm")
            return super().gemm(*a, **k)

    plat = CapturingPlatform()
    gpu = GpuNetwork(plat, random_network("tiny", 3), options=GpuOptions(graphs=True, max_batch=64))
    rng = np.random.default_rng(5)
    failures: list[BaseException] = []

    def submitter(sizes: list[int]) -> None:
        try:
            for n in sizes:  # every size a new graph bucket: captures interleave with launches
                masks = rng.integers(1, 2**62, size=(n, 112), dtype=np.uint64)
                gpu.submit(PlanesBatch(masks, np.ones((n, 112), np.float32))).result()
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=submitter, args=(list(range(k, 64, 2)),)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    gpu.close()
    assert not failures and not plat.errors, (failures[:1], plat.errors[:3])


def test_prepare_captures_every_bucket_once_and_submits_then_capture_nothing() -> None:
    """``prepare(n)`` captures the graph of every batch-size bucket up to ``n`` (so the first
    searches do not pay for captures); later submits of any size up to ``n`` replay them."""
    import numpy as np

    from lc0py.backends.base import PlanesBatch
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.backends.gpu.weights import graph_bucket
    from lc0py.weights.presets import random_network
    from tests.backends.gpu.test_layers import PointerPlatform

    class CountingPlatform(PointerPlatform):
        def __init__(self) -> None:
            super().__init__()
            self.captures = 0

        def begin_capture(self, stream: int) -> None:
            self.captures += 1

    for buckets, want in (("fine", 21), ("coarse", 9)):  # fine: 1..8, 10..16 by 2, .., 64, 80
        plat = CountingPlatform()
        opts = GpuOptions(graphs=True, max_batch=64, graph_buckets=buckets)
        gpu = GpuNetwork(plat, random_network("tiny", 3), options=opts)
        assert want == len({graph_bucket(n, buckets == "fine") for n in range(1, 81)})
        assert gpu.prepare(80) == want == plat.captures
        assert gpu.prepare(80) == 0  # idempotent
        rng = np.random.default_rng(11)
        for n in rng.integers(1, 81, size=12):
            masks = rng.integers(1, 2**62, size=(int(n), 112), dtype=np.uint64)
            gpu.submit(PlanesBatch(masks, np.ones((int(n), 112), np.float32))).result()
        assert plat.captures == want
        gpu.close()


def test_a_network_fed_from_another_thread_binds_its_device_there() -> None:
    """Driver contexts are per thread: the search thread feeds a backend created on the engine's
    thread, so every entry point must make the device current where it runs."""
    import numpy as np

    from lc0py.backends.base import PlanesBatch
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.gpu.platform import GpuError
    from lc0py.weights.presets import random_network
    from tests.backends.gpu.test_layers import PointerPlatform

    class PerThreadContext(PointerPlatform):
        def __init__(self) -> None:
            super().__init__()
            self.bound: set[int] = set()
            self.bind_thread()

        def _bind_current_thread(self) -> None:
            self.bound.add(threading.get_ident())

        def copy_h2d(self, *a, **k):  # type: ignore[no-untyped-def]
            if threading.get_ident() not in self.bound:
                raise GpuError("cuMemcpyHtoDAsync failed (CUDA_ERROR_INVALID_CONTEXT)")
            return super().copy_h2d(*a, **k)

    plat = PerThreadContext()
    gpu = GpuNetwork(plat, random_network("tiny", 3), options=GpuOptions(graphs=True, max_batch=16))
    failures: list[BaseException] = []

    def feed() -> None:
        try:
            masks = np.random.default_rng(2).integers(1, 2**62, size=(5, 112), dtype=np.uint64)
            gpu.submit(PlanesBatch(masks, np.ones((5, 112), np.float32))).result()
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    t = threading.Thread(target=feed)
    t.start()
    t.join(120)
    gpu.close()
    assert not failures and len(plat.bound) == 2, failures[:1]


def _copying_platform():  # type: ignore[no-untyped-def]
    """A pointer platform whose device memory is a dict of bytes: H2D and D2H copies move real
    bytes (and are recorded), so what a submit uploads and what a result reads can be checked."""
    import ctypes

    from lc0py.gpu.vendor_platform import VendorPlatform
    from tests.backends.gpu.test_layers import PointerPlatform

    class CopyingPlatform(PointerPlatform):
        def __init__(self) -> None:
            super().__init__()
            self.device: dict[int, int] = {}  # address -> byte, of every write so far
            self.h2d: list[tuple[int, int]] = []
            self.d2h: list[tuple[int, int]] = []

        def copy_h2d(self, dst, src, nbytes, stream):  # type: ignore[no-untyped-def]
            data = ctypes.string_at(VendorPlatform._host_ptr(src, nbytes), nbytes)
            self.write(dst, data)
            self.h2d.append((dst, nbytes))

        def copy_d2h(self, dst, src, nbytes, stream):  # type: ignore[no-untyped-def]
            ctypes.memmove(VendorPlatform._host_ptr(dst, nbytes, writes=True), self.read(src, nbytes), nbytes)
            self.d2h.append((src, nbytes))

        def write(self, ptr: int, data: bytes) -> None:
            self.device.update(zip(range(ptr, ptr + len(data)), data, strict=True))

        def read(self, ptr: int, nbytes: int) -> bytes:
            return bytes(self.device.get(a, 0) for a in range(ptr, ptr + nbytes))

    return CopyingPlatform()


def test_upload_puts_the_padded_batch_on_the_device_in_one_copy_or_in_pieces() -> None:
    """A run of ``rows`` positions has its values right behind its masks (``run_buffers``, the
    pointer its forward pass reads): up to ``UPLOAD_CHUNK_ROWS`` rows go up in one copy, more as
    masks in ``UPLOAD_CHUNK_ROWS`` pieces and the values whole. What lands on the device is the
    batch, zero-padded to the graph bucket, whatever the slot held before (a larger batch's
    rows), and it stays inside the input buffers."""
    import numpy as np

    from lc0py.backends.base import PlanesBatch
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.backends.gpu.runner import PLANES, UPLOAD_CHUNK_ROWS
    from lc0py.backends.gpu.weights import graph_bucket
    from lc0py.weights.presets import random_network

    plat = _copying_platform()
    opts = GpuOptions(graphs=True, max_batch=2 * UPLOAD_CHUNK_ROWS + 64)
    gpu = GpuNetwork(plat, random_network("tiny", 3), options=opts)
    runner = gpu.runner
    buf = runner.buf
    inputs_end = buf.in_values + runner.capacity * PLANES * 4
    try:
        rng = np.random.default_rng(8)
        for n in (2 * UPLOAD_CHUNK_ROWS + 40, UPLOAD_CHUNK_ROWS + 3, 5, UPLOAD_CHUNK_ROWS):
            masks = rng.integers(1, 2**63, size=(n, PLANES), dtype=np.uint64)
            values = rng.random((n, PLANES)).astype(np.float32) + 0.5
            plat.h2d.clear()
            plat.used.clear()
            gpu.submit(PlanesBatch(masks, values)).result()
            rows = graph_bucket(n)
            assert rows > n or n in (5, UPLOAD_CHUNK_ROWS)
            want_m = np.zeros((rows, PLANES), np.uint64)
            want_m[:n] = masks
            want_v = np.zeros((rows, PLANES), np.float32)
            want_v[:n] = values
            values_at = runner.run_buffers(rows).in_values
            assert values_at == buf.in_masks + want_m.nbytes
            assert values_at + want_v.nbytes <= inputs_end
            assert plat.read(buf.in_masks, want_m.nbytes) == want_m.tobytes(), n
            assert plat.read(values_at, want_v.nbytes) == want_v.tobytes(), n
            assert values_at in plat.used  # the forward pass (captured now) reads them there
            if rows <= UPLOAD_CHUNK_ROWS:
                assert plat.h2d == [(buf.in_masks, want_m.nbytes + want_v.nbytes)], n
            else:
                pieces = [size for dst, size in plat.h2d if dst != values_at]
                assert len(pieces) == -(-rows // UPLOAD_CHUNK_ROWS), (n, pieces)
                assert (values_at, want_v.nbytes) in plat.h2d
    finally:
        gpu.close()


@pytest.mark.parametrize("fp16", [True, False])
@pytest.mark.parametrize("preset", ["tiny", "res-tiny"])
def test_value_and_moves_left_come_back_in_one_copy(preset: str, fp16: bool) -> None:
    """The moves-left output lies right behind the value output on the device, so a result is
    two copies back (policy, both heads); the outputs read are the device's bytes."""
    import numpy as np

    from lc0py.backends.base import PlanesBatch, wdl_from_value
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.backends.gpu.runner import PLANES, POLICY_OUT
    from lc0py.weights.presets import random_network

    plat = _copying_platform()
    opts = GpuOptions(graphs=False, max_batch=64)
    gpu = GpuNetwork(plat, random_network(preset, 4), fp16=fp16, options=opts)
    runner, buf = gpu.runner, gpu.runner.buf
    dtype = np.float16 if fp16 else np.float32
    try:
        assert runner.shape.mlh and runner.heads_joined
        rng = np.random.default_rng(5)
        for n in (37, 3):
            v_out = runner.shape.v_out
            value = rng.normal(size=(n, v_out)).astype(dtype)
            mlh = (rng.random(n) * 80 - 5).astype(dtype)  # some negative: the ReLU
            policy = rng.normal(size=(n, POLICY_OUT)).astype(np.float32)
            plat.write(buf.out_value, value.tobytes())
            plat.write(buf.out_mlh, mlh.tobytes())
            plat.write(buf.out_policy, policy.tobytes())
            plat.d2h.clear()
            masks = rng.integers(1, 2**63, size=(n, PLANES), dtype=np.uint64)
            out = gpu.submit(PlanesBatch(masks, np.ones((n, PLANES), np.float32))).result()
            assert len(plat.d2h) == 2, plat.d2h
            np.testing.assert_array_equal(out.policy, policy)
            want_wdl = wdl_from_value(value.astype(np.float32)).astype(np.float32)
            np.testing.assert_array_equal(out.wdl, want_wdl)
            want_m = mlh.astype(np.float32)
            if runner.moves_left_relu:
                want_m = np.maximum(want_m, 0)
            np.testing.assert_array_equal(out.moves_left, want_m)
            assert out.wdl.dtype == out.moves_left.dtype == np.float32
    finally:
        gpu.close()
