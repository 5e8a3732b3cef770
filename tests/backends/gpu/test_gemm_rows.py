"""``gemm_rows`` without a GPU: the option, the shapes it takes, and which GEMMs of a pass it takes.

At batches of up to ``gemm_rows_max`` positions (``auto``: 1; ``on``: 8) every GEMM of an fp16
attention pass that writes without accumulating (``beta`` 0) and fits the kernel's shared memory
runs as ``gemm_rows`` (kernels/gemm_rows.hip); FFN1's bias and activation go into its epilogue, so
no ``bias_act`` follows it. Larger batches, fp32, ``gemm_rows=off`` and GPUs without matrix cores
keep the BLAS GEMMs. The kernel's numbers: tests/kernels/test_gemm_rows_emulated.py (emulator) and
tests/backends/gpu/test_gpu_gemm_rows.py (a device).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.ops import gemm_rows_fits, gemm_rows_shared_bytes, gemm_rows_tile
from lc0py.backends.gpu.options import GEMM_ROWS_MAX, GEMM_ROWS_ON_MAX, GpuOptions
from lc0py.errors import BackendOptionError
from lc0py.weights.presets import random_network
from tests.backends.gpu.stream_order import CallPlatform
from tests.backends.gpu.test_layers import PointerPlatform, _assert_forward_reads_every_weight_in_bounds
from tests.one_line import one_line_error

H100_OPTIN = 227 * 1024


def test_option_parses_and_bounds_the_batch() -> None:
    assert GpuOptions().gemm_rows_positions == GEMM_ROWS_MAX == 1
    assert GpuOptions.from_text("gemm_rows=on").gemm_rows_positions == GEMM_ROWS_ON_MAX == 8
    assert GpuOptions.from_text("gemm_rows=off").gemm_rows_positions == 0
    assert GpuOptions.from_text("gemm_rows_max=4").gemm_rows_positions == 4
    bad = [("gemm_rows=maybe", "is not one of on, off, auto"), ("gemm_rows_max=9", "out of range")]
    for text, says in bad:
        message = one_line_error(BackendOptionError, lambda t=text: GpuOptions.from_text(t, "cuda-fp16"))
        assert f"--backend-opts: {text.split('=')[0]}" in message and says in message, message


def test_shapes_it_takes() -> None:
    # T82's layer GEMMs: K 768 or 1024, in shared memory at either tile width
    assert gemm_rows_shared_bytes(768, 16) == 80 * 776 * 2
    assert gemm_rows_fits(768, 768, 2304, H100_OPTIN) and gemm_rows_fits(1024, 1024, 768, H100_OPTIN)
    # the value head's 2048 inputs do not fit; rows that are not 16-byte multiples are not taken
    assert not gemm_rows_fits(2048, 2048, 128, H100_OPTIN)
    assert not gemm_rows_fits(100, 100, 64, H100_OPTIN) and not gemm_rows_fits(64, 64, 3, H100_OPTIN)
    # 16 columns a block while that is one wave of blocks; T82's QKV (2304 columns) takes 32
    assert gemm_rows_tile(768, 132) == 16 and gemm_rows_tile(2304, 132) == 32


def _pass(text: str, bsz: int, fp16: bool = True) -> tuple[Any, CallPlatform]:
    from lc0py.backends.gpu.network import GpuNetwork

    plat = CallPlatform()
    net = random_network("t82", 2, layers=2)
    gpu = GpuNetwork(plat, net, fp16=fp16, options=GpuOptions.from_text(f"graphs=off,max_batch=8,{text}"))
    masks = np.random.default_rng(bsz).integers(1, 2**63, size=(bsz, 112), dtype=np.uint64)
    plat.gemms.clear()
    plat.launches.clear()
    gpu.submit(PlanesBatch(masks, np.ones((bsz, 112), np.float32)))
    return gpu, plat


def _rows_launches(gpu: Any, plat: CallPlatform) -> list[list[int]]:
    kernels = set(gpu.ops._gemm_rows.values())
    return [ptrs for fn, _, ptrs in plat.launches if fn in kernels]


@pytest.mark.parametrize("text", ["", "smolgen_branch=off,ln_residual=on"])
def test_one_position_runs_the_layer_gemms_as_gemm_rows(text: str) -> None:
    gpu, plat = _pass(text, 1)
    try:
        buf = gpu.runner.buf
        layers = gpu.model.encoders
        rows = _rows_launches(gpu, plat)
        by_weight = {ptrs[2]: ptrs for ptrs in rows}  # x, lda, w, bias, out, ...
        for layer in layers:  # QKV, out-projection, FFN1 and FFN2 of every layer
            w = layer.w
            assert {w.qkv_w, w.out_w, w.ffn.w1, w.ffn.w2} <= set(by_weight)
            assert by_weight[w.qkv_w][4] == buf.qkv
            # FFN1 carries its bias (and activation) into the hidden buffer
            assert by_weight[w.ffn.w1][3:5] == [w.ffn.b1, buf.ffn]
        # no GEMM of the layers' weights left to cuBLAS, no bias_act with FFN1's bias
        weights = {p for layer in layers for p in (layer.w.qkv_w, layer.w.out_w, layer.w.ffn.w1)}
        weights |= {layer.w.ffn.w2 for layer in layers}
        assert not [g for g in plat.gemms if g["b"] in weights]
        b1 = {layer.w.ffn.b1 for layer in layers}
        assert not [1 for fn, _, ptrs in plat.launches if fn == gpu.ops.k_bias_act and ptrs[1] in b1]
    finally:
        gpu.close()


@pytest.mark.parametrize(
    ("text", "bsz", "fp16", "taken"),
    [
        ("", 2, True, False),  # auto: one position
        ("gemm_rows_max=2", 2, True, True),
        ("gemm_rows=on", 8, True, True),
        ("gemm_rows=off", 1, True, False),
        ("", 1, False, False),  # fp32 keeps its BLAS GEMMs
    ],
)
def test_which_passes_take_it(text: str, bsz: int, fp16: bool, taken: bool) -> None:
    gpu, plat = _pass(text, bsz, fp16)
    try:
        assert bool(_rows_launches(gpu, plat)) is taken
        encoder_gemms = [g for g in plat.gemms if g["m"] == 64 * bsz]
        assert (not encoder_gemms) is taken
    finally:
        gpu.close()


def test_a_gpu_without_matrix_cores_keeps_cublas() -> None:
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.gpu.platform import DeviceInfo

    plat = CallPlatform()
    plat.info = DeviceInfo("nvidia", 0, "T4", "sm_75", 40, 32, 48 * 1024, 64 * 1024, 1 << 34)
    gpu = GpuNetwork(plat, random_network("t82", 2, layers=1), fp16=True,
                     options=GpuOptions.from_text("graphs=off,max_batch=2,gemm_rows=on"))
    try:
        assert gpu.ops.gemm_rows_positions == 0 and not gpu.ops._gemm_rows
    finally:
        gpu.close()


def test_one_position_reads_every_weight_in_bounds() -> None:
    from lc0py.backends.gpu.network import GpuNetwork

    plat = PointerPlatform()
    gpu = GpuNetwork(plat, random_network("t82", 3, layers=1), fp16=True,
                     options=GpuOptions.from_text("graphs=off,max_batch=2"))
    try:
        _assert_forward_reads_every_weight_in_bounds(gpu, plat, seed=1, sizes=(1,))
    finally:
        gpu.close()
