"""The layering of the package, made executable.

Data flows weights -> model -> backends -> search -> uci/tools -> cli. Each package may import only
the packages listed for it (module-level and function-level imports alike), and importing lc0py,
its backends registry or building the CLI parser must not import any vendor package (CUDA, HIP,
ONNX Runtime, torch), so a CPU-only install stays light and a missing GPU stack is a clear error
at backend creation, not an ImportError at start-up.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lc0py"

# package -> lc0py packages it may import (besides itself, lc0py.errors and lc0py.storage, the one
# atomic writer and cache resolver every layer writes through)
ALLOWED: dict[str, set[str]] = {
    "storage": set(),
    "weights": set(),
    "chess": {"backends.base"},
    "model": {"weights", "chess"},
    # registry.create_backend(weights=None) loads the built-in net (lazily; uci: --weights=<random>)
    "backends": {"weights", "model", "chess", "backends", "tools.default_net"},
    # the general attention operator runs on the GPU backend's platform, kernels and reference
    "attention": {"backends", "model"},
    "search": {"backends.base", "chess"},
    # the public evaluation API (lc0py.load): backends + encoding + the reference for traces
    "api": {"weights", "model", "chess", "backends"},
    "uci": {"search", "chess", "backends", "weights", "tools.default_net"},
    "tools": {"weights", "model", "chess", "backends", "search", "uci", "tools", "attention", "api"},
    "cli": {"tools", "uci", "backends.onnx.export_cli"},
}
TOP_LEVEL_OK = {"__init__", "__main__", "errors"}
VENDOR = ("cuda", "hip", "onnxruntime", "onnx", "torch", "cupy", "lczero")


def _package_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _lc0py_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name == "lc0py" or name.startswith("lc0py."):
                found.append((node.lineno, name[len("lc0py.") :] if name != "lc0py" else ""))
    return found


def _allowed(importer: str, target: str) -> bool:
    if target in ("", "errors") or target.split(".")[0] == importer:
        return True
    if target.split(".")[0] == "storage" and importer != "storage":
        return True
    return any(target == a or target.startswith(a + ".") for a in ALLOWED.get(importer, set()))


def test_layering() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        pkg = _package_of(path)
        if pkg in TOP_LEVEL_OK:
            continue
        for line, target in _lc0py_imports(path):
            if not _allowed(pkg, target):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {pkg} must not import lc0py.{target}")
    assert not bad, "\n".join(bad)


def test_nothing_imports_cli() -> None:
    bad = [
        f"{p.relative_to(ROOT)}"
        for p in PACKAGE.rglob("*.py")
        if _package_of(p) not in ("cli", "__main__")
        and any(t == "cli" or t.startswith("cli.") for _, t in _lc0py_imports(p))
    ]
    assert not bad


@pytest.mark.parametrize(
    "statement",
    [
        "import lc0py",
        "import lc0py.backends",
        "from lc0py.cli.main import build_parser; build_parser()",
        "import lc0py.attention, lc0py.attention.gpu",
    ],
)
def test_no_vendor_import(statement: str) -> None:
    code = (
        f"{statement}\nimport sys\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {VENDOR!r})\n"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.strip()
    assert out == "", f"'{statement}' imported vendor modules: {out}"
