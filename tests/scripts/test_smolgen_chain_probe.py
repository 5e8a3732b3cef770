"""scripts/bench/smolgen_chain_probe.py: its arguments, and one line (exit 2) without a GPU or
with a malformed one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.bench.smolgen_chain_probe import parse_configs, parse_rows

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "smolgen_chain_probe.py"


def test_configs_and_rows_parse() -> None:
    assert parse_configs("4x8x32, 8x24x128") == [(4, 8, 32), (8, 24, 128)]
    assert parse_rows("1,4") == [1, 4]
    for bad in ("4x8", "4x8x0", "axbxc", "4x8x32x1"):
        with pytest.raises(ValueError, match="is not C0xG2xBLOCKS"):
            parse_configs(bad)
    for bad in ("0", "5", "one"):
        with pytest.raises(ValueError, match="is not a position count 1 to 4"):
            parse_rows(bad)


def test_a_bad_argument_is_one_line_and_exit_2() -> None:
    root = SCRIPT.parents[2]
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--configs", "4x8"],
        capture_output=True, text=True, cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    want = "smolgen_chain_probe: --configs: '4x8' is not C0xG2xBLOCKS (three positive integers, e.g. 8x8x96)"
    assert run.stderr.strip().splitlines() == [want]
