"""mypy over lc0py/ and devtools/ with the configuration in pyproject.toml ([tool.mypy]): the
package ships ``py.typed``, so its annotations are a promise to its users' type checkers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is in the dev extra")
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, f"mypy found type errors:\n{run.stdout}{run.stderr}"
