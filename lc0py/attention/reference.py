"""The numpy (CPU) implementation of ``lc0py.attention`` -- the reference the GPU paths are
tested against -- and the argument checks every implementation shares.

Semantics (all implementations): ``O[b, h] = softmax(Q[b, h] K[b, h // g]^T * scale + bias[b, h]
+ M[b, h]) V[b, h // g]`` with ``g = heads / kv_heads`` (grouped-query attention; ``kv_heads = 1``
is multi-query), ``M = 0`` where ``mask`` is True and ``-inf`` elsewhere, causal masking top-left
aligned (query row ``i`` sees keys ``j <= i``, as PyTorch's ``is_causal``), and a row that sees no
key at all gives 0 (not NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.errors import UsageError

LAYOUTS = ("interleaved", "bhsd")


@dataclass(frozen=True)
class Shape:
    """Sizes of one call: batch, query / K-V heads, query / key lengths, head depth."""

    batch: int
    heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    depth: int

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads


def attention_shape(
    q_shape: tuple[int, ...],
    k_shape: tuple[int, ...],
    v_shape: tuple[int, ...],
    layout: str,
    heads: int | None,
) -> Shape:
    """Validate the shapes of one call and return its sizes.

    ``bhsd``: Q ``[B, H, Lq, d]``, K/V ``[B, Hkv, Lk, d]``. ``interleaved`` (lc0's layout): Q
    ``[B, Lq, H*d]``, K/V ``[B, Lk, Hkv*d]`` with ``heads = H`` given (the last axis alone does not
    say how it splits).
    """
    if layout not in LAYOUTS:
        raise UsageError(f"layout '{layout}': unknown (available: {', '.join(LAYOUTS)})")
    if len(q_shape) != (4 if layout == "bhsd" else 3):
        raise UsageError(
            f"q has shape {q_shape}: layout '{layout}' wants {'4' if layout == 'bhsd' else '3'} axes"
        )
    if k_shape != v_shape:
        raise UsageError(f"k {k_shape} and v {v_shape} must have the same shape")
    if len(k_shape) != len(q_shape) or k_shape[0] != q_shape[0]:
        raise UsageError(f"k {k_shape} does not match q {q_shape} (batch, axes)")
    if layout == "bhsd":
        b, h, lq, d = q_shape
        _, hk, lk, dk = k_shape
        if heads is not None and heads != h:
            raise UsageError(f"heads={heads} but q has {h} heads")
        if dk != d:
            raise UsageError(f"k depth {dk} != q depth {d}")
    else:
        if heads is None or heads < 1:
            raise UsageError("layout 'interleaved' needs heads=H (q is [B, Lq, H*d])")
        b, lq, hd = q_shape
        _, lk, hkd = k_shape
        if hd % heads:
            raise UsageError(f"q width {hd} is not a multiple of heads={heads}")
        h, d = heads, hd // heads
        if hkd % d:
            raise UsageError(f"k width {hkd} is not a multiple of the head depth {d}")
        hk = hkd // d
    if hk < 1 or h % hk:
        raise UsageError(f"{h} query heads are not a multiple of {hk} K/V heads")
    if min(b, lq, lk, d) < 1:
        raise UsageError(f"empty attention: batch {b}, q_len {lq}, kv_len {lk}, depth {d}")
    return Shape(b, h, hk, lq, lk, d)


def bias_shape(shape: tuple[int, ...], s: Shape, what: str) -> tuple[int, int]:
    """``(Bb, Hb)`` of a bias / mask of ``shape``: ``[Lq, Lk]`` or ``[B|1, H|1, Lq, Lk]``."""
    if len(shape) == 2 and shape == (s.q_len, s.kv_len):
        return 1, 1
    if (
        len(shape) == 4
        and shape[2:] == (s.q_len, s.kv_len)
        and shape[0] in (1, s.batch)
        and shape[1] in (1, s.heads)
    ):
        return shape[0], shape[1]
    raise UsageError(
        f"{what} has shape {shape}: want [Lq, Lk] or [B|1, H|1, Lq, Lk] with Lq={s.q_len}, Lk={s.kv_len}"
    )


def to_bhsd(x: np.ndarray, layout: str, heads: int) -> np.ndarray:
    """``[B, L, H*d]`` -> ``[B, H, L, d]`` view (bhsd stays)."""
    if layout == "bhsd":
        return x
    b, n, hd = x.shape
    return x.reshape(b, n, heads, hd // heads).transpose(0, 2, 1, 3)


def combined_bias(bias: Any, mask: Any, s: Shape) -> np.ndarray | None:
    """``bias`` plus ``0 / -inf`` for ``mask`` (True = attend) as one float32 ``[Bb, Hb, Lq, Lk]``
    array (broadcast axes kept at 1), or ``None`` when there is neither."""
    out: np.ndarray | None = None
    if bias is not None:
        b = np.asarray(bias, dtype=np.float32)
        bb, hb = bias_shape(b.shape, s, "bias")
        out = b.reshape(bb, hb, s.q_len, s.kv_len)
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype != np.bool_:
            raise UsageError(f"mask must be boolean (True = attend), not {m.dtype}")
        mb, mh = bias_shape(m.shape, s, "mask")
        add = np.where(m.reshape(mb, mh, s.q_len, s.kv_len), np.float32(0), np.float32(-np.inf))
        out = add if out is None else out + add  # broadcasts to the larger of the two
    return out


def attention_numpy(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    layout: str = "interleaved",
    heads: int | None = None,
    bias: np.ndarray | None = None,
    causal: bool = False,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    dtype: Any = np.float32,
) -> np.ndarray:
    """Attention on the CPU in ``dtype`` (float32 or float64); result in ``layout``, ``dtype``.

    Works one (batch, head) at a time, so memory is one ``Lq x Lk`` score matrix.
    """
    s = attention_shape(q.shape, k.shape, v.shape, layout, heads)
    scale = 1.0 / math.sqrt(s.depth) if scale is None else float(scale)
    qh, kh, vh = (to_bhsd(np.asarray(x), layout, s.heads if x is q else s.kv_heads) for x in (q, k, v))
    g = combined_bias(bias, mask, s)
    out = np.empty((s.batch, s.heads, s.q_len, s.depth), dtype)
    allowed = np.tril(np.ones((s.q_len, s.kv_len), bool)) if causal else None
    for b in range(s.batch):
        for h in range(s.heads):
            hk = h // s.group
            x = (qh[b, h].astype(dtype) @ kh[b, hk].astype(dtype).T) * dtype(scale)
            if g is not None:
                x = x + g[b % g.shape[0], h % g.shape[1]].astype(dtype)
            if allowed is not None:
                x = np.where(allowed, x, -np.inf)
            m = x.max(axis=1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)  # a fully masked row: every p is 0
            p = np.exp(x - m)
            den = p.sum(axis=1, keepdims=True)
            p = p / np.where(den > 0, den, 1)
            out[b, h] = p @ vh[b, hk].astype(dtype)
    if layout == "bhsd":
        return out
    return np.ascontiguousarray(out.transpose(0, 2, 1, 3)).reshape(s.batch, s.q_len, s.heads * s.depth)
