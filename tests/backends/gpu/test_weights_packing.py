"""Host-side GPU logic without a GPU: packed/fused weights reproduce the reference forward pass.

``emulate`` runs the GPU algorithm in numpy float64 on ``pack_model``'s typed records -- K = 112
embedding GEMM + per-square bias (PE folded in), fused QKV with the K bias dropped and the V bias
added after softmax, fused residual LayerNorms, fused policy Q|K GEMM and the promotion gather --
so a wrong concatenation order, transposition or folding fails here, before any device run.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from lc0py.backends.accuracy import relative_error
from lc0py.backends.gpu.weights import (
    LOG2E,
    SEQ,
    Buffers,
    PeDenseEmbeddingWeights,
    PeMapEmbeddingWeights,
    arrays_of,
    graph_bucket,
    layout,
    net_shape,
    pack_model,
    plan_buffers,
)
from lc0py.model import cast_network, forward
from lc0py.model.activations import activation
from lc0py.weights.presets import random_network
from tests.backends.gpu.policy_reference import attention_policy


def _ln(x, g, b, eps):  # type: ignore[no-untyped-def]
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _ffn(net, f, x):  # type: ignore[no-untyped-def]
    """The Ffn layer: x += alpha * act(x W1^T + b1) W2^T, LN(x + alpha b2) -- eps from the caller."""
    h = activation(net.ffn_act, x @ f.w1.T + f.b1)
    return x + net.alpha * (h @ f.w2.T), f


def emulate(net, planes):  # type: ignore[no-untyped-def]
    s = net_shape(net)
    w = pack_model(net, np.float64)
    bsz = planes.shape[0]
    tok = planes.reshape(bsz, 112, 64).transpose(0, 2, 1)  # [B, 64, 112]
    e = w.embedding
    if s.pe_dense:  # copy P, preproc GEMM + bias, two accumulating GEMMs, LN(act(+b)), gates, FFN
        assert isinstance(e, PeDenseEmbeddingWeights)
        pieces = tok[:, :, :12].reshape(bsz, SEQ * 12)
        u = (pieces @ e.pre_w.T + e.pre_b).reshape(bsz, SEQ, s.dE)
        x = tok @ e.w.T
        x = x + u @ e.wu.T
        emb = net.embedding
        x = _ln(activation(net.default_act, x + e.b), e.ln_g, e.ln_b, emb.ln.eps)
        if s.gating:
            x = (x + e.zero[None]) * e.mult[None] + e.add[None]
        if s.Fe:
            x, f = _ffn(net, e.ffn, x)
            x = _ln(x + f.b2_alpha, f.ln_g, f.ln_b, emb.ffn_ln.eps)
    else:
        assert isinstance(e, PeMapEmbeddingWeights)
        x = tok @ e.w.T + e.sqbias[None]
        x = activation(net.default_act, x)
        if s.gating:
            x = x * e.mult[None] + e.add[None]
    for layer, lw in zip(net.encoders, w.encoders, strict=True):
        qkv = x @ lw.qkv_w.T
        d = s.D
        assert qkv.shape[-1] == s.qkv_ld
        q = qkv[..., :d] + lw.qkv_b[:d]
        k = qkv[..., d : 2 * d]  # K bias dropped: softmax cancels it
        v = qkv[..., 2 * d : 3 * d]
        g = 0
        if s.smolgen:
            sg = lw.smolgen
            c = qkv[..., 3 * d : 3 * d + s.hc].reshape(bsz, -1)  # compress columns of the fused projection
            s1 = _ln(activation(net.smolgen_act, c @ sg.d1_w.T + sg.d1_b), sg.ln1_g, sg.ln1_b, 1e-3)
            s2 = _ln(activation(net.smolgen_act, s1 @ sg.d2_w.T + sg.d2_b), sg.ln2_g, sg.ln2_b, 1e-3)
            g = (s2.reshape(bsz * s.H, s.gs) @ w.smolgen_w.T).reshape(bsz, s.H, SEQ, SEQ) / LOG2E
        qh = q.reshape(bsz, SEQ, s.H, s.depth).transpose(0, 2, 1, 3)
        kh = k.reshape(bsz, SEQ, s.H, s.depth).transpose(0, 2, 1, 3)
        vh = v.reshape(bsz, SEQ, s.H, s.depth).transpose(0, 2, 1, 3)
        sc = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(s.depth) + g
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        sc /= sc.sum(-1, keepdims=True)
        o = (sc @ vh).transpose(0, 2, 1, 3).reshape(bsz, SEQ, d) + lw.qkv_b[2 * d : 3 * d]
        x = x + net.alpha * (o @ lw.out_w.T)  # the GEMM's beta = 1 residual
        x1 = _ln(x + lw.out_b_alpha, lw.ln1_g, lw.ln1_b, layer.ln1.eps)
        x1, f = _ffn(net, lw.ffn, x1)
        x = _ln(x1 + f.b2_alpha, f.ln_g, f.ln_b, layer.ln2.eps)
    pol = w.policy
    pe = activation(net.default_act, x @ pol.emb_w.T + pol.emb_b)
    return attention_policy(pe, pol, s.Pd)


@pytest.mark.parametrize("embedding", ["pe_map", "pe_dense"])
@pytest.mark.parametrize("preset", ["tiny", "t82-h6"])
def test_packed_weights_reproduce_reference(preset: str, embedding: str) -> None:
    net = random_network(preset, 3, embedding=embedding, **({"layers": 1} if preset != "tiny" else {}))
    rng = np.random.default_rng(0)
    planes = (rng.random((2, 112, 8, 8)) < 0.15).astype(np.float64)
    ref = forward(cast_network(net, np.float64), planes, np.float64)
    got = emulate(net, planes)
    err = relative_error(got, ref.policy)
    assert err < 1e-10, err


def test_qkv_concatenation_order() -> None:
    net = random_network("tiny", 5)
    w = pack_model(net, np.float32)
    d = net.d_model
    layer, lw = net.encoders[1], w.encoders[1]
    np.testing.assert_array_equal(lw.qkv_w[:d], layer.q.w)
    np.testing.assert_array_equal(lw.qkv_w[d : 2 * d], layer.k.w)
    np.testing.assert_array_equal(lw.qkv_w[2 * d : 3 * d], layer.v.w)
    hc = layer.smolgen.compress.shape[0]
    np.testing.assert_array_equal(lw.qkv_w[3 * d : 3 * d + hc], layer.smolgen.compress)
    assert not lw.qkv_w[3 * d + hc :].any() and lw.qkv_w.shape[0] % 8 == 0
    np.testing.assert_array_equal(w.policy.qk_w[: net.policy.wq.n_out], net.policy.wq.w)
    assert w.policy.gather.dtype == np.int32 and w.policy.gather.shape == (1858,)
    arrays = arrays_of(w)
    assert all(a.flags["C_CONTIGUOUS"] for a in arrays)
    assert all(a.dtype == np.float32 for a in arrays if a is not w.policy.gather)


def test_layout_alignment_and_buffer_plan() -> None:
    offsets, total = layout({"a": 3, "b": 300, "c": 1})
    assert offsets == {"a": 0, "b": 256, "c": 768} and total == 1024
    net = random_network("t82", 0, layers=1)
    s = net_shape(net)
    sizes = plan_buffers(s, 1024, 2, fallback=True)
    assert sizes["qkv"] == 1024 * 64 * (3 * 768 + 32) * 2
    assert sizes["sg_g"] == 1024 * 24 * 64 * 64 * 2
    assert sizes["out_policy"] == 1024 * 1858 * 4
    assert set(sizes) <= {f.name for f in fields(Buffers)}
    assert "scores" not in plan_buffers(s, 8, 2, fallback=False)


@pytest.mark.parametrize(
    ("n", "bucket"), [(1, 1), (3, 4), (16, 16), (17, 32), (100, 112), (256, 256), (257, 320), (1024, 1024)]
)
def test_graph_bucket_coarse(n: int, bucket: int) -> None:
    assert graph_bucket(n, fine=False) == bucket


@pytest.mark.parametrize(
    ("n", "bucket"),
    [(1, 1), (3, 3), (8, 8), (9, 10), (16, 16), (17, 20), (33, 40), (43, 48), (41, 48), (40, 40), (65, 80),
     (100, 112), (129, 144), (256, 256), (257, 320), (1024, 1024)],
)
def test_graph_bucket_fine(n: int, bucket: int) -> None:
    assert graph_bucket(n) == graph_bucket(n, fine=True) == bucket


def test_fine_buckets_pad_less_and_never_more_than_coarse() -> None:
    """Every fine bucket holds the batch, is no larger than the coarse one, and pads at most ~1/5
    of its rows (the coarse rule: up to 15 of 32 at 17 positions)."""
    for n in range(1, 1100):
        fine, coarse = graph_bucket(n), graph_bucket(n, fine=False)
        assert n <= fine <= coarse, n
        assert (fine - n) / fine < 0.2 or n > 256, n
    assert len({graph_bucket(n) for n in range(1, 257)}) == 32
    assert len({graph_bucket(n, fine=False) for n in range(1, 257)}) == 20
    with pytest.raises(ValueError):
        graph_bucket(0)


@pytest.mark.parametrize("preset", ["tiny", "t82"])
def test_pe_dense_shapes(preset: str) -> None:
    net = random_network(preset, 1, embedding="pe_dense", **({"layers": 2} if preset != "tiny" else {}))
    s = net_shape(net)
    emb = net.embedding
    assert s.pe_dense and s.dE == emb.preproc.n_out // 64 and s.Fe == emb.ffn1.n_out
    w = pack_model(net, np.float16).embedding
    assert isinstance(w, PeDenseEmbeddingWeights)
    e = s.E
    assert w.w.shape == (e, 112) and w.wu.shape == (e, s.dE) and w.b.shape == (e,)
    assert w.pre_w.shape == (64 * s.dE, 768) and w.pre_b.shape == (64 * s.dE,)
    assert w.ln_g.shape == w.ffn.ln_b.shape == (e,)
    assert w.ffn.w1.shape == (s.Fe, e) and w.ffn.w2.shape == (e, s.Fe)
    b2 = w.ffn.b2_alpha.astype(np.float64)
    np.testing.assert_allclose(b2, emb.ffn2.b * net.alpha, rtol=2e-3, atol=1e-6)
    if s.gating:
        assert w.zero.shape == (64, e) and not w.zero.any()
    sizes = plan_buffers(s, 8, 2, fallback=False)
    assert sizes["emb_p"] == 8 * 768 * 2 and sizes["emb_u"] == 8 * 64 * s.dE * 2
    assert sizes["ffn"] >= 8 * 64 * s.Fe * 2
