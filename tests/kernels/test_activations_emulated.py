"""kernels/activations.h on the host: ``activate`` (IEEE expf and division, used by the attention
kernels) and ``activate_fast`` / ``activate_fast_n`` (the fast special functions, used by the
residual kernels, as lc0's CUDA backend does) against float64 for every activation code.

On the host the prelude's ``lc0_exp2`` and ``lc0_rcp`` are exp2f and 1/x, so this checks the
formulas -- mish's two branches and its limits, the signs, the codes -- not the GPU's approximate
instructions (2^-22 relative by the PTX and AMD ISA manuals; the GPU tests and ``lc0py verify``
cover them on a device).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.kernels.emu_build import build_emulators

XS = [-100.0, -30.0, -20.0, -5.0, -1.0, -0.6000001, -0.6, -0.5999999, -0.3, -1e-3, -1e-7, 0.0, 1e-7, 1e-3,
      0.25, 1.0, 3.0, 12.0, 19.9, 20.1, 40.0, 88.0, 100.0]


def _mish(x: np.ndarray) -> np.ndarray:
    return x * np.tanh(np.logaddexp(0.0, x))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


REFERENCE = {  # lc0's ActivationFunction codes (kernels/activations.h)
    1: _mish,
    2: lambda x: np.maximum(x, 0.0),
    3: lambda x: x,
    4: np.tanh,
    5: _sigmoid,
    6: lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(np.minimum(x, 0.0))),
    7: lambda x: x * _sigmoid(x),
    8: lambda x: np.maximum(x, 0.0) ** 2,
}


@pytest.fixture(scope="module")
def exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    jobs = [("activation_emu", "activation_emu_main.cpp", ["-DEMU_WMMA"])]
    return build_emulators(tmp_path_factory, "act", jobs, opt="-O1")["activation_emu"]


@pytest.mark.parametrize("code", sorted(REFERENCE))
def test_activations_match_float64(exe: Path, code: int) -> None:
    out = subprocess.run([str(exe), str(code), *map(repr, XS)], capture_output=True, text=True, check=True)
    rows = np.array([[float(t) for t in line.split()] for line in out.stdout.splitlines()])
    assert rows.shape == (len(XS), 4)
    x = rows[:, 0]
    want = REFERENCE[code](x.astype(np.float64))
    for col, name in ((1, "activate"), (2, "activate_fast_n"), (3, "activate_fast")):
        got = rows[:, col]
        assert not np.isnan(got).any(), name
        err = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
        # float32 arithmetic; outputs that underflow (mish at -100) by absolute error. SELU takes
        # e^x - 1 as lc0 does (no expm1), which cancels just below 0: ~4e-8 absolute there.
        atol = 1e-7 if code == 6 else 1e-30
        ok = (err < 2e-6) | (np.abs(got - want) < atol) | (np.abs(want) < 1e-37)
        assert ok.all(), f"{name} code {code}: x={x[~ok]} got={got[~ok]} want={want[~ok]}"
