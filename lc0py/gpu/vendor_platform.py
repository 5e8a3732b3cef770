"""What the CUDA and HIP platforms share: the handle table, host pointers and the GEMM front end.

``CudaPlatform`` (cuda-python + cuBLAS) and ``HipPlatform`` (hip-python + hipBLAS) wrap runtimes
of the same shape: both hand out handle *objects* for streams, events, modules and graphs, both
BLAS libraries are column-major with one handle (and workspace) per stream, and neither supports a
GEMM epilogue. ``VendorPlatform`` holds that logic once, so each vendor module only spells its own
calls: creating, binding and destroying a BLAS handle (``_new_blas_handle``, ``_bind_blas_handle``,
``_destroy_blas_handle``) and issuing one column-major GEMM (``_column_major_gemm``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.gpu.platform import GpuError, HostBuffer, Platform

#: Bytes of BLAS workspace per stream: cuBLAS and rocBLAS must not allocate while a graph is
#: captured, so each handle gets this up front.
BLAS_WORKSPACE = 32 << 20
GEMM_DTYPES = ("fp16", "fp32")


@dataclass(frozen=True)
class GemmCall:
    """One column-major BLAS GEMM equivalent to a row-major ``Platform.gemm`` request.

    Row-major ``C[M,N] = op(A) op(B)`` is column-major ``C^T[N,M] = op(B)^T op(A)^T``: the
    row-major buffers *are* the column-major transposes, so B goes first, m and n swap, the
    transpose flags stay with their matrices, and every leading dimension is the row stride.
    """

    trans_first: bool  # op of the first column-major operand (our B)
    trans_second: bool  # op of the second (our A)
    m: int
    n: int
    k: int
    first: int
    ld_first: int
    stride_first: int
    second: int
    ld_second: int
    stride_second: int
    c: int
    ldc: int
    stride_c: int
    batch: int

    def blas_args(
        self, handle: Any, ops: Mapping[bool, Any], dtype: Any, alpha: Any, beta: Any, compute: Any, algo: Any
    ) -> tuple[Any, ...]:
        """The arguments of ``cublasGemmEx`` / ``hipblasGemmEx`` (``batch == 1``) or of their
        ``...StridedBatchedEx`` forms, which take the same parameters in the same order.

        ``ops`` maps a transpose flag to the library's operation value, ``dtype`` is the library's
        type of A, B and C, ``alpha``/``beta`` point at host scalars of the ``compute`` type.
        """
        batched = self.batch != 1
        first = (self.first, dtype, self.ld_first) + ((self.stride_first,) if batched else ())
        second = (self.second, dtype, self.ld_second) + ((self.stride_second,) if batched else ())
        out = (self.c, dtype, self.ldc) + ((self.stride_c, self.batch) if batched else ())
        head = (handle, ops[self.trans_first], ops[self.trans_second], self.m, self.n, self.k, alpha)
        return head + first + second + (beta,) + out + (compute, algo)

    def describe(self) -> str:
        """The row-major request for error messages: ``m=…, n=…, k=…[, batch=…]``."""
        text = f"m={self.n}, n={self.m}, k={self.k}"
        return text if self.batch == 1 else f"{text}, batch={self.batch}"


class VendorPlatform(Platform):
    """A ``Platform`` over a vendor runtime with handle objects and a column-major BLAS.

    Subclasses call ``super().__init__()`` and implement the vendor calls; ``blas_name`` names
    their BLAS library in error messages.
    """

    blas_name: str

    def __init__(self) -> None:
        self._objs: dict[int, Any] = {}  # int handle -> the binding's handle object
        self._blas_handles: dict[int, Any] = {}  # stream -> BLAS handle bound to it
        self._workspaces: list[int] = []
        self._closed = False

    # ---- handles ---------------------------------------------------------------------------
    def _keep(self, obj: Any) -> int:
        """Register a binding's handle object; the ``int`` is what callers hold."""
        h = int(obj)
        self._objs[h] = obj
        return h

    def _stream(self, stream: int) -> Any:
        """The handle object of ``stream`` (``0``: the default stream)."""
        return self._objs.get(stream, 0) if stream else 0

    @staticmethod
    def _host_ptr(x: np.ndarray | HostBuffer, nbytes: int, *, writes: bool = False) -> int:
        """The address of a copy's host side, checked: ``nbytes`` must fit ``x`` and a freed
        pinned buffer is refused. A copy past the end would let the device write host memory
        that Python may have given to any other object, silently. ``writes`` (a download):
        a read-only array is refused too, as its memory may be an immutable object (an array
        over ``bytes``) that other code shares."""
        if isinstance(x, HostBuffer):
            if not x.ptr and nbytes:
                raise ValueError("host buffer already freed")
            ptr, size = x.ptr, x.nbytes
        else:
            if not x.flags["C_CONTIGUOUS"]:
                raise ValueError("host array must be C-contiguous")
            if writes and not x.flags["WRITEABLE"]:
                raise ValueError("a download into a read-only host array")
            ptr, size = int(x.ctypes.data), x.nbytes
        if nbytes > size:
            raise ValueError(f"a copy of {nbytes} bytes does not fit its host buffer of {size} bytes")
        return ptr

    # ---- BLAS ------------------------------------------------------------------------------
    def _blas_handle(self, stream: int) -> Any:
        """The BLAS handle of ``stream``: one handle and workspace per stream, so GEMMs on two
        streams (the forked smolgen branch) never share a workspace concurrently. A handle that
        fails to bind is destroyed, never kept half-bound."""
        handle = self._blas_handles.get(stream)
        if handle is None:
            handle = self._new_blas_handle()
            try:
                self._bind_blas_handle(handle, stream)
            except BaseException:
                self._destroy_blas_handle(handle)
                raise
            self._blas_handles[stream] = handle
        return handle

    def _blas_workspace(self) -> int:
        """Device memory for one handle's workspace (freed by ``close``)."""
        ws = self.alloc(BLAS_WORKSPACE)
        self._workspaces.append(ws)
        return ws

    @abstractmethod
    def _new_blas_handle(self) -> Any:
        """A new BLAS handle (loads the BLAS library on first use)."""

    @abstractmethod
    def _bind_blas_handle(self, handle: Any, stream: int) -> None:
        """Give ``handle`` a ``_blas_workspace`` (where the library takes one) and bind it to
        ``stream``."""

    @abstractmethod
    def _destroy_blas_handle(self, handle: Any) -> None:
        """Destroy ``handle`` without raising (called while closing or cleaning up a failure)."""

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
        if epilogue is not None:
            raise GpuError(f"{self.blas_name} gemm: epilogue '{epilogue}' not supported on this platform")
        if dtype not in GEMM_DTYPES:
            raise ValueError(f"gemm dtype '{dtype}' ({', '.join(GEMM_DTYPES)})")
        # B first, m and n swap, each transpose flag stays with its matrix (see GemmCall)
        call = GemmCall(
            trans_b, trans_a, n, m, k, b, ldb, stride_b, a, lda, stride_a, c, ldc, stride_c, batch
        )
        handle = self._blas_handle(stream)
        if self._tuned_gemm(handle, stream, call, dtype, alpha, beta, sms):
            return
        self._set_sm_target(handle, sms)
        self._column_major_gemm(handle, call, dtype, alpha, beta)

    def _tuned_gemm(
        self, handle: Any, stream: int, call: GemmCall, dtype: str, alpha: float, beta: float, sms: int
    ) -> bool:
        """Run ``call`` with an algorithm timed for it (``gemm_algos``) and return ``True``, or
        ``False`` for the BLAS's own choice. Only the CUDA platform has such algorithms."""
        return False

    def _set_sm_target(self, handle: Any, sms: int) -> None:
        """Keep ``handle``'s GEMMs to ``sms`` multiprocessors (0: all) where the BLAS can."""

    @abstractmethod
    def _column_major_gemm(self, handle: Any, call: GemmCall, dtype: str, alpha: float, beta: float) -> None:
        """Issue ``call`` on ``handle`` (``dtype`` in ``GEMM_DTYPES``, fp32 accumulation); a
        failure names the BLAS call and ``call.describe()``."""

    # ---- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for handle in self._blas_handles.values():
            self._destroy_blas_handle(handle)
        self._blas_handles.clear()
        for ws in self._workspaces:
            self.free(ws)
        self._workspaces.clear()
