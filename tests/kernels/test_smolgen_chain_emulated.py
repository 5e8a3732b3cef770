"""kernels/smolgen_chain.hip run on the CPU wave emulator against float64 numpy.

``smolgen_chain`` is smolgen's whole per-position network (compress, dense 1 + activation + LN,
dense 2 + activation + LN) for a few positions in one kernel whose steps are separated by grid
barriers (``ops.GpuOps.smolgen_chain``). Its blocks wait for each other, so the emulator runs them
at the same time, each with its own shared memory. Checked here: the result for 1 to
``SMOLGEN_CHAIN_MAX`` positions (compiled for that many; fewer must leave the rest alone), fp16
and fp32, wave32 and wave64, E not a multiple of the 16-byte vector (the scalar path), no bias,
grids of 1 to 5 blocks (more warps than outputs, and fewer), and that both counters are back to 0
after each launch (a second launch on the same buffers, as a CUDA graph's replay, gives the same
output).

What this cannot show: timing, NVIDIA code generation (test_compile_nvrtc.py), whether a device
keeps every block of the grid resident (the GPU tests run it on one).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.gpu.ops import smolgen_chain_blocks, smolgen_chain_config, smolgen_chain_shared_bytes
from lc0py.backends.gpu.weights import SMOLGEN_CHAIN_MAX
from lc0py.model.activations import activation
from tests.kernels.emu_build import build_emulators
from tests.kernels.row_kernel_checks import layernorm_rows, run_and_check, write_inputs

ACT_NONE, ACT_SWISH, ACT_MISH = 3, 7, 1  # kernels/activations.h

#: (id, seq, e, hc, hs, n2, fp16, wave size, warps a block)
BUILDS = [
    ("small-fp16", 8, 64, 4, 32, 96, True, 32, 2),
    ("small-fp32", 8, 64, 4, 32, 96, False, 32, 2),
    ("small-fp16-wave64", 8, 64, 4, 32, 96, True, 64, 2),
    ("odd-e-fp16", 4, 36, 2, 16, 40, True, 32, 2),  # E, K1 and HS not vector multiples: scalar chunks
    ("one-token-fp16", 8, 64, 4, 32, 96, True, 32, 2),  # LC0_SC_C0=2 divides HC: x read once a group
]
#: extra defines of a build (the kernel's defaults otherwise: C0 8 does not divide these HC)
EXTRA = {"one-token-fp16": ["-DLC0_SC_C0=2", "-DLC0_SC_G2=3"]}


def _flags(seq: int, e: int, hc: int, hs: int, n2: int, fp16: bool, wave: int, warps: int) -> list[str]:
    cfg = {**smolgen_chain_config(seq, e, hc, hs, n2), "LC0_SC_WARPS": warps}
    flags = ["-DEMU_WMMA" if wave == 32 else "-DEMU_MFMA", f"-DLC0_FP16={int(fp16)}"]
    return flags + [f"-D{key}={v}" for key, v in cfg.items()]


@pytest.fixture(scope="module")
def emulators(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    jobs = [(b[0], "smolgen_chain_emu_main.cpp", _flags(*b[1:]) + EXTRA.get(b[0], [])) for b in BUILDS]
    return build_emulators(tmp_path_factory, "smolgen_chain_emu", jobs, opt="-O1")


def test_launch_geometry_keeps_every_block_resident() -> None:
    """A quarter of the multiprocessors, at most 32, at least 1; T82's shared memory fits the
    48 KB every vendor gives a block without asking."""
    assert [smolgen_chain_blocks(n) for n in (1, 4, 20, 132, 304)] == [1, 1, 5, 32, 32]
    t82 = smolgen_chain_config(64, 768, 32, 256, 6144)
    assert t82["LC0_SC_ROWS"] == SMOLGEN_CHAIN_MAX
    assert smolgen_chain_shared_bytes(t82) <= 48 * 1024


#: (build, rows, blocks, activation, bias)
CASES = [
    ("small-fp16", 1, 3, ACT_SWISH, True),
    ("small-fp16", SMOLGEN_CHAIN_MAX, 4, ACT_MISH, True),
    ("small-fp16", 2, 1, ACT_SWISH, True),  # one block: the barriers are the block's own
    ("small-fp32", 3, 5, ACT_SWISH, True),
    ("small-fp16-wave64", 2, 3, ACT_NONE, False),
    ("odd-e-fp16", 3, 2, ACT_SWISH, True),
    ("one-token-fp16", 4, 3, ACT_SWISH, True),
]


@pytest.mark.parametrize(("build", "rows", "blocks", "act", "has_bias"), CASES,
                         ids=[f"{c[0]}-r{c[1]}-b{c[2]}" for c in CASES])
def test_smolgen_chain_on_emulator(
    emulators: dict[str, Path], tmp_path: Path, build: str, rows: int, blocks: int, act: int, has_bias: bool
) -> None:
    _, seq, e, hc, hs, n2, fp16, _, _ = next(b for b in BUILDS if b[0] == build)
    dtype = np.float16 if fp16 else np.float32
    rng = np.random.default_rng()  # fresh inputs every run
    k1 = seq * hc
    arrays = {
        "x": rng.standard_normal((rows * seq, e)) + 0.2,
        "wc": rng.standard_normal((hc, e)) / np.sqrt(e),
        "w1": rng.standard_normal((hs, k1)) / np.sqrt(k1),
        "g1": 1.0 + 0.2 * rng.standard_normal(hs),
        "be1": 0.1 * rng.standard_normal(hs),
        "w2": rng.standard_normal((n2, hs)) / np.sqrt(hs),
        "g2": 1.0 + 0.2 * rng.standard_normal(n2),
        "be2": 0.1 * rng.standard_normal(n2),
    }
    if has_bias:
        arrays["b1"] = 0.5 * rng.standard_normal(hs)
        arrays["b2"] = 0.5 * rng.standard_normal(n2)
    eps1, eps2 = 1e-3, 1e-5
    f = write_inputs(tmp_path, arrays, dtype)
    c = (f["x"] @ f["wc"].T).reshape(rows, k1)  # token t's hc channels at t*hc.. of its position
    d1 = activation(act, c @ f["w1"].T + (f["b1"] if has_bias else 0.0))
    s1 = layernorm_rows(d1, f["g1"], f["be1"], eps1)
    d2 = activation(act, s1 @ f["w2"].T + (f["b2"] if has_bias else 0.0))
    want = layernorm_rows(d2, f["g2"], f["be2"], eps2)
    args = [str(emulators[build]), str(rows), str(blocks), str(act), repr(eps1), repr(eps2),
            str(int(has_bias)), "2", str(tmp_path)]
    run_and_check(args, tmp_path, dtype, want, f"{build}, {rows} rows, {blocks} blocks", fp16)
    assert np.fromfile(tmp_path / "sync.bin", np.uint32).tolist() == [0, 0]  # ready for the next launch
