"""The cuBLASLt binding's C ABI (lc0py/gpu/cublaslt.py), checked without the library: ctypes
passes exactly what the argtypes say, so a wrong count or width there makes cuBLASLt read past
an argument or write past a struct we own. Facts from cublasLt.h (CUDA 12/13)."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

from lc0py.gpu import cublaslt

#: Parameters of each entry point in cublasLt.h, pointer-sized (P), 32-bit (I), 64-bit (L).
PROTOTYPES = {
    "cublasLtCreate": "P",
    "cublasLtDestroy": "P",
    "cublasLtMatmulDescCreate": "PII",  # desc*, cublasComputeType_t, cudaDataType_t scaleType
    "cublasLtMatmulDescDestroy": "P",
    "cublasLtMatmulDescSetAttribute": "PIPL",  # desc, attr, const void* buf, size_t
    "cublasLtMatrixLayoutCreate": "PILLL",  # layout*, cudaDataType, uint64 rows, uint64 cols, int64 ld
    "cublasLtMatrixLayoutDestroy": "P",
    "cublasLtMatrixLayoutSetAttribute": "PIPL",  # layout, attr, const void* buf, size_t
    "cublasLtMatmulPreferenceCreate": "P",
    "cublasLtMatmulPreferenceDestroy": "P",
    "cublasLtMatmulPreferenceSetAttribute": "PIPL",
    # handle, desc, A/B/C/D layouts, preference, requestedAlgoCount, results[], returnAlgoCount*
    "cublasLtMatmulAlgoGetHeuristic": "PPPPPPPIPP",
    # handle, desc, alpha*, A, Adesc, B, Bdesc, beta*, C, Cdesc, D, Ddesc, algo*, workspace, size, stream
    "cublasLtMatmul": "PPPPPPPPPPPPPPLP",
}


class _Function:
    argtypes: list[Any]
    restype: Any


class _FakeLibrary:
    """Stands in for ``ctypes.CDLL``: records the argtypes the binding declares."""

    def __init__(self, name: str, *args: Any, **kw: Any) -> None:
        self.functions: dict[str, _Function] = {}

    def __getattr__(self, name: str) -> _Function:
        if name.startswith("__"):
            raise AttributeError(name)
        return self.functions.setdefault(name, _Function())


def _width(t: Any) -> str:
    if t is ctypes.c_void_p or (isinstance(t, type) and issubclass(t, ctypes._Pointer)):
        return "P"
    return {4: "I", 8: "L"}[ctypes.sizeof(t)]


def test_every_entry_point_has_its_c_prototype(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_wheel(*args: Any) -> Any:
        raise OSError("no nvidia-cublas wheel in this test")

    try:
        from cuda import pathfinder
    except ImportError:  # the binding then goes straight to ctypes.CDLL
        pass
    else:
        monkeypatch.setattr(pathfinder, "load_nvidia_dynamic_lib", no_wheel)
    monkeypatch.setattr(ctypes, "CDLL", _FakeLibrary)
    cublaslt.load_cublaslt.cache_clear()
    try:
        lib = cublaslt.load_cublaslt()
    finally:
        cublaslt.load_cublaslt.cache_clear()
    for name, widths in PROTOTYPES.items():
        got = "".join(_width(t) for t in getattr(lib, name).argtypes)
        assert got == widths, name
        assert getattr(lib, name).restype is ctypes.c_int, name  # cublasStatus_t
    assert lib.cublasLtGetVersion.restype is ctypes.c_size_t


def test_the_heuristic_result_has_the_headers_layout() -> None:
    """``cublasLtMatmulHeuristicResult_t``: a 64-byte algo, size_t workspaceSize, a status, a
    float wavesCount, int reserved[4]: 96 bytes, which cuBLASLt writes into our struct."""
    r = cublaslt.HeuristicResult
    assert ctypes.sizeof(r) == 96
    assert (r.algo.offset, r.workspace_size.offset, r.state.offset, r.waves_count.offset) == (0, 64, 72, 76)
