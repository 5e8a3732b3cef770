"""scripts/bench/host_latency.py: its phase timing runs over the GPU backend's host path (here on a
platform whose device calls do nothing), and what it cannot run is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "host_latency.py"
ROOT = SCRIPT.parents[2]


def test_phases_and_vendor_calls_are_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.weights.presets import random_network
    from tests.kernels.amd_backend_compiles import RecordingPlatform

    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import host_latency
    finally:
        sys.path.remove(str(SCRIPT.parent))
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")
    net = random_network("t82", 3, layers=1)
    plat = RecordingPlatform("gfx1100", 32)
    gpu = GpuNetwork(plat, net, fp16=True, options=GpuOptions.from_text("max_batch=4"))
    try:
        backend = SimpleNamespace(evaluate_async=gpu.submit, network=net)
        timer = host_latency.CallTimer(plat, host_latency.TIMED_CALLS)
        row = host_latency.time_batches(SimpleNamespace(backend=backend, opts="x"), timer, 3, 10)
    finally:
        gpu.close()
    assert row["size"] == 3 and row["opts"] == "x"
    # each batch's phases are parts of its total, so each phase's median is at most the total's
    # (no bound on how long anything takes)
    assert all(0 <= row[f"{p}_us"] <= row["total_us"] for p in ("encode", "submit", "wait", "read"))
    assert all(row[f"{p}_us"] > 0 for p in ("encode", "submit", "read"))
    calls = row["calls_us"]
    assert set(calls) == set(host_latency.TIMED_CALLS)
    # a graph launch, the upload and the output copies each batch; the wait is outside submit
    assert calls["launch_graph"] > 0 and calls["copy_h2d"] > 0 and calls["copy_d2h"] > 0
    assert calls["event_synchronize"] == 0


def test_what_it_cannot_run_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in (["--weights", str(tmp_path / "missing.pb.gz")], ["--weights", "x", "--sizes", "0"]):
        run = subprocess.run(
            [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300,
        )
        assert run.returncode == 2, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("host_latency: "), run.stderr
