"""The layering of the package, made executable.

Data flows weights -> model -> backends -> search -> uci/tools -> cli. Each package may import only
the packages listed for it (module-level and function-level imports alike), every one of them
below it (no exceptions); no two modules of lc0py import each other, directly or in a circle; no
module imports another's private (``_x``) names; and importing lc0py, its backends registry or
building the CLI parser must not import any vendor package (CUDA, HIP, ONNX Runtime, torch), so a
CPU-only install stays light and a missing GPU stack is a clear error at backend creation, not an
ImportError at start-up.
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
    "chess": set(),
    "model": {"weights", "chess"},
    # the GPU runtime (platform contract, CUDA/HIP, kernel compile cache): below backends, attention
    "gpu": set(),
    "backends": {"weights", "model", "chess", "backends", "gpu"},
    # the general attention operator runs on the GPU runtime, the flash kernel's choice and tuning
    "attention": {"backends", "model", "gpu"},
    "search": {"backends.base", "chess"},
    # the public evaluation API (lc0py.load): backends + encoding + the reference for traces
    "api": {"weights", "model", "chess", "backends"},
    "uci": {"search", "chess", "backends", "weights"},
    "tools": {"weights", "model", "chess", "backends", "search", "uci", "tools", "attention", "api"},
    "cli": {"tools", "uci", "backends.onnx.export_cli"},
}
# each package's layer: ALLOWED may only point to a lower one (or inside the package)
LAYER = {
    "storage": 0, "weights": 1, "chess": 1, "model": 2, "gpu": 2, "backends": 3, "attention": 4,
    "search": 4, "api": 4, "uci": 5, "tools": 6, "cli": 7,
}  # fmt: skip

# Import cycles still allowed, each with the issue that removes it. A listed cycle that is gone
# fails test_no_import_cycles too, so the entry is removed with it. (The last one, the GPU
# platform classes', went with the lc0py/gpu runtime package.)
KNOWN_CYCLES: list[set[str]] = []
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


def test_allowed_imports_point_down() -> None:
    """The table itself has no exceptions: every allowed import goes to a lower layer."""
    up = [
        f"{pkg} -> {target}"
        for pkg, targets in ALLOWED.items()
        for target in targets
        if target.split(".")[0] != pkg and LAYER[target.split(".")[0]] >= LAYER[pkg]
    ]
    assert not up, "imports allowed upwards or sideways: " + ", ".join(up)


# --- the module import graph -------------------------------------------------------------------


def _modules() -> dict[str, Path]:
    """Every module of lc0py by dotted name (a package by its own name)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str, str | None]]:
    """``(line, imported module, imported name or None)`` for every lc0py import in ``path``, at
    module level or inside functions, relative ones resolved. ``from pkg import sub`` imports the
    module ``pkg.sub``; ``from mod import name`` imports ``mod`` (for ``name``)."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name in modules]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found.append((node.lineno, f"{base}.{alias.name}", None))
                elif base in modules:
                    found.append((node.lineno, base, alias.name))
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the lc0py modules it imports (itself excluded)."""
    modules = _modules()
    return {
        m: {target for _, target, _ in _imports(m, path, modules) if target != m}
        for m, path in modules.items()
    }


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The cycles of ``graph``: its strongly connected components of more than one module
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(component)
    return cycles


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert strongly_connected(graph) == [{"a", "b", "c"}]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    cycles = strongly_connected(import_graph())
    new = [" <-> ".join(sorted(c)) for c in cycles if c not in KNOWN_CYCLES]
    gone = [" <-> ".join(sorted(c)) for c in KNOWN_CYCLES if c not in cycles]
    assert not new, "import cycles among lc0py's modules:\n" + "\n".join(new)
    assert not gone, "cycles in KNOWN_CYCLES no longer exist, remove them:\n" + "\n".join(gone)


def test_no_private_names_across_modules() -> None:
    """A module's ``_private`` names are its own: another module that needs one needs a public name."""
    modules = _modules()
    bad = [
        f"{path.relative_to(ROOT)}:{line}: imports {name} from {target}"
        for module, path in sorted(modules.items())
        for line, target, name in _imports(module, path, modules)
        if name is not None and name.startswith("_") and not name.startswith("__") and target != module
    ]
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
        "import lc0py.gpu.factory, lc0py.gpu.cuda_platform, lc0py.gpu.hip_platform, lc0py.gpu.compile_cache",
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
