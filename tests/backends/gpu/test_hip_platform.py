"""HipPlatform's host logic against a fake hip-python (the project has no AMD GPU).

The fake (``FakeHip``) records every call and answers like hip-python does: ``(status, *values)``
tuples, handle objects with ``__int__``. It checks what we can check without ROCm: import and
error messages without hip-python/ROCm, the call sequences, status -> exception mapping, the
kernel-argument buffer handed to ``hipModuleLaunchKernel``, hiprtc options, and that a row-major
``gemm`` request becomes the right column-major hipBLAS call (a numpy column-major BLAS executes
the fake call on fake device memory). Pattern: tinygrad ``test/mockgpu/``.
"""

from __future__ import annotations

import ctypes
import enum
import struct
import subprocess
import sys
import types
from typing import Any

import numpy as np
import pytest

from lc0py.errors import BackendOptionError, BackendUnavailable, KernelCompileError
from lc0py.gpu import hip_platform as hp
from lc0py.gpu.platform import GpuError


# ------------------------------------------------------------------------------- the fake -------
class hipError_t(enum.IntEnum):  # noqa: N801 - hip-python's names
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorOutOfMemory = 2
    hipErrorNoDevice = 100
    hipErrorNotReady = 600


class hiprtcResult(enum.IntEnum):  # noqa: N801
    HIPRTC_SUCCESS = 0
    HIPRTC_ERROR_COMPILATION = 6


class Handle:
    """What hip-python returns for streams, events, modules, pointers: an object with __int__."""

    _next = 0x10000

    def __init__(self, kind: str) -> None:
        Handle._next += 0x100
        self.kind, self.value = kind, Handle._next

    def __int__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"<{self.kind} {self.value:#x}>"


class Props:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


MI250_PROPS = dict(
    gcnArchName=b"gfx90a:sramecc+:xnack-\x00\x00",
    name=b"AMD Instinct MI250X\x00",
    multiProcessorCount=110,
    warpSize=64,
    sharedMemPerBlock=65536,
    sharedMemPerBlockOptin=0,
    totalGlobalMem=64 << 30,
    l2CacheSize=8 << 20,
)

OK = hipError_t.hipSuccess


class FakeHip(types.ModuleType):
    """``hip.hip``: records (name, args); unknown functions succeed and return ``(hipSuccess,)``."""

    hipError_t = hipError_t
    hipStreamNonBlocking = 1
    hipEventDisableTiming = 2
    hipStreamCaptureMode = enum.IntEnum(
        "hipStreamCaptureMode", {"hipStreamCaptureModeGlobal": 0, "hipStreamCaptureModeThreadLocal": 1}
    )
    hipDataType = enum.IntEnum("hipDataType", {"HIP_R_32F": 0, "HIP_R_16F": 2})

    def __init__(
        self, props: dict[str, Any] | None = None, devices: int = 1, old_props_api: bool = False
    ) -> None:
        super().__init__("hip.hip")
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.fail: dict[str, hipError_t] = {}
        self.props = Props(**(props or MI250_PROPS))
        self.devices = devices
        self.old_props_api = old_props_api
        self.launches: list[dict[str, Any]] = []

    def _rec(self, name: str, *args: Any) -> hipError_t:
        self.calls.append((name, args))
        return self.fail.get(name, OK)

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("hip"):
            raise AttributeError(name)
        return lambda *args: (self._rec(name, *args),)

    def hipGetDeviceCount(self) -> tuple[Any, ...]:
        return (self._rec("hipGetDeviceCount"), self.devices)

    def hipGetDeviceProperties(self, *args: Any) -> tuple[Any, ...]:
        if self.old_props_api:
            if len(args) != 2:
                raise TypeError("hipGetDeviceProperties(props, deviceId)")
            args[0].__dict__.update(self.props.__dict__)
            return (self._rec("hipGetDeviceProperties", *args),)
        if len(args) != 1:
            raise TypeError("hipGetDeviceProperties(deviceId)")
        return (self._rec("hipGetDeviceProperties", *args), self.props)

    def hipDeviceProp_t(self) -> Props:  # noqa: N802
        return Props()

    def hipGetErrorString(self, status: Any) -> tuple[Any, ...]:
        return (OK, {hipError_t.hipErrorOutOfMemory: b"out of memory"}.get(status, b"unknown error"))

    def _handle(self, name: str, *args: Any) -> tuple[Any, ...]:
        return (self._rec(name, *args), Handle(name))

    def hipMalloc(self, n: int) -> tuple[Any, ...]:
        return self._handle("hipMalloc", n)

    def hipHostMalloc(self, n: int, flags: int) -> tuple[Any, ...]:
        status = self._rec("hipHostMalloc", n, flags)
        buf = ctypes.create_string_buffer(n)
        self.__dict__.setdefault("_pinned", []).append(buf)
        return (status, ctypes.addressof(buf))

    def hipStreamCreateWithFlags(self, flags: int) -> tuple[Any, ...]:
        return self._handle("hipStreamCreateWithFlags", flags)

    def hipEventCreateWithFlags(self, flags: int) -> tuple[Any, ...]:
        return self._handle("hipEventCreateWithFlags", flags)

    def hipEventQuery(self, ev: Any) -> tuple[Any, ...]:
        return (self.fail.get("hipEventQuery", OK),)

    def hipModuleLoadData(self, image: bytes) -> tuple[Any, ...]:
        return self._handle("hipModuleLoadData", image)

    def hipModuleGetFunction(self, module: Any, name: bytes) -> tuple[Any, ...]:
        return self._handle("hipModuleGetFunction", module, name)

    def hipStreamEndCapture(self, stream: Any) -> tuple[Any, ...]:
        return self._handle("hipStreamEndCapture", stream)

    def hipGraphInstantiateWithFlags(self, graph: Any, flags: int) -> tuple[Any, ...]:
        return self._handle("hipGraphInstantiateWithFlags", graph, flags)

    def hipRuntimeGetVersion(self) -> tuple[Any, ...]:
        return (self._rec("hipRuntimeGetVersion"), 60241512)

    def hipModuleLaunchKernel(
        self,
        f: Any,
        gx: int,
        gy: int,
        gz: int,
        bx: int,
        by: int,
        bz: int,
        shared: int,
        stream: Any,
        params: Any,
        extra: int,
    ) -> tuple[Any, ...]:
        # Decode "extra" the way HIP does: {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END}.
        cfg = (ctypes.c_void_p * 5).from_address(extra)
        size = ctypes.c_size_t.from_address(cfg[3]).value
        self.launches.append(
            dict(
                f=f,
                grid=(gx, gy, gz),
                block=(bx, by, bz),
                shared=shared,
                stream=stream,
                params=params,
                markers=(cfg[0], cfg[2], cfg[4]),
                buffer=ctypes.string_at(cfg[1], size),
            )
        )
        return (self._rec("hipModuleLaunchKernel", f),)


class FakeHiprtc(types.ModuleType):
    hiprtcResult = hiprtcResult

    def __init__(self, fail_log: str | None = None) -> None:
        super().__init__("hip.hiprtc")
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.fail_log = fail_log
        self.code = b"\x7fELF fake hsaco"
        self.log = (fail_log or "").encode()

    def hiprtcVersion(self) -> tuple[Any, ...]:
        return (hiprtcResult.HIPRTC_SUCCESS, 6, 2)

    def hiprtcCreateProgram(
        self, src: bytes, name: bytes, n: int, headers: list[bytes], names: list[bytes]
    ) -> tuple[Any, ...]:
        self.calls.append(("create", (src, name, n, headers, names)))
        return (hiprtcResult.HIPRTC_SUCCESS, Handle("prog"))

    def hiprtcCompileProgram(self, prog: Any, n: int, opts: list[bytes]) -> tuple[Any, ...]:
        self.calls.append(("compile", (n, opts)))
        bad = self.fail_log is not None
        return (hiprtcResult.HIPRTC_ERROR_COMPILATION if bad else hiprtcResult.HIPRTC_SUCCESS,)

    def hiprtcGetProgramLogSize(self, prog: Any) -> tuple[Any, ...]:
        return (hiprtcResult.HIPRTC_SUCCESS, len(self.log) + 1)

    def hiprtcGetProgramLog(self, prog: Any, buf: bytearray) -> tuple[Any, ...]:
        buf[: len(self.log)] = self.log
        return (hiprtcResult.HIPRTC_SUCCESS,)

    def hiprtcGetCodeSize(self, prog: Any) -> tuple[Any, ...]:
        return (hiprtcResult.HIPRTC_SUCCESS, len(self.code))

    def hiprtcGetCode(self, prog: Any, buf: bytearray) -> tuple[Any, ...]:
        buf[:] = self.code
        return (hiprtcResult.HIPRTC_SUCCESS,)

    def hiprtcDestroyProgram(self, prog: Any) -> tuple[Any, ...]:
        self.calls.append(("destroy", (prog,)))
        return (hiprtcResult.HIPRTC_SUCCESS,)


def install(
    monkeypatch: pytest.MonkeyPatch,
    hip: FakeHip,
    hiprtc: FakeHiprtc | None = None,
    hipblas: types.ModuleType | None = None,
) -> None:
    pkg = types.ModuleType("hip")
    pkg.hip = hip  # type: ignore[attr-defined]
    pkg.hiprtc = hiprtc or FakeHiprtc()  # type: ignore[attr-defined]
    if hipblas is not None:
        pkg.hipblas = hipblas  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hip", pkg)
    hp.probe.cache_clear()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeHip:
    h = FakeHip()
    install(monkeypatch, h)
    return h


# ------------------------------------------------------------------------------- availability --
def test_module_imports_without_hip_python() -> None:
    code = (
        "import sys; sys.modules['hip'] = None\n"  # hip-python absent, whatever is installed here
        "import lc0py, lc0py.gpu.hip_platform as hp\n"
        "assert hp.probe() == hp.INSTALL_HINT, hp.probe()\n"
        "try:\n    hp.HipPlatform()\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "BackendUnavailable hip-python is not installed (pip install 'lc0py[rocm]')"


def test_no_rocm_runtime_hip_python_7_style(monkeypatch: pytest.MonkeyPatch) -> None:
    """hip-python >= 7 imports fine and fails on the first call when libamdhip64 is missing."""
    h = FakeHip()

    def no_lib() -> None:
        raise RuntimeError("failed to dlopen 'libamdhip64.so'")

    h.hipGetDeviceCount = no_lib  # type: ignore[method-assign]
    install(monkeypatch, h)
    with pytest.raises(BackendUnavailable, match=r"^no AMD GPU/ROCm runtime found \(failed to dlopen"):
        hp.HipPlatform()
    assert hp.probe().startswith("no AMD GPU/ROCm runtime found")


def test_no_rocm_runtime_old_hip_python_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """hip-python <= 6 loads libamdhip64 while importing: an ImportError that is not 'no module'."""

    class Finder:
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name == "hip":
                raise ImportError("libamdhip64.so: cannot open shared object file")
            return None

    monkeypatch.delitem(sys.modules, "hip", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    hp.probe.cache_clear()
    with pytest.raises(BackendUnavailable, match=r"^no AMD GPU/ROCm runtime found \(libamdhip64"):
        hp.HipPlatform()


def test_zero_devices_and_bad_index(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, FakeHip(devices=0))
    with pytest.raises(BackendUnavailable, match=r"^no AMD GPU/ROCm runtime found \(0 devices\)$"):
        hp.HipPlatform()
    assert hp.probe() == hp.NO_RUNTIME
    install(monkeypatch, FakeHip(devices=2))
    with pytest.raises(BackendOptionError, match=r"^gpu=3: this machine has 2 ROCm devices \(0, 1\)$"):
        hp.HipPlatform(3)
    with pytest.raises(BackendOptionError, match=r"^gpu=2: this machine has 2 ROCm devices"):
        hp.HipPlatform(2)  # ordinals count from 0
    assert hp.probe() is None


@pytest.mark.parametrize("old_api", [False, True], ids=["props-returned", "props-filled"])
def test_device_info(monkeypatch: pytest.MonkeyPatch, old_api: bool) -> None:
    h = FakeHip(old_props_api=old_api)
    install(monkeypatch, h)
    p = hp.HipPlatform(0)
    assert h.names()[:3] == ["hipGetDeviceCount", "hipSetDevice", "hipGetDeviceProperties"]
    assert p.target == "gfx90a:sramecc+:xnack-"  # compile for the full target id ...
    info = p.info
    assert (info.vendor, info.arch, info.name) == (
        "amd",
        "gfx90a",
        "AMD Instinct MI250X",
    )  # ... tune on the arch
    assert (info.warp_size, info.sm_count, info.shared_mem_per_block_optin) == (64, 110, 65536)
    assert p.binary_kind == "hsaco" and p.vendor == "amd"


# ------------------------------------------------------------------------------- status codes --
def test_status_becomes_gpu_error_with_call_and_message(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    fake.fail["hipMalloc"] = hipError_t.hipErrorOutOfMemory
    with pytest.raises(
        GpuError, match=r"^hipMalloc\(1024 bytes\) failed \(hipErrorOutOfMemory: out of memory\)$"
    ):
        p.alloc(1024)
    fake.fail["hipStreamSynchronize"] = hipError_t.hipErrorInvalidValue
    with pytest.raises(GpuError, match=r"hipStreamSynchronize failed \(hipErrorInvalidValue"):
        p.synchronize(p.create_stream())


def test_event_query_not_ready_is_false_not_an_error(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    ev = p.create_event(timing=True)
    assert ("hipEventCreateWithFlags", (0,)) in fake.calls  # timing events: default flags
    assert ev.query() is True
    fake.fail["hipEventQuery"] = hipError_t.hipErrorNotReady
    assert ev.query() is False
    fake.fail["hipEventQuery"] = hipError_t.hipErrorInvalidValue
    with pytest.raises(GpuError, match="hipEventQuery failed"):
        ev.query()
    p.create_event()
    assert fake.calls[-1] == ("hipEventCreateWithFlags", (2,))  # hipEventDisableTiming


def test_memory_and_stream_calls(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    s = p.create_stream()
    assert fake.calls[-1] == ("hipStreamCreateWithFlags", (1,))  # non-blocking
    d = p.alloc(256)
    host = np.arange(64, dtype=np.float32)
    p.copy_h2d(d, host, 256, s)
    name, args = fake.calls[-1]
    assert name == "hipMemcpyHtoDAsync" and args[0] == d and args[1] == host.ctypes.data and args[2] == 256
    assert int(args[3]) == s  # the kept stream object, not a bare int
    p.memset(d, 0x1FF, 256, 0)
    assert fake.calls[-1] == ("hipMemsetD8Async", (d, 0xFF, 256, 0))
    p.copy_h2d(d, host, 0, s)  # zero bytes: no call
    assert fake.calls[-1][0] == "hipMemsetD8Async"
    with pytest.raises(ValueError, match="C-contiguous"):
        p.copy_d2h(host[::2], d, 128, s)
    buf = p.alloc_host(64)
    buf.view(np.float32, (16,))[:] = 3.0
    p.free_host(buf)
    assert buf.ptr == 0 and fake.names()[-1] == "hipHostFree"


# ------------------------------------------------------------------------------- launch --------
def test_launch_packs_arguments_with_natural_alignment(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    fn = p.get_function(p.load_module(b"hsaco"), "flash_attention_f16")
    s = p.create_stream()
    args = [
        ctypes.c_void_p(0x7F0000001000),
        ctypes.c_int(-5),
        ctypes.c_float(1.5),
        ctypes.c_uint64(2**40 + 3),
        ctypes.c_int(7),
        ctypes.c_void_p(None),
        ctypes.c_uint(9),
    ]
    p.launch(fn, (4, 24, 2), (256, 1, 1), 1024, s, args)
    (launch,) = fake.launches
    assert launch["grid"] == (4, 24, 2) and launch["block"] == (256, 1, 1) and launch["shared"] == 1024
    assert int(launch["f"]) == fn and int(launch["stream"]) == s and launch["params"] is None
    assert launch["markers"] == (1, 2, 3)  # BUFFER_POINTER, BUFFER_SIZE, END
    # The C ABI, written out: pointer @0, int @8, float @12, u64 @16, int @24, (pad 4), null @32, uint @40,
    # struct size rounded up to its 8-byte alignment.
    expected = struct.pack("<QifQi4xQI4x", 0x7F0000001000, -5, 1.5, 2**40 + 3, 7, 0, 9)
    assert launch["buffer"] == expected


def test_launch_rejects_plain_python_numbers(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    fn = p.get_function(p.load_module(b"x"), "k")
    with pytest.raises(TypeError, match="not a ctypes scalar"):
        p.launch(fn, (1, 1, 1), (64, 1, 1), 0, 0, [5])  # type: ignore[list-item]


# ------------------------------------------------------------------------------- hiprtc --------
HEADERS = {"prelude_hiprtc.h": "// prelude", "mma.h": "// mma", "mma_amd.h": "// amd"}


def test_compile_sequence_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    rtc = FakeHiprtc()
    install(monkeypatch, FakeHip(), rtc)
    p = hp.HipPlatform()
    code = p.compile(
        'extern "C" __global__ void k() {}', "flash_attention.hip", ["-DLC0_FA_DEPTH=64"], HEADERS
    )
    assert code == rtc.code
    (_, (src, name, n, texts, names)), (_, (nopt, opts)), (last, _) = rtc.calls
    assert (
        name == b"flash_attention.hip" and n == 3 and names == [b"prelude_hiprtc.h", b"mma.h", b"mma_amd.h"]
    )
    assert src.startswith(b'#include "prelude_hiprtc.h"\n#line 1 "flash_attention.hip"\nextern')
    assert opts == [b"--offload-arch=gfx90a:sramecc+:xnack-", b"-std=c++17", b"-O3", b"-DLC0_FA_DEPTH=64"]
    assert nopt == len(opts) and last == "destroy"
    assert p.compiler_version() == "hiprtc-6.2-hip60241512-sramecc+:xnack-"


def test_compile_error_carries_log_and_destroys_program(monkeypatch: pytest.MonkeyPatch) -> None:
    rtc = FakeHiprtc(fail_log="flash_attention.hip:12:3: error: use of undeclared identifier 'x'")
    install(monkeypatch, FakeHip(), rtc)
    p = hp.HipPlatform()
    with pytest.raises(KernelCompileError, match="HIPRTC_ERROR_COMPILATION") as exc:
        p.compile("bad", "flash_attention.hip", [], HEADERS)
    assert "undeclared identifier" in exc.value.log
    assert rtc.calls[-1][0] == "destroy"
    with pytest.raises(KernelCompileError, match="prelude_hiprtc.h missing"):
        p.compile("x", "y.hip", [], {"mma.h": ""})


# ------------------------------------------------------------------------------- graphs --------
def test_graph_capture_sequence(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    s = p.create_stream()
    p.begin_capture(s)
    g = p.end_capture(s)
    p.launch_graph(g, s)
    p.destroy_graph(g)
    seq = fake.names()[-6:]
    assert seq == [
        "hipStreamBeginCapture",
        "hipStreamEndCapture",
        "hipGraphInstantiateWithFlags",
        "hipGraphDestroy",
        "hipGraphLaunch",
        "hipGraphExecDestroy",
    ]
    assert fake.calls[-6][1][1] == FakeHip.hipStreamCaptureMode.hipStreamCaptureModeThreadLocal


# ------------------------------------------------------------------------------- GEMM ----------
def colmajor_gemm(
    ta: bool,
    tb: bool,
    m: int,
    n: int,
    k: int,
    alpha: float,
    A: np.ndarray,
    lda: int,
    B: np.ndarray,
    ldb: int,
    beta: float,
    C: np.ndarray,
    ldc: int,
) -> None:
    """Reference BLAS semantics on flat buffers: column-major, element (i, j) at i + j*ld."""

    def mat(buf: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
        return np.lib.stride_tricks.as_strided(buf, (rows, cols), (buf.itemsize, ld * buf.itemsize))

    opa = mat(A, k, m, lda).T if ta else mat(A, m, k, lda)
    opb = mat(B, n, k, ldb).T if tb else mat(B, k, n, ldb)
    c = mat(C, m, n, ldc)
    c[...] = (alpha * (opa.astype(np.float64) @ opb.astype(np.float64)) + beta * c).astype(C.dtype)


class FakeHipblas(types.ModuleType):
    """hipBLAS in one of its three API styles, executing GEMMs on ``memory`` (ptr -> flat array)."""

    def __init__(self, style: str, memory: dict[int, np.ndarray]) -> None:
        super().__init__("hip.hipblas")
        self.style, self.memory, self.calls = style, memory, []
        self.hipblasOperation_t = enum.IntEnum(
            "hipblasOperation_t", {"HIPBLAS_OP_N": 111, "HIPBLAS_OP_T": 112}
        )
        self.hipblasGemmAlgo_t = enum.IntEnum("hipblasGemmAlgo_t", {"HIPBLAS_GEMM_DEFAULT": 160})
        if style in ("rocm5", "rocm6"):  # the enum the ROCm 5 and 6 bindings still have
            self.hipblasDatatype_t = enum.IntEnum(
                "hipblasDatatype_t", {"HIPBLAS_R_16F": 150, "HIPBLAS_R_32F": 151}
            )
        if style != "rocm5":
            self.hipblasComputeType_t = enum.IntEnum("hipblasComputeType_t", {"HIPBLAS_COMPUTE_32F": 2})
        if style == "rocm6":
            self.hipblasGemmEx_v2, self.hipblasGemmStridedBatchedEx_v2 = self._gemm, self._batched
        else:
            self.hipblasGemmEx, self.hipblasGemmStridedBatchedEx = self._gemm, self._batched

    def hipblasCreate(self) -> tuple[Any, ...]:
        self.calls.append(("hipblasCreate", ()))
        return (0, Handle("hipblas"))

    def hipblasSetStream(self, h: Any, s: Any) -> tuple[Any, ...]:
        self.calls.append(("hipblasSetStream", (h, s)))
        return (0,)

    def hipblasSetWorkspace(self, h: Any, ptr: int, size: int) -> tuple[Any, ...]:
        self.calls.append(("hipblasSetWorkspace", (h, ptr, size)))
        return (0,)

    def hipblasDestroy(self, h: Any) -> tuple[Any, ...]:
        self.calls.append(("hipblasDestroy", (h,)))
        return (0,)

    def _gemm(self, h, ta, tb, m, n, k, al, A, at, lda, B, bt, ldb, be, C, ct, ldc, comp, algo):  # noqa: ANN001
        self.calls.append(("gemm", (ta, tb, m, n, k, at, comp, algo)))
        self._run(ta, tb, m, n, k, al, A, lda, 0, B, ldb, 0, be, C, ldc, 0, 1)
        return (0,)

    def _batched(
        self, h, ta, tb, m, n, k, al, A, at, lda, sa, B, bt, ldb, sb, be, C, ct, ldc, sc, batch, comp, algo
    ):  # noqa: ANN001
        self.calls.append(("batched", (ta, tb, m, n, k, at, comp, algo, batch)))
        self._run(ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, batch)
        return (0,)

    def _run(self, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, batch) -> None:  # noqa: ANN001
        alpha = ctypes.c_float.from_address(al).value
        beta = ctypes.c_float.from_address(be).value
        T = int(self.hipblasOperation_t.HIPBLAS_OP_T)
        for i in range(batch):
            colmajor_gemm(
                int(ta) == T,
                int(tb) == T,
                m,
                n,
                k,
                alpha,
                self.memory[A][i * sa :],
                lda,
                self.memory[B][i * sb :],
                ldb,
                beta,
                self.memory[C][i * sc :],
                ldc,
            )


@pytest.mark.parametrize("style", ["rocm5", "rocm6", "rocm7"])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False), (True, True)])
def test_row_major_gemm_through_hipblas(
    monkeypatch: pytest.MonkeyPatch, style: str, trans_a: bool, trans_b: bool
) -> None:
    """A row-major request, padded leading dimensions, alpha/beta: numpy's answer must come out."""
    rng = np.random.default_rng(5)
    m, n, k, pad = 5, 7, 3, 2
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    c0 = rng.standard_normal((m, n)).astype(np.float32)

    # Row-major storage with padded rows (row stride = cols + pad), as the platform promises.
    def padded(x: np.ndarray) -> np.ndarray:
        out = np.full((x.shape[0], x.shape[1] + pad), np.nan, np.float32)
        out[:, : x.shape[1]] = x
        return out

    A, B, C = padded(a), padded(b), padded(c0)
    memory = {0xA000: A.reshape(-1), 0xB000: B.reshape(-1), 0xC000: C.reshape(-1)}
    blas = FakeHipblas(style, memory)
    install(monkeypatch, FakeHip(), hipblas=blas)
    p = hp.HipPlatform()
    p.gemm(
        0,
        m,
        n,
        k,
        0xA000,
        A.shape[1],
        0xB000,
        B.shape[1],
        0xC000,
        C.shape[1],
        dtype="fp32",
        trans_a=trans_a,
        trans_b=trans_b,
        alpha=0.5,
        beta=2.0,
    )
    expected = 0.5 * ((a.T if trans_a else a) @ (b.T if trans_b else b)) + 2.0 * c0
    np.testing.assert_allclose(C[:, :n], expected, rtol=1e-5, atol=1e-5)
    assert np.isnan(C[:, n:]).all()  # the padding is never written
    (name, (ta, tb, mm, nn, kk, dt, comp, algo)) = blas.calls[-1]
    assert (mm, nn, kk) == (n, m, k)  # column-major C^T: m and n swap
    if style == "rocm5":
        assert dt == blas.hipblasDatatype_t.HIPBLAS_R_32F and comp == blas.hipblasDatatype_t.HIPBLAS_R_32F
    else:
        assert dt == FakeHip.hipDataType.HIP_R_32F and comp == blas.hipblasComputeType_t.HIPBLAS_COMPUTE_32F


def test_batched_gemm_and_fp16_types(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(6)
    batch, m, n, k = 3, 4, 6, 5
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    bt = rng.standard_normal((batch, n, k)).astype(np.float32)  # B given as [n, k]: trans_b
    c = np.zeros((batch, m, n), np.float32)
    memory = {1: a.reshape(-1), 2: bt.reshape(-1), 3: c.reshape(-1)}
    blas = FakeHipblas("rocm7", memory)
    install(monkeypatch, FakeHip(), hipblas=blas)
    p = hp.HipPlatform()
    p.gemm(
        0,
        m,
        n,
        k,
        1,
        k,
        2,
        k,
        3,
        n,
        dtype="fp32",
        trans_b=True,
        batch=batch,
        stride_a=m * k,
        stride_b=n * k,
        stride_c=m * n,
    )
    np.testing.assert_allclose(c, a @ bt.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)
    assert blas.calls[-1][0] == "batched" and blas.calls[-1][1][-1] == batch
    assert p._blas is not None and p._blas.dtypes["fp16"] == FakeHip.hipDataType.HIP_R_16F
    with pytest.raises(GpuError, match="epilogue 'bias_relu' not supported"):
        p.gemm(0, m, n, k, 1, k, 2, k, 3, n, dtype="fp16", epilogue="bias_relu")
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        p.gemm(0, m, n, k, 1, k, 2, k, 3, n, dtype="bf16")


def test_missing_hipblas_binding_says_which_extra(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    with pytest.raises(BackendUnavailable, match=r"hip-python\[libraries\]"):
        p.gemm(0, 1, 1, 1, 1, 1, 2, 1, 3, 1, dtype="fp32")


# ------------------------------------------------------------------------------- arch table ----
@pytest.mark.parametrize(
    "arch,kind",
    [
        ("gfx1100", "wmma"),
        ("gfx1151", "wmma"),
        ("gfx1103", "wmma"),
        ("gfx90a:sramecc+:xnack-", "mfma"),
        ("gfx942", "mfma"),
        ("gfx908", "mfma"),
        ("gfx1030", None),
        ("gfx1201", "wmma"),
        ("gfx906", None),
    ],
)
def test_mma_kind(arch: str, kind: str | None) -> None:
    assert hp.mma_kind(arch) == kind


def test_blas_handle_and_workspace_per_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """GEMMs on the forked second stream get their own handle and rocBLAS workspace: two streams
    sharing one workspace would race (the CUDA platform does the same with cuBLAS)."""
    c = np.zeros(4, np.float32)
    memory = {1: np.ones(4, np.float32), 2: np.ones(4, np.float32), 3: c}
    blas = FakeHipblas("rocm7", memory)
    hip = FakeHip()
    install(monkeypatch, hip, hipblas=blas)
    p = hp.HipPlatform()
    s1, s2 = p.create_stream(), p.create_stream()
    for s in (s1, s2, s1, s2):
        p.gemm(s, 2, 2, 2, 1, 2, 2, 2, 3, 2, dtype="fp32")
    creates = [c for c in blas.calls if c[0] == "hipblasCreate"]
    binds = [(int(a[0]), int(a[1])) for name, a in blas.calls if name == "hipblasSetStream"]
    spaces = [(int(a[0]), a[1]) for name, a in blas.calls if name == "hipblasSetWorkspace"]
    assert len(creates) == 2 and len(binds) == 2 and len({h for h, _ in binds}) == 2
    assert {st for _, st in binds} == {s1, s2}
    assert len({ptr for _, ptr in spaces}) == 2  # a workspace each
    assert [n for n, _ in blas.calls].count("gemm") == 4
    p.close()
    assert [n for n, _ in blas.calls].count("hipblasDestroy") == 2
    assert hip.names().count("hipFree") == 2  # both workspaces freed


def test_stream_wait_event_enables_the_forked_forward_pass(fake: FakeHip) -> None:
    p = hp.HipPlatform()
    assert p.can_fork
    s, ev = p.create_stream(), p.create_event()
    p.stream_wait_event(s, ev.handle)
    name, args = fake.calls[-1]
    assert name == "hipStreamWaitEvent" and int(args[0]) == s and int(args[1]) == ev.handle and args[2] == 0
