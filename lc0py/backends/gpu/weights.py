"""Host-side preparation of a ``Network`` for the GPU: shapes, typed weight records, buffer plan.

Pure numpy, no device: everything here is tested without a GPU. ``pack_model`` does all
re-arrangement once, at upload, into one typed record per layer (``EncoderWeights``,
``FfnWeights``, ``AttentionPolicyWeights``, ...; a field per device array, no string keys), so the
forward pass launches plain GEMMs on contiguous arrays:

* ``EncoderWeights.qkv_w = concat(q_w, k_w, v_w, smolgen compress)`` ``[3D + hc, E]`` (in that
  order): one GEMM reads the layer input once for all four projections; the attention kernels
  read Q/K/V at column offsets 0, D, 2D with row stride ``3D + hc`` and a small copy kernel
  gathers the compress columns for smolgen's dense1. ``qkv_b`` has zeros for the compress columns.
* The embedding's constant positional-encoding columns are folded into a per-square bias:
  ``sqbias[s, c] = ip_emb_b[c] + PE[s] · W[c, 112:]`` (float64), so the GEMM has K = 112.
* PE_DENSE: ``w`` = the 112 plane columns, ``wu`` = the dE preproc columns (a second GEMM with
  beta = 1 accumulates ``U·Wuᵀ``), ``b`` the bias (applied with the activation inside the
  embedding LayerNorm kernel), ``pre_w/pre_b`` the preproc dense, ``ffn`` an encoder FFN block;
  with gating ``zero`` is a zero ``[64, E]`` bias for the gate-only epilogue.
* Gates are transposed to ``[64, E]`` so the epilogue kernel reads them coalesced.
* Policy ``wq`` and ``wk`` are concatenated (one GEMM, N = 2·Pd).
* The global ``smolgen_w`` is scaled by log2(e): the attention kernels compute softmax with exp2,
  so they read the bias in that domain directly.
* Absent biases of layers without an activation become zeros (docs/attention-body.md §4.6).
* ``out_b_alpha``/``b2_alpha`` = alpha·bias: the residual is accumulated by the GEMM
  (``x += alpha·O·Woᵀ``, beta = 1), so the LayerNorm adds the bias already scaled.

The same record classes hold device pointers after upload (``map_arrays``), and ``Buffers`` names
the activation buffers of one arena (``plan_buffers`` sizes them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from lc0py.backends.gpu.fp8_quant import FP8_PARTIALS
from lc0py.errors import UnsupportedNetError
from lc0py.model.tables import attention_policy_gather, pos_encoding_table
from lc0py.weights.network import Activation, Dense, EncoderLayer, InputEmbedding, Network, PolicyHead

if TYPE_CHECKING:
    from lc0py.gpu.platform import Platform

SEQ = 64
PLANES = 112
POLICY_OUT = 1858
LOG2E = 1.4426950408889634  # smolgen_w is uploaded as smolgen_w * log2(e)
ALIGN = 256  # bytes: every buffer starts 256-byte aligned (16-byte vector loads, cuBLAS's liking)
#: The most rows (positions) one ``dense_rows_layernorm`` launch takes (kernels/dense_rows.hip, the
#: ``smolgen_rows`` fusion): its last block normalises every row alone, and ``sg_pre`` holds this many.
DENSE_ROWS_MAX = 8
#: The most positions one ``compress_rows_layernorm`` launch takes (kernels/compress_rows.hip, the
#: ``smolgen_compress`` fusion): a block a token of each, a ticket each; ``sg_pre`` holds their
#: shares (T82: 64 KB a position).
COMPRESS_ROWS_MAX = 64
#: ``sg_count``: the row kernels' u32 tickets (``compress_rows``: one a row) and ``smolgen_chain``'s
#: two barrier counters, all 0 between launches.
SMOLGEN_COUNTER_BYTES = 4 * max(DENSE_ROWS_MAX, COMPRESS_ROWS_MAX)
#: the most positions ``smolgen_chain`` (kernels/smolgen_chain.hip: smolgen's whole per-position
#: network in one kernel) takes in a launch
SMOLGEN_CHAIN_MAX = 4


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
    fp8: bool = False  # the FP8 GEMM path (fp8.py): its buffers are planned too

    @property
    def seq(self) -> int:
        return SEQ

    @property
    def qkv_ld(self) -> int:
        """Row stride of the fused projection output: Q, K, V and the smolgen compress columns,
        padded to a multiple of 16 elements: every row starts 16-byte aligned (vector loads), and
        N is a multiple of 16 as the FP8 GEMM (fp8.py) needs it."""
        return 3 * self.D + (self.hc + 15) // 16 * 16


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


def bias_of(d: Dense) -> np.ndarray:
    """``d``'s bias; zeros for a layer stored without one (the kernels always add a bias)."""
    return d.b if d.b is not None else np.zeros(d.n_out, np.float32)


# ---- typed weight records -----------------------------------------------------------------------
# Each layer of the GPU forward pass reads its weights from one record. The same class holds numpy
# arrays on the host (``pack_model``) and device pointers once uploaded (``map_arrays``), so
# a weight is named by a field, not a string key: a field no layer reads is visibly unused.
A = TypeVar("A", np.ndarray, int)


@dataclass
class FfnWeights(Generic[A]):
    """``x1 += alpha * act(x1 W1^T + b1) W2^T; out = LN(x1 + alpha b2)`` (encoder FFN block)."""

    w1: A  # [F, E]
    b1: A
    w2: A  # [E, F]
    b2_alpha: A  # alpha * b2: the residual is accumulated by the GEMM (beta = 1)
    ln_g: A
    ln_b: A


@dataclass
class SmolgenWeights(Generic[A]):
    d1_w: A  # [hs, 64 hc]
    d1_b: A
    ln1_g: A
    ln1_b: A
    d2_w: A  # [H gs, hs]
    d2_b: A
    ln2_g: A
    ln2_b: A


@dataclass
class EncoderWeights(Generic[A]):
    qkv_w: A  # [3D + pad, E]: q, k, v, smolgen compress (zero rows up to qkv_ld)
    qkv_b: A  # zeros for the compress columns
    out_w: A
    out_b_alpha: A  # alpha * out bias (residual inside the GEMM)
    ln1_g: A
    ln1_b: A
    ffn: FfnWeights[A]
    smolgen: SmolgenWeights[A] | None


@dataclass
class PeMapEmbeddingWeights(Generic[A]):
    w: A  # [E, 112]: the plane columns only
    sqbias: A  # [64, E]: bias + the constant positional-encoding columns folded per square
    mult: A | None  # gates, transposed to [64, E]
    add: A | None


@dataclass
class PeDenseEmbeddingWeights(Generic[A]):
    w: A  # [E, 112]
    wu: A  # [E, dE]: the preproc columns (second GEMM, beta = 1)
    b: A  # applied with the activation inside the LayerNorm kernel
    pre_w: A  # [64 dE, 768]
    pre_b: A
    ln_g: A
    ln_b: A
    ffn: FfnWeights[A] | None
    zero: A | None  # zero [64, E] bias of the gate-only epilogue
    mult: A | None
    add: A | None


@dataclass
class AttentionPolicyWeights(Generic[A]):
    emb_w: A
    emb_b: A
    qk_w: A  # [2 Pd, Pe]: wq then wk (one GEMM)
    qk_b: A
    promo: A  # [4, Pd]
    gather: A  # int32 [1858]: lc0's attention-policy map


@dataclass
class FcHeadWeights(Generic[A]):
    """Value and moves-left heads: per-square embedding -> fc1 -> fc2."""

    emb_w: A
    emb_b: A
    fc1_w: A
    fc1_b: A
    fc2_w: A
    fc2_b: A


@dataclass
class ModelWeights(Generic[A]):
    embedding: PeMapEmbeddingWeights[A] | PeDenseEmbeddingWeights[A]
    encoders: list[EncoderWeights[A]]
    smolgen_w: A | None  # [64*64, gs] * log2(e), shared by every layer
    policy: AttentionPolicyWeights[A]
    value: FcHeadWeights[A]
    moves_left: FcHeadWeights[A] | None


def _ffn(
    ffn1: Dense, ffn2: Dense, ln_g: np.ndarray, ln_b: np.ndarray, alpha: float
) -> FfnWeights[np.ndarray]:
    return FfnWeights(
        w1=ffn1.w,
        b1=bias_of(ffn1),
        w2=ffn2.w,
        b2_alpha=bias_of(ffn2).astype(np.float64) * alpha,
        ln_g=ln_g,
        ln_b=ln_b,
    )


def _fc_head(emb: Dense, fc1: Dense, fc2: Dense) -> FcHeadWeights[np.ndarray]:
    return FcHeadWeights(emb.w, bias_of(emb), fc1.w, bias_of(fc1), fc2.w, bias_of(fc2))


def _embedding(
    net: Network, shape: NetShape
) -> PeMapEmbeddingWeights[np.ndarray] | PeDenseEmbeddingWeights[np.ndarray]:
    emb = net.embedding
    w = emb.dense.w.astype(np.float64)
    mult = emb.mult_gate.T if shape.gating and emb.mult_gate is not None else None
    add = emb.add_gate.T if shape.gating and emb.add_gate is not None else None
    if not shape.pe_dense:
        pe = pos_encoding_table(np.float64)
        sqbias = bias_of(emb.dense).astype(np.float64)[None, :] + pe @ w[:, PLANES:].T  # [64, E]
        return PeMapEmbeddingWeights(w=w[:, :PLANES], sqbias=sqbias, mult=mult, add=add)
    assert emb.preproc is not None and emb.ln is not None
    ffn = None
    if shape.Fe:
        assert emb.ffn1 is not None and emb.ffn2 is not None and emb.ffn_ln is not None
        ffn = _ffn(emb.ffn1, emb.ffn2, emb.ffn_ln.gamma, emb.ffn_ln.beta, net.alpha)
    return PeDenseEmbeddingWeights(
        w=w[:, :PLANES],
        wu=w[:, PLANES:],
        b=bias_of(emb.dense),
        pre_w=emb.preproc.w,
        pre_b=bias_of(emb.preproc),
        ln_g=emb.ln.gamma,
        ln_b=emb.ln.beta,
        ffn=ffn,
        zero=np.zeros((SEQ, shape.E), np.float32) if shape.gating else None,
        mult=mult,
        add=add,
    )


def _encoder(layer: EncoderLayer, shape: NetShape, alpha: float) -> EncoderWeights[np.ndarray]:
    extra = shape.qkv_ld - 3 * shape.D  # compress rows + zero rows up to the alignment
    sgc = np.zeros((extra, shape.E), np.float32)
    smolgen = None
    if shape.smolgen and layer.smolgen is not None:
        sg = layer.smolgen
        sgc[: shape.hc] = sg.compress
        smolgen = SmolgenWeights(
            d1_w=sg.dense1.w,
            d1_b=bias_of(sg.dense1),
            ln1_g=sg.ln1.gamma,
            ln1_b=sg.ln1.beta,
            d2_w=sg.dense2.w,
            d2_b=bias_of(sg.dense2),
            ln2_g=sg.ln2.gamma,
            ln2_b=sg.ln2.beta,
        )
    return EncoderWeights(
        qkv_w=np.concatenate([layer.q.w, layer.k.w, layer.v.w, sgc], axis=0),
        qkv_b=np.concatenate(
            [bias_of(layer.q), bias_of(layer.k), bias_of(layer.v), np.zeros(extra, np.float32)]
        ),
        out_w=layer.out.w,
        out_b_alpha=bias_of(layer.out).astype(np.float64) * alpha,
        ln1_g=layer.ln1.gamma,
        ln1_b=layer.ln1.beta,
        ffn=_ffn(layer.ffn1, layer.ffn2, layer.ln2.gamma, layer.ln2.beta, alpha),
        smolgen=smolgen,
    )


def pack_model(net: Network, dtype: type) -> ModelWeights[np.ndarray]:
    """Every device array of ``net``, fused/transposed, contiguous, in ``dtype`` (gather: int32)."""
    shape = net_shape(net)
    smolgen_w = None
    if shape.smolgen:
        assert net.smolgen_w is not None
        # Pre-multiplied by log2(e): every attention kernel works in the exp2 domain, so the
        # bias G they read is already G·log2(e) and costs no multiply per logit.
        smolgen_w = net.smolgen_w.astype(np.float64) * LOG2E
    v, m = net.value, net.moves_left
    model = ModelWeights(
        embedding=_embedding(net, shape),
        encoders=[_encoder(layer, shape, net.alpha) for layer in net.encoders],
        smolgen_w=smolgen_w,
        policy=attention_policy_weights(net.policy),
        value=_fc_head(v.embedding, v.fc1, v.fc2),
        moves_left=_fc_head(m.embedding, m.fc1, m.fc2) if m is not None else None,
    )
    return cast_arrays(model, dtype)


def attention_policy_weights(pol: PolicyHead) -> AttentionPolicyWeights[np.ndarray]:
    """The attention policy head's host arrays (either body): the embedding, Q and K stacked for
    one GEMM, the promotion weights and the gather into lc0's 1858 order."""
    return AttentionPolicyWeights(
        emb_w=pol.embedding.w,
        emb_b=bias_of(pol.embedding),
        qk_w=np.concatenate([pol.wq.w, pol.wk.w], axis=0),
        qk_b=np.concatenate([bias_of(pol.wq), bias_of(pol.wk)]),
        promo=pol.promotion,
        gather=np.ascontiguousarray(attention_policy_gather(), dtype=np.int32),
    )


R = TypeVar("R")


def map_arrays(record: R, fn: Callable[[Any], Any]) -> R:
    """``record`` with every leaf (an array on the host, a device pointer once uploaded) in it,
    its nested records and lists, replaced by ``fn(leaf)``; ``None`` stays ``None``. Turns a host
    record into a device one (``fn`` uploads)."""
    if isinstance(record, list):
        return [map_arrays(x, fn) for x in record]  # type: ignore[return-value]
    if record is None:
        return record
    if is_dataclass(record) and not isinstance(record, type):
        values = {f.name: map_arrays(getattr(record, f.name), fn) for f in fields(record)}
        return type(record)(**values)
    return fn(record)  # type: ignore[no-any-return]


def cast_arrays(record: R, dtype: type) -> R:
    """``record`` with every array contiguous in ``dtype``, the int32 gather tables left as they
    are: what the upload copies."""
    return map_arrays(record, lambda a: a if a.dtype == np.int32 else np.ascontiguousarray(a, dtype=dtype))


def leaves(record: object) -> list[Any]:
    """Every array (host record) or device pointer (device record) in ``record``, depth first in
    field order: the upload order."""
    found: list[Any] = []

    def keep(a: Any) -> Any:
        found.append(a)
        return a

    map_arrays(record, keep)
    return found


def arrays_of(record: object) -> list[np.ndarray]:
    """Every array of a host record, in upload order."""
    return [a for a in leaves(record) if isinstance(a, np.ndarray)]


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


def upload_record(platform: Platform, host: R, stream: int) -> tuple[Any, int, int]:
    """Copy every array of the host record ``host`` into one device allocation, in one copy on
    ``stream`` (synchronised). Returns the same record with device pointers in place of its
    arrays, the allocation's base (the caller frees it) and its size in bytes."""
    arrays = arrays_of(host)
    offsets, total = layout({str(i): a.nbytes for i, a in enumerate(arrays)})
    blob = np.zeros(total, np.uint8)
    where: dict[int, int] = {}
    for i, a in enumerate(arrays):
        off = offsets[str(i)]
        blob[off : off + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        where[id(a)] = off
    base = platform.alloc(total)
    platform.copy_h2d(base, blob, total, stream)
    platform.synchronize(stream)
    return map_arrays(host, lambda a: base + where[id(a)]), base, total


@dataclass(frozen=True)
class Buffers:
    """Device pointers of the activation buffers (one arena; 0 = not allocated for this net)."""

    in_masks: int = 0  # [B, 112] uint64
    in_values: int = 0  # [B, 112] float32
    tokens: int = 0  # [B*64, 112]
    x: int = 0  # [B*64, E] the residual stream
    x1: int = 0  # [B*64, E]
    qkv: int = 0  # [B*64, qkv_ld]
    attn: int = 0  # [B*64, D]
    ffn: int = 0  # FFN hidden; reused by the policy embedding and the embedding FFN
    pol_qk: int = 0  # [B*64, 2 Pd]
    pol_lg: int = 0  # [B, 64, 64]
    out_policy: int = 0  # [B, 1858] float32
    val_v1: int = 0
    val_v2: int = 0
    out_value: int = 0
    emb_p: int = 0  # PE_DENSE: the 12 piece planes, square-major [B, 768]
    emb_u: int = 0  # PE_DENSE: preproc output [B*64, dE]
    mlh_m1: int = 0
    mlh_m2: int = 0
    out_mlh: int = 0
    sg_c: int = 0  # smolgen compress columns [B, 64 hc]
    sg_s1: int = 0
    sg_s2: int = 0
    sg_g: int = 0  # smolgen bias [B, H, 64, 64]
    sg_pre: int = 0  # smolgen_rows / smolgen_chain: the kernels' fp32 scratch (dense outputs, compress)
    sg_count: int = 0  # smolgen_rows / _chain: u32 tickets and barrier counters, 0 between launches
    scores: int = 0  # fallback attention scores [B, H, 64, 64]
    cols: int = 0  # residual nets: im2col columns [B*64, 9C] of a 3x3 convolution
    conv: int = 0  # residual nets: a convolution's output [B*64, max(C, P)]
    pol_fc: int = 0  # residual nets, classical policy: dense output [B, 1858]
    wino_v: int = 0  # residual nets, Winograd: transformed inputs [B*4, 36, Cin] (tile-major)
    wino_m: int = 0  # residual nets, Winograd: GEMM outputs [36, B*4, Cout]
    se_stats: int = 0  # residual nets, se_gates: per-tile sums of a block's first conv [B, 16, C]
    se_hpre: int = 0  # residual nets, se_gates: SE fc1 pre-activation [B, S]
    se_gates: int = 0  # residual nets, se_gates: SE gates (sigmoid scale | shift) [B, 2C]
    fp8_x: int = 0  # FP8 path: the quantized GEMM input (e4m3 bytes)
    fp8_d: int = 0  # FP8 path: a GEMM output before its residual epilogue [B*64, E]
    fp8_partial: int = 0  # FP8 path: per-block maxima of the tensor being quantized [FP8_PARTIALS] f32
    fp8_scale: int = 0  # FP8 path: the activation's dequantization scale (f32, cuBLASLt's B scale)
    fp8_row_scale: int = 0  # FP8 path, fp8_scales=outer: per-row activation scales [B*64] f32


def plan_buffers(s: NetShape, batch: int, elem: int, fallback: bool) -> dict[str, int]:
    """Bytes of every activation buffer for ``batch`` positions (``elem`` = 2 fp16, 4 fp32), by
    ``Buffers`` field name."""
    m = batch * SEQ
    sizes = {
        "in_masks": batch * PLANES * 8,
        "in_values": batch * PLANES * 4,
        "tokens": m * PLANES * elem,
        "x": m * s.E * elem,
        "x1": m * s.E * elem,
        "qkv": m * s.qkv_ld * elem,
        "attn": m * s.D * elem,
        "ffn": m * max(s.Fd, s.Pe, s.Fe) * elem,
        "pol_qk": m * 2 * s.Pd * elem,
        "pol_lg": batch * SEQ * SEQ * elem,
        "out_policy": batch * POLICY_OUT * 4,
        "val_v1": m * s.Vc * elem,
        "val_v2": batch * s.Vh * elem,
        "out_value": batch * s.v_out * elem,
    }
    if s.mlh:  # right after out_value: one copy brings both heads to the host (GpuRunner._finish)
        sizes["out_mlh"] = batch * elem
    if s.pe_dense:
        sizes["emb_p"] = batch * SEQ * 12 * elem
        sizes["emb_u"] = m * s.dE * elem
    if s.mlh:
        sizes["mlh_m1"] = m * s.Mc * elem
        sizes["mlh_m2"] = batch * s.Mh * elem
    if s.smolgen:
        sizes["sg_c"] = m * s.hc * elem
        sizes["sg_s1"] = batch * s.hs * elem
        sizes["sg_s2"] = batch * s.H * s.gs * elem
        sizes["sg_g"] = batch * s.H * SEQ * SEQ * elem
        rows_scratch = DENSE_ROWS_MAX * max(s.hs, s.H * s.gs)
        chain_scratch = SMOLGEN_CHAIN_MAX * (SEQ * s.hc + s.hs + s.H * s.gs)
        compress_scratch = COMPRESS_ROWS_MAX * SEQ * s.hs  # compress_rows: each token's share
        sizes["sg_pre"] = max(rows_scratch, chain_scratch, compress_scratch) * 4
        sizes["sg_count"] = SMOLGEN_COUNTER_BYTES
    if fallback:
        sizes["scores"] = batch * s.H * SEQ * SEQ * elem
    if s.fp8:
        sizes["fp8_x"] = max(m * max(s.E, s.D, s.Fd), batch * s.H * s.gs)
        sizes["fp8_d"] = m * s.E * elem
        sizes["fp8_partial"] = FP8_PARTIALS * 4
        sizes["fp8_scale"] = 4
        sizes["fp8_row_scale"] = max(m, batch * s.H) * 4
    return sizes


def graph_bucket(batch: int, fine: bool = True) -> int:
    """The batch size a CUDA graph is captured for: few graphs, little padding.

    ``fine`` (``graph_buckets=fine``, the default): exact up to 8, then steps of 2 to 16, 4 to 32,
    8 to 64 and 16 to 256 (at most ~1/5 of a bucket is padding, ~1/16 on average), then multiples
    of 64: 32 graphs up to 256. A padded row costs its full share of the pass (T82 on an H200:
    ~0.02 ms a position over a ~0.9 ms floor), and the search's network batches are mostly 16-64
    positions (T82 median 43, docs/performance.md §4).
    ``coarse`` (``graph_buckets=coarse``): powers of two up to 16, multiples of 16 up to 256, then
    multiples of 64 (20 graphs up to 256; up to 47 % padding at 17-64 positions).
    """
    if batch <= 0:
        raise ValueError("batch must be positive")
    if batch > 256:
        return (batch + 63) // 64 * 64
    if fine:
        step = min(16, 1 << max(0, (batch - 1).bit_length() - 3))
        return (batch + step - 1) // step * step
    if batch <= 16:
        return 1 << (batch - 1).bit_length()
    return (batch + 15) // 16 * 16
