"""The FP8 path's arithmetic in numpy: what ``cuda-fp8`` computes, without a GPU.

The attention-body forward pass of ``lc0py.model`` with the FP8 GEMMs of ``fp8.py`` put in: each
of QKV (+ smolgen compress), the output projection, FFN1, FFN2 and the smolgen generator
multiplies the per-tensor e4m3 quantization of its input (scale from the whole batch, as the
device's ``fp8_amax``/``fp8_quantize``), or per row with ``per_row`` (``fp8_scales=outer``, cuda-fp8's
default: ``fake_quantize_rows``, the codes that ``fp8_quantize_rows`` and the fused LayerNorm / FFN1
kernels of ``fp8_fuse`` write alike), by the dequantized e4m3 weight (per-channel or per-tensor
scales, ``fp8_quant``); everything else is the float32 reference. The device also stores its
activations in fp16 and sums in another order; the inputs to each quantization are rounded to
fp16 here too, so the two differ by those orders and by the rare e4m3 code a last-bit difference
moves -- far less than FP8's own error.

Uses: the CPU estimate of FP8's accuracy on a net (``scripts/compare/fp8_cpu_estimate.py``,
tests), and on a device the oracle that ``cuda-fp8`` is checked against (``fp8_accuracy.py``): a
wrong scale or layout shows as a large error against this, where against float64 it would hide
in FP8's own few percent.

Residual (SE-ResNet) bodies: ``fp8_residual_emulation.fp8_residual_forward`` (the tower's
convolutions in FP8, im2col or Winograd), which ``verify`` and ``fp8_accuracy.py`` call for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lc0py.backends.gpu.fp8_quant import (
    E4M3_MAX,
    e4m3_decode,
    e4m3_encode,
    quantize_activation,
    quantize_per_channel,
    quantize_per_tensor,
)
from lc0py.model.attention_body import (
    embed,
    moves_left_head,
    planes_to_tokens,
    policy_head,
    value_head,
)
from lc0py.model.heads import ForwardOutput
from lc0py.model.layers import apply_layer_norm, attention_reference, dense
from lc0py.weights.network import Activation, Dense, EncoderLayer, Network

LOG2E = 1.4426950408889634
#: The FP8 GEMMs of an encoder layer, by name (``fp8_forward(gemms=...)`` picks a subset: the
#: ablation that shows which of them costs the most accuracy)
FP8_GEMMS = frozenset({"qkv", "out", "ffn1", "ffn2", "smolgen"})


def fake_quantize(a: np.ndarray) -> np.ndarray:
    """``a`` as the FP8 GEMM sees it: stored in fp16, quantized per tensor, dequantized (float32)."""
    a16 = np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
    q, scale = quantize_activation(a16.reshape(-1))
    return (e4m3_decode(q) * np.float32(scale)).reshape(a.shape)


def fake_quantize_rows(a: np.ndarray) -> np.ndarray:
    """``fake_quantize`` with one scale per row (the last axis), as ``fp8_quantize_rows``."""
    a16 = np.asarray(a, np.float32).astype(np.float16).astype(np.float32)
    rows = a16.reshape(-1, a16.shape[-1])
    amax = np.abs(rows).max(axis=1)
    inv = np.where(amax > 0, np.float32(E4M3_MAX) / np.maximum(amax, np.float32(1e-30)), np.float32(1.0))
    scale = np.where(amax > 0, amax / np.float32(E4M3_MAX), np.float32(1.0)).astype(np.float32)
    q = e4m3_encode((rows * inv[:, None].astype(np.float32)).astype(np.float32))
    return (e4m3_decode(q) * scale[:, None]).reshape(a.shape).astype(np.float32)


def _fp16(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to fp16 (as the fp16 path stores it), in float32."""
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def _dequantized(w: np.ndarray, per_channel: bool, fp8: bool = True) -> np.ndarray:
    """The weight the FP8 GEMM multiplies by: fp16 (as uploaded), quantized, dequantized (``fp8``
    False: the fp16 weight, for a GEMM left out of FP8)."""
    if not fp8:
        return _fp16(w)
    w16 = np.asarray(w, np.float32).astype(np.float16).astype(np.float64)
    fw = quantize_per_channel(w16) if per_channel else quantize_per_tensor(w16)
    return fw.dequantize().astype(np.float32)


def _bias(d: Dense) -> np.ndarray:
    return d.b if d.b is not None else np.zeros(d.w.shape[0], np.float32)


@dataclass(frozen=True)
class _Fp8Layer:
    qkvc: np.ndarray  # [3D + hc, E] dequantized
    out: np.ndarray
    ffn1: np.ndarray
    ffn2: np.ndarray


def _fp8_layer(layer: EncoderLayer, per_channel: bool, gemms: frozenset[str] = FP8_GEMMS) -> _Fp8Layer:
    parts = [layer.q.w, layer.k.w, layer.v.w]
    if layer.smolgen is not None:
        parts.append(layer.smolgen.compress)
    # QKV and compress are one matrix on the device: per-channel floors see all of it
    qkvc = _dequantized(np.concatenate(parts, axis=0), per_channel, "qkv" in gemms)
    return _Fp8Layer(
        qkvc,
        _dequantized(layer.out.w, per_channel, "out" in gemms),
        _dequantized(layer.ffn1.w, per_channel, "ffn1" in gemms),
        _dequantized(layer.ffn2.w, per_channel, "ffn2" in gemms),
    )


def _encoder(network: Network, layer: EncoderLayer, w8: _Fp8Layer, sg_w: np.ndarray | None,
             x: np.ndarray, gemms: frozenset[str] = FP8_GEMMS, per_row: bool = False) -> np.ndarray:
    b, d = x.shape[0], network.d_model
    alpha = np.float32(network.alpha)

    def fq(name: str, a: np.ndarray) -> np.ndarray:
        if name not in gemms:
            return _fp16(a)
        return fake_quantize_rows(a) if per_row and name != "smolgen" else fake_quantize(a)

    qkvc = fq("qkv", x) @ w8.qkvc.T  # [B, 64, 3D + hc]
    q = qkvc[..., :d] + _bias(layer.q)
    k = qkvc[..., d : 2 * d] + _bias(layer.k)
    v = qkvc[..., 2 * d : 3 * d] + _bias(layer.v)
    bias = None
    sg = layer.smolgen
    if sg is not None and sg_w is not None:
        c = qkvc[..., 3 * d :].reshape(b, -1)
        g1 = apply_layer_norm(dense(c, sg.dense1, network.smolgen_act), sg.ln1)
        g2 = apply_layer_norm(dense(g1, sg.dense2, network.smolgen_act), sg.ln2)
        g2 = g2.reshape(b, network.heads, -1)
        bias = (fq("smolgen", g2) @ sg_w.T).reshape(b, network.heads, 64, 64)
    o = attention_reference(q, k, v, bias, network.heads)
    y = fq("out", o) @ w8.out.T + _bias(layer.out)
    x1 = apply_layer_norm(x + alpha * y, layer.ln1)
    h = fq("ffn1", x1) @ w8.ffn1.T + _bias(layer.ffn1)
    if layer.ffn1.b is not None and network.ffn_act != Activation.NONE:
        from lc0py.model.activations import activation

        h = activation(network.ffn_act, h)
    f = fq("ffn2", h) @ w8.ffn2.T + _bias(layer.ffn2)
    return apply_layer_norm(x1 + alpha * f, layer.ln2)


def fp8_forward(
    network: Network, planes: np.ndarray, per_channel: bool = True, gemms: frozenset[str] = FP8_GEMMS,
    per_row: bool = False,
) -> ForwardOutput:
    """The FP8 path's outputs for ``planes [B, 112, 8, 8]`` (one batch: the activation scales are
    per batch, as on the device); ``per_channel``: ``fp8_scales=channel`` (default) or ``tensor``;
    ``per_row``: activations scaled per row (``fp8_scales=outer``, with ``per_channel``; the
    smolgen generator stays per tensor); ``gemms``: which of ``FP8_GEMMS`` run in FP8 (the others
    take fp16-rounded operands: an ablation; the device runs them all)."""
    x = planes_to_tokens(planes, np.float32)
    h = embed(network, x)
    if (x.shape[0] * network.heads) % 16:  # the device runs this generator GEMM in fp16 (fp8.py)
        gemms = gemms - {"smolgen"}
    sg_w = None
    if network.smolgen_w is not None:  # per tensor, pre-scaled by log2 e on the device
        scaled = np.asarray(network.smolgen_w, np.float64) * LOG2E
        sg_w = _dequantized(scaled, False, "smolgen" in gemms) / np.float32(LOG2E)
    for layer in network.encoders:
        h = _encoder(network, layer, _fp8_layer(layer, per_channel, gemms), sg_w, h, gemms, per_row)
    policy = policy_head(network, network.policy, h)
    wdl = value_head(network, network.value, h)
    if network.moves_left is not None:
        mlh = moves_left_head(network, network.moves_left, h)
    else:
        mlh = np.zeros(x.shape[0], np.float32)
    return ForwardOutput(policy=policy, wdl=wdl, moves_left=mlh)
