"""scripts/bench/api_boards.py: it runs on the random backend, and a net that is not there is one
line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "api_boards.py"
ROOT = SCRIPT.parents[2]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


def test_it_reports_boards_and_fens() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--games", "1", "--plies", "12", "--repeats", "1"],
                         capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "12 boards" in run.stdout and "their FENs" in run.stdout


def test_a_missing_net_is_one_line_and_exit_2(tmp_path: Path) -> None:
    args = ["--weights", str(tmp_path / "missing.pb.gz"), "--backend", "numpy"]
    run = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
                         env=ENV, timeout=300)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("api_boards: "), run.stderr
