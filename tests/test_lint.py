"""``ruff check`` (config in pyproject.toml) over the package, tests and scripts, so CI keeps them clean."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check() -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed (pip install -e '.[dev]')")
    res = subprocess.run(
        [ruff, "check", "--output-format", "concise", "lc0py", "devtools", "tests", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
