"""The residual FP8 path's arithmetic in numpy: what ``cuda-fp8`` computes on a residual body.

``lc0py.model.residual``'s forward pass with the tower's convolutions (input, both of every block)
as the FP8 path runs them (fp8_residual.py), everything else the float32 reference:

* im2col: ``conv(fake_quantize(x), dequantized W)`` -- the device quantizes the im2col columns,
  whose maximum and codes are ``x``'s own (copies and zeros);
* Winograd F(4x4,3x3): the input transform ``V = Bᵀ d B`` of the fp16 activations, stored in fp16,
  quantized per tensor over the whole batch (as ``fp8_amax``/``fp8_quantize`` over ``wino_v``),
  times the dequantized ``U = G g Gᵀ`` (fp16 as uploaded, e4m3 per channel shared by the 36
  elements, or per tensor), ``M`` stored in fp16, then ``Y = Aᵀ M A + b``;
* a convolution whose shape FP8 cannot take (``conv_fp8_problem``; with Winograd, a batch whose
  ``4·B`` tiles are not a multiple of 16, ``winograd_batch_fp8``) is fp16-rounded, as the device
  runs it in fp16.

Like ``fp8_emulation.py`` this is the oracle the device is held to (``lc0py verify --backend
cuda-fp8``): it differs from the device by summation order and fp16 storage of intermediate
activations, far less than FP8's own error, while a wrong scale or layout is far off it.
"""

from __future__ import annotations

import numpy as np

from lc0py.backends.gpu.fp8_calibration import Fp8Calibration
from lc0py.backends.gpu.fp8_emulation import fake_quantize
from lc0py.backends.gpu.fp8_quant import Fp8Weight
from lc0py.backends.gpu.fp8_residual import (
    calibration_applies,
    conv_fp8_problem,
    dequantized_conv,
    winograd_batch_fp8,
)
from lc0py.backends.gpu.weights_residual import WINOGRAD_G, conv_matrix, winograd_filter
from lc0py.model.activations import activation
from lc0py.model.heads import ForwardOutput
from lc0py.model.residual import moves_left_head, policy_head, squeeze_excite, value_head
from lc0py.weights.network import Activation
from lc0py.weights.residual import Conv, ResidualNetwork

#: Winograd F(4x4,3x3) input and output transforms (kernels/residual.hip gives the same rows)
WINOGRAD_BT = np.array(
    [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
     [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64
)
WINOGRAD_AT = np.array(
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64
)


def _fp16(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def winograd_input_transform(x: np.ndarray) -> np.ndarray:
    """``x [B, C, 8, 8]`` -> ``V [B, C, 2, 2, 6, 6]``: each 4x4 tile's 6x6 patch (zeros off the
    board), transformed ``Bᵀ d B``."""
    xp = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    d = np.stack([np.stack([xp[:, :, 4 * ty : 4 * ty + 6, 4 * tx : 4 * tx + 6] for tx in (0, 1)], axis=2)
                  for ty in (0, 1)], axis=2)  # [B, C, ty, tx, 6, 6]
    return np.einsum("ip,nctupq,jq->nctuij", WINOGRAD_BT, d, WINOGRAD_BT)


def winograd_output_transform(m: np.ndarray) -> np.ndarray:
    """``M [B, O, 2, 2, 6, 6]`` -> ``Y [B, O, 8, 8]`` (``Aᵀ M A`` per tile, tiles placed)."""
    y = np.einsum("ip,notupq,jq->notuij", WINOGRAD_AT, m, WINOGRAD_AT)  # [B, O, ty, tx, 4, 4]
    return y.transpose(0, 1, 2, 4, 3, 5).reshape(m.shape[0], m.shape[1], 8, 8)


def winograd_conv(x: np.ndarray, u: np.ndarray, quantize: bool) -> np.ndarray:
    """The Winograd convolution of ``x [B, Cin, 8, 8]`` by ``u [36, Cout, Cin]`` (no bias);
    ``quantize``: V through fp16 storage and the per-tensor FP8 quantization, M through fp16."""
    v = winograd_input_transform(x)
    if quantize:
        v = fake_quantize(v.astype(np.float32)).astype(np.float64)
    b, c = v.shape[:2]
    u6 = np.asarray(u, np.float64).reshape(6, 6, u.shape[1], u.shape[2])
    m = np.einsum("nctuij,ijoc->notuij", v, u6)
    if quantize:
        m = _fp16(m).astype(np.float64)
    return winograd_output_transform(m)


def fp8_conv(x: np.ndarray, conv: Conv, per_channel: bool, winograd: bool, fp8: bool = True,
             calibrated: Fp8Weight | None = None) -> np.ndarray:
    """One tower convolution as the FP8 path computes it (+ bias), float32 ``[B, Cout, 8, 8]``;
    ``fp8`` False: as the fp16 path does (fp16 operands); ``calibrated``: its calibrated codes
    (im2col, per channel: ``calibration_applies``) instead of round-to-nearest ones."""
    x16 = _fp16(x)
    c_in, c_out = int(conv.w.shape[1]), int(conv.w.shape[0])
    b = np.asarray(conv.b, np.float64)[None, :, None, None]
    fp8 = fp8 and not conv_fp8_problem(c_in, c_out, winograd)
    if winograd:
        fp8 = fp8 and winograd_batch_fp8(x.shape[0])
        u = winograd_filter(conv).astype(np.float16).astype(np.float64)
        if fp8:
            u = dequantized_conv(u, per_channel)
        return (winograd_conv(x16, u, quantize=fp8) + b).astype(np.float32)
    w = conv_matrix(conv).astype(np.float16).astype(np.float64)  # [Cout, 9Cin], tap-major
    xin = x16
    if fp8:
        w = dequantized_conv(w, per_channel, calibrated if calibration_applies(per_channel, False) else None)
        xin = fake_quantize(x16)
    w4 = w.reshape(c_out, 3, 3, c_in).transpose(0, 3, 1, 2)
    xp = np.pad(np.asarray(xin, np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = sum(np.einsum("bchw,oc->bohw", xp[:, :, dr : dr + 8, df : df + 8], w4[:, :, dr, df])
            for dr in range(3) for df in range(3))
    return (y + b).astype(np.float32)


def fp8_residual_forward(
    network: ResidualNetwork, planes: np.ndarray, per_channel: bool = True, winograd: bool = False,
    convs: frozenset[int] | None = None, calibration: Fp8Calibration | None = None,
) -> ForwardOutput:
    """The residual FP8 path's outputs for ``planes [B, 112, 8, 8]`` (one batch: activation scales
    per batch, as on the device); ``per_channel``: ``fp8_scales=channel`` or ``tensor``;
    ``winograd``: the device runs its 3x3 convolutions as Winograd (its ``ResidualShape``);
    ``convs``: the tower convolutions in FP8 by index (0 the input one, then 2i+1 and 2i+2 block
    i's; None: all), the others fp16 -- an ablation; ``calibration``: the calibrated codes the
    device uploads (``fp8_calibration.find_calibration``; used where ``calibration_applies``)."""
    act = network.default_act
    count = iter(range(1 + 2 * network.num_blocks))

    def conv_act(x: np.ndarray, conv: Conv, a: Activation) -> np.ndarray:
        i = next(count)
        cal = calibration.weights[i] if calibration is not None else None
        y = fp8_conv(x, conv, per_channel, winograd, convs is None or i in convs, cal)
        return activation(a, y) if a != Activation.NONE else y

    h = conv_act(np.asarray(planes, np.float32), network.input, act)
    for block in network.blocks:
        h1 = conv_act(h, block.conv1, act)
        y = conv_act(h1, block.conv2, Activation.NONE)
        if block.se is not None:
            scale, bias = squeeze_excite(y, block.se, act)
            y = scale * y + bias
        h = activation(act, y + h).astype(np.float32)
    policy = policy_head(network, h)
    wdl = value_head(network, network.value, h)
    if network.moves_left is not None:
        mlh = moves_left_head(network, network.moves_left, h)
    else:
        mlh = np.zeros(h.shape[0], np.float32)
    return ForwardOutput(policy=policy, wdl=wdl, moves_left=mlh)


__all__ = ["WINOGRAD_G", "fp8_conv", "fp8_residual_forward", "winograd_conv"]
