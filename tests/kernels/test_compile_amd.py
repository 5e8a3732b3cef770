"""CI compile check for AMD: the kernels compile for RDNA3 (gfx1100), RDNA3.5 (gfx1151), RDNA4
(gfx1201) and CDNA (gfx90a, gfx942) with clang-19 in hiprtc's environment (see amd_compile.py),
with the parameter sets the backend itself chooses, and the tile code really lands on the matrix
cores.

Nothing here runs on an AMD GPU (we have none): this proves the AMD source compiles and which
instructions it becomes; test_mma_amd_emulated.py checks what those instructions compute.
Skipped (with the reason) when clang-19 is missing: ``apt-get install clang-19``; with
``libhiprtc-builtins5`` also installed, kernels are checked against ROCm's real hiprtc header.

The parameter sets are the ones the backend itself asks hiprtc for: GpuNetwork is built on a
recording AMD platform (amd_backend_compiles.py) for T82 with head depths 32/64/96/128, fp16 and
fp32. CI time: every such module is compiled for one chip per wave size (gfx1100, gfx90a); the
other chips (gfx1151, gfx1201, gfx942) compile the matrix-core code (tile check, fp16 flash
attention), the only code whose instructions differ between them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from amd_backend_compiles import backend_compiles, job_id
from amd_compile import KERNELS, CompileResult, compile_amd, find_clang, hiprtc_header

HERE = Path(__file__).resolve().parent
TILE_CHECK = HERE / "mma_tile_check.hip"

FULL_ARCHS = ("gfx1100", "gfx90a")  # every backend module
MMA_ARCHS = ("gfx1151", "gfx1201", "gfx942")  # matrix-core code only
ARCHS = FULL_ARCHS + MMA_ARCHS
WAVE64 = ("gfx90a", "gfx942")
MATRIX_INSTR = {
    "gfx1100": "v_wmma_f32_16x16x16_f16",
    "gfx1151": "v_wmma_f32_16x16x16_f16",
    "gfx1201": "v_wmma_f32_16x16x16_f16",  # RDNA4: same mnemonic, new operand layout
    "gfx90a": "v_mfma_f32_16x16x16f16",  # gfx90a's spelling ...
    "gfx942": "v_mfma_f32_16x16x16_f16",  # ... renamed on gfx940+
}
# The DPP controls mma_amd.h encodes as numbers, as LLVM names them. The emulator models these
# names, so finding them in the assembly pins number -> meaning.
DPP_MODIFIERS = ("quad_perm:[1,0,3,2]", "quad_perm:[2,3,0,1]", "row_half_mirror", "row_mirror")

SHARED_OPTIN = 64 * 1024  # LDS per workgroup on gfx11 and CDNA


def _define(defines: list[str], name: str) -> int | None:
    return next((int(d.split("=")[1]) for d in defines if d.startswith(f"-D{name}=")), None)


def _persistent_options(arch: str) -> list[str]:
    from lc0py.backends.gpu.kernels import AttentionKernel, choose_attention
    from lc0py.gpu.compile_cache import define_options
    from lc0py.gpu.platform import mma_scratch_elems

    scratch = mma_scratch_elems("amd", arch)
    ch = choose_attention(depth=32, seq=64, fp16=True, vendor="amd", arch=arch, shared_optin=SHARED_OPTIN,
                          overrides={"persistent": 1}, scratch_per_warp=scratch)
    assert ch.kernel is AttentionKernel.FLASH_MMA_PERSISTENT and ch.params is not None, ch.reason
    return list(define_options(ch.params.defines(32, fp16=True, bias_f32=False, scratch_per_warp=scratch)))


def _jobs() -> list[Any]:
    jobs: list[Any] = [(f"tile_check-{a}", TILE_CHECK, a, []) for a in ARCHS]
    jobs.append(("tile_check-nodpp-gfx1100", TILE_CHECK, "gfx1100", ["-DLC0_AMD_NO_DPP"]))
    covered: set[str] = set()
    for arch in FULL_ARCHS:
        wave = 64 if arch in WAVE64 else 32
        recorded = backend_compiles(arch, wave)
        # The family's other chips: the same modules, but only the matrix-core code differs.
        others = [a for a in MMA_ARCHS if (a in WAVE64) == (arch in WAVE64)]
        ids: set[str] = set()
        for source, options in recorded:
            covered.add(source)
            vid = job_id(source, options)
            while vid in ids:  # two parameter sets with one readable id
                vid += "'"
            ids.add(vid)
            targets = [arch] + (
                others if source == "flash_attention.hip" and "-DLC0_FP16=1" in options else []
            )
            jobs += [(f"{vid}-{a}", KERNELS / source, a, list(options)) for a in targets]
    # The persistent flash kernel (flash=v2): opt-in on AMD, so the backend's default build above
    # does not ask for it; compiled as choose_attention gives it when forced.
    jobs += [(f"flash_attention-v2-d32-fp16-{a}", KERNELS / "flash_attention.hip", a, _persistent_options(a))
             for a in ARCHS]
    # A kernel file the backend does not build (yet) must still compile with its defaults.
    for src in sorted(KERNELS.glob("*.hip")):
        if src.name not in covered:
            jobs += [(f"{src.stem}-default-{a}", src, a, []) for a in FULL_ARCHS]
    return jobs


JOBS = _jobs()
JOB = {j[0]: j for j in JOBS}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CompileResult]:
    """All compiles of this module, in parallel (clang is single-threaded)."""
    clang = find_clang()
    if clang is None:
        pytest.skip("clang-19 not installed (apt-get install clang-19)")
    out = tmp_path_factory.mktemp("amd_asm")
    with ThreadPoolExecutor() as pool:
        futures = {
            jid: pool.submit(compile_amd, clang, src, arch, defs, out / f"{jid}.s")
            for jid, src, arch, defs in JOBS
        }
        return {jid: f.result() for jid, f in futures.items()}


def test_environment_reported() -> None:
    env = hiprtc_header()
    print("AMD compile environment:", env[0] if env else "hiprtc_min.h stand-in (libhiprtc-builtins5 absent)")


@pytest.mark.parametrize("arch", ARCHS)
def test_tile_api_uses_matrix_cores(compiled: dict[str, CompileResult], arch: str) -> None:
    res = compiled[f"tile_check-{arch}"]
    assert res.ok, f"{arch}:\n{res.log}"
    counts = res.matrix_instructions()
    print(arch, counts)
    # Two mma in the k-loop (not unrolled: K is a run-time value) and one after a_from_c: exactly
    # three matrix instructions, all of the arch's own family.
    assert counts == {MATRIX_INSTR[arch]: 3}, counts
    for mod in DPP_MODIFIERS:
        assert mod in res.asm, f"{arch}: row_max/row_sum should use DPP {mod}"


def test_no_dpp_variant_uses_bpermute(compiled: dict[str, CompileResult]) -> None:
    res = compiled["tile_check-nodpp-gfx1100"]
    assert res.ok, res.log
    assert "ds_bpermute_b32" in res.asm and "row_half_mirror" not in res.asm


@pytest.mark.parametrize(
    "arch,supported",
    [
        ("gfx1100", 1),
        ("gfx1151", 1),
        ("gfx90a", 1),
        ("gfx942", 1),
        ("gfx1030", 0),
        ("gfx1201", 1),
        ("gfx906", 0),
    ],
)
def test_mma_support_matches_host_table(tmp_path: Path, arch: str, supported: int) -> None:
    """mma_amd.h's arch test and hip_platform.mma_kind (what the host can route on) agree."""
    clang = find_clang()
    if clang is None:
        pytest.skip("clang-19 not installed (apt-get install clang-19)")
    from lc0py.gpu.hip_platform import mma_kind

    src = tmp_path / "probe.hip"
    src.write_text(f'#include "mma.h"\nstatic_assert(LC0_AMD_MMA_SUPPORTED == {supported}, "{arch}");\n')
    res = compile_amd(clang, src, arch, [], tmp_path / "probe.s")
    assert res.ok, res.log
    assert (mma_kind(arch) is not None) == bool(supported)


ROUTING_ARCHS = ["gfx1100", "gfx1151", "gfx1201", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx906"]


@pytest.mark.parametrize("arch", ROUTING_ARCHS)
def test_attention_choice_routes_like_mma_amd(arch: str) -> None:
    """kernels.choose_attention must pick the mma flash kernel exactly where mma_amd.h has a branch,
    else the backend compiles a kernel that cannot build (and falls back only after an error)."""
    from lc0py.backends.gpu.kernels import AttentionKernel, choose_attention
    from lc0py.gpu.hip_platform import mma_kind

    ch = choose_attention(depth=64, seq=64, fp16=True, vendor="amd", arch=arch, shared_optin=SHARED_OPTIN)
    assert (ch.kernel is AttentionKernel.FLASH_MMA) == (mma_kind(arch) is not None), ch.reason


def test_warp_sized_launches_fit_the_wave() -> None:
    """Row kernels reduce over whole warps: on the 64-lane CDNA wave the backend must size
    LayerNorm threads as multiples of 64 and give each softmax lane ceil(seq/64) values."""
    for jid, src, arch, defs in JOBS:
        wave = 64 if arch in WAVE64 else 32
        threads = _define(defs, "LC0_LN_THREADS")
        if threads is not None:
            assert threads % wave == 0, f"{jid}: LC0_LN_THREADS={threads} on a {wave}-lane wave"
        per = _define(defs, "LC0_SM_PER")
        if per is not None and src.name == "softmax_bias.hip":
            assert per == (64 + wave - 1) // wave, f"{jid}: LC0_SM_PER={per} on a {wave}-lane wave"


def _kernel_params() -> list[str]:
    return [jid for jid, *_ in JOBS if not jid.startswith("tile_check")]


@pytest.mark.parametrize("jid", _kernel_params())
def test_kernel_compiles_for_amd(compiled: dict[str, CompileResult], jid: str) -> None:
    _, src, arch, _ = JOB[jid]
    res = compiled[jid]
    assert res.ok, f"{jid}: {' '.join(res.command)}\n{res.log}"
    print(jid, res.matrix_instructions(), res.resources())  # VGPRs / spills: a tuning signal
    if '#include "mma.h"' in src.read_text() and "fp16" in jid:
        counts = res.matrix_instructions()
        assert set(counts) == {MATRIX_INSTR[arch]}, f"{jid}: expected {MATRIX_INSTR[arch]}, got {counts}"
