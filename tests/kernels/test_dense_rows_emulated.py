"""kernels/dense_rows.hip run on the CPU wave emulator against float64 numpy.

``dense_rows_layernorm`` is smolgen's dense layer + bias + activation + LayerNorm for a few rows
in one kernel (``ops.GpuOps.dense_rows_layernorm``): every block computes some outputs of every
row, and the last block to finish normalises the rows. Checked here: the result for 1 to
``DENSE_ROWS_MAX`` rows (all compiled for that many; fewer rows must leave the rest alone), the
launch geometry ``ops.dense_rows_config`` gives (one output a warp, several a warp), fp16 and
fp32, wave32 and wave64, K not a multiple of the 16-byte vector (the scalar path), no bias, and
that the ticket counter is back to 0 after each launch (a second launch on the same buffers, as a
CUDA graph's replay, gives the same output).

What this cannot show: timing, NVIDIA code generation (test_compile_nvrtc.py), whether the device
orders the other blocks' writes before the last block reads them (the GPU tests do).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.gpu.ops import DENSE_ROWS_MAX, dense_rows_config
from lc0py.model.activations import activation
from tests.kernels.emu_build import build_emulators
from tests.kernels.row_kernel_checks import layernorm_rows, run_and_check, write_inputs

ACT_NONE, ACT_SWISH, ACT_MISH = 3, 7, 1  # kernels/activations.h

#: (id, N, K, fp16, compile-time activation, wave size)
BUILDS = [
    ("n96-k256-fp16-swish", 96, 256, True, ACT_SWISH, 32),  # smolgen's dense 1 shape, scaled down
    ("n2100-k40-fp16", 2100, 40, True, None, 32),  # several outputs a warp, a partial last block
    ("n96-k256-fp32", 96, 256, False, None, 32),
    ("n96-k256-fp16-wave64", 96, 256, True, None, 64),
    ("n64-k50-fp16", 64, 50, True, None, 32),  # K not a vector multiple: the scalar path
]


def _config(n: int, k: int, fp16: bool, act: int | None, wave: int) -> list[str]:
    cfg = dense_rows_config(n, k, act, wave)
    flags = ["-DEMU_WMMA" if wave == 32 else "-DEMU_MFMA", f"-DLC0_FP16={int(fp16)}"]
    return flags + [f"-D{key}={v}" for key, v in cfg.items()]


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    jobs = [(bid, "dense_rows_emu_main.cpp", _config(n, k, fp16, act, w))
            for bid, n, k, fp16, act, w in BUILDS]
    return build_emulators(tmp_path_factory, "dense_rows_emu", jobs, opt="-O1")


def test_several_outputs_a_warp_in_the_config() -> None:
    """The geometry the builds rest on: T82's two smolgen layers as the backend compiles them."""
    d1, d2 = dense_rows_config(256, 2048), dense_rows_config(6144, 256)
    assert d1["LC0_DR_OUT"] == 1 and d2["LC0_DR_OUT"] == 6
    assert d1["LC0_DR_ROWS"] == d2["LC0_DR_ROWS"] == DENSE_ROWS_MAX


#: (build, rows, run-time activation, bias)
CASES = [
    ("n96-k256-fp16-swish", 1, ACT_SWISH, True),
    ("n96-k256-fp16-swish", DENSE_ROWS_MAX, ACT_SWISH, True),
    ("n2100-k40-fp16", 3, ACT_MISH, True),
    ("n96-k256-fp32", 5, ACT_SWISH, True),
    ("n96-k256-fp16-wave64", 2, ACT_NONE, False),
    ("n64-k50-fp16", 4, ACT_SWISH, True),
]


@pytest.mark.parametrize(("build", "rows", "act", "has_bias"), CASES, ids=[f"{c[0]}-r{c[1]}" for c in CASES])
def test_dense_rows_layernorm_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, build: str, rows: int, act: int, has_bias: bool
) -> None:
    _, n, k, fp16, _, _ = next(b for b in BUILDS if b[0] == build)
    dtype = np.float16 if fp16 else np.float32
    rng = np.random.default_rng()  # fresh inputs every run
    arrays = {
        "x": rng.standard_normal((rows, k)) + 0.2,
        "w": rng.standard_normal((n, k)) / np.sqrt(k),
        "gamma": 1.0 + 0.2 * rng.standard_normal(n),
        "beta": 0.1 * rng.standard_normal(n),
    }
    if has_bias:
        arrays["bias"] = 0.5 * rng.standard_normal(n)
    e = write_inputs(tmp_path, arrays, dtype)
    eps = 1e-3
    val = activation(act, e["x"] @ e["w"].T + (e["bias"] if has_bias else 0.0))
    want = layernorm_rows(val, e["gamma"], e["beta"], eps)
    args = [str(emulators[build]), str(rows), str(act), repr(eps), str(int(has_bias)), "2", str(tmp_path)]
    run_and_check(args, tmp_path, dtype, want, f"{build}, {rows} rows", fp16)
    assert np.fromfile(tmp_path / "counter.bin", np.uint32)[0] == 0  # ready for the next launch
