"""``lc0py.attention``: scaled dot-product attention as a library operator (the kernel library's
view of the chess net's attention kernel).

    from lc0py.attention import attention
    o = attention(q, k, v, layout="bhsd", causal=True)             # numpy in, numpy out (CPU)
    o = attention(q, k, v, layout="bhsd", impl="flash")            # numpy in, run on the GPU
    eng = GpuAttention(); dq = eng.to_device(q) ...                # device arrays in and out
    o = attention(dq, dk, dv, layout="bhsd", bias=b, engine=eng)   # -> DeviceArray

Layouts: ``"interleaved"`` (lc0's ``[B, L, H*d]`` rows; give ``heads=H``) and ``"bhsd"``
(``[B, H, L, d]``). Any lengths (query and key lengths may differ), head depth any multiple of 16
up to 256 on the GPU (any depth on the CPU), causal masking (top-left: row ``i`` sees keys
``j <= i``), an additive ``bias`` and/or a boolean ``mask`` (True = attend), each ``[Lq, Lk]`` or
``[B|1, H|1, Lq, Lk]``, and grouped-query / multi-query attention (K/V with fewer heads than Q:
query head ``h`` uses K/V head ``h // (H / Hkv)``). A row that may see no key gives 0.

Implementations (``impl``): ``"numpy"`` (CPU reference, float32), ``"naive"`` (GPU: GEMM, row
softmax, GEMM; the ``[B, H, Lq, Lk]`` scores are materialised) and ``"flash"`` (GPU: the fused
kernel of ``kernels/flash_attention.hip``, O(L) memory: K/V streamed through shared memory). GPU
paths store fp16 and accumulate in fp32. Importing this package imports no vendor package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from lc0py.attention.reference import LAYOUTS, attention_numpy, attention_shape
from lc0py.errors import UsageError

if TYPE_CHECKING:
    from lc0py.attention.gpu import DeviceArray, GpuAttention

IMPLEMENTATIONS = ("numpy", "naive", "flash")
__all__ = ["IMPLEMENTATIONS", "LAYOUTS", "attention", "attention_numpy", "attention_shape", "default_engine"]

_engine: GpuAttention | None = None


def default_engine() -> GpuAttention:
    """The process-wide ``GpuAttention`` (first GPU found), created on first use."""
    global _engine
    if _engine is None:
        from lc0py.attention.gpu import GpuAttention

        _engine = GpuAttention()
    return _engine


def attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    layout: str = "interleaved",
    heads: int | None = None,
    bias: Any = None,
    causal: bool = False,
    mask: Any = None,
    scale: float | None = None,
    impl: str | None = None,
    engine: GpuAttention | None = None,
    out: DeviceArray | None = None,
) -> np.ndarray | DeviceArray:
    """``softmax(Q K^T * scale + bias + mask) V`` per (batch, head); see the module docstring.

    ``scale`` defaults to ``1 / sqrt(depth)``. With device arrays the result is a device array
    (``impl`` "flash" by default, or "naive"); with numpy arrays it is a numpy array (``impl``
    "numpy" by default; "flash" / "naive" upload, run on the GPU and copy the result back).
    ``out``: a device array to write into (device inputs only).
    """
    on_device = type(q).__name__ == "DeviceArray"
    impl = impl or ("flash" if on_device else "numpy")
    if impl not in IMPLEMENTATIONS:
        raise UsageError(f"impl '{impl}': unknown (available: {', '.join(IMPLEMENTATIONS)})")
    if impl == "numpy":
        if on_device:
            raise UsageError("impl 'numpy' needs numpy arrays (call .numpy() on device arrays first)")
        return attention_numpy(
            q, k, v, layout=layout, heads=heads, bias=bias, causal=causal, mask=mask, scale=scale
        )
    eng = engine or default_engine()
    kw = dict(impl=impl, layout=layout, heads=heads, bias=bias, causal=causal, mask=mask, scale=scale)
    if on_device:
        return eng.attention(q, k, v, out=out, **kw)  # type: ignore[arg-type]
    if out is not None:
        raise UsageError("out= is for device arrays; numpy inputs return a new numpy array")
    attention_shape(np.shape(q), np.shape(k), np.shape(v), layout, heads)  # fail before uploading
    dq, dk, dv = (eng.to_device(x) for x in (q, k, v))
    try:
        with eng.attention(dq, dk, dv, **kw) as out:  # type: ignore[arg-type]
            return out.numpy().astype(np.result_type(q, np.float32))
    finally:
        for x in (dq, dk, dv):
            x.free()
