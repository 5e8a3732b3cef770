"""Host-side GPU logic without a GPU: packed/fused weights reproduce the reference forward pass.

``emulate`` runs the GPU algorithm in numpy float64 on ``pack_weights``' arrays -- K = 112
embedding GEMM + per-square bias (PE folded in), fused QKV with the K bias dropped and the V bias
added after softmax, fused residual LayerNorms, fused policy Q|K GEMM and the promotion gather --
so a wrong concatenation order, transposition or folding fails here, before any device run.
"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.accuracy import relative_error
from lc0py.backends.gpu.weights import LOG2E, SEQ, graph_bucket, layout, net_shape, pack_weights, plan_buffers
from lc0py.model import cast_network, forward
from lc0py.model.activations import activation
from lc0py.weights.presets import random_network


def _ln(x, g, b, eps):  # type: ignore[no-untyped-def]
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def emulate(net, planes):  # type: ignore[no-untyped-def]
    s = net_shape(net)
    w = pack_weights(net, np.float64)
    bsz = planes.shape[0]
    tok = planes.reshape(bsz, 112, 64).transpose(0, 2, 1)  # [B, 64, 112]
    if s.pe_dense:  # copy P, preproc GEMM + bias, two accumulating GEMMs, LN(act(+b)), gates, FFN
        pieces = tok[:, :, :12].reshape(bsz, SEQ * 12)
        u = (pieces @ w["emb.pre.w"].T + w["emb.pre.b"]).reshape(bsz, SEQ, s.dE)
        x = tok @ w["emb.w"].T
        x = x + u @ w["emb.wu"].T
        emb = net.embedding
        x = _ln(activation(net.default_act, x + w["emb.b"]), w["emb.ln.g"], w["emb.ln.b"], emb.ln.eps)
        if s.gating:
            x = (x + w["emb.zero"][None]) * w["emb.mult"][None] + w["emb.add"][None]
        if s.Fe:
            f = activation(net.ffn_act, x @ w["emb.ffn1.w"].T + w["emb.ffn1.b"])
            x = x + net.alpha * (f @ w["emb.ffn2.w"].T)
            x = _ln(x + w["emb.ffn2.b.alpha"], w["emb.ffn_ln.g"], w["emb.ffn_ln.b"], emb.ffn_ln.eps)
    else:
        x = tok @ w["emb.w"].T + w["emb.sqbias"][None]
        x = activation(net.default_act, x)
        if s.gating:
            x = x * w["emb.mult"][None] + w["emb.add"][None]
    for i, layer in enumerate(net.encoders):
        p = f"L{i}."
        qkv = x @ w[p + "qkv.w"].T
        d = s.D
        assert qkv.shape[-1] == s.qkv_ld
        q = qkv[..., :d] + w[p + "qkv.b"][:d]
        k = qkv[..., d : 2 * d]  # K bias dropped: softmax cancels it
        v = qkv[..., 2 * d : 3 * d]
        g = 0
        if s.smolgen:
            c = qkv[..., 3 * d : 3 * d + s.hc].reshape(bsz, -1)  # compress columns of the fused projection
            s1 = _ln(
                activation(net.smolgen_act, c @ w[p + "sg.d1.w"].T + w[p + "sg.d1.b"]),
                w[p + "sg.ln1.g"],
                w[p + "sg.ln1.b"],
                1e-3,
            )
            s2 = _ln(
                activation(net.smolgen_act, s1 @ w[p + "sg.d2.w"].T + w[p + "sg.d2.b"]),
                w[p + "sg.ln2.g"],
                w[p + "sg.ln2.b"],
                1e-3,
            )
            g = (s2.reshape(bsz * s.H, s.gs) @ w["smolgen_w"].T).reshape(bsz, s.H, SEQ, SEQ) / LOG2E
        qh = q.reshape(bsz, SEQ, s.H, s.depth).transpose(0, 2, 1, 3)
        kh = k.reshape(bsz, SEQ, s.H, s.depth).transpose(0, 2, 1, 3)
        vh = v.reshape(bsz, SEQ, s.H, s.depth).transpose(0, 2, 1, 3)
        sc = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(s.depth) + g
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        sc /= sc.sum(-1, keepdims=True)
        o = (sc @ vh).transpose(0, 2, 1, 3).reshape(bsz, SEQ, d) + w[p + "qkv.b"][2 * d : 3 * d]
        y = o @ w[p + "out.w"].T
        x = x + net.alpha * y  # the GEMM's beta = 1 residual
        x1 = _ln(x + w[p + "out.b.alpha"], w[p + "ln1.g"], w[p + "ln1.b"], layer.ln1.eps)
        f = activation(net.ffn_act, x1 @ w[p + "ffn1.w"].T + w[p + "ffn1.b"])
        y = f @ w[p + "ffn2.w"].T
        x1 = x1 + net.alpha * y
        x = _ln(x1 + w[p + "ffn2.b.alpha"], w[p + "ln2.g"], w[p + "ln2.b"], layer.ln2.eps)
    pe = activation(net.default_act, x @ w["pol.emb.w"].T + w["pol.emb.b"])
    qk = pe @ w["pol.qk.w"].T + w["pol.qk.b"]
    qp, kp = qk[..., : s.Pd], qk[..., s.Pd :]
    lg = (qp @ kp.transpose(0, 2, 1) / np.sqrt(s.Pd)).reshape(bsz, 4096)
    off = kp[:, 56:64] @ w["pol.promo"].T  # [B, 8, 4]
    out = np.empty((bsz, 1858))
    for kk, idx in enumerate(w["gather"]):
        if idx < 4096:
            out[:, kk] = lg[:, idx]
        else:
            r = idx - 4096
            i, j, rr = r // 24, (r % 24) // 3, r % 3
            out[:, kk] = lg[:, (48 + i) * 64 + 56 + j] + off[:, j, rr] + off[:, j, 3]
    return out


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
    w = pack_weights(net, np.float32)
    d = net.d_model
    layer = net.encoders[1]
    np.testing.assert_array_equal(w["L1.qkv.w"][:d], layer.q.w)
    np.testing.assert_array_equal(w["L1.qkv.w"][d : 2 * d], layer.k.w)
    np.testing.assert_array_equal(w["L1.qkv.w"][2 * d : 3 * d], layer.v.w)
    hc = layer.smolgen.compress.shape[0]
    np.testing.assert_array_equal(w["L1.qkv.w"][3 * d : 3 * d + hc], layer.smolgen.compress)
    assert not w["L1.qkv.w"][3 * d + hc :].any() and w["L1.qkv.w"].shape[0] % 8 == 0
    np.testing.assert_array_equal(w["pol.qk.w"][: net.policy.wq.n_out], net.policy.wq.w)
    assert w["gather"].dtype == np.int32 and w["gather"].shape == (1858,)
    assert all(a.flags["C_CONTIGUOUS"] for a in w.values())


def test_layout_alignment_and_buffer_plan() -> None:
    offsets, total = layout({"a": 3, "b": 300, "c": 1})
    assert offsets == {"a": 0, "b": 256, "c": 768} and total == 1024
    net = random_network("t82", 0, layers=1)
    s = net_shape(net)
    sizes = plan_buffers(s, 1024, 2, fallback=True)
    assert sizes["qkv"] == 1024 * 64 * (3 * 768 + 32) * 2
    assert sizes["sg.g"] == 1024 * 24 * 64 * 64 * 2
    assert sizes["out.policy"] == 1024 * 1858 * 4
    assert "scores" not in plan_buffers(s, 8, 2, fallback=False)


@pytest.mark.parametrize(
    ("n", "bucket"), [(1, 1), (3, 4), (16, 16), (17, 32), (100, 112), (256, 256), (257, 320), (1024, 1024)]
)
def test_graph_bucket(n: int, bucket: int) -> None:
    assert graph_bucket(n) == bucket


@pytest.mark.parametrize("preset", ["tiny", "t82"])
def test_pe_dense_shapes(preset: str) -> None:
    net = random_network(preset, 1, embedding="pe_dense", **({"layers": 2} if preset != "tiny" else {}))
    s = net_shape(net)
    emb = net.embedding
    assert s.pe_dense and s.dE == emb.preproc.n_out // 64 and s.Fe == emb.ffn1.n_out
    w = pack_weights(net, np.float16)
    e = s.E
    assert w["emb.w"].shape == (e, 112) and w["emb.wu"].shape == (e, s.dE)
    assert w["emb.b"].shape == (e,) and "emb.sqbias" not in w
    assert w["emb.pre.w"].shape == (64 * s.dE, 768) and w["emb.pre.b"].shape == (64 * s.dE,)
    assert w["emb.ln.g"].shape == w["emb.ffn_ln.b"].shape == (e,)
    assert w["emb.ffn1.w"].shape == (s.Fe, e) and w["emb.ffn2.w"].shape == (e, s.Fe)
    np.testing.assert_allclose(
        w["emb.ffn2.b.alpha"].astype(np.float64), emb.ffn2.b * net.alpha, rtol=2e-3, atol=1e-6
    )
    if s.gating:
        assert w["emb.zero"].shape == (64, e) and not w["emb.zero"].any()
    sizes = plan_buffers(s, 8, 2, fallback=False)
    assert sizes["emb.p"] == 8 * 768 * 2 and sizes["emb.u"] == 8 * 64 * s.dE * 2
    assert sizes["ffn"] >= 8 * 64 * s.Fe * 2
