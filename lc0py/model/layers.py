"""Building blocks of the reference forward pass, reusable by other backends' tests.

All functions are plain numpy, vectorised over leading (batch) axes, and compute in the dtype of
their input ``x`` (weights are cast to it). Shapes: ``B`` batch, ``T = 64`` tokens (squares),
``E`` embedding, ``H`` heads, ``d`` head depth.
"""

from __future__ import annotations

import numpy as np

from lc0py.model.activations import activation
from lc0py.weights.network import Activation, Dense, LayerNorm


def cast(a: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """``a`` as ``dtype`` without a copy when it already is."""
    return np.asarray(a).astype(dtype, copy=False)


def matmul_t(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w.T`` for ``x [..., in]`` and ``w [out, in]`` as one 2-D GEMM (BLAS) -> ``[..., out]``."""
    lead = x.shape[:-1]
    y = x.reshape(-1, x.shape[-1]) @ cast(w, x.dtype).T
    return y.reshape(*lead, w.shape[0])


def dense(x: np.ndarray, layer: Dense, act: Activation = Activation.NONE) -> np.ndarray:
    """``act(x @ w.T + b)``; ``x [..., in]`` -> ``[..., out]``.

    As lc0's blas ``FullyConnectedLayer``: when the layer has no bias (``layer.b is None``) the
    result is the plain product, with neither bias nor activation (docs/attention-body.md §4.6).
    """
    y = matmul_t(x, layer.w)
    if layer.b is None:
        return y
    y = y + cast(layer.b, x.dtype)
    return activation(act, y) if act != Activation.NONE else y


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis with the biased variance: ``(x-mu)/sqrt(var+eps)*gamma+beta``."""
    mu = x.mean(axis=-1, keepdims=True)
    c = x - mu
    var = (c * c).mean(axis=-1, keepdims=True)
    return c / np.sqrt(var + x.dtype.type(eps)) * cast(gamma, x.dtype) + cast(beta, x.dtype)


def apply_layer_norm(x: np.ndarray, ln: LayerNorm) -> np.ndarray:
    """``layer_norm`` with a ``LayerNorm`` record (its own eps)."""
    return layer_norm(x, ln.gamma, ln.beta, ln.eps)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically safe softmax (row max subtracted first, as lc0 does)."""
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """``[B, T, H*d]`` (head ``h`` owns columns ``h*d .. h*d+d-1``) -> ``[B, H, T, d]``."""
    b, t, dm = x.shape
    return x.reshape(b, t, heads, dm // heads).transpose(0, 2, 1, 3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``[B, H, T, d]`` -> ``[B, T, H*d]`` (inverse of ``split_heads``)."""
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def attention_reference(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None, heads: int
) -> np.ndarray:
    """Multi-head attention core on the interleaved layout (docs/attention-body.md §4.2).

    ``q, k, v``: ``[B, 64, H*d]``; ``bias``: ``[B, H, 64, 64]`` (smolgen, added after the
    ``1/sqrt(d)`` scale and before the softmax over keys) or ``None``. Returns ``O [B, 64, H*d]``
    (heads concatenated, before the output projection). No masking.
    """
    return merge_heads(attention_probabilities(q, k, bias, heads) @ split_heads(v, heads))


def attention_probabilities(q: np.ndarray, k: np.ndarray, bias: np.ndarray | None, heads: int) -> np.ndarray:
    """The attention weights of ``attention_reference``: ``[B, H, 64 queries, 64 keys]``, rows sum to 1.

    ``softmax(q_h k_h^T / sqrt(d) + bias_h)`` per head ``h`` (what ``lc0py.Net.trace`` shows).
    """
    qh, kh = split_heads(q, heads), split_heads(k, heads)
    scores = (qh @ kh.transpose(0, 1, 3, 2)) / np.sqrt(q.dtype.type(qh.shape[-1]))
    if bias is not None:
        scores = scores + cast(bias, q.dtype)
    return softmax(scores, axis=-1)
