"""Helpers of the ONNX tests: random planes, the float64 truth, running an exported model.

The numpy float64 reference is ``lc0py.model.forward``; errors and thresholds come from the
shared conformance suite (``tests/backends/conformance.py``). Positions here are random plane
masks (every plane and square, not only what legal chess produces); the backend tests use the
suite's random games. Tests needing ``onnx``/``onnxruntime`` skip themselves with
``pytest.importorskip`` (install command in the reason).
"""

from __future__ import annotations

import numpy as np

from lc0py.backends.base import PlanesBatch
from lc0py.model import forward
from lc0py.weights.network import Network
from tests.backends.conformance import RTOL_FP16, RTOL_FP32, relative_error

# Thresholds on ||out - ref|| / ||ref|| against the float64 reference (the project's figures,
# shared with the conformance suite): float32 rounding stays near 1e-6, float16 near 1e-3.
TOL = {"fp32": RTOL_FP32, "fp16": RTOL_FP16}


def random_batch(seed: int, size: int = 4) -> PlanesBatch:
    """``size`` random positions: masks with ~1/4 of the bits set (never all zero), values 0.5-2."""
    rng = np.random.default_rng(seed)
    full = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
    masks = rng.integers(0, full, size=(size, 112), dtype=np.uint64, endpoint=True)
    masks &= rng.integers(0, full, size=(size, 112), dtype=np.uint64, endpoint=True)
    masks |= np.uint64(1) << rng.integers(0, 64, size=(size, 112), dtype=np.uint64)  # non-zero
    values = rng.choice(np.array([0.5, 1.0, 1.0, 2.0], np.float32), size=(size, 112))
    return PlanesBatch(masks, values)


def reference(network: Network, batch: PlanesBatch) -> dict[str, np.ndarray]:
    """The numpy float64 forward pass as ``{"policy", "wdl", "mlh"}`` (mlh ``[B]``)."""
    out = forward(network, batch.dense(np.float64), np.float64)
    return {"policy": out.policy, "wdl": out.wdl, "mlh": out.moves_left}


def run_onnx(model: object, batch: PlanesBatch, fp16: bool) -> dict[str, np.ndarray]:
    """Run an exported model on ONNX Runtime's CPU provider: ``{"policy", "wdl", "mlh"}``.

    Classical value models (``/output/value``) are mapped to WDL as the backends do it.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(),
        options,
        providers=["CPUExecutionProvider"],  # type: ignore[attr-defined]
    )
    planes = batch.dense(np.float16 if fp16 else np.float32)
    names = [o.name for o in session.get_outputs()]
    named = dict(zip(names, session.run(names, {"/input/planes": planes}), strict=True))
    result = {"policy": named["/output/policy"]}
    if "/output/wdl" in named:
        result["wdl"] = named["/output/wdl"]
    else:
        q = named["/output/value"].astype(np.float64)[:, 0]
        result["wdl"] = np.stack([(1 + q) / 2, 0 * q, (1 - q) / 2], axis=1)
    if "/output/mlh" in named:
        result["mlh"] = named["/output/mlh"][:, 0]
    return result


def errors(out: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, float]:
    """Relative error per output present in ``out`` (a net without MLH has no ``mlh``)."""
    return {k: relative_error(out[k], ref[k]) for k in ("policy", "wdl", "mlh") if k in out}


def assert_close(errs: dict[str, float], precision: str) -> None:
    """Every relative error below ``TOL[precision]``; the errors are printed (``pytest -s``)."""
    text = ", ".join(f"{k} {v:.2e}" for k, v in errs.items())
    print(f"relative errors ({precision}): {text}")
    assert all(v < TOL[precision] for v in errs.values()), f"{precision} tolerance {TOL[precision]}: {text}"
