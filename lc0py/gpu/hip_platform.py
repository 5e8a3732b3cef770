"""AMD implementation of ``Platform``: HIP runtime + hiprtc and hipBLAS through hip-python.

Why these bindings:

* **hip-python** (``from hip import hip, hiprtc, hipblas``) is AMD's official, thin binding of
  the HIP runtime, hiprtc and the ROCm math libraries, the counterpart of cuda-python. It needs a
  ROCm install (``libamdhip64``, ``libhiprtc``, ``libhipblas``/``librocblas``) whose version
  matches the hip-python release.
* **hipBLAS** (on rocBLAS) rather than rocBLAS or hipBLASLt directly: every hip-python release
  binds hipBLAS (the newest ones no longer bind rocBLAS), ``hipblasGemmEx`` maps one to one onto
  ``cublasGemmEx`` (so both platforms run the same GEMM), and hipBLASLt's bias/ReLU epilogues
  would not cover lc0's activations anyway (see cuda_platform.py); ``supports_epilogue`` is False.

Nothing is imported at module import time: ``import lc0py.gpu.hip_platform`` works
without hip-python or ROCm; creating a ``HipPlatform`` raises ``BackendUnavailable`` with one
line ("hip-python is not installed (pip install 'lc0py[rocm]')" or "no AMD GPU/ROCm runtime
found (...)").

Version differences handled here (hip-python follows the ROCm C APIs, which moved):
``hipGetDeviceProperties(props, dev)`` (hip-python <= 6) vs ``(dev) -> props``; ``hipblasGemmEx``
with ``hipblasDatatype_t`` (ROCm 5), ``hipblasGemmEx_v2`` with ``hipDataType`` +
``hipblasComputeType_t`` (ROCm 6), the same types under the plain name (ROCm 7+);
``hipHostMalloc`` / ``hipHostFree`` (renamed ``hipHostAlloc`` / ``hipFreeHost`` later).

Not run on an AMD GPU by the project (we have none): the host logic is unit-tested against a
fake hip-python (tests/backends/gpu/test_hip_platform.py), the kernels are compiled for gfx1100,
gfx1151, gfx1201, gfx90a and gfx942 in CI (tests/kernels/test_compile_amd.py). See docs/amd.md.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.errors import BackendUnavailable, KernelCompileError
from lc0py.gpu.platform import (
    DeviceInfo,
    Dim3,
    Event,
    GpuError,
    HostBuffer,
    KernelArg,
    amd_mma_kind,
    ordinal_error,
)
from lc0py.gpu.vendor_platform import BLAS_WORKSPACE, GemmCall, VendorPlatform

log = logging.getLogger("lc0py.gpu")

INSTALL_HINT = "hip-python is not installed (pip install 'lc0py[rocm]')"
NO_RUNTIME = "no AMD GPU/ROCm runtime found"

# hipModuleLaunchKernel "extra" markers (hip_runtime_api.h: ((void*)0x01), 0x02, 0x03).
HIP_LAUNCH_PARAM_BUFFER_POINTER = 1
HIP_LAUNCH_PARAM_BUFFER_SIZE = 2
HIP_LAUNCH_PARAM_END = 3

# The AMD matrix-core table lives with the device facts (lc0py/gpu/platform.py); the name stays here for
# the host code and tests that route on it.
mma_kind = amd_mma_kind


# ------------------------------------------------------------------------------- imports -------
def _import(name: str) -> Any:
    """``hip.<name>`` from hip-python; a missing package and a missing ROCm say different things."""
    try:
        import hip as hip_pkg
    except ModuleNotFoundError:
        raise BackendUnavailable(INSTALL_HINT) from None
    except (ImportError, OSError) as exc:  # old hip-python loads libamdhip64 at import
        raise BackendUnavailable(f"{NO_RUNTIME} ({exc})") from None
    try:
        return (
            getattr(hip_pkg, name) if hasattr(hip_pkg, name) else __import__(f"hip.{name}", fromlist=[name])
        )
    except ModuleNotFoundError:
        if name == "hipblas":
            raise BackendUnavailable(
                "hip-python has no hipBLAS binding here (pip install 'hip-python[libraries]')"
            ) from None
        raise BackendUnavailable(INSTALL_HINT) from None
    except (ImportError, OSError) as exc:
        raise BackendUnavailable(f"{NO_RUNTIME} ({exc})") from None


def _text(x: Any) -> str:
    """hip-python strings arrive as bytes, CStr, str, or ``(status, bytes)`` tuples."""
    if isinstance(x, tuple):
        x = x[-1]
    if isinstance(x, (bytes, bytearray)):
        return bytes(x).split(b"\x00")[0].decode(errors="replace")
    return str(x)


def _status_name(status: Any) -> str:
    return getattr(status, "name", None) or str(status)


def _check(result: Any, what: str, hip: Any = None) -> Any:
    """hip-python returns ``(status, *values)``; raise ``GpuError`` naming ``what`` on a bad status.

    Returns ``None``, the single value, or a tuple of values.
    """
    status, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if int(status) != 0:
        detail = _status_name(status)
        if hip is not None:
            try:
                msg = _text(hip.hipGetErrorString(status))
                if msg and msg != detail:
                    detail = f"{detail}: {msg}"
            except Exception:  # the message is a courtesy; the status name is enough
                pass
        raise GpuError(f"{what} failed ({detail})")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


# ------------------------------------------------------------------------------- launch args ---
@functools.lru_cache(maxsize=256)
def _arg_struct(types: tuple[type, ...]) -> type[ctypes.Structure]:
    # ctypes lays fields out with their natural C alignment, which is the AMDGPU kernel-argument
    # layout for scalars and pointers (AMDGPUUsage, "Kernel Argument" / HIP's by-value args).
    return type("KernelArgs", (ctypes.Structure,), {"_fields_": [(f"a{i}", t) for i, t in enumerate(types)]})


def pack_kernel_args(args: Sequence[KernelArg]) -> ctypes.Structure:
    """The kernel-argument buffer: ``args`` (ctypes scalars, in parameter order) laid out as the
    kernel's argument struct. A ``c_void_p(None)`` is the null pointer."""
    for a in args:
        if not isinstance(a, ctypes._SimpleCData):
            raise TypeError(f"kernel argument {a!r} is not a ctypes scalar (c_void_p, c_int, c_float, ...)")
    cls = _arg_struct(tuple(type(a) for a in args))
    return cls(*[a.value if a.value is not None else 0 for a in args])


@dataclass
class LaunchExtra:
    """``extra`` of ``hipModuleLaunchKernel``: {BUFFER_POINTER, &buf, BUFFER_SIZE, &size, END}.

    Keeps the buffer, its size and the config array alive for the call (HIP copies the argument
    buffer at launch, so nothing must outlive ``launch``).
    """

    buffer: ctypes.Structure
    size: ctypes.c_size_t
    config: ctypes.Array[ctypes.c_void_p]

    @classmethod
    def build(cls, args: Sequence[KernelArg]) -> LaunchExtra:
        buf = pack_kernel_args(args)
        size = ctypes.c_size_t(ctypes.sizeof(buf))
        config = (ctypes.c_void_p * 5)(
            HIP_LAUNCH_PARAM_BUFFER_POINTER,
            ctypes.addressof(buf),
            HIP_LAUNCH_PARAM_BUFFER_SIZE,
            ctypes.addressof(size),
            HIP_LAUNCH_PARAM_END,
        )
        return cls(buf, size, config)

    @property
    def address(self) -> int:
        return ctypes.addressof(self.config)


# ------------------------------------------------------------------------------- hipBLAS -------
class _HipBlasApi:
    """hipblasGemmEx spelled for the installed hip-python (the C API changed its enums twice)."""

    def __init__(self, hipblas: Any, hip: Any) -> None:
        self.lib = hipblas
        if hasattr(hipblas, "hipblasGemmEx_v2"):  # ROCm 6: _v2 takes hipDataType + compute type
            self.gemm = hipblas.hipblasGemmEx_v2
            self.gemm_batched = hipblas.hipblasGemmStridedBatchedEx_v2
            self._new_types(hip)
        elif hasattr(hipblas, "hipblasComputeType_t") and not hasattr(
            hipblas, "hipblasDatatype_t"
        ):  # ROCm 7+
            self.gemm = hipblas.hipblasGemmEx
            self.gemm_batched = hipblas.hipblasGemmStridedBatchedEx
            self._new_types(hip)
        else:  # ROCm 5: hipblasDatatype_t for the data and the compute type
            self.gemm = hipblas.hipblasGemmEx
            self.gemm_batched = hipblas.hipblasGemmStridedBatchedEx
            D = hipblas.hipblasDatatype_t
            self.dtypes = {"fp16": D.HIPBLAS_R_16F, "fp32": D.HIPBLAS_R_32F}
            self.compute = D.HIPBLAS_R_32F
        op = hipblas.hipblasOperation_t
        self.op = {False: op.HIPBLAS_OP_N, True: op.HIPBLAS_OP_T}
        self.algo = hipblas.hipblasGemmAlgo_t.HIPBLAS_GEMM_DEFAULT

    def _new_types(self, hip: Any) -> None:
        D = hip.hipDataType
        self.dtypes = {"fp16": D.HIP_R_16F, "fp32": D.HIP_R_32F}
        # fp32 accumulation for both; "32F" without FAST_TF32/XF32 keeps fp32 GEMMs full fp32.
        self.compute = self.lib.hipblasComputeType_t.HIPBLAS_COMPUTE_32F


def _check_blas(result: Any, what: str) -> Any:
    status, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if int(status) != 0:
        raise GpuError(f"{what} failed ({_status_name(status)})")
    return values[0] if len(values) == 1 else (values or None)


# ------------------------------------------------------------------------------- hiprtc --------
def hiprtc_options(target: str, options: Sequence[str]) -> list[str]:
    """Compile flags: the device's full target id (e.g. ``gfx90a:sramecc+:xnack-``, so the code
    object matches the device's modes), C++17 and -O3 as on NVRTC, then the caller's defines."""
    return [f"--offload-arch={target}", "-std=c++17", "-O3", *options]


PRELUDE = "prelude_hiprtc.h"


def hiprtc_source(source: str, name: str) -> str:
    """The source with the AMD prelude included first; ``#line`` keeps compiler messages pointing
    at the kernel file's own line numbers."""
    return f'#include "{PRELUDE}"\n#line 1 "{name}"\n{source}'


def hiprtc_compile(
    hiprtc: Any, source: str, name: str, options: Sequence[str], headers: Mapping[str, str], target: str
) -> bytes:
    """Compile HIP C++ with hiprtc for ``target``; ``headers`` (name -> text) must hold the prelude."""
    if PRELUDE not in headers:
        raise KernelCompileError(f"{PRELUDE} missing from the kernel headers")
    names = [k.encode() for k in headers]
    texts = [v.encode() for v in headers.values()]
    prog = _check_rtc(
        hiprtc.hiprtcCreateProgram(
            hiprtc_source(source, name).encode(), name.encode(), len(names), texts, names
        ),
        "hiprtcCreateProgram",
    )
    try:
        opts = hiprtc_options(target, options)
        bopts = [o.encode() for o in opts]
        status = hiprtc.hiprtcCompileProgram(prog, len(bopts), bopts)
        status = status[0] if isinstance(status, tuple) else status
        log_text = ""
        try:
            size = _check_rtc(hiprtc.hiprtcGetProgramLogSize(prog), "hiprtcGetProgramLogSize")
            buf = bytearray(int(size or 0))
            if buf:
                _check_rtc(hiprtc.hiprtcGetProgramLog(prog, buf), "hiprtcGetProgramLog")
            log_text = bytes(buf).decode(errors="replace").rstrip("\x00 \n")
        except KernelCompileError:
            pass
        if int(status) != 0:
            raise KernelCompileError(
                f"hiprtc failed to compile {name} ({' '.join(opts)}): {_status_name(status)}\n{log_text}",
                log_text,
            )
        size = _check_rtc(hiprtc.hiprtcGetCodeSize(prog), "hiprtcGetCodeSize")
        code = bytearray(int(size))
        _check_rtc(hiprtc.hiprtcGetCode(prog, code), "hiprtcGetCode")
        return bytes(code)
    finally:
        try:
            hiprtc.hiprtcDestroyProgram(prog)
        except Exception:  # never mask the compile error with a cleanup failure
            pass


def _check_rtc(result: Any, what: str) -> Any:
    status, values = (result[0], result[1:]) if isinstance(result, tuple) else (result, ())
    if int(status) != 0:
        raise KernelCompileError(f"{what} failed ({_status_name(status)})")
    return values[0] if len(values) == 1 else (values or None)


# ------------------------------------------------------------------------------- platform ------
def _device_properties(hip: Any, device: int) -> Any:
    """``hipDeviceProp_t`` of ``device``: hip-python <= 6 fills a caller's struct, newer returns one."""
    try:
        return _check(hip.hipGetDeviceProperties(device), "hipGetDeviceProperties", hip)
    except TypeError:
        props = hip.hipDeviceProp_t()
        _check(hip.hipGetDeviceProperties(props, device), "hipGetDeviceProperties", hip)
        return props


class HipPlatform(VendorPlatform):
    """One AMD GPU through the HIP runtime, hiprtc and hipBLAS (hip-python)."""

    vendor = "amd"
    binary_kind = "hsaco"
    blas_name = "hipBLAS"

    def __init__(self, device: int = 0) -> None:
        super().__init__()
        hip = _import("hip")
        self._hip = hip
        try:
            count = _check(hip.hipGetDeviceCount(), "hipGetDeviceCount", hip)
        except (GpuError, RuntimeError, OSError) as exc:  # hip-python >= 7 dlopens on first call
            raise BackendUnavailable(f"{NO_RUNTIME} ({exc})") from None
        if not count:
            raise BackendUnavailable(f"{NO_RUNTIME} (0 devices)")
        if not 0 <= device < count:
            raise ordinal_error(device, count, "ROCm")
        self.device = device
        self.bind_thread()
        props = _device_properties(hip, device)
        self.target = _text(props.gcnArchName) or "gfx000"  # full target id, e.g. gfx90a:sramecc+:xnack-
        shared = int(props.sharedMemPerBlock)
        self.info = DeviceInfo(
            vendor="amd",
            index=device,
            name=_text(props.name),
            arch=self.target.split(":")[0],
            sm_count=int(props.multiProcessorCount),
            warp_size=int(props.warpSize),
            shared_mem_per_block=shared,
            # LDS needs no opt-in on AMD: what a block may use is what it gets (64 KiB on gfx9-11).
            shared_mem_per_block_optin=max(shared, int(getattr(props, "sharedMemPerBlockOptin", 0) or 0)),
            total_memory=int(props.totalGlobalMem),
            l2_bytes=int(getattr(props, "l2CacheSize", 0) or 0),
        )
        if mma_kind(self.info.arch) is None:
            log.info(
                "%s (%s): no matrix-core branch in mma_amd.h; attention uses the fallback",
                self.info.name,
                self.info.arch,
            )
        self._blas: _HipBlasApi | None = None

    # ---- memory ----------------------------------------------------------------------------
    def _bind_current_thread(self) -> None:
        _check(self._hip.hipSetDevice(self.device), "hipSetDevice", self._hip)

    def alloc(self, nbytes: int) -> int:
        return int(_check(self._hip.hipMalloc(max(int(nbytes), 1)), f"hipMalloc({nbytes} bytes)", self._hip))

    def free(self, ptr: int) -> None:
        if ptr:
            _check(self._hip.hipFree(ptr), "hipFree", self._hip)

    def alloc_host(self, nbytes: int) -> HostBuffer:
        hip = self._hip
        fn = getattr(hip, "hipHostMalloc", None) or hip.hipHostAlloc
        ptr = int(_check(fn(max(int(nbytes), 1), 0), f"hipHostMalloc({nbytes} bytes)", hip))
        return HostBuffer(ptr, int(nbytes))

    def free_host(self, buf: HostBuffer) -> None:
        if buf.ptr:
            fn = getattr(self._hip, "hipHostFree", None) or self._hip.hipFreeHost
            _check(fn(buf.ptr), "hipHostFree", self._hip)
            buf.ptr = 0

    def copy_h2d(self, dst: int, src: np.ndarray | HostBuffer, nbytes: int, stream: int) -> None:
        if nbytes:
            _check(
                self._hip.hipMemcpyHtoDAsync(dst, self._host_ptr(src, nbytes), nbytes, self._stream(stream)),
                "hipMemcpyHtoDAsync",
                self._hip,
            )

    def copy_d2h(self, dst: np.ndarray | HostBuffer, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            host = self._host_ptr(dst, nbytes, writes=True)
            _check(
                self._hip.hipMemcpyDtoHAsync(host, src, nbytes, self._stream(stream)),
                "hipMemcpyDtoHAsync",
                self._hip,
            )

    def copy_d2d(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            _check(
                self._hip.hipMemcpyDtoDAsync(dst, src, nbytes, self._stream(stream)),
                "hipMemcpyDtoDAsync",
                self._hip,
            )

    def memset(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        if nbytes:
            _check(
                self._hip.hipMemsetD8Async(ptr, byte & 0xFF, nbytes, self._stream(stream)),
                "hipMemsetD8Async",
                self._hip,
            )

    # ---- streams / events ------------------------------------------------------------------
    def create_stream(self) -> int:
        flags = getattr(self._hip, "hipStreamNonBlocking", 1)
        return self._keep(
            _check(self._hip.hipStreamCreateWithFlags(flags), "hipStreamCreateWithFlags", self._hip)
        )

    def destroy_stream(self, stream: int) -> None:
        obj = self._objs.pop(stream, None)
        if obj is not None:
            _check(self._hip.hipStreamDestroy(obj), "hipStreamDestroy", self._hip)

    def synchronize(self, stream: int | None = None) -> None:
        if stream is None:
            _check(self._hip.hipDeviceSynchronize(), "hipDeviceSynchronize", self._hip)
        else:
            _check(self._hip.hipStreamSynchronize(self._stream(stream)), "hipStreamSynchronize", self._hip)

    def create_event(self, timing: bool = False) -> Event:
        hip = self._hip
        flags = 0 if timing else getattr(hip, "hipEventDisableTiming", 2)
        return Event(
            self._keep(_check(hip.hipEventCreateWithFlags(flags), "hipEventCreateWithFlags", hip)), self
        )

    def destroy_event(self, event: Event) -> None:
        obj = self._objs.pop(event.handle, None)
        if obj is not None:
            _check(self._hip.hipEventDestroy(obj), "hipEventDestroy", self._hip)

    def event_record(self, event: int, stream: int) -> None:
        _check(self._hip.hipEventRecord(self._objs[event], self._stream(stream)), "hipEventRecord", self._hip)

    def stream_wait_event(self, stream: int, event: int) -> None:
        _check(
            self._hip.hipStreamWaitEvent(self._stream(stream), self._objs[event], 0),
            "hipStreamWaitEvent",
            self._hip,
        )

    def event_synchronize(self, event: int) -> None:
        _check(self._hip.hipEventSynchronize(self._objs[event]), "hipEventSynchronize", self._hip)

    def event_query(self, event: int) -> bool:
        result = self._hip.hipEventQuery(self._objs[event])
        status = result[0] if isinstance(result, tuple) else result
        if int(status) == int(self._hip.hipError_t.hipErrorNotReady):
            return False
        _check((status,), "hipEventQuery", self._hip)
        return True

    def event_elapsed_ms(self, start: int, end: int) -> float:
        return float(
            _check(
                self._hip.hipEventElapsedTime(self._objs[start], self._objs[end]),
                "hipEventElapsedTime",
                self._hip,
            )
        )

    # ---- compile / launch ------------------------------------------------------------------
    def compiler_version(self) -> str:
        """hiprtc and HIP runtime versions (a ROCm update brings a new compiler), plus the target-id
        features (``sramecc+:xnack-``): the cache key holds only ``info.arch``, and a code object
        built for one xnack/sramecc mode does not load on a device in the other."""
        hiprtc = _import("hiprtc")
        major, minor = _check_rtc(hiprtc.hiprtcVersion(), "hiprtcVersion")
        runtime = _check(self._hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion", self._hip)
        features = self.target.partition(":")[2]
        return f"hiprtc-{int(major)}.{int(minor)}-hip{int(runtime)}" + (f"-{features}" if features else "")

    def compile(self, source: str, name: str, options: Sequence[str], headers: dict[str, str]) -> bytes:
        return hiprtc_compile(_import("hiprtc"), source, name, options, headers, self.target)

    def load_module(self, binary: bytes) -> int:
        return self._keep(_check(self._hip.hipModuleLoadData(binary), "hipModuleLoadData", self._hip))

    def get_function(self, module: int, name: str) -> int:
        fn = _check(
            self._hip.hipModuleGetFunction(self._objs[module], name.encode()),
            f"hipModuleGetFunction({name})",
            self._hip,
        )
        return self._keep(fn)

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        # AMD has no opt-in step: a block may use up to the LDS limit directly. Only refuse what
        # cannot work, so the caller falls back instead of failing at launch.
        if nbytes > self.info.shared_mem_per_block_optin:
            raise GpuError(
                f"{nbytes} bytes of dynamic shared memory > the device limit of "
                f"{self.info.shared_mem_per_block_optin}"
            )

    def launch(
        self, function: int, grid: Dim3, block: Dim3, shared_mem: int, stream: int, args: Sequence[KernelArg]
    ) -> None:
        extra = LaunchExtra.build(args)
        _check(
            self._hip.hipModuleLaunchKernel(
                self._objs[function], *grid, *block, shared_mem, self._stream(stream), None, extra.address
            ),
            "hipModuleLaunchKernel",
            self._hip,
        )

    # ---- BLAS ------------------------------------------------------------------------------
    def _new_blas_handle(self) -> Any:
        if self._blas is None:
            self._blas = _HipBlasApi(_import("hipblas"), self._hip)
        return _check_blas(self._blas.lib.hipblasCreate(), "hipblasCreate")

    def _bind_blas_handle(self, handle: Any, stream: int) -> None:
        assert self._blas is not None
        lib = self._blas.lib
        if hasattr(lib, "hipblasSetWorkspace"):  # hipBLAS >= 2.x; needed under graph capture
            ws = self._blas_workspace()
            _check_blas(lib.hipblasSetWorkspace(handle, ws, BLAS_WORKSPACE), "hipblasSetWorkspace")
        _check_blas(lib.hipblasSetStream(handle, self._stream(stream)), "hipblasSetStream")

    def _destroy_blas_handle(self, handle: Any) -> None:
        if self._blas is not None:
            try:
                self._blas.lib.hipblasDestroy(handle)
            except Exception:  # closing must not fail half-way
                pass

    def _column_major_gemm(self, handle: Any, call: GemmCall, dtype: str, alpha: float, beta: float) -> None:
        api = self._blas
        assert api is not None
        al, be = ctypes.c_float(alpha), ctypes.c_float(beta)  # compute type 32F: float scalars
        args = call.blas_args(
            handle,
            api.op,
            api.dtypes[dtype],
            ctypes.addressof(al),
            ctypes.addressof(be),
            api.compute,
            api.algo,
        )
        if call.batch == 1:
            _check_blas(api.gemm(*args), f"hipblasGemmEx({call.describe()})")
        else:
            _check_blas(api.gemm_batched(*args), f"hipblasGemmStridedBatchedEx({call.describe()})")

    # ---- graphs ----------------------------------------------------------------------------
    def begin_capture(self, stream: int) -> None:
        mode = self._hip.hipStreamCaptureMode.hipStreamCaptureModeThreadLocal
        _check(
            self._hip.hipStreamBeginCapture(self._stream(stream), mode), "hipStreamBeginCapture", self._hip
        )

    def end_capture(self, stream: int) -> int:
        hip = self._hip
        graph = _check(hip.hipStreamEndCapture(self._stream(stream)), "hipStreamEndCapture", hip)
        try:
            exe = _check(hip.hipGraphInstantiateWithFlags(graph, 0), "hipGraphInstantiateWithFlags", hip)
        finally:
            _check(hip.hipGraphDestroy(graph), "hipGraphDestroy", hip)
        return self._keep(exe)

    def launch_graph(self, graph: int, stream: int) -> None:
        _check(self._hip.hipGraphLaunch(self._objs[graph], self._stream(stream)), "hipGraphLaunch", self._hip)

    def destroy_graph(self, graph: int) -> None:
        obj = self._objs.pop(graph, None)
        if obj is not None:
            _check(self._hip.hipGraphExecDestroy(obj), "hipGraphExecDestroy", self._hip)


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """Registry probe: ``None`` when an AMD GPU is usable, else the reason (cheap, cached)."""
    try:
        hip = _import("hip")
    except BackendUnavailable as exc:
        return str(exc)
    try:
        result = hip.hipGetDeviceCount()
        status, count = result[0], result[1]
        if int(status) != 0 or int(count) == 0:
            return NO_RUNTIME
    except Exception as exc:  # hip-python >= 7 raises when libamdhip64 cannot be loaded
        return f"{NO_RUNTIME} ({exc})"
    return None
