"""Calibrated FP8 weights of a residual net's tower: GPTQ codes, computed once, cached, verified.

``lc0py calibrate NET`` runs the float32 reference over a few hundred positions, collects each
tower convolution's input moments ``Σ colsᵀ·cols`` (im2col columns), and quantizes every
convolution with ``fp8_quant.quantize_per_channel_gptq``: the same per-channel scales, e4m3 codes
and GEMM as the uncalibrated path, codes chosen so that the convolution's *output* stays close.
The result is a cache entry (``storage.cache.EntryStore``, folder ``fp8-calibration`` under the
lc0py cache root, ``LC0PY_CACHE_DIR``) named by ``tower_digest``: a digest of the fp16 tower
weights the FP8 path quantizes, so the entry is found for the net wherever its file lies and is
never applied to another net. ``cuda-fp8`` on a residual net uses the entry when there is one,
else round-to-nearest codes (``fp8_residual.quantize_conv``); the emulation takes the same record.

File: an ``.npz`` (no pickles) holding ``version``, ``digest``, ``positions`` and per convolution
``q{i}`` (uint8 ``[Cout, 9·Cin]``), ``cs{i}`` (float32 ``[Cout]``, >= 1) and ``ref{i}``. A file
whose bytes do not match the digest the cache recorded is dropped by the cache (logged); one that
matches but does not fit the net is refused with ``Fp8CalibrationError`` (one line).
"""

from __future__ import annotations

import hashlib
import io
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lc0py.backends.gpu.fp8_quant import Fp8Weight, quantize_per_channel_gptq
from lc0py.backends.gpu.weights_residual import conv_matrix
from lc0py.errors import Lc0pyError
from lc0py.model.activations import activation
from lc0py.model.residual import squeeze_excite
from lc0py.storage.cache import EntryStore, cache_folder
from lc0py.weights.network import Activation
from lc0py.weights.residual import Conv, ResidualNetwork

log = logging.getLogger("lc0py.backends.gpu")

CALIBRATION_VERSION = 1
CACHE_KIND = "fp8-calibration"
#: GPTQ's damping (fraction of the moment matrix's mean diagonal)
GPTQ_DAMP = 0.01
_NAN_CODES = (0x7F, 0xFF)


class Fp8CalibrationError(Lc0pyError):
    """A calibration file that does not fit the net (one line: the file and what is wrong)."""


@dataclass(frozen=True)
class Fp8Calibration:
    """Calibrated FP8 codes of every tower convolution (``tower_convs`` order)."""

    digest: str
    positions: int
    weights: tuple[Fp8Weight, ...]


def tower_convs_of(network: ResidualNetwork) -> list[Conv]:
    """The tower's convolutions: input, then each block's conv1 and conv2."""
    return [network.input] + [c for b in network.blocks for c in (b.conv1, b.conv2)]


def packed_conv(conv: Conv) -> np.ndarray:
    """The im2col weight the FP8 path quantizes: ``[Cout, 9Cin]`` tap-major, fp16 values (float64)."""
    return conv_matrix(conv).astype(np.float16).astype(np.float64)


def tower_digest(network: ResidualNetwork) -> str:
    """sha256 of the fp16 tower weights (shapes and bytes): names the calibration entry."""
    h = hashlib.sha256(f"lc0py-fp8-calibration-v{CALIBRATION_VERSION}".encode())
    for conv in tower_convs_of(network):
        w = conv_matrix(conv).astype(np.float16)
        h.update(str(w.shape).encode())
        h.update(np.ascontiguousarray(w).tobytes())
    return h.hexdigest()


# ---- computing it ----------------------------------------------------------------------------
def im2col(x: np.ndarray) -> np.ndarray:
    """``x [B, C, 8, 8]`` -> the im2col rows ``[64B, 9C]`` (tap-major, zeros off the board), the
    layout of ``conv_matrix``'s columns."""
    b, c = x.shape[:2]
    xp = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    taps = np.stack([xp[:, :, r : r + 8, f : f + 8] for r in range(3) for f in range(3)], axis=1)
    return taps.transpose(0, 3, 4, 1, 2).reshape(b * 64, 9 * c)


def _conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    y = im2col(x) @ w.T + bias  # [64B, Cout]
    return y.reshape(x.shape[0], 8, 8, -1).transpose(0, 3, 1, 2).astype(np.float32)


def tower_moments(network: ResidualNetwork, batches: Iterable[np.ndarray]) -> list[np.ndarray]:
    """``Σ colsᵀ·cols`` of every tower convolution's fp16-rounded input over the float32 tower
    (heads not run): GPTQ's ``h``."""
    convs = tower_convs_of(network)
    ws = [packed_conv(c) for c in convs]
    hs = [np.zeros((w.shape[1], w.shape[1])) for w in ws]
    act = network.default_act

    def step(x: np.ndarray, i: int, a: Activation) -> np.ndarray:
        cols = im2col(np.asarray(x, np.float32).astype(np.float16).astype(np.float32))
        hs[i] += cols.T @ cols
        y = _conv(x, ws[i], np.asarray(convs[i].b, np.float64))
        return activation(a, y) if a != Activation.NONE else y

    for planes in batches:
        h = step(planes, 0, act)
        for j, block in enumerate(network.blocks):
            h1 = step(h, 1 + 2 * j, act)
            y = step(h1, 2 + 2 * j, Activation.NONE)
            if block.se is not None:
                scale, bias = squeeze_excite(y, block.se, act)
                y = scale * y + bias
            h = activation(act, y + h).astype(np.float32)
    return hs


def calibrate(network: ResidualNetwork, planes: np.ndarray, batch: int = 64) -> Fp8Calibration:
    """GPTQ codes for every tower convolution from ``planes [N, 112, 8, 8]`` (float32)."""
    batches = [planes[i : i + batch] for i in range(0, len(planes), batch)]
    hs = tower_moments(network, batches)
    weights = tuple(
        quantize_per_channel_gptq(packed_conv(c), h, GPTQ_DAMP, f"tower convolution {i}")
        for i, (c, h) in enumerate(zip(tower_convs_of(network), hs, strict=True))
    )
    return Fp8Calibration(tower_digest(network), len(planes), weights)


# ---- the file --------------------------------------------------------------------------------
def to_bytes(cal: Fp8Calibration) -> bytes:
    """The ``.npz`` bytes of ``cal`` (module docstring)."""
    arrays: dict[str, np.ndarray] = {
        "version": np.array(CALIBRATION_VERSION), "digest": np.array(cal.digest),
        "positions": np.array(cal.positions),
    }
    for i, fw in enumerate(cal.weights):
        arrays[f"q{i}"] = fw.q
        arrays[f"cs{i}"] = np.asarray(fw.col_scale, np.float32)
        arrays[f"ref{i}"] = np.array(fw.ref, np.float64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy stubs: the allow_pickle keyword
    return buf.getvalue()


def from_bytes(data: bytes, network: ResidualNetwork, where: str) -> Fp8Calibration:
    """Read and check a calibration for ``network``; ``Fp8CalibrationError`` (one line naming
    ``where``) if it is not one, is another version, belongs to another net or does not fit."""
    def bad(why: str) -> Fp8CalibrationError:
        return Fp8CalibrationError(f"FP8 calibration {where}: {why} (rerun lc0py calibrate)")

    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        files = set(z.files)
        version = int(z["version"]) if "version" in files else None
        digest = str(z["digest"]) if "digest" in files else ""
        positions = int(z["positions"]) if "positions" in files else 0
    except Exception as exc:  # noqa: BLE001 -- whatever numpy raises on a damaged file
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise bad(f"not a calibration file ({type(exc).__name__}{': ' + detail if detail else ''})") from None
    if version != CALIBRATION_VERSION:
        raise bad(f"version {version}, this lc0py reads {CALIBRATION_VERSION}")
    if digest != tower_digest(network):
        raise bad("made for another net (its tower weights differ)")
    weights = []
    for i, conv in enumerate(tower_convs_of(network)):
        shape = packed_conv(conv).shape
        try:
            q, cs, ref = z[f"q{i}"], z[f"cs{i}"], float(z[f"ref{i}"])
        except (KeyError, ValueError, TypeError):
            raise bad(f"convolution {i} missing") from None
        if q.dtype != np.uint8 or q.shape != shape:
            raise bad(f"convolution {i}: codes {q.dtype}{list(q.shape)}, expected uint8{list(shape)}")
        if np.isin(q, _NAN_CODES).any():
            raise bad(f"convolution {i}: NaN codes")
        if cs.dtype != np.float32 or cs.shape != (shape[0],) or not np.all(np.isfinite(cs)) or np.any(cs < 1):
            raise bad(f"convolution {i}: channel scales not {shape[0]} finite float32 values >= 1")
        if not np.isfinite(ref) or ref <= 0:
            raise bad(f"convolution {i}: scale {ref} not finite and positive")
        weights.append(Fp8Weight(q, cs, ref))
    if sum(1 for f in files if f[:1] == "q" and f[1:].isdigit()) != len(weights):
        raise bad(f"more convolutions than the net's {len(weights)}")
    return Fp8Calibration(digest, positions, tuple(weights))


# ---- the cache -------------------------------------------------------------------------------
def calibration_store() -> EntryStore | None:
    """The calibration cache (``None`` when caching is off)."""
    folder = cache_folder(CACHE_KIND)
    return EntryStore(folder, CACHE_KIND) if folder is not None else None


def store_calibration(cal: Fp8Calibration) -> Path | None:
    """Write ``cal`` into the cache; its path, or ``None`` when it could not be written."""
    store = calibration_store()
    if store is None:
        return None
    return store.store(f"{cal.digest}.npz", to_bytes(cal), cal.digest)


def find_calibration(network: ResidualNetwork) -> Fp8Calibration | None:
    """The cached calibration of ``network``, or ``None`` (uncalibrated: round-to-nearest codes).
    A verified entry that does not fit raises ``Fp8CalibrationError``."""
    store = calibration_store()
    if store is None:
        return None
    digest = tower_digest(network)
    name = f"{digest}.npz"
    data = store.load(name, digest)
    if data is None:
        return None
    cal = from_bytes(data, network, str(store.path(name)))
    log.info("FP8: calibrated tower weights from %s (%d positions)", store.path(name), cal.positions)
    return cal


__all__ = [
    "CALIBRATION_VERSION", "Fp8Calibration", "Fp8CalibrationError", "calibrate", "find_calibration",
    "from_bytes", "im2col", "store_calibration", "to_bytes", "tower_digest", "tower_moments",
]
