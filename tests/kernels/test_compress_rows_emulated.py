"""kernels/compress_rows.hip run on the CPU wave emulator against float64 numpy.

``compress_rows_layernorm`` is smolgen's compress (each token's ``E`` inputs to ``HC`` values, no
bias) and its first dense layer (the flattened ``SEQ·HC`` values to ``N``) with bias, activation
and LayerNorm, for a few positions in one kernel (``ops.GpuOps.compress_rows_layernorm``): a block
a token computes that token's share of every dense output, and the last block of each position
adds the shares and normalises. Checked here: 1 to 9 positions (compiled for ``COMPRESS_ROWS_MAX``),
the geometry ``ops.compress_rows_config`` gives, fp16 and fp32, wave32 and wave64,
widths that are not 16-byte multiples (the scalar paths), more compressed values than warps and
more outputs than threads, no bias, and that every position's counter is back to 0 after each
launch (a second launch on the same buffers, as a CUDA graph's replay, gives the same output).

What this cannot show: timing, NVIDIA code generation (test_compile_nvrtc.py), whether the device
orders the other blocks' writes before the last block reads them (the GPU tests do).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.gpu.ops import COMPRESS_ROWS_MAX, compress_rows_config
from lc0py.model.activations import activation
from tests.kernels.emu_build import build_emulators
from tests.kernels.row_kernel_checks import layernorm_rows, run_and_check, write_inputs

ACT_NONE, ACT_SWISH, ACT_MISH = 3, 7, 1  # kernels/activations.h

#: (id, SEQ, E, HC, N, fp16, compile-time activation, wave size)
BUILDS = [
    ("t82-like-fp16-swish", 16, 96, 8, 64, True, ACT_SWISH, 32),  # T82's shape, scaled down
    ("wide-fp32", 8, 64, 12, 300, False, None, 32),  # more outputs than threads, HC > warps
    ("fp16-wave64", 8, 64, 8, 96, True, None, 64),
    ("odd-fp16", 8, 50, 6, 40, True, None, 32),  # E and HC not vector multiples: the scalar paths
]


def _config(seq: int, e: int, hc: int, n: int, fp16: bool, act: int | None, wave: int) -> list[str]:
    cfg = compress_rows_config(seq, e, hc, n, act)
    flags = ["-DEMU_WMMA" if wave == 32 else "-DEMU_MFMA", f"-DLC0_FP16={int(fp16)}"]
    return flags + [f"-D{key}={v}" for key, v in cfg.items()]


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    jobs = [(bid, "compress_rows_emu_main.cpp", _config(seq, e, hc, n, fp16, act, w))
            for bid, seq, e, hc, n, fp16, act, w in BUILDS]
    return build_emulators(tmp_path_factory, "compress_rows_emu", jobs, opt="-O1")


def test_the_config_takes_t82s_shape() -> None:
    """The geometry the builds rest on: T82's compress (768 -> 32 a token) and dense 1 (2048 -> 256)."""
    cfg = compress_rows_config(64, 768, 32, 256)
    assert (cfg["LC0_CR_SEQ"], cfg["LC0_CR_E"], cfg["LC0_CR_HC"], cfg["LC0_CR_N"]) == (64, 768, 32, 256)
    assert cfg["LC0_CR_ROWS"] == COMPRESS_ROWS_MAX and "LC0_CR_ACT" not in cfg
    assert compress_rows_config(64, 768, 32, 256, ACT_SWISH)["LC0_CR_ACT"] == ACT_SWISH


#: (build, rows, run-time activation, bias)
CASES = [
    ("t82-like-fp16-swish", 1, ACT_SWISH, True),
    ("t82-like-fp16-swish", 9, ACT_SWISH, True),  # more rows than dense_rows takes
    ("wide-fp32", 3, ACT_MISH, True),
    ("fp16-wave64", 2, ACT_NONE, False),
    ("odd-fp16", 4, ACT_SWISH, True),
]


@pytest.mark.parametrize(("build", "rows", "act", "has_bias"), CASES, ids=[f"{c[0]}-r{c[1]}" for c in CASES])
def test_compress_rows_layernorm_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, build: str, rows: int, act: int, has_bias: bool
) -> None:
    _, seq, e, hc, n, fp16, _, _ = next(b for b in BUILDS if b[0] == build)
    dtype = np.float16 if fp16 else np.float32
    rng = np.random.default_rng()  # fresh inputs every run
    arrays = {
        "x": rng.standard_normal((rows, seq, e)) + 0.2,
        "wc": rng.standard_normal((hc, e)) / np.sqrt(e),
        "w1": rng.standard_normal((n, seq * hc)) / np.sqrt(seq * hc),
        "gamma": 1.0 + 0.2 * rng.standard_normal(n),
        "beta": 0.1 * rng.standard_normal(n),
    }
    if has_bias:
        arrays["bias"] = 0.5 * rng.standard_normal(n)
    f = write_inputs(tmp_path, arrays, dtype)
    eps = 1e-3
    compressed = (f["x"] @ f["wc"].T).reshape(rows, seq * hc)  # token-major, as lc0 flattens it
    val = activation(act, compressed @ f["w1"].T + (f["bias"] if has_bias else 0.0))
    want = layernorm_rows(val, f["gamma"], f["beta"], eps)
    args = [str(emulators[build]), str(rows), str(act), repr(eps), str(int(has_bias)), "2", str(tmp_path)]
    run_and_check(args, tmp_path, dtype, want, f"{build}, {rows} rows", fp16)
    assert not np.fromfile(tmp_path / "counter.bin", np.uint32).any()  # ready for the next launch


#: (build, rows, run-time activation): ``compress_rows_prenorm``
PRENORM_CASES = [
    ("t82-like-fp16-swish", 1, ACT_SWISH),
    ("t82-like-fp16-swish", 3, ACT_SWISH),
    ("wide-fp32", 2, ACT_MISH),
    ("fp16-wave64", 2, ACT_NONE),
    ("odd-fp16", 3, ACT_SWISH),  # E not a vector multiple: the LayerNorm over scalar chunks
]


@pytest.mark.parametrize(
    ("build", "rows", "act"), PRENORM_CASES, ids=[f"{c[0]}-r{c[1]}" for c in PRENORM_CASES]
)
def test_compress_rows_prenorm_normalises_each_token_first(
    emulators: dict[str, Path], tmp_path: Path, build: str, rows: int, act: int
) -> None:
    """``compress_rows_prenorm`` (the ``smolgen_early`` fusion): the input is the previous layer's
    FFN output ``y`` before its LayerNorm; the kernel forms ``LN(y + b + skip)·g + be`` per token
    itself, then compresses as ``compress_rows_layernorm`` does. The rows are given a mean far
    from zero and a spread unlike the LayerNorm's output, so a kernel that skipped or misapplied
    the LayerNorm fails."""
    _, seq, e, hc, n, fp16, _, _ = next(b for b in BUILDS if b[0] == build)
    dtype = np.float16 if fp16 else np.float32
    rng = np.random.default_rng()  # fresh inputs every run
    arrays = {
        "x": 3.0 * rng.standard_normal((rows, seq, e)) + 1.5,
        "skip": rng.standard_normal((rows, seq, e)) - 0.7,
        "pre_bias": 0.3 * rng.standard_normal(e),
        "pre_gamma": 1.0 + 0.3 * rng.standard_normal(e),
        "pre_beta": 0.2 * rng.standard_normal(e),
        "wc": rng.standard_normal((hc, e)) / np.sqrt(e),
        "w1": rng.standard_normal((n, seq * hc)) / np.sqrt(seq * hc),
        "gamma": 1.0 + 0.2 * rng.standard_normal(n),
        "beta": 0.1 * rng.standard_normal(n),
        "bias": 0.5 * rng.standard_normal(n),
    }
    f = write_inputs(tmp_path, arrays, dtype)
    eps, pre_eps = 1e-3, 1e-6
    z = (f["x"] + f["pre_bias"] + f["skip"]).reshape(rows * seq, e)
    x = layernorm_rows(z, f["pre_gamma"], f["pre_beta"], pre_eps).reshape(rows, seq, e)
    x = x.astype(dtype).astype(np.float64)  # the LayerNorm kernel stores x as T; so does this one
    compressed = (x @ f["wc"].T).reshape(rows, seq * hc)
    want = layernorm_rows(activation(act, compressed @ f["w1"].T + f["bias"]), f["gamma"], f["beta"], eps)
    args = [str(emulators[build]), str(rows), str(act), repr(eps), "1", "2", str(tmp_path), repr(pre_eps)]
    run_and_check(args, tmp_path, dtype, want, f"prenorm {build}, {rows} rows", fp16)
    assert not np.fromfile(tmp_path / "counter.bin", np.uint32).any()
