"""kernels/gemm_rows.hip run on the CPU wave emulator against float64 numpy.

``gemm_rows`` is the GEMM of a small batch (``ops.GpuOps.dense`` / ``dense_bias_act`` at a few
positions): ``out = act(alpha · x · Wᵀ + bias)`` on mma.h's matrix-core tiles, W's rows staged in
shared memory before the dependent-launch wait and x's after it in four column groups. Checked:
T82-like widths scaled down, rows that do not fill the last 64-row block, columns that do not fill
the last tile (and nothing written past them), K not a multiple of 16 (the zero padding), x with a
row stride wider than K, bias or none, an activation (relu², FFN1's) or none, alpha ≠ 1, both
tiles (16 and 32 columns a block), wave32 (WMMA) and wave64 (MFMA).

What this cannot show: timing, NVIDIA code generation (test_compile_nvrtc.py); the GPU tests
compare it with cuBLAS on a device.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.accuracy import relative_error
from lc0py.model.activations import activation
from tests.kernels.emu_build import build_emulators

ACT_NONE, ACT_RELU2, ACT_MISH = 3, 8, 1  # kernels/activations.h

#: (id, tile columns, wave size)
BUILDS = [("nt16-wave32", 16, 32), ("nt32-wave32", 32, 32), ("nt16-wave64", 16, 64)]


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    jobs = [
        (bid, "gemm_rows_emu_main.cpp", ["-DEMU_WMMA" if wave == 32 else "-DEMU_MFMA", f"-DLC0_GR_NT={nt}"])
        for bid, nt, wave in BUILDS
    ]
    return build_emulators(tmp_path_factory, "gemm_rows_emu", jobs, opt="-O1")


#: (build, m, n, k, lda, ldo, alpha, act, bias)
CASES = [
    ("nt16-wave32", 64, 48, 96, 96, 48, 1.0, ACT_RELU2, True),  # one position, FFN1-like
    ("nt16-wave32", 100, 40, 72, 80, 48, 0.75, ACT_NONE, False),  # partial rows, cols, K % 16 = 8
    ("nt32-wave32", 128, 96, 64, 64, 96, 1.0, ACT_MISH, True),  # two row blocks, two-tile warps
    ("nt32-wave32", 64, 56, 128, 136, 64, 1.3, ACT_NONE, True),  # partial second tile of a block
    ("nt16-wave64", 64, 32, 80, 80, 32, 1.0, ACT_RELU2, True),
    ("nt16-wave64", 1, 24, 64, 64, 24, 1.0, ACT_NONE, True),  # one row (a head's dense)
]


@pytest.mark.parametrize(
    ("build", "m", "n", "k", "lda", "ldo", "alpha", "act", "has_bias"),
    CASES,
    ids=[f"{c[0]}-m{c[1]}-n{c[2]}-k{c[3]}" for c in CASES],
)
def test_gemm_rows_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, build: str, m: int, n: int, k: int, lda: int, ldo: int,
    alpha: float, act: int, has_bias: bool,
) -> None:
    rng = np.random.default_rng()  # fresh inputs every run
    x = (rng.standard_normal((m, lda)) + 0.1).astype(np.float16)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float16)
    bias = (0.5 * rng.standard_normal(n)).astype(np.float16)
    x.tofile(tmp_path / "x.bin")
    w.tofile(tmp_path / "w.bin")
    if has_bias:
        bias.tofile(tmp_path / "bias.bin")
    pre = alpha * (x[:, :k].astype(np.float64) @ w.astype(np.float64).T)
    want = activation(act, pre + (bias.astype(np.float64) if has_bias else 0.0))
    args = [str(emulators[build]), str(m), str(n), str(k), str(lda), str(ldo), repr(alpha), str(act),
            str(int(has_bias)), str(tmp_path)]
    run = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{build}:\n{run.stdout}{run.stderr}"
    got = np.fromfile(tmp_path / "out.bin", dtype=np.float16).reshape(m, ldo).astype(np.float64)
    assert np.isnan(got[:, n:]).all(), "wrote past the last column"
    got = got[:, :n]
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} outputs never written (or NaN)"
    worst = max(relative_error(got[r], want[r]) for r in range(m))
    assert worst <= 1e-2, f"{build} m={m} n={n} k={k}: worst row {worst:.2e}"
