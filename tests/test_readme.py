"""The README's and the Python API guide's examples run as written (doctest), against the
committed tiny net."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_readme_doctests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples name weights/... relative to the repository root
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5, "the README lost its doctest examples"
    assert result.failed == 0


def test_first_readme_example_loads_a_net_and_evaluates() -> None:
    """The first code block of the README is the evaluation doctest (issue 13)."""
    text = (ROOT / "README.md").read_text()
    first = text[text.index("```") : text.index("```", text.index("```") + 3)]
    assert ">>> net = lc0py.load(" in first and "net.evaluate(board)" in first


def test_python_api_guide_doctests(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/python-api.md: load, evaluate, batches, trace, the patching callback, ONNX export."""
    pytest.importorskip("onnxruntime", reason="the guide's ONNX section needs the onnx extra")
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "python-api.md"), module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 30, "the Python API guide lost its doctest examples"
    assert result.failed == 0
