"""A GPU backend's host side around a simulated device, for measuring host work on a CPU.

``SimulatedGpu`` is an asynchronous backend (``BackendInfo.asynchronous``) whose "device" is one
thread that sleeps ``delay_ms + n * per_position_us`` per batch, in submission order, as a GPU
stream runs its batches. Its host side does what ``GpuRunner`` does per batch: the planes are
copied into one of two host slots (``_upload``'s host copy; a third batch waits for the slot's
previous batch, as ``_take_slot`` does), a pooled policy buffer is taken (``_PinnedPool``), and
``result()`` waits for the device and reads the outputs with the runner's own code
(``GpuRunner.read_outputs``: the policy handed out as a view of the pooled buffer, the fp16
value logits softmaxed, the moves-left converted).

With ``fill=True`` (the default) the device thread writes the outputs of ``inner`` (the random
backend) for the batch's planes, so a search over it behaves as over ``inner``; with ``fill=False``
it writes nothing (the outputs are whatever the buffers held): the device thread then only
sleeps, which is what a profile of the host's work wants on a loaded machine.

``busy_s`` / ``idle_s()``: the seconds the device computed, and the seconds since ``reset_clock``
it had nothing queued (idle for lack of host work). Used by scripts/bench/search_timeline.py
(``--backend sim-gpu``) and scripts/bench/demux_profile.py.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.runner import GpuRunner, _PinnedPool, host_view
from lc0py.gpu.platform import HostBuffer

#: A T82 on one H100 (cuda-fp16, graphs): ~2.3 ms a batch of 64, ~6.9 ms of 256, ~25 ms of 1024
#: (backendbench, bench/results/2026-11-27_h100x4_eb8fc58): a fixed cost and a cost a position.
T82_H100_DELAY_MS = 0.77
T82_H100_PER_POSITION_US = 24.0


class _HostMemory:
    """The platform calls ``_PinnedPool`` makes, on ordinary host memory."""

    def __init__(self) -> None:
        self._keep: dict[int, np.ndarray] = {}

    def alloc_host(self, nbytes: int) -> HostBuffer:
        mem = np.zeros(nbytes, np.uint8)
        self._keep[mem.ctypes.data] = mem
        return HostBuffer(mem.ctypes.data, nbytes)

    def free_host(self, buf: HostBuffer) -> None:
        self._keep.pop(buf.ptr, None)

    def bind_thread(self) -> None:
        return None


class _Slot:
    """One of the two host slots: the planes going up, the value and moves-left coming back."""

    def __init__(self, host: _HostMemory, cap: int, heads_mlh: int, v_out: int, dtype: Any) -> None:
        elem = np.dtype(dtype).itemsize
        self.planes = host.alloc_host(cap * 112 * 12)
        self.heads = host.alloc_host(heads_mlh + cap * elem)
        self.value = self.heads.view(dtype, (cap, v_out))
        self.mlh = host_view(self.heads, heads_mlh, dtype, (cap,))
        self.pending: _Pending | None = None


class _Pending:
    """A batch on the simulated device; ``result()`` may be called from several threads."""

    def __init__(
        self, gpu: SimulatedGpu, slot: _Slot, n: int, policy: HostBuffer, done: threading.Event
    ) -> None:
        self._gpu, self._slot, self._n, self._policy, self._done = gpu, slot, n, policy, done
        self._out: Any = None
        self._lock = threading.Lock()

    def result(self) -> Any:
        with self._lock:
            if self._out is None:
                t0 = time.perf_counter()
                self._done.wait()
                t1 = time.perf_counter()
                self._gpu.wait_s += t1 - t0
                if self._gpu.on_wait is not None:
                    self._gpu.on_wait(t0, t1)
                self._out = GpuRunner.read_outputs(self._gpu, self._slot, self._n, self._policy)  # type: ignore[arg-type]
                if self._slot.pending is self:
                    self._slot.pending = None
            return self._out

    def done(self) -> bool:
        return self._done.is_set()


class SimulatedGpu:
    """A GPU backend's host side around a simulated device (see the module docstring)."""

    name = "sim-gpu"

    def __init__(self, inner: Any, delay_ms: float, per_position_us: float = 0.0, *, fp16: bool = True,
                 fill: bool = True, capacity: int = 4096) -> None:
        self.inner = inner
        self.info = inner.info
        self.info.asynchronous = True
        self.delay = delay_ms / 1000.0
        self.per_position = per_position_us / 1e6
        self.np_dtype = np.float16 if fp16 else np.float32
        self.fill = fill
        self.on_wait: Callable[[float, float], None] | None = None  # (start, end) of each wait
        self.moves_left_relu = True
        self.host = _HostMemory()
        self.p = self.host
        self.capacity = capacity
        v_out = 3 if inner.info.has_wdl else 1
        self.shape: Any = type("Shape", (), {"v_out": v_out, "mlh": inner.info.has_moves_left})
        self.policy_pool = _PinnedPool(self.host, capacity * 1858 * 4)  # type: ignore[arg-type]
        elem = np.dtype(self.np_dtype).itemsize
        self.heads_mlh = (capacity * v_out * elem + 255) // 256 * 256  # GpuRunner's slot layout
        self.slots = [_Slot(self.host, capacity, self.heads_mlh, v_out, self.np_dtype) for _ in range(2)]
        self.next = 0
        self.batches = 0
        self.busy_s = 0.0  # the device computing
        self.wait_s = 0.0  # result() blocked on the device
        self._queue: deque[tuple[_Slot, int, HostBuffer, threading.Event] | None] = deque()
        self._cond = threading.Condition()
        self._idle_s = 0.0
        self._idle_since: float | None = time.perf_counter()
        self._clock = time.perf_counter()
        self._device = threading.Thread(target=self._run, name="sim-device", daemon=True)
        self._device.start()

    # ---- the device --------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                item = self._queue.popleft()
            if item is None:
                return
            slot, n, policy, done = item
            t0 = time.perf_counter()
            time.sleep(self.delay + n * self.per_position)
            if self.fill:
                self._write_outputs(slot, n, policy)
            t1 = time.perf_counter()
            with self._cond:
                self.busy_s += t1 - t0
                self.batches += 1
                if not self._queue:
                    self._idle_since = t1
            done.set()

    def _write_outputs(self, slot: _Slot, n: int, policy: HostBuffer) -> None:
        masks = slot.planes.view(np.uint64, (n, 112))
        values = host_view(slot.planes, n * 112 * 8, np.float32, (n, 112))
        out = self.inner.evaluate(PlanesBatch(masks, values))
        policy.view(np.float32, (n, 1858))[:] = out.policy
        w, d, l = out.wdl[:, 0], out.wdl[:, 1], out.wdl[:, 2]
        if self.shape.v_out == 3:  # logits whose softmax gives the random backend's WDL
            logits = np.log(np.maximum(np.stack([w, d, l], axis=1), 1e-6))
        else:
            logits = np.arctanh(np.clip(w - l, -0.999, 0.999))[:, None]
        slot.heads.view(self.np_dtype, (n, self.shape.v_out))[:] = logits
        host_view(slot.heads, self.heads_mlh, self.np_dtype, (n,))[:] = out.moves_left

    def reset_clock(self) -> None:
        """Start counting idle time (and busy time) from now."""
        with self._cond:
            now = time.perf_counter()
            self._clock = now
            self.busy_s = self.wait_s = self._idle_s = 0.0
            self.batches = 0
            if self._idle_since is not None:
                self._idle_since = now

    def idle_s(self) -> float:
        """Seconds since ``reset_clock`` the device had nothing queued or running."""
        with self._cond:
            idle = self._idle_s
            if self._idle_since is not None:
                idle += time.perf_counter() - max(self._idle_since, self._clock)
            return idle

    # ---- the host side -------------------------------------------------------------------------
    def prepare(self, max_batch: int) -> None:
        return None

    def evaluate_async(self, batch: Any) -> Any:
        n = len(batch)
        if not 0 < n <= self.capacity:
            raise ValueError(f"sim-gpu: batch of {n} (1..{self.capacity})")
        slot = self.slots[self.next]
        self.next ^= 1
        pending = slot.pending
        if pending is not None:  # the runner's _take_slot: its outputs are still in this slot
            pending.result()
        slot.planes.view(np.uint64, (n, 112))[:] = batch.masks  # GpuRunner._upload's host copy
        host_view(slot.planes, n * 112 * 8, np.float32, (n, 112))[:] = batch.values
        policy = self.policy_pool.take()
        done = threading.Event()
        handle = _Pending(self, slot, n, policy, done)
        slot.pending = handle
        with self._cond:
            if self._idle_since is not None:
                self._idle_s += time.perf_counter() - max(self._idle_since, self._clock)
                self._idle_since = None
            self._queue.append((slot, n, policy, done))
            self._cond.notify()
        return handle

    def evaluate(self, batch: Any) -> Any:
        return self.evaluate_async(batch).result()

    def close(self) -> None:
        with self._cond:
            self._queue.append(None)
            self._cond.notify()
        if self._device.is_alive():
            self._device.join()
        self.inner.close()
