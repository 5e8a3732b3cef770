"""The feeder of an asynchronous (device) backend: the per-batch backend work off the search thread.

On a GPU backend the search thread used to call ``evaluate_async`` itself (host copies into pinned
memory, H2D, graph launch, D2H, event record: ~0.1 ms a batch on the H100 host) and then
``result()`` (the event wait and ``read_outputs``: ~0.08 ms). With small nets the one search
thread is the ceiling (docs/performance.md §4), so a ``Feeder`` does both while the search thread
gathers (the compiled gather releases the GIL), on two threads:

- ``lc0py-feed`` launches every batch as soon as it is handed over;
- ``lc0py-feed-wait`` waits for the launched batches in order and reads each one's outputs into the
  ``FedOutput`` that the search thread only picks up.

A batch therefore reaches the device while the one before it is still awaited. A single thread
that launched and waited in turn launched a batch handed over during a wait only when that wait
ended, so the device idled for a launch between every two batches whenever it was the bottleneck:
T82 on one H100 searched at 25.4k nodes/s with that feeder against 26.7k with none
(bench/results/2026-11-28_h100-feeder_a586472, 2 alternating rounds), and ``roundrobin`` over 2 GPUs
ran at 1.00x one GPU on 4 x H200 (bench/results/2026-11-28_h200x4_8cb9719). On the development
machine's simulated GPU (scripts/bench/search_timeline.py, maia-1900 trees, alternating rounds) the
two threads give: device-bound (0.8 ms + 22 us a position) 32.2k -> 34.2k nodes/s, device busy
91 -> 97 %, level with no feeder; in between (0.4 ms + 8 us) 69.0-70.7k -> 77.7-78.6k; host-bound
(0.25 ms + 1 us) level (medians of 6 rounds 165.2k / 165.3k), where the feeder's gain over none
stays.

Results come back in submission order. An exception in ``evaluate_async`` or ``result`` is stored
in that batch's ``FedOutput`` and raised by its ``result()`` on the search thread, as the backend's
own would have been; the batches behind it are still launched and resolved, so waiting for them
(``Search._drain_evaluations``) never hangs. A batch handed over after ``close`` is refused
(``Lc0pyError``) rather than queued behind the end marker, where no thread would ever settle it.
"""

from __future__ import annotations

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
    """Two threads that launch (``evaluate_async``) and resolve (``result``) one search's network
    batches on ``backend`` in submission order. Only the launcher calls ``evaluate_async`` from
    ``submit`` on until ``close``; only the resolver calls ``result``."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._closed = False
        self._closing = threading.Lock()  # ``submit`` and ``close``: nothing queued behind the end
        self._queue: queue.SimpleQueue[tuple[PlanesBatch, FedOutput] | None] = queue.SimpleQueue()
        self._launched: queue.SimpleQueue[_Launched | None] = queue.SimpleQueue()
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

    def _launch_all(self) -> None:
        """Launch every batch as it is queued; the resolver waits for them."""
        while True:
            item = self._queue.get()
            if item is None:
                self._launched.put(None)
                return
            self._launched.put(self._launch(*item))

    def _resolve_all(self) -> None:
        """Resolve the launched batches in order until the launcher ends."""
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
        """End the threads once every batch handed over is resolved (they are waited for)."""
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
