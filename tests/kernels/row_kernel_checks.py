"""What the row kernels' emulator tests share (``dense_rows``, ``compress_rows``, ``smolgen_chain``):
the float64 LayerNorm reference, the inputs written as the kernel's type, and one emulator run
whose output is checked row by row against the reference."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from lc0py.backends.accuracy import relative_error


def layernorm_rows(v: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """lc0's LayerNorm of each row of ``v`` (float64, two-pass)."""
    mean = v.mean(axis=1, keepdims=True)
    var = ((v - mean) ** 2).mean(axis=1, keepdims=True)
    return (v - mean) / np.sqrt(var + eps) * gamma + beta


def write_inputs(folder: Path, arrays: dict[str, np.ndarray], dtype: type) -> dict[str, np.ndarray]:
    """Each array stored as ``dtype`` into ``<folder>/<name>.bin``; returns the stored values in
    float64 (what the reference computes from)."""
    out = {}
    for name, a in arrays.items():
        stored = a.astype(dtype)
        stored.tofile(folder / f"{name}.bin")
        out[name] = stored.astype(np.float64)
    return out


def run_and_check(
    args: list[str], folder: Path, dtype: type, want: np.ndarray, what: str, fp16: bool
) -> None:
    """Run the emulator ``args``; its ``out.bin`` (``want``'s shape, ``dtype``) must be fully written,
    with no NaN, and each row within the precision's bound of ``want`` (fp16 1e-2, fp32 1e-4)."""
    run = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{what}:\n{run.stdout}{run.stderr}"
    got = np.fromfile(folder / "out.bin", dtype=dtype).reshape(want.shape).astype(np.float64)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written (or NaN)"
    limit = 1e-2 if fp16 else 1e-4
    worst = max(relative_error(got[r], want[r]) for r in range(len(want)))
    assert worst <= limit, f"{what}: worst row {worst:.2e} > {limit}"
