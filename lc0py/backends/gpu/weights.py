"""Host-side preparation of a ``Network`` for the GPU: shapes, fused/packed weights, buffer plan.

Pure numpy, no device: everything here is tested without a GPU. ``pack_weights`` does all
re-arrangement once, at upload, so the forward pass launches plain GEMMs on contiguous arrays:

* ``L{l}.qkv.w = concat(q_w, k_w, v_w, smolgen compress)`` ``[3D + hc, E]`` (in that order):
  one GEMM reads the layer input once for all four projections; the attention kernels read
  Q/K/V at column offsets 0, D, 2D with row stride ``3D + hc`` and a small copy kernel gathers
  the compress columns for smolgen's dense1. ``qkv.b`` has zeros for the compress columns.
* The embedding's constant positional-encoding columns are folded into a per-square bias:
  ``emb.sqbias[s, c] = ip_emb_b[c] + PE[s] · W[c, 112:]`` (float64), so the GEMM has K = 112.
* PE_DENSE (§3.2): ``emb.w`` = the 112 plane columns, ``emb.wu`` = the dE preproc columns
  (a second GEMM with beta = 1 accumulates ``U·Wuᵀ``), ``emb.b`` the bias (applied with the
  activation inside the embedding LayerNorm kernel), ``emb.pre.w/b`` the preproc dense,
  ``emb.ln``/``emb.ffn*``/``emb.ffn_ln`` like an encoder FFN block (``emb.ffn2.b.alpha``);
  with gating ``emb.zero`` is a zero ``[64, E]`` bias for the gate-only epilogue.
* Gates are transposed to ``[64, E]`` so the epilogue kernel reads them coalesced.
* Policy ``wq`` and ``wk`` are concatenated (one GEMM, N = 2·Pd).
* The global ``smolgen_w`` is scaled by log2(e): the attention kernels compute softmax with exp2,
  so they read the bias in that domain directly.
* Absent biases of layers without an activation become zeros (docs/attention-body.md §4.6).
* ``out.b.alpha``/``ffn2.b.alpha`` = alpha·bias: the residual is accumulated by the GEMM
  (``x += alpha·O·Woᵀ``, beta = 1), so the LayerNorm adds the bias already scaled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lc0py.errors import UnsupportedNetError
from lc0py.model.tables import attention_policy_gather, pos_encoding_table
from lc0py.weights.network import Activation, Dense, InputEmbedding, Network

SEQ = 64
PLANES = 112
POLICY_OUT = 1858
LOG2E = 1.4426950408889634  # smolgen_w is uploaded as smolgen_w * log2(e)
ALIGN = 256  # bytes: every buffer starts 256-byte aligned (16-byte vector loads, cuBLAS's liking)


@dataclass(frozen=True)
class NetShape:
    """The sizes the GPU forward pass needs (docs/attention-body.md §1 symbols)."""

    E: int
    D: int
    H: int
    depth: int
    L: int
    Fd: int
    smolgen: bool
    hc: int
    hs: int
    gs: int
    Pe: int
    Pd: int
    Vc: int
    Vh: int
    v_out: int  # 3 (WDL) or 1 (classical)
    mlh: bool
    Mc: int
    Mh: int
    gating: bool
    pe_dense: bool = False
    dE: int = 0  # PE_DENSE: preproc features per square
    Fe: int = 0  # PE_DENSE: embedding FFN hidden size (0: no embedding FFN)

    @property
    def seq(self) -> int:
        return SEQ

    @property
    def qkv_ld(self) -> int:
        """Row stride of the fused projection output: Q, K, V and the smolgen compress columns,
        padded to a multiple of 8 elements so every row starts 16-byte aligned (vector loads)."""
        return 3 * self.D + (self.hc + 7) // 8 * 8


def net_shape(net: Network) -> NetShape:
    """Sizes of ``net``; raises ``UnsupportedNetError`` for what the GPU path does not run."""
    if not net.encoders:
        raise UnsupportedNetError("GPU backend: the network has no encoder layers")
    emb = net.embedding
    pe_dense = emb.kind == InputEmbedding.PE_DENSE
    dE = Fe = 0
    if pe_dense:
        if emb.preproc is None or emb.ln is None:
            raise UnsupportedNetError("GPU backend: PE_DENSE embedding without preproc/ln weights")
        if emb.preproc.n_in != SEQ * 12 or emb.preproc.n_out % SEQ:
            raise UnsupportedNetError(
                f"GPU backend: PE_DENSE preproc shape [{emb.preproc.n_out}, {emb.preproc.n_in}] "
                "is not [64*dE, 768]"
            )
        dE = emb.preproc.n_out // SEQ
        if emb.dense.n_in != PLANES + dE:
            raise UnsupportedNetError(
                f"GPU backend: PE_DENSE embedding input width {emb.dense.n_in} != 112 + {dE}"
            )
        if emb.ffn1 is not None and emb.ffn2 is not None and emb.ffn_ln is not None:
            Fe = emb.ffn1.n_out
    elif net.embedding.dense.n_in != PLANES + SEQ:
        raise UnsupportedNetError(
            f"GPU backend: embedding input width {net.embedding.dense.n_in} != 176 (PE_MAP)"
        )
    sg = net.encoders[0].smolgen
    smolgen = net.has_smolgen and sg is not None
    if smolgen and any(layer.smolgen is None for layer in net.encoders):
        raise UnsupportedNetError("GPU backend: smolgen on some layers only is not supported")
    mlh = net.moves_left
    return NetShape(
        E=net.embedding_size,
        D=net.d_model,
        H=net.heads,
        depth=net.depth,
        L=net.num_layers,
        Fd=net.ffn_size,
        smolgen=smolgen,
        hc=sg.hidden_channels if smolgen and sg else 0,
        hs=sg.hidden_size if smolgen and sg else 0,
        gs=int(net.smolgen_w.shape[1]) if smolgen and net.smolgen_w is not None else 0,
        Pe=net.policy.embedding.n_out,
        Pd=net.policy.wq.n_out,
        Vc=net.value.embedding.n_out,
        Vh=net.value.fc1.n_out,
        v_out=net.value.fc2.n_out,
        mlh=mlh is not None,
        Mc=mlh.embedding.n_out if mlh else 0,
        Mh=mlh.fc1.n_out if mlh else 0,
        gating=net.embedding.mult_gate is not None and net.embedding.add_gate is not None,
        pe_dense=pe_dense,
        dE=dE,
        Fe=Fe,
    )


def _bias(d: Dense) -> np.ndarray:
    return d.b if d.b is not None else np.zeros(d.n_out, np.float32)


def pack_weights(net: Network, dtype: type) -> dict[str, np.ndarray]:
    """Every device array of ``net`` by name, already fused/transposed, in ``dtype`` (gather: int32)."""
    shape = net_shape(net)
    out: dict[str, np.ndarray] = {}
    emb = net.embedding
    w = emb.dense.w.astype(np.float64)
    out["emb.w"] = w[:, :PLANES]
    if shape.pe_dense:
        assert emb.preproc is not None and emb.ln is not None
        out["emb.wu"] = w[:, PLANES:]  # [E, dE]
        out["emb.b"] = _bias(emb.dense)
        out["emb.pre.w"], out["emb.pre.b"] = emb.preproc.w, _bias(emb.preproc)
        out["emb.ln.g"], out["emb.ln.b"] = emb.ln.gamma, emb.ln.beta
        if shape.Fe:
            assert emb.ffn1 is not None and emb.ffn2 is not None and emb.ffn_ln is not None
            out["emb.ffn1.w"], out["emb.ffn1.b"] = emb.ffn1.w, _bias(emb.ffn1)
            out["emb.ffn2.w"] = emb.ffn2.w
            out["emb.ffn2.b.alpha"] = _bias(emb.ffn2).astype(np.float64) * net.alpha
            out["emb.ffn_ln.g"], out["emb.ffn_ln.b"] = emb.ffn_ln.gamma, emb.ffn_ln.beta
        if shape.gating:
            out["emb.zero"] = np.zeros((SEQ, shape.E), np.float32)
    else:
        pe = pos_encoding_table(np.float64)
        out["emb.sqbias"] = _bias(emb.dense).astype(np.float64)[None, :] + pe @ w[:, PLANES:].T  # [64, E]
    if shape.gating:
        assert emb.mult_gate is not None and emb.add_gate is not None
        out["emb.mult"] = emb.mult_gate.T
        out["emb.add"] = emb.add_gate.T
    for i, layer in enumerate(net.encoders):
        p = f"L{i}."
        extra = shape.qkv_ld - 3 * shape.D  # compress rows + zero rows up to the alignment
        sgc = np.zeros((extra, shape.E), np.float32)
        if shape.smolgen and layer.smolgen is not None:
            sgc[: shape.hc] = layer.smolgen.compress
        out[p + "qkv.w"] = np.concatenate([layer.q.w, layer.k.w, layer.v.w, sgc], axis=0)
        out[p + "qkv.b"] = np.concatenate(
            [_bias(layer.q), _bias(layer.k), _bias(layer.v), np.zeros(extra, np.float32)]
        )
        out[p + "out.w"] = layer.out.w
        out[p + "out.b"] = _bias(layer.out)
        out[p + "out.b.alpha"] = _bias(layer.out).astype(np.float64) * net.alpha  # residual GEMM form
        out[p + "ln1.g"], out[p + "ln1.b"] = layer.ln1.gamma, layer.ln1.beta
        out[p + "ffn1.w"], out[p + "ffn1.b"] = layer.ffn1.w, _bias(layer.ffn1)
        out[p + "ffn2.w"], out[p + "ffn2.b"] = layer.ffn2.w, _bias(layer.ffn2)
        out[p + "ffn2.b.alpha"] = _bias(layer.ffn2).astype(np.float64) * net.alpha
        out[p + "ln2.g"], out[p + "ln2.b"] = layer.ln2.gamma, layer.ln2.beta
        if shape.smolgen and layer.smolgen is not None:
            s = layer.smolgen
            out[p + "sg.d1.w"], out[p + "sg.d1.b"] = s.dense1.w, _bias(s.dense1)
            out[p + "sg.ln1.g"], out[p + "sg.ln1.b"] = s.ln1.gamma, s.ln1.beta
            out[p + "sg.d2.w"], out[p + "sg.d2.b"] = s.dense2.w, _bias(s.dense2)
            out[p + "sg.ln2.g"], out[p + "sg.ln2.b"] = s.ln2.gamma, s.ln2.beta
    if shape.smolgen:
        assert net.smolgen_w is not None
        # Pre-multiplied by log2(e): every attention kernel works in the exp2 domain, so the
        # bias G they read is already G·log2(e) and costs no multiply per logit.
        out["smolgen_w"] = net.smolgen_w.astype(np.float64) * LOG2E
    pol = net.policy
    out["pol.emb.w"], out["pol.emb.b"] = pol.embedding.w, _bias(pol.embedding)
    out["pol.qk.w"] = np.concatenate([pol.wq.w, pol.wk.w], axis=0)
    out["pol.qk.b"] = np.concatenate([_bias(pol.wq), _bias(pol.wk)])
    out["pol.promo"] = pol.promotion
    v = net.value
    out["val.emb.w"], out["val.emb.b"] = v.embedding.w, _bias(v.embedding)
    out["val.fc1.w"], out["val.fc1.b"] = v.fc1.w, _bias(v.fc1)
    out["val.fc2.w"], out["val.fc2.b"] = v.fc2.w, _bias(v.fc2)
    if net.moves_left is not None:
        m = net.moves_left
        out["mlh.emb.w"], out["mlh.emb.b"] = m.embedding.w, _bias(m.embedding)
        out["mlh.fc1.w"], out["mlh.fc1.b"] = m.fc1.w, _bias(m.fc1)
        out["mlh.fc2.w"], out["mlh.fc2.b"] = m.fc2.w, _bias(m.fc2)
    packed = {k: np.ascontiguousarray(a, dtype=dtype) for k, a in out.items()}
    packed["gather"] = np.ascontiguousarray(attention_policy_gather(), dtype=np.int32)
    return packed


def activation_code(act: Activation) -> int:
    """The run-time activation argument of the kernels (lc0's proto numbers, activations.h)."""
    if act in (Activation.DEFAULT, Activation.SOFTMAX):
        raise UnsupportedNetError(f"GPU backend: activation {act.name} cannot be applied element-wise")
    return int(act)


def align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def layout(sizes: dict[str, int]) -> tuple[dict[str, int], int]:
    """Offsets (bytes) of named regions packed into one allocation, each ``ALIGN``-aligned."""
    offsets: dict[str, int] = {}
    total = 0
    for name, n in sizes.items():
        offsets[name] = total
        total += align(n)
    return offsets, max(total, ALIGN)


def plan_buffers(s: NetShape, batch: int, elem: int, fallback: bool) -> dict[str, int]:
    """Bytes of every activation buffer for ``batch`` positions (``elem`` = 2 fp16, 4 fp32)."""
    m = batch * SEQ
    sizes = {
        "in.masks": batch * PLANES * 8,
        "in.values": batch * PLANES * 4,
        "tokens": m * PLANES * elem,
        "x": m * s.E * elem,
        "x1": m * s.E * elem,
        "qkv": m * s.qkv_ld * elem,
        "attn": m * s.D * elem,
        "ffn": m * max(s.Fd, s.Pe, s.Fe) * elem,  # FFN hidden; reused by policy / embedding FFN
        "pol.qk": m * 2 * s.Pd * elem,
        "pol.lg": batch * SEQ * SEQ * elem,
        "out.policy": batch * POLICY_OUT * 4,
        "val.v1": m * s.Vc * elem,
        "val.v2": batch * s.Vh * elem,
        "out.value": batch * s.v_out * elem,
    }
    if s.pe_dense:
        sizes["emb.p"] = batch * SEQ * 12 * elem  # the 12 piece planes, square-major [B, 768]
        sizes["emb.u"] = m * s.dE * elem  # preproc output [B, 64*dE] = [B*64, dE]
    if s.mlh:
        sizes["mlh.m1"] = m * s.Mc * elem
        sizes["mlh.m2"] = batch * s.Mh * elem
        sizes["out.mlh"] = batch * elem
    if s.smolgen:
        sizes["sg.c"] = m * s.hc * elem
        sizes["sg.s1"] = batch * s.hs * elem
        sizes["sg.s2"] = batch * s.H * s.gs * elem
        sizes["sg.g"] = batch * s.H * SEQ * SEQ * elem
    if fallback:
        sizes["scores"] = batch * s.H * SEQ * SEQ * elem
    return sizes


def graph_bucket(batch: int) -> int:
    """The batch size a CUDA graph is captured for: few graphs, little padding.

    Powers of two up to 16, multiples of 16 up to 256, then multiples of 64 (at most 1/4 or 1/5
    wasted rows, and lc0's usual batch sizes are exact).
    """
    if batch <= 0:
        raise ValueError("batch must be positive")
    if batch <= 16:
        return 1 << (batch - 1).bit_length()
    if batch <= 256:
        return (batch + 15) // 16 * 16
    return (batch + 63) // 64 * 64
