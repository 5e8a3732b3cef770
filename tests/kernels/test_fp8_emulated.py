"""kernels/fp8.hip run on the CPU wave emulator: the e4m3 conversion, the per-tensor amax over a
grid of partial maxima, quantization and the FP8 GEMM epilogue, against numpy.

The emulator compiles the kernels with their software e4m3fn conversion (``e4m3_soft``), the
path of every device without FP8 conversion instructions; on sm_89+ the kernels use NVIDIA's
``cvt.rn.satfinite.e4m3x2.f32``, which rounds the same way (to nearest even, saturating: the PTX
ISA), and the host encoder (fp8_quant.e4m3_encode) is checked against ml_dtypes. So this pins
the codes bit for bit and the reduction/epilogue arithmetic; what it cannot show is the device's
own conversion instruction and timing (scripts/device/fp8_check runs those). Built with a small
grid (8 blocks of 64 threads) so the grid-stride loops run several rounds per thread.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.gpu.fp8_quant import E4M3_MAX, e4m3_encode, quantize_activation
from tests.kernels.emu_build import build_emulators

PARTIALS, THREADS = 8, 64
ACT_NONE, ACT_MISH, ACT_RELU_2 = 3, 1, 8
CONFIGS = [
    ("wave32", ["-DEMU_WMMA"]),
    ("wave64", ["-DEMU_MFMA"]),
]


@pytest.fixture(scope="module")
def exes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    defines = ["-DLC0_FP16=1", f"-DLC0_FP8_PARTIALS={PARTIALS}", f"-DLC0_FP8_THREADS={THREADS}"]
    jobs = [(cid, "fp8_emu_main.cpp", flags + defines) for cid, flags in CONFIGS]
    return build_emulators(tmp_path_factory, "fp8", jobs, opt="-O1")


def _run(exe: Path, *args: object) -> None:
    res = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


def test_software_conversion_matches_the_host_encoder(exes: dict[str, Path], tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    f = np.concatenate([
        halves[~np.isnan(halves)].astype(np.float32),
        (rng.standard_normal(50_000) * 10.0 ** rng.integers(-5, 4, 50_000)).astype(np.float32),
        np.array([np.nan, -np.nan, np.inf, -np.inf, 448.0, 464.0, -465.0, 2.0**-10, 3 * 2.0**-10],
                 np.float32),
    ]).astype(np.float32)
    f.tofile(tmp_path / "f.bin")
    _run(exes["wave32"], "codes", f.size, tmp_path)
    got = np.fromfile(tmp_path / "codes.bin", np.uint8)
    want = e4m3_encode(f)
    bad = got != want
    assert not bad.any(), f"{bad.sum()} differ: x={f[bad][:6]} kernel={got[bad][:6]} host={want[bad][:6]}"


@pytest.mark.parametrize("cid", [c for c, _ in CONFIGS])
@pytest.mark.parametrize("n", [8 * 64 * 8 * 3 + 64, 8])  # several grid-stride rounds; one chunk
def test_quantize_per_tensor(exes: dict[str, Path], tmp_path: Path, cid: str, n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 2.5).astype(np.float16)
    x[rng.integers(0, n)] = np.float16(-17.25)  # the maximum, negative, somewhere
    x.tofile(tmp_path / "x.bin")
    _run(exes[cid], "quant", n, tmp_path)
    q = np.fromfile(tmp_path / "q.bin", np.uint8)
    scale = float(np.fromfile(tmp_path / "scale.bin", np.float32)[0])
    partial = np.fromfile(tmp_path / "partial.bin", np.float32)
    assert float(partial.max()) == 17.25 and np.all(np.isfinite(partial))
    want_q, want_scale = quantize_activation(x.astype(np.float32))
    assert scale == pytest.approx(want_scale, rel=1e-7)
    assert np.array_equal(q, want_q)


def test_quantize_all_zero_tensor(exes: dict[str, Path], tmp_path: Path) -> None:
    np.zeros(512, np.float16).tofile(tmp_path / "x.bin")
    _run(exes["wave32"], "quant", 512, tmp_path)
    assert float(np.fromfile(tmp_path / "scale.bin", np.float32)[0]) == 1.0
    assert not np.any(np.fromfile(tmp_path / "q.bin", np.uint8))


def _mish(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(np.logaddexp(0.0, x))


@pytest.mark.parametrize("cid", [c for c, _ in CONFIGS])
@pytest.mark.parametrize(
    ("act", "alpha", "beta", "bias", "res"),
    [
        (ACT_NONE, 1.0, 0.0, False, False),  # QKV: the per-channel scale alone, in place
        (ACT_MISH, 1.0, 0.0, True, False),  # FFN1: bias + activation, partial maxima for FFN2's input
        (ACT_RELU_2, 1.0, 0.0, True, False),
        (ACT_NONE, 0.7, 1.0, False, True),  # output projection / FFN2: x += alpha * D * cs
    ],
)
def test_epilogue(exes: dict[str, Path], tmp_path: Path, cid: str, act: int, alpha: float, beta: float,
                  bias: bool, res: bool) -> None:
    rng = np.random.default_rng(act * 10 + int(res))
    rows, cols = 96, 48
    d = (rng.standard_normal((rows, cols)) * 0.5).astype(np.float16)
    cs = np.exp(rng.uniform(0, np.log(16.0), cols)).astype(np.float32)  # relu² stays inside fp16
    b = rng.standard_normal(cols).astype(np.float16)
    r = rng.standard_normal((rows, cols)).astype(np.float16)
    d.tofile(tmp_path / "d.bin")
    cs.tofile(tmp_path / "cs.bin")
    b.tofile(tmp_path / "bias.bin")
    r.tofile(tmp_path / "res.bin")
    _run(exes[cid], "epi", rows, cols, act, alpha, beta, int(bias), int(res), tmp_path)
    out = np.fromfile(tmp_path / "out.bin", np.float16).reshape(rows, cols).astype(np.float64)
    y = d.astype(np.float64) * cs + (b.astype(np.float64) if bias else 0.0)
    y = {ACT_NONE: y, ACT_MISH: _mish(y), ACT_RELU_2: np.maximum(y, 0) ** 2}[act]
    want = alpha * y + (beta * r.astype(np.float64) if res else 0.0)
    assert np.all(np.isfinite(out))
    # fp32 arithmetic, one fp16 rounding of the result
    assert np.allclose(out, want, rtol=2e-3, atol=1e-3), float(np.abs(out - want).max())
    # the fused partial maxima are those of the written output, and quantize uses them
    partial = np.fromfile(tmp_path / "partial.bin", np.float32)
    assert float(partial.max()) == pytest.approx(float(np.abs(out).max()), rel=1e-6)
    q = np.fromfile(tmp_path / "q.bin", np.uint8)
    scale = float(np.fromfile(tmp_path / "scale.bin", np.float32)[0])
    want_q, want_scale = quantize_activation(out.astype(np.float16).astype(np.float32).reshape(-1))
    assert scale == pytest.approx(want_scale, rel=1e-7) and np.array_equal(q, want_q)
    assert scale == pytest.approx(np.abs(out).max() / E4M3_MAX, rel=1e-3)


@pytest.mark.parametrize("cid", [c for c, _ in CONFIGS])
@pytest.mark.parametrize("n", [96, 768, 2056])
def test_quantize_rows(exes: dict[str, Path], tmp_path: Path, cid: str, n: int) -> None:
    """37 rows: not a multiple of the warps per block. n: 12 chunks (fewer than the lanes) and T82's
    96 chunks, both kept in registers; 2056 = 257 chunks, more than 4 a lane on either wave size,
    read twice."""
    rng = np.random.default_rng(21 + n)
    rows = 37
    x = (rng.standard_normal((rows, n)) * np.exp(rng.uniform(-4, 4, (rows, 1)))).astype(np.float16)
    x[5] = 0.0
    x.tofile(tmp_path / "x.bin")
    _run(exes[cid], "rows", rows, n, tmp_path)
    q = np.fromfile(tmp_path / "q.bin", np.uint8).reshape(rows, n)
    rs = np.fromfile(tmp_path / "rs.bin", np.float32)
    for r in range(rows):
        want_q, want_s = quantize_activation(x[r].astype(np.float32))
        assert np.array_equal(q[r], want_q), r
        assert rs[r] == pytest.approx(want_s, rel=1e-7), r
    assert rs[5] == 1.0 and not np.any(q[5])


@pytest.mark.parametrize("cid", [c for c, _ in CONFIGS])
@pytest.mark.parametrize(
    ("act", "n"), [(ACT_MISH, 160), (ACT_RELU_2, 160), (ACT_NONE, 160), (ACT_MISH, 2056)]
)
def test_bias_act_rows_is_the_epilogue_then_quantize_rows(exes: dict[str, Path], tmp_path: Path, cid: str,
                                                           act: int, n: int) -> None:
    """fp8_bias_act_rows (FFN1's fused epilogue, fp8_scales=outer): the same codes and row scales,
    bit for bit, as fp8_epilogue (factor 1, bias, activation) followed by fp8_quantize_rows -- so
    the numpy emulation of the separate passes stays the device's arithmetic -- and those codes
    are the host encoder's of the fp16 hidden layer."""
    rng = np.random.default_rng(31 + act)
    # rows not a multiple of the warps per block; 160: the row in registers (20 chunks over the
    # lanes), 2056: 257 chunks, more than 4 a lane on either wave size: read twice
    rows = 37
    d = (rng.standard_normal((rows, n)) * np.exp(rng.uniform(-3, 2, (rows, 1)))).astype(np.float16)
    b = (rng.standard_normal(n) * 0.3).astype(np.float16)
    d[4] = -b  # a row whose hidden values are all zero (mish(0) = relu²(0) = 0): scale 1
    d.tofile(tmp_path / "d.bin")
    b.tofile(tmp_path / "bias.bin")
    _run(exes[cid], "hidden", rows, n, act, tmp_path)
    qf = np.fromfile(tmp_path / "qf.bin", np.uint8).reshape(rows, n)
    rsf = np.fromfile(tmp_path / "rsf.bin", np.float32)
    q = np.fromfile(tmp_path / "q.bin", np.uint8).reshape(rows, n)
    rs = np.fromfile(tmp_path / "rs.bin", np.float32)
    h = np.fromfile(tmp_path / "h.bin", np.float16).reshape(rows, n)
    assert np.array_equal(qf, q) and np.array_equal(rsf, rs)
    assert rsf[4] == 1.0 and not np.any(qf[4])
    for r in range(rows):
        want_q, want_s = quantize_activation(h[r].astype(np.float32))
        assert np.array_equal(qf[r], want_q), r
        assert rsf[r] == pytest.approx(want_s, rel=1e-7), r
    want = d.astype(np.float64) + b.astype(np.float64)
    want = {ACT_NONE: want, ACT_MISH: _mish(want), ACT_RELU_2: np.maximum(want, 0) ** 2}[act]
    assert np.allclose(h.astype(np.float64), want, rtol=2e-3, atol=1e-3)
