"""``demux``, ``roundrobin`` and ``multiplexing``: one batch interface over several children.

All three are asynchronous (``BackendInfo.asynchronous``): ``evaluate_async`` hands the work to
the children's threads and returns, so the search and the bulk evaluator keep several batches in
flight, and every child (every GPU) has work queued. Results always come back in the order the
positions went in.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from concurrent.futures import Future

import numpy as np

from lc0py.backends.base import BackendBase, NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.multi.children import Child, ChildHandle, FailedHandle, child_error, merged_info
from lc0py.errors import Lc0pyError


def slice_batch(batch: PlanesBatch, start: int, stop: int) -> PlanesBatch:
    return PlanesBatch(batch.masks[start:stop], batch.values[start:stop])


def join_outputs(outputs: list[NetworkOutput]) -> NetworkOutput:
    if len(outputs) == 1:
        return outputs[0]
    return NetworkOutput(
        np.concatenate([o.policy for o in outputs]),
        np.concatenate([o.wdl for o in outputs]),
        np.concatenate([o.moves_left for o in outputs]),
    )


def slice_output(out: NetworkOutput, start: int, stop: int) -> NetworkOutput:
    return NetworkOutput(out.policy[start:stop], out.wdl[start:stop], out.moves_left[start:stop])


class JoinedHandle:
    """The parts of one batch, in order; ``result`` joins them (the first failure is raised)."""

    def __init__(self, parts: list[ChildHandle | FailedHandle]) -> None:
        self._parts = parts

    def result(self) -> NetworkOutput:
        return join_outputs([p.result() for p in self._parts])

    def done(self) -> bool:
        return all(p.done() for p in self._parts)


class MultiBackend(BackendBase):
    """What the three share: the children, ``is_cpu``, ``prepare`` and ``close``."""

    name = "multi"

    def __init__(self, children: list[Child]) -> None:
        self.children = children
        self.is_cpu = all(_is_cpu(c) for c in children)
        self._counter = itertools.count()

    def _next_child(self) -> Child:
        return self.children[next(self._counter) % len(self.children)]

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

    def __init__(self, children: list[Child], minimum_split_size: int = 0) -> None:
        super().__init__(children)
        self.minimum_split_size = minimum_split_size
        self.parts = sum(c.spec.threads for c in children)
        smallest = min(c.info.recommended_batch for c in children)
        self.info = merged_info(self.name, children, smallest * self.parts)

    def part_size(self, positions: int) -> int:
        """lc0's ``partial_size_``: ceil(B / threads), raised to ``minimum-split-size``."""
        size = -(-positions // self.parts)
        if size < self.minimum_split_size:
            size = min(positions, self.minimum_split_size)
        return max(1, size)

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        n = len(batch)
        if n == 0:
            return self.children[0].submit(batch)
        size = self.part_size(n)
        parts = [
            self._next_child().submit(slice_batch(batch, s, min(n, s + size))) for s in range(0, n, size)
        ]
        return JoinedHandle(parts)

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
        return self._next_child().submit(batch)


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
        except Exception as exc:  # never let a worker die with requests waiting on it
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
