"""The attention policy head as the GPU backend computes it, in numpy float64, for the packing tests.

Shared by the attention-body and residual-body packing tests: both bodies end in the same head
(Q|K projection of the policy embedding, scaled QKᵀ, promotion offsets, lc0's 1858 gather).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def attention_policy(pe: np.ndarray, pol: Any, pd: int) -> np.ndarray:
    """``[B, 1858]`` policy logits from the activated policy embedding ``pe [B, 64, Pe]`` and the
    packed ``AttentionPolicyWeights`` ``pol`` (host arrays) with ``pd`` policy dimensions."""
    bsz = pe.shape[0]
    qk = pe @ pol.qk_w.T + pol.qk_b
    qp, kp = qk[..., :pd], qk[..., pd:]
    lg = (qp @ kp.transpose(0, 2, 1) / np.sqrt(pd)).reshape(bsz, 4096)
    off = kp[:, 56:64] @ pol.promo.T  # [B, 8, 4]
    out = np.empty((bsz, 1858))
    for k, idx in enumerate(pol.gather):
        if idx < 4096:
            out[:, k] = lg[:, idx]
        else:
            r = idx - 4096
            i, j, rr = r // 24, (r % 24) // 3, r % 3
            out[:, k] = lg[:, (48 + i) * 64 + 56 + j] + off[:, j, rr] + off[:, j, 3]
    return out
