"""kernels/mma_amd.h on a CPU emulation of an AMD wave -- the only execution evidence for the AMD
tile mapping, since the project has no AMD GPU.

``amd_emu/wave_emu.h`` runs one wave as 32 (RDNA3/RDNA4 WMMA) or 64 (CDNA MFMA) lockstep threads and
models the cross-lane builtins (WMMA, MFMA, DPP, ds_bpermute, mbcnt) from the ISA documentation,
independently of mma_amd.h; ``amd_emu/mma_amd_emu_test.cpp`` compiles the real kernels/mma.h +
prelude_hiprtc.h for the host against it and checks every contract function bit-exactly on
integer data (and to fp32 rounding on normal data). A failing check prints which element is off.

The same emulator then runs the real ``kernels/flash_attention.hip`` (fp16, mma.h AMD branches)
on whole blocks -- several waves, ``__syncthreads``, dynamic shared memory -- with the parameter
sets the backend picks for gfx1100/gfx90a, and compares it with float64 numpy attention
(smolgen bias, Q/V biases, a partial last tile, two KV tiles for the online-softmax rescale, a
block walking two heads with cross-head prefetch, and the persistent kernel of ``flash=v2``:
blocks walking uneven ranges of (position, head) pairs across positions, some with none).

What this cannot show: the hardware itself disagreeing with its documentation, compiler
code generation for AMD (test_compile_amd.py covers compilation), timing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lc0py.backends.accuracy import relative_error
from tests.kernels.emu_build import build_emulators

ROOT = Path(__file__).resolve().parents[2]

# (id, defines): both matrix-core branches, with DPP and with ds_bpermute row reductions.
CONFIGS = [
    ("wmma-gfx11-dpp", ["-DEMU_WMMA"]),
    ("wmma-gfx11-bpermute", ["-DEMU_WMMA", "-DLC0_AMD_NO_DPP"]),
    ("wmma-gfx12-dpp", ["-DEMU_WMMA12"]),
    ("mfma-cdna-dpp", ["-DEMU_MFMA"]),
    ("mfma-cdna-bpermute", ["-DEMU_MFMA", "-DLC0_AMD_NO_DPP"]),
]


def _flash_configs() -> list[tuple[str, list[str]]]:
    """(id, -D flags): the backend's own choice for depth 32 (one KV tile) and a depth-64 variant
    with 32-key tiles and double buffering (two tiles: the running max/sum rescale runs)."""
    from dataclasses import replace

    from lc0py.backends.gpu.kernels import choose_attention, flash_shape_defines
    from lc0py.backends.gpu.tuning import FlashParams
    from lc0py.gpu.platform import mma_scratch_elems

    out = []
    for emu, arch in (("wmma", "gfx1100"), ("wmma12", "gfx1201"), ("mfma", "gfx90a")):
        scratch = mma_scratch_elems("amd", arch)
        ch = choose_attention(
            depth=32, seq=64, fp16=True, vendor="amd", arch=arch, shared_optin=65536, scratch_per_warp=scratch
        )
        assert ch.params is not None, ch.reason
        variants = {
            "d32-default": ch.params.defines(32, True, False, scratch),
            "d64-kv32-s2": FlashParams(kv_tile=32, stages=2).defines(64, True, False, scratch),
            # one block walks 2 heads, prefetching the next head's tiles (3 heads: a short group)
            "d32-hpb2-s2": FlashParams(stages=2, heads_per_block=2).defines(32, True, False, scratch),
            # the tuner's deeper pipeline: 4 stages over 2 heads x 4 KV tiles (Q buffer per head)
            "d64-kv16-s4-hpb2": FlashParams(kv_tile=16, stages=4, heads_per_block=2).defines(
                64, True, False, scratch
            ),
        }
        # flash=v2: the persistent kernel as the backend picks it when forced (pairs interleaved
        # over the blocks), and a 3-stage ring over 2 KV tiles per pair (Q buffers rotate with the
        # pairs in flight) with contiguous ranges of pairs walked from the last position down
        v2 = choose_attention(
            depth=32, seq=64, fp16=True, vendor="amd", arch=arch, shared_optin=65536,
            scratch_per_warp=scratch, overrides={"persistent": 1},
        )
        assert v2.params is not None and v2.params.persistent == 1, v2.reason
        variants["d32-persist"] = v2.params.defines(32, True, False, scratch)
        assert v2.params.interleave == 1
        contiguous = FlashParams(kv_tile=32, stages=3, persistent=1, interleave=0, descend=1)
        variants["d64-kv32-s3-persist"] = contiguous.defines(64, True, False, scratch)
        # the d=128 default's structure (tuning.PERSISTENT_SHAPES): 2 stages over 2 KV tiles per pair
        variants["d64-kv32-s2-persist"] = FlashParams(kv_tile=32, stages=2, persistent=1, descend=1).defines(
            64, True, False, scratch
        )
        # the net's shape compiled in (kernels.flash_shape_defines), for each sequence length the
        # test runs: the test's 3 heads of 32, ld 3D, as the emulator launches them
        for seq in (64, 40):
            shape = flash_shape_defines(v2.kernel, seq, 3, 3 * 3 * 32, 3 * 32)
            variants[f"d32-persist-shape{seq}"] = {**v2.params.defines(32, True, False, scratch), **shape}
        # attn_copy_order=1: the tiles' chunks handed out a column of 8 rows at a time (d = 32), and
        # at d = 64, where the kernel keeps row order
        variants["d32-persist-bycolumn"] = replace(v2.params, copy_order=1).defines(32, True, False, scratch)
        variants["d64-kv32-s2-bycolumn"] = FlashParams(kv_tile=32, stages=2, copy_order=1).defines(
            64, True, False, scratch
        )
        for vid, defines in variants.items():
            if emu != "wmma" and ("shape" in vid or "bycolumn" in vid):
                continue  # CI time: the constants fold the same index arithmetic on every branch
            if emu == "wmma12" and vid != "d32-default":
                continue  # CI time: gfx12 differs from gfx11 only inside mma_amd.h
            if emu != "wmma" and vid in ("d64-kv16-s4-hpb2", "d64-kv32-s3-persist", "d64-kv32-s2-persist"):
                continue  # CI time: the stage rotation is the same code on every branch
            flags = [f"-DEMU_{emu.upper()}", *(f"-D{k}={v}" for k, v in sorted(defines.items()))]
            out.append((f"flash-{emu}-{vid}", flags))
    # mma.h's scalar branch (the oracle the hardware branches are held to) under both grids, on a
    # 32-lane wave: plain fp32 FMAs through the same body, with its 256-element a_from_c scratch
    for vid, params in (
        ("d32-default", FlashParams()),
        ("d32-persist", FlashParams(stages=2, persistent=1)),
        ("d32-bycolumn", FlashParams(copy_order=1)),
    ):
        defines = params.defines(32, True, False, scratch_per_warp=256)
        flags = ["-DEMU_WMMA", "-DLC0_MMA_SCALAR=1", *(f"-D{k}={v}" for k, v in sorted(defines.items()))]
        out.append((f"flash-scalar-{vid}", flags))
    return out


FLASH_CONFIGS = _flash_configs()


@pytest.fixture(scope="module")
def emulator_binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build all configurations in parallel (a few seconds each)."""
    jobs = [(cid, "mma_amd_emu_test.cpp", d) for cid, d in CONFIGS]
    jobs += [(cid, "flash_emu_main.cpp", d) for cid, d in FLASH_CONFIGS]
    return build_emulators(tmp_path_factory, "amd_emu", jobs)


@pytest.mark.parametrize("cid", [c for c, _ in CONFIGS])
def test_mma_amd_matches_documented_layout(emulator_binaries: dict[str, Path], cid: str) -> None:
    run = subprocess.run([str(emulator_binaries[cid])], capture_output=True, text=True, timeout=60)
    print(run.stdout)
    assert run.returncode == 0 and "ALL OK" in run.stdout, f"{cid}:\n{run.stdout}{run.stderr}"
    expected_branch = {
        "wmma-gfx11": "amd-wmma-gfx11",
        "wmma-gfx12": "amd-wmma-gfx12",
        "mfma-cdna": "amd-mfma-16x16x16f16",
    }[cid.rsplit("-", 1)[0]]
    assert f"branch {expected_branch}," in run.stdout


LOG2E = 1.4426950408889634


def _bias_prescaled() -> bool:
    """Whether flash_attention.hip documents G as arriving multiplied by log2(e) (exp2-domain
    softmax): then the kernel gets G*log2(e) and the reference divides it back out."""
    return "arrives multiplied by log2(e)" in (ROOT / "lc0py" / "kernels" / "flash_attention.hip").read_text()


def _attention_reference(
    qkv: np.ndarray, g: np.ndarray, bq: np.ndarray, bv: np.ndarray, heads: int, scale: float
) -> np.ndarray:
    """float64 attention with the kernel's documented semantics (flash_attention.hip header):
    Q + bq (stored back to fp16, as the kernel stages it), softmax(Q.K^T * scale + G) . V + bv.
    ``qkv``: [B, S, 3D]; ``g``: [B, H, S, S]; returns [B, S, D]."""
    b_, s_, d3 = qkv.shape
    dm = d3 // 3
    d = dm // heads
    q = (qkv[..., :dm].astype(np.float32) + bq.astype(np.float32)).astype(np.float16).astype(np.float64)
    k = qkv[..., dm : 2 * dm].astype(np.float64)
    v = qkv[..., 2 * dm :].astype(np.float64)
    out = np.empty((b_, s_, dm))
    for b in range(b_):
        for h in range(heads):
            sl = slice(h * d, (h + 1) * d)
            logits = q[b, :, sl] @ k[b, :, sl].T * scale + g[b, h].astype(np.float64)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            out[b, :, sl] = p @ v[b, :, sl] + bv[sl].astype(np.float64)
    return out


def _flash_cases() -> list[Any]:
    """(cid, seq) pairs: every configuration at both sequence lengths, except that one compiled
    for a shape (``shape64`` / ``shape40``) runs only at its own."""
    cases = []
    for cid, _ in FLASH_CONFIGS:
        for seq, sid in ((64, "seq64"), (40, "seq40-partial-tile")):
            if "-shape" not in cid or cid.endswith(f"-shape{seq}"):
                cases.append(pytest.param(cid, seq, id=f"{sid}-{cid}"))
    return cases


@pytest.mark.parametrize(("cid", "seq"), _flash_cases())
def test_flash_attention_on_emulated_amd(
    emulator_binaries: dict[str, Path], tmp_path: Path, cid: str, seq: int
) -> None:
    depth = 32 if "-d32-" in cid else 64
    batch, heads = 2, 3
    dm = heads * depth
    rng = np.random.default_rng(depth + seq)
    arrays = {
        "qkv": rng.standard_normal((batch, seq, 3 * dm)).astype(np.float16),
        "g": (
            0.5 * rng.standard_normal((batch, heads, seq, seq)) * (LOG2E if _bias_prescaled() else 1.0)
        ).astype(np.float16),
        "bq": (0.1 * rng.standard_normal(dm)).astype(np.float16),
        "bv": (0.1 * rng.standard_normal(dm)).astype(np.float16),
    }
    for name, a in arrays.items():
        a.tofile(tmp_path / f"{name}.bin")
    scale = 1.0 / float(np.sqrt(depth))
    # persistent kernel: 4 blocks over the 6 pairs (ranges of 1 and 2, crossing positions), or 7
    # (one block without a pair)
    blocks = ["4" if seq == 64 else "7"] if "persist" in cid else []
    run = subprocess.run(
        [str(emulator_binaries[cid]), str(batch), str(seq), str(heads), str(scale), str(tmp_path), *blocks],
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(run.stdout)
    assert run.returncode == 0, f"{cid}:\n{run.stdout}{run.stderr}"
    assert ("branch scalar," in run.stdout) == ("scalar" in cid), run.stdout
    out = np.fromfile(tmp_path / "o.bin", np.float16).reshape(batch, seq, dm).astype(np.float64)
    g_natural = arrays["g"].astype(np.float64) / (LOG2E if _bias_prescaled() else 1.0)
    ref = _attention_reference(arrays["qkv"], g_natural, arrays["bq"], arrays["bv"], heads, scale)
    assert not np.isnan(out).any(), "rows left unwritten"
    err = relative_error(out, ref)
    print(f"{cid} seq={seq}: relative error {err:.2e}")
    # fp16 output and fp16 P give ~3e-4; a layout or reduction error gives O(0.1..1).
    assert err < 2e-3, f"{cid} seq={seq}: relative error {err:.2e}"
