"""scripts/bench/graph_replay.py: without a GPU (or with a net that is not there) it says so in one
line and exits 2; the timing itself needs a device (docs/performance.md cites its runs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "graph_replay.py"
ROOT = SCRIPT.parents[2]


@pytest.mark.parametrize("weights", ["missing.pb.gz", None])
def test_what_it_cannot_run_is_one_line_and_exit_2(tmp_path: Path, weights: str | None) -> None:
    from lc0py.gpu.cuda_platform import probe

    if weights is None:
        if probe() is None:
            pytest.skip("an NVIDIA GPU is here: the script would run")
        from lc0py.weights.presets import random_network
        from lc0py.weights.writer import save_network

        weights = str(tmp_path / "tiny.pb.gz")
        save_network(random_network("tiny", 1), weights)
    else:
        weights = str(tmp_path / weights)
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--weights", weights, "--variants", "smolgen_early=off;"],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graph_replay: "), run.stderr
