"""The backend registry: names refused before anything loads, the random default net and a
missing GPU said on stderr, CPU/GPU classification."""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.backends import registry
from lc0py.errors import BackendUnavailable

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


def _no_default_net() -> Path:
    raise AssertionError("the default net must not be built for a bad backend name")


@pytest.mark.parametrize("name", ["cudaa", "onnx", "numpy2"])
def test_unknown_name_refused_before_loading(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setattr("lc0py.weights.default_net.default_weights_path", _no_default_net)
    with pytest.raises(BackendUnavailable, match=f"--backend '{name}': unknown backend"):
        registry.create_backend(name, None)


def test_random_default_net_is_announced(monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("lc0py.weights.default_net.default_weights_path", lambda: TINY)
    registry.create_backend("numpy", None).close()
    err = capsys.readouterr().err
    assert "random weights" in err.lower() and err.count("\n") == 1
    registry.create_backend("numpy", TINY).close()  # a net given: nothing said
    assert capsys.readouterr().err == ""


def test_gpu_absent_line() -> None:
    skipped = [
        ("gpu", "no NVIDIA driver/GPU found (x); hip-python is not installed (pip install 'lc0py[rocm]')"),
        ("cuda-fp16", "no NVIDIA driver/GPU found (details)"),
        ("cuda", "no NVIDIA driver/GPU found (details)"),
        ("rocm", "hip-python is not installed (pip install 'lc0py[rocm]')"),
        ("onnx-cuda", "onnxruntime has no CUDAExecutionProvider (available: CPUExecutionProvider)"),
    ]
    assert registry._gpu_absent(skipped) == "no usable GPU (cuda-fp16: no NVIDIA driver/GPU found)"
    assert registry._gpu_absent(skipped[3:]) is None  # packages missing: the normal CPU install


def test_auto_says_when_it_passes_over_an_installed_gpu_backend(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reasons = {"cuda-fp16": "no NVIDIA driver/GPU found", "cuda": "no NVIDIA driver/GPU found"}
    monkeypatch.setattr(registry, "unavailable_reason", lambda name: reasons.get(name, "not installed")
                        if name != "numpy" else None)
    backend = registry.create_backend("auto", TINY)
    assert backend.name == "numpy"
    expected = ("lc0py: --backend auto: using numpy (CPU): no usable GPU (cuda-fp16: no NVIDIA "
                "driver/GPU found); faster on a CPU: pip install \"lc0py[onnx]\"")
    err = capsys.readouterr().err
    assert err.startswith(expected) and err.count("\n") == 1


def test_cpu_classification() -> None:
    class Fake:
        def __init__(self, name: str) -> None:
            self.name = name

    assert registry.is_cpu_backend(Fake("numpy")) and registry.is_cpu_backend(Fake("random"))
    assert not registry.is_cpu_backend(Fake("cuda-fp16")) and not registry.is_cpu_backend(Fake("onnx-cuda"))
    flagged = Fake("onnx-cuda")
    flagged.is_cpu = True  # type: ignore[attr-defined]
    assert registry.is_cpu_backend(flagged)


def test_resolve_network(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """One resolution for lc0py.load and create_backend: a loaded net as is, none for a backend that
    needs none, else the file (or the announced default net) with the chosen heads."""
    loaded = registry.resolve_network(TINY, "numpy")
    assert loaded is not None and registry.resolve_network(loaded, "numpy") is loaded
    assert registry.resolve_network(None, "random") is None
    assert capsys.readouterr().err == ""
    monkeypatch.setattr("lc0py.weights.default_net.default_weights_path", lambda: TINY)
    default = registry.resolve_network(None, "auto", policy_head="vanilla")
    assert default is not None and default.policy_head_name == "vanilla"
    assert "random weights" in capsys.readouterr().err
