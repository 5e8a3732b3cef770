"""NVIDIA implementation of ``Platform``: CUDA driver API + NVRTC (cuda-python) and cuBLAS (ctypes).

Why these bindings:

* **cuda-python** (``cuda.bindings.driver``/``nvrtc``) is NVIDIA's official, thin, typed binding
  of the driver API and NVRTC: no toolkit install is needed at run time (the driver ships
  ``libcuda``, the ``nvidia-cuda-nvrtc`` wheel ships NVRTC), and NVRTC works without a GPU, so CI
  compiles every kernel.
* **cuBLAS through ctypes** on ``libcublas`` (found by ``cuda.pathfinder``: NVIDIA's
  ``nvidia-cublas`` wheel, or the system CUDA). We need four entry points (create, set stream,
  set workspace, ``cublasGemmEx``/``cublasGemmStridedBatchedEx``); ctypes costs no extra package,
  no compiled extension and works with whatever cuBLAS major is installed. nvmath-python would
  add a dependency (and its own CuPy/torch-style memory model) for the same calls. cuBLASLt's
  bias/ReLU/GELU epilogues do not cover lc0's activations (mish, relu², swish) nor our fused
  residual+LayerNorm, so those live in our own kernels and plain ``cublasGemmEx`` suffices
  (``supports_epilogue`` is ``False``).

Every driver, NVRTC and cuBLAS status is checked and turned into ``GpuError`` /
``KernelCompileError`` / ``BackendUnavailable`` naming the call.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.errors import BackendOptionError, BackendUnavailable, KernelCompileError
from lc0py.gpu.platform import DeviceInfo, Dim3, Event, GpuError, HostBuffer, KernelArg, ordinal_error
from lc0py.gpu.vendor_platform import BLAS_WORKSPACE, GemmCall, VendorPlatform

log = logging.getLogger("lc0py.gpu")

INSTALL_HINT = "cuda-python is not installed (pip install 'lc0py[cuda]')"


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError:
        raise BackendUnavailable(INSTALL_HINT) from None
    return driver


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        raise BackendUnavailable(INSTALL_HINT) from None
    return nvrtc


def _check(result: Any, what: str) -> Any:
    """cuda-python returns ``(status, *values)``; raise on a bad status, return the values."""
    if isinstance(result, tuple):
        status, values = result[0], result[1:]
    else:
        status, values = result, ()
    if int(status) != 0:
        drv = _driver()
        name = str(status)
        try:
            err, msg = drv.cuGetErrorString(status)
            if int(err) == 0 and msg:
                name = f"{status.name if hasattr(status, 'name') else status}: {msg.decode()}"
        except Exception:
            pass
        raise GpuError(f"{what} failed ({name})")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


# ------------------------------------------------------------------------------- NVRTC ----------
def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    err, major, minor = nvrtc.nvrtcVersion()
    return int(major), int(minor)


def nvrtc_supported_archs() -> list[int]:
    nvrtc = _nvrtc()
    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return [int(a) for a in archs]


def nvrtc_target(cc: int) -> tuple[str, str]:
    """``(-arch option, binary kind)`` for compute capability ``cc`` (e.g. 90).

    A real ``sm_XX`` cubin when NVRTC knows the arch; otherwise PTX for the newest virtual arch
    NVRTC has below it, which the driver JIT-compiles for the newer GPU.
    """
    supported = nvrtc_supported_archs()
    if cc in supported:
        return f"-arch=sm_{cc}", "cubin"
    lower = [a for a in supported if a <= cc]
    if not lower:
        raise BackendUnavailable(f"NVRTC {nvrtc_version()} cannot target sm_{cc}")
    return f"-arch=compute_{max(lower)}", "ptx"


def nvrtc_compile(
    source: str,
    name: str,
    options: Sequence[str],
    headers: Mapping[str, str],
    arch_option: str,
    binary_kind: str = "cubin",
) -> bytes:
    """Compile HIP-style C++ ``source`` with NVRTC (no GPU needed). Pre-includes the prelude."""
    nvrtc = _nvrtc()
    names = [k.encode() for k in headers]
    texts = [v.encode() for v in headers.values()]
    prog = _check_nvrtc(
        nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), len(names), texts, names),
        "nvrtcCreateProgram",
    )
    try:
        opts = [
            arch_option,
            "-std=c++17",
            "-include",
            "prelude_nvrtc.h",
            "--device-as-default-execution-space",
            *options,
        ]
        bopts = [o.encode() for o in opts]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(bopts), bopts)
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = _out_buffer(size)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log_text = bytes(buf).decode(errors="replace").rstrip("\x00 \n")
        if int(status) != 0:
            raise KernelCompileError(
                f"NVRTC failed to compile {name} ({' '.join(opts)}):\n{log_text}", log_text
            )
        if binary_kind == "cubin":
            size = _check_nvrtc(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
            out = _out_buffer(size)
            _check_nvrtc(nvrtc.nvrtcGetCUBIN(prog, out), "nvrtcGetCUBIN")
        else:
            size = _check_nvrtc(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
            out = _out_buffer(size)
            _check_nvrtc(nvrtc.nvrtcGetPTX(prog, out), "nvrtcGetPTX")
        return bytes(out)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _out_buffer(size: int) -> bytearray:
    """A fresh writable buffer for NVRTC to fill (log, CUBIN, PTX). Never ``b" " * size``: for a
    one-byte result (an empty log is just its NUL) CPython returns its shared ``b" "`` object,
    and NVRTC's NUL then turned every one-byte space of the process into ``b"\x00"`` (an
    ``.npy`` header padded with one space became unreadable: "source code cannot contain null
    bytes", 2026-11-28)."""
    return bytearray(max(int(size), 1))


def _check_nvrtc(result: Any, what: str) -> Any:
    status, *values = result if isinstance(result, tuple) else (result,)
    if int(status) != 0:
        raise KernelCompileError(f"{what} failed ({status})")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


# ------------------------------------------------------------------------------- cuBLAS ---------
_CUBLAS_OP_N, _CUBLAS_OP_T = 0, 1
_CUBLAS_OPS = {False: _CUBLAS_OP_N, True: _CUBLAS_OP_T}
_CUDA_R_32F, _CUDA_R_16F = 0, 2
_CUDA_DTYPES = {"fp16": _CUDA_R_16F, "fp32": _CUDA_R_32F}
_CUBLAS_COMPUTE_32F = 68
_CUBLAS_GEMM_DEFAULT = -1
_CUBLAS_STATUS = {
    0: "SUCCESS",
    1: "NOT_INITIALIZED",
    3: "ALLOC_FAILED",
    7: "INVALID_VALUE",
    8: "ARCH_MISMATCH",
    11: "MAPPING_ERROR",
    13: "EXECUTION_FAILED",
    14: "INTERNAL_ERROR",
    15: "NOT_SUPPORTED",
}


@functools.lru_cache(maxsize=1)
def _load_cublas() -> ctypes.CDLL:
    errors: list[str] = []
    try:
        from cuda import pathfinder

        lib = pathfinder.load_nvidia_dynamic_lib("cublas")
        return ctypes.CDLL(lib.abs_path)
    except Exception as exc:  # not found through the wheel / CUDA_HOME
        errors.append(str(exc))
    for name in ("libcublas.so.13", "libcublas.so.12", ctypes.util.find_library("cublas")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))
    raise BackendUnavailable("cuBLAS not found (pip install nvidia-cublas): " + "; ".join(errors))


class _Cublas:
    """The few cuBLAS entry points we use, typed for ctypes."""

    def __init__(self) -> None:
        lib = _load_cublas()
        vp, i, i64, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_void_p
        lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
        lib.cublasDestroy_v2.argtypes = [vp]
        lib.cublasSetStream_v2.argtypes = [vp, vp]
        lib.cublasSetWorkspace_v2.argtypes = [vp, vp, ctypes.c_size_t]
        lib.cublasSetSmCountTarget.argtypes = [vp, i]
        lib.cublasGemmEx.argtypes = [vp, i, i, i, i, i, f, vp, i, i, vp, i, i, f, vp, i, i, i, i]
        lib.cublasGemmStridedBatchedEx.argtypes = [
            vp,
            i,
            i,
            i,
            i,
            i,
            f,
            vp,
            i,
            i,
            i64,
            vp,
            i,
            i,
            i64,
            f,
            vp,
            i,
            i,
            i64,
            i,
            i,
            i,
        ]
        for fn in (
            "cublasCreate_v2",
            "cublasDestroy_v2",
            "cublasSetStream_v2",
            "cublasSetWorkspace_v2",
            "cublasSetSmCountTarget",
            "cublasGemmEx",
            "cublasGemmStridedBatchedEx",
        ):
            getattr(lib, fn).restype = ctypes.c_int
        self.lib = lib

    @staticmethod
    def check(status: int, what: str) -> None:
        if status != 0:
            raise GpuError(f"{what} failed (CUBLAS_STATUS_{_CUBLAS_STATUS.get(status, status)})")


# ------------------------------------------------------------------------------- platform -------
#: The driver (``cuDriverGetVersion``) from which captured graphs keep programmatic dependent
#: launches (``Platform.dependent_launch``)
DEPENDENT_LAUNCH_DRIVER = 12030
#: How a thread waiting on the device (``cuEventSynchronize``) waits: the driver's default
#: (``auto``: spin while there are fewer active contexts than cores) or ``spin`` / ``yield`` /
#: ``blocking``. A spinning waiter holds a core; on a host whose cores are hyperthreads that can
#: slow the search thread beside it (docs/performance.md §4).
SCHED_ENV = "LC0PY_CUDA_SCHED"
_SCHEDULES = {
    "auto": "CU_CTX_SCHED_AUTO",
    "spin": "CU_CTX_SCHED_SPIN",
    "yield": "CU_CTX_SCHED_YIELD",
    "blocking": "CU_CTX_SCHED_BLOCKING_SYNC",
}


def context_schedule(value: str) -> str | None:
    """The primary context's scheduling flag named by ``LC0PY_CUDA_SCHED`` (``None``: unset,
    the driver's default); a bad value is one ``BackendOptionError`` line."""
    value = value.strip().lower()
    if not value:
        return None
    if value not in _SCHEDULES:
        raise BackendOptionError(f"{SCHED_ENV}='{value}': expected one of {', '.join(_SCHEDULES)}")
    return _SCHEDULES[value]


class CudaPlatform(VendorPlatform):
    """One NVIDIA GPU through the CUDA driver API (primary context), NVRTC and cuBLAS.

    ``close`` leaves the primary context retained: policy arrays handed to callers may still view
    pinned buffers of this context, which must outlive the backend (freed on release).
    """

    vendor = "nvidia"
    blas_name = "cuBLAS"
    # cuda.bindings calls the driver without the GIL: on the device a counting thread kept
    # running through cuEventSynchronize (measured 2026-11-27, docs/performance.md §10)
    sync_releases_gil = True

    def __init__(self, device: int = 0) -> None:
        super().__init__()
        drv = _driver()
        self._drv = drv
        try:
            _check(drv.cuInit(0), "cuInit")
            count = _check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
        except (GpuError, RuntimeError, OSError) as exc:
            raise BackendUnavailable(f"no NVIDIA driver/GPU found ({exc})") from None
        if not count:
            raise BackendUnavailable("no NVIDIA driver/GPU found (0 devices)")
        if not 0 <= device < count:
            raise ordinal_error(device, count, "CUDA")
        self._dev = _check(drv.cuDeviceGet(device), "cuDeviceGet")
        sched = context_schedule(os.environ.get(SCHED_ENV, ""))
        if sched is not None:
            flag = getattr(drv.CUctx_flags, sched)
            _check(drv.cuDevicePrimaryCtxSetFlags(self._dev, flag), "cuDevicePrimaryCtxSetFlags")
        self._ctx = _check(drv.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        self.bind_thread()
        A = drv.CUdevice_attribute

        def attr(a: Any) -> int:
            return int(_check(drv.cuDeviceGetAttribute(a, self._dev), "cuDeviceGetAttribute"))

        major = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        name = _check(drv.cuDeviceGetName(256, self._dev), "cuDeviceGetName")
        name = name.split(b"\x00")[0].decode() if isinstance(name, bytes) else str(name)
        self.cc = major * 10 + minor
        self.info = DeviceInfo(
            vendor="nvidia",
            index=device,
            name=name,
            arch=f"sm_{self.cc}",
            sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            warp_size=attr(A.CU_DEVICE_ATTRIBUTE_WARP_SIZE),
            shared_mem_per_block=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
            shared_mem_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            total_memory=int(_check(drv.cuDeviceTotalMem(self._dev), "cuDeviceTotalMem")),
            l2_bytes=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
        )
        self._arch_option, self.binary_kind = nvrtc_target(self.cc)
        self._cublas: _Cublas | None = None
        self._sm_targets: dict[int | None, int] = {}  # BLAS handle -> its SM count target (0: all)
        self._stream_workspaces: dict[int, int] = {}  # stream -> its BLAS handle's workspace
        self._capturing = False  # between begin_capture and end_capture (one enqueuing thread)
        #: timed cuBLASLt algorithms for the large fp16 GEMMs (``use_gemm_algos``); None: cublasGemmEx
        self.gemm_algos: Any = None
        self._launch_config: Any = None  # cuLaunchKernelEx's, made at the first dependent launch

    # ---- memory ----------------------------------------------------------------------------
    def _bind_current_thread(self) -> None:
        _check(self._drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")

    def alloc(self, nbytes: int) -> int:
        return int(_check(self._drv.cuMemAlloc(max(int(nbytes), 1)), f"cuMemAlloc({nbytes} bytes)"))

    def free(self, ptr: int) -> None:
        if ptr:
            _check(self._drv.cuMemFree(ptr), "cuMemFree")

    def alloc_host(self, nbytes: int) -> HostBuffer:
        ptr = int(_check(self._drv.cuMemHostAlloc(max(int(nbytes), 1), 0), f"cuMemHostAlloc({nbytes} bytes)"))
        return HostBuffer(ptr, int(nbytes))

    def free_host(self, buf: HostBuffer) -> None:
        if buf.ptr:
            _check(self._drv.cuMemFreeHost(buf.ptr), "cuMemFreeHost")
            buf.ptr = 0

    def copy_h2d(self, dst: int, src: np.ndarray | HostBuffer, nbytes: int, stream: int) -> None:
        if nbytes:
            _check(
                self._drv.cuMemcpyHtoDAsync(dst, self._host_ptr(src, nbytes), nbytes, self._stream(stream)),
                "cuMemcpyHtoDAsync",
            )

    def copy_d2h(self, dst: np.ndarray | HostBuffer, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            host = self._host_ptr(dst, nbytes, writes=True)
            _check(
                self._drv.cuMemcpyDtoHAsync(host, src, nbytes, self._stream(stream)),
                "cuMemcpyDtoHAsync",
            )

    def copy_d2d(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            _check(self._drv.cuMemcpyDtoDAsync(dst, src, nbytes, self._stream(stream)), "cuMemcpyDtoDAsync")

    def memset(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        if nbytes:
            _check(
                self._drv.cuMemsetD8Async(ptr, byte & 0xFF, nbytes, self._stream(stream)), "cuMemsetD8Async"
            )

    # ---- streams / events ------------------------------------------------------------------
    def create_stream(self) -> int:
        flags = self._drv.CUstream_flags.CU_STREAM_NON_BLOCKING
        return self._keep(_check(self._drv.cuStreamCreate(flags), "cuStreamCreate"))

    def destroy_stream(self, stream: int) -> None:
        obj = self._objs.pop(stream, None)
        if obj is not None:
            _check(self._drv.cuStreamDestroy(obj), "cuStreamDestroy")

    def synchronize(self, stream: int | None = None) -> None:
        if stream is None:
            _check(self._drv.cuCtxSynchronize(), "cuCtxSynchronize")
        else:
            _check(self._drv.cuStreamSynchronize(self._stream(stream)), "cuStreamSynchronize")

    def create_event(self, timing: bool = False) -> Event:
        F = self._drv.CUevent_flags
        flags = F.CU_EVENT_DEFAULT if timing else F.CU_EVENT_DISABLE_TIMING
        return Event(self._keep(_check(self._drv.cuEventCreate(flags), "cuEventCreate")), self)

    def destroy_event(self, event: Event) -> None:
        obj = self._objs.pop(event.handle, None)
        if obj is not None:
            _check(self._drv.cuEventDestroy(obj), "cuEventDestroy")

    def event_record(self, event: int, stream: int) -> None:
        _check(self._drv.cuEventRecord(self._objs[event], self._stream(stream)), "cuEventRecord")

    def stream_wait_event(self, stream: int, event: int) -> None:
        _check(self._drv.cuStreamWaitEvent(self._stream(stream), self._objs[event], 0), "cuStreamWaitEvent")

    def event_synchronize(self, event: int) -> None:
        _check(self._drv.cuEventSynchronize(self._objs[event]), "cuEventSynchronize")

    def event_query(self, event: int) -> bool:
        (status,) = self._drv.cuEventQuery(self._objs[event])
        if int(status) == int(self._drv.CUresult.CUDA_ERROR_NOT_READY):
            return False
        _check((status,), "cuEventQuery")
        return True

    def event_elapsed_ms(self, start: int, end: int) -> float:
        return float(
            _check(self._drv.cuEventElapsedTime(self._objs[start], self._objs[end]), "cuEventElapsedTime")
        )

    # ---- compile / launch ------------------------------------------------------------------
    def compiler_version(self) -> str:
        major, minor = nvrtc_version()
        return f"nvrtc-{major}.{minor}"

    def compile(self, source: str, name: str, options: Sequence[str], headers: dict[str, str]) -> bytes:
        return nvrtc_compile(source, name, options, headers, self._arch_option, self.binary_kind)

    def load_module(self, binary: bytes) -> int:
        return self._keep(_check(self._drv.cuModuleLoadData(binary), "cuModuleLoadData"))

    def get_function(self, module: int, name: str) -> int:
        return self._keep(
            _check(
                self._drv.cuModuleGetFunction(self._objs[module], name.encode()),
                f"cuModuleGetFunction({name})",
            )
        )

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        if nbytes > self.info.shared_mem_per_block:
            attr = self._drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            _check(self._drv.cuFuncSetAttribute(self._objs[function], attr, nbytes), "cuFuncSetAttribute")

    def dependent_launch_problem(self) -> str | None:
        if self.cc < 90:
            return super().dependent_launch_problem()
        version = int(_check(self._drv.cuDriverGetVersion(), "cuDriverGetVersion"))
        if version < DEPENDENT_LAUNCH_DRIVER:
            # graphs captured from a stream keep programmatic edges from CUDA 12.3
            have = f"{version // 1000}.{version % 1000 // 10}"
            return f"programmatic dependent launch in graphs needs CUDA driver 12.3+ (this one: {have})"
        return None

    def _dependent_config(self, grid: Dim3, block: Dim3, shared_mem: int, stream: int) -> Any:
        """The ``cuLaunchKernelEx`` configuration with the programmatic-serialization attribute (one
        object, refilled for each launch)."""
        drv = self._drv
        cfg = self._launch_config
        if cfg is None:
            attr = drv.CUlaunchAttribute()
            attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            cfg = self._launch_config = drv.CUlaunchConfig()
            cfg.attrs = [attr]
            cfg.numAttrs = 1
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes = shared_mem
        cfg.hStream = self._stream(stream)
        return cfg

    def launch(
        self, function: int, grid: Dim3, block: Dim3, shared_mem: int, stream: int, args: Sequence[KernelArg]
    ) -> None:
        ptrs = (ctypes.c_void_p * max(len(args), 1))(*[ctypes.addressof(a) for a in args])
        if self.dependent_launch:
            cfg = self._dependent_config(grid, block, shared_mem, stream)
            _check(
                self._drv.cuLaunchKernelEx(cfg, self._objs[function], ctypes.addressof(ptrs), 0),
                "cuLaunchKernelEx",
            )
            return
        _check(
            self._drv.cuLaunchKernel(
                self._objs[function],
                *grid,
                *block,
                shared_mem,
                self._stream(stream),
                ctypes.addressof(ptrs),
                0,
            ),
            "cuLaunchKernel",
        )

    # ---- BLAS ------------------------------------------------------------------------------
    def _new_blas_handle(self) -> ctypes.c_void_p:
        if self._cublas is None:
            self._cublas = _Cublas()
        handle = ctypes.c_void_p()
        _Cublas.check(self._cublas.lib.cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
        return handle

    def _bind_blas_handle(self, handle: ctypes.c_void_p, stream: int) -> None:
        assert self._cublas is not None
        lib = self._cublas.lib
        ws = self._blas_workspace()
        _Cublas.check(lib.cublasSetWorkspace_v2(handle, ws, BLAS_WORKSPACE), "cublasSetWorkspace")
        _Cublas.check(lib.cublasSetStream_v2(handle, stream or None), "cublasSetStream")
        self._stream_workspaces[stream] = ws

    def _destroy_blas_handle(self, handle: ctypes.c_void_p) -> None:
        self._sm_targets.pop(handle.value, None)
        if self._cublas is not None:
            self._cublas.lib.cublasDestroy_v2(handle)

    def _set_sm_target(self, handle: ctypes.c_void_p, sms: int) -> None:
        # cuBLAS sizes its persistent Hopper kernels' grids to the target (0: the device's count)
        if self._sm_targets.get(handle.value, 0) != sms:
            assert self._cublas is not None
            _Cublas.check(self._cublas.lib.cublasSetSmCountTarget(handle, sms), "cublasSetSmCountTarget")
            self._sm_targets[handle.value] = sms

    def close(self) -> None:
        if self.gemm_algos is not None and not self._closed:
            self.gemm_algos.close()
            self.gemm_algos = None
        super().close()

    def use_gemm_algos(self, min_gflop: float, folder: Path | None) -> None:
        """Time cuBLASLt's algorithms for fp16 GEMMs of at least ``min_gflop`` GFLOP and keep the
        fastest (``gemm_algos.LtAlgos``; the choices saved in ``folder``, ``None``: not saved)."""
        from lc0py.gpu.gemm_algos import AlgoStore, LtAlgos

        if self.gemm_algos is None:
            store = AlgoStore(folder, LtAlgos.fingerprint(self))
            self.gemm_algos = LtAlgos(self, store, min_gflop * 1e9)
        else:
            self.gemm_algos.min_flops = min_gflop * 1e9

    def _tuned_gemm(
        self,
        handle: ctypes.c_void_p,
        stream: int,
        call: GemmCall,
        dtype: str,
        alpha: float,
        beta: float,
        sms: int,
    ) -> bool:
        algos = self.gemm_algos
        if algos is None or dtype != "fp16" or sms:
            return False
        self._set_sm_target(handle, 0)  # a target left by an earlier GEMM would skew the timing
        return bool(
            algos.gemm(
                call,
                alpha,
                beta,
                stream,
                (self._stream_workspaces[stream], BLAS_WORKSPACE),
                self._capturing,
                lambda c: self._column_major_gemm(handle, replace(call, c=c), dtype, alpha, beta),
            )
        )

    def _column_major_gemm(
        self, handle: ctypes.c_void_p, call: GemmCall, dtype: str, alpha: float, beta: float
    ) -> None:
        cb = self._cublas
        assert cb is not None
        al, be = ctypes.c_float(alpha), ctypes.c_float(beta)
        args = call.blas_args(
            handle,
            _CUBLAS_OPS,
            _CUDA_DTYPES[dtype],
            ctypes.byref(al),
            ctypes.byref(be),
            _CUBLAS_COMPUTE_32F,
            _CUBLAS_GEMM_DEFAULT,
        )
        if call.batch == 1:
            _Cublas.check(cb.lib.cublasGemmEx(*args), f"cublasGemmEx({call.describe()})")
        else:
            _Cublas.check(
                cb.lib.cublasGemmStridedBatchedEx(*args), f"cublasGemmStridedBatchedEx({call.describe()})"
            )

    # ---- graphs ----------------------------------------------------------------------------
    def begin_capture(self, stream: int) -> None:
        mode = self._drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        _check(self._drv.cuStreamBeginCapture(self._stream(stream), mode), "cuStreamBeginCapture")
        self._capturing = True

    def end_capture(self, stream: int) -> int:
        self._capturing = False
        graph = _check(self._drv.cuStreamEndCapture(self._stream(stream)), "cuStreamEndCapture")
        try:
            exe = _check(self._drv.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        finally:
            _check(self._drv.cuGraphDestroy(graph), "cuGraphDestroy")
        return self._keep(exe)

    def launch_graph(self, graph: int, stream: int) -> None:
        _check(self._drv.cuGraphLaunch(self._objs[graph], self._stream(stream)), "cuGraphLaunch")

    def destroy_graph(self, graph: int) -> None:
        obj = self._objs.pop(graph, None)
        if obj is not None:
            _check(self._drv.cuGraphExecDestroy(obj), "cuGraphExecDestroy")


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """Registry probe: ``None`` when an NVIDIA GPU is usable, else the reason (cheap, cached)."""
    try:
        drv = _driver()
    except BackendUnavailable as exc:
        return str(exc)
    try:
        (status,) = drv.cuInit(0)
        if int(status) != 0:
            return f"no NVIDIA driver/GPU found ({status})"
        status, count = drv.cuDeviceGetCount()
        if int(status) != 0 or count == 0:
            return "no NVIDIA driver/GPU found"
    except Exception as exc:
        return f"no NVIDIA driver/GPU found ({exc})"
    return None


def device_count() -> int:
    """NVIDIA GPUs this process can use (0 without a driver, a device or cuda-python)."""
    if probe() is not None:
        return 0
    status, count = _driver().cuDeviceGetCount()
    return int(count) if int(status) == 0 else 0
