"""Running a ``GpuModel``: the buffer arena, pinned host slots, CUDA/HIP graphs, submit and results.

``GpuRunner`` knows nothing of the net's math: it sizes the activation ``Buffers`` for the largest
batch seen (grown by powers of two), copies the compact planes (uint64 masks + float values) to
the device, runs ``model.forward`` on the ops' main stream -- replaying a captured graph per
batch-size bucket when graphs are on -- starts the copies of the outputs back into pinned host
memory, records an event and returns at once; ``PendingBatch.result()`` waits on that event.

Per batch the host makes as few driver calls as it can (each is several µs of the search
thread's time on a server CPU): a run of ``rows`` positions keeps its planes' values right behind
its masks on the device (``in_masks + rows·PLANES·8``, inside the two input regions, in every
graph of that size), so a batch of up to ``UPLOAD_CHUNK_ROWS`` goes up in one copy; the
moves-left output is laid out right behind the value output (``plan_buffers``), so both come
back in one copy beside the policy's.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import threading
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from lc0py.backends.base import NetworkOutput, PlanesBatch, wdl_from_value
from lc0py.backends.gpu.layers import GpuModel, Tap
from lc0py.backends.gpu.layers_residual import GpuResidualModel
from lc0py.backends.gpu.ops import GpuOps
from lc0py.backends.gpu.weights import (
    PLANES,
    POLICY_OUT,
    SEQ,
    SMOLGEN_COUNTER_BYTES,
    Buffers,
    NetShape,
    align,
    graph_bucket,
    layout,
    plan_buffers,
)
from lc0py.backends.gpu.weights_residual import ResidualShape, plan_residual_buffers
from lc0py.gpu.platform import Event, GpuError, HostBuffer, Platform

#: Positions of the planes' masks one host copy + H2D step takes (``GpuRunner._upload``): copied
#: whole, a 1024-position batch's 0.9 MB of masks kept the device idle ~0.1 ms before its H2D
#: started (measured 2026-11-27, docs/performance.md §10).
UPLOAD_CHUNK_ROWS = 256


class _PinnedPool:
    """Pinned host buffers for the policy output, handed to the caller without a copy.

    ``result()`` returns a numpy view of the pinned buffer the device copied into; the buffer
    goes back to the pool only when the last array viewing it is garbage collected (a
    ``weakref.finalize`` on the base array), so results can be kept (an NN cache) without ever
    being overwritten. Saves a 7.6 MB host copy per 1024-position batch (~1 ms of idle GPU).
    """

    def __init__(self, platform: Platform, nbytes: int) -> None:
        self.p = platform
        self.nbytes = nbytes
        self.free: list[HostBuffer] = []
        self.closed = False

    def take(self) -> HostBuffer:
        while self.free:
            buf = self.free.pop()
            if buf.nbytes == self.nbytes:
                return buf
            self.p.free_host(buf)
        return self.p.alloc_host(self.nbytes)

    def release(self, buf: HostBuffer) -> None:
        """Called when the last array viewing ``buf`` is collected: on whatever thread that is,
        where another device (``gpu=N``) or none may be current, so the device is bound for the
        free and that thread's own device bound again after it."""
        if self.closed or buf.nbytes != self.nbytes:
            self.p.free_host_from_any_thread(buf)
        else:
            self.free.append(buf)

    def resize(self, nbytes: int) -> None:
        self.nbytes = nbytes

    def close(self) -> None:
        self.closed = True
        for buf in self.free:
            self.p.free_host(buf)
        self.free.clear()


#: The most bytes between the value and the moves-left outputs on the device that one copy back
#: spans (they are adjacent in every plan; a wider gap is copied as two pieces).
HEADS_SPAN_MAX = 1 << 20


def host_view(buf: HostBuffer, offset: int, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
    """A typed view of ``buf``'s bytes from ``offset`` (``HostBuffer.view`` views its start)."""
    nbytes = np.dtype(dtype).itemsize * math.prod(shape)  # np.prod of a tuple: ~10 us
    if not buf.ptr:
        raise ValueError("host buffer already freed")
    if offset + nbytes > buf.nbytes:
        raise ValueError(f"host buffer of {buf.nbytes} bytes cannot hold {shape} at {offset}")
    return buf.array[offset : offset + nbytes].view(dtype).reshape(shape)


@dataclass
class _Slot:
    """Pinned host buffers of one in-flight batch (two slots: submit overlaps a pending result):
    ``planes``, a batch's masks then its values (``rows`` rows each, as on the device: one copy
    up); ``heads``, the value output then, at ``GpuRunner.heads_mlh``, the moves-left output."""

    planes: HostBuffer
    heads: HostBuffer
    event: Event
    pending: PendingBatch | None = None
    # typed views made once (a view costs a few us, several a batch): rows -> (masks, values)
    # of a run of that many rows; the value and moves-left outputs of all ``capacity`` rows
    runs: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    value: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.float32))
    mlh: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))

    def run(self, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """The masks and values of a run of ``rows`` rows, the values behind the masks."""
        views = self.runs.get(rows)
        if views is None:
            masks = self.planes.view(np.uint64, (rows, PLANES))
            views = masks, host_view(self.planes, rows * PLANES * 8, np.float32, (rows, PLANES))
            self.runs[rows] = views
        return views


def wait_without_gil(event: Event) -> None:
    """Wait for ``event`` while letting other Python threads run.

    Where the vendor binding releases the GIL inside its blocking synchronize
    (``Platform.sync_releases_gil``: cuda.bindings does), that synchronize is the wait: it returns
    as soon as the device is done, and the search thread, which gathers the next minibatch
    meanwhile, keeps running. Otherwise it polls with short sleeps, which release the GIL between
    polls, and synchronizes once the event is done (reporting a device error if there was one).
    Polling costs about 0.1 ms of idle GPU a batch (a sleep overshoots): on an H200 the blocking
    wait gave res-20x256 +29 / +15 / +3 % at batch 64 / 256 / 1024 (docs/performance.md)."""
    if event.platform.sync_releases_gil:
        event.synchronize()
        return
    pause = 20e-6
    while not event.query():
        time.sleep(pause)
        pause = min(2 * pause, 200e-6)
    event.synchronize()


class PendingBatch:
    """Handle returned by ``GpuRunner.submit``; ``result()`` waits for the device."""

    def __init__(self, runner: GpuRunner, slot: _Slot, n: int, policy: HostBuffer) -> None:
        self._runner, self._slot, self._n = runner, slot, n
        self._policy: HostBuffer | None = policy
        self._out: NetworkOutput | None = None
        # The search's worker may wait here while a stop on another thread reads the same
        # finished batch for the NN cache: one of them reads the outputs, the other gets them.
        self._lock = threading.Lock()

    def done(self) -> bool:
        # an abandoned batch (``abandon``) is done: its slot's event is destroyed
        return self._out is not None or self._policy is None or self._slot.event.query()

    def result(self) -> NetworkOutput:
        with self._lock:
            if self._out is None:
                if self._policy is None:  # ``abandon``
                    raise GpuError("GPU backend closed before this batch was read (after a device error)")
                self._runner.p.bind_thread()
                wait_without_gil(self._slot.event)
                self._out = self._runner.read_outputs(self._slot, self._n, self._policy)
                self._policy = None  # now owned by the returned array
                self._slot.pending = None
            return self._out

    def abandon(self) -> None:
        """Give the policy buffer back unread (the runner is closing and could not read this
        batch; the device has finished with it): a later ``result()`` raises instead of reading
        the freed slot."""
        with self._lock:
            policy, self._policy = self._policy, None
            self._slot.pending = None
            if policy is not None and self._out is None:
                pool = self._runner.policy_pool
                assert pool is not None
                pool.release(policy)

    def __del__(self) -> None:
        if getattr(self, "_policy", None) is not None and self._out is None:
            try:  # never read: the device may still write into it, so wait first
                with self._runner.p.borrowing_thread():  # collected on any thread
                    self._slot.event.synchronize()
                pool = self._runner.policy_pool
                assert pool is not None and self._policy is not None
                pool.release(self._policy)
            except Exception:
                pass


class GpuRunner:
    """Buffers, slots, graphs and submission for one ``GpuModel`` on ``ops``' streams."""

    def __init__(
        self,
        ops: GpuOps,
        model: GpuModel | GpuResidualModel,
        shape: NetShape | ResidualShape,
        *,
        graphs: bool,
        max_batch: int,
        moves_left_relu: bool,
        fine_buckets: bool = True,
    ) -> None:
        self.ops, self.p, self.model, self.shape = ops, ops.p, model, shape
        self.np_dtype = np.float16 if ops.fp16 else np.float32
        self.graphs_enabled = graphs
        self.fine_buckets = fine_buckets  # ``graph_buckets=fine`` (``weights.graph_bucket``)
        self._buckets: dict[int, int] = {}
        self.max_batch = max(1, int(max_batch))
        self.moves_left_relu = moves_left_relu
        self.buf = Buffers()
        self._buf_base = 0
        self.capacity = 0
        self.buffer_bytes = 0
        self._graphs: dict[tuple[int, bool], int] = {}
        self._slots: list[_Slot] = []
        self._run_bufs: dict[int, Buffers] = {}  # per run size: values right behind the masks
        self.heads_mlh = 0  # where the moves-left output starts in a slot's ``heads``
        self.heads_joined = False  # value and moves-left come back in one copy
        self.policy_pool: _PinnedPool | None = None
        self._next_slot = 0
        self.ensure(self.max_batch)

    # ---- buffers --------------------------------------------------------------------------------
    def ensure(self, batch: int) -> None:
        """Buffers for ``batch`` positions (grows by powers of two; drops captured graphs)."""
        if batch <= self.capacity:
            return
        cap = max(batch, self.max_batch)
        cap = 1 << (cap - 1).bit_length() if cap > self.max_batch else cap
        for slot in self._slots:
            pending = slot.pending  # read once (``_take_slot``)
            if pending is not None:
                pending.result()
        self.p.synchronize(self.ops.main)
        self.drop_graphs()
        if self._buf_base:
            self.p.free(self._buf_base)
        self._free_slots()
        # the scores buffer always: the fallback may be chosen per call (verify, flash failure)
        if isinstance(self.shape, ResidualShape):
            sizes = plan_residual_buffers(self.shape, cap, self.ops.elem)
        else:
            sizes = plan_buffers(self.shape, cap, self.ops.elem, fallback=True)
        offsets, total = layout(sizes)
        if offsets["in_values"] != offsets["in_masks"] + align(sizes["in_masks"]):
            raise RuntimeError("GPU buffer plan: the planes' values must follow their masks")
        self._buf_base = self.p.alloc(total)
        self.buf = Buffers(**{name: self._buf_base + off for name, off in offsets.items()})
        if self.buf.sg_count:  # the row kernels' tickets and smolgen_chain's counters start at 0
            # (every launch leaves them 0)
            self.p.memset(self.buf.sg_count, 0, SMOLGEN_COUNTER_BYTES, self.ops.main)
            self.p.synchronize(self.ops.main)
        self._run_bufs = {}
        self.buffer_bytes = total
        s, elem = self.shape, self.ops.elem
        gap = offsets.get("out_mlh", 0) - offsets["out_value"]
        self.heads_joined = bool(s.mlh) and 0 < gap <= HEADS_SPAN_MAX
        self.heads_mlh = gap if self.heads_joined else align(cap * s.v_out * elem)
        self._slots = [
            _Slot(
                planes=self.p.alloc_host(cap * PLANES * 12),
                heads=self.p.alloc_host(self.heads_mlh + cap * elem),
                event=self.p.create_event(),
            )
            for _ in range(2)
        ]
        for slot in self._slots:
            slot.value = slot.heads.view(self.np_dtype, (cap, s.v_out))
            slot.mlh = host_view(slot.heads, self.heads_mlh, self.np_dtype, (cap,))
        if self.policy_pool is None:
            self.policy_pool = _PinnedPool(self.p, cap * POLICY_OUT * 4)
        self.policy_pool.resize(cap * POLICY_OUT * 4)
        self.capacity = cap

    def drop_graphs(self) -> None:
        for g in self._graphs.values():
            self.p.destroy_graph(g)
        self._graphs.clear()

    def _free_slots(self) -> None:
        for slot in self._slots:
            for hb in (slot.planes, slot.heads):
                self.p.free_host(hb)
            self.p.destroy_event(slot.event)
        self._slots = []

    # ---- running --------------------------------------------------------------------------------
    def run_buffers(self, rows: int) -> Buffers:
        """The buffers of a run of ``rows`` positions: its planes' values at ``in_masks +
        rows·PLANES·8``, right behind its masks (within the masks' and values' regions, which
        ``ensure`` checked are adjacent), so one copy uploads both (``_upload``)."""
        buf = self._run_bufs.get(rows)
        if buf is None:
            buf = dataclasses.replace(self.buf, in_values=self.buf.in_masks + rows * PLANES * 8)
            self._run_bufs[rows] = buf
        return buf

    def forward(self, bsz: int, flash: bool, tap: Tap | None = None) -> None:
        """The model from the uploaded planes to the output buffers, enqueued on the main stream."""
        self.model.forward(self.ops, self.run_buffers(bsz), bsz, flash, tap)

    def _take_slot(self) -> _Slot:
        slot = self._slots[self._next_slot]
        self._next_slot = (self._next_slot + 1) % len(self._slots)
        pending = slot.pending  # read once: a search's feeder may clear it on another thread
        if pending is not None:
            pending.result()  # its outputs are still in this slot's pinned buffers
        return slot

    def _upload(self, slot: _Slot, batch: PlanesBatch, rows: int) -> None:
        """Copy ``batch`` (zero-padded to ``rows``) into the slot and on to the device, the values
        behind the masks (``run_buffers``): up to ``UPLOAD_CHUNK_ROWS`` rows in one copy; a
        larger batch's masks in ``UPLOAD_CHUNK_ROWS`` pieces, each going up while the host copies
        the next (and the values), so the device waits only for the first piece's host copy."""
        n, main = len(batch), self.ops.main
        mask_bytes = rows * PLANES * 8
        masks, values = slot.run(rows)
        dst = self.buf.in_masks
        if rows <= UPLOAD_CHUNK_ROWS:
            masks[:n] = batch.masks
            values[:n] = batch.values
            if n < rows:  # (an empty slice's assignment still costs ~1 us)
                masks[n:] = 0
                values[n:] = 0
            self.p.copy_h2d(dst, slot.planes, rows * PLANES * 12, main)
            return
        for lo in range(0, rows, UPLOAD_CHUNK_ROWS):
            hi = min(rows, lo + UPLOAD_CHUNK_ROWS)
            mid = min(max(lo, n), hi)  # rows lo..mid are the batch's, mid..hi padding
            masks[lo:mid] = batch.masks[lo:mid]
            masks[mid:hi] = 0
            self.p.copy_h2d(dst + lo * PLANES * 8, masks[lo:hi], (hi - lo) * PLANES * 8, main)
        values[:n] = batch.values
        values[n:] = 0
        self.p.copy_h2d(dst + mask_bytes, values, rows * PLANES * 4, main)

    def submit(self, batch: PlanesBatch, flash: bool, use_graph: bool) -> PendingBatch:
        """Start evaluating ``batch``; returns before the device finishes."""
        n = len(batch)
        if n == 0:
            raise ValueError("empty batch")
        run = self.bucket(n) if use_graph else n
        self.ensure(run)
        slot = self._take_slot()
        self._upload(slot, batch, run)
        try:
            if use_graph:
                self.p.launch_graph(self._graph(run, flash), self.ops.main)
            else:
                self.forward(run, flash)
        except BaseException:
            self._drain()
            raise
        return self._finish(slot, n)

    def _drain(self) -> None:
        """Wait for the main stream after a submit failed past its upload: no event marks that
        copy, so the next batch in the slot would rewrite its pinned planes while the device may
        still read them. A device error here is the one being raised already."""
        try:
            self.p.synchronize(self.ops.main)
        except Exception:
            pass

    def bucket(self, n: int) -> int:
        """The batch size the graph that runs ``n`` positions was captured for."""
        run = self._buckets.get(n)
        if run is None:  # (remembered: ``graph_bucket``'s arithmetic is a few us a batch)
            run = self._buckets[n] = graph_bucket(n, self.fine_buckets)
        return run

    def _graph(self, run: int, flash: bool) -> int:
        """The captured graph of a bucket, captured now if it is new (the buffers hold ``run``)."""
        key = (run, flash)
        graph = self._graphs.get(key)
        if graph is None:
            # One eager run first: cuBLAS picks and loads its kernels for these shapes and
            # creates its handle outside the capture (neither is allowed inside one).
            self.forward(run, flash)
            self.p.begin_capture(self.ops.main)
            try:
                self.forward(run, flash)
            finally:
                graph = self.p.end_capture(self.ops.main)
            self._graphs[key] = graph
        return graph

    def prepare(self, max_batch: int, flash: bool) -> int:
        """Buffers for ``max_batch`` positions and, with graphs on, the graph of every bucket up
        to it, captured now rather than by the first batches of a search (32 buckets to
        256, each an eager run and a capture). Returns how many graphs were captured."""
        if max_batch <= 0:
            raise ValueError("max_batch must be positive")
        if not self.graphs_enabled:
            self.ensure(max_batch)
            return 0
        top = self.bucket(max_batch)
        self.ensure(top)
        before = len(self._graphs)
        for run in sorted({self.bucket(n) for n in range(1, top + 1)}):
            self._graph(run, flash)
        self.p.synchronize(self.ops.main)
        return len(self._graphs) - before

    def _finish(self, slot: _Slot, n: int) -> PendingBatch:
        assert self.policy_pool is not None
        policy = self.policy_pool.take()
        s, buf, main, elem = self.shape, self.buf, self.ops.main, self.ops.elem
        self.p.copy_d2h(policy, buf.out_policy, n * POLICY_OUT * 4, main)
        if self.heads_joined:  # value, the gap between them, moves-left: one copy
            self.p.copy_d2h(slot.heads, buf.out_value, self.heads_mlh + n * elem, main)
        else:
            self.p.copy_d2h(slot.heads, buf.out_value, n * s.v_out * elem, main)
            if s.mlh:
                self.p.copy_d2h(slot.mlh[:n], buf.out_mlh, n * elem, main)
        slot.event.record(main)
        pending = PendingBatch(self, slot, n, policy)
        slot.pending = pending
        return pending

    def read_outputs(self, slot: _Slot, n: int, policy_buf: HostBuffer) -> NetworkOutput:
        s = self.shape
        # A fresh ctypes object per result owns the view: numpy keeps it alive through every
        # slice of the array (view bases stop at non-array owners), so the buffer returns to the
        # pool only when nothing can read it any more.
        # (``np.frombuffer`` keeps the owner as its base, as ``np.ctypeslib.as_array`` did, at
        # half the cost: ~2.5 of the ~20 us a batch of one spends here on a GPU host's cores.)
        owner = (ctypes.c_float * (n * POLICY_OUT)).from_address(policy_buf.ptr)
        pool = self.policy_pool
        assert pool is not None
        weakref.finalize(owner, pool.release, policy_buf)
        policy = np.frombuffer(owner, np.float32).reshape(n, POLICY_OUT)  # type: ignore[call-overload]
        wdl = wdl_from_value(slot.value[:n].astype(np.float32))
        if s.mlh:
            mlh = slot.mlh[:n].astype(np.float32)
            if self.moves_left_relu:
                np.maximum(mlh, 0, out=mlh)
        else:
            mlh = np.zeros(n, np.float32)
        return NetworkOutput(policy=policy, wdl=wdl.astype(np.float32, copy=False), moves_left=mlh)

    def evaluate_traced(self, batch: PlanesBatch, flash: bool) -> tuple[NetworkOutput, dict[str, np.ndarray]]:
        """Outputs plus per-layer intermediates (``embedding``, ``encoder{l}.attention`` as float32
        ``[B, 64, width]``); no graphs, synchronises after each tap."""
        n = len(batch)
        self.ensure(n)
        slot = self._take_slot()
        self._upload(slot, batch, n)
        taps: dict[str, np.ndarray] = {}

        def tap(name: str, ptr: int, width: int) -> None:
            host = np.empty((n, SEQ, width), self.np_dtype)
            self.p.copy_d2h(host, ptr, host.nbytes, self.ops.main)
            self.p.synchronize(self.ops.main)
            taps[name] = host.astype(np.float32)

        try:
            self.forward(n, flash, tap)
        except BaseException:
            self._drain()
            raise
        return self._finish(slot, n).result(), taps

    def _settle_pending(self) -> None:
        """Read every batch still in a slot before the slots are freed: its ``result()`` may be
        asked for after ``close`` (a search stopped mid-batch) and must not read freed pinned
        memory. A batch that cannot be read (device error) is abandoned: its result raises."""
        for slot in self._slots:
            pending = slot.pending
            if pending is None:
                continue
            try:
                pending.result()
            except Exception:
                pending.abandon()

    def close(self) -> None:
        try:
            self.p.synchronize(self.ops.main)
        finally:
            self._settle_pending()
            self.drop_graphs()
            self._free_slots()
            if self.policy_pool is not None:
                self.policy_pool.close()  # buffers still viewed by results are freed on release
            if self._buf_base:
                self.p.free(self._buf_base)
                self._buf_base = 0
