"""The children of a multi-device backend: created from option groups, run on their own threads.

``Child.feed`` hands a part to the child's ``feeding.ChildFeeder``: launched on the calling thread,
then waited for, read back and copied into the joined output on the child's resolver thread, in
order. That is how ``demux`` and ``roundrobin`` drive their children, so N children's waits,
read-backs and copies overlap instead of taking turns on the caller's thread. ``Child.submit``
starts a batch on the caller's thread and returns a handle whose ``result()`` waits there (the
bulk evaluator's per-device threads, ``multiplexing``'s workers): host children (which compute
inside ``evaluate``) run on a single worker thread of their own, device children
(``asynchronous``: ``evaluate_async`` only queues the batch) are called under a lock, so no
backend is ever entered by two threads at once, as the ``Backend`` protocol requires. Any failure
becomes one ``Lc0pyError`` naming the child.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lc0py.backends.base import Backend, BackendInfo, NetworkOutput, PendingOutput, PlanesBatch
from lc0py.backends.multi.feeding import ChildFeeder, FeederProfile, PartSink, check_rows, child_error
from lc0py.backends.option_groups import OptionGroup
from lc0py.backends.options import BackendOptions, to_int
from lc0py.errors import BackendOptionError, Lc0pyError

if TYPE_CHECKING:
    from lc0py.weights.network import Network
    from lc0py.weights.residual import ResidualNetwork

#: keys the multi-device backends read themselves (from a group or its parents); children never
#: see them
MULTI_KEYS = ("backend", "minimum-split-size")
#: keys lc0 shares between a multi-device backend and its children (each reads the same value):
#: ``threads`` (also ONNX Runtime's CPU threads) and ``max_batch`` (also the GPU backends' largest
#: batch); a child gets them only if its backend takes them, as lc0's backends ignore the rest
SHARED_KEYS = ("threads", "max_batch")


def _takes(backend: str, key: str) -> bool:
    if key == "threads":
        return backend.startswith("onnx")
    return backend in ("gpu", "cuda", "cuda-fp16", "rocm", "rocm-fp16")


class ChildHandle:
    """A batch in flight on one child; ``result()`` re-raises a failure as one ``Lc0pyError``
    (an output of other than ``rows`` rows too, when given)."""

    def __init__(
        self, label: str, inner: PendingOutput | Future[NetworkOutput], rows: int | None = None
    ) -> None:
        self._label = label
        self._inner = inner
        self._rows = rows

    def result(self) -> NetworkOutput:
        try:
            out = self._inner.result()
        except Lc0pyError as exc:
            raise Lc0pyError(f"{self._label}: {exc}") from None
        except Exception as exc:
            raise child_error(self._label, exc) from None
        return out if self._rows is None else check_rows(self._label, out, self._rows)

    def done(self) -> bool:
        return bool(self._inner.done())


class FailedHandle:
    """A submission that failed at once (the error is raised by ``result``, in batch order)."""

    def __init__(self, error: Lc0pyError) -> None:
        self._error = error

    def result(self) -> NetworkOutput:
        raise self._error

    def done(self) -> bool:
        return True


@dataclass
class ChildSpec:
    """What one group asks for: the backend name, its options and lc0's ``threads``."""

    label: str
    backend: str
    options: BackendOptions
    threads: int
    max_batch: int


class Child:
    """One child backend and the thread(s) that feed it."""

    def __init__(self, spec: ChildSpec, backend: Backend) -> None:
        self.spec = spec
        self.label = spec.label
        self.backend = backend
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._feeder: ChildFeeder | None = None  # started by the first ``feed``
        self._closed = False
        if not backend.info.asynchronous:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"lc0py-{spec.backend}")

    @property
    def info(self) -> BackendInfo:
        return self.backend.info

    def _compute(self, batch: PlanesBatch) -> NetworkOutput:
        with self._lock:
            return self.backend.evaluate(batch)

    def submit(self, batch: PlanesBatch) -> ChildHandle | FailedHandle:
        """Start ``batch`` on this child; never blocks on a device."""
        if self._executor is not None:
            return ChildHandle(self.label, self._executor.submit(self._compute, batch), len(batch))
        try:
            with self._lock:
                return ChildHandle(self.label, self.backend.evaluate_async(batch), len(batch))
        except Lc0pyError as exc:
            return FailedHandle(Lc0pyError(f"{self.label}: {exc}"))
        except Exception as exc:
            return FailedHandle(child_error(self.label, exc))

    def feed(self, batch: PlanesBatch, sink: PartSink, launch_here: bool = False) -> None:
        """Queue ``batch`` on this child's threads; ``sink`` receives its outputs or its error.
        Returns at once (``batch`` must stay unchanged until the sink has them). With
        ``launch_here`` the batch is launched on the calling thread first, and only its wait and
        read-back go to the child's thread (``ChildFeeder.launch_here``); a host child, which computes
        inside ``evaluate_async``, is launched by the child's own launcher thread all the same."""
        feeder = self._feeder
        if feeder is None:
            with self._lock:
                if self._closed:
                    raise Lc0pyError(f"{self.label}: the backend is closed")
                feeder = self._feeder = ChildFeeder(self.label, self.backend, self._lock)
        if launch_here and self.backend.info.asynchronous:  # a host child computes when launched
            feeder.launch_here(batch, sink)
        else:
            feeder.put(batch, sink)

    def profile(self) -> FeederProfile:
        """The child thread's host times (zeros before the first ``feed``)."""
        return self._feeder.profile() if self._feeder is not None else FeederProfile(self.label)

    def reset_profile(self) -> None:
        if self._feeder is not None:
            self._feeder.reset_profile()

    def run(self, batch: PlanesBatch) -> NetworkOutput:
        """Compute ``batch`` on the calling thread and wait for it (multiplexing's workers)."""
        if self._executor is None:
            return self.submit(batch).result()
        try:
            out = self._compute(batch)
        except Lc0pyError as exc:
            raise Lc0pyError(f"{self.label}: {exc}") from None
        except Exception as exc:
            raise child_error(self.label, exc) from None
        return check_rows(self.label, out, len(batch))

    def prepare(self, max_batch: int) -> None:
        prepare = getattr(self.backend, "prepare", None)
        if prepare is not None:
            with self._lock:
                prepare(max_batch)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        if self._feeder is not None:  # every part handed over settles first
            self._feeder.close()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self.backend.close()


def child_specs(kind: str, options: BackendOptions) -> list[ChildSpec]:
    """One spec per option group (none: one child from the top-level options, as lc0 does)."""
    root = options.root if options.root is not None else OptionGroup(values=dict(options.values))
    # the top-level values still present (``policy_head`` and friends were taken by the registry)
    root.values = dict(options.values)
    groups = list(options.groups) or [root]
    specs = []
    for number, group in enumerate(groups):
        label = f"{kind} child {number}" if group is root else f"{kind} {group.label()}"
        merged = group.inherited()
        name = merged.get("backend") or ("" if group.anonymous or group is root else group.name)
        if not name:
            name = "auto"
        name = name.strip().lower()
        if name in ("demux", "roundrobin", "multiplexing") and group is root:
            raise BackendOptionError(f"--backend-opts: {label}: '{kind}' cannot be its own child")
        threads = to_int(f"{label}: threads", merged.get("threads", "1"), 1, 64)
        max_batch = to_int(f"{label}: max_batch", merged.get("max_batch", "256"), 1, 1 << 20)
        child_values = {
            k: v
            for k, v in merged.items()
            if k not in MULTI_KEYS and (k not in SHARED_KEYS or _takes(name, k))
        }
        child_options = BackendOptions(
            child_values,
            name,
            list(group.groups) if group is not root else [],
            group if group is not root else None,
        )
        specs.append(ChildSpec(label, name, child_options, threads, max_batch))
    return specs


def create_children(
    kind: str, network: Network | ResidualNetwork | None, options: BackendOptions
) -> list[Child]:
    """The children of ``options``' groups, each through the registry; a failure closes those
    already made and names its group."""
    from lc0py.backends.registry import create_backend

    specs = child_specs(kind, options)
    options.groups = []
    options.values.clear()  # every top-level key was inherited by the children
    children: list[Child] = []
    try:
        for spec in specs:
            try:
                backend = create_backend(spec.backend, network, spec.options)
            except Lc0pyError as exc:
                raise type(exc)(f"{spec.label}: {exc}") from None
            children.append(Child(spec, backend))
    except BaseException:
        for child in children:
            child.close()
        raise
    return children


def merged_info(kind: str, children: list[Child], recommended_batch: int) -> BackendInfo:
    """The children's common ``BackendInfo``; children that disagree on the planes they take or
    the heads they have are refused (one net, one encoding)."""
    first = children[0].info
    for child in children[1:]:
        info = child.info
        if (info.input_format, info.has_wdl, info.has_moves_left) != (
            first.input_format,
            first.has_wdl,
            first.has_moves_left,
        ):
            raise BackendOptionError(
                f"--backend-opts: {child.label}: input format {info.input_format}, wdl {info.has_wdl}, "
                f"moves-left {info.has_moves_left} differ from {children[0].label}'s "
                f"({first.input_format}, {first.has_wdl}, {first.has_moves_left})"
            )
    return BackendInfo(
        first.input_format, first.has_wdl, first.has_moves_left, recommended_batch, asynchronous=True
    )
