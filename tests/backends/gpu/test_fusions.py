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

The defaults (``auto``) choose per batch size (``Fusions.at``): ``ln_residual`` up to
``ln_residual_max``, ``smolgen_branch`` up to ``smolgen_branch_max``; the tests of one switch's
effect run with the other switches forced off (``OFF``), the per-batch tests with the defaults.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.fusions import SIDE_SMS, Fusions, choose_fusions, splits
from lc0py.backends.gpu.options import (
    LN_RESIDUAL_MAX,
    SMOLGEN_BRANCH_MAX,
    SMOLGEN_CHAIN_MAX_AUTO,
    SMOLGEN_COMPRESS_MAX,
    SMOLGEN_EARLY_MAX,
    SMOLGEN_ROWS_MAX,
    GpuOptions,
)
from lc0py.backends.gpu.weights import (
    COMPRESS_ROWS_MAX,
    DENSE_ROWS_MAX,
    SMOLGEN_CHAIN_MAX,
    SMOLGEN_COUNTER_BYTES,
)
from lc0py.errors import BackendOptionError
from lc0py.gpu.platform import DeviceInfo
from lc0py.weights.presets import random_network
from tests.backends.gpu.stream_order import CallPlatform, StreamPlatform, unordered_conflicts
from tests.backends.gpu.test_layers import PointerPlatform, _assert_forward_reads_every_weight_in_bounds
from tests.one_line import one_line_error

H100 = DeviceInfo("nvidia", 0, "H100", "sm_90", 132, 32, 48 * 1024, 227 * 1024, 1 << 34)


#: every fusion forced off for every batch size: the unfused pass
OFF = (
    "ln_residual=off,smolgen_branch=off,row_halves=off,smolgen_rows=off,smolgen_compress=off,"
    "smolgen_chain=off"
)


def test_fusions_default_to_auto_and_parse_as_switches() -> None:
    d = GpuOptions()
    assert (d.ln_residual, d.smolgen_branch, d.row_halves) == (None, None, False)  # None: auto
    assert (d.ln_residual_max, d.smolgen_branch_max) == (LN_RESIDUAL_MAX, SMOLGEN_BRANCH_MAX) == (512, 128)
    opts = GpuOptions.from_text("ln_residual=on,smolgen_branch=true")
    assert (opts.ln_residual, opts.smolgen_branch) == (True, True)
    opts = GpuOptions.from_text("ln_residual=off,smolgen_branch=0")
    assert (opts.ln_residual, opts.smolgen_branch) == (False, False)
    assert GpuOptions.from_text("ln_residual=auto,smolgen_branch=AUTO") == GpuOptions()
    opts = GpuOptions.from_text("ln_residual_max=64,smolgen_branch_max=1")
    assert (opts.ln_residual_max, opts.smolgen_branch_max) == (64, 1)
    assert (d.smolgen_compress, d.smolgen_compress_max) == (None, SMOLGEN_COMPRESS_MAX)
    assert GpuOptions.from_text("smolgen_compress=off").smolgen_compress is False
    assert GpuOptions.from_text("smolgen_compress_max=64").smolgen_compress_max == COMPRESS_ROWS_MAX
    assert (d.smolgen_early, d.smolgen_early_max) == (None, SMOLGEN_EARLY_MAX)
    assert GpuOptions.from_text("smolgen_early=off").smolgen_early is False


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ln_residual=sometimes", "is not one of on, off, auto"),
        ("smolgen_branch=2", "is not one of on, off, auto"),
        ("ln_residual_max=0", "is out of range"),
        ("smolgen_branch_max=lots", "is not an integer"),
        ("smolgen_branch_max=-3", "is out of range"),
        ("smolgen_compress=often", "is not one of on, off, auto"),
        ("smolgen_compress_max=65", "is out of range"),
        ("smolgen_early=soon", "is not one of on, off, auto"),
        ("smolgen_early_max=65", "is out of range"),
    ],
)
def test_a_bad_fusion_option_is_one_line_naming_it(text: str, says: str) -> None:
    message = one_line_error(BackendOptionError, lambda: GpuOptions.from_text(text, "cuda-fp16"))
    assert f"--backend-opts: {text.split('=')[0]}" in message and says in message, message


FUSION_TEXTS = [
    "",
    OFF,
    "ln_residual=on",
    "smolgen_branch=on",
    "row_halves=on",
    "ln_residual=on,smolgen_branch=on",
    "smolgen_rows=on",
    "smolgen_chain=on",
    "smolgen_chain=auto",
    "smolgen_chain=off,smolgen_rows=on",
    "smolgen_rows=on,smolgen_compress=off",
    "smolgen_compress=on,smolgen_rows=off",
    "smolgen_early=off",
    "smolgen_compress=off,smolgen_early=on",
]


@pytest.mark.parametrize("smolgen", [True, False])
@pytest.mark.parametrize("can_fork", [True, False])
@pytest.mark.parametrize("text", FUSION_TEXTS)
def test_choose_fusions_follows_the_options_the_net_and_the_device(
    text: str, can_fork: bool, smolgen: bool
) -> None:
    opts = GpuOptions.from_text(text)
    f = choose_fusions(opts, smolgen, H100, can_fork)
    assert f.ln_residual is (opts.ln_residual is not False)  # any attention body; auto or on
    assert f.smolgen_branch is (opts.smolgen_branch is not False and smolgen)  # only with a smolgen
    assert f.smolgen_rows is (opts.smolgen_rows is not False and smolgen)
    # auto: to smolgen_rows_max; on: to the most rows the kernel takes
    assert f.smolgen_rows_max == ((SMOLGEN_ROWS_MAX if opts.smolgen_rows is None else DENSE_ROWS_MAX)
                                  if f.smolgen_rows else None)
    assert f.smolgen_compress is (opts.smolgen_compress is not False and smolgen)
    compress_max = SMOLGEN_COMPRESS_MAX if opts.smolgen_compress is None else COMPRESS_ROWS_MAX
    assert f.smolgen_compress_max == (compress_max if f.smolgen_compress else None)
    # smolgen_early: only with the compress kernel; auto to smolgen_early_max
    assert f.smolgen_early is (f.smolgen_compress and opts.smolgen_early is not False)
    early_auto = f.smolgen_early and opts.smolgen_early is None
    assert f.smolgen_early_max == (SMOLGEN_EARLY_MAX if early_auto else None)
    assert f.smolgen_chain is (opts.smolgen_chain is not False and smolgen)
    chain_max = SMOLGEN_CHAIN_MAX_AUTO if opts.smolgen_chain is None else SMOLGEN_CHAIN_MAX
    assert f.smolgen_chain_max == (chain_max if f.smolgen_chain else None)
    # auto keeps its batch limit, on takes every batch
    assert f.ln_residual_max == (LN_RESIDUAL_MAX if f.ln_residual and opts.ln_residual is None else None)
    assert f.smolgen_branch_max == (
        SMOLGEN_BRANCH_MAX if f.smolgen_branch and opts.smolgen_branch is None else None
    )
    # the QKV GEMM leaves multiprocessors only to a branch that really runs beside it
    assert f.row_halves is opts.row_halves  # any attention body
    beside = (f.smolgen_branch or f.row_halves) and can_fork
    assert f.gemm_sms == (H100.sm_count - SIDE_SMS if beside else 0)
    assert f.gemm_sms in (0, 116)
    line = f.describe()
    assert line.startswith("fusions: ")
    assert ("ln_residual" in line) is f.ln_residual and ("smolgen_branch" in line) is f.smolgen_branch
    assert ("row_halves" in line) is f.row_halves
    assert ("smolgen_rows" in line) is f.smolgen_rows
    assert ("smolgen_chain" in line) is f.smolgen_chain
    assert ("none" in line) is (
        not f.ln_residual and not f.smolgen_branch and not f.row_halves and not f.smolgen_rows
        and not f.smolgen_chain
    )
    assert ("ln_residual to batch 512" in line) is (f.ln_residual_max == 512)
    assert ("smolgen_branch to batch 128" in line) is (f.smolgen_branch_max == 128)


DEFAULT_PATHS = [  # batch -> (ln_residual, smolgen_branch) with the defaults (fusions.py's table)
    (1, True, True),
    (64, True, True),
    (128, True, True),
    (129, True, False),
    (256, True, False),
    (512, True, False),
    (513, False, False),
    (1024, False, False),
]


@pytest.mark.parametrize(("bsz", "ln", "branch"), DEFAULT_PATHS)
def test_default_fusions_follow_the_batch_size(bsz: int, ln: bool, branch: bool) -> None:
    """``Fusions.at(bsz)``: the defaults take ``ln_residual`` up to 512 positions and
    ``smolgen_branch`` up to 128, never ``row_halves``; the GEMM beside the branch keeps to all but
    ``side_sms`` multiprocessors only where the branch runs. Explicit ``on``/``off`` hold for every
    batch size; ``*_max`` moves the limit; the resolved record has no limits left."""
    f = choose_fusions(GpuOptions(), True, H100, True)
    at = f.at(bsz)
    assert (at.ln_residual, at.smolgen_branch, at.row_halves) == (ln, branch, False)
    assert not at.smolgen_chain  # off by default (fusions.py's table)
    assert at.smolgen_rows is (bsz <= SMOLGEN_ROWS_MAX)
    assert at.smolgen_compress is (bsz <= SMOLGEN_COMPRESS_MAX)
    assert at.smolgen_early is (bsz <= SMOLGEN_EARLY_MAX) and at.smolgen_early_max is None
    assert at.gemm_sms == (H100.sm_count - SIDE_SMS if branch else 0)
    assert at.at(bsz) == at and at.ln_residual_max is None and at.smolgen_branch_max is None
    assert at.smolgen_rows_max is None and at.smolgen_compress_max is None
    on = GpuOptions.from_text("ln_residual=on,smolgen_branch=on,row_halves=on")
    got = choose_fusions(on, True, H100, True).at(bsz)
    assert (got.ln_residual, got.smolgen_branch, got.row_halves) == (True, True, bsz >= 2)
    assert got.smolgen_early is (bsz == 1)  # the row-halves pipeline forks nothing early
    off = choose_fusions(GpuOptions.from_text(OFF), True, H100, True)
    assert off.at(bsz) == Fusions() == off
    moved = GpuOptions.from_text("ln_residual_max=63,smolgen_branch_max=1")
    got = choose_fusions(moved, True, H100, True).at(bsz)
    assert (got.ln_residual, got.smolgen_branch) == (bsz <= 63, bsz == 1)
    # the limits apply to auto only: a forced switch ignores its *_max
    forced = GpuOptions.from_text(
        "ln_residual=on,ln_residual_max=1,smolgen_branch=off,smolgen_branch_max=4096"
    )
    got = choose_fusions(forced, True, H100, True).at(bsz)
    assert (got.ln_residual, got.smolgen_branch) == (True, False)


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


def _run(
    text: str,
    fp16: bool = True,
    layers: int = 2,
    bsz: int = 3,
    base: str = OFF,
    plat: CallPlatform | None = None,
) -> tuple[Any, CallPlatform]:
    """One eager pass of ``bsz`` random positions of a T82-shaped net on a recording platform, with
    ``base`` (every fusion off unless given) overridden by ``text``."""
    from lc0py.backends.gpu.network import GpuNetwork

    plat = plat or CallPlatform()
    net = random_network("t82", 2, layers=layers)
    options = GpuOptions.from_text(",".join(t for t in ("graphs=off,max_batch=4", base, text) if t))
    gpu = GpuNetwork(plat, net, fp16=fp16, options=options)
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
    "t82-2layers": dict(preset="t82", layers=2),  # smolgen_early: layer 1's chain forked by layer 0
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
        want = Fusions(
            ln_residual=True, smolgen_branch=net.has_smolgen, row_halves=True, gemm_sms=116,
            smolgen_rows=net.has_smolgen, smolgen_rows_max=SMOLGEN_ROWS_MAX if net.has_smolgen else None,
            smolgen_compress=net.has_smolgen,
            smolgen_compress_max=SMOLGEN_COMPRESS_MAX if net.has_smolgen else None,
            smolgen_early=net.has_smolgen, smolgen_early_max=SMOLGEN_EARLY_MAX if net.has_smolgen else None,
        )
        assert gpu.fusions == want
        _assert_forward_reads_every_weight_in_bounds(gpu, plat, seed=0, sizes=(1, 3))
    finally:
        gpu.close()


@pytest.mark.parametrize("arch", [("gfx1100", 32), ("gfx90a", 64)], ids=["wave32", "wave64"])
def test_fusions_need_no_other_kernel_modules(arch: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused paths launch kernels the unfused pass already builds (the LayerNorm with its skip
    input is the same module), so the compile tests' recorded module sets (NVRTC and AMD) cover
    them: the same compiles with every fusion off and on. ``smolgen_rows`` (on by default, so the
    recorded sets have it) adds its own modules, ``compress_rows.hip`` for the compress and dense 1
    (``smolgen_compress``) and ``dense_rows.hip`` for dense 2, and no other; ``smolgen_chain`` (off
    by default) adds ``smolgen_chain.hip`` alone."""
    from lc0py.backends.gpu.network import GpuNetwork
    from tests.kernels.amd_backend_compiles import RecordingPlatform

    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")  # every module must reach compile()
    net = random_network("t82", 2, layers=1)
    compiled = []
    for text in (OFF, "ln_residual=on,smolgen_branch=on,smolgen_rows=off,smolgen_compress=off",
                 "smolgen_rows=off,smolgen_compress=off", "", "smolgen_chain=on"):
        plat = RecordingPlatform(*arch)
        GpuNetwork(
            plat, net, fp16=True, options=GpuOptions.from_text(f"graphs=off,max_batch=2,{text}")
        ).close()
        compiled.append(sorted(set(plat.compiles)))
    assert compiled[0] == compiled[1] == compiled[2] and compiled[0]
    added = sorted(set(compiled[3]) - set(compiled[0]))
    assert set(compiled[0]) <= set(compiled[3]) and len(added) == 2, added
    assert sorted(source for source, _ in added) == ["compress_rows.hip", "dense_rows.hip"]
    chain = sorted(set(compiled[4]) - set(compiled[3]))
    assert set(compiled[3]) <= set(compiled[4]) and [source for source, _ in chain] == ["smolgen_chain.hip"]


@pytest.mark.parametrize(
    "text",
    [
        "row_halves=on",
        "row_halves=on,ln_residual=on",
        "ln_residual=on,smolgen_branch=on,row_halves=on",
        OFF,
        "",  # the defaults: every path of this table at batches 1-4
        "ln_residual_max=3,smolgen_branch_max=1",  # the defaults' limits moved: each path per size
        "ln_residual_max=3,smolgen_branch_max=1,row_halves=on,row_halves_min=4",
    ],
)
@pytest.mark.parametrize("bsz", [1, 3, 4])
def test_every_cross_stream_access_is_ordered(text: str, bsz: int) -> None:
    """Replays a forward pass's launches, GEMMs, event records and waits on the two streams: no
    two operations on different streams that touch the same activation bytes (one writing) may
    run without a stream-order / event chain between them -- the row-halves pipeline, the smolgen
    branch and the value-head branch, at a batch that splits unevenly, evenly and not at all, with
    the per-batch choice of the defaults (limits moved so batches 1, 3, 4 take different paths)."""
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


def _paths(gpu: Any, plat: CallPlatform, gemms: int = 0, launches: int = 0) -> tuple[bool, bool]:
    """(ln_residual, smolgen_branch) as the recorded pass from GEMM ``gemms`` and launch
    ``launches`` on ran them: no ``beta = 1`` GEMM / no column copy, each checked consistent with
    its other signs (skip LayerNorms; the compress GEMM on the side stream)."""
    s, buf, ops = gpu.shape, gpu.runner.buf, gpu.ops
    layers = len(gpu.model.encoders)
    g, launched = plat.gemms[gemms:], plat.launches[launches:]
    beta1 = sum(1 for x in g if x.get("beta", 0.0) == 1.0)
    ln_e = ops._ln[(s.E, 3)][0]
    skips = sum(1 for fn, _, ptrs in launched if fn == ln_e and ptrs[2])
    assert (beta1, skips) in ((2 * layers, 0), (0, 2 * layers)), (beta1, skips)
    copies = sum(1 for fn, _, _ in launched if fn == ops.k_copy_cols)
    compress = [x for x in g if x["c"] == buf.sg_c]
    chain_fns = {fn for fn, _ in ops._smolgen_chain.values()} | {fn for fn, _ in ops._compress_rows.values()}
    chains = [stream for fn, stream, _ in launched if fn in chain_fns]  # smolgen_chain / _compress inside
    assert copies in (0, layers) and len(chains) in (0, layers)
    assert copies + len(compress) + len(chains) == layers
    assert all(x["stream"] == ops.side != ops.main for x in compress)
    branch = all(stream == ops.side for stream in chains) if chains else copies == 0
    return beta1 == 0, branch


@pytest.mark.parametrize(("bsz", "ln", "branch"), [(1, True, True), (128, True, True), (129, True, False),
                                                   (512, True, False), (513, False, False)])
def test_the_forward_pass_takes_each_batch_sizes_default_paths(bsz: int, ln: bool, branch: bool) -> None:
    """With the defaults one network runs ``ln_residual`` up to 512 positions and
    ``smolgen_branch`` up to 128 (buffers grown from ``max_batch=4``: the plan covers both
    forms); explicit switches force the same path at every size."""
    gpu, plat = _run("", layers=1, bsz=bsz, base="")
    try:
        assert _paths(gpu, plat) == (ln, branch)
        assert "ln_residual to batch 512" in gpu.fusions.describe()
    finally:
        gpu.close()
    for text, want in ((OFF, (False, False)), ("ln_residual=on,smolgen_branch=on", (True, True))):
        gpu, plat = _run(text, layers=1, bsz=bsz, base="")
        try:
            assert _paths(gpu, plat) == want, text
        finally:
            gpu.close()


def test_defaults_above_the_limits_enqueue_exactly_the_unfused_pass() -> None:
    """At a batch above every limit (520) the defaults run the very pass of every fusion forced
    off: the same GEMMs (shapes, pointers, alpha/beta, multiprocessors, streams), the same kernel
    launches with the same arguments, the same event records and waits -- so the same outputs,
    bit for bit (tests/backends/gpu/test_gpu_fusions.py checks that on a device too)."""
    runs = []
    for text in ("", OFF):
        plat = StreamPlatform()
        gpu, _ = _run("", layers=2, bsz=520, base=text, plat=plat)
        try:
            fns = {fn: i for i, fn in enumerate(dict.fromkeys(fn for fn, _, _ in plat.launches))}
            launches = [(fns[fn], stream, ptrs) for fn, stream, ptrs in plat.launches]
            # events by order of first use (the defaults compile smolgen_rows' kernels first, so
            # the recording platform's handles are numbered differently)
            order = [t for t in plat.timeline if t[0] != "op"]
            evs = {e: i for i, e in enumerate(dict.fromkeys(
                args[0] if kind == "record" else args[1] for kind, args in order))}
            events = [(kind, (evs[args[0]], args[1]) if kind == "record" else (args[0], evs[args[1]]))
                      for kind, args in order]
            runs.append((plat.gemms, launches, events))
            assert _paths(gpu, plat) == (False, False)
        finally:
            gpu.close()
    assert runs[0][0] == runs[1][0] and runs[0][1] == runs[1][1] and runs[0][2] == runs[1][2]
    assert runs[0][0] and runs[0][1]


class CapturePlatform(CallPlatform):
    """``CallPlatform`` that notes where each graph capture starts and ends in its GEMMs and
    launches."""

    def __init__(self) -> None:
        super().__init__()
        self.captures: list[list[int]] = []  # [gemm from, launch from, gemm to, launch to]

    def begin_capture(self, stream: int) -> None:
        self.captures.append([len(self.gemms), len(self.launches), -1, -1])

    def end_capture(self, stream: int) -> int:
        self.captures[-1][2:] = [len(self.gemms), len(self.launches)]
        return super().end_capture(stream)


def test_each_graph_bucket_captures_its_own_paths_and_replays_them() -> None:
    """``prepare`` captures one graph per batch-size bucket; each holds the paths of its bucket's
    size (``ln_residual`` to 512, ``smolgen_branch`` to 128); a later batch of any size replays
    its bucket's graph (nothing enqueued again, nothing captured)."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.weights import graph_bucket

    plat = CapturePlatform()
    net = random_network("t82", 2, layers=1)
    gpu = GpuNetwork(plat, net, fp16=True, options=GpuOptions.from_text("graphs=on,max_batch=4"))
    try:
        buckets = sorted({graph_bucket(n) for n in range(1, 577)})
        assert gpu.prepare(576) == len(buckets) == len(plat.captures)
        assert {128, 144, 512, 576} <= set(buckets)
        for run, (g0, l0, g1, l1) in zip(buckets, plat.captures, strict=True):
            assert g1 > g0 and l1 > l0
            sub = CallPlatform()
            sub.gemms, sub.launches = plat.gemms[g0:g1], plat.launches[l0:l1]
            assert _paths(gpu, sub) == (run <= 512, run <= 128), run
        gemms, launches = len(plat.gemms), len(plat.launches)
        for n in (3, 100, 130, 500, 520):
            masks = np.random.default_rng(n).integers(1, 2**63, size=(n, 112), dtype=np.uint64)
            gpu.submit(PlanesBatch(masks, np.ones((n, 112), np.float32)))
        assert (len(plat.gemms), len(plat.launches), len(plat.captures)) == (gemms, launches, len(buckets))
    finally:
        gpu.close()


@pytest.mark.parametrize(("text", "bsz", "fused"), [
    ("smolgen_rows=on,smolgen_compress=off", 1, True),
    ("smolgen_rows=on,smolgen_compress=off", 3, True),
    ("smolgen_rows=off", 3, False),
    ("smolgen_rows_max=2", 3, False),  # auto, the limit moved below the batch
    ("smolgen_rows=on,smolgen_branch=on,smolgen_compress=off", 4, True),  # beside the QKV GEMM
])
def test_smolgen_rows_runs_each_dense_layer_with_its_layernorm_in_one_kernel(
    text: str, bsz: int, fused: bool
) -> None:
    """``smolgen_rows``: per layer two ``dense_rows_layernorm`` launches (dense 1: the compress
    columns to ``sg_s1``, dense 2: ``sg_s1`` to ``sg_s2``, each with its own weights, bias and
    LayerNorm parameters, the shared scratch and ticket counter) take the place of the two dense
    GEMMs and the two smolgen LayerNorms; unfused, the GEMMs and LayerNorms run as before."""
    gpu, plat = _run(text, bsz=bsz)
    try:
        s, buf, ops = gpu.shape, gpu.runner.buf, gpu.ops
        layers = len(gpu.model.encoders)
        dense = {fn for fn, _ in ops._dense_rows.values()}
        launched = [(stream, ptrs) for fn, stream, ptrs in plat.launches if fn in dense]
        gemms = [g for g in plat.gemms if g["c"] in (buf.sg_s1, buf.sg_s2)]
        sg_lns = [1 for fn, _, _ in plat.launches
                  if fn in (ops._ln[(s.hs, gpu.model.encoders[0].smolgen.act)][0],
                            ops._ln[(s.H * s.gs, gpu.model.encoders[0].smolgen.act)][0])]
        if not fused:
            assert not launched and len(gemms) == 2 * layers and len(sg_lns) == 2 * layers
            return
        assert not gemms and not sg_lns and len(launched) == 2 * layers
        for i, layer in enumerate(gpu.model.encoders):
            w = layer.smolgen.w
            for (stream, ptrs), (x, wt, b, g, be, out) in zip(
                launched[2 * i : 2 * i + 2],
                ((buf.sg_c, w.d1_w, w.d1_b, w.ln1_g, w.ln1_b, buf.sg_s1),
                 (buf.sg_s1, w.d2_w, w.d2_b, w.ln2_g, w.ln2_b, buf.sg_s2)),
                strict=True,
            ):
                assert ptrs[:8] == [x, wt, b, g, be, out, buf.sg_pre, buf.sg_count]
                assert stream == (ops.side if gpu.fusions.at(bsz).smolgen_branch else ops.main)
    finally:
        gpu.close()


@pytest.mark.parametrize(("text", "bsz", "fused"), [
    ("", 1, True),  # the defaults: with smolgen_rows at one position (dense 2 by dense_rows)
    ("", 2, True),  # ... then dense 2 by its GEMM and LayerNorm, up to smolgen_compress_max
    ("", SMOLGEN_COMPRESS_MAX, True),
    ("", SMOLGEN_COMPRESS_MAX + 1, False),
    ("smolgen_rows=on", 3, True),
    ("smolgen_compress=on,smolgen_branch=off", 2, True),  # in line: x and the compress rows, no copy
    ("smolgen_rows=on,smolgen_compress=off", 2, False),
    ("smolgen_compress=off", 1, False),
])
def test_smolgen_compress_folds_the_compress_into_dense_1(text: str, bsz: int, fused: bool) -> None:
    """``smolgen_compress``: per layer one ``compress_rows_layernorm`` launch reads the layer input
    and the compress rows of the fused QKV weight and writes dense 1's normalised output ``sg_s1``
    (its own weights, bias and LayerNorm parameters, the shared scratch and counters); dense 2 is
    a ``dense_rows_layernorm`` where ``smolgen_rows`` applies, else its GEMM from ``sg_s1`` into
    ``sg_s2`` (and its LayerNorm). No compress GEMM and no column copy into ``sg_c``. Off, or
    above its limit, nothing launches it. (``smolgen_early`` off: its form, the next test.)"""
    branch = "smolgen_branch=on" if "branch" not in text else ""
    gpu, plat = _run(",".join(t for t in (text, branch, "smolgen_early=off") if t), bsz=bsz, base="")
    try:
        s, buf, ops = gpu.shape, gpu.runner.buf, gpu.ops
        folded = {fn for fn, _ in ops._compress_rows.values()}
        dense = {fn for fn, _ in ops._dense_rows.values()}
        launched = [(stream, ptrs) for fn, stream, ptrs in plat.launches if fn in folded]
        to_sg_c = [g for g in plat.gemms if g["c"] == buf.sg_c]
        f = gpu.fusions.at(bsz)
        assert f.smolgen_compress is fused
        if not fused:
            assert not launched
            return
        layers = gpu.model.encoders
        assert len(launched) == len(layers) and not to_sg_c
        rows = [(stream, ptrs) for fn, stream, ptrs in plat.launches if fn in dense]
        dense2 = [g for g in plat.gemms if g["c"] == buf.sg_s2]
        assert (len(rows), len(dense2)) == ((len(layers), 0) if f.smolgen_rows else (0, len(layers)))
        for i, layer in enumerate(layers):
            w = layer.smolgen.w
            stream, ptrs = launched[i]
            compress_w = ops.off(layer.w.qkv_w, 3 * s.D * s.E)
            assert ptrs[:9] == [buf.x, compress_w, w.d1_w, w.d1_b, w.ln1_g, w.ln1_b, buf.sg_s1, buf.sg_pre,
                                buf.sg_count]
            assert stream == (ops.side if f.smolgen_branch else ops.main)
            if f.smolgen_rows:
                assert rows[i][1][:6] == [buf.sg_s1, w.d2_w, w.d2_b, w.ln2_g, w.ln2_b, buf.sg_s2]
            else:
                assert (dense2[i]["a"], dense2[i]["m"], dense2[i]["b"]) == (buf.sg_s1, bsz, w.d2_w)
    finally:
        gpu.close()


@pytest.mark.parametrize(("text", "bsz", "early"), [
    ("", 1, True),  # the defaults: dense 2 by dense_rows at one position ...
    ("", SMOLGEN_EARLY_MAX, True),  # ... and by its GEMM and LayerNorm up to smolgen_early_max
    ("", SMOLGEN_EARLY_MAX + 1, False),
    ("smolgen_early=on", 3, True),  # on: wherever smolgen_compress applies
    ("smolgen_early=on", SMOLGEN_COMPRESS_MAX + 1, False),
    ("smolgen_early_max=3", 3, True),
    ("smolgen_early=off", 1, False),
    ("smolgen_branch=off", 1, False),  # in line there is no LayerNorm to run beside
    ("ln_residual=off", 1, False),  # the FFN2 GEMM then adds the skip in place
    ("row_halves=on", 3, False),  # the FFN runs in halves
    ("row_halves=on", 1, True),  # ... but a batch of one runs unsplit
])
def test_smolgen_early_forks_the_next_chain_from_the_ffn_output(text: str, bsz: int, early: bool) -> None:
    """``smolgen_early``: each layer but the last writes its FFN2 output ``y`` into ``buf.attn``
    (``alpha``-scaled, no skip), forks the next layer's smolgen chain on the side stream right
    after that GEMM with ``compress_rows_prenorm`` (``y``, the skip ``x1``, the layer's closing
    LayerNorm's bias, gamma and beta, then the next layer's compress rows and dense 1), and only
    then launches its closing LayerNorm ``x = LN(y + alpha·b2 + x1)`` on the main stream. The next
    layer forks nothing itself; the first layer's chain starts from ``x`` as before. Off, in line,
    without ``ln_residual``, in the row-halves pipeline or above the compress limit: no fork."""
    gpu, plat = _run(text, bsz=bsz, layers=3, base="", plat=StreamPlatform())
    assert isinstance(plat, StreamPlatform)
    try:
        s, buf, ops = gpu.shape, gpu.runner.buf, gpu.ops
        f = gpu.fusions.at(bsz)
        assert f.smolgen_early is early
        layers = gpu.model.encoders
        prenorm = {fn for fn, _ in ops._compress_prenorm.values()}
        plain = {fn for fn, _ in ops._compress_rows.values()}
        forks = [i for i, (kind, _, rec) in enumerate(plat.ops_seen)
                 if kind == "launch" and rec[0] in prenorm]
        if not early:
            assert not forks
            assert not unordered_conflicts(gpu, plat)
            return
        assert len(forks) == len(layers) - 1
        assert len([1 for kind, _, rec in plat.ops_seen if kind == "launch" and rec[0] in plain]) == 1
        lns = {handle for handle, _ in ops._ln.values()}
        for i, at in enumerate(forks):
            before, after = layers[i], layers[i + 1]
            fw = before.ffn.w
            kind, stream, (_, ptrs, _) = plat.ops_seen[at]
            assert stream == ops.side
            compress_w = ops.off(after.w.qkv_w, 3 * s.D * s.E)
            assert ptrs[:5] == [buf.attn, buf.x1, fw.b2_alpha, fw.ln_g, fw.ln_b]
            assert ptrs[6:9] == [compress_w, after.smolgen.w.d1_w, after.smolgen.w.d1_b]
            # the FFN2 GEMM before it wrote y there, without the skip ...
            ffn2 = [rec for kind, _, rec in plat.ops_seen[:at] if kind == "gemm" and rec["b"] == fw.w2]
            assert ffn2 and ffn2[-1]["c"] == buf.attn and not ffn2[-1].get("beta", 0.0)
            # ... and the closing LayerNorm comes after the fork, on the main stream, into x
            closing = [(st, rec) for kind, st, rec in plat.ops_seen[at:]
                       if kind == "launch" and rec[0] in lns and rec[1][0] == buf.attn]
            st, (_, ln_ptrs, _) = closing[0]
            assert st == ops.main and ln_ptrs[:4] == [buf.attn, fw.b2_alpha, buf.x1, buf.x]
        assert not unordered_conflicts(gpu, plat)
    finally:
        gpu.close()


def test_smolgen_rows_options_and_limits() -> None:
    """``smolgen_rows_max`` is 1 to the kernel's ``DENSE_ROWS_MAX`` rows, in one line otherwise;
    the launch refuses more rows than the kernel takes."""
    assert GpuOptions().smolgen_rows is None and GpuOptions().smolgen_rows_max == SMOLGEN_ROWS_MAX
    assert GpuOptions.from_text("smolgen_rows_max=1").smolgen_rows_max == 1
    for bad in (f"smolgen_rows_max={DENSE_ROWS_MAX + 1}", "smolgen_rows_max=0"):
        message = one_line_error(BackendOptionError, lambda bad=bad: GpuOptions.from_text(bad, "cuda-fp16"))
        assert f"{bad} is out of range" in message, message
    gpu, _ = _run("smolgen_rows=on,smolgen_compress=on", bsz=1)
    try:
        with pytest.raises(ValueError, match="1..8 rows"):
            gpu.ops.dense_rows_layernorm(0, DENSE_ROWS_MAX + 1, 2048, 0, 256, 0, 0, 0, 0, 1e-3, 7, 0, 0)
        shape = gpu.model.encoders[0].smolgen.compress_shape
        with pytest.raises(ValueError, match=f"1..{COMPRESS_ROWS_MAX} rows"):
            gpu.ops.compress_rows_layernorm(0, COMPRESS_ROWS_MAX + 1, shape, 0, 0, 0, 0, 0, 0, 1e-3, 7, 0, 0)
    finally:
        gpu.close()


def test_smolgen_rows_never_takes_more_rows_than_its_kernel() -> None:
    """A record with ``smolgen_rows`` and no limit (``Fusions`` built by hand) still gives the
    GEMM path above ``DENSE_ROWS_MAX`` positions: the kernel refuses more rows."""
    f = Fusions(smolgen_rows=True)
    assert f.at(DENSE_ROWS_MAX).smolgen_rows and not f.at(DENSE_ROWS_MAX + 1).smolgen_rows
    assert not Fusions(smolgen_rows=True, smolgen_rows_max=64).at(DENSE_ROWS_MAX + 1).smolgen_rows


class _MemsetPlatform(CallPlatform):
    """``CallPlatform`` that also keeps each memset, and what was enqueued before it."""

    def __init__(self) -> None:
        super().__init__()
        self.memsets: list[tuple[int, int, int, int]] = []  # (ptr, byte, nbytes, launches before)

    def memset(self, ptr: int, byte: int, nbytes: int, stream: int) -> None:
        self.memsets.append((ptr, byte, nbytes, len(self.launches)))


def test_the_runner_zeroes_the_dense_rows_ticket_before_any_launch() -> None:
    """``dense_rows_layernorm`` counts finished blocks on ``buf.sg_count`` and finds the last one
    only if the count starts at 0; a fresh device allocation need not be zeroed, so the runner
    zeroes the counter each time it (re)allocates the buffers, before any kernel reads it -- and
    again after the buffers grow."""
    plat = _MemsetPlatform()
    gpu, _ = _run("smolgen_rows=on", bsz=1, plat=plat)
    try:
        buf = gpu.runner.buf
        assert buf.sg_count and buf.sg_pre
        zeroed = [m for m in plat.memsets if m[0] == buf.sg_count]
        # the row kernels' tickets (compress_rows: one a row) and the chain's two counters
        assert zeroed and zeroed[-1][1:3] == (0, SMOLGEN_COUNTER_BYTES) and zeroed[0][3] == 0
        before = len(plat.memsets)
        gpu.runner.ensure(64)  # larger than max_batch=4: a new arena, a new ticket
        assert gpu.runner.buf.sg_count != buf.sg_count
        assert [m[:3] for m in plat.memsets[before:]] == [(gpu.runner.buf.sg_count, 0, SMOLGEN_COUNTER_BYTES)]
    finally:
        gpu.close()


@pytest.mark.parametrize(("text", "bsz", "fused"), [
    ("smolgen_chain=on,smolgen_branch=off", 1, True),  # in line: x and the compress rows, no column copy
    ("smolgen_chain=on", 3, True),
    ("smolgen_chain=on,smolgen_branch=on", 4, True),  # on the side stream beside the QKV GEMM
    ("smolgen_chain=on", 5, False),  # more positions than the kernel takes
    ("smolgen_chain=off,smolgen_rows=on", 2, False),
    ("smolgen_chain=auto,smolgen_chain_max=2", 3, False),  # the limit below the batch
    ("smolgen_chain=auto,smolgen_chain_max=2,smolgen_rows=on", 2, True),  # both apply: the chain only
])
def test_smolgen_chain_runs_smolgen_in_one_kernel(text: str, bsz: int, fused: bool) -> None:
    """``smolgen_chain``: per layer one ``smolgen_chain`` launch -- the layer input ``x`` and the
    compress rows of the fused QKV weight in, ``sg_s2`` out, with that layer's dense and LayerNorm
    weights, the shared scratch and counters -- takes the place of the compress GEMM (or column
    copy), the two dense layers and their LayerNorms (or the two ``dense_rows`` launches); the
    generator GEMM after it reads ``sg_s2`` as before."""
    gpu, plat = _run(text, bsz=bsz, plat=_IntPlatform())
    try:
        s, buf, ops = gpu.shape, gpu.runner.buf, gpu.ops
        layers = len(gpu.model.encoders)
        chain = {fn for fn, _ in ops._smolgen_chain.values()}
        dense = {fn for fn, _ in ops._dense_rows.values()}
        launched = [(stream, ptrs, ints) for fn, stream, ptrs, ints in _with_ints(plat) if fn in chain]
        rows_kernels = [1 for fn, _, _ in plat.launches if fn in dense]
        smolgen_gemms = [g for g in plat.gemms if g["c"] in (buf.sg_c, buf.sg_s1, buf.sg_s2)]
        copies = [1 for fn, _, _ in plat.launches if fn == ops.k_copy_cols]
        generator = [g for g in plat.gemms if g["c"] == buf.sg_g]
        assert len(generator) == layers and all(g["a"] == buf.sg_s2 for g in generator)
        if not fused:
            assert not launched
            return
        assert len(launched) == layers and not rows_kernels and not smolgen_gemms and not copies
        for layer, (stream, ptrs, ints) in zip(gpu.model.encoders, launched, strict=True):
            w, lw = layer.smolgen.w, layer.w
            compress_w = ops.off(lw.qkv_w, 3 * s.D * s.E)
            assert ptrs[:13] == [buf.x, compress_w, w.d1_w, w.d1_b, w.ln1_g, w.ln1_b, w.d2_w, w.d2_b, w.ln2_g,
                                 w.ln2_b, buf.sg_s2, buf.sg_pre, buf.sg_count]
            assert ints[0] == bsz
            assert stream == (ops.side if gpu.fusions.at(bsz).smolgen_branch else ops.main)
    finally:
        gpu.close()


class _IntPlatform(CallPlatform):
    """``CallPlatform`` that also keeps every launch's integer arguments (from construction on)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, int, list[int], list[int]]] = []

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: Any) -> None:
        super().launch(fn, grid, block, smem, stream, args)
        ints = [a.value for a in args if isinstance(a, ctypes.c_int)]
        self.calls.append((fn, stream, self.launches[-1][2], ints))


def _with_ints(plat: CallPlatform) -> list[tuple[int, int, list[int], list[int]]]:
    """Every recorded launch with its integer arguments (``_IntPlatform``)."""
    assert isinstance(plat, _IntPlatform)
    return plat.calls


def test_smolgen_chain_options_and_limits() -> None:
    """``smolgen_chain_max`` is 1 to the kernel's ``SMOLGEN_CHAIN_MAX`` positions, in one line
    otherwise; the launch refuses more positions than the kernel takes; a record without a limit
    still stops at the kernel's most."""
    assert GpuOptions().smolgen_chain is False and GpuOptions().smolgen_chain_max == SMOLGEN_CHAIN_MAX_AUTO
    assert GpuOptions.from_text("smolgen_chain=auto").smolgen_chain is None
    assert GpuOptions.from_text("smolgen_chain=on").smolgen_chain is True
    for bad in (f"smolgen_chain_max={SMOLGEN_CHAIN_MAX + 1}", "smolgen_chain_max=0"):
        message = one_line_error(BackendOptionError, lambda bad=bad: GpuOptions.from_text(bad, "cuda-fp16"))
        assert f"{bad} is out of range" in message, message
    message = one_line_error(BackendOptionError, lambda: GpuOptions.from_text("smolgen_chain=maybe", "cuda"))
    assert "smolgen_chain='maybe' is not one of on, off, auto" in message, message
    f = Fusions(smolgen_chain=True, smolgen_rows=True)
    assert f.at(SMOLGEN_CHAIN_MAX).smolgen_chain and not f.at(SMOLGEN_CHAIN_MAX).smolgen_rows
    assert not f.at(SMOLGEN_CHAIN_MAX + 1).smolgen_chain and f.at(SMOLGEN_CHAIN_MAX + 1).smolgen_rows
    gpu, _ = _run("smolgen_chain=on", bsz=1)
    try:
        layer = gpu.model.encoders[0].smolgen
        with pytest.raises(ValueError, match="1..4 positions"):
            too_many = SMOLGEN_CHAIN_MAX + 1
            gpu.ops.smolgen_chain(0, too_many, layer.chain_shape, *([0] * 10), (1e-3, 1e-3), 7, 0, 0)
    finally:
        gpu.close()
