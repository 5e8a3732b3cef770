"""cuBLASLt through ctypes: the FP8 (e4m3) GEMM of the ``cuda-fp8`` backend.

Why cuBLASLt and not cuBLAS: ``cublasGemmEx`` has no FP8 types; FP8 matmuls on Ada/Hopper
(compute capability 8.9+) exist only in cuBLASLt. Bound the way ``cuda_platform`` binds cuBLAS
(ctypes on the library that ``cuda.pathfinder`` finds: the ``nvidia-cublas`` wheel ships
``libcublasLt`` beside ``libcublas``), for the same reasons: a handful of entry points, no
compiled extension, whatever major version is installed.

One call, in the platform's row-major terms::

    D[M, N] (fp16) = alpha * (*x_scale) * (Xq[M, K] @ Wq[N, K]ᵀ)      Xq, Wq e4m3, fp32 accumulation

In cuBLASLt's column-major terms that is ``Dᵀ = op(Wq) · Xqᵀ`` with ``Wq`` transposed: the "TN"
layout FP8 requires (A transposed, B not), A = the weight (``lda = K``), B = the activation
(``ldb = K``), D ``ldd = N``; K and N multiples of 16 (16-byte aligned FP8 rows), every pointer
16-byte aligned. ``x_scale`` is a *device* pointer (``CUBLASLT_MATMUL_DESC_B_SCALE_POINTER``),
written by the quantize kernel on the stream: no host sync, and a captured graph reads the
current batch's scale at replay. The algorithm is asked of the heuristic once per (M, N, K) and
kept; the workspace is allocated once (graph capture allows no allocation).

``outer=True`` (``fp8_scales=outer``): both scales are vectors (cuBLASLt's "outer vector" FP8
scaling, ``CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F``, cuBLAS 12.9+): ``w_scale[N]`` per output
channel of the weight, ``x_scale[M]`` per row of the activation, so the GEMM applies both and no
epilogue pass is needed. Where the library does not offer it, the heuristic finds no algorithm and
the error names the shape and mode.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from dataclasses import dataclass

from lc0py.errors import BackendUnavailable
from lc0py.gpu.platform import GpuError, Platform

# cudaDataType_t / cublasComputeType_t / cublasOperation_t (library_types.h, cublas_api.h)
CUDA_R_32F, CUDA_R_16F, CUDA_R_8F_E4M3 = 0, 2, 28
CUBLAS_COMPUTE_32F = 68
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
# cublasLtMatmulDescAttributes_t (cublasLt.h)
DESC_TRANSA, DESC_TRANSB = 3, 4
DESC_A_SCALE_POINTER, DESC_B_SCALE_POINTER = 17, 18
DESC_FAST_ACCUM = 25
DESC_A_SCALE_MODE, DESC_B_SCALE_MODE = 31, 32
# cublasLtMatmulMatrixScale_t: one float per matrix, or per row of op(A) / column of op(B)
SCALE_SCALAR_32F, SCALE_OUTER_VEC_32F = 0, 3
#: The first cuBLASLt with outer-vector FP8 scaling (cublasLtGetVersion of 12.9.0).
OUTER_VEC_MIN_VERSION = 120900
# cublasLtMatmulPreferenceAttributes_t
PREF_MAX_WORKSPACE_BYTES = 1

WORKSPACE_BYTES = 32 << 20  # NVIDIA's recommendation for Hopper
FP8_ALIGN = 16  # K and N: 16 e4m3 elements = 16 bytes

_STATUS = {
    0: "SUCCESS", 1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE", 8: "ARCH_MISMATCH",
    11: "MAPPING_ERROR", 13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR", 15: "NOT_SUPPORTED",
}


class _HeuristicResult(ctypes.Structure):
    """``cublasLtMatmulHeuristicResult_t``: the algorithm is 8 opaque uint64 (64 bytes)."""

    _fields_ = [
        ("algo", ctypes.c_uint64 * 8),
        ("workspace_size", ctypes.c_size_t),
        ("state", ctypes.c_int),
        ("waves_count", ctypes.c_float),
        ("reserved", ctypes.c_int * 4),
    ]


# the public name (cublaslt_batched.py): ctypes accepts only this class where the argtypes name it
HeuristicResult = _HeuristicResult


def fp8_shape_problem(m: int, n: int, k: int) -> str:
    """Why cuBLASLt cannot run an FP8 GEMM of this shape ('' when it can)."""
    if min(m, n, k) <= 0:
        return f"FP8 GEMM m={m}, n={n}, k={k}: every dimension must be positive"
    bad = [f"{name}={v}" for name, v in (("k", k), ("n", n)) if v % FP8_ALIGN]
    if bad:
        return f"FP8 GEMM m={m}, n={n}, k={k}: {', '.join(bad)} not a multiple of {FP8_ALIGN}"
    return ""


@functools.lru_cache(maxsize=1)
def load_cublaslt() -> ctypes.CDLL:
    """``libcublasLt`` from the ``nvidia-cublas`` wheel or the system CUDA, with its entry points
    typed; ``BackendUnavailable`` naming what was tried."""
    errors: list[str] = []
    lib: ctypes.CDLL | None = None
    try:
        from cuda import pathfinder

        lib = ctypes.CDLL(pathfinder.load_nvidia_dynamic_lib("cublasLt").abs_path)
    except Exception as exc:  # not found through the wheel / CUDA_HOME
        errors.append(str(exc))
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", ctypes.util.find_library("cublasLt")):
        if lib is not None or not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            errors.append(str(exc))
    if lib is None:
        raise BackendUnavailable("cuBLASLt not found (pip install nvidia-cublas): " + "; ".join(errors))
    vp, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    pvp = ctypes.POINTER(vp)
    sig = {
        "cublasLtCreate": [pvp],
        "cublasLtDestroy": [vp],
        "cublasLtMatmulDescCreate": [pvp, i, i],
        "cublasLtMatmulDescDestroy": [vp],
        "cublasLtMatmulDescSetAttribute": [vp, i, vp, sz],
        "cublasLtMatrixLayoutCreate": [pvp, i, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int64],
        "cublasLtMatrixLayoutDestroy": [vp],
        "cublasLtMatrixLayoutSetAttribute": [vp, i, vp, sz],
        "cublasLtMatmulPreferenceCreate": [pvp],
        "cublasLtMatmulPreferenceDestroy": [vp],
        "cublasLtMatmulPreferenceSetAttribute": [vp, i, vp, sz],
        "cublasLtMatmulAlgoGetHeuristic": [vp, vp, vp, vp, vp, vp, vp, i, ctypes.POINTER(_HeuristicResult),
                                           ctypes.POINTER(i)],
        "cublasLtMatmul": [vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, sz, vp],
    }
    for name, args in sig.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    lib.cublasLtGetVersion.argtypes = []
    lib.cublasLtGetVersion.restype = ctypes.c_size_t
    return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise GpuError(f"{what} failed (CUBLAS_STATUS_{_STATUS.get(status, status)})")


@dataclass
class _Plan:
    """Descriptors and the chosen algorithm of one (M, N, K)."""

    desc: ctypes.c_void_p
    layouts: tuple[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]  # A (weight), B (activation), D
    algo: _HeuristicResult


class CublasLtFp8:
    """FP8 GEMMs on one device (see the module docstring). Not thread-safe (one backend drives it)."""

    def __init__(self, platform: Platform, *, fast_accum: bool = False) -> None:
        self.p = platform
        self.lib = load_cublaslt()
        self.fast_accum = fast_accum
        self.version = int(self.lib.cublasLtGetVersion())
        #: outer-vector scales (``fp8_scales=outer``) exist in this cuBLASLt
        self.supports_outer = self.version >= OUTER_VEC_MIN_VERSION
        self._handle = ctypes.c_void_p()
        _check(self.lib.cublasLtCreate(ctypes.byref(self._handle)), "cublasLtCreate")
        self._workspace = platform.alloc(WORKSPACE_BYTES)
        self._pref = ctypes.c_void_p()
        _check(
            self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(self._pref)),
            "cublasLtMatmulPreferenceCreate",
        )
        ws = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(
            self.lib.cublasLtMatmulPreferenceSetAttribute(
                self._pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(ws), ctypes.sizeof(ws)
            ),
            "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
        )
        self._plans: dict[tuple[int, int, int, bool], _Plan] = {}
        self._closed = False

    def _set(self, desc: ctypes.c_void_p, attr: int, value: ctypes._SimpleCData, what: str) -> None:
        _check(
            self.lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(value), ctypes.sizeof(value)),
            f"cublasLtMatmulDescSetAttribute({what})",
        )

    def _layout(self, dtype: int, rows: int, cols: int, ld: int) -> ctypes.c_void_p:
        lay = ctypes.c_void_p()
        _check(
            self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(lay), dtype, rows, cols, ld),
            "cublasLtMatrixLayoutCreate",
        )
        return lay

    def plan(self, m: int, n: int, k: int, outer: bool = False) -> _Plan:
        """The descriptors and heuristic algorithm of an (M, N, K) FP8 GEMM (``outer``: vector
        scales), made once and kept. Call it outside a graph capture (the first eager run of a
        shape does)."""
        key = (m, n, k, outer)
        found = self._plans.get(key)
        if found is not None:
            return found
        problem = fp8_shape_problem(m, n, k)
        if problem:
            raise GpuError(problem)
        lib = self.lib
        desc = ctypes.c_void_p()
        _check(
            lib.cublasLtMatmulDescCreate(ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F),
            "cublasLtMatmulDescCreate",
        )
        self._set(desc, DESC_TRANSA, ctypes.c_int(CUBLAS_OP_T), "TRANSA")
        self._set(desc, DESC_TRANSB, ctypes.c_int(CUBLAS_OP_N), "TRANSB")
        if self.fast_accum:
            self._set(desc, DESC_FAST_ACCUM, ctypes.c_int8(1), "FAST_ACCUM")
        # a scale pointer must be set for the heuristic to see an FP8 problem with scales; the
        # real one is set per call. (The plan serves beta = 0 and beta = 1 alike: C has D's layout.)
        self._set(desc, DESC_B_SCALE_POINTER, ctypes.c_void_p(self._workspace), "B_SCALE_POINTER")
        if outer:
            self._set(desc, DESC_A_SCALE_MODE, ctypes.c_int(SCALE_OUTER_VEC_32F), "A_SCALE_MODE")
            self._set(desc, DESC_B_SCALE_MODE, ctypes.c_int(SCALE_OUTER_VEC_32F), "B_SCALE_MODE")
            self._set(desc, DESC_A_SCALE_POINTER, ctypes.c_void_p(self._workspace), "A_SCALE_POINTER")
        a = self._layout(CUDA_R_8F_E4M3, k, n, k)  # the weight [N, K] row-major, transposed
        b = self._layout(CUDA_R_8F_E4M3, k, m, k)  # the activation [M, K] row-major
        d = self._layout(CUDA_R_16F, n, m, n)  # D [M, N] row-major
        result = _HeuristicResult()
        count = ctypes.c_int(0)
        status = lib.cublasLtMatmulAlgoGetHeuristic(
            self._handle, desc, a, b, d, d, self._pref, 1, ctypes.byref(result), ctypes.byref(count)
        )
        if status != 0 or count.value == 0:
            for lay in (a, b, d):
                lib.cublasLtMatrixLayoutDestroy(lay)
            lib.cublasLtMatmulDescDestroy(desc)
            name = _STATUS.get(status, status)
            raise GpuError(
                f"cublasLtMatmulAlgoGetHeuristic: no FP8 algorithm for m={m}, n={n}, k={k}"
                f"{' with outer-vector scales' if outer else ''} "
                f"(CUBLAS_STATUS_{name}, {count.value} results; cuBLASLt {self.version})"
            )
        plan = _Plan(desc, (a, b, d), result)
        self._plans[key] = plan
        return plan

    def gemm(self, stream: int, m: int, n: int, k: int, x_q: int, w_q: int, d: int, x_scale: int,
             alpha: float, accumulate: bool = False, w_scale: int = 0) -> None:
        """``d[m, n] (+)= alpha * (*x_scale) * x_q[m, k] @ w_q[n, k]ᵀ`` on ``stream`` (module
        docstring); ``accumulate``: ``d`` is also cuBLASLt's C with beta = 1 (a residual added in
        the GEMM's own epilogue); ``w_scale`` (a device ``float[n]``): outer-vector scales, then
        ``x_scale`` is a ``float[m]`` too: ``d[i, j] = alpha * x_scale[i] * w_scale[j] * (...)``."""
        outer = bool(w_scale)
        plan = self.plan(m, n, k, outer)
        self._set(plan.desc, DESC_B_SCALE_POINTER, ctypes.c_void_p(x_scale), "B_SCALE_POINTER")
        if outer:
            self._set(plan.desc, DESC_A_SCALE_POINTER, ctypes.c_void_p(w_scale), "A_SCALE_POINTER")
        al, be = ctypes.c_float(alpha), ctypes.c_float(1.0 if accumulate else 0.0)
        a, b, dl = plan.layouts
        _check(
            self.lib.cublasLtMatmul(
                self._handle, plan.desc, ctypes.byref(al), ctypes.c_void_p(w_q), a, ctypes.c_void_p(x_q), b,
                ctypes.byref(be), ctypes.c_void_p(d), dl, ctypes.c_void_p(d), dl,
                ctypes.byref(plan.algo, 0), ctypes.c_void_p(self._workspace), WORKSPACE_BYTES,
                ctypes.c_void_p(stream or None),
            ),
            f"cublasLtMatmul(FP8 m={m}, n={n}, k={k})",
        )

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        lib = self.lib
        for plan in self._plans.values():
            for lay in plan.layouts:
                lib.cublasLtMatrixLayoutDestroy(lay)
            lib.cublasLtMatmulDescDestroy(plan.desc)
        self._plans.clear()
        lib.cublasLtMatmulPreferenceDestroy(self._pref)
        lib.cublasLtDestroy(self._handle)
        self.p.free(self._workspace)
