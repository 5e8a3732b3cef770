"""What both bodies' generated networks share: one random stream and the shared settings.

``LayerGenerator`` draws every array of one network from a single
``numpy.random.default_rng(seed)`` stream in a fixed order, so the same arguments always give the
same arrays (and, through the writer, the same file bytes). Dense weights are
``N(0, gain²/fan_in)``, LayerNorm gammas ``1 + N(0, 0.1²)``, betas and biases small.
"""

from __future__ import annotations

import numpy as np

from lc0py.errors import UsageError
from lc0py.weights.network import DefaultActivation, Dense, InputFormat, LayerNorm

DEFAULT_ACTIVATIONS = {"relu": DefaultActivation.RELU, "mish": DefaultActivation.MISH}


def check_input_format(value: int) -> None:
    """Refuse an input format lc0 does not know, or INPUT_UNKNOWN (no encoder for it)."""
    try:
        InputFormat(value)
    except ValueError:
        valid = ", ".join(str(int(f)) for f in InputFormat if f != InputFormat.UNKNOWN)
        raise UsageError(f"input format {value}: unknown (available: {valid})") from None
    if value == InputFormat.UNKNOWN:
        raise UsageError("input format 0 (INPUT_UNKNOWN) cannot be evaluated")


class LayerGenerator:
    """Draws every array of one network from a single generator stream, in call order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], std: float, mean: float = 0.0) -> np.ndarray:
        x = self.rng.standard_normal(shape, dtype=np.float32)
        x *= np.float32(std)
        if mean:
            x += np.float32(mean)
        return x

    def dense(self, n_out: int, n_in: int, gain: float = 1.0, bias: bool = True,
              bias_std: float = 0.05) -> Dense:
        w = self.normal((n_out, n_in), gain / np.sqrt(n_in))
        return Dense(w, self.normal((n_out,), bias_std) if bias else None)

    def layer_norm(self, n: int, eps: float) -> LayerNorm:
        return LayerNorm(self.normal((n,), 0.1, mean=1.0), self.normal((n,), 0.05), eps)

