"""Unit tests of the reference forward pass: precision, batching, structure switches, tables."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from nets import build_network, random_planes

from lc0py.backends.accuracy import relative_error
from lc0py.model import (
    attention_policy_gather,
    attention_reference,
    cast_network,
    forward,
    layer_norm,
    pos_encoding_table,
)
from lc0py.model.layers import dense
from lc0py.weights import random_network
from lc0py.weights.network import Activation, Dense, InputEmbedding

rel_err = relative_error  # the project's one metric (lc0py.backends.accuracy)


def assert_close_outputs(a, b, rtol: float, what: str = "") -> None:  # type: ignore[no-untyped-def]
    for name in ("policy", "wdl", "moves_left"):
        x, y = getattr(a, name), getattr(b, name)
        if not np.any(y):
            assert not np.any(x), f"{what} {name}: expected zeros"
            continue
        err = rel_err(x, y)
        assert err <= rtol, f"{what} {name}: relative error {err:.3g} > {rtol}"


@pytest.mark.parametrize("embedding", list(InputEmbedding), ids=lambda e: e.name)
def test_fp32_matches_fp64(embedding: InputEmbedding) -> None:
    net = build_network(embedding=embedding, seed=int(embedding) + 10)
    planes = random_planes(np.random.default_rng(int(embedding)), 5)
    a, b = forward(net, planes, np.float32), forward(net, planes, np.float64)
    assert a.policy.dtype == np.float32 and b.policy.dtype == np.float64
    assert_close_outputs(a, b, 1e-5, embedding.name)


def test_fp32_matches_fp64_t82_preset() -> None:
    """The t82 preset (1 layer for speed) keeps float32 within 1e-5 of float64."""
    net = random_network("t82", seed=3, layers=1)
    planes = random_planes(np.random.default_rng(7), 2)
    assert_close_outputs(forward(net, planes, np.float32), forward(net, planes, np.float64), 1e-5, "t82")


def test_batch_equals_one_by_one() -> None:
    net = build_network(seed=4)
    planes = random_planes(np.random.default_rng(8), 6)
    full = forward(net, planes, np.float64)
    for i in range(len(planes)):
        one = forward(net, planes[i:i + 1], np.float64)
        np.testing.assert_allclose(one.policy[0], full.policy[i], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(one.wdl[0], full.wdl[i], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(one.moves_left[0], full.moves_left[i], rtol=1e-12, atol=1e-12)


def test_outputs_depend_on_input_and_are_valid() -> None:
    net = build_network(seed=5)
    planes = random_planes(np.random.default_rng(9), 4)
    out = forward(net, planes, np.float64)
    assert out.policy.shape == (4, 1858) and out.wdl.shape == (4, 3) and out.moves_left.shape == (4,)
    assert np.all(np.isfinite(out.policy))
    np.testing.assert_allclose(out.wdl.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(out.wdl > 0)
    assert not np.allclose(out.policy[0], out.policy[1])


@pytest.mark.parametrize("preset", ["t82", "t82-h12", "t82-h8", "t82-h6"])
def test_head_configs_one_layer(preset: str) -> None:
    net = random_network(preset, seed=1, layers=1)
    out = forward(net, random_planes(np.random.default_rng(2), 2), np.float32)
    assert np.all(np.isfinite(out.policy)) and np.all(np.isfinite(out.wdl))
    assert np.all(np.isfinite(out.moves_left))
    assert not np.allclose(out.policy[0], out.policy[1])


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["t82", "t82-h12", "t82-h8", "t82-h6"])
def test_head_configs_full_size(preset: str) -> None:
    net = random_network(preset, seed=1)
    out = forward(net, random_planes(np.random.default_rng(2), 2), np.float32)
    assert np.all(np.isfinite(out.policy)) and np.all(np.isfinite(out.wdl))


def test_trace_records_layers() -> None:
    net = build_network(seed=6, layers=3)
    planes = random_planes(np.random.default_rng(10), 2)
    trace: dict[str, np.ndarray] = {}
    out = forward(net, planes, np.float64, trace=trace)
    for i in range(3):
        assert trace[f"encoder{i}.attention"].shape == (2, 64, net.d_model)
        assert trace[f"encoder{i}.output"].shape == (2, 64, net.embedding_size)
        assert trace[f"encoder{i}.smolgen"].shape == (2, net.heads, 64, 64)
    v = trace["policy.logits4288"]
    np.testing.assert_array_equal(v[:, attention_policy_gather()], out.policy)
    seen: list[str] = []
    forward(net, planes, np.float64, trace=lambda key, value: seen.append(key))
    assert seen == list(trace)


def test_trace_attention_matches_attention_reference() -> None:
    """``O`` of layer 0 recomputed from the embedding with the exported pieces."""
    net = build_network(seed=7, smolgen=False)
    trace: dict[str, np.ndarray] = {}
    forward(net, random_planes(np.random.default_rng(11), 2), np.float64, trace=trace)
    x, layer = trace["embedding"], net.encoders[0]
    o = attention_reference(dense(x, layer.q), dense(x, layer.k), dense(x, layer.v), None, net.heads)
    np.testing.assert_allclose(o, trace["encoder0.attention"], rtol=1e-12)


def test_attention_reference_against_loop() -> None:
    rng = np.random.default_rng(12)
    b, h, d = 2, 3, 5
    q, k, v = (rng.standard_normal((b, 64, h * d)) for _ in range(3))
    bias = rng.standard_normal((b, h, 64, 64))
    o = attention_reference(q, k, v, bias, h)
    for bi in range(b):
        for hi in range(h):
            cols = slice(hi * d, (hi + 1) * d)
            s = q[bi][:, cols] @ k[bi][:, cols].T / np.sqrt(d) + bias[bi, hi]
            a = np.exp(s - s.max(axis=1, keepdims=True))
            a /= a.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(o[bi][:, cols], a @ v[bi][:, cols], rtol=1e-12)


def test_layer_norm() -> None:
    rng = np.random.default_rng(13)
    x = rng.standard_normal((3, 7)) * 4 + 2
    g, b = rng.standard_normal(7), rng.standard_normal(7)
    y = layer_norm(x, g, b, 1e-3)
    z = (y - b) / g
    np.testing.assert_allclose(z.mean(axis=1), 0, atol=1e-12)
    var = x.var(axis=1)
    np.testing.assert_allclose(z.var(axis=1), var / (var + 1e-3), rtol=1e-12)


def test_bias_absent_means_no_bias_and_no_activation() -> None:
    rng = np.random.default_rng(14)
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal((5, 6))
    np.testing.assert_array_equal(dense(x, Dense(w, None), Activation.RELU), x @ w.T)
    b = rng.standard_normal(5)
    np.testing.assert_allclose(dense(x, Dense(w, b), Activation.RELU), np.maximum(x @ w.T + b, 0))


def test_moves_left_relu_skipped_without_bias() -> None:
    net = build_network(seed=15)
    assert net.moves_left is not None
    net.moves_left.fc2.b = np.array([-1e3], np.float32)  # ReLU would clamp every output to 0
    planes = random_planes(np.random.default_rng(16), 3)
    assert np.all(forward(net, planes, np.float64).moves_left == 0)
    net.moves_left.fc2.b = None  # blas: raw dot product, may be negative
    raw = forward(net, planes, np.float64).moves_left
    assert np.all(raw != 0)


def test_gating_needs_both_gates() -> None:
    net = build_network(seed=17)
    planes = random_planes(np.random.default_rng(18), 2)
    ungated = dataclasses.replace(net, embedding=dataclasses.replace(net.embedding, mult_gate=None,
                                                                     add_gate=None))
    half = dataclasses.replace(net, embedding=dataclasses.replace(net.embedding, add_gate=None))
    a = forward(ungated, planes, np.float64).policy
    np.testing.assert_array_equal(forward(half, planes, np.float64).policy, a)
    assert not np.allclose(forward(net, planes, np.float64).policy, a)


def test_none_embedding_runs_as_pe_map() -> None:
    net = build_network(seed=19)
    none = dataclasses.replace(net, embedding=dataclasses.replace(net.embedding, kind=InputEmbedding.NONE))
    planes = random_planes(np.random.default_rng(20), 2)
    np.testing.assert_array_equal(forward(none, planes).policy, forward(net, planes).policy)


def test_classical_value_maps_to_wdl() -> None:
    net = build_network(seed=21, wdl=False)
    trace: dict[str, np.ndarray] = {}
    out = forward(net, random_planes(np.random.default_rng(22), 3), np.float64, trace=trace)
    q = np.tanh(trace["value.logits"][:, 0])
    np.testing.assert_allclose(out.wdl[:, 0], (1 + q) / 2)
    np.testing.assert_array_equal(out.wdl[:, 1], 0)
    np.testing.assert_allclose(out.q, q)


def test_promotion_logits() -> None:
    """Queen/rook/bishop promotions add the to-square offset plus the knight column."""
    net = build_network(seed=23)
    trace: dict[str, np.ndarray] = {}
    forward(net, random_planes(np.random.default_rng(24), 1), np.float64, trace=trace)
    v = trace["policy.logits4288"][0]
    for i, j in ((0, 0), (3, 4), (7, 6)):
        base = v[(48 + i) * 64 + 56 + j]
        q, r, b = v[4096 + i * 24 + j * 3: 4096 + i * 24 + j * 3 + 3]
        assert len({q - base, r - base, b - base}) == 3  # three different offsets
        # the offset depends on the to-file only
        other_i = (i + 1) % 8
        if abs(other_i - j) <= 1:
            base2 = v[(48 + other_i) * 64 + 56 + j]
            np.testing.assert_allclose(v[4096 + other_i * 24 + j * 3] - base2, q - base, rtol=1e-12)


def test_cast_network() -> None:
    net = build_network(seed=25)
    net64 = cast_network(net, np.float64)
    assert net64.encoders[0].q.w.dtype == np.float64 and net.encoders[0].q.w.dtype == np.float32
    planes = random_planes(np.random.default_rng(26), 2)
    a = forward(net64, planes, np.float64).policy
    np.testing.assert_allclose(a, forward(net, planes, np.float64).policy, rtol=1e-13)


def test_bad_planes_shape() -> None:
    with pytest.raises(ValueError, match="112"):
        forward(build_network(), np.ones((2, 111, 8, 8)))


def test_pos_encoding_table() -> None:
    pe = pos_encoding_table()
    assert pe.shape == (64, 64)
    np.testing.assert_array_equal(np.diag(pe), -1)
    assert set(np.unique(pe)) == {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(pe, pe.T)  # reachability is symmetric
    counts = (pe == 1).sum(axis=1)
    # a1: 21 queen + 2 knight; d4: 27 queen + 8 knight
    assert counts[0] == 23 and counts[27] == 35
    assert pe[0, 17] == 1 and pe[0, 10] == 1 and pe[0, 11] == 0  # a1->b3 knight, c2 knight, d2 no
    assert (pe == 1).sum() == 1792  # one entry per non-promotion policy move


def test_attention_policy_gather_matches_chess_module() -> None:
    from lc0py.chess import ATTENTION_POLICY_MAP

    gather = attention_policy_gather()
    assert gather.shape == (1858,) and len(set(gather.tolist())) == 1858
    np.testing.assert_array_equal(gather, np.asarray(ATTENTION_POLICY_MAP))
    assert gather[0] == 1 and gather[1401] == 48 * 64 + 56 and gather[1792] == 4096
    assert gather[1857] == 4096 + 7 * 24 + 7 * 3 + 2
