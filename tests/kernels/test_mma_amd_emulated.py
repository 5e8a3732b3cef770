"""kernels/mma_amd.h on a CPU emulation of an AMD wave -- the only execution evidence for the AMD
tile mapping, since the project has no AMD GPU.

``amd_emu/wave_emu.h`` runs one wave as 32 (RDNA3 WMMA) or 64 (CDNA MFMA) lockstep threads and
models the cross-lane builtins (WMMA, MFMA, DPP, ds_bpermute, mbcnt) from the ISA documentation,
independently of mma_amd.h; ``amd_emu/mma_amd_emu_test.cpp`` compiles the real kernels/mma.h +
prelude_hiprtc.h for the host against it and checks every contract function bit-exactly on
integer data (and to fp32 rounding on normal data). A failing check prints which element is off.

What this cannot show: the hardware itself disagreeing with its documentation, compiler
code generation for AMD (test_compile_amd.py covers compilation), timing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EMU = Path(__file__).resolve().parent / "amd_emu"

# (id, defines): both matrix-core branches, with DPP and with ds_bpermute row reductions.
CONFIGS = [
    ("wmma-gfx11-dpp", ["-DEMU_WMMA"]),
    ("wmma-gfx11-bpermute", ["-DEMU_WMMA", "-DLC0_AMD_NO_DPP"]),
    ("mfma-cdna-dpp", ["-DEMU_MFMA"]),
    ("mfma-cdna-bpermute", ["-DEMU_MFMA", "-DLC0_AMD_NO_DPP"]),
]


def _host_clang() -> str | None:
    """clang++ is needed (ext_vector_type, _Float16 on x86-64); CI's clang-19 package has it."""
    for name in (os.environ.get("LC0_CLANGXX", ""), "clang++-19", "clang++"):
        if name and shutil.which(name):
            return name
    return None


@pytest.fixture(scope="module")
def emulator_binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build all configurations in parallel (-O0: a few seconds each)."""
    cxx = _host_clang()
    if cxx is None:
        pytest.skip("clang++ (clang-19) not installed: apt-get install clang-19")
    out = tmp_path_factory.mktemp("amd_emu")
    procs = {}
    for cid, defines in CONFIGS:
        exe = out / cid
        cmd = [
            cxx,
            "-std=c++20",
            "-O0",
            "-Wall",
            "-Wno-psabi",
            *defines,
            "-I",
            str(ROOT / "kernels"),
            "-I",
            str(EMU),
            str(EMU / "mma_amd_emu_test.cpp"),
            "-o",
            str(exe),
            "-pthread",
        ]
        procs[cid] = (exe, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    built = {}
    for cid, (exe, proc) in procs.items():
        log, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{cid}: host build of the emulator failed:\n{log}"
        built[cid] = exe
    return built


@pytest.mark.parametrize("cid", [c for c, _ in CONFIGS])
def test_mma_amd_matches_documented_layout(emulator_binaries: dict[str, Path], cid: str) -> None:
    run = subprocess.run([str(emulator_binaries[cid])], capture_output=True, text=True, timeout=60)
    print(run.stdout)
    assert run.returncode == 0 and "ALL OK" in run.stdout, f"{cid}:\n{run.stdout}{run.stderr}"
    expected_branch = "amd-wmma-gfx11" if cid.startswith("wmma") else "amd-mfma-16x16x16f16"
    assert f"branch {expected_branch}," in run.stdout
