"""``demux``, ``roundrobin`` and ``multiplexing``: one batch interface over several children.

All three are asynchronous (``BackendInfo.asynchronous``): ``evaluate_async`` hands the work to
the children's threads and returns, so the search and the bulk evaluator keep several batches in
flight, and every child (every GPU) has work queued. Results always come back in the order the
positions went in.

``demux`` and ``roundrobin`` launch each part on the caller's thread and hand it to its child's
resolver thread (``feeding.ChildFeeder``), which waits for it and, for a batch split into parts,
copies it into its slice of the batch's output (``feeding.JoinedOutput``): the caller never waits
on one device while another's result is ready, and never joins outputs itself. A ``demux`` batch
of at most ``CALLER_ROWS`` positions (the search's) is launched, waited for and joined on the
caller's thread instead, without the hand-offs (``CHILD_FEEDING``).
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from concurrent.futures import Future

from lc0py.backends.base import BackendBase, NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.multi.children import Child, ChildHandle, child_error, merged_info
from lc0py.backends.multi.feeding import JoinedOutput, OneOutput, OutputPool, PartSink
from lc0py.errors import Lc0pyError

#: Where each child's host work runs: ``"threads"``, on the child's own launcher and resolver
#: threads (``feeding.ChildFeeder``); ``"resolve"``, the launch on the caller's thread and the
#: wait, read-back and copy into the joined output on the child's resolver thread; ``"caller"``,
#: all of it on the caller's thread (each part launched in turn, then waited for and copied in
#: order when ``result()`` is called); ``"auto"`` (the default), ``demux`` takes ``"caller"`` for
#: a batch of at most ``CALLER_ROWS`` positions and ``"resolve"`` above, ``roundrobin``
#: ``"resolve"``. Module-level so scripts/bench/demux_profile.py can measure each in one run
#: (``--paths``).
CHILD_FEEDING = "auto"
#: (``"auto"``) A ``demux`` batch of at most this many positions is launched and joined on the
#: caller's thread. The search's batches are that small (T82: mean ~75, median ~45), and its
#: feeder already waits for them on a thread of its own, so the child threads' hand-offs only add
#: latency: T82 ``benchmark`` with ``demux`` over 2 H200s, ``Threads`` 2, medians of 4 alternating
#: rounds, 36.8k nodes/s ``"caller"`` against 35.2k ``"resolve"``; ``evaluate_async`` 0.31 against
#: 0.52 ms a batch (bench/results/2026-11-29_h200x2-demuxsearch_d0b22d2). Larger batches
#: (backendbench's 2 x 1024, bulk-eval's) keep ``"resolve"``: their joins are megabytes, copied on
#: the children's threads at once.
CALLER_ROWS = 256


def feeding_path(rows: int, splits: bool) -> str:
    """The ``CHILD_FEEDING`` path a batch of ``rows`` positions takes (``splits``: ``demux``)."""
    if CHILD_FEEDING != "auto":
        return CHILD_FEEDING
    return "caller" if splits and rows <= CALLER_ROWS else "resolve"


def slice_batch(batch: PlanesBatch, start: int, stop: int) -> PlanesBatch:
    return PlanesBatch(batch.masks[start:stop], batch.values[start:stop])


def slice_output(out: NetworkOutput, start: int, stop: int) -> NetworkOutput:
    return NetworkOutput(out.policy[start:stop], out.wdl[start:stop], out.moves_left[start:stop])


class CallerJoined:
    """(``CHILD_FEEDING`` "caller") A batch's parts launched on the caller's thread; ``result()``
    waits for each in order and copies it into the joined output there."""

    def __init__(self, parts: list[tuple[Child, PendingOutput, PartSink]], joined: PendingOutput) -> None:
        self._parts, self._joined = parts, joined

    def result(self) -> NetworkOutput:
        parts, self._parts = self._parts, []
        for child, handle, sink in parts:
            try:
                out = handle.result()
            except Lc0pyError as exc:
                sink.deliver(None, exc)
                continue
            try:
                sink.deliver(out, None)
            except Exception as exc:
                sink.deliver(None, child_error(child.label, exc))
        return self._joined.result()

    def done(self) -> bool:
        return all(h.done() for _, h, _ in self._parts)


class MultiBackend(BackendBase):
    """What the three share: the children, ``is_cpu``, ``prepare`` and ``close``."""

    name = "multi"
    #: Each batch is cut into parts for every child (``demux``), so one batch in flight already
    #: keeps every device busy (the search's ``Threads`` 0 rule, ``worker.batches_in_flight``).
    splits_every_batch = False

    def __init__(self, children: list[Child]) -> None:
        self.children = children
        self.is_cpu = all(_is_cpu(c) for c in children)
        self._counter = itertools.count()

    def _next_child(self) -> Child:
        if not self.children:
            raise Lc0pyError(f"{self.name}: the backend is closed")
        return self.children[next(self._counter) % len(self.children)]

    @property
    def batches_in_flight(self) -> int:
        """Batches a caller should keep in flight so that every child has work queued while the
        next batch is prepared (backendbench's default): two a child, whole batches to one each."""
        return 2 * max(1, len(self.children))

    def profile(self) -> list[dict[str, float | int | str]]:
        """Each child thread's host times since ``reset_profile`` (``feeding.FeederProfile``)."""
        return [vars(c.profile()) for c in self.children]

    def reset_profile(self) -> None:
        for child in self.children:
            child.reset_profile()

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        return self.evaluate_async(batch).result()

    def prepare(self, max_batch: int) -> None:
        for child in self.children:
            child.prepare(max_batch)

    def close(self) -> None:
        children, self.children = self.children, []
        for child in children:
            child.close()


def _is_cpu(child: Child) -> bool:
    from lc0py.backends.registry import is_cpu_backend

    return is_cpu_backend(child.backend)


class DemuxBackend(MultiBackend):
    """lc0's ``demux``: each batch cut into (total ``threads``) parts, computed at once."""

    name = "demux"
    splits_every_batch = True

    def __init__(self, children: list[Child], minimum_split_size: int = 0) -> None:
        super().__init__(children)
        self.minimum_split_size = minimum_split_size
        self._outputs = OutputPool()
        self.parts = sum(c.spec.threads for c in children)
        smallest = min(c.info.recommended_batch for c in children)
        self.info = merged_info(self.name, children, smallest * self.parts)

    def part_size(self, positions: int) -> int:
        """lc0's ``partial_size_``: ceil(B / threads), raised to ``minimum-split-size``."""
        size = -(-positions // self.parts)
        if size < self.minimum_split_size:
            size = min(positions, self.minimum_split_size)
        return max(1, size)

    @property
    def batches_in_flight(self) -> int:
        """Two: each batch already gives every child a part, and two parts a child fill the GPU
        runner's two pinned slots (one computing while the next goes up)."""
        return 2

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        n = len(batch)
        size = self.part_size(n) if n else 1
        mode = feeding_path(n, splits=True)
        if n <= size:  # one part (or none): the child's output as it is, no copy
            if mode == "caller":
                return self._next_child().submit(batch)
            handle = OneOutput()
            self._next_child().feed(batch, handle, launch_here=mode == "resolve")
            return handle
        starts = range(0, n, size)
        joined = JoinedOutput(n, len(starts), self._outputs)
        on_caller: list[tuple[Child, PendingOutput, PartSink]] = []
        for index, start in enumerate(starts):
            stop = min(n, start + size)
            child, part = self._next_child(), slice_batch(batch, start, stop)
            if mode == "caller":
                on_caller.append((child, child.submit(part), joined.part(index, start, stop)))
            else:
                child.feed(part, joined.part(index, start, stop), launch_here=mode == "resolve")
        return CallerJoined(on_caller, joined) if on_caller else joined

    def prepare(self, max_batch: int) -> None:
        for child in self.children:
            child.prepare(self.part_size(max_batch))


class RoundRobinBackend(MultiBackend):
    """lc0's ``roundrobin``: whole batches to the children in turn."""

    name = "roundrobin"

    def __init__(self, children: list[Child]) -> None:
        super().__init__(children)
        self.info = merged_info(self.name, children, min(c.info.recommended_batch for c in children))

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        mode = feeding_path(len(batch), splits=False)
        if mode == "caller":
            return self._next_child().submit(batch)
        handle = OneOutput()
        self._next_child().feed(batch, handle, launch_here=mode == "resolve")
        return handle


class _Request:
    __slots__ = ("batch", "future")

    def __init__(self, batch: PlanesBatch) -> None:
        self.batch = batch
        self.future: Future[NetworkOutput] = Future()


class MultiplexingBackend(MultiBackend):
    """lc0's ``multiplexing``: queued requests joined up to ``max_batch`` by each child's
    ``threads`` workers, computed as one batch, the outputs handed back per request."""

    name = "multiplexing"

    def __init__(self, children: list[Child]) -> None:
        super().__init__(children)
        self.info = merged_info(self.name, children, min(c.info.recommended_batch for c in children))
        # lc0's queue: a worker takes requests from the front while they fit in its max_batch and
        # leaves the first one that does not for the next worker (peek, then pop)
        self._queue: deque[_Request] = deque()
        self._ready = threading.Condition()
        self._closing = False
        self._workers: list[threading.Thread] = []
        for child in children:
            for k in range(child.spec.threads):
                t = threading.Thread(
                    target=self._work, args=(child,), daemon=True, name=f"lc0py-mux-{child.spec.backend}-{k}"
                )
                t.start()
                self._workers.append(t)

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        if not self._workers:
            raise Lc0pyError("multiplexing: the backend is closed")
        request = _Request(batch)
        with self._ready:
            if self._closing:  # closed meanwhile: no worker would take it
                raise Lc0pyError("multiplexing: the backend is closed")
            self._queue.append(request)
            self._ready.notify()
        return ChildHandle(self.name, request.future)

    def _work(self, child: Child) -> None:
        limit = child.spec.max_batch
        queue = self._queue
        while True:
            with self._ready:
                while not queue and not self._closing:
                    self._ready.wait()
                if not queue:  # closing, nothing left
                    return
                taken = [queue.popleft()]
                size = len(taken[0].batch)
                # join what is queued, up to max_batch (a larger single request still goes alone)
                while queue and size + len(queue[0].batch) <= limit:
                    size += len(queue[0].batch)
                    taken.append(queue.popleft())
                if queue:
                    self._ready.notify()  # what is left is another worker's
            self._compute(child, taken)

    @staticmethod
    def _compute(child: Child, taken: list[_Request]) -> None:
        try:
            joined = taken[0].batch if len(taken) == 1 else PlanesBatch.concat([r.batch for r in taken])
            out = child.run(joined)
        except Lc0pyError as exc:
            for r in taken:
                r.future.set_exception(exc)
        except BaseException as exc:  # never let a worker die with requests waiting on it
            err = child_error(child.label, exc)
            for r in taken:
                r.future.set_exception(err)
        else:
            start = 0
            for r in taken:
                stop = start + len(r.batch)
                r.future.set_result(slice_output(out, start, stop))
                start = stop

    def prepare(self, max_batch: int) -> None:
        for child in self.children:
            child.prepare(max(max_batch, child.spec.max_batch))

    def close(self) -> None:
        workers, self._workers = self._workers, []
        with self._ready:
            self._closing = True
            self._ready.notify_all()
        for t in workers:
            t.join()
        super().close()
