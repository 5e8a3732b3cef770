"""The ONNX Runtime backends: conformance (the shared suite), options, and one-line errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx not installed (pip install 'lc0py[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'lc0py[onnx]')")

from lc0py.backends.base import PlanesBatch  # noqa: E402
from lc0py.backends.registry import create_backend, unavailable_reason  # noqa: E402
from lc0py.errors import BackendOptionError, BackendUnavailable  # noqa: E402
from lc0py.weights import random_network  # noqa: E402
from lc0py.weights.network import Network  # noqa: E402
from tests.backends.conformance import (  # noqa: E402
    RTOL_FP16,
    RTOL_FP32,
    check_backend_against_reference,
)


@pytest.fixture(scope="module")
def tiny() -> Network:
    return random_network("tiny", seed=41)


@pytest.mark.parametrize(
    "opts, rtol",
    [
        ("", RTOL_FP32),
        ("fp16=on", RTOL_FP16),
        ("attention=contrib", RTOL_FP32),
        ("attention=contrib,fp16=on", RTOL_FP16),
        ("batch=4", RTOL_FP32),  # 1 and 7 positions: padding and splitting
        ("iobinding=on,threads=1", RTOL_FP32),
        ("opset=18", RTOL_FP32),
    ],
    ids=["fp32", "fp16", "contrib", "contrib-fp16", "fixed-batch4", "iobinding", "opset18"],
)
def test_conformance(tiny: Network, opts: str, rtol: float) -> None:
    backend = create_backend("onnx-cpu", tiny, opts)
    for report in check_backend_against_reference(backend, tiny, rtol):
        print(f"onnx-cpu {opts or 'default'}: {report}")


@pytest.mark.parametrize(
    "overrides",
    [
        dict(embedding="pe_dense", multihead=True, input_format=1),
        dict(embedding="none", moves_left=False),
        dict(wdl=False, smolgen=False),
    ],
    ids=["pe_dense-multihead", "none-nomlh", "classical-nosmolgen"],
)
def test_conformance_structures(overrides: dict[str, object]) -> None:
    network = random_network("tiny", seed=42, **overrides)
    backend = create_backend("onnx-cpu", network, "")
    check_backend_against_reference(backend, network, RTOL_FP32, batch_sizes=(3,))
    out = backend.evaluate(PlanesBatch(np.ones((2, 112), np.uint64), np.ones((2, 112), np.float32)))
    if not network.has_moves_left:
        assert not out.moves_left.any()
    if not network.value.wdl:  # classical: (1 + q) / 2, 0, (1 - q) / 2
        assert not out.wdl[:, 1].any() and np.allclose(out.wdl.sum(axis=1), 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["t82", "t82-h12", "t82-h8", "t82-h6"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_conformance_t82_full_depth(preset: str, precision: str) -> None:
    network = random_network(preset, seed=43)
    backend = create_backend("onnx-cpu", network, f"fp16={'on' if precision == 'fp16' else 'off'}")
    rtol = RTOL_FP16 if precision == "fp16" else RTOL_FP32
    for report in check_backend_against_reference(backend, network, rtol, batch_sizes=(2,)):
        print(f"onnx-cpu {preset} {precision}: {report}")


def test_info_and_empty_batch(tiny: Network) -> None:
    backend = create_backend("onnx-cpu", tiny, "")
    assert backend.name == "onnx-cpu" and backend.is_cpu  # type: ignore[attr-defined]
    assert backend.info.input_format == int(tiny.format.input)
    assert backend.info.has_wdl and backend.info.has_moves_left
    assert not backend.fp16  # type: ignore[attr-defined]  # lc0: fp16 defaults off on CPU
    assert backend.attention == "plain"  # type: ignore[attr-defined]
    out = backend.evaluate(PlanesBatch(np.zeros((0, 112), np.uint64), np.zeros((0, 112), np.float32)))
    assert out.policy.shape == (0, 1858) and out.wdl.shape == (0, 3) and out.moves_left.shape == (0,)
    assert "onnx-cpu" in repr(backend)


@pytest.mark.parametrize("opts", ["", "iobinding=on"])
def test_evaluate_after_close_says_so(tiny: Network, opts: str) -> None:
    """A closed backend refuses work with its name, not an AttributeError on a dropped session."""
    from lc0py.chess import PositionHistory, encode_batch

    backend = create_backend("onnx-cpu", tiny, opts)
    batch = encode_batch([PositionHistory.from_fen(None).encode(backend.info.input_format)])
    assert np.isfinite(backend.evaluate(batch).policy).all()
    backend.close()
    backend.close()  # idempotent
    with pytest.raises(RuntimeError, match="onnx-cpu: the backend was closed"):
        backend.evaluate(batch)


@pytest.mark.parametrize(
    "opts, match",
    [
        ("fp16=maybe", "fp16"),
        ("threads=-1", r"threads=-1 is out of range"),
        ("batch=1000000000", r"batch=1000000000 is out of range"),
        ("gpu=nan", "gpu"),
        ("batch=x", "batch"),
        ("attention=flash", "attention"),
        ("opset=12", "opset"),
        ("bogus=1", "bogus"),
    ],
)
def test_bad_options(tiny: Network, opts: str, match: str) -> None:
    with pytest.raises(BackendOptionError, match=match) as info:
        create_backend("onnx-cpu", tiny, opts)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name, provider", [("onnx-cuda", "CUDA"), ("onnx-rocm", "ROCM")])
def test_missing_provider_is_one_line(tiny: Network, name: str, provider: str) -> None:
    if f"{provider}ExecutionProvider" in ort.get_available_providers():
        pytest.skip(f"{provider} provider present")
    with pytest.raises(BackendUnavailable, match=f"{provider}ExecutionProvider") as info:
        create_backend(name, tiny, "")
    assert str(info.value).startswith(f"--backend '{name}': onnxruntime has no ")
    assert "\n" not in str(info.value)


def test_cpu_probe_passes_here() -> None:
    assert unavailable_reason("onnx-cpu") is None


_WITHOUT = """
import sys
sys.modules[{module!r}] = None  # as if the package were not installed
from lc0py.backends.registry import unavailable_reason
print(unavailable_reason("onnx-cpu"))
"""


@pytest.mark.parametrize("module", ["onnxruntime", "onnx"])
def test_probe_names_the_missing_package(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module)], capture_output=True, text=True, check=True
    ).stdout.strip()
    what = "onnxruntime" if module == "onnxruntime" else "the onnx package"
    assert out == f"{what} is not installed (pip install 'lc0py[onnx]')"


def test_import_lc0py_imports_no_onnx() -> None:
    code = (
        "import sys, lc0py, lc0py.backends.registry as r; r.backend_names();"
        "import lc0py.backends.onnx.export_cli, lc0py.backends.onnx.names;"
        "bad = [m for m in ('onnx', 'onnxruntime') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
