"""Residual (SE-ResNet) weights: batch-norm folding, shape checks, refusals, writer round trips and
presets. The numbers themselves are checked against lc0 in tests/model/test_residual_oracle.py."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lc0py.errors import UnsupportedNetError, UsageError, WeightsFormatError
from lc0py.weights import PRESETS, load_network, network_to_proto, preset_config, random_network, save_network
from lc0py.weights.decode import encode_layer
from lc0py.weights.network import Activation, InputFormat, NetworkKind, PolicyFormat, WeightsEncoding
from lc0py.weights.residual import (
    ClassicalPolicyHead,
    ConvPolicyHead,
    ResidualAttentionPolicyHead,
    ResidualNetwork,
)
from lc0py.weights.residual_reader import BN_EPSILON, fold_batch_norm


def _write(tmp_path: Path, msg: Any, name: str = "net.pb.gz") -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(msg.SerializeToString()))
    return path


def test_fold_batch_norm_formula() -> None:
    """``w·g``, ``beta - g·(mean - bias)`` with ``g = gamma / sqrt(var + 1e-5)`` (network_legacy.cc)."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(5, 3, 3, 3)).astype(np.float32)
    bias, mean, beta = (rng.normal(size=5).astype(np.float32) for _ in range(3))
    var = rng.uniform(1e-4, 2.0, 5).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, 5).astype(np.float32)
    fw, fb = fold_batch_norm(w, bias, mean, var, gamma, beta)
    g = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + 1e-5)
    assert fw.dtype == np.float32 and fb.dtype == np.float32
    np.testing.assert_allclose(fw, w * g[:, None, None, None], rtol=1e-6)
    np.testing.assert_allclose(fb, beta - g * (mean - bias), rtol=1e-5, atol=1e-6)
    assert BN_EPSILON == np.float32(1e-5)


def test_loader_folds_batch_norm_fields(tmp_path: Path) -> None:
    """A file with bn_means/bn_stddivs and no gammas/betas/biases: gammas 1, betas 0, biases 0."""
    net = random_network("res-tiny", seed=1)
    msg = network_to_proto(net, "float32")
    block = msg.weights.input
    n = net.filters
    means = np.linspace(-0.5, 0.5, n, dtype=np.float32)
    var = np.linspace(0.1, 2.0, n, dtype=np.float32)
    encode_layer(block.bn_means, means, WeightsEncoding.FLOAT32)
    encode_layer(block.bn_stddivs, var, WeightsEncoding.FLOAT32)
    block.ClearField("biases")
    loaded = load_network(_write(tmp_path, msg))
    g = 1.0 / np.sqrt(var.astype(np.float64) + 1e-5)
    expected_w = net.input.w * g[:, None, None, None].astype(np.float32)
    np.testing.assert_allclose(loaded.input.w, expected_w, rtol=1e-6)
    np.testing.assert_allclose(loaded.input.b, -g * means, rtol=1e-5, atol=1e-7)


def test_real_format_fields_and_heads() -> None:
    conv = random_network("res-tiny")
    assert isinstance(conv, ResidualNetwork) and isinstance(conv.policy, ConvPolicyHead)
    assert conv.format.network == NetworkKind.SE_WITH_HEADFORMAT and conv.default_act == Activation.MISH
    classical = random_network("res-tiny", policy="classical", policy_channels=8, se=False)
    assert isinstance(classical.policy, ClassicalPolicyHead)
    assert classical.format.network == NetworkKind.CLASSICAL_WITH_HEADFORMAT and classical.se_blocks == 0
    att = random_network("res-tiny", policy="attention", policy_encoders=1, policy_encoder_heads=4)
    assert isinstance(att.policy, ResidualAttentionPolicyHead) and att.format.policy == PolicyFormat.ATTENTION
    assert len(att.policy.encoders) == 1 and att.policy.encoder_heads == 4


@pytest.mark.parametrize("encoding", ["linear16", "float16", "float32"])
@pytest.mark.parametrize("overrides", [
    {},
    dict(policy="classical", policy_channels=8, wdl=False, moves_left=False),
    dict(policy="attention", policy_encoders=1, policy_encoder_heads=2, se=False),
], ids=["conv", "classical", "attention"])
def test_round_trip(tmp_path: Path, encoding: str, overrides: dict[str, Any]) -> None:
    net = random_network("res-tiny", seed=3, **overrides)
    path = tmp_path / "rt.pb.gz"
    save_network(net, path, encoding=encoding)
    loaded = load_network(path)
    assert isinstance(loaded, ResidualNetwork)
    assert type(loaded.policy) is type(net.policy) and loaded.format.policy == net.format.policy
    assert (loaded.num_blocks, loaded.filters, loaded.se_blocks, loaded.has_wdl, loaded.has_moves_left) == (
        net.num_blocks, net.filters, net.se_blocks, net.has_wdl, net.has_moves_left)
    tol = {"linear16": 1e-3, "float16": 2e-3, "float32": 0.0}[encoding]
    for a, b in ((net.input.w, loaded.input.w), (net.blocks[1].conv2.b, loaded.blocks[1].conv2.b),
                 (net.value.fc1.w, loaded.value.fc1.w)):
        assert np.abs(a - b).max() <= tol * max(1.0, float(np.abs(a).max()))
    assert loaded.parameter_count() == net.parameter_count()


def test_presets_are_deterministic_and_shaped() -> None:
    a, b = random_network("res-tiny", seed=5), random_network("res-tiny", seed=5)
    assert np.array_equal(a.blocks[0].conv1.w, b.blocks[0].conv1.w)
    assert not np.array_equal(a.blocks[0].conv1.w, random_network("res-tiny", seed=6).blocks[0].conv1.w)
    t78, r20 = preset_config("t78"), PRESETS["res-20x256"]
    shape = (t78.blocks, t78.filters, t78.policy, t78.default_activation, t78.se)
    assert shape == (40, 512, "attention", "mish", True)
    assert t78.input_format == InputFormat.WITH_CANONICALIZATION_HECTOPLIES
    assert (r20.blocks, r20.filters, r20.policy, r20.se) == (20, 256, "convolution", True)


@pytest.mark.parametrize("overrides, message", [
    (dict(heads=4), "unknown network setting"),
    (dict(policy="dense"), "policy 'dense': unknown"),
    (dict(policy_channels=40), "convolution policy needs >= 73"),
    (dict(filters=0), "filters must be positive"),
    (dict(policy="attention", policy_encoders=1, policy_encoder_heads=5), "must divide"),
])
def test_preset_errors(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        preset_config("res-tiny", **overrides)


def _params(layer: Any, n: int) -> None:
    """Replace a layer's data by ``n`` LINEAR16 values (dims dropped, so the length check speaks)."""
    layer.params = b"\0\0" * n
    del layer.dims[:]


def _mutated(tmp_path: Path, mutate: Any, **overrides: Any) -> Path:
    msg = network_to_proto(random_network("res-tiny", seed=2, **overrides))
    mutate(msg)
    return _write(tmp_path, msg)


@pytest.mark.parametrize("mutate, message", [
    (lambda m: m.weights.ClearField("residual"), "residual network has no residual blocks"),
    (lambda m: m.weights.input.ClearField("weights"), "input.weights has 0 values"),
    (lambda m: m.weights.residual[1].conv2.ClearField("biases"),
     r"residual\[1\].conv2: neither biases nor bn_means are present"),
    (lambda m: _params(m.weights.residual[0].conv1.weights, 10),
     r"residual\[0\].conv1.weights has 10 values, expected 2304 \(16x16x3x3\)"),
    (lambda m: _params(m.weights.residual[0].se.w2, 3), r"residual\[0\].se.w2 has 3 values"),
    (lambda m: m.weights.ClearField("policy1"), "policy1.weights is missing"),
    (lambda m: _params(m.weights.ip2_val_w, 5), "ip2_val_w has 5 values"),
])
def test_malformed_files_name_the_layer(tmp_path: Path, mutate: Any, message: str) -> None:
    with pytest.raises(WeightsFormatError, match=message):
        load_network(_mutated(tmp_path, mutate))


def test_conv_policy_needs_73_planes(tmp_path: Path) -> None:
    def shrink(m: Any) -> None:
        p = m.weights.policy
        encode_layer(p.weights, np.zeros((40, 16, 3, 3), np.float32))
        encode_layer(p.biases, np.zeros(40, np.float32))

    with pytest.raises(WeightsFormatError, match="at least 73"):
        load_network(_mutated(tmp_path, shrink))


def test_hybrid_and_value_param_still_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedNetError, match="VALUE_PARAM"):
        load_network(_mutated(tmp_path, lambda m: setattr(m.format.network_format, "value", 3)))
    with pytest.raises(UnsupportedNetError, match="smolgen"):
        load_network(_mutated(tmp_path, lambda m: m.weights.pol_encoder[0].mha.smolgen.compress.__setattr__(
            "params", b"\0\0"), policy="attention", policy_encoders=1))
