"""Feeding every device of a bulk job: one thread per device, each with batches in flight.

The job's encoded chunks go into one :class:`RowStream`; it cuts their rows into batches of the
device batch size, **across chunk boundaries** (a chunk's last rows share a batch with the next
chunk's first), so every batch but the job's last is full: no odd-sized tail batch per chunk (a
new CUDA graph to capture, a device half idle) and no drain between chunks.

A :class:`DeviceFeeder` runs one thread per device: the children of a ``demux`` /
``roundrobin`` / ``multiplexing`` backend are fed directly (each thread its own device, its own
stream, no split of a batch and no join of its outputs on one thread), a single backend by one
thread. Each thread keeps ``depth`` batches in flight (the GPU runner's two pinned slots: one
batch computes while the next is uploaded), refills the device as soon as the oldest result is
back, *then* reduces that result (compiled, GIL-free) to the top-k policy, WDL, Q and moves-left
in the chunk's own output arrays. When a chunk's last row is reduced, the chunk is handed back
(``complete``) to be written by the job, off the devices' threads.

Every stage is timed (:class:`DeviceStats`): time waiting on the device, time starved of input
(the device idle because no batch was ready), time submitting (the upload), time reducing; and
when, on the job's clock (``DeviceFeeder.origin``), each device got its first batch and returned
its last, and how many of its batches were short of full: the starvation's start, middle and end.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lc0py.backends.base import Backend, NetworkOutput, PendingOutput, PlanesBatch

#: A slice ``[first, stop)`` of one chunk run's rows (``run`` has ``encoded`` planes).
Segment = tuple[Any, int, int]


class RowStream:
    """Rows of the job's chunk runs in order, taken as batches by the device threads.

    ``take`` returns a full batch when there is one; a partial one only when the input is
    closed or the producer is waiting for a chunk to finish (``flush``): then nothing can come
    before some batch completes, and holding the last rows back would deadlock the job. With
    ``linger`` (seconds), a waiting ``take`` also sends a partial batch after that long without
    a full one (a Ray actor, which cannot know whether another chunk is coming)."""

    def __init__(self, linger: float | None = None) -> None:
        self.linger = linger
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)  # rows came (or the stream closed)
        self._room = threading.Condition(self._lock)  # rows were taken
        self._runs: deque[Any] = deque()
        self._offset = 0  # rows of _runs[0] already taken
        self._available = 0
        self._closed = False
        self._flush = False

    def put(self, run: Any, rows: int) -> None:
        with self._cond:
            if rows:
                self._runs.append(run)
                self._available += rows
                self._flush = False
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            self._room.notify_all()

    def flush(self, on: bool = True) -> None:
        """The producer is waiting (``on``): partial batches may go."""
        with self._cond:
            self._flush = on
            if on:
                self._cond.notify_all()

    @property
    def available(self) -> int:
        return self._available

    def wait_room(self, limit: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the rows not taken yet to fall below ``limit`` (the
        producer's memory bound); whether they have."""
        with self._room:
            if self._available >= limit and not self._closed:
                self._room.wait(timeout)
            return self._available < limit or self._closed

    def take(self, size: int, wait: bool) -> list[Segment] | None:
        """Up to ``size`` rows as segments; ``None`` when none may go now (``wait`` False) or
        the stream is closed and empty (``wait`` True)."""
        with self._cond:
            lingered = False
            while True:
                if self._available >= size or (self._available and (self._closed or self._flush or lingered)):
                    break
                if not wait or (self._closed and not self._available):
                    return None
                if self._available and self.linger is not None:
                    lingered = not self._cond.wait(self.linger)
                else:
                    self._cond.wait()
            want = min(size, self._available)
            self._available -= want
            segments: list[Segment] = []
            while want:
                run = self._runs[0]
                n = len(run.loaded.encoded)
                k = min(want, n - self._offset)
                segments.append((run, self._offset, self._offset + k))
                self._offset += k
                want -= k
                if self._offset == n:
                    self._runs.popleft()
                    self._offset = 0
            self._room.notify_all()
            return segments


@dataclass
class DeviceStats:
    """One device thread's times (seconds) and counts."""

    device: str
    batches: int = 0
    rows: int = 0
    submit_s: float = 0.0  # in evaluate_async: host copy into pinned memory, upload, launch
    wait_s: float = 0.0  # blocked on the device's result
    starved_s: float = 0.0  # nothing in flight and no batch ready: the device idle for input
    reduce_s: float = 0.0  # top-k / WDL / Q reduction of the outputs (compiled)
    max_in_flight: int = 0
    partial_batches: int = 0  # batches short of the device batch (a chunk's or the job's end)
    # on the job's clock (``DeviceFeeder.origin``): the first batch sent, the last result reduced;
    # ``starved_s`` = the wait before the first batch + the waits between batches
    first_batch_at_s: float = -1.0
    last_result_at_s: float = -1.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k, v in out.items():
            if isinstance(v, float):
                out[k] = round(v, 4)
        return out


def devices_of(backend: Backend) -> list[tuple[str, Callable[[PlanesBatch], PendingOutput]]]:
    """The devices to feed: a multi-device backend's children (each with its own thread), else
    the backend itself."""
    children = getattr(backend, "children", None)
    if children:
        return [(str(c.label), c.submit) for c in children]
    return [(getattr(backend, "name", "backend"), backend.evaluate_async)]


def device_batch(backend: Backend, batch: int) -> int:
    """Positions a device takes per call: ``demux`` cuts ``batch`` into its parts (as lc0 does),
    the other backends take it whole."""
    part_size = getattr(backend, "part_size", None)
    return max(1, int(part_size(batch))) if part_size is not None else max(1, batch)


class DeviceFeeder:
    """One thread per device feeding it from ``stream`` (module docstring); ``reduce(run,
    first, stop, out)`` writes a segment's outputs; ``completed`` gets each run whose rows are
    all reduced goes to ``complete``; a device thread's exception to ``fail``."""

    def __init__(
        self,
        backend: Backend,
        batch: int,
        depth: int,
        reduce: Callable[[Any, int, int, NetworkOutput], None],
        complete: Callable[[Any], None],
        fail: Callable[[BaseException], None],
        linger: float | None = None,
    ) -> None:
        self.stream = RowStream(linger)
        self.batch = device_batch(backend, batch)
        self.depth = max(1, depth)
        self._reduce = reduce
        self._complete = complete
        self._fail = fail
        self._devices = devices_of(backend)
        self.stats = [DeviceStats(name) for name, _ in self._devices]
        #: the job's clock (``time.perf_counter``) the stats' ``*_at_s`` are measured from; the
        #: job sets it when its clock starts
        self.origin = time.perf_counter()
        self._failed = False
        self._threads = [
            threading.Thread(target=self._feed, args=(i,), daemon=True, name=f"lc0py-feed-{i}")
            for i in range(len(self._devices))
        ]
        for t in self._threads:
            t.start()

    @property
    def devices(self) -> int:
        return len(self._devices)

    def put(self, run: Any) -> None:
        """Queue a chunk run (``run.counter``: its rows; a run of no rows completes now)."""
        rows = len(run.loaded.encoded)
        if rows == 0:
            self._complete(run)
        else:
            self.stream.put(run, rows)

    def close(self) -> None:
        """No more input: the threads send what is left (partial batches) and end."""
        self.stream.close()
        for t in self._threads:
            t.join()

    def _planes(self, segments: list[Segment]) -> PlanesBatch:
        parts = [
            PlanesBatch(run.loaded.encoded.planes.masks[a:b], run.loaded.encoded.planes.values[a:b])
            for run, a, b in segments
        ]
        return parts[0] if len(parts) == 1 else PlanesBatch.concat(parts)

    def _feed(self, index: int) -> None:
        _, submit = self._devices[index]
        st = self.stats[index]
        pending: deque[tuple[list[Segment], PendingOutput]] = deque()
        clock = time.perf_counter

        def fill(may_wait: bool) -> None:
            while len(pending) < self.depth and not self._failed:
                t0 = clock()
                segments = self.stream.take(self.batch, wait=may_wait and not pending)
                t1 = clock()
                if not pending:
                    st.starved_s += t1 - t0
                if segments is None:
                    return
                rows = sum(b - a for _, a, b in segments)
                if st.first_batch_at_s < 0:
                    st.first_batch_at_s = t1 - self.origin
                st.partial_batches += rows < self.batch
                handle = submit(self._planes(segments))
                st.submit_s += clock() - t1
                pending.append((segments, handle))
                st.max_in_flight = max(st.max_in_flight, len(pending))

        try:
            while True:
                fill(True)
                if not pending:
                    return  # closed and empty (or another thread failed)
                segments, handle = pending.popleft()
                t0 = clock()
                out = handle.result()
                st.wait_s += clock() - t0
                fill(False)  # the device gets its next batch (if one is ready) before this one is reduced
                t0 = clock()
                start = 0
                for run, a, b in segments:
                    part = out if len(segments) == 1 else _slice(out, start, start + b - a)
                    self._reduce(run, a, b, part)
                    start += b - a
                t1 = clock()
                st.reduce_s += t1 - t0
                st.last_result_at_s = t1 - self.origin
                st.batches += 1
                st.rows += start
                for run, a, b in segments:
                    if run.counter.take(b - a):
                        self._complete(run)
        except BaseException as exc:  # handed to the job's thread, which raises it
            self._failed = True
            self.stream.close()  # the other threads stop taking batches
            self._fail(exc)
            for _, h in pending:  # let the device finish what it holds
                try:
                    h.result()
                except BaseException:
                    pass


def _slice(out: NetworkOutput, start: int, stop: int) -> NetworkOutput:
    return NetworkOutput(out.policy[start:stop], out.wdl[start:stop], out.moves_left[start:stop])


@dataclass
class RunCounter:
    """Rows of a chunk run not reduced yet (``take_rows`` says when the last ones were)."""

    remaining: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, rows: int) -> bool:
        with self.lock:
            self.remaining -= rows
            return self.remaining == 0
