"""Packaging metadata: the licence travels with the code, the version is written once, extras exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lc0py

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def project() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())  # type: ignore[no-any-return]


def test_license_is_spdx_and_shipped(project: dict) -> None:  # type: ignore[type-arg]
    meta = project["project"]
    assert meta["license"] == "GPL-3.0-or-later"
    assert meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 3, 29 June 2007" in text
    build = project["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in build)


def test_version_written_once(project: dict) -> None:  # type: ignore[type-arg]
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lc0py.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", lc0py.__version__)
    init = (ROOT / "lc0py" / "__init__.py").read_text()
    assert init.count("__version__ = ") == 1  # a literal: setuptools reads it without importing


def test_extras(project: dict) -> None:  # type: ignore[type-arg]
    extras = project["project"]["optional-dependencies"]
    assert any(r.startswith("hip-python[libraries]") for r in extras["rocm"])  # hipBLAS
    assert any(r.startswith("matplotlib") for r in extras["plot"])
    assert any(r.startswith("mypy") for r in extras["dev"])
    urls = project["project"]["urls"]
    assert all("LeelaChessZero/lc0" in u or "lczero.org" in u for u in urls.values())


def test_kernels_are_one_real_folder_shipped_as_package_data(project: dict) -> None:  # type: ignore[type-arg]
    """The GPU kernels live in lc0py/kernels/ (no symlink, no second copy) and the package-data
    globs pick up every source there, so a wheel carries what the checkout compiles."""
    kernels = ROOT / "lc0py" / "kernels"
    assert kernels.is_dir() and not kernels.is_symlink()
    assert not (ROOT / "kernels").exists(), "a second kernels/ folder beside the package"
    globs = project["tool"]["setuptools"]["package-data"]["lc0py"]
    shipped = {p for g in globs for p in (ROOT / "lc0py").glob(g)}
    sources = {p for p in kernels.iterdir() if p.suffix in (".hip", ".h")}
    assert sources and sources <= shipped, f"not shipped: {sorted(p.name for p in sources - shipped)}"



def test_development_tools_stay_out_of_the_wheel(project: dict) -> None:  # type: ignore[type-arg]
    """Only lc0py* packages are found for the wheel: devtools/, scripts/, bench/ stay in the checkout."""
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["lc0py*"]
    assert not any((ROOT / "lc0py").rglob("lc0_binary.py")), "lc0's binary driver is a development tool"


def test_the_package_never_imports_devtools() -> None:
    """devtools/ is not in the wheel, so nothing under lc0py/ may import it."""
    import ast

    offenders = []
    for path in (ROOT / "lc0py").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "devtools" or n.startswith("devtools.") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"lc0py imports devtools: {offenders}"
