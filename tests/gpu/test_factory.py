"""The GPU runtime package: its imports go one way, and the factory picks the vendor and device.

No GPU and no vendor package are needed: the vendor classes are replaced by recorders.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from lc0py.errors import BackendOptionError, BackendUnavailable
from lc0py.gpu import cuda_platform, factory, hip_platform

PACKAGE = Path(factory.__file__).parent
#: module -> the modules of lc0py.gpu it may import (anywhere in the file): the contract first,
#: then what the vendors share, the vendors, and the factory that alone knows both
MAY_IMPORT = {
    "platform": set(),
    "vendor_platform": {"platform"},
    "cuda_platform": {"platform", "vendor_platform", "gemm_algos"},
    "hip_platform": {"platform", "vendor_platform"},
    "factory": {"platform", "cuda_platform", "hip_platform"},
    "compile_cache": {"platform"},
    "cublaslt": {"platform"},  # cuBLASLt through ctypes (the FP8 GEMMs)
    "cublaslt_batched": {"platform", "cublaslt"},  # strided-batched FP8 GEMMs (residual FP8)
    "gemm_algos": {"platform", "cublaslt"},  # timed cuBLASLt algorithms for the large fp16 GEMMs
    "__init__": set(),
}


def _gpu_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lc0py.gpu"):
            rest = node.module.removeprefix("lc0py.gpu").lstrip(".")
            found |= {rest} if rest else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("lc0py.gpu.")]
            found |= {n.removeprefix("lc0py.gpu.") for n in names}
    return found


def test_imports_go_one_way() -> None:
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == set(MAY_IMPORT), "a new module of lc0py.gpu needs its place in MAY_IMPORT"
    for name in modules:
        extra = _gpu_imports(PACKAGE / f"{name}.py") - MAY_IMPORT[name]
        assert not extra, f"lc0py/gpu/{name}.py must not import {sorted(extra)}"


@pytest.fixture
def vendors(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Both vendor classes replaced: each records the ordinal, or refuses as configured."""
    state: dict[str, Any] = {"nvidia": None, "amd": None, "made": []}

    def vendor(name: str) -> Any:
        def make(device: int = 0) -> tuple[str, int]:
            if state[name] is not None:
                raise state[name]
            state["made"].append((name, device))
            return (name, device)

        return make

    monkeypatch.setattr(cuda_platform, "CudaPlatform", vendor("nvidia"))
    monkeypatch.setattr(hip_platform, "HipPlatform", vendor("amd"))
    return state


def test_each_vendor_gets_the_ordinal(vendors: dict[str, Any]) -> None:
    assert factory.create_platform("nvidia", 2) == ("nvidia", 2)
    assert factory.create_platform("amd", 1) == ("amd", 1)
    assert factory.create_platform("auto", 3) == ("nvidia", 3)  # CUDA first, as the registry ranks
    assert factory.create_platform() == ("nvidia", 0)


def test_auto_moves_on_only_when_a_vendor_is_missing(vendors: dict[str, Any]) -> None:
    vendors["nvidia"] = BackendUnavailable("no NVIDIA driver/GPU found")
    assert factory.create_platform("auto", 1) == ("amd", 1)
    with pytest.raises(BackendUnavailable, match="no NVIDIA driver"):
        factory.create_platform("nvidia", 0)  # an explicit vendor is not replaced
    vendors["amd"] = BackendUnavailable("no AMD GPU/ROCm runtime found")
    with pytest.raises(BackendUnavailable, match=r"^no GPU platform: cuda: no NVIDIA .*; rocm: no AMD"):
        factory.create_platform("auto", 0)
    # a device the vendor lacks is the user's option error, not a reason to try the other vendor
    vendors["nvidia"] = BackendOptionError("gpu=4: this machine has 1 CUDA device (0)")
    vendors["amd"] = None
    with pytest.raises(BackendOptionError, match="^gpu=4: this machine has 1 CUDA device"):
        factory.create_platform("auto", 4)
    assert ("amd", 4) not in vendors["made"]


def test_unknown_vendor_is_one_line() -> None:
    with pytest.raises(BackendUnavailable, match=r"^unknown GPU vendor 'intel' \(nvidia, amd, auto\)$"):
        factory.create_platform("intel", 0)


def test_probe_auto_reports_both_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_platform, "probe", lambda: "no NVIDIA driver/GPU found")
    monkeypatch.setattr(hip_platform, "probe", lambda: "no AMD GPU/ROCm runtime found")
    assert factory.probe("auto") == "no NVIDIA driver/GPU found; no AMD GPU/ROCm runtime found"
    monkeypatch.setattr(hip_platform, "probe", lambda: None)
    assert factory.probe("amd") is None and factory.probe("auto") is None
