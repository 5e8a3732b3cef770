"""Compile the HIP kernels for AMD GPUs with Debian's clang-19, the way hiprtc compiles them.

There is no ROCm on CI machines. What hiprtc does at run time is: pre-define the HIP device
runtime (its ``__hipRTC_header``, HIP's headers preprocessed with ``__HIPCC_RTC__``), then run
clang's HIP device compile for ``--offload-arch``. We reproduce that with:

* clang-19 (package ``clang-19``): ``-x hip --cuda-device-only -nogpulib -nogpuinc -S``. ``-S``
  stops before the device link, which would need ROCm's device libraries (ocml/ockl bitcode) to
  resolve ``threadIdx`` and libm calls; the assembly is the final ISA of the kernel body.
* hiprtc's own pre-defined header, taken from Debian's ``libhiprtc-builtins5`` (ROCm 5.2's
  hiprtc: ``.hipRTC_header`` data in ``libhiprtc-builtins.so.5``), so kernels are checked against
  ROCm's real device API. Without that package, ``hiprtc_min.h`` stands in (threadIdx,
  __syncthreads) on top of clang's ``__clang_hip_runtime_wrapper.h``.
* ``amd_devlib_stubs.h``: inline stand-ins for the ROCm device-library functions hiprtc would
  link (threadIdx, fmaxf, expf, ...), so the assembly has no artificial calls (and the spills
  around them): register counts and spills read from it are close to a real hiprtc build.
* ``kernels/prelude_hiprtc.h`` pre-included, as ``HipPlatform.compile`` does.

Used by ``test_compile_amd.py``; also handy by hand:
``python -m tests.kernels.amd_compile kernels/flash_attention.hip gfx1100 -DLC0_HEAD_DEPTH=64``.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "lc0py" / "kernels"
HERE = Path(__file__).resolve().parent

# Where Debian (and ROCm itself) put the hiprtc builtins library.
HIPRTC_BUILTINS = (
    "/usr/lib/x86_64-linux-gnu/libhiprtc-builtins.so.5",
    "/opt/rocm/lib/libhiprtc-builtins.so",
)

# Matrix-core mnemonics as llvm prints them: gfx11 WMMA; gfx908/90a spell the MFMA "16x16x16f16",
# gfx940+ "16x16x16_f16".
MATRIX_INSTR = re.compile(r"\b(v_wmma_f32_16x16x16_f16|v_mfma_f32_16x16x16_?f16)\b")


def find_clang() -> str | None:
    for name in (os.environ.get("LC0_CLANG", ""), "clang-19", "clang"):
        if name and shutil.which(name):
            return name
    return None


def _elf_symbol_bytes(data: bytes, names: Sequence[str]) -> dict[str, tuple[int, int]]:
    """File offset and size of dynamic symbols ``names`` in an ELF64 little-endian shared object."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not an ELF64 little-endian file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    # (name, type, flags, addr, offset, size, link, info, align, entsize)
    found: dict[str, tuple[int, int]] = {}
    for sec in sections:
        if sec[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sec[6]]
        for off in range(sec[4], sec[4] + sec[5], 24):
            st_name, _info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, off)
            start = strtab[4] + st_name
            name = data[start : data.index(b"\0", start)].decode()
            if name in names and 0 < shndx < len(sections):
                home = sections[shndx]
                found[name] = (home[4] + value - home[3], size)
    return found


@lru_cache(maxsize=1)
def hiprtc_header() -> tuple[str, Path] | None:
    """(description, path of a file holding hiprtc's pre-defined header), or None if absent."""
    for lib in HIPRTC_BUILTINS:
        if not os.path.exists(lib):
            continue
        data = Path(lib).read_bytes()
        syms = _elf_symbol_bytes(data, ("__hipRTC_header", "__hipRTC_header_size"))
        if "__hipRTC_header" not in syms or "__hipRTC_header_size" not in syms:
            continue
        size = struct.unpack_from("<I", data, syms["__hipRTC_header_size"][0])[0]
        start = syms["__hipRTC_header"][0]
        text = data[start : start + size]
        out = Path(os.environ.get("TMPDIR", "/tmp")) / f"lc0py-hiprtc-header-{os.getuid()}-{size}.h"
        if not out.exists() or out.stat().st_size != len(text):
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(text)
            os.replace(tmp, out)
        return f"hiprtc header from {os.path.realpath(lib)}", out
    return None


@dataclass
class CompileResult:
    ok: bool
    log: str
    asm: str
    command: list[str]

    def resources(self) -> dict[str, int]:
        """Per-kernel maxima from the code-object metadata in the assembly: VGPRs, spilled VGPRs,
        scratch bytes (AMDGPU's ``.vgpr_count``, ``.vgpr_spill_count``, private segment size)."""
        out: dict[str, int] = {}
        for key, name in (
            (".vgpr_count", "vgpr"),
            (".vgpr_spill_count", "vgpr_spill"),
            (".agpr_count", "agpr"),
            (".private_segment_fixed_size", "scratch"),
        ):
            vals = [int(v) for v in re.findall(rf"^\s+{re.escape(key)}:\s+(\d+)", self.asm, re.M)]
            if vals:
                out[name] = max(vals)
        return out

    def matrix_instructions(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in MATRIX_INSTR.finditer(self.asm):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
        return counts


def compile_cmd(clang: str, source: Path, arch: str, defines: Sequence[str], out: Path) -> list[str]:
    env = hiprtc_header()
    if env is not None:
        pre = ["-include", str(env[1]), "-DLC0_CI_HIPRTC_HEADER"]
    else:
        pre = ["-include", "__clang_hip_runtime_wrapper.h", "-include", str(HERE / "hiprtc_min.h")]
    hiprtc_like = ["-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-nogpulib", "-nogpuinc",
                   "-D__HIPCC_RTC__", "-O3", "-std=c++17", "-Werror=return-type"]  # fmt: skip
    includes = [
        *pre,
        "-include",
        str(HERE / "amd_devlib_stubs.h"),
        "-include",
        str(KERNELS / "prelude_hiprtc.h"),
    ]
    return [clang, *hiprtc_like, *includes, "-I", str(KERNELS), *defines, "-S", str(source), "-o", str(out)]


def compile_amd(clang: str, source: Path, arch: str, defines: Sequence[str], out: Path) -> CompileResult:
    cmd = compile_cmd(clang, source, arch, defines, out)
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    asm = out.read_text() if run.returncode == 0 and out.exists() else ""
    return CompileResult(run.returncode == 0, run.stdout + run.stderr, asm, cmd)


if __name__ == "__main__":
    clang = find_clang()
    if clang is None:
        sys.exit("clang-19 not found (apt-get install clang-19)")
    src, arch, *defs = sys.argv[1:]
    res = compile_amd(clang, Path(src), arch, defs, Path(f"/tmp/{Path(src).stem}-{arch}.s"))
    print(res.log or "ok", res.matrix_instructions(), f"-> /tmp/{Path(src).stem}-{arch}.s")
    sys.exit(0 if res.ok else 1)
