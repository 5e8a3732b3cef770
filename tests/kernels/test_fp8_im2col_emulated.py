"""The residual FP8 path's im2col of e4m3 codes (fp8_residual.Fp8Conv3x3): kernels/residual.hip's
``im2col3x3``, built for fp16, given the quantized activation's bytes as ``c/2`` fp16 values per
row, must copy them bit for bit (its 16-byte vector path) and write zero bytes off the board -- the
columns of the codes, which the FP8 GEMM reads. Run on the CPU wave emulator
(``amd_emu/residual_emu_main.cpp``, unchanged) against a numpy im2col of the bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.kernels.emu_build import build_emulators


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    jobs = [("wave32-fp16", "residual_emu_main.cpp", ["-DEMU_WMMA", "-DLC0_FP16=1"])]
    return build_emulators(tmp_path_factory, "fp8_im2col_emu", jobs)["wave32-fp16"]


@pytest.mark.parametrize("cin", [16, 32, 112])
def test_im2col_of_e4m3_bytes_is_a_bit_copy(emulator: Path, tmp_path: Path, cin: int) -> None:
    batch, half = 3, cin // 2
    rng = np.random.default_rng(cin)
    codes = rng.integers(0, 256, size=(batch * 64, cin), dtype=np.uint8)
    codes.tofile(tmp_path / "x.bin")  # read by the emulator as [batch*64, cin/2] fp16
    rows = batch * 64 * half
    for name, n in (("m", 36 * batch * 4 * half), ("bias", half), ("skip", rows)):
        rng.standard_normal(n).astype(np.float16).tofile(tmp_path / f"{name}.bin")
    run = subprocess.run([str(emulator), "other", str(batch), str(half), "0", "2", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    got = np.fromfile(tmp_path / "cols.bin", dtype=np.uint8).reshape(batch * 64, 9 * cin)
    padded = np.zeros((batch, 10, 10, cin), np.uint8)
    padded[:, 1:9, 1:9] = codes.reshape(batch, 8, 8, cin)
    want = np.concatenate([padded[:, dr : dr + 8, df : df + 8] for dr in range(3) for df in range(3)],
                          axis=-1).reshape(batch * 64, 9 * cin)
    np.testing.assert_array_equal(got, want)
