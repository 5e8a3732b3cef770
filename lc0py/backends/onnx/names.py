"""lc0's tensor names for ONNX models (the defaults of lc0's ``leela2onnx`` converter).

Kept apart from ``export.py`` so that code which only reads model outputs does not import onnx.
"""

from __future__ import annotations

INPUT_PLANES = "/input/planes"  # [B, 112, 8, 8]
OUTPUT_POLICY = "/output/policy"  # [B, 1858] logits
OUTPUT_WDL = "/output/wdl"  # [B, 3] win/draw/loss probabilities (WDL value heads)
OUTPUT_VALUE = "/output/value"  # [B, 1] tanh value (classical value heads)
OUTPUT_MLH = "/output/mlh"  # [B, 1] moves left (nets with a moves-left head)
