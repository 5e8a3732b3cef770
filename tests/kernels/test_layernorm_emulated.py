"""kernels/layernorm.hip run on the CPU wave emulator against float64 numpy.

``residual_layernorm`` is every LayerNorm of an attention body: ``out = LN(act(y + bias) * alpha +
skip) * gamma + beta``. With the ``ln_residual`` fusion (``fusions.py``) its skip input carries the
residual stream after the out-projection and FFN2 GEMMs (``LN(y + alpha*b + x)``, out in place of
y), so that form is checked here besides the smolgen LayerNorms (bias + activation, no skip) and
the aliasing the backend relies on (out = y, out = skip: each row is read whole before it is
written). The launch geometry is ``ops.ln_config``'s, the backend's own: one warp a row (E = 768,
fp16), two warps a row (fp32: the reduction through shared memory), 256 threads a row (the
smolgen 6144-wide row, its activation a compile-time constant), wave64 (CDNA), and a row length
that is not a multiple of the 16-byte vector (the scalar path). Rows do not fill the last block,
so rows past the end must neither read nor write.

What this cannot show: timing, NVIDIA code generation (test_compile_nvrtc.py compiles the file
with NVRTC for the same parameter sets the backend asks for), the GPU's rsqrt approximation.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.accuracy import relative_error
from lc0py.backends.gpu.ops import ln_config
from lc0py.model.activations import activation
from tests.kernels.emu_build import build_emulators

ACT_MISH, ACT_NONE, ACT_SWISH, ACT_RELU_2 = 1, 3, 7, 8  # kernels/activations.h


def _config(n: int, fp16: bool, act: int | None, wave: int) -> list[str]:
    """The -D flags of one emulator build, the launch geometry from ``ln_config``."""
    vec = 8 if fp16 else 4
    cfg = ln_config(n, vec, act, wave)
    flags = ["-DEMU_WMMA" if wave == 32 else "-DEMU_MFMA", f"-DLC0_FP16={int(fp16)}"]
    return flags + [f"-D{k}={v}" for k, v in cfg.items()]


#: (id, row length, fp16, compile-time activation, wave size)
BUILDS = [
    ("e768-fp16", 768, True, None, 32),  # T82's E: one warp a row, 8 rows a block
    ("e768-fp32", 768, False, None, 32),  # two warps a row: the shared-memory reduction
    ("e768-fp16-wave64", 768, True, None, 64),
    ("sg6144-fp16-swish", 6144, True, ACT_SWISH, 32),  # smolgen's H*gs row: 256 threads a row
    ("n100-fp16", 100, True, None, 32),  # not a vector multiple: the scalar path
]


#: residual_layernorm_fp8 (LC0_LN_FP8): (id, row length, wave size), fp16, no compile-time activation
FP8_BUILDS = [
    ("e768-fp8", 768, 32),  # T82's E, one warp a row
    ("e2048-fp8", 2048, 32),  # two warps a row: the row maximum through shared memory
    ("e768-fp8-wave64", 768, 64),
]


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    jobs = [(bid, "layernorm_emu_main.cpp", _config(n, fp16, act, w)) for bid, n, fp16, act, w in BUILDS]
    jobs += [(bid, "layernorm_emu_main.cpp", [*_config(n, True, None, w), "-DLC0_LN_FP8=1"])
             for bid, n, w in FP8_BUILDS]
    return build_emulators(tmp_path_factory, "layernorm_emu", jobs, opt="-O1")


def _reference(e: dict[str, np.ndarray], act: int, alpha: float, eps: float) -> np.ndarray:
    val = e["y"] + e["bias"] if "bias" in e else e["y"]
    val = activation(act, val) * alpha
    if "skip" in e:
        val = val + e["skip"]
    mean = val.mean(axis=1, keepdims=True)
    var = ((val - mean) ** 2).mean(axis=1, keepdims=True)
    return (val - mean) / np.sqrt(var + eps) * e["gamma"] + e["beta"]


#: (id, build, rows, run-time activation, alpha, bias, skip, alias: 0 own out, 1 out = y, 2 out = skip)
CASES = [
    # ln_residual after a GEMM: y = alpha*O.Wo^T, bias alpha*bo, skip the residual stream, in place
    ("ln-residual-in-place", "e768-fp16", 11, ACT_NONE, 1.0, True, True, 1),
    ("ln-residual-in-place", "e768-fp32", 7, ACT_NONE, 1.0, True, True, 1),
    ("ln-residual-in-place", "e768-fp16-wave64", 6, ACT_NONE, 1.0, True, True, 1),
    ("ln-residual-in-place", "n100-fp16", 5, ACT_NONE, 1.0, True, True, 1),
    # DeepNorm's alpha on the branch, out over the skip, a run-time activation
    ("alpha-out-on-skip-act", "e768-fp16", 9, ACT_RELU_2, 1.7, True, True, 2),
    ("alpha-out-on-skip-act", "e768-fp32", 3, ACT_MISH, 0.6, True, True, 2),
    # the unfused form: the residual already in y (GEMM beta = 1), out its own array
    ("bias-only", "e768-fp16", 8, ACT_NONE, 1.0, True, False, 0),
    # smolgen's second LayerNorm: bias + swish (compile-time), no skip, in place
    ("smolgen", "sg6144-fp16-swish", 3, ACT_SWISH, 1.0, True, False, 1),
]


@pytest.mark.parametrize(
    ("case", "build", "rows", "act", "alpha", "has_bias", "has_skip", "alias"),
    CASES,
    ids=[f"{c[0]}-{c[1]}" for c in CASES],
)
def test_residual_layernorm_on_emulator(
    emulators: dict[str, Path],
    tmp_path: Path,
    case: str,
    build: str,
    rows: int,
    act: int,
    alpha: float,
    has_bias: bool,
    has_skip: bool,
    alias: int,
) -> None:
    _, n, fp16, _, _ = next(b for b in BUILDS if b[0] == build)
    dtype = np.float16 if fp16 else np.float32
    rng = np.random.default_rng()  # fresh inputs every run
    arrays = {
        "y": 2.0 * rng.standard_normal((rows, n)) + 0.3,
        "gamma": 1.0 + 0.2 * rng.standard_normal(n),
        "beta": 0.1 * rng.standard_normal(n),
    }
    if has_bias:
        arrays["bias"] = 0.5 * rng.standard_normal(n)
    if has_skip:
        arrays["skip"] = 3.0 * rng.standard_normal((rows, n)) - 0.5
    stored = {k: v.astype(dtype) for k, v in arrays.items()}
    for name, a in stored.items():
        a.tofile(tmp_path / f"{name}.bin")
    eps = 1e-3 if case == "smolgen" else 1e-6
    want = _reference({k: v.astype(np.float64) for k, v in stored.items()}, act, alpha, eps)
    args = [rows, act, repr(alpha), repr(eps), int(has_bias), int(has_skip), alias, tmp_path]
    exe = str(emulators[build])
    run = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{case} {build}:\n{run.stdout}{run.stderr}"
    got = np.fromfile(tmp_path / "out.bin", dtype=dtype).reshape(rows, n).astype(np.float64)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written (or NaN)"
    limit = 1e-2 if fp16 else 1e-4
    err = relative_error(got, want)
    assert err <= limit, f"{case} {build}: relative error {err:.2e} > {limit}"
    # every row on its own too (the rows of the partial last block)
    worst = max(relative_error(got[r], want[r]) for r in range(rows))
    assert worst <= limit, f"{case} {build}: worst row {worst:.2e} > {limit}"


@pytest.mark.parametrize("build", [b[0] for b in FP8_BUILDS])
def test_layernorm_writes_its_output_quantized_per_row(emulators: dict[str, Path], tmp_path: Path,
                                                       build: str) -> None:
    """residual_layernorm_fp8 (the FP8 path, fp8_scales=outer): the same fp16 output as
    residual_layernorm, and per row the e4m3 codes and scale of that output as stored -- the host
    encoder's (fp8_quant.quantize_activation), which the numpy emulation (fake_quantize_rows) and
    the separate fp8_quantize_rows pass compute: fusing changes no bit."""
    from lc0py.backends.gpu.fp8_quant import quantize_activation

    _, n, _ = next(b for b in FP8_BUILDS if b[0] == build)
    rows = 13  # the last block part-filled
    rng = np.random.default_rng()
    stored = {
        "y": (2.0 * rng.standard_normal((rows, n)) + 0.3).astype(np.float16),
        "gamma": (1.0 + 0.2 * rng.standard_normal(n)).astype(np.float16),
        "beta": (0.1 * rng.standard_normal(n)).astype(np.float16),
        "bias": (0.5 * rng.standard_normal(n)).astype(np.float16),
    }
    stored["gamma"][: n // 2] *= np.float16(8.0)  # a wider range than a plain LayerNorm's
    for name, a in stored.items():
        a.tofile(tmp_path / f"{name}.bin")
    eps = 1e-6
    args = [rows, ACT_NONE, "1.0", repr(eps), 1, 0, 0, tmp_path]
    exe = str(emulators[build])
    run = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = np.fromfile(tmp_path / "out.bin", np.float16).reshape(rows, n)
    want = _reference({k: v.astype(np.float64) for k, v in stored.items()}, ACT_NONE, 1.0, eps)
    assert relative_error(out.astype(np.float64), want) <= 1e-2
    q = np.fromfile(tmp_path / "q.bin", np.uint8).reshape(rows, n)
    rs = np.fromfile(tmp_path / "rs.bin", np.float32)
    for r in range(rows):
        want_q, want_s = quantize_activation(out[r].astype(np.float32))
        assert np.array_equal(q[r], want_q), r
        assert rs[r] == pytest.approx(want_s, rel=1e-7), r
    if build == "e768-fp8":  # the plain kernel of the same geometry writes the same output
        plain = tmp_path / "plain"
        plain.mkdir()
        for name, a in stored.items():
            a.tofile(plain / f"{name}.bin")
        args[-1] = plain
        run = subprocess.run([str(emulators["e768-fp16"]), *map(str, args)], capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        assert np.array_equal(np.fromfile(plain / "out.bin", np.float16).reshape(rows, n), out)
