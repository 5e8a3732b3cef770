"""kernels/fp8.hip compiles where the FP8 path needs it, with the defines the backend uses
(fp8.Fp8Ops): NVRTC for sm_89 / sm_90 (the hardware e4m3 conversion, ``cvt.rn.satfinite.e4m3x2``)
and sm_80 (the software conversion: the file builds everywhere, though FP8 is refused there);
clang-19 for AMD gfx942, whose conversion is the fnuz ``v_cvt_pk_fp8_f32`` (compiled, never run:
the backend refuses FP8 on AMD), and gfx1100 / gfx90a (software conversion). No GPU needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.backends.gpu.fp8_quant import FP8_PARTIALS
from lc0py.backends.gpu.ops import THREADS
from lc0py.gpu.compile_cache import define_options, kernel_dir, read_headers

DEFINES = {"LC0_FP16": 1, "LC0_FP8_PARTIALS": FP8_PARTIALS, "LC0_FP8_THREADS": THREADS}
KERNELS = ("fp8_amax", "fp8_quantize", "fp8_epilogue", "fp8_quantize_rows", "fp8_bias_act_rows")


def _ln_fp8_defines(n: int, warp: int) -> dict[str, int]:
    """residual_layernorm_fp8 as fp8.Fp8Ops.prepare_layernorm asks for it (ln_config + LC0_LN_FP8)."""
    from lc0py.backends.gpu.ops import ln_config

    return {"LC0_FP16": 1, **ln_config(n, 8, 3, warp), "LC0_LN_FP8": 1}


@pytest.mark.parametrize(("arch", "hardware_cvt"), [("sm_89", True), ("sm_90", True), ("sm_80", False)])
def test_fp8_kernels_compile_with_nvrtc(arch: str, hardware_cvt: bool) -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    from lc0py.gpu.cuda_platform import nvrtc_compile

    kd = kernel_dir()
    source = (kd / "fp8.hip").read_text()
    options = define_options(DEFINES)
    binary = nvrtc_compile(source, "fp8.hip", options, read_headers(kd), f"-arch={arch}", "ptx")
    ptx = binary.decode(errors="replace")
    for name in KERNELS:
        assert f".entry {name}" in ptx, name
    assert ("cvt.rn.satfinite.e4m3x2.f32" in ptx) == hardware_cvt


def test_fp8_static_asserts_fp16_storage() -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    from lc0py.errors import KernelCompileError
    from lc0py.gpu.cuda_platform import nvrtc_compile

    kd = kernel_dir()
    with pytest.raises(KernelCompileError) as info:
        nvrtc_compile((kd / "fp8.hip").read_text(), "fp8.hip", define_options({**DEFINES, "LC0_FP16": 0}),
                      read_headers(kd), "-arch=sm_90", "ptx")
    assert "fp16" in info.value.log


@pytest.mark.parametrize(("arch", "fnuz"), [("gfx942", True), ("gfx90a", False), ("gfx1100", False)])
def test_fp8_kernels_compile_for_amd(tmp_path: Path, arch: str, fnuz: bool) -> None:
    from tests.kernels.amd_compile import KERNELS as KDIR
    from tests.kernels.amd_compile import compile_amd, find_clang

    clang = find_clang()
    if clang is None:
        pytest.skip("clang-19 not installed (apt-get install clang-19)")
    res = compile_amd(clang, KDIR / "fp8.hip", arch, define_options(DEFINES), tmp_path / "fp8.s")
    assert res.ok, res.log
    for name in KERNELS:
        assert f"{name}:" in res.asm, name
    assert ("v_cvt_pk_fp8_f32" in res.asm) == fnuz


@pytest.mark.parametrize(("arch", "hardware_cvt"), [("sm_90", True), ("sm_80", False)])
@pytest.mark.parametrize("n", [768, 1024, 2048])  # one warp a row; two warps a row
def test_layernorm_fp8_compiles_with_nvrtc(arch: str, hardware_cvt: bool, n: int) -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    from lc0py.gpu.cuda_platform import nvrtc_compile

    kd = kernel_dir()
    options = define_options(_ln_fp8_defines(n, 32))
    ptx = nvrtc_compile((kd / "layernorm.hip").read_text(), "layernorm.hip", options, read_headers(kd),
                        f"-arch={arch}", "ptx").decode(errors="replace")
    assert ".entry residual_layernorm_fp8" in ptx and ".entry residual_layernorm(" in ptx
    assert ("cvt.rn.satfinite.e4m3x2.f32" in ptx) == hardware_cvt


def test_layernorm_without_fp8_has_no_fp8_entry() -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    from lc0py.backends.gpu.ops import ln_config
    from lc0py.gpu.cuda_platform import nvrtc_compile

    kd = kernel_dir()
    options = define_options({"LC0_FP16": 1, **ln_config(768, 8, 3, 32)})
    ptx = nvrtc_compile((kd / "layernorm.hip").read_text(), "layernorm.hip", options, read_headers(kd),
                        "-arch=sm_90", "ptx").decode(errors="replace")
    assert "residual_layernorm_fp8" not in ptx and "e4m3" not in ptx


@pytest.mark.parametrize(("arch", "fnuz", "warp"), [("gfx942", True, 64), ("gfx1100", False, 32)])
def test_layernorm_fp8_compiles_for_amd(tmp_path: Path, arch: str, fnuz: bool, warp: int) -> None:
    from tests.kernels.amd_compile import KERNELS as KDIR
    from tests.kernels.amd_compile import compile_amd, find_clang

    clang = find_clang()
    if clang is None:
        pytest.skip("clang-19 not installed (apt-get install clang-19)")
    defines = define_options(_ln_fp8_defines(768, warp))
    res = compile_amd(clang, KDIR / "layernorm.hip", arch, defines, tmp_path / "ln.s")
    assert res.ok, res.log
    assert "residual_layernorm_fp8:" in res.asm
    assert ("v_cvt_pk_fp8_f32" in res.asm) == fnuz
