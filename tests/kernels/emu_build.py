"""Host builds of the CPU wave emulator (``amd_emu/``) around a real kernel source.

The emulator programs include ``kernels/prelude_hiprtc.h`` and a kernel file and run them with
lockstep threads (``amd_emu/wave_emu.h``); they need clang++ (``ext_vector_type`` and
``_Float16`` on x86-64), which CI's clang-19 package brings.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EMU = Path(__file__).resolve().parent / "amd_emu"


def host_clangxx() -> str | None:
    """clang++ (``$LC0_CLANGXX``, clang++-19 or clang++), or None when none is installed."""
    for name in (os.environ.get("LC0_CLANGXX", ""), "clang++-19", "clang++"):
        if name and shutil.which(name):
            return name
    return None


def start_build(
    cxx: str, main: str, defines: Sequence[str], exe: Path, opt: str = "-O0"
) -> subprocess.Popen[str]:
    """Start compiling ``amd_emu/<main>`` with ``defines`` into ``exe`` (wait with ``finish_build``)."""
    cmd = [
        cxx, "-std=c++20", opt, "-Wall", "-Wno-psabi", *defines,
        "-I", str(ROOT / "lc0py" / "kernels"), "-I", str(EMU), "-x", "c++", str(EMU / main),
        "-o", str(exe), "-pthread",
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish_build(label: str, proc: subprocess.Popen[str]) -> None:
    """Wait for a ``start_build``; a failed build fails the test with the compiler's output."""
    log, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, f"{label}: host build of the emulator failed:\n{log}"


def build_emulators(
    tmp_path_factory: pytest.TempPathFactory,
    folder: str,
    jobs: Sequence[tuple[str, str, Sequence[str]]],
    opt: str = "-O0",
) -> dict[str, Path]:
    """Build each ``(id, amd_emu main file, defines)`` of ``jobs`` in parallel into a fresh
    ``folder``; the executables by id. Skips the test when no clang++ is installed."""
    cxx = host_clangxx()
    if cxx is None:
        pytest.skip("clang++ (clang-19) not installed: apt-get install clang-19")
    out = tmp_path_factory.mktemp(folder)
    procs = {cid: start_build(cxx, main, defines, out / cid, opt) for cid, main, defines in jobs}
    for cid, proc in procs.items():
        finish_build(cid, proc)
    return {cid: out / cid for cid in procs}
