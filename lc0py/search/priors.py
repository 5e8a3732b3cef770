"""Policy priors as lc0 stores them: softmax with temperature over legal moves, 16-bit P.

Vectorised over a whole minibatch: the logits of every leaf's legal moves are gathered into one
flat array with segment offsets, so the softmax, the 16-bit rounding (docs/search.md §8) and
the descending sort cost a handful of numpy calls per batch instead of per leaf.
"""

from __future__ import annotations

import numpy as np

from lc0py.search.fastmath import fast_exp_array

_OFFSET = np.int64((1 << 11) - 3 * (1 << 28))
_DECODE_OR = np.int64(3 << 28)


def quantize_priors(p: np.ndarray) -> np.ndarray:
    """Round float priors to lc0's 16-bit code and decode back (``Edge::SetP``/``GetP``)."""
    bits = np.asarray(p, dtype=np.float32).view(np.int32).astype(np.int64) + _OFFSET
    code = np.where(bits < 0, 0, (bits >> 12) & 0xFFFF)
    return ((code << 12) | _DECODE_OR).astype(np.int32).view(np.float32)


def segment_priors(
    logits: np.ndarray, counts: np.ndarray, temperature: float, fast_math: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Softmax per segment of ``logits`` (segment ``k`` has ``counts[k] >= 1`` entries).

    Returns ``(p, order)``: quantised priors (float32, input order) and, per segment, the
    permutation (global indices) that sorts it by descending P (stable: python-chess order on ties).
    """
    logits = np.asarray(logits, dtype=np.float32)
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    seg = np.repeat(np.arange(len(counts)), counts)
    zmax = np.maximum.reduceat(logits, starts)
    x = (logits - zmax[seg]) * np.float32(1.0 / temperature)
    e = fast_exp_array(x) if fast_math else np.exp(x, dtype=np.float32)
    inv = np.float32(1.0) / np.add.reduceat(e, starts)
    p = quantize_priors(e * inv[seg])
    order = np.lexsort((-p, seg))
    return p, order
