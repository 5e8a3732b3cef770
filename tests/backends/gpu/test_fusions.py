"""The fused paths of an attention body (``fusions.py``), without a GPU: the options, the decision,
and what the forward pass then enqueues on a platform that records every launch and GEMM.

``ln_residual``: no GEMM of an encoder layer keeps ``beta = 1``; the out-projection and FFN2 GEMMs
write a fresh buffer and the LayerNorm after each gets the residual stream as its skip input.
``smolgen_branch``: no column copy; the compress rows of the fused weight get their own GEMM on the
side stream, the QKV GEMM (N = 3D into the qkv_ld-strided buffer) keeps to all but
``SIDE_SMS`` multiprocessors on the main stream. Either way every uploaded weight is
still read and every pointer stays inside an allocation. The numbers themselves: the LayerNorm
kernel's skip form on the emulator (tests/kernels/test_layernorm_emulated.py), the whole pass by
``lc0py verify -o ln_residual=on,smolgen_branch=on`` on a device (scripts/device/gpu_fusion_ab).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.fusions import SIDE_SMS, Fusions, choose_fusions, splits
from lc0py.backends.gpu.options import GpuOptions
from lc0py.errors import BackendOptionError
from lc0py.gpu.platform import DeviceInfo
from lc0py.weights.presets import random_network
from tests.backends.gpu.stream_order import CallPlatform, StreamPlatform, unordered_conflicts
from tests.backends.gpu.test_layers import PointerPlatform, _assert_forward_reads_every_weight_in_bounds
from tests.one_line import one_line_error

H100 = DeviceInfo("nvidia", 0, "H100", "sm_90", 132, 32, 48 * 1024, 227 * 1024, 1 << 34)


def test_fusions_are_off_by_default_and_parse_as_switches() -> None:
    assert (GpuOptions().ln_residual, GpuOptions().smolgen_branch) == (False, False)
    opts = GpuOptions.from_text("ln_residual=on,smolgen_branch=true")
    assert (opts.ln_residual, opts.smolgen_branch) == (True, True)
    assert GpuOptions.from_text("ln_residual=off") == GpuOptions()


@pytest.mark.parametrize("text", ["ln_residual=sometimes", "smolgen_branch=2"])
def test_a_bad_fusion_switch_is_one_line_naming_it(text: str) -> None:
    message = one_line_error(BackendOptionError, lambda: GpuOptions.from_text(text, "cuda-fp16"))
    assert f"--backend-opts: {text.split('=')[0]}=" in message and "on/off" in message, message


FUSION_TEXTS = [
    "",
    "ln_residual=on",
    "smolgen_branch=on",
    "row_halves=on",
    "ln_residual=on,smolgen_branch=on",
]


@pytest.mark.parametrize("smolgen", [True, False])
@pytest.mark.parametrize("can_fork", [True, False])
@pytest.mark.parametrize("text", FUSION_TEXTS)
def test_choose_fusions_follows_the_options_the_net_and_the_device(
    text: str, can_fork: bool, smolgen: bool
) -> None:
    opts = GpuOptions.from_text(text)
    f = choose_fusions(opts, smolgen, H100, can_fork)
    assert f.ln_residual is opts.ln_residual  # any attention body
    assert f.smolgen_branch is (opts.smolgen_branch and smolgen)  # only where there is a smolgen
    # the QKV GEMM leaves multiprocessors only to a branch that really runs beside it
    assert f.row_halves is opts.row_halves  # any attention body
    beside = (f.smolgen_branch or f.row_halves) and can_fork
    assert f.gemm_sms == (H100.sm_count - SIDE_SMS if beside else 0)
    assert f.gemm_sms in (0, 116)
    line = f.describe()
    assert line.startswith("fusions: ")
    assert ("ln_residual" in line) is f.ln_residual and ("smolgen_branch" in line) is f.smolgen_branch
    assert ("row_halves" in line) is f.row_halves
    assert ("none" in line) is (not f.ln_residual and not f.smolgen_branch and not f.row_halves)


def test_a_small_device_keeps_one_multiprocessor_for_the_gemm() -> None:
    tiny = DeviceInfo("nvidia", 0, "tiny", "sm_80", 8, 32, 48 * 1024, 99 * 1024, 1 << 30)
    assert choose_fusions(GpuOptions(smolgen_branch=True), True, tiny, True).gemm_sms == 1


@pytest.mark.parametrize(("text", "sms"), [("", 132 - 16), ("side_sms=8", 124), ("side_sms=0", 0)])
def test_side_sms_sets_what_the_qkv_gemm_leaves(text: str, sms: int) -> None:
    """``side_sms=N``: the QKV GEMM keeps to all but N multiprocessors (0: all of them); the
    default is the documented ``SIDE_SMS``."""
    assert GpuOptions().side_sms == SIDE_SMS
    opts = GpuOptions.from_text(",".join(t for t in ("smolgen_branch=on", text) if t))
    assert choose_fusions(opts, True, H100, True).gemm_sms == sms
    message = one_line_error(BackendOptionError, lambda: GpuOptions.from_text("side_sms=-1"))
    assert "side_sms=-1 is out of range" in message, message


def _run(text: str, fp16: bool = True, layers: int = 2, bsz: int = 3) -> tuple[Any, CallPlatform]:
    from lc0py.backends.gpu.network import GpuNetwork

    plat = CallPlatform()
    net = random_network("t82", 2, layers=layers)
    gpu = GpuNetwork(plat, net, fp16=fp16, options=GpuOptions.from_text(f"graphs=off,max_batch=4,{text}"))
    masks = np.random.default_rng(bsz).integers(1, 2**63, size=(bsz, 112), dtype=np.uint64)
    plat.gemms.clear()
    plat.launches.clear()
    gpu.submit(PlanesBatch(masks, np.ones((bsz, 112), np.float32)))
    return gpu, plat


@pytest.mark.parametrize("on", [False, True], ids=["off", "on"])
def test_ln_residual_moves_the_residual_add_into_the_layernorm(on: bool) -> None:
    gpu, plat = _run(f"ln_residual={'on' if on else 'off'}")
    try:
        s, buf = gpu.shape, gpu.runner.buf
        layers = len(gpu.model.encoders)
        assert gpu.fusions.ln_residual is on
        beta1 = [g for g in plat.gemms if g.get("beta", 0.0) == 1.0]
        # off: out-projection (C = x) and FFN2 (C = x1) accumulate into the residual stream
        assert len(beta1) == (0 if on else 2 * layers)
        ln_e = gpu.ops._ln[(s.E, 3)][0]  # the E-wide LayerNorm (activation NONE)
        lns = [ptrs for fn, _, ptrs in plat.launches if fn == ln_e]
        assert len(lns) == 2 * layers
        # args: y, bias, skip, out, gamma, beta
        with_skip = [p for p in lns if p[2]]
        assert len(with_skip) == (2 * layers if on else 0)
        if on:
            for y, _, skip, out, *_ in with_skip:
                assert out == y and skip != y  # in place over the GEMM's output, the stream as skip
            assert {p[2] for p in with_skip} == {buf.x, buf.x1}  # after attention: x; after FFN: x1
            # the GEMM before each LayerNorm wrote its y with beta = 0
            outs = {g["c"] for g in plat.gemms if g["n"] == s.E and g["k"] in (s.D, s.Fd)}
            assert {p[0] for p in with_skip} <= outs
    finally:
        gpu.close()


@pytest.mark.parametrize("on", [False, True], ids=["off", "on"])
def test_smolgen_branch_runs_beside_the_qkv_gemm(on: bool) -> None:
    gpu, plat = _run(f"smolgen_branch={'on' if on else 'off'}")
    try:
        s, buf, ops = gpu.shape, gpu.runner.buf, gpu.ops
        layers = len(gpu.model.encoders)
        assert gpu.fusions.smolgen_branch is on
        copies = [1 for fn, _, _ in plat.launches if fn == ops.k_copy_cols]
        assert len(copies) == (0 if on else layers)
        qkv = [g for g in plat.gemms if g["c"] == buf.qkv]
        assert len(qkv) == layers and all(g["ldc"] == s.qkv_ld for g in qkv)
        compress = [g for g in plat.gemms if g["c"] == buf.sg_c]
        if on:
            assert all(g["n"] == 3 * s.D and g["sms"] == plat.info.sm_count - SIDE_SMS for g in qkv)
            assert all(g["stream"] == ops.main for g in qkv)
            # its own GEMM of the layer input with the compress rows that follow Q|K|V in qkv_w
            assert len(compress) == layers
            for g, layer in zip(compress, gpu.model.encoders, strict=True):
                assert (g["n"], g["k"], g["a"]) == (s.hc, s.E, buf.x)
                assert g["b"] == ops.off(layer.w.qkv_w, 3 * s.D * s.E)
                assert g["stream"] == ops.side != ops.main
            # dense1/dense2 and their LayerNorms on the side stream too; the generator on main
            side = [g for g in plat.gemms if g["stream"] == ops.side and g["c"] in (buf.sg_s1, buf.sg_s2)]
            assert len(side) == 2 * layers
            assert all(g["stream"] == ops.main for g in plat.gemms if g["c"] == buf.sg_g)
        else:
            assert all(g["n"] == s.qkv_ld and g.get("sms", 0) == 0 for g in qkv) and not compress
        assert set(plat.gemm_sms) <= {0, plat.info.sm_count - SIDE_SMS}
    finally:
        gpu.close()


@pytest.mark.parametrize("bsz", [1, 3, 4])
def test_row_halves_splits_the_block_after_attention(bsz: int) -> None:
    """``row_halves``: from 2 positions on, each layer's out-projection, FFN1 and FFN2 run as two
    GEMMs over the halves (the first half rounded down) on the main stream, all but the first
    keeping to ``gemm_sms``; LN1 of both halves, both bias + activations and LN2 of the first half
    on the side stream, LN2 of the second half on the main one. One position runs unsplit."""
    gpu, plat = _run("row_halves=on", bsz=bsz)
    try:
        s, ops, buf, layers = gpu.shape, gpu.ops, gpu.runner.buf, len(gpu.model.encoders)
        m = bsz * 64
        halves = [m] if bsz == 1 else [bsz // 2 * 64, m - bsz // 2 * 64]
        elem = ops.elem
        # each GEMM by the buffer its A operand lies in: attention output, x1, FFN hidden
        for name, a_buf, width, first_sms in (
            ("out", buf.attn, s.D, 0),
            ("ffn1", buf.x1, s.E, 116),
            ("ffn2", buf.ffn, s.Fd, 116),
        ):
            end = a_buf + m * width * elem
            gemms = [g for g in plat.gemms if a_buf <= g["a"] < end and g["k"] == width]
            assert len(gemms) == layers * len(halves), name
            assert [g["m"] for g in gemms[: len(halves)]] == halves, name
            assert [g["a"] for g in gemms[: len(halves)]] == [a_buf, a_buf + halves[0] * width * elem][
                : len(halves)
            ]
            sms = [g.get("sms", 0) for g in gemms[: len(halves)]]
            assert sms == ([0] if bsz == 1 else [first_sms, 116]), name
        ln_e = ops._ln[(s.E, 3)][0]
        enc = [(fn, stream) for fn, stream, _ in plat.launches if fn in (ln_e, ops.k_bias_act)][
            : 3 * layers * len(halves)
        ]
        on_side = sum(1 for _, stream in enc if stream == ops.side)
        assert on_side == (0 if bsz == 1 else 5 * layers)
    finally:
        gpu.close()


@pytest.mark.parametrize("bsz", [3, 4, 5])
def test_row_halves_min_keeps_smaller_batches_whole(bsz: int) -> None:
    """``row_halves_min=4``: batches of 4 or more split, smaller ones run the unsplit block (no
    side-stream LayerNorm); the option refuses less than 2 in one line."""
    gpu, plat = _run("row_halves=on,row_halves_min=4", bsz=bsz)
    try:
        assert splits(gpu.fusions, bsz) is (bsz >= 4)
        assert "row_halves from batch 4" in gpu.fusions.describe()
        ln_e = gpu.ops._ln[(gpu.shape.E, 3)][0]
        side_lns = [1 for fn, stream, _ in plat.launches if fn == ln_e and stream == gpu.ops.side]
        assert len(side_lns) == (3 * len(gpu.model.encoders) if bsz >= 4 else 0)
    finally:
        gpu.close()
    message = one_line_error(BackendOptionError, lambda: GpuOptions.from_text("row_halves_min=1"))
    assert "row_halves_min=1 is out of range" in message, message


CASES: dict[str, dict[str, Any]] = {
    "tiny": dict(preset="tiny"),
    "tiny-pe_dense": dict(preset="tiny", embedding="pe_dense"),
    "t82-1layer": dict(preset="t82", layers=1),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("fp16", [True, False])
@pytest.mark.parametrize("flash", [True, False])
def test_fused_forward_reads_every_weight_and_stays_in_bounds(case: str, fp16: bool, flash: bool) -> None:
    from lc0py.backends.gpu.network import GpuNetwork

    net = random_network(**CASES[case], seed=2)
    plat = PointerPlatform()
    opts = GpuOptions(
        flash=flash, graphs=False, max_batch=4, ln_residual=True, smolgen_branch=True, row_halves=True
    )
    gpu = GpuNetwork(plat, net, fp16=fp16, options=opts)
    try:
        want = Fusions(ln_residual=True, smolgen_branch=net.has_smolgen, row_halves=True, gemm_sms=116)
        assert gpu.fusions == want
        _assert_forward_reads_every_weight_in_bounds(gpu, plat, seed=0, sizes=(1, 3))
    finally:
        gpu.close()


@pytest.mark.parametrize("arch", [("gfx1100", 32), ("gfx90a", 64)], ids=["wave32", "wave64"])
def test_fusions_need_no_other_kernel_modules(arch: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused paths launch kernels the unfused pass already builds (the LayerNorm with its skip
    input is the same module), so the compile tests' recorded module sets (NVRTC and AMD) cover
    them: the same compiles with every fusion off and on."""
    from lc0py.backends.gpu.network import GpuNetwork
    from tests.kernels.amd_backend_compiles import RecordingPlatform

    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")  # every module must reach compile()
    net = random_network("t82", 2, layers=1)
    compiled = []
    for text in ("", "ln_residual=on,smolgen_branch=on"):
        plat = RecordingPlatform(*arch)
        GpuNetwork(
            plat, net, fp16=True, options=GpuOptions.from_text(f"graphs=off,max_batch=2,{text}")
        ).close()
        compiled.append(sorted(set(plat.compiles)))
    assert compiled[0] == compiled[1] and compiled[0]


@pytest.mark.parametrize(
    "text",
    ["row_halves=on", "row_halves=on,ln_residual=on", "ln_residual=on,smolgen_branch=on,row_halves=on", ""],
)
@pytest.mark.parametrize("bsz", [1, 3, 4])
def test_every_cross_stream_access_is_ordered(text: str, bsz: int) -> None:
    """Replays a forward pass's launches, GEMMs, event records and waits on the two streams: no
    two operations on different streams that touch the same activation bytes (one writing) may
    run without a stream-order / event chain between them -- the row-halves pipeline, the smolgen
    branch and the value-head branch, at a batch that splits unevenly, evenly and not at all."""
    from lc0py.backends.gpu.network import GpuNetwork

    plat = StreamPlatform()
    net = random_network("t82", 2, layers=2)
    gpu = GpuNetwork(plat, net, fp16=True, options=GpuOptions.from_text(f"graphs=off,max_batch=4,{text}"))
    try:
        masks = np.random.default_rng(bsz).integers(1, 2**63, size=(bsz, 112), dtype=np.uint64)
        plat.timeline.clear()
        plat.ops_seen.clear()
        gpu.submit(PlanesBatch(masks, np.ones((bsz, 112), np.float32)))
        side = {stream for _, stream, _ in plat.ops_seen} - {gpu.ops.main}
        assert side == {gpu.ops.side}  # the value heads at least
        assert not unordered_conflicts(gpu, plat)
    finally:
        gpu.close()
