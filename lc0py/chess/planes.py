"""The compact form of encoded positions that backends receive: ``PlanesBatch``.

Each of lc0's 112 input planes is a 64-bit square mask and one float (12 bytes a plane instead of
256). The encoding (``encoding.py``) fills them; backends expand them where they compute
(``PlanesBatch.dense`` on the host, the GPU backends on the device).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NUM_PLANES = 112


@dataclass
class PlanesBatch:
    """``masks``: ``[B, 112]`` uint64 (bit ``s`` = square ``s``); ``values``: ``[B, 112]`` float32."""

    masks: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        self.masks = np.ascontiguousarray(self.masks, dtype=np.uint64).reshape(-1, NUM_PLANES)
        self.values = np.ascontiguousarray(self.values, dtype=np.float32).reshape(-1, NUM_PLANES)
        if self.masks.shape != self.values.shape:
            raise ValueError(f"masks {self.masks.shape} and values {self.values.shape} differ")

    def __len__(self) -> int:
        return int(self.masks.shape[0])

    def dense(self, dtype: type = np.float32) -> np.ndarray:
        """The network input ``[B, 112, 8, 8]``: ``values`` where the mask bit is set, else 0."""
        bits = (self.masks[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
        out = bits.astype(dtype) * self.values[:, :, None].astype(dtype)
        return out.reshape(len(self), NUM_PLANES, 8, 8)

    @staticmethod
    def concat(batches: list[PlanesBatch]) -> PlanesBatch:
        return PlanesBatch(
            np.concatenate([b.masks for b in batches]), np.concatenate([b.values for b in batches])
        )
