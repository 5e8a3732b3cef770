"""Residual (SE-ResNet) nets behind the backend interface: numpy fp32/fp64 and onnx-cpu against the
float64 reference on every generated format variant, and the GPU backends' one-line refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.backends.options import BackendOptions
from lc0py.backends.registry import create_backend
from lc0py.errors import UnsupportedNetError
from lc0py.weights import random_network, save_network
from lc0py.weights.residual import ResidualNetwork
from tests.backends.conformance import RTOL_FP16, RTOL_FP32, check_backend_against_reference

VARIANTS = {
    "conv": {},
    "classical": dict(policy="classical", policy_channels=8, wdl=False, default_activation="relu"),
    "attention": dict(policy="attention", policy_embedding=16, policy_dmodel=24, policy_encoders=1,
                      policy_encoder_heads=2, policy_encoder_ffn=32, moves_left=False, input_format=4),
    "no-se": dict(se=False, input_format=3),
}


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_numpy_backend(name: str, precision: str) -> None:
    net = random_network("res-tiny", seed=11, **VARIANTS[name])
    backend = create_backend("numpy", net, f"precision={precision}")
    assert backend.info.has_wdl == net.has_wdl and backend.info.has_moves_left == net.has_moves_left
    check_backend_against_reference(backend, net, RTOL_FP32 if precision == "fp32" else 1e-6)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_onnx_cpu_backend(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("LC0PY_ONNX_CACHE", "off")
    path = tmp_path / "net.pb.gz"
    save_network(random_network("res-tiny", seed=12, **VARIANTS[name]), path)
    backend = create_backend("onnx-cpu", path)
    from lc0py.weights import load_network

    net = load_network(path)
    assert isinstance(net, ResidualNetwork)
    check_backend_against_reference(backend, net, RTOL_FP32)


@pytest.mark.parametrize("name", ["conv", "attention"])
def test_onnx_cpu_fp16(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("LC0PY_ONNX_CACHE", "off")
    net = random_network("res-tiny", seed=14, **VARIANTS[name])
    check_backend_against_reference(create_backend("onnx-cpu", net, "fp16=on"), net, RTOL_FP16)


def test_gpu_backend_refuses_residual_policy_encoders_in_one_line() -> None:
    """Residual nets run on the GPU backends (tests/backends/gpu/test_gpu_residual.py); attention
    policy encoder layers on a residual body do not yet, and are refused before any device work."""
    from lc0py.backends.gpu.backend import create_cuda

    net = random_network("res-tiny", policy="attention", policy_embedding=32, policy_dmodel=32,
                         policy_encoders=1, policy_encoder_heads=4, policy_encoder_ffn=32)
    with pytest.raises(UnsupportedNetError) as info:
        create_cuda(net, BackendOptions.parse("", backend="cuda"))
    message = str(info.value)
    assert "\n" not in message and "residual" in message and "cuda" in message


def test_reference_trace_records_the_tower_and_heads() -> None:
    import numpy as np

    from lc0py.model import forward
    from tests.backends.conformance import random_batch

    net = random_network("res-tiny", seed=13)
    trace: dict[str, np.ndarray] = {}
    out = forward(net, random_batch(3, 1, seed=1).dense(np.float64), np.float64, trace=trace)
    assert trace["input"].shape == (3, 16, 8, 8)
    assert {f"block{i}.{k}" for i in (0, 1) for k in ("conv1", "conv2", "output")} <= set(trace)
    assert trace["policy.planes"].shape == (3, 80, 64) and trace["value.logits"].shape == (3, 3)
    assert np.array_equal(trace["block1.output"], np.maximum(trace["block1.output"], -0.31))  # mish >= -0.31
    assert out.policy.shape == (3, 1858)
