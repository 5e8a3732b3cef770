"""Each child's waits, read-backs and joins on a thread of its own; the caller only launches.

Before this module the caller's thread (the search's feeder, backendbench, ``Net.evaluate_many``)
did every child's host work in turn: ``evaluate_async`` of part 0, 1, ... (the host copy into
pinned memory, the upload, the graph launch), then, in ``result()``, each part's event wait and
``read_outputs`` in part order, then ``np.concatenate`` of the parts (7.6 MB a 4 x 256 batch,
30 MB a 4 x 1024 one). Now a ``ChildFeeder`` per child has a resolver thread that waits for that
child's oldest part, reads it back and delivers it to the part's sink: for a split batch its rows
are copied into its slice of the batch's ``JoinedOutput`` (numpy copies without the GIL, so the
children's copies overlap), and the batch's handle settles when its last part has. The launch
stays on the caller's thread (``backends.CHILD_FEEDING`` "resolve", which "auto" takes for all
but small ``demux`` batches): it never blocks
on a device (up to the GPU runner's two slots a child) and takes ~0.1 ms; a launcher thread per
child as well (``"threads"``, ``ChildFeeder.put``) costs one more thread hand-off a part, which on
the 2-core CI machine left the simulated devices idle far more (4 x 64 a batch: 25-35k nps
against 101k; scripts/bench/demux_profile.py --paths caller,resolve,threads).

Order: each child's parts are launched and resolved in the order they were queued; each batch's
handle (``OneOutput``, ``JoinedOutput``) settles when all its parts have, so a caller reading
results in submission order gets them in that order whatever the children's speeds.

Failures: an exception in a child's ``evaluate_async`` or ``result`` (or a part, whole batches
too, that comes back with another number of rows than it went with) settles that part with one
``Lc0pyError`` naming the child; the batch's ``result()`` raises the first failing part's error
once every part has settled (no part is left running on a buffer the caller might free), and the
other children go on. ``close`` queues an end marker behind every part already handed over, so
each one still settles, and joins the thread; a part whose launch was under way meanwhile is
resolved by the thread that launched it.

Ownership: a ``JoinedOutput``'s arrays come from an ``OutputPool`` that reuses their memory only
after every array viewing it has been collected, so an output the caller keeps is never
overwritten by a later batch. A one-part batch hands the child's own output through unchanged
(the GPU runner's pooled pinned policy, no copy).
"""

from __future__ import annotations

import ctypes
import threading
import time
import weakref
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from lc0py.backends.base import POLICY_SIZE, NetworkOutput, PendingOutput, PlanesBatch, SettledOutput
from lc0py.errors import Lc0pyError

if TYPE_CHECKING:
    from lc0py.backends.base import Backend

#: Parts a child's thread keeps launched on its device before waiting for the oldest: the GPU
#: runner's two pinned host slots (a third launch would wait for the first slot's result anyway).
LAUNCH_DEPTH = 2


def child_error(label: str, exc: BaseException) -> Lc0pyError:
    """One ``Lc0pyError`` line for a failure inside child ``label``."""
    if isinstance(exc, Lc0pyError):
        return Lc0pyError(f"{label}: {exc}")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Lc0pyError(f"{label}: {text}")


def check_rows(label: str, out: NetworkOutput, rows: int) -> NetworkOutput:
    """``out`` when it has the ``rows`` it was asked for, else one ``Lc0pyError`` naming child
    ``label``: a short output read as the whole would be read past its end (the search's and
    bulk-eval's compiled readers do no bounds checks)."""
    if len(out) != rows:
        raise Lc0pyError(f"{label}: returned {len(out)} rows for a part of {rows}")
    return out


class PartSink(Protocol):
    """Where a child's thread delivers one part's outputs (or the error in their place)."""

    def deliver(self, out: NetworkOutput | None, error: Lc0pyError | None) -> None: ...


class OneOutput(SettledOutput):
    """The handle of a batch that went whole to one child: its output as the child gave it."""

    __slots__ = ()


class OutputPool:
    """Memory for joined outputs, reused only once nothing can read it any more.

    ``arrays(rows)`` returns the policy, WDL and moves-left arrays of one batch, views of one
    block of float32s (its rows rounded up to a power of two). A ``ctypes`` object owns the views
    (numpy's view bases stop at it), and a ``weakref.finalize`` on it hands the block back when
    the last array viewing it is collected, as ``GpuRunner``'s pinned policy pool does: an output
    kept by the caller (an NN cache, a list of results) is never overwritten, and a released one
    is reused without a fresh allocation (a 4 x 1024 batch's 30 MB, page-faulted in again each
    time, cost ~1 ms of CPU more than a reused block on this machine). At most ``keep`` free
    blocks a size are held."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._free: dict[int, list[np.ndarray]] = {}
        self._lock = threading.Lock()

    def arrays(self, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cap = 1 << max(0, rows - 1).bit_length()
        floats = cap * (POLICY_SIZE + 3 + 1)
        with self._lock:
            free = self._free.get(floats)
            block = free.pop() if free else None
        if block is None:
            block = np.empty(floats, np.float32)
        owner = (ctypes.c_float * floats).from_address(block.ctypes.data)
        weakref.finalize(owner, self._release, block)
        flat = np.ctypeslib.as_array(owner)
        policy = flat[: rows * POLICY_SIZE].reshape(rows, POLICY_SIZE)
        wdl_at = cap * POLICY_SIZE
        wdl = flat[wdl_at : wdl_at + rows * 3].reshape(rows, 3)
        mlh_at = wdl_at + cap * 3
        return policy, wdl, flat[mlh_at : mlh_at + rows]

    def _release(self, block: np.ndarray) -> None:
        with self._lock:
            free = self._free.setdefault(block.size, [])
            if len(free) < self.keep:
                free.append(block)

    def free_blocks(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._free.values())


class JoinedOutput:
    """The handle of a batch split into parts: each part's rows are copied into its slice of
    arrays allocated for this batch, on the child's thread; ``result()`` waits for every part
    and raises the first failing part's error (in part order)."""

    def __init__(self, rows: int, parts: int, pool: OutputPool | None = None) -> None:
        self.policy, self.wdl, self.moves_left = (pool or OutputPool()).arrays(rows)
        self._left = parts
        self._errors: dict[int, Lc0pyError] = {}
        self._lock = threading.Lock()
        self._ready = threading.Event()

    def part(self, index: int, start: int, stop: int) -> _JoinedPart:
        """The sink of part ``index``: rows ``start:stop`` of the batch."""
        return _JoinedPart(self, index, start, stop)

    def _settle(self, index: int, error: Lc0pyError | None) -> None:
        with self._lock:
            if error is not None:
                self._errors[index] = error
            self._left -= 1
            if self._left == 0:
                self._ready.set()

    def done(self) -> bool:
        return self._ready.is_set()

    def result(self) -> NetworkOutput:
        self._ready.wait()
        if self._errors:
            raise self._errors[min(self._errors)]
        return NetworkOutput(self.policy, self.wdl, self.moves_left)


class _JoinedPart:
    __slots__ = ("_index", "_joined", "_start", "_stop")

    def __init__(self, joined: JoinedOutput, index: int, start: int, stop: int) -> None:
        self._joined, self._index, self._start, self._stop = joined, index, start, stop

    def deliver(self, out: NetworkOutput | None, error: Lc0pyError | None) -> None:
        """Copy ``out`` into the part's rows and settle the part; a part that does not fit
        raises (unsettled: the caller delivers the error in its place)."""
        if out is not None and error is None:
            j, a, b = self._joined, self._start, self._stop
            if len(out) != b - a:
                raise ValueError(f"returned {len(out)} rows for a part of {b - a}")
            # numpy copies these without the GIL: the children's copies overlap
            np.copyto(j.policy[a:b], out.policy, casting="same_kind")
            np.copyto(j.wdl[a:b], out.wdl, casting="same_kind")
            np.copyto(j.moves_left[a:b], out.moves_left, casting="same_kind")
        self._joined._settle(self._index, error)


@dataclass
class FeederProfile:
    """One child thread's times (seconds) since its last reset: where its host work goes."""

    child: str
    parts: int = 0
    rows: int = 0
    launch_s: float = 0.0  # evaluate_async: host copy into pinned memory, upload, launch
    wait_s: float = 0.0  # result(): the device wait and the read-back
    deliver_s: float = 0.0  # copying the part into the joined output
    starved_s: float = 0.0  # nothing launched or being launched: the child idle, waiting for the caller
    max_launched: int = 0
    cpu_s: float = 0.0  # the thread's CPU time


#: A launched part: its sink, the child's pending result (or None), the launch's error (or None).
_Launched = tuple[PartSink, PendingOutput | None, Lc0pyError | None, int]


class ChildFeeder:
    """A resolver thread (``lc0py-resolve-LABEL``) that waits for one child's launched parts in
    the order they were launched and delivers them; the parts are launched either by the caller
    (``launch_here``) or by a launcher thread of the feeder's own (``put``; started on first use),
    which launches each queued part as soon as fewer than ``LAUNCH_DEPTH`` are unresolved, so a
    part queued while the resolver waits on the device goes up behind the one computing.

    ``backend`` is entered only under ``lock`` (the launcher, ``launch_here``'s caller,
    ``Child.submit``, ``prepare``), as the ``Backend`` protocol requires; the resolver only calls
    the launched handles' ``result()`` (the GPU runner's handles take a lock of their own). A host
    backend (``asynchronous`` False) computes inside ``evaluate_async``, so the launcher keeps one
    of its parts outstanding at a time."""

    def __init__(self, label: str, backend: Backend, lock: threading.Lock) -> None:
        self.label = label
        self._backend = backend
        self._lock = lock
        self._depth = LAUNCH_DEPTH if backend.info.asynchronous else 1
        self._queue: deque[tuple[PlanesBatch, PartSink] | None] = deque()
        self._launched: deque[_Launched | None] = deque()
        self._outstanding = 0  # launched (or being launched) and not yet delivered
        self._cond = threading.Condition()
        self._closed = False
        self._ended = False  # the resolver's end marker is queued: a part launched now settles here
        self.stats = FeederProfile(label)
        self._cpu_base = 0.0
        resolver = threading.Thread(target=self._resolve_loop, name=f"lc0py-resolve-{label}", daemon=True)
        self._threads = [resolver]
        self._threads[0].start()
        self._launcher: threading.Thread | None = None  # started by the first ``put``

    def put(self, batch: PlanesBatch, sink: PartSink) -> None:
        """Queue ``batch`` for this child's launcher; ``sink`` gets its outputs. ``batch`` must
        stay unchanged until the sink is delivered."""
        with self._cond:
            if self._closed:
                raise Lc0pyError(f"{self.label}: the backend is closed")
            if self._launcher is None:
                self._launcher = threading.Thread(
                    target=self._launch_loop, name=f"lc0py-launch-{self.label}", daemon=True
                )
                self._threads.append(self._launcher)
                self._launcher.start()
            self._queue.append((batch, sink))
            self._cond.notify_all()

    def launch_here(self, batch: PlanesBatch, sink: PartSink) -> None:
        """Launch ``batch`` on the calling thread (under the child's lock) and queue it for the
        resolver: the caller pays the launch, the wait and the read-back do not hold it up. Not
        to be mixed with ``put`` on one child (the order between the two is not kept)."""
        with self._cond:
            if self._closed:
                raise Lc0pyError(f"{self.label}: the backend is closed")
            self._outstanding += 1
            self.stats.max_launched = max(self.stats.max_launched, self._outstanding)
        self._hand_over(self._launch(batch, sink))

    def _hand_over(self, launched: _Launched) -> None:
        """Queue a launched part for the resolver; once its end marker is queued (``close`` or a
        broken thread while the part was being launched) the part is resolved on this thread, as
        nothing would deliver it behind the marker."""
        with self._cond:
            late = self._ended
            if not late:
                self._launched.append(launched)
                self._cond.notify_all()
        if late:
            self._resolve(*launched)

    def _launch_loop(self) -> None:
        item: tuple[PlanesBatch, PartSink] | None = None
        try:
            while True:
                with self._cond:
                    while not self._may_launch():
                        self._cond.wait()
                    item = self._queue.popleft()
                    if item is None:  # closing: the resolver ends behind every launched part
                        self._launched.append(None)
                        self._ended = True
                        self._cond.notify_all()
                        return
                    self._outstanding += 1
                    self.stats.max_launched = max(self.stats.max_launched, self._outstanding)
                launched = self._launch(*item)
                item = None
                self._hand_over(launched)
        except BaseException as exc:  # a bug here must not leave a caller waiting forever
            self._fail(child_error(self.label, exc), [item] if item is not None else [])
            raise

    def _may_launch(self) -> bool:
        """(lock held) Something queued, and room for it (the end marker always goes)."""
        return bool(self._queue) and (self._queue[0] is None or self._outstanding < self._depth)

    def _resolve_loop(self) -> None:
        try:
            while True:
                with self._cond:
                    if not self._launched and not self._outstanding:  # nothing on the device
                        t0 = time.perf_counter()
                        while not self._launched:
                            self._cond.wait()
                        self.stats.starved_s += time.perf_counter() - t0
                    while not self._launched:
                        self._cond.wait()
                    launched = self._launched.popleft()
                if launched is None:
                    return
                self._resolve(*launched)
                with self._cond:
                    self._outstanding -= 1
                    self._cond.notify_all()
        except BaseException as exc:
            self._fail(child_error(self.label, exc), [])
            raise

    def _fail(self, error: Lc0pyError, taken: list[tuple[PlanesBatch, PartSink]]) -> None:
        """(a broken thread) Settle every part still here with ``error``; refuse new ones."""
        with self._cond:
            self._closed = True
            sinks = [sink for _, sink in taken]
            sinks += [i[1] for i in self._queue if i is not None]
            sinks += [i[0] for i in self._launched if i is not None]
            self._queue.clear()
            self._launched.clear()
            self._launched.append(None)  # the resolver, if alive, ends
            self._ended = True
            self._queue.append(None)  # and so does the launcher, if any
            self._cond.notify_all()
        for sink in sinks:
            sink.deliver(None, error)

    def _launch(self, batch: PlanesBatch, sink: PartSink) -> _Launched:
        t0 = time.perf_counter()
        try:
            with self._lock:
                pending = self._backend.evaluate_async(batch)
        except BaseException as exc:
            return sink, None, child_error(self.label, exc), len(batch)
        finally:
            self.stats.launch_s += time.perf_counter() - t0
        return sink, pending, None, len(batch)

    def _resolve(
        self, sink: PartSink, pending: PendingOutput | None, error: Lc0pyError | None, rows: int
    ) -> None:
        out = None
        t0 = time.perf_counter()
        if pending is not None:
            try:
                out = pending.result()
            except BaseException as exc:
                error = child_error(self.label, exc)
        if out is not None and error is None:  # a whole batch is handed through, not copied
            try:
                check_rows(self.label, out, rows)
            except Lc0pyError as exc:
                out, error = None, exc
        t1 = time.perf_counter()
        try:
            sink.deliver(out, error)
        except BaseException as exc:  # a copy that failed: the part still settles
            sink.deliver(None, child_error(self.label, exc))
        s = self.stats
        s.wait_s += t1 - t0
        s.deliver_s += time.perf_counter() - t1
        s.parts += 1
        s.rows += rows

    def profile(self) -> FeederProfile:
        """The threads' times since ``reset_profile`` (CPU time where the OS gives it)."""
        stats = FeederProfile(**asdict(self.stats))
        stats.cpu_s = self._threads_cpu() - self._cpu_base
        return stats

    def reset_profile(self) -> None:
        self.stats = FeederProfile(self.label)
        self._cpu_base = self._threads_cpu()

    def _threads_cpu(self) -> float:
        clock = getattr(time, "pthread_getcpuclockid", None)
        total = 0.0
        for t in self._threads:
            if clock is None or t.ident is None or not t.is_alive():
                continue
            try:
                total += time.clock_gettime(clock(t.ident))
            except OSError:
                pass
        return total

    def close(self) -> None:
        """Every part handed over settles, then the threads end (joined)."""
        with self._cond:
            if not self._closed:
                self._closed = True
                if self._launcher is not None:
                    self._queue.append(None)  # the launcher passes the end on to the resolver
                else:
                    self._launched.append(None)
                    self._ended = True
                self._cond.notify_all()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join()
