"""Strided-batched FP8 GEMMs through cuBLASLt: the 36 Winograd GEMMs of a residual convolution.

``CublasLtFp8`` (cublaslt.py) runs one ``[M, K] x [N, K]ᵀ`` FP8 GEMM. A Winograd F(4x4,3x3)
convolution is 36 of them, one per element ``t`` of the 6x6 transform, all of one shape::

    M[t] (fp16, [tiles, N]) = alpha * (*x_scale) * V[t] (e4m3, rows of ld ldx) @ U[t]ᵀ (e4m3, [N, K])

with ``V[t]`` read from the tile-major ``[tiles, 36, K]`` tensor (row ``r`` of ``V[t]`` at ``r*36K +
tK``: leading dimension ``36K``, batch stride ``K``), ``U[t]`` at ``t*N*K`` and ``M[t]`` at
``t*tiles*N``. cuBLASLt batches them with ``CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT`` and
``CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET`` on each layout: one launch, one alpha and one
activation scale for all 36 (so the weight has one scale per output channel shared by the 36
elements, fp8_residual.py). FP8 wants every batch's pointer 16-byte aligned: K a multiple of 16.
Where the heuristic finds no batched algorithm the call falls back to 36 single GEMMs (each with
the leading dimension ``36K``), logged once.
"""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass

from lc0py.gpu.cublaslt import (
    CUBLAS_COMPUTE_32F,
    CUBLAS_OP_N,
    CUBLAS_OP_T,
    CUDA_R_8F_E4M3,
    CUDA_R_16F,
    CUDA_R_32F,
    DESC_B_SCALE_POINTER,
    DESC_FAST_ACCUM,
    DESC_TRANSA,
    DESC_TRANSB,
    WORKSPACE_BYTES,
    CublasLtFp8,
    HeuristicResult,
    fp8_shape_problem,
)
from lc0py.gpu.platform import GpuError

log = logging.getLogger("lc0py.backends.gpu")

# cublasLtMatrixLayoutAttribute_t (cublasLt.h)
LAYOUT_BATCH_COUNT = 5  # int32_t
LAYOUT_STRIDED_BATCH_OFFSET = 6  # int64_t, in elements


def check(status: int, what: str) -> None:
    """Raise ``GpuError`` for a cuBLASLt status other than success."""
    if status != 0:
        raise GpuError(f"{what} failed (CUBLAS_STATUS {status})")


@dataclass(frozen=True)
class BatchedShape:
    """One strided-batched FP8 GEMM: ``batch`` products ``[m, k] x [n, k]ᵀ``; ``ldx``: the
    activation's leading dimension (elements); strides between batches in elements."""

    m: int
    n: int
    k: int
    ldx: int
    batch: int
    stride_x: int
    stride_w: int
    stride_d: int


def batched_problem(s: BatchedShape) -> str:
    """Why cuBLASLt cannot run this batched FP8 GEMM ('' when it can)."""
    problem = fp8_shape_problem(s.m, s.n, s.k)
    if problem:
        return problem
    if s.ldx < s.k or s.ldx % 16 or s.stride_x % 16 or s.stride_w % 16:
        return (f"batched FP8 GEMM: ldx={s.ldx}, strides {s.stride_x}/{s.stride_w} must be multiples of 16 "
                f"and ldx >= k={s.k}")
    return ""


@dataclass
class _BatchedPlan:
    desc: ctypes.c_void_p
    layouts: tuple[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    algo: HeuristicResult


class CublasLtFp8Batched(CublasLtFp8):
    """``CublasLtFp8`` with ``gemm_batched`` (the module docstring)."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        lib = self.lib
        lib.cublasLtMatrixLayoutSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                         ctypes.c_size_t]
        lib.cublasLtMatrixLayoutSetAttribute.restype = ctypes.c_int
        self._batched: dict[BatchedShape, _BatchedPlan | None] = {}

    def _batch_layout(
        self, dtype: int, rows: int, cols: int, ld: int, batch: int, stride: int
    ) -> ctypes.c_void_p:
        lay = self._layout(dtype, rows, cols, ld)
        if batch > 1:
            count, offset = ctypes.c_int32(batch), ctypes.c_int64(stride)
            for attr, value in ((LAYOUT_BATCH_COUNT, count), (LAYOUT_STRIDED_BATCH_OFFSET, offset)):
                check(self.lib.cublasLtMatrixLayoutSetAttribute(lay, attr, ctypes.byref(value),
                                                                 ctypes.sizeof(value)),
                       "cublasLtMatrixLayoutSetAttribute")
        return lay

    def batched_plan(self, s: BatchedShape) -> _BatchedPlan | None:
        """The plan of ``s`` (None: no algorithm, the caller loops over single GEMMs); made once."""
        if s in self._batched:
            return self._batched[s]
        problem = batched_problem(s)
        if problem:
            raise GpuError(problem)
        lib = self.lib
        desc = ctypes.c_void_p()
        check(lib.cublasLtMatmulDescCreate(ctypes.byref(desc), CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "cublasLtMatmulDescCreate")
        self._set(desc, DESC_TRANSA, ctypes.c_int(CUBLAS_OP_T), "TRANSA")
        self._set(desc, DESC_TRANSB, ctypes.c_int(CUBLAS_OP_N), "TRANSB")
        if self.fast_accum:
            self._set(desc, DESC_FAST_ACCUM, ctypes.c_int8(1), "FAST_ACCUM")
        self._set(desc, DESC_B_SCALE_POINTER, ctypes.c_void_p(self._workspace), "B_SCALE_POINTER")
        a = self._batch_layout(CUDA_R_8F_E4M3, s.k, s.n, s.k, s.batch, s.stride_w)
        b = self._batch_layout(CUDA_R_8F_E4M3, s.k, s.m, s.ldx, s.batch, s.stride_x)
        d = self._batch_layout(CUDA_R_16F, s.n, s.m, s.n, s.batch, s.stride_d)
        result = HeuristicResult()
        count = ctypes.c_int(0)
        status = lib.cublasLtMatmulAlgoGetHeuristic(
            self._handle, desc, a, b, d, d, self._pref, 1, ctypes.byref(result), ctypes.byref(count)
        )
        plan: _BatchedPlan | None = _BatchedPlan(desc, (a, b, d), result)
        if status != 0 or count.value == 0:
            for lay in (a, b, d):
                lib.cublasLtMatrixLayoutDestroy(lay)
            lib.cublasLtMatmulDescDestroy(desc)
            log.info("FP8 batched GEMM %s: no cuBLASLt algorithm (status %s): %d single GEMMs instead",
                     s, status, s.batch)
            plan = None
        self._batched[s] = plan
        return plan

    def gemm_batched(self, stream: int, s: BatchedShape, x_q: int, w_q: int, d: int, x_scale: int,
                     alpha: float) -> None:
        """``d[t] = alpha * (*x_scale) * x_q[t] @ w_q[t]ᵀ`` for ``t < s.batch`` (module docstring)."""
        plan = self.batched_plan(s)
        if plan is None or s.batch == 1:
            single = BatchedShape(s.m, s.n, s.k, s.ldx, 1, 0, 0, 0)
            one = self.batched_plan(single)
            if one is None:
                raise GpuError(f"cublasLtMatmulAlgoGetHeuristic: no FP8 algorithm for {single}")
            for t in range(s.batch):
                self._run(stream, one, x_q + t * s.stride_x, w_q + t * s.stride_w, d + 2 * t * s.stride_d,
                          x_scale, alpha, s)
            return
        self._run(stream, plan, x_q, w_q, d, x_scale, alpha, s)

    def _run(self, stream: int, plan: _BatchedPlan, x_q: int, w_q: int, d: int, x_scale: int, alpha: float,
             s: BatchedShape) -> None:
        self._set(plan.desc, DESC_B_SCALE_POINTER, ctypes.c_void_p(x_scale), "B_SCALE_POINTER")
        al, be = ctypes.c_float(alpha), ctypes.c_float(0.0)
        a, b, dl = plan.layouts
        check(
            self.lib.cublasLtMatmul(
                self._handle, plan.desc, ctypes.byref(al), ctypes.c_void_p(w_q), a, ctypes.c_void_p(x_q), b,
                ctypes.byref(be), ctypes.c_void_p(d), dl, ctypes.c_void_p(d), dl,
                ctypes.byref(plan.algo, 0), ctypes.c_void_p(self._workspace), WORKSPACE_BYTES,
                ctypes.c_void_p(stream or None),
            ),
            f"cublasLtMatmul(batched FP8 {s})",
        )

    def close(self) -> None:
        if not self._closed:
            for plan in self._batched.values():
                if plan is None:
                    continue
                for lay in plan.layouts:
                    self.lib.cublasLtMatrixLayoutDestroy(lay)
                self.lib.cublasLtMatmulDescDestroy(plan.desc)
            self._batched.clear()
        super().close()
