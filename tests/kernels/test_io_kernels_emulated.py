"""The network's input and policy-output kernels on the CPU wave emulator against numpy.

``expand_planes`` (kernels/elementwise.hip: compact planes to tokens), ``policy_gather`` (the
attention policy's promotion dots and 4288 -> 1858 gather) and ``gather_bias`` (residual nets'
policy) run on grids of (positions, parts), as ``ops.GpuOps`` launches them
(``EXPAND_PARTS``, ``policy_gather_parts``). Checked: one to several parts a position, parts that
leave a thread more than one output or none, the parts the backend picks at small and large
batches, fp16 and fp32, wave32 and wave64, every output written exactly as the reference says.

What this cannot show: timing, NVIDIA code generation (test_compile_nvrtc.py); the GPU tests
compare the whole network with the float64 reference on a device.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.gpu.ops import EXPAND_PARTS, POLICY_PARTS, policy_gather_parts
from lc0py.model.tables import attention_policy_gather, conv_policy_gather
from tests.kernels.emu_build import build_emulators

POLICY, PLANES = 1858, 112

#: (id, fp16, wave size)
BUILDS = [("fp16-wave32", True, 32), ("fp32-wave32", False, 32), ("fp16-wave64", True, 64)]
FP16 = {bid: fp16 for bid, fp16, _ in BUILDS}
WAVE = {bid: wave for bid, _, wave in BUILDS}


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    jobs = []
    for bid, fp16, wave in BUILDS:
        flags = ["-DEMU_WMMA" if wave == 32 else "-DEMU_MFMA", f"-DLC0_FP16={int(fp16)}"]
        jobs.append((bid, "io_kernels_emu_main.cpp", flags))
    return build_emulators(tmp_path_factory, "io_kernels_emu", jobs, opt="-O1")


def _run(exe: Path, *args: object) -> None:
    run = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def _stored(a: np.ndarray, fp16: bool, path: Path) -> np.ndarray:
    """``a`` written as the kernel's T; returns the stored values in float64."""
    kept = a.astype(np.float16 if fp16 else np.float32)
    kept.tofile(path)
    return kept.astype(np.float64)


def test_the_parts_the_backend_picks() -> None:
    assert EXPAND_PARTS * 8 == 64  # 8 squares a block
    assert POLICY_PARTS * 256 >= POLICY  # one output a thread at small batches
    assert [policy_gather_parts(b) for b in (1, 32, 64, 128, 256, 512, 1024)] == [8, 8, 8, 4, 2, 1, 1]


@pytest.mark.parametrize("bid", [b[0] for b in BUILDS])
@pytest.mark.parametrize(("bsz", "parts"), [(1, EXPAND_PARTS), (3, 1), (2, 3), (2, 64)])
def test_expand_planes(emulators: dict[str, Path], tmp_path: Path, bid: str, bsz: int, parts: int) -> None:
    fp16 = FP16[bid]
    rng = np.random.default_rng(bsz * 7 + parts)
    masks = rng.integers(0, 2**63, (bsz, PLANES), dtype=np.int64).astype(np.uint64) * np.uint64(2)
    masks[:, ::5] |= np.uint64(1)  # square 0 set on some planes, and bit 63 on others
    masks[:, 1::7] |= np.uint64(1) << np.uint64(63)
    values = rng.uniform(0.5, 3.0, (bsz, PLANES)).astype(np.float32)
    masks.tofile(tmp_path / "masks.bin")
    values.tofile(tmp_path / "values.bin")
    _run(emulators[bid], "planes", bsz, parts, tmp_path)
    got = np.fromfile(tmp_path / "out.bin", np.float16 if fp16 else np.float32).reshape(bsz, 64, PLANES)
    bits = (masks[:, None, :] >> np.arange(64, dtype=np.uint64)[None, :, None]) & np.uint64(1)
    want = np.where(bits == 1, values[:, None, :], 0.0).astype(got.dtype)
    assert not np.isnan(got.astype(np.float32)).any()
    assert np.array_equal(got, want)


@pytest.mark.parametrize("bid", [b[0] for b in BUILDS])
@pytest.mark.parametrize(
    ("bsz", "parts", "pd"),
    [(1, POLICY_PARTS, 40), (2, 1, 40), (2, 3, 40), (1, 16, 40), (2, POLICY_PARTS, 42)],
)
def test_policy_gather(
    emulators: dict[str, Path], tmp_path: Path, bid: str, bsz: int, parts: int, pd: int
) -> None:
    """``pd`` 40: the dots' 16-byte loads; 42: the scalar loop (rows not in whole vectors)."""
    fp16 = FP16[bid]
    ld = 2 * pd + 8  # the [64, ld] rows of the backend's pol_qk (queries, then keys)
    rng = np.random.default_rng(bsz * 11 + parts)
    lg = _stored(rng.normal(size=(bsz, 4096)), fp16, tmp_path / "lg.bin")
    kp_rows = rng.normal(size=(bsz, 64, ld))
    kp = _stored(kp_rows, fp16, tmp_path / "kp.bin")
    wpromo = _stored(rng.normal(size=(4, pd)), fp16, tmp_path / "wpromo.bin")
    gather = attention_policy_gather().astype(np.int32)
    gather.tofile(tmp_path / "gather.bin")
    _run(emulators[bid], "policy", bsz, parts, pd, ld, tmp_path)
    got = np.fromfile(tmp_path / "out.bin", np.float32).reshape(bsz, POLICY).astype(np.float64)

    terms = kp[:, 56:64, None, :pd] * wpromo[None, None, :, :]  # [B, 8 files, 4 pieces, pd]
    off = terms.sum(axis=-1)
    scale = np.abs(terms).sum(axis=-1)
    v = np.concatenate([lg, np.zeros((bsz, 192))], axis=1)
    tol = np.zeros((bsz, 4288))
    p = np.arange(192)
    i, j, r = p // 24, (p % 24) // 3, p % 3
    v[:, 4096:] = lg[:, (48 + i) * 64 + 56 + j] + off[:, j, r] + off[:, j, 3]
    tol[:, 4096:] = scale[:, j, r] + scale[:, j, 3]
    want, bound = v[:, gather], 1e-5 * (tol[:, gather] + np.abs(v[:, gather]))
    assert not np.isnan(got).any()
    assert (np.abs(got - want) <= bound).all(), np.abs(got - want).max()
    assert (gather >= 4096).sum() > 0  # the promotion entries were checked


@pytest.mark.parametrize("bid", [b[0] for b in BUILDS])
@pytest.mark.parametrize(("bsz", "parts"), [(1, POLICY_PARTS), (3, 1), (2, 5)])
def test_gather_bias(emulators: dict[str, Path], tmp_path: Path, bid: str, bsz: int, parts: int) -> None:
    fp16 = FP16[bid]
    stride = 73 * 64 + 16  # rows with padding past the map
    rng = np.random.default_rng(bsz * 13 + parts)
    src = _stored(rng.normal(size=(bsz, stride)), fp16, tmp_path / "src.bin")
    bias = _stored(rng.normal(size=POLICY), fp16, tmp_path / "bias.bin")
    gather = conv_policy_gather().astype(np.int32)
    gather.tofile(tmp_path / "gather.bin")
    _run(emulators[bid], "conv", bsz, parts, stride, tmp_path)
    got = np.fromfile(tmp_path / "out.bin", np.float32).reshape(bsz, POLICY).astype(np.float64)
    want = src[:, gather] + bias[None, :]
    assert not np.isnan(got).any()
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6)


#: (rows, n, grid rows or None for the backend's): T82's FFN width, rows narrower than a warp of
#: chunks, a width that leaves most of the last warp idle, a width not in whole chunks (the 1-D
#: path), and a grid smaller than the rows (each thread walks several steps)
BIAS_ACT_CASES = [(5, 1024, None), (3, 24, None), (37, 264, None), (2, 100, None), (300, 64, 1)]


@pytest.mark.parametrize("bid", [b[0] for b in BUILDS])
@pytest.mark.parametrize(("rows", "n", "grid_rows"), BIAS_ACT_CASES)
@pytest.mark.parametrize("act", [1, 3, 7, 8])
def test_bias_act(
    emulators: dict[str, Path], tmp_path: Path, bid: str, rows: int, n: int, grid_rows: int | None, act: int
) -> None:
    """``bias_act`` on ``rows_grid``'s grid (or a shorter one): every element is
    ``act(y + bias)`` of float64 within the stored type's rounding, none missed, none twice."""
    from lc0py.backends.gpu.ops import rows_grid
    from tests.kernels.test_activations_emulated import REFERENCE

    fp16, wave = FP16[bid], WAVE[bid]
    (gx, gy, _), (tx, ty, _) = rows_grid(rows, n, 8 if fp16 else 4, wave)
    if grid_rows is not None:
        gy = grid_rows
    rng = np.random.default_rng(rows * 31 + n + act)
    y = _stored(rng.normal(0.0, 3.0, (rows, n)), fp16, tmp_path / "y.bin")
    bias = _stored(rng.normal(0.0, 1.0, n), fp16, tmp_path / "bias.bin")
    _run(emulators[bid], "bias_act", rows, 1, n, act, gx, gy, tx, ty, tmp_path)
    got = np.fromfile(tmp_path / "out.bin", np.float16 if fp16 else np.float32).reshape(rows, n)
    want = REFERENCE[act](y + bias[None, :])
    rel = 2e-3 if fp16 else 1e-5  # one rounding of the stored type, and fp32 arithmetic
    assert not np.isnan(got.astype(np.float32)).any()
    assert np.allclose(got.astype(np.float64), want, rtol=rel, atol=rel * 1e-2), np.abs(got - want).max()


@pytest.mark.parametrize("bid", [b[0] for b in BUILDS])
@pytest.mark.parametrize(("rows", "n", "grid_rows"), [(130, 64, None), (70, 100, None), (192, 32, 1)])
@pytest.mark.parametrize("gated", [False, True])
def test_embed_epilogue(
    emulators: dict[str, Path],
    tmp_path: Path,
    bid: str,
    rows: int,
    n: int,
    grid_rows: int | None,
    gated: bool,
) -> None:
    """``embed_epilogue`` on ``rows_grid``'s grid: ``act(y + sq_bias[square]) * mult[square] +
    add[square]`` with the square ``row % 64`` (rows of several positions), gated or not."""
    from lc0py.backends.gpu.ops import rows_grid
    from tests.kernels.test_activations_emulated import REFERENCE

    fp16, wave, act = FP16[bid], WAVE[bid], 1  # mish, the embedding's activation in lc0's nets
    (gx, gy, _), (tx, ty, _) = rows_grid(rows, n, 8 if fp16 else 4, wave)
    if grid_rows is not None:
        gy = grid_rows
    rng = np.random.default_rng(rows + n + gated)
    y = _stored(rng.normal(0.0, 3.0, (rows, n)), fp16, tmp_path / "y.bin")
    sqbias = _stored(rng.normal(0.0, 1.0, (64, n)), fp16, tmp_path / "sqbias.bin")
    square = np.arange(rows) % 64
    want = REFERENCE[act](y + sqbias[square])
    if gated:
        mult = _stored(rng.uniform(0.5, 1.5, (64, n)), fp16, tmp_path / "mult.bin")
        add = _stored(rng.normal(0.0, 1.0, (64, n)), fp16, tmp_path / "add.bin")
        want = want * mult[square] + add[square]
    _run(emulators[bid], "embed", rows, int(gated), n, act, gx, gy, tx, ty, tmp_path)
    got = np.fromfile(tmp_path / "out.bin", np.float16 if fp16 else np.float32).reshape(rows, n)
    rel = 2e-3 if fp16 else 1e-5
    assert not np.isnan(got.astype(np.float32)).any()
    assert np.allclose(got.astype(np.float64), want, rtol=rel, atol=rel * 1e-1), np.abs(got - want).max()
