"""kernels/residual.hip run on the CPU wave emulator: the fused Winograd output step, and the
unfused kernels (im2col3x3, winograd_input, winograd_output, se_residual) that other widths use.

The CI machines have no GPU, and the project's GPU time is rationed: this is the execution check
that runs on every commit for the three fused-step kernels -- ``winograd_output_fused`` (one
thread per channel, M and skip read from global memory), ``winograd_output_fused_split`` (a
position's four tiles on four threads, the SE pooled and the 6x6 patches' halo exchanged through
shared memory) and ``winograd_output_fused_split_staged`` (the split step in persistent blocks that
copy the next position's M rows into a second shared-memory stage, and the current one's skip
rows into a third buffer, while computing).
``amd_emu/residual_emu_main.cpp`` compiles the real kernel source with
``prelude_hiprtc.h`` against the emulator (``amd_emu/wave_emu.h``: lockstep waves, 2-D blocks,
``__syncthreads``, the SE's cross-lane reductions) and the outputs are compared with a float64
numpy model of the step's documented semantics (the kernel file's header):
``y = act(SE(Aᵀ M A + b) + skip)`` in NHWC rows and ``V = Bᵀ d B`` of its 6x6 patches.

The staged kernel runs with fewer blocks than positions, so every block loops over its
double-buffered stages, some one position more than others. What this cannot show: ``cp.async``
itself (on AMD the copies are plain loads and stores), timing, or NVIDIA code generation
(``test_compile_nvrtc.py`` compiles the same file with NVRTC).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.accuracy import relative_error
from tests.kernels.emu_build import build_emulators

ACT_MISH, ACT_RELU = 1, 2  # kernels/activations.h

# Winograd F(4x4, 3x3) on the 8x8 board (as in kernels/residual.hip)
A_T = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float)
B_T = np.array(
    [
        [4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1],
    ],
    float,
)

# (id, -D flags): wave32 fp16 and fp32, wave64 fp16 (the SE's warp reductions at 64 lanes)
# wave32-fp32 and wave64-fp16 are the LC0_SE_OUTSIDE=1 build (the steps that write sums / apply
# gates, as the backend compiles it for se_gates), wave32-fp16 the plain one: the plain steps run on
# both, the gated path on the two that have it.
CONFIGS = [
    ("wave32-fp16", ["-DEMU_WMMA", "-DLC0_FP16=1"]),
    ("wave32-fp32", ["-DEMU_WMMA", "-DLC0_FP16=0", "-DLC0_SE_OUTSIDE=1"]),
    ("wave64-fp16", ["-DEMU_MFMA", "-DLC0_FP16=1", "-DLC0_SE_OUTSIDE=1"]),
    # the steps built for one width, as the backend builds them (LC0_STEP_C: constant row strides)
    ("wave32-c64-fp16", ["-DEMU_WMMA", "-DLC0_FP16=1", "-DLC0_SE_OUTSIDE=1", "-DLC0_STEP_C=64"]),
]
SE_OUTSIDE_CONFIGS = [cid for cid, flags in CONFIGS if "-DLC0_SE_OUTSIDE=1" in flags]
#: configurations built for one width run only the cases of that width
STEP_C = {"wave32-c64-fp16": 64}


def _pairs(cids: list[str], cases: list[tuple]) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    """(configuration, case) pairs to run; a case's channel count is its third field."""
    return [(cid, case[0]) for cid in cids for case in cases if STEP_C.get(cid, case[2]) == case[2]]

# (id, batch, channels, se hidden, activation, skip, out, v): a block's second convolution (SE,
# skip, residual stream out, next input transform) and its first (only the transform).
CASES = [
    ("conv2-se-skip", 10, 64, 8, ACT_MISH, True, True, True),
    ("conv1-v-only", 19, 64, 0, ACT_RELU, False, False, True),
    ("last-block-out-only", 5, 128, 16, ACT_RELU, True, True, False),
    # the first block's second convolution: SE, no skip; the split kernel's halo at 128 channels
    ("se-no-skip-128", 5, 128, 16, ACT_MISH, False, True, True),
    # a wide SE: more fc1 outputs than the split step has warps (48 > 8 at 64 channels), so warps
    # take several, and fc2 quarters of 12 (past its loop's unroll by 4)
    ("se-wide-64", 3, 64, 48, ACT_RELU, True, True, True),
]


def _act(x: np.ndarray, act: int) -> np.ndarray:
    if act == ACT_RELU:
        return np.maximum(x, 0.0)
    return x * np.tanh(np.log1p(np.exp(x)))  # mish


def _reference(
    m: np.ndarray, bias: np.ndarray, skip: np.ndarray | None, se: tuple[np.ndarray, ...] | None, act: int
) -> tuple[np.ndarray, np.ndarray]:
    """float64: (out [B*64, C], v [B*4, 36, C]) from m [36, B*4, C] (NHWC rows; V tile-major, M
    element-major, as the kernels take them; tile = 2*ty + tx)."""
    c = m.shape[2]
    batch = m.shape[1] // 4
    tiles = _output_tiles(m)
    board = tiles.transpose(0, 1, 3, 2, 4, 5).reshape(batch, 8, 8, c) + bias
    if se is not None:
        board = _se(board, se, act)
    if skip is not None:
        board = board + skip.reshape(batch, 8, 8, c)
    board = _act(board, act)
    return board.reshape(batch * 64, c), _input_transform(board)


def _output_tiles(m: np.ndarray) -> np.ndarray:
    """``Aᵀ M A`` of element-major ``m [36, B*4, C]``: ``[B, ty, tx, 4, 4, C]``."""
    c = m.shape[2]
    mt = m.reshape(6, 6, m.shape[1] // 4, 2, 2, c)  # [i, j, b, ty, tx, c]
    return np.einsum("ri,ijbyxc,fj->byxrfc", A_T, mt, A_T)


def _se(board: np.ndarray, se: tuple[np.ndarray, ...], act: int) -> np.ndarray:
    """lc0's SE on ``[B, 8, 8, C]``: fc2's first C outputs are the sigmoid scale, the rest a bias."""
    w1, b1, w2t, b2 = se
    c = board.shape[-1]
    hidden = _act(board.mean(axis=(1, 2)) @ w1.T + b1, act)  # the kernels' fc1 uses the body's act
    z = hidden @ w2t + b2
    return board / (1.0 + np.exp(-z[:, None, None, :c])) + z[:, None, None, c:]


def _input_transform(board: np.ndarray) -> np.ndarray:
    """``V [B*4, 36, C]`` (tile-major) = Bᵀ d B of the 6x6 zero-padded patches of ``[B, 8, 8, C]``."""
    batch, c = board.shape[0], board.shape[-1]
    padded = np.zeros((batch, 10, 10, c))
    padded[:, 1:9, 1:9] = board
    rows = [[padded[:, 4 * ty : 4 * ty + 6, 4 * tx : 4 * tx + 6] for tx in range(2)] for ty in range(2)]
    patches = np.stack([np.stack(r, 1) for r in rows], 1)  # [b, ty, tx, 6, 6, c]
    return np.einsum("ri,byxijc,fj->byxrfc", B_T, patches, B_T).reshape(batch * 4, 36, c)


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Build the three configurations in parallel (a few seconds each)."""
    jobs = [(cid, "residual_emu_main.cpp", flags) for cid, flags in CONFIGS]
    return build_emulators(tmp_path_factory, "residual_emu", jobs)


@pytest.mark.parametrize("kernel", ["staged", "direct", "split"])
@pytest.mark.parametrize(("cid", "case"), _pairs([c[0] for c in CONFIGS], CASES))
def test_fused_winograd_step_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, cid: str, case: str, kernel: str
) -> None:
    _, batch, c, se_hidden, act, has_skip, has_out, has_v = next(x for x in CASES if x[0] == case)
    fp16 = cid.endswith("fp16")
    dtype = np.float16 if fp16 else np.float32
    rng = np.random.default_rng()  # fresh inputs every run
    arrays = _inputs(rng, batch, c, se_hidden)
    stored = {k: v.astype(dtype) for k, v in arrays.items()}  # the kernel's inputs, as it reads them
    for name, a in stored.items():
        a.tofile(tmp_path / f"{name}.bin")
    exact = {k: v.astype(np.float64) for k, v in stored.items()}
    se = (exact["w1"], exact["b1"], exact["w2t"], exact["b2"]) if se_hidden else None
    want_out, want_v = _reference(exact["m"], exact["bias"], exact["skip"] if has_skip else None, se, act)

    per = 1 if kernel in ("split", "staged") else max(1, 256 // c)  # split: one position a block
    groups = -(-batch // per)
    grid = max(1, groups // 2)  # staged: fewer persistent blocks than positions, so every block loops
    assert kernel != "staged" or grid < batch
    args = [kernel, batch, c, se_hidden, act, int(has_skip), int(has_out), int(has_v), grid, 0, 0, tmp_path]
    run = subprocess.run([str(emulators[cid]), *map(str, args)], capture_output=True, text=True, timeout=300)
    print(run.stdout)
    assert run.returncode == 0, f"{cid} {case} {kernel}:\n{run.stdout}{run.stderr}"
    limit = 1e-2 if fp16 else 1e-4
    for name, want, on in (("out", want_out, has_out), ("v", want_v, has_v)):
        if not on:
            assert not (tmp_path / f"{name}.bin").exists()
            continue
        got = np.fromfile(tmp_path / f"{name}.bin", dtype=dtype).reshape(want.shape).astype(np.float64)
        assert not np.isnan(got).any(), f"{name}: {int(np.isnan(got).sum())} elements never written"
        err = relative_error(got, want)
        assert err <= limit, f"{cid} {case} {kernel}: {name} relative error {err:.2e} > {limit}"


def _inputs(rng: np.random.Generator, batch: int, c: int, se_hidden: int) -> dict[str, np.ndarray]:
    return {
        "x": rng.standard_normal((batch * 64, c)),
        "m": 0.5 * rng.standard_normal((36, batch * 4, c)),
        "bias": 0.1 * rng.standard_normal(c),
        "skip": rng.standard_normal((batch * 64, c)),
        "w1": rng.standard_normal((se_hidden, c)) / np.sqrt(c),
        "b1": 0.1 * rng.standard_normal(se_hidden),
        "w2t": rng.standard_normal((se_hidden, 2 * c)) / np.sqrt(max(se_hidden, 1)),
        "b2": 0.1 * rng.standard_normal(2 * c),
    }


@pytest.mark.parametrize("se_hidden", [8, 0], ids=["se", "noSE"])
@pytest.mark.parametrize("cid", [c[0] for c in CONFIGS])
def test_unfused_residual_kernels_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, cid: str, se_hidden: int
) -> None:
    """im2col3x3, winograd_input and winograd_output through their grid-stride loops (fewer blocks
    than work), se_residual one block per position, against the same float64 model."""
    batch, c, act = 3, 64, ACT_MISH
    dtype = np.float16 if cid.endswith("fp16") else np.float32
    stored = {k: v.astype(dtype) for k, v in _inputs(np.random.default_rng(), batch, c, se_hidden).items()}
    for name, a in stored.items():
        a.tofile(tmp_path / f"{name}.bin")
    e = {k: v.astype(np.float64) for k, v in stored.items()}
    x = e["x"].reshape(batch, 8, 8, c)
    padded = np.zeros((batch, 10, 10, c))
    padded[:, 1:9, 1:9] = x
    taps = [padded[:, dr : dr + 8, df : df + 8] for dr in range(3) for df in range(3)]  # t = dr*3 + df
    want = {
        "cols": np.concatenate(taps, axis=-1).reshape(batch * 64, 9 * c),
        "vin": _input_transform(x),
        "y": _reference(e["m"], e["bias"], None, None, act)[0],
    }
    t = x + e["bias"]
    if se_hidden:
        t = _se(t, (e["w1"], e["b1"], e["w2t"], e["b2"]), act)
    want["se"] = _act(t + e["skip"].reshape(batch, 8, 8, c), act).reshape(batch * 64, c)

    args = ["other", batch, c, se_hidden, act, tmp_path]
    run = subprocess.run([str(emulators[cid]), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{cid}:\n{run.stdout}{run.stderr}"
    limit = 1e-2 if dtype == np.float16 else 1e-4
    for name, ref in want.items():
        got = np.fromfile(tmp_path / f"{name}.bin", dtype=dtype).reshape(ref.shape).astype(np.float64)
        assert not np.isnan(got).any(), f"{name}: {int(np.isnan(got).sum())} elements never written"
        err = relative_error(got, ref)
        assert err <= limit, f"{cid} {name}: relative error {err:.2e} > {limit}"


# (id, batch, channels, activation): the SE computed outside the step (backend option se_gates)
# se_gates blocks take 8 positions and 128 of the 2c outputs: gates-64's 11 positions are a full
# block and a partial one; gates-32's 64 outputs leave half of a block's threads without one
GATE_CASES = [("gates-64", 11, 64, ACT_MISH), ("gates-128", 3, 128, ACT_RELU), ("gates-32", 5, 32, ACT_RELU)]


@pytest.mark.parametrize("kernel", ["staged", "direct", "split"])
@pytest.mark.parametrize(("cid", "case"), _pairs(SE_OUTSIDE_CONFIGS, GATE_CASES))
def test_se_gates_path_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, cid: str, case: str, kernel: str
) -> None:
    """A block's first convolution's step writing the per-tile sums of its output (stats, V only),
    se_gates making gates from fc1's pre-activation, and the second convolution's step applying
    given gates (skip, out, V), each against float64."""
    from lc0py.backends.gpu.se_fold import tile_stats

    _, batch, c, act = next(x for x in GATE_CASES if x[0] == case)
    fp16 = cid.endswith("fp16")
    dtype = np.float16 if fp16 else np.float32
    limit = 1e-2 if fp16 else 1e-4
    rng = np.random.default_rng()
    # 24: se_gates loads its weights in a full chunk of 16 and a partial one
    se_hidden = 24 if c == 64 else 16
    stored = {k: v.astype(dtype) for k, v in _inputs(rng, batch, c, se_hidden).items()}
    stored["gates"] = np.concatenate(
        [rng.uniform(0.2, 0.9, (batch, c)), 0.3 * rng.standard_normal((batch, c))], axis=1
    ).astype(dtype)
    stored["hpre"] = rng.standard_normal((batch, se_hidden)).astype(dtype)
    stored["b1f"] = (0.1 * rng.standard_normal(se_hidden)).astype(dtype)
    for name, a in stored.items():
        a.tofile(tmp_path / f"{name}.bin")
    e = {k: v.astype(np.float64) for k, v in stored.items()}
    per = 1 if kernel in ("split", "staged") else max(1, 256 // c)
    grid = max(1, -(-batch // per) // 2)

    def run(*args: object) -> None:
        cmd = [str(emulators[cid]), *map(str, args)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{cid} {case} {kernel}:\n{done.stdout}{done.stderr}"

    def check(name: str, want: np.ndarray) -> None:
        got = np.fromfile(tmp_path / f"{name}.bin", dtype=dtype).reshape(want.shape).astype(np.float64)
        assert not np.isnan(got).any(), f"{name}: {int(np.isnan(got).sum())} elements never written"
        err = relative_error(got, want)
        assert err <= limit, f"{cid} {case} {kernel}: {name} relative error {err:.2e} > {limit}"

    # conv1's step: V only, plus the sums of its output
    run(kernel, batch, c, 0, act, 0, 0, 1, grid, 1, 0, tmp_path)
    h, want_v = _reference(e["m"], e["bias"], None, None, act)
    check("v", want_v)
    check("stats", tile_stats(h.reshape(batch, 8, 8, c).transpose(0, 3, 1, 2)))
    # conv2's step with the gates given: skip, out (over skip), V
    run(kernel, batch, c, 0, act, 1, 1, 1, grid, 0, 1, tmp_path)
    tiles = _output_tiles(e["m"])
    board = tiles.transpose(0, 1, 3, 2, 4, 5).reshape(batch, 8, 8, c)
    gated = (board + e["bias"]) * e["gates"][:, None, None, :c] + e["gates"][:, None, None, c:]
    out = _act(gated + e["skip"].reshape(batch, 8, 8, c), act)
    check("out", out.reshape(batch * 64, c))
    check("v", _input_transform(out))
    # se_gates
    run("segates", batch, c, se_hidden, act, tmp_path)
    hidden = _act(e["hpre"] + e["b1f"], act)
    z = hidden @ e["w2t"] + e["b2"]
    check("gates", np.concatenate([1.0 / (1.0 + np.exp(-z[:, :c])), z[:, c:]], axis=1))


@pytest.mark.parametrize("kernel", ["staged", "direct", "split"])
def test_plain_build_drops_stats_and_gates(emulators: dict[str, Path], tmp_path: Path, kernel: str) -> None:
    """The build without LC0_SE_OUTSIDE (the plain steps the backend runs for batches that keep
    the SE in the step) ignores stats / gates pointers: nothing is summed, nothing is gated."""
    cid = next(cid for cid, _ in CONFIGS if cid not in SE_OUTSIDE_CONFIGS)
    batch, c, act = 3, 64, ACT_RELU
    dtype = np.float16 if cid.endswith("fp16") else np.float32
    rng = np.random.default_rng()
    stored = {k: v.astype(dtype) for k, v in _inputs(rng, batch, c, 0).items()}
    stored["gates"] = rng.uniform(0.2, 0.9, (batch, 2 * c)).astype(dtype)
    for name, a in stored.items():
        a.tofile(tmp_path / f"{name}.bin")
    e = {k: v.astype(np.float64) for k, v in stored.items()}
    grid = max(1, batch // 2)
    args = [kernel, batch, c, 0, act, 1, 1, 0, grid, 1, 1, tmp_path]
    done = subprocess.run([str(emulators[cid]), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{cid} {kernel}:\n{done.stdout}{done.stderr}"
    stats = np.fromfile(tmp_path / "stats.bin", dtype=dtype)
    assert np.isnan(stats).all(), "the plain build wrote per-tile sums"
    want, _ = _reference(e["m"], e["bias"], e["skip"], None, act)
    got = np.fromfile(tmp_path / "out.bin", dtype=dtype).reshape(want.shape).astype(np.float64)
    assert relative_error(got, want) <= 1e-2, "the plain build applied gates"
