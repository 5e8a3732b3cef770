"""Decode and encode ``Weights.Layer`` arrays (docs/weights-format.md §4), vectorised with numpy.

A layer's own ``encoding`` field decides how its bytes are read; an absent field means LINEAR16
(whatever ``Format.weights_encoding`` says). ``encode_layer`` is the inverse used by the writer
(LINEAR16 recipe of the training exporter).

LINEAR16 has two dequantisations in lc0, both in float32 and rounding differently:
lc0 <= 0.32 computes ``u/65535 * (max-min) + min`` (``src/utils/weights_adapter.cc`` of v0.32.1),
lc0 >= 0.33 ``min*(1-θ) + max*θ`` with ``θ = u/65535``. On real residual nets whose batch-norm
variance layers span a wide range the difference reaches ~7e-4 in legal-move probabilities (Maia;
docs/residual-body.md §6). lc0py follows the released lc0 it is checked against, 0.32 (the dev
extra's lc0 0.32.1), so its values equal that lc0's bit for bit; ``LC0PY_LINEAR16=lc0-0.33`` or
``with linear16("lc0-0.33"):`` selects the newer formula.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from lc0py.errors import UsageError, WeightsFormatError
from lc0py.weights.network import WeightsEncoding
from lc0py.weights.proto import unknown_varint

_ELEMENT_SIZE = {
    WeightsEncoding.LINEAR16: 2,
    WeightsEncoding.FLOAT16: 2,
    WeightsEncoding.BFLOAT16: 2,
    WeightsEncoding.FLOAT32: 4,
}

ENCODING_NAMES = {e.name.lower(): e for e in _ELEMENT_SIZE}

#: LINEAR16 dequantisations (module docstring); the first is the default.
LINEAR16_FORMULAS = ("lc0-0.32", "lc0-0.33")
ENV_LINEAR16 = "LC0PY_LINEAR16"
_FORMULA: contextvars.ContextVar[str | None] = contextvars.ContextVar("linear16_formula", default=None)


def linear16_formula() -> str:
    """The LINEAR16 dequantisation in force: a ``linear16`` block's, else ``LC0PY_LINEAR16``'s,
    else lc0 0.32's."""
    chosen = _FORMULA.get()
    if chosen is not None:
        return chosen
    env = os.environ.get(ENV_LINEAR16, "").strip().lower()
    if not env:
        return LINEAR16_FORMULAS[0]
    if env not in LINEAR16_FORMULAS:
        known = ", ".join(LINEAR16_FORMULAS)
        raise UsageError(f"{ENV_LINEAR16}={env!r}: unknown LINEAR16 formula (available: {known})")
    return env


@contextlib.contextmanager
def linear16(formula: str) -> Iterator[None]:
    """Within the block, decode LINEAR16 with ``formula`` (one of ``LINEAR16_FORMULAS``)."""
    if formula not in LINEAR16_FORMULAS:
        known = ", ".join(LINEAR16_FORMULAS)
        raise ValueError(f"unknown LINEAR16 formula {formula!r} (available: {known})")
    token = _FORMULA.set(formula)
    try:
        yield
    finally:
        _FORMULA.reset(token)


def lc0_032_linear16() -> contextlib.AbstractContextManager[None]:
    """lc0 0.32.1's dequantisation within the block (what the oracle tests compare with)."""
    return linear16("lc0-0.32")


def layer_encoding(layer: Any) -> WeightsEncoding:
    """The effective encoding of ``layer`` (absent field -> LINEAR16)."""
    if not layer.HasField("encoding"):
        return WeightsEncoding.LINEAR16
    return WeightsEncoding(int(layer.encoding))


def decode_layer(layer: Any, name: str = "layer") -> np.ndarray:
    """Return the layer's values as a flat float32 array (empty for an absent/empty layer).

    Raises ``WeightsFormatError`` (message starts with ``name``) for an explicit UNKNOWN or
    unrecognised encoding, or a byte count that is not a multiple of the element size. ``dims`` is
    not read: lc0 never reads it (every size comes from lengths, checked by the loader against the
    net's dimensions), and it plays files whose ``dims`` disagree with their values.
    """
    raw: bytes = layer.params
    unknown = None if layer.HasField("encoding") else unknown_varint(layer, 4)
    if layer.HasField("encoding") or unknown is not None:
        code = int(layer.encoding) if unknown is None else unknown
        if code not in _ELEMENT_SIZE.keys():
            raise WeightsFormatError(f"{name}: unknown layer encoding {code} (expected 1-4)")
        encoding = WeightsEncoding(code)
    else:
        encoding = WeightsEncoding.LINEAR16
    size = _ELEMENT_SIZE[encoding]
    if len(raw) % size:
        raise WeightsFormatError(
            f"{name}: {len(raw)} bytes of {encoding.name} data is not a multiple of {size}"
        )
    if encoding == WeightsEncoding.LINEAR16 and linear16_formula() == "lc0-0.32":
        values = np.frombuffer(raw, dtype="<u2").astype(np.float32)
        lo = np.float32(layer.min_val)
        np.divide(values, np.float32(65535.0), out=values)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf bounds: the loader names the layer
            values *= np.float32(np.float32(layer.max_val) - lo)
            values += lo
    elif encoding == WeightsEncoding.LINEAR16:
        # min*(1-θ) + max*θ with θ = u/65535, each step rounded to float32 as lc0 does; in place
        # (one temporary) because a T82 has 94 M of these values
        theta = np.frombuffer(raw, dtype="<u2").astype(np.float32)
        np.divide(theta, np.float32(65535.0), out=theta)
        values = np.subtract(np.float32(1.0), theta)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf bounds: the loader names the layer
            values *= np.float32(layer.min_val)
            theta *= np.float32(layer.max_val)
            values += theta
    elif encoding == WeightsEncoding.FLOAT16:
        values = np.frombuffer(raw, dtype="<f2").astype(np.float32)
    elif encoding == WeightsEncoding.BFLOAT16:
        values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)
    else:
        values = np.frombuffer(raw, dtype="<f4").astype(np.float32)  # copy: writable, native order
    return values


def encode_layer(layer: Any, values: np.ndarray, encoding: WeightsEncoding = WeightsEncoding.LINEAR16,
                 dims: tuple[int, ...] | None = None) -> None:
    """Fill ``layer`` (a ``Weights.Layer`` message) with ``values`` in ``encoding``.

    LINEAR16 follows the training exporter (``fill_layer_v2``): ``min/max`` of the data (a single
    element gets ``min=0, max=value`` or ``max=1`` for 0), ``round((x-min)/(max-min)*65535)``.
    LINEAR16 layers leave the ``encoding`` field unset (absent means LINEAR16 to every lc0, and
    lc0 < 0.33 does not know the field); other encodings set it explicitly.
    ``dims`` defaults to ``values.shape``.
    """
    x = np.ascontiguousarray(values, dtype=np.float32)
    flat = x.reshape(-1)
    if encoding == WeightsEncoding.LINEAR16:
        if flat.size == 1:
            lo = 0.0
            hi = float(flat[0]) if flat[0] != 0 else 1.0
        elif flat.size == 0:
            lo = hi = 0.0
        else:
            lo, hi = float(flat.min()), float(flat.max())
        lo32, hi32 = np.float32(lo), np.float32(hi)
        if hi32 == lo32:
            q = np.round((flat.astype(np.float64) - lo32) * 65535.0)
        else:
            q = np.round((flat.astype(np.float64) - lo32) / (float(hi32) - float(lo32)) * 65535.0)
        layer.min_val = float(lo32)
        layer.max_val = float(hi32)
        layer.params = np.clip(q, 0, 65535).astype("<u2").tobytes()
    elif encoding == WeightsEncoding.FLOAT16:
        layer.params = flat.astype("<f2").tobytes()
    elif encoding == WeightsEncoding.BFLOAT16:
        bits = flat.view(np.uint32).astype(np.uint64)
        # round to nearest even on the dropped 16 bits (NaN stays NaN: the exponent is all ones)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        nan = np.isnan(flat)
        upper = np.where(nan, (bits >> 16) | 0x40, rounded).astype("<u2")
        layer.params = upper.tobytes()
    elif encoding == WeightsEncoding.FLOAT32:
        layer.params = flat.astype("<f4").tobytes()
    else:
        raise ValueError(f"cannot encode with {encoding!r}")
    if encoding == WeightsEncoding.LINEAR16:
        layer.ClearField("encoding")
    else:
        layer.encoding = int(encoding)
    del layer.dims[:]
    layer.dims.extend(int(d) for d in (x.shape if dims is None else dims))


def layer_element_count(layer: Any) -> int:
    """Number of elements a layer holds (bytes / element size), without decoding it.

    lc0's describenet divides by 2 whatever the encoding; this counts FLOAT32 layers correctly.
    An unknown encoding counts as 2-byte elements.
    """
    encoding = int(layer.encoding) if layer.HasField("encoding") else int(WeightsEncoding.LINEAR16)
    size = _ELEMENT_SIZE.get(WeightsEncoding(encoding) if encoding in _ELEMENT_SIZE.keys() else
                             WeightsEncoding.LINEAR16, 2)
    return len(layer.params) // size
