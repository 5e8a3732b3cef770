"""Host memory handed to a device copy lives, unchanged, until the device has used it.

Checked without a GPU on ``AsyncCopyPlatform`` (async_copies.py), whose copies run only at a
synchronize: a temporary array dropped before then, a pinned buffer freed or rewritten while a
copy of it is pending, or an output read from a freed buffer shows up as a problem or as NaN.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.flash_probe import FlashInputs, FlashRunner
from lc0py.backends.gpu.network import GpuNetwork
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.runner import PLANES
from lc0py.errors import Lc0pyError
from lc0py.gpu.platform import Event, GpuError, HostBuffer
from lc0py.weights.presets import random_network
from tests.backends.gpu.async_copies import AsyncCopyPlatform


def _batch(rng: np.random.Generator, n: int) -> PlanesBatch:
    masks = rng.integers(1, 2**63, size=(n, PLANES), dtype=np.uint64)
    return PlanesBatch(masks, rng.random((n, PLANES)).astype(np.float32) + 0.5)


def test_the_flash_probe_keeps_its_uploads_alive_until_the_device_has_read_them() -> None:
    """``FlashRunner`` uploads a temporary (the bias as the kernel reads it): it must still be
    there when the stream reaches the copy, not collected as ``_upload`` returns."""
    plat = AsyncCopyPlatform()
    run = FlashRunner(plat, FlashInputs.random(2, 4, 32, seed=11))  # type: ignore[arg-type]
    try:
        assert not plat.problems, plat.problems
        assert not plat.pending
    finally:
        run.close()


@pytest.mark.parametrize("graphs", [True, False], ids=["graphs", "eager"])
@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
@pytest.mark.parametrize("preset", ["tiny", "res-tiny"])
def test_a_network_keeps_every_copys_host_memory_until_the_device_is_done(
    preset: str, fp16: bool, graphs: bool
) -> None:
    """Weights, batches of growing size (the slots reallocated), two batches in flight, results
    kept while later batches run: no copy's host side is freed, collected or rewritten before
    the device gets to it, and every output read is the device's (no poison)."""
    rng = np.random.default_rng(5)
    plat = AsyncCopyPlatform()
    options = GpuOptions(graphs=graphs, max_batch=4)
    gpu = GpuNetwork(plat, random_network(preset, 4), fp16=fp16, options=options)
    kept = []
    try:
        for sizes in ((3,), (5, 2), (40, 17), (300, 7), (1,)):
            pending = [gpu.submit(_batch(rng, n)) for n in sizes]
            kept += [p.result() for p in reversed(pending)]
        for out in kept:
            assert np.isfinite(out.policy).all() and np.isfinite(out.wdl).all()
            assert np.isfinite(out.moves_left).all()
    finally:
        gpu.close()
    assert not plat.problems, plat.problems


def test_a_kept_policy_outlives_the_slots_growing_and_the_backend_closing() -> None:
    """A result's policy views a pinned buffer of the pool: it stays allocated (and unchanged)
    while the runner reallocates its slots and after the backend closes, and is freed once the
    last view of it is gone."""
    rng = np.random.default_rng(6)
    plat = AsyncCopyPlatform()
    gpu = GpuNetwork(plat, random_network("tiny", 4), options=GpuOptions(graphs=False, max_batch=2))
    out = gpu.submit(_batch(rng, 2)).result()
    row = out.policy[1]  # a slice alone keeps the buffer
    before = row.copy()
    address = row.ctypes.data
    del out
    gpu.submit(_batch(rng, 64)).result()  # the slots and the pool grow
    gpu.close()
    gc.collect()
    assert not plat.is_freed(address) and np.array_equal(row, before)
    del row
    gc.collect()
    assert plat.is_freed(address)
    assert not plat.problems, plat.problems


def test_a_batch_left_unread_at_close_gives_its_outputs_not_freed_memory() -> None:
    """Closing with a batch in flight (a search stopped mid-batch): its result, asked for after
    the close, is what the device wrote, never the freed (poisoned) slot."""
    rng = np.random.default_rng(7)
    plat = AsyncCopyPlatform()
    gpu = GpuNetwork(plat, random_network("tiny", 4), options=GpuOptions(graphs=False, max_batch=4))
    want = gpu.submit(_batch(rng, 3)).result()
    pending = gpu.submit(_batch(rng, 3))
    gpu.close()
    got = pending.result()
    assert np.isfinite(got.wdl).all() and np.isfinite(got.moves_left).all()
    np.testing.assert_array_equal(got.wdl, want.wdl)
    np.testing.assert_array_equal(got.moves_left, want.moves_left)
    np.testing.assert_array_equal(got.policy, want.policy)
    assert not plat.problems, plat.problems


def test_a_failed_submit_lets_its_upload_finish_before_the_slot_is_written_again() -> None:
    """A forward pass that fails after its batch was enqueued for upload (a launch error) leaves
    that copy pending: the slot's pinned planes must not be rewritten by a later batch until
    the device has read them."""
    rng = np.random.default_rng(8)

    class FailingOnce(AsyncCopyPlatform):
        fail = True

        def launch(self, *args, **kw):  # type: ignore[no-untyped-def]
            if self.fail:
                self.fail = False
                raise RuntimeError("launch failed")
            super().launch(*args, **kw)

    plat = FailingOnce()
    gpu = GpuNetwork(plat, random_network("tiny", 4), options=GpuOptions(graphs=False, max_batch=4))
    try:
        with pytest.raises((RuntimeError, Lc0pyError)):
            gpu.submit(_batch(rng, 3))
        later = [gpu.submit(_batch(rng, 3)) for _ in range(2)]  # the second reuses the failed slot
        for p in later:
            p.result()
    finally:
        gpu.close()
    assert not plat.problems, plat.problems


def test_a_freed_host_buffer_gives_no_view() -> None:
    backing = np.random.default_rng(9).integers(1, 255, 64, dtype=np.uint8)
    buf = HostBuffer(int(backing.ctypes.data), 64)
    assert buf.view(np.uint32, (16,)).nbytes == 64 and buf.array.nbytes == 64
    buf.ptr = 0  # what free_host leaves
    assert buf.array.nbytes == 0
    with pytest.raises(ValueError, match="already freed"):
        buf.view(np.uint8, (1,))


def test_a_batch_that_cannot_be_read_at_close_raises_later_and_frees_its_buffer() -> None:
    """A device error while closing: the unread batch's ``result()`` raises one clear error
    instead of reading freed memory, and its pinned policy buffer is freed, not leaked."""
    rng = np.random.default_rng(10)

    class BrokenAtClose(AsyncCopyPlatform):
        broken = False
        destroyed: set[int]

        def synchronize(self, stream: int | None = None) -> None:
            super().synchronize(stream)
            if self.broken:
                raise GpuError("cuStreamSynchronize failed (CUDA_ERROR_LAUNCH_FAILED)")

        def event_synchronize(self, event: int) -> None:
            self.synchronize()

        def event_query(self, event: int) -> bool:
            assert event not in self.destroyed, "query of a destroyed event"
            return True

        def destroy_event(self, event: Event) -> None:
            self.destroyed.add(event.handle)

    plat = BrokenAtClose()
    plat.destroyed = set()
    gpu = GpuNetwork(plat, random_network("tiny", 4), options=GpuOptions(graphs=False, max_batch=4))
    pending = gpu.submit(_batch(rng, 3))
    plat.broken = True
    with pytest.raises(GpuError):
        gpu.close()
    assert pending.done()  # without asking the destroyed event
    with pytest.raises(GpuError, match="closed before this batch was read"):
        pending.result()
    assert all(freed for _, freed in plat.pinned.values())


def test_a_policy_freed_on_a_thread_driving_another_device_leaves_that_device_current() -> None:
    """The pool frees a collected policy buffer (of an outgrown size) on whatever thread drops
    the last view: there the device bound for the free must give way to the thread's own again,
    or its next driver calls would go to the wrong device's context."""
    rng = np.random.default_rng(12)
    current: list[object] = [None]

    class Device(AsyncCopyPlatform):
        def _bind_current_thread(self) -> None:
            current[0] = self

    first, second = Device(), Device()
    gpu = GpuNetwork(first, random_network("tiny", 4), options=GpuOptions(graphs=False, max_batch=2))
    try:
        out = gpu.submit(_batch(rng, 2)).result()
        address = out.policy.ctypes.data
        gpu.submit(_batch(rng, 64)).result()  # the pool now hands out larger buffers
        second.bind_thread()
        del out
        gc.collect()
        assert first.is_freed(address)  # freed, not pooled: its size is outgrown
        assert current[0] is second
    finally:
        gpu.close()


def test_close_waits_for_a_submit_running_on_another_thread() -> None:
    """A finished search's evaluation thread may still be submitting when the backend closes:
    the close must not free the pinned slots under that submit (its upload would be enqueued on
    freed memory); the batch is then read by the close, and a submit after it is refused."""
    rng = np.random.default_rng(13)

    class HeldUpload(AsyncCopyPlatform):
        hold = False

        def __init__(self) -> None:
            super().__init__()
            self.inside, self.go_on = threading.Event(), threading.Event()

        def copy_h2d(self, dst: int, src: Any, nbytes: int, stream: int) -> None:
            if self.hold:
                self.hold = False
                self.inside.set()
                self.go_on.wait(60)
            super().copy_h2d(dst, src, nbytes, stream)

    plat = HeldUpload()
    gpu = GpuNetwork(plat, random_network("tiny", 4), options=GpuOptions(graphs=False, max_batch=4))
    want = gpu.submit(_batch(np.random.default_rng(14), 3)).result()
    submitted: list[Any] = []
    plat.hold = True
    same = _batch(np.random.default_rng(14), 3)
    feeder = threading.Thread(target=lambda: submitted.append(gpu.submit(same)))
    feeder.start()
    assert plat.inside.wait(60)
    closer = threading.Thread(target=gpu.close)
    closer.start()
    closer.join(1.0)  # unlocked, the close is over by now (a slow machine only hides the bug)
    plat.go_on.set()
    feeder.join(60)
    closer.join(60)
    assert not plat.problems, plat.problems
    np.testing.assert_array_equal(submitted[0].result().wdl, want.wdl)
    with pytest.raises(GpuError, match="closed"):
        gpu.submit(_batch(rng, 1))
