"""The feeder of an asynchronous (device) backend: the per-batch backend work off the search thread.

On a GPU backend the search thread used to call ``evaluate_async`` itself (host copies into pinned
memory, H2D, graph launch, D2H, event record: ~0.1 ms a batch on the H100 host) and then
``result()`` (the event wait and ``read_outputs``: ~0.08 ms). With small nets the one search
thread is the ceiling (docs/performance.md §4), so a ``Feeder`` thread (``lc0py-feed``) does both
while the search thread gathers (the compiled gather releases the GIL): it launches every batch
handed over as soon as it sees it, then waits for the oldest launched one and reads its outputs
into a ``FedOutput`` that the search thread only picks up.

One thread, FIFO: results come back in submission order. A batch handed over while the thread
waits for the device is launched when that wait ends (the device runs the batch in flight
meanwhile); a second thread for the waits saved the search thread less CPU on this machine's
sim-gpu runs (scripts/bench/search_timeline.py, maia-1900, 0.25 ms: median 5.55 -> 5.30 us a node
with two threads, 5.20 -> 4.71 with one, each against its own alternating baseline).

Over several devices (``demux``/``roundrobin``/``multiplexing`` children: ``wait_apart``) a batch
must not wait for the previous one's result before it is launched: the one thread above would keep
a second GPU idle while the first computes (``roundrobin`` over 2 GPUs ran at 1.00x one GPU on
4 x H200, bench/results/2026-11-28_h200x4_8cb9719). There a second thread (``lc0py-feed-wait``)
resolves the launched batches in order while the first only launches.

An exception in ``evaluate_async`` or ``result`` is stored in that batch's ``FedOutput`` and
raised by its ``result()`` on the search thread, as the backend's own would have been; the
batches behind it are still launched and resolved, so waiting for them
(``Search._drain_evaluations``) never hangs. A batch handed over after ``close`` is refused
(``Lc0pyError``) rather than queued behind the end marker, where no thread would ever settle it.
"""

from __future__ import annotations

import collections
import queue
import threading

from lc0py.backends.base import Backend, PendingOutput, PlanesBatch, SettledOutput
from lc0py.errors import Lc0pyError


class FedOutput(SettledOutput):
    """A batch handed to a ``Feeder``: settled (``deliver``) by the feeder with its outputs or the
    error that took their place."""

    __slots__ = ()


#: A launched batch: its handle, the backend's pending result, or the error that took its place.
_Launched = tuple[FedOutput, PendingOutput | None, BaseException | None]


class Feeder:
    """One thread that launches (``evaluate_async``) and resolves (``result``) one search's
    network batches on ``backend`` in submission order. Only it calls ``evaluate_async`` from
    ``submit`` on until ``close``. ``wait_apart``: a second thread resolves (several devices)."""

    def __init__(self, backend: Backend, wait_apart: bool = False) -> None:
        self._backend = backend
        self._closed = False
        self._closing = threading.Lock()  # ``submit`` and ``close``: nothing queued behind the end
        self._queue: queue.SimpleQueue[tuple[PlanesBatch, FedOutput] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, name="lc0py-feed", daemon=True)]
        self._launched: queue.SimpleQueue[_Launched | None] | None = None
        if wait_apart:
            self._launched = queue.SimpleQueue()
            self._threads = [
                threading.Thread(target=self._launch_all, name="lc0py-feed", daemon=True),
                threading.Thread(target=self._resolve_all, name="lc0py-feed-wait", daemon=True),
            ]
        for thread in self._threads:
            thread.start()

    def submit(self, planes: PlanesBatch) -> FedOutput:
        """Queue ``planes`` for the backend; returns at once. ``planes`` must stay unchanged until
        the handle is done (the worker's batch buffers do: a batch is reused only after its
        backup). Raises ``Lc0pyError`` after ``close``."""
        handle = FedOutput()
        with self._closing:
            if self._closed:
                raise Lc0pyError("the feeder is closed: a batch handed over after close is never evaluated")
            self._queue.put((planes, handle))
        return handle

    def _run(self) -> None:
        """Launch every batch queued, then resolve the oldest launched one; repeat. A batch
        handed over while the thread waits for the device is launched when that wait ends."""
        launched: collections.deque[_Launched] = collections.deque()
        closing = False
        while True:
            if not closing:
                try:
                    item = self._queue.get(block=not launched)
                except queue.Empty:  # nothing queued: resolve the oldest launched batch
                    pass
                else:
                    if item is None:  # closed: resolve what was launched, then end
                        closing = True
                    else:
                        launched.append(self._launch(*item))
                    continue
            if not launched:
                return
            _resolve(*launched.popleft())

    def _launch_all(self) -> None:
        """(``wait_apart``) Launch every batch as it is queued; the resolver waits for them."""
        assert self._launched is not None
        while True:
            item = self._queue.get()
            if item is None:
                self._launched.put(None)
                return
            self._launched.put(self._launch(*item))

    def _resolve_all(self) -> None:
        """(``wait_apart``) Resolve the launched batches in order until the launcher ends."""
        assert self._launched is not None
        while True:
            item = self._launched.get()
            if item is None:
                return
            _resolve(*item)

    def _launch(self, planes: PlanesBatch, handle: FedOutput) -> _Launched:
        try:
            return handle, self._backend.evaluate_async(planes), None
        except BaseException as exc:  # raised by the handle's result() on the search thread
            return handle, None, exc

    def close(self) -> None:
        """End the thread(s) once every batch handed over is resolved (they are waited for)."""
        with self._closing:
            if not self._closed:
                self._closed = True
                self._queue.put(None)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()


def _resolve(handle: FedOutput, pending: PendingOutput | None, error: BaseException | None) -> None:
    """Wait for a launched batch and settle its handle with the outputs or the error."""
    out = None
    if pending is not None:
        try:
            out = pending.result()
        except BaseException as exc:
            error = exc
    handle.deliver(out, error)
