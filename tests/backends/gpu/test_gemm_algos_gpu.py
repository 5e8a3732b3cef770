"""On an NVIDIA GPU: the timed cuBLASLt algorithms (lc0py/gpu/gemm_algos.py) compute what
``cublasGemmEx`` computes, in place with and without the residual (beta = 1), eagerly and inside a
captured graph; their choices are kept in the tuned folder and found again by a new platform; and
a T82-shaped net with every GEMM on them stays within fp16's bound of the float64 reference.
Marked ``gpu`` (skipped without an NVIDIA GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lc0py.backends.accuracy import RTOL_FP16, relative_error
from lc0py.weights.presets import random_network
from tests.nvidia import require_nvidia_gpu

pytestmark = pytest.mark.gpu

#: (m, n, k, trans_b, beta): the shapes of T82's GEMMs at 64 positions, a residual one, and odd sizes
SHAPES = [
    (4096, 2336, 768, True, 0.0),
    (4096, 768, 1024, True, 1.0),
    (1536, 4096, 256, True, 0.0),
    (1000, 520, 328, False, 1.0),
]


def _platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    require_nvidia_gpu()
    from lc0py.gpu.cuda_platform import CudaPlatform

    monkeypatch.setenv("LC0PY_TUNED_DIR", str(tmp_path))
    return CudaPlatform(0)


def _gemm(p: Any, stream: int, m: int, n: int, k: int, trans_b: bool, beta: float, x: np.ndarray,
          w: np.ndarray, c0: np.ndarray, graph: bool = False) -> np.ndarray:
    ptrs = [p.alloc(a.nbytes) for a in (x, w, c0)]
    try:
        for ptr, a in zip(ptrs, (x, w, c0), strict=True):
            p.copy_h2d(ptr, a, a.nbytes, stream)
        ldb = k if trans_b else n

        def run() -> None:
            p.gemm(stream, m, n, k, ptrs[0], k, ptrs[1], ldb, ptrs[2], n, dtype="fp16", trans_b=trans_b,
                   beta=beta)

        if graph:
            run()  # the eager call first, as the runner does: the timing happens here
            p.copy_h2d(ptrs[2], c0, c0.nbytes, stream)
            p.begin_capture(stream)
            try:
                run()
            finally:
                g = p.end_capture(stream)
            p.launch_graph(g, stream)
            p.synchronize(stream)
            p.destroy_graph(g)
        else:
            run()
        out = np.empty_like(c0)
        p.copy_d2h(out, ptrs[2], out.nbytes, stream)
        p.synchronize(stream)
        return out
    finally:
        for ptr in ptrs:
            p.free(ptr)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_timed_algorithms_match_cublas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, graph: bool) -> None:
    p = _platform(tmp_path, monkeypatch)
    try:
        stream = p.create_stream()
        rng = np.random.default_rng(5)
        for m, n, k, trans_b, beta in SHAPES:
            x = rng.standard_normal((m, k)).astype(np.float16)
            w = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float16)
            c0 = rng.standard_normal((m, n)).astype(np.float16)
            want = _gemm(p, stream, m, n, k, trans_b, beta, x, w, c0)  # cublasGemmEx: not turned on yet
            p.use_gemm_algos(0.0, tmp_path)  # every GEMM from here on
            got = _gemm(p, stream, m, n, k, trans_b, beta, x, w, c0, graph)
            p.gemm_algos.close()  # the next shape's reference runs on cublasGemmEx again
            p.gemm_algos = None
            exact = (x.astype(np.float64) @ (w.T if trans_b else w).astype(np.float64)) + beta * c0
            assert np.all(np.isfinite(got))
            assert relative_error(got, exact) <= 2 * relative_error(want, exact) + 1e-3, (m, n, k)
        p.destroy_stream(stream)
    finally:
        p.close()


def test_choices_are_kept_and_found_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m, n, k, trans_b, beta = SHAPES[0]
    rng = np.random.default_rng(6)
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    c0 = rng.standard_normal((m, n)).astype(np.float16)
    outs = []
    for round_ in range(2):
        p = _platform(tmp_path, monkeypatch)
        try:
            p.use_gemm_algos(0.0, tmp_path)
            stream = p.create_stream()
            outs.append(_gemm(p, stream, m, n, k, trans_b, beta, x, w, c0))
            timed = dict(p.gemm_algos.timings)
            if round_ == 0:
                assert len(timed) == 1  # timed once, here
                assert len(p.gemm_algos.store.choices) == 1
            else:
                assert timed == {}  # found in the store: nothing timed again
            p.destroy_stream(stream)
        finally:
            p.close()
    np.testing.assert_array_equal(outs[0], outs[1])  # the same algorithm both times


def test_t82_on_timed_gemms_matches_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_nvidia_gpu()
    monkeypatch.setenv("LC0PY_TUNED_DIR", str(tmp_path))
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.gpu.cuda_platform import CudaPlatform
    from lc0py.model import cast_network, forward
    from lc0py.tools.verify import random_planes_batch

    net = random_network("t82", 13, layers=2)
    batch = random_planes_batch(64, 7)
    ref = forward(cast_network(net, np.float64), batch.dense(np.float64), np.float64)
    p = CudaPlatform(0)
    try:
        gpu = GpuNetwork(p, net, fp16=True, options=GpuOptions.from_text("max_batch=64,gemm_tune_min=0"))
        try:
            assert gpu.gemm_tuned
            eager, _ = gpu.evaluate_traced(batch, flash=True)
            graphed = gpu.submit(batch).result()
            assert p.gemm_algos.timings  # the pass's GEMMs were timed
            for out in (eager, graphed):
                for name in ("policy", "wdl", "moves_left"):
                    got = getattr(out, name)
                    assert np.all(np.isfinite(got)), name
                    assert relative_error(got, getattr(ref, name)) <= RTOL_FP16, name
        finally:
            gpu.close()
    finally:
        p.close()


def test_prepare_writes_the_choices_once_and_a_new_network_times_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GpuNetwork.prepare`` writes every GEMM it timed in one store write, before ``close``; a
    second network on a new platform finds them all and times nothing."""
    require_nvidia_gpu()
    monkeypatch.setenv("LC0PY_TUNED_DIR", str(tmp_path))
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.gpu.cuda_platform import CudaPlatform
    from lc0py.storage import cache as storage_cache

    writes: list[str] = []
    real_store = storage_cache.EntryStore.store

    def counted(self: storage_cache.EntryStore, name: str, data: Any, inputs: str) -> Path | None:
        if name.startswith("gemm-algos-"):
            writes.append(name)
        return real_store(self, name, data, inputs)

    monkeypatch.setattr(storage_cache.EntryStore, "store", counted)
    net = random_network("t82", 14, layers=2)
    options = GpuOptions.from_text("max_batch=64,gemm_tune_min=0")
    timed: list[dict[str, Any]] = []
    for round_ in range(2):
        p = CudaPlatform(0)
        try:
            gpu = GpuNetwork(p, net, fp16=True, options=options)
            try:
                gpu.prepare(64)
                timed.append(dict(p.gemm_algos.timings))
                if round_ == 0:
                    assert len(timed[0]) > 1 and writes == [writes[0]]  # many timed, one write
                    assert not p.gemm_algos.store.dirty
            finally:
                gpu.close()
        finally:
            p.close()
    assert timed[1] == {} and len(writes) == 1  # found again; nothing new to write


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_timed_algorithms_batched_match_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beta: float
) -> None:
    """Strided-batched GEMMs (the Winograd path's 36 per convolution) on timed algorithms, with
    padding between the batch's matrices so that a stride mix-up shows."""
    p = _platform(tmp_path, monkeypatch)
    try:
        stream = p.create_stream()
        nb, m, n, k, pad = 6, 384, 200, 136, 64
        rng = np.random.default_rng(8)
        sa, sb, sc = m * k + pad, k * n + pad, m * n + pad
        x = rng.standard_normal(nb * sa).astype(np.float16)
        w = rng.standard_normal(nb * sb).astype(np.float16)
        c0 = rng.standard_normal(nb * sc).astype(np.float16)
        ptrs = [p.alloc(a.nbytes) for a in (x, w, c0)]
        try:
            for ptr, a in zip(ptrs, (x, w, c0), strict=True):
                p.copy_h2d(ptr, a, a.nbytes, stream)
            p.use_gemm_algos(0.0, tmp_path)
            p.gemm(stream, m, n, k, ptrs[0], k, ptrs[1], n, ptrs[2], n, dtype="fp16", beta=beta, batch=nb,
                   stride_a=sa, stride_b=sb, stride_c=sc)
            out = np.empty_like(c0)
            p.copy_d2h(out, ptrs[2], out.nbytes, stream)
            p.synchronize(stream)
        finally:
            for ptr in ptrs:
                p.free(ptr)
        assert len(p.gemm_algos.timings) == 1 and "batch 6" in next(iter(p.gemm_algos.timings))
        for i in range(nb):
            xi = x[i * sa:i * sa + m * k].reshape(m, k).astype(np.float64)
            wi = w[i * sb:i * sb + k * n].reshape(k, n).astype(np.float64)
            ci = c0[i * sc:i * sc + m * n].reshape(m, n).astype(np.float64)
            got = out[i * sc:i * sc + m * n].reshape(m, n)
            assert relative_error(got, xi @ wi + beta * ci) <= 2e-3, i
            gap = slice(i * sc + m * n, (i + 1) * sc)
            np.testing.assert_array_equal(out[gap], c0[gap])  # the padding is never written
        p.destroy_stream(stream)
    finally:
        p.close()
