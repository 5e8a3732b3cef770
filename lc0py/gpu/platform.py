"""The GPU platform interface: everything the GPU backend needs from a vendor runtime.

One small abstract class, implemented by ``cuda_platform.CudaPlatform`` (CUDA driver API, NVRTC,
cuBLAS) and ``hip_platform.HipPlatform`` (HIP, hiprtc, hipBLAS/rocBLAS). The GPU backends'
network code (``lc0py/backends/gpu/``), the attention operator (``lc0py/attention/gpu.py``) and
the kernels (``kernels/*.hip``, single-source HIP C++) only talk to this, so the forward pass is
written once for both vendors. One platform is one device (the backends' ``gpu=N``).

Conventions (both implementations follow them exactly):

* Handles are plain Python ``int``\\ s (device pointers, stream/event/graph handles, function
  handles), so no vendor type leaks out and ``0`` means "null" / the default stream.
* Every vendor call's status is checked; a failure raises ``GpuError`` naming the call and the
  vendor's error string. Compile failures raise ``lc0py.errors.KernelCompileError`` carrying the
  compiler log.
* All copies and launches are asynchronous on the given stream; only ``synchronize`` /
  ``Event.synchronize`` / ``free`` block.
* GEMMs are described in **row-major** terms (numpy's ``C = A @ B``), whatever the library's own
  convention: ``C[M,N] = alpha * op(A)[M,K] @ op(B)[K,N] + beta * C``, ``op(X) = X.T`` when the
  matching ``trans_*`` flag is set. ``lda``/``ldb``/``ldc`` are row strides *in elements* of the
  matrices as stored (e.g. a weight ``W[out, in]`` used as ``x @ W.T`` is ``B`` with
  ``trans_b=True`` and ``ldb = in``). ``dtype`` ``"fp16"``: fp16 in/out with fp32 accumulation;
  ``"fp32"``: fp32 in/out, fp32 arithmetic (no TF32: the fp32 backend is the accuracy backend).
* Kernel arguments are ``ctypes`` scalars (``c_void_p`` for pointers, ``c_int``, ``c_float``, …)
  in the kernel's parameter order.

Nothing here imports a vendor package, and nothing here imports a vendor module of this package:
the vendors import this contract, and ``lc0py.gpu.factory.create_platform`` picks one.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from lc0py.errors import BackendOptionError, Lc0pyError

KernelArg = (
    ctypes.c_void_p | ctypes.c_int | ctypes.c_uint | ctypes.c_float | ctypes.c_int64 | ctypes.c_uint64
    | ctypes.c_longlong
)
Dim3 = tuple[int, int, int]


# Matrix-core families of kernels/mma_amd.h, by arch (the #if there tests the same list).
MFMA_ARCHS = ("gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950")


def amd_mma_kind(arch: str) -> str | None:
    """``"wmma"`` (RDNA3/3.5 gfx11*, RDNA4 gfx12*), ``"mfma"`` (CDNA) or ``None`` (no branch in
    mma_amd.h: gfx10, gfx900/906), for an arch or a full target id ("gfx90a:sramecc+:xnack-")."""
    base = arch.split(":")[0]
    if base.startswith(("gfx11", "gfx12")):
        return "wmma"
    if base in MFMA_ARCHS:
        return "mfma"
    return None


def mma_kind(vendor: str, arch: str) -> str | None:
    """The matrix-core branch of ``kernels/mma.h`` a device compiles: ``"mma.sync"`` (NVIDIA
    sm_80+: m16n8k16 and cp.async), ``"wmma"`` / ``"mfma"`` (AMD, ``mma_amd.h``), or ``None``
    (no branch: the fp16 flash kernel is not used there)."""
    if vendor == "nvidia":
        digits = "".join(ch for ch in arch if ch.isdigit())
        return "mma.sync" if digits and int(digits) >= 80 else None
    if vendor == "amd":
        return amd_mma_kind(arch)
    return None


def mma_unavailable(vendor: str, arch: str) -> str:
    """Why ``mma_kind(vendor, arch)`` is None (empty when it is not)."""
    if mma_kind(vendor, arch) is not None:
        return ""
    if vendor == "nvidia":
        return f"{arch} < sm_80: no mma.sync.m16n8k16 / cp.async"
    if vendor == "amd":
        return f"{arch}: no WMMA/MFMA branch in mma_amd.h"
    return f"unknown vendor {vendor}"


def mma_scratch_elems(vendor: str, arch: str) -> int:
    """fp16 elements of shared-memory scratch per warp that ``lc0mma::a_from_c`` needs on the
    device's branch (``SCRATCH_ELEMS`` in kernels/mma.h): 0 where the accumulator layout already
    is the A-operand layout (NVIDIA mma.sync), 256 elsewhere (AMD branches, the scalar
    reference). Kernels ``static_assert`` the value they are compiled with against their own."""
    return 0 if mma_kind(vendor, arch) == "mma.sync" else 256


class GpuError(Lc0pyError):
    """A vendor runtime call failed (out of memory, launch failure, ...): names the call."""


def ordinal_error(device: int, count: int, runtime: str) -> BackendOptionError:
    """The one line for a ``gpu=N`` this machine does not have: ``gpu=3: this machine has 1 CUDA
    device (0)`` (``runtime``: "CUDA", "ROCm")."""
    plural = "" if count == 1 else "s"
    valid = ", ".join(map(str, range(count))) if count <= 4 else f"0..{count - 1}"
    return BackendOptionError(f"gpu={device}: this machine has {count} {runtime} device{plural} ({valid})")


@dataclass(frozen=True)
class DeviceInfo:
    """Properties of the selected device that kernels and tuning depend on."""

    vendor: str  # "nvidia" | "amd"
    index: int
    name: str  # e.g. "NVIDIA H100 80GB HBM3", "AMD Radeon RX 7900 XTX"
    arch: str  # compiler target: "sm_90", "sm_80", "gfx1100", "gfx90a", ...
    sm_count: int  # multiprocessors / compute units
    warp_size: int  # 32 (NVIDIA, RDNA wave32) or 64 (CDNA)
    shared_mem_per_block: int  # bytes a block gets without opting in (48 KiB on NVIDIA)
    shared_mem_per_block_optin: int  # largest dynamic shared memory after opting in
    total_memory: int  # bytes of device memory
    l2_bytes: int = 0

    @property
    def arch_number(self) -> int:
        """``sm_90`` → 90, ``gfx1100`` → 1100 (for "at least" comparisons within a vendor)."""
        digits = "".join(ch for ch in self.arch if ch.isdigit())
        return int(digits) if digits else 0

    @property
    def mma_kind(self) -> str | None:
        """The matrix-core branch of kernels/mma.h this device compiles (``mma_kind``)."""
        return mma_kind(self.vendor, self.arch)

    @property
    def mma_scratch_elems(self) -> int:
        """Per-warp ``a_from_c`` scratch of that branch, in fp16 elements (``mma_scratch_elems``)."""
        return mma_scratch_elems(self.vendor, self.arch)


@dataclass(frozen=True)
class Event:
    """A device event: ``handle`` is the vendor's event handle."""

    handle: int
    platform: Platform

    def record(self, stream: int) -> None:
        self.platform.event_record(self.handle, stream)

    def synchronize(self) -> None:
        self.platform.event_synchronize(self.handle)

    def query(self) -> bool:
        """``True`` once all work before the recorded point has finished."""
        return self.platform.event_query(self.handle)

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to ``end`` (both recorded, created with ``timing=True``)."""
        return self.platform.event_elapsed_ms(self.handle, end.handle)


class HostBuffer:
    """Pinned (page-locked) host memory viewed as a numpy array, for async copies.

    ``array`` is a flat ``uint8`` view; ``view(dtype, shape)`` gives typed views of its start.
    ``free_host`` sets ``ptr`` to 0, which also drops ``array``: a view asked of a freed buffer
    is refused instead of reading (or letting a copy write) memory the allocator may have handed
    to anything else. Views taken before the free still point at it: their owner must not use
    them afterwards.
    """

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.nbytes = nbytes
        self.array = np.empty(0, np.uint8)
        self.ptr = ptr

    @property
    def ptr(self) -> int:
        """The buffer's address (0 once freed)."""
        return self._ptr

    @ptr.setter
    def ptr(self, ptr: int) -> None:
        self._ptr = ptr
        self.array = (
            np.ctypeslib.as_array((ctypes.c_uint8 * self.nbytes).from_address(ptr))
            if ptr and self.nbytes
            else np.empty(0, np.uint8)
        )

    def view(self, dtype: np.dtype | type, shape: tuple[int, ...]) -> np.ndarray:
        if not self._ptr:
            raise ValueError("host buffer already freed")
        dt = np.dtype(dtype)
        n = math.prod(shape) * dt.itemsize  # np.prod of a tuple costs ~10 us, 4 views a batch
        if n > self.nbytes:
            raise ValueError(f"host buffer of {self.nbytes} bytes cannot hold {shape} {dt}")
        return self.array[:n].view(dt).reshape(shape)


#: Per thread: a weak reference to the platform whose device was last made current there.
_bound = threading.local()


class Platform(ABC):
    """One device of one vendor: memory, streams, events, run-time compilation, launches, BLAS,
    graphs. Created by ``factory.create_platform``; not thread-safe (one backend drives it)."""

    vendor: str  # "nvidia" | "amd"
    info: DeviceInfo
    #: binary format produced by ``compile`` ("cubin", "hsaco"); part of the kernel cache key
    binary_kind: str

    def bind_thread(self) -> None:
        """Make this device current for the calling thread. Driver-API contexts and HIP's device
        selection are per thread: a backend created on one thread and fed from another (the
        search thread, an evaluation thread) calls this at each entry point; cheap when bound.

        What is current is tracked per thread across all platforms, not per platform: two
        backends on two devices (``gpu=0``, ``gpu=1``) fed from one thread each rebind when the
        other has made its own device current there in between."""
        current = getattr(_bound, "platform", None)
        if current is None or current() is not self:
            self._bind_current_thread()
            _bound.platform = weakref.ref(self)

    def _bind_current_thread(self) -> None:
        """Vendor hook for ``bind_thread`` (nothing to do by default)."""
        return None

    @contextlib.contextmanager
    def borrowing_thread(self) -> Iterator[None]:
        """This device current inside the block, the thread's own device again after it. For work
        done on whatever thread runs it (a garbage-collection finalizer: the last view of a
        pooled buffer went away), which may be driving another device (``gpu=N``) between its
        own ``bind_thread`` and its next driver calls: those must not go to this context."""
        previous = getattr(_bound, "platform", None)
        self.bind_thread()
        try:
            yield
        finally:
            other = previous() if previous is not None else None
            if other is not None and other is not self:
                other.bind_thread()

    def free_host_from_any_thread(self, buf: HostBuffer) -> None:
        """``free_host`` on whatever thread this runs (``borrowing_thread``)."""
        with self.borrowing_thread():
            self.free_host(buf)

    # ---- memory -------------------------------------------------------------------------
    @abstractmethod
    def alloc(self, nbytes: int) -> int:
        """Device memory (plain allocation, never managed); returns the device pointer."""

    @abstractmethod
    def free(self, ptr: int) -> None: ...

    @abstractmethod
    def alloc_host(self, nbytes: int) -> HostBuffer:
        """Pinned host memory (so H2D/D2H copies are truly asynchronous)."""

    @abstractmethod
    def free_host(self, buf: HostBuffer) -> None: ...

    @abstractmethod
    def copy_h2d(self, dst: int, src: np.ndarray | HostBuffer, nbytes: int, stream: int) -> None:
        """Async copy of ``nbytes`` from host ``src`` (contiguous; pinned for real overlap)."""

    @abstractmethod
    def copy_d2h(self, dst: np.ndarray | HostBuffer, src: int, nbytes: int, stream: int) -> None: ...

    @abstractmethod
    def copy_d2d(self, dst: int, src: int, nbytes: int, stream: int) -> None: ...

    @abstractmethod
    def memset(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        """Fill ``nbytes`` with ``byte`` (used to poison buffers in tests, zero pads)."""

    #: Whether ``event_synchronize`` lets other Python threads run while it blocks (the binding
    #: releases the GIL). Then the runner waits for a batch with it; else it polls (runner.py,
    #: ``wait_without_gil``).
    sync_releases_gil: bool = False

    # ---- streams and events -------------------------------------------------------------
    @abstractmethod
    def create_stream(self) -> int:
        """A non-blocking stream (does not synchronise with the legacy default stream)."""

    @abstractmethod
    def destroy_stream(self, stream: int) -> None: ...

    @abstractmethod
    def synchronize(self, stream: int | None = None) -> None:
        """Wait for ``stream`` (``None``: the whole device)."""

    @abstractmethod
    def create_event(self, timing: bool = False) -> Event:
        """An event; ``timing=False`` makes record/query cheaper (no timestamp)."""

    @abstractmethod
    def destroy_event(self, event: Event) -> None: ...

    @abstractmethod
    def event_record(self, event: int, stream: int) -> None: ...

    def stream_wait_event(self, stream: int, event: int) -> None:
        """Make later work on ``stream`` wait for ``event`` (no host wait; legal while capturing a
        graph, where it forks/joins branches). The default says the platform cannot, and the
        network then runs everything on one stream."""
        raise NotImplementedError

    @property
    def can_fork(self) -> bool:
        """Whether ``stream_wait_event`` is implemented (two-stream forward pass)."""
        return type(self).stream_wait_event is not Platform.stream_wait_event

    @abstractmethod
    def event_synchronize(self, event: int) -> None: ...

    @abstractmethod
    def event_query(self, event: int) -> bool: ...

    @abstractmethod
    def event_elapsed_ms(self, start: int, end: int) -> float: ...

    # ---- run-time compilation and launches ---------------------------------------------
    #: Launch kernels with programmatic dependent launch: each may be scheduled while the kernel
    #: before it in the stream still runs, and waits in ``lc0_grid_dependency_sync()`` (every
    #: kernel's first statement) for that kernel's results. Set by the network from ``pdl=``, only
    #: where ``dependent_launch_problem`` finds none. Graphs captured with it keep the overlap.
    dependent_launch: bool = False

    def dependent_launch_problem(self) -> str | None:
        """``None`` where ``dependent_launch`` can be on, else why not (one line)."""
        name = self.info.name
        return f"{name}: programmatic dependent launch needs an NVIDIA GPU of compute capability 9.0+"

    @abstractmethod
    def compiler_version(self) -> str:
        """E.g. ``"nvrtc-13.5"``; part of the kernel cache key."""

    @abstractmethod
    def compile(self, source: str, name: str, options: Sequence[str], headers: dict[str, str]) -> bytes:
        """Compile HIP C++ ``source`` for ``self.info.arch``; returns the loadable binary.

        ``headers`` maps include names to their text (``"mma.h"`` → …), so nothing is read from
        disk by the compiler. ``options`` are extra compiler flags (``-DLC0_...=...``); the
        platform adds its own vendor prelude and arch flags. Raises ``KernelCompileError`` with
        the log on failure.
        """

    @abstractmethod
    def load_module(self, binary: bytes) -> int:
        """Load a compiled binary; returns a module handle."""

    @abstractmethod
    def get_function(self, module: int, name: str) -> int:
        """Kernel handle by its (``extern "C"``) name."""

    @abstractmethod
    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        """Allow ``function`` more than the default dynamic shared memory (no-op if not needed)."""

    @abstractmethod
    def launch(
        self,
        function: int,
        grid: Dim3,
        block: Dim3,
        shared_mem: int,
        stream: int,
        args: Sequence[KernelArg],
    ) -> None:
        """Launch asynchronously; launch errors raise ``GpuError``."""

    # ---- BLAS ---------------------------------------------------------------------------
    @abstractmethod
    def gemm(
        self,
        stream: int,
        m: int,
        n: int,
        k: int,
        a: int,
        lda: int,
        b: int,
        ldb: int,
        c: int,
        ldc: int,
        *,
        dtype: str,
        trans_a: bool = False,
        trans_b: bool = False,
        alpha: float = 1.0,
        beta: float = 0.0,
        batch: int = 1,
        stride_a: int = 0,
        stride_b: int = 0,
        stride_c: int = 0,
        bias: int = 0,
        epilogue: str | None = None,
        sms: int = 0,
    ) -> None:
        """Row-major (strided-batched when ``batch > 1``) GEMM, see the module docstring.

        ``epilogue`` (``None``, ``"bias"``, ``"bias_relu"``) with ``bias`` a device vector of
        ``n`` elements of ``dtype`` adds ``bias[n]`` to every row (then ReLU) in the GEMM's
        epilogue; only allowed where ``supports_epilogue`` says so.
        ``sms`` (0: all): the multiprocessors the GEMM should keep to, a hint for a BLAS whose
        kernels are persistent (one block per multiprocessor, as cuBLAS's on Hopper), so that a
        short branch on another stream finds multiprocessors free instead of waiting for the
        GEMM to end. A BLAS without such a setting ignores it.
        """

    def supports_epilogue(self, epilogue: str) -> bool:
        """Whether ``gemm(..., epilogue=epilogue)`` is available here."""
        return False

    # ---- graphs -------------------------------------------------------------------------
    @abstractmethod
    def begin_capture(self, stream: int) -> None:
        """Start recording ``stream``'s work (launches, GEMMs, copies) into a graph."""

    @abstractmethod
    def end_capture(self, stream: int) -> int:
        """Stop recording; returns an executable graph handle."""

    @abstractmethod
    def launch_graph(self, graph: int, stream: int) -> None: ...

    @abstractmethod
    def destroy_graph(self, graph: int) -> None: ...

    # ---- lifetime -----------------------------------------------------------------------
    @abstractmethod
    def close(self) -> None:
        """Release library handles (idempotent). Memory must have been freed by its owners."""
