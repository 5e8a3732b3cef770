"""scripts/device/gpu_suite.py: the GPU suite's parts cover every collected test exactly once, in
order, and a part outside 1..parts is one line and exit 2 (the tests themselves need a device)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device" / "gpu_suite.py"


def _module() -> object:
    spec = importlib.util.spec_from_file_location("gpu_suite", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(("count", "parts"), [(229, 2), (229, 3), (5, 4), (1, 2), (0, 2)])
def test_the_parts_cover_every_test_once_in_order(count: int, parts: int) -> None:
    part_ids = _module().part_ids  # type: ignore[attr-defined]
    ids = [f"t{i}" for i in range(count)]
    runs = [part_ids(ids, p, parts) for p in range(1, parts + 1)]
    assert [i for run in runs for i in run] == ids
    assert max(map(len, runs)) - min(map(len, runs)) <= 1


def test_a_part_out_of_range_is_one_line_and_exit_2() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--part", "3", "--parts", "2"],
                         capture_output=True, text=True, timeout=60, cwd=SCRIPT.parents[2])
    assert run.returncode == 2
    assert run.stderr.strip() == "gpu_suite: --part 3 is not in 1..2"
    assert run.stdout == ""
