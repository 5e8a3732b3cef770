"""Residual (SE-ResNet) nets on the GPU path, checked without a GPU.

``emulate_residual`` runs the GPU algorithm in numpy float64 on ``pack_residual_model``'s records:
NHWC rows, im2col columns in the kernel's tap-major order times the packed ``[Cout, 9Cin]``
weights, the fused SE/skip/activation step, the convolution-policy gather table with its per-output
bias, the square-major permuted dense layers of the classical policy and value heads -- so a wrong
transposition, permutation or table fails here, before any device run. The truth is
``lc0py.model.residual.forward_residual`` in float64.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import wdl_from_value
from lc0py.backends.gpu.weights import AttentionPolicyWeights, Buffers, FcHeadWeights, arrays_of
from lc0py.backends.gpu.weights_residual import (
    ClassicalPolicyWeights,
    ConvPolicyWeights,
    ConvWeights,
    pack_residual_model,
    plan_residual_buffers,
    residual_shape,
)
from lc0py.errors import UnsupportedNetError
from lc0py.model import cast_network, forward
from lc0py.model.activations import activation
from lc0py.weights.loader import load_network
from lc0py.weights.network import Activation
from lc0py.weights.presets import random_network
from tests.backends.conformance import random_batch
from tests.backends.gpu.policy_reference import attention_policy
from tests.shared_files import real_net


def im2col(x: np.ndarray) -> np.ndarray:
    """NHWC ``[B, 64, C]`` -> ``[B, 64, 9C]``: column ``t*C + c`` = the square at (rank + dr - 1,
    file + df - 1), ``t = dr*3 + df``, zero off the board (the im2col3x3 kernel's contract)."""
    b, _, c = x.shape
    xp = np.zeros((b, 10, 10, c))
    xp[:, 1:9, 1:9] = x.reshape(b, 8, 8, c)
    taps = [xp[:, dr : dr + 8, df : df + 8].reshape(b, 64, c) for dr in range(3) for df in range(3)]
    return np.concatenate(taps, axis=2)


BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
               [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float)
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float)


def winograd_conv(x: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The Winograd kernels' contract: NHWC ``[B, 64, Cin]`` -> ``[B, 64, Cout]`` through 2x2
    tiles of 4x4 outputs, ``V = Bᵀ d B`` on 6x6 patches (rows 4ty-1..4ty+4), 36 GEMMs with the
    packed ``U [36, Cout, Cin]``, ``Y = Aᵀ M A``."""
    b, _, c = x.shape
    xp = np.zeros((b, 10, 10, c))
    xp[:, 1:9, 1:9] = x.reshape(b, 8, 8, c)
    y = np.zeros((b, 8, 8, u.shape[1]))
    for ty in range(2):
        for tx in range(2):
            d = xp[:, 4 * ty : 4 * ty + 6, 4 * tx : 4 * tx + 6]  # [B, 6, 6, Cin]
            v = np.einsum("ir,brfc,jf->ijbc", BT, d, BT).reshape(36, b, c)
            m = np.einsum("kbc,koc->kbo", v, u).reshape(6, 6, b, -1)
            y[:, 4 * ty : 4 * ty + 4, 4 * tx : 4 * tx + 4] = np.einsum("ri,ijbo,fj->brfo", AT, m, AT)
    return y.reshape(b, 64, -1)


def _conv3(x: np.ndarray, w: ConvWeights, act: Activation | None) -> np.ndarray:
    y = winograd_conv(x, w.w) if w.w.ndim == 3 else im2col(x) @ w.w.T
    return y if act is None else activation(act, y + w.b)


def _fc_head(x: np.ndarray, w: FcHeadWeights, act: Activation) -> np.ndarray:
    b = x.shape[0]
    e = activation(act, x @ w.emb_w.T + w.emb_b)  # 1x1 convolution: a per-square dense
    h = activation(act, e.reshape(b, -1) @ w.fc1_w.T + w.fc1_b)  # square-major flattening
    return h @ w.fc2_w.T + w.fc2_b


def emulate_residual(
    net: Any, planes: np.ndarray, winograd: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(policy, wdl, moves_left)`` computed the GPU's way on the packed float64 records."""
    s = residual_shape(net, winograd)
    w = pack_residual_model(net, np.float64, winograd)
    act = net.default_act
    bsz = planes.shape[0]
    x = planes.reshape(bsz, 112, 64).transpose(0, 2, 1)  # expand_planes: [B, 64, 112]
    x = _conv3(x, w.input, act)
    for bw in w.blocks:
        h = _conv3(x, bw.conv1, act)
        y = _conv3(h, bw.conv2, None) + bw.conv2.b  # se_residual adds the bias first
        if bw.se is not None:
            pooled = y.mean(axis=1)
            hidden = activation(act, pooled @ bw.se.fc1_w.T + bw.se.fc1_b)
            z = hidden @ bw.se.fc2_w + bw.se.fc2_b  # fc2 packed [S, 2C]
            scale = 1 / (1 + np.exp(-z[:, : s.C]))
            y = scale[:, None] * y + z[:, None, s.C :]
        x = activation(act, y + x)
    pol = w.policy
    if isinstance(pol, ConvPolicyWeights):
        p = _conv3(_conv3(x, pol.conv1, act), ConvWeights(pol.conv2_w, None), None).reshape(bsz, -1)
        policy = p[:, pol.gather] + pol.out_bias
    elif isinstance(pol, ClassicalPolicyWeights):
        p = activation(act, x @ pol.conv.w.T + pol.conv.b).reshape(bsz, -1)
        policy = (p @ pol.fc_w.T)[:, pol.gather] + pol.fc_b
    else:
        assert isinstance(pol, AttentionPolicyWeights)
        pe = activation(Activation.SELU, x @ pol.emb_w.T + pol.emb_b)
        policy = attention_policy(pe, pol, s.Pd)
    wdl = wdl_from_value(_fc_head(x, w.value, act))
    mlh = np.maximum(_fc_head(x, w.moves_left, act)[:, 0], 0) if w.moves_left is not None else np.zeros(bsz)
    return policy, wdl, mlh


VARIANTS = {
    "conv-mish-wdl": {},
    "conv-relu-noSE": dict(default_activation="relu", se=False),
    "classical-tanh-noMLH": dict(policy="classical", policy_channels=32, wdl=False, moves_left=False),
    "attention": dict(policy="attention", policy_embedding=32, policy_dmodel=32),
}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


@pytest.mark.parametrize("winograd", [False, True], ids=["im2col", "winograd"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_packed_residual_weights_reproduce_reference(variant: str, winograd: bool) -> None:
    net = random_network("res-tiny", 4, **VARIANTS[variant])
    rng = np.random.default_rng(sorted(VARIANTS).index(variant))
    planes = (rng.random((3, 112, 8, 8)) < 0.2).astype(np.float64) * rng.uniform(0.5, 1.5, (3, 112, 1, 1))
    ref = forward(cast_network(net, np.float64), planes, np.float64)
    policy, wdl, mlh = emulate_residual(net, planes, winograd)
    assert np.linalg.norm(ref.policy) > 0 and np.isfinite(policy).all()
    assert _rel(policy, ref.policy) < 1e-10
    assert _rel(wdl, ref.wdl) < 1e-10
    if net.moves_left is not None:
        assert np.linalg.norm(ref.moves_left) > 0
        assert _rel(mlh, ref.moves_left) < 1e-10


def test_conv_weight_layout_matches_im2col_taps() -> None:
    net = random_network("res-tiny", 1)
    w = pack_residual_model(net, np.float32)
    conv = net.blocks[1].conv2.w  # [out, in, 3, 3]
    c = conv.shape[1]
    for dr in range(3):
        for df in range(3):
            t = dr * 3 + df
            np.testing.assert_array_equal(w.blocks[1].conv2.w[:, t * c : (t + 1) * c], conv[:, :, dr, df])
    arrays = arrays_of(w)
    assert all(a.flags["C_CONTIGUOUS"] for a in arrays)
    assert all(a.dtype == (np.int32 if a is w.policy.gather else np.float32) for a in arrays)


def test_winograd_filter_layout() -> None:
    from lc0py.backends.gpu.weights_residual import WINOGRAD_G

    net = random_network("res-tiny", 2)
    w = pack_residual_model(net, np.float64, winograd=True)
    g = net.blocks[0].conv1.w
    u = w.blocks[0].conv1.w
    assert u.shape == (36, g.shape[0], g.shape[1])
    np.testing.assert_allclose(u[:, 3, 5].reshape(6, 6), WINOGRAD_G @ g[3, 5] @ WINOGRAD_G.T, rtol=1e-12)
    sizes = plan_residual_buffers(residual_shape(net, winograd=True), 8, 2)
    assert "cols" not in sizes
    assert sizes["wino_v"] == 36 * 32 * 112 * 2 and sizes["wino_m"] == 36 * 32 * 80 * 2


def test_buffer_plan_and_shape() -> None:
    net = random_network("res-20x256", 0, blocks=1)
    s = residual_shape(net)
    assert (s.C, s.S, s.policy, s.P, s.v_out, s.mlh) == (256, 32, "convolution", 80, 3, True)
    sizes = plan_residual_buffers(s, 1024, 2)
    assert sizes["cols"] == 1024 * 64 * 9 * 256 * 2
    assert sizes["conv"] == 1024 * 64 * 256 * 2
    assert set(sizes) <= {f.name for f in fields(Buffers)}
    small = residual_shape(random_network("res-tiny", 0))
    assert plan_residual_buffers(small, 8, 4)["cols"] == 8 * 64 * 9 * 112 * 4  # the input conv's 112


def test_policy_encoders_are_refused_in_one_line() -> None:
    net = random_network("res-tiny", 0, policy="attention", policy_embedding=32, policy_dmodel=32,
                         policy_encoders=1, policy_encoder_heads=4, policy_encoder_ffn=32)
    with pytest.raises(UnsupportedNetError, match="policy encoder"):
        residual_shape(net)


@pytest.mark.parametrize("name", ["maia-1100", "meangirl-8"])
def test_packed_real_net_reproduces_reference(name: str, tmp_path: Path) -> None:
    """A real residual net (batch norm folded by the loader), copied into tmp; skipped without it."""
    net = load_network(real_net(tmp_path, name))
    batch = random_batch(4, int(net.format.input), seed=int(np.random.default_rng().integers(1 << 30)))
    planes = batch.dense(np.float64)
    ref = forward(cast_network(net, np.float64), planes, np.float64)
    policy, wdl, _ = emulate_residual(net, planes)
    assert _rel(policy, ref.policy) < 1e-10 and _rel(wdl, ref.wdl) < 1e-10
