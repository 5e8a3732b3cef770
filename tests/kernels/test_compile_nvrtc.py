"""Every kernel compiles through NVRTC for sm_80 and sm_90 with several parameter sets (no GPU).

NVRTC runs on CPU-only machines, so CI catches syntax errors, register-array misuse that ptxas
rejects, and a broken mma.h branch (the scalar reference branch is compiled too). Skipped when
cuda-python / NVRTC are not installed.
"""

from __future__ import annotations

import pytest

from lc0py.backends.gpu.kernels import AttentionKernel, flash_shape_defines
from lc0py.backends.gpu.ops import compress_rows_config, dense_rows_config, smolgen_chain_config
from lc0py.backends.gpu.tuning import FlashParams, default_params
from lc0py.gpu.compile_cache import define_options, kernel_dir, read_headers

nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
from lc0py.gpu.cuda_platform import nvrtc_compile  # noqa: E402

ARCHS = ("sm_80", "sm_90")


def _compile(source: str, defines: dict[str, int], arch: str) -> bytes:
    kd = kernel_dir()
    return nvrtc_compile(
        (kd / source).read_text(), source, define_options(defines), read_headers(kd), f"-arch={arch}"
    )


def _flash_cases() -> list[tuple[str, dict[str, int]]]:
    cases = []
    for depth in (32, 64, 96, 128):
        p, _ = default_params(depth, "sm_90")  # the persistent kernel (flash=v2)
        assert p.persistent
        cases.append((f"f16-d{depth}-default", p.defines(depth, fp16=True, bias_f32=False)))
        cases.append((f"f32-d{depth}-default", p.defines(depth, fp16=False, bias_f32=True)))
        v1, _ = default_params(depth, "sm_90", persistent=0)  # the one-shot kernel (flash=v1)
        cases.append((f"f16-d{depth}-v1-default", v1.defines(depth, fp16=True, bias_f32=False)))
    # the persistent kernel's tuner neighbours: 3 stages, 2 tiles per pair, 32-row blocks, d > 128
    v2_s3 = FlashParams(stages=3, min_blocks=3, persistent=1)
    cases.append(("f16-d32-v2-s3", v2_s3.defines(32, True, False)))
    v2_w2 = FlashParams(warps=2, kv_tile=32, stages=2, persistent=1, interleave=0)
    cases.append(("f16-d64-v2-kv32-w2", v2_w2.defines(64, True, False)))
    v2_256, _ = default_params(256, "sm_90")
    cases.append(("f16-d256-v2", v2_256.defines(256, fp16=True, bias_f32=False)))
    odd = FlashParams(warps=2, kv_tile=32, stages=2, q_regs=0, min_blocks=2)
    cases.append(("f16-d64-w2-kv32-s2-noqregs", odd.defines(64, fp16=True, bias_f32=False)))
    cases.append(("f16-d48-biasf32", FlashParams().defines(48, fp16=True, bias_f32=True)))
    # the tuner's deeper pipelines: 4 stages over 4 KV tiles, and over 2 heads x 2 tiles
    s4 = FlashParams(kv_tile=16, stages=4)
    cases.append(("f16-d64-kv16-s4", s4.defines(64, fp16=True, bias_f32=False)))
    s4h2 = FlashParams(kv_tile=32, stages=4, heads_per_block=2)
    cases.append(("f16-d32-kv32-s4-hpb2", s4h2.defines(32, fp16=True, bias_f32=False)))
    cases.append(
        ("f16-d160-kv32", FlashParams(kv_tile=32, q_regs=0, stages=2).defines(160, fp16=True, bias_f32=False))
    )
    # the net's shape compiled in (kernels.flash_shape_defines, as the backend builds the chess
    # entries): T82's 24 x 32 heads on the persistent kernel, 12 x 64 on the one-shot kernel
    p32, _ = default_params(32, "sm_90")
    shape32 = flash_shape_defines(AttentionKernel.FLASH_MMA_PERSISTENT, 64, 24, 2336, 768)
    cases.append(("f16-d32-v2-shape-default", {**p32.defines(32, True, False), **shape32}))
    by_column = FlashParams(**{**p32.__dict__, "copy_order": 1})  # attn_copy_order=1
    cases.append(("f16-d32-v2-shape-bycolumn", {**by_column.defines(32, True, False), **shape32}))
    p64, _ = default_params(64, "sm_90", persistent=0)
    shape64 = flash_shape_defines(AttentionKernel.FLASH_MMA, 64, 12, 2336, 768)
    cases.append(("f16-d64-v1-shape", {**p64.defines(64, True, False), **shape64}))
    # lc0py.attention's general entry (attention_f16): causal or not, depths up to 256
    for depth, causal in ((64, 0), (128, 1), (256, 1)):
        gp, _ = default_params(depth, "sm_90", seq=1024, persistent=0)
        gen = {**gp.defines(depth, fp16=True, bias_f32=False), "LC0_FA_GENERAL": 1, "LC0_FA_CAUSAL": causal}
        cases.append((f"f16-general-d{depth}-causal{causal}", gen))
    # the scalar reference branch needs a_from_c scratch on NVIDIA too (256 fp16 per warp)
    scalar = FlashParams().defines(32, fp16=True, bias_f32=False, scratch_per_warp=256)
    cases.append(("f16-d32-scalar-mma", {**scalar, "LC0_MMA_SCALAR": 1}))
    scalar_v2 = FlashParams(stages=2, persistent=1).defines(32, True, False, scratch_per_warp=256)
    cases.append(("f16-d32-scalar-mma-v2", {**scalar_v2, "LC0_MMA_SCALAR": 1}))
    return cases


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(("name", "defines"), _flash_cases(), ids=[c[0] for c in _flash_cases()])
def test_flash_attention_compiles(arch: str, name: str, defines: dict[str, int]) -> None:
    if arch == "sm_80" and "default" not in name and name != "f16-general-d128-causal1":
        pytest.skip("parameter variants: sm_90 only (CI time; one general-entry variant on both)")
    assert len(_compile("flash_attention.hip", defines, arch)) > 1000


OTHER = [
    ("layernorm.hip", {"LC0_LN_N": 768, "LC0_LN_THREADS": 32, "LC0_LN_ROWS": 4}),
    ("layernorm.hip", {"LC0_LN_N": 6144, "LC0_LN_THREADS": 128, "LC0_LN_ROWS": 1, "LC0_FP16": 0}),
    ("layernorm.hip", {"LC0_LN_N": 100, "LC0_LN_THREADS": 32, "LC0_LN_ROWS": 4}),  # N not a multiple of 8
    ("elementwise.hip", {"LC0_FP16": 1}),
    ("elementwise.hip", {"LC0_FP16": 0}),
    ("softmax_bias.hip", {"LC0_SM_PER": 2}),
    ("softmax_bias.hip", {"LC0_SM_PER": 3, "LC0_FP16": 0}),  # + softmax_rows (lc0py.attention naive)
    ("policy_map.hip", {"LC0_FP16": 1}),
    ("policy_map.hip", {"LC0_FP16": 0}),
    ("residual.hip", {"LC0_FP16": 1}),  # residual (SE-ResNet) bodies: im2col3x3 + se_residual
    ("residual.hip", {"LC0_FP16": 0}),
    ("residual.hip", {"LC0_FP16": 1, "LC0_SE_OUTSIDE": 1}),  # the fused steps' sums / gates (se_gates)
    # smolgen's dense layers + LayerNorm for a few rows (smolgen_rows): T82's two shapes, swish
    ("dense_rows.hip", {**dense_rows_config(256, 2048, 7), "LC0_FP16": 1}),
    ("dense_rows.hip", {**dense_rows_config(6144, 256, 7), "LC0_FP16": 0}),
    # smolgen's compress and dense 1 + LayerNorm split by token (smolgen_compress): T82's widths,
    # and a scaled-down one whose rows are not 16-byte multiples (the scalar chunks)
    ("compress_rows.hip", {**compress_rows_config(64, 768, 32, 256, 7), "LC0_FP16": 1}),
    ("compress_rows.hip", {**compress_rows_config(8, 50, 6, 300), "LC0_FP16": 0}),
    # smolgen's whole per-position network in one kernel with grid barriers (smolgen_chain): T82's
    # widths, and a scaled-down one whose rows are not 16-byte multiples (the scalar chunks)
    ("smolgen_chain.hip", {**smolgen_chain_config(64, 768, 32, 256, 6144), "LC0_FP16": 1}),
    ("smolgen_chain.hip", {**smolgen_chain_config(4, 36, 2, 16, 40), "LC0_FP16": 0}),
    # the probe's build (scripts/bench/smolgen_chain_probe.py): global-timer stamps, other groupings
    ("smolgen_chain.hip", {**smolgen_chain_config(64, 768, 32, 256, 6144), "LC0_SC_CLOCKS": 1, "LC0_SC_C0": 4,
                           "LC0_SC_G2": 8}),
]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize(
    ("source", "defines"), OTHER, ids=[f"{s}-{'-'.join(f'{k}{v}' for k, v in d.items())}" for s, d in OTHER]
)
def test_other_kernels_compile(arch: str, source: str, defines: dict[str, int]) -> None:
    if arch == "sm_80" and source == "layernorm.hip" and defines["LC0_LN_N"] != 768:
        pytest.skip("layernorm variants: sm_90 only (CI time)")
    assert len(_compile(source, defines, arch)) > 1000


#: What a GPU before sm_80 (Volta, Turing) compiles: everything but the flash kernel (no
#: mma.sync.m16n8k16 there; ``mma_kind`` is None). cp.async does not exist before sm_80 either, so
#: the prelude's async copies become plain copies there.
PRE_SM80 = [case for case in OTHER if case[0] != "layernorm.hip" or case[1]["LC0_LN_N"] == 768]


@pytest.mark.parametrize(
    ("source", "defines"), PRE_SM80,
    ids=[f"{s}-{'-'.join(f'{k}{v}' for k, v in d.items())}" for s, d in PRE_SM80],
)
def test_non_flash_kernels_compile_before_sm80(source: str, defines: dict[str, int]) -> None:
    assert len(_compile(source, defines, "sm_75")) > 1000


def test_compile_error_carries_log() -> None:
    from lc0py.errors import KernelCompileError

    with pytest.raises(KernelCompileError) as info:
        defines = FlashParams().defines(24, fp16=True, bias_f32=False)  # 24 % 16 != 0: static_assert
        _compile("flash_attention.hip", defines, "sm_90")
    assert "multiple of 16" in info.value.log


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("shared-memory size (f16)", {"LC0_FA_SMEM_BYTES": 16}),
        ("mma scratch (f16)", {"LC0_FA_SCRATCH_ELEMS": 256}),
        ("shared-memory size (f32)", {"LC0_FP16": 0, "LC0_FA_SMEM_BYTES": 16}),
        # the persistent kernel keeps a Q buffer per pair in flight: the one-shot size is wrong for it
        ("shared-memory size (persistent)", {"LC0_FA_PERSIST": 1, "LC0_FA_STAGES": 2}),
    ],
)
def test_host_layout_drift_fails_the_compile(what: str, change: dict[str, int]) -> None:
    """The host's mirror of the kernel layout (FlashParams.shared_bytes, the per-warp mma scratch)
    is checked by static_assert in the kernel: a wrong value must not compile."""
    from lc0py.errors import KernelCompileError

    defines = {**FlashParams().defines(64, fp16=True, bias_f32=False), **change}
    with pytest.raises(KernelCompileError) as info:
        _compile("flash_attention.hip", defines, "sm_90")
    assert "differs" in str(info.value.log), what


def test_a_compile_leaves_the_processs_one_byte_strings_alone() -> None:
    """NVRTC writes each result with its NUL; handed ``b" " * 1`` (an empty log is one byte),
    it wrote into CPython's shared ``b" "`` and every one-byte space of the process became NUL
    (an ``.npy`` header padded with one space could no longer be read). A subprocess, so a
    regression cannot disturb the other tests."""
    import subprocess
    import sys

    code = (
        "from lc0py.gpu.compile_cache import kernel_dir, read_headers\n"
        "from lc0py.gpu.cuda_platform import nvrtc_compile\n"
        "src = 'extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 2.0f; }'\n"
        "out = nvrtc_compile(src, 'k.hip', [], read_headers(kernel_dir()), '-arch=sm_80')\n"
        "print(len(out) > 0, repr(b' '), repr(' '.encode()), repr(b'a b'[1:2]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    )
    assert result.stdout.strip() == "True b' ' b' ' b' '"
