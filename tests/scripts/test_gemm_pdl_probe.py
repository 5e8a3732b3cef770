"""scripts/bench/gemm_pdl_probe.py: its kernels compile for sm_90 with lc0py's prelude (the wait
exactly where the controls need it), and without a GPU it says so in one line (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "gemm_pdl_probe.py"
ROOT = SCRIPT.parents[2]


def test_probe_kernels_compile_with_the_wait_only_where_asked() -> None:
    pytest.importorskip("cuda.bindings.nvrtc")
    from lc0py.gpu.cuda_platform import nvrtc_compile, nvrtc_supported_archs
    from scripts.bench.gemm_pdl_probe import SOURCE

    if 90 not in nvrtc_supported_archs():
        pytest.skip("this NVRTC cannot target sm_90")
    prelude = (ROOT / "lc0py" / "kernels" / "prelude_nvrtc.h").read_text()
    headers = {"prelude_nvrtc.h": prelude}
    ptx = nvrtc_compile(SOURCE, "probe.cu", [], headers, "-arch=compute_90", "ptx").decode()
    entries = {name: ptx.split(f".entry {name}(")[1].split(".entry")[0] for name in
               ("producer", "consumer_nowait", "consumer_wait", "touch")}
    # the control that must read stale data has no wait; the one that must not, and the chain's
    # kernel, have it; the producer lets its dependents launch before it writes
    assert "griddepcontrol.wait" not in entries["consumer_nowait"]
    assert "griddepcontrol.wait" in entries["consumer_wait"]
    assert "griddepcontrol.wait" in entries["touch"]
    assert "griddepcontrol.launch_dependents" in entries["producer"]


def test_without_a_gpu_it_is_one_line_and_exit_2() -> None:
    from lc0py.gpu.cuda_platform import probe

    if probe() is None:
        pytest.skip("an NVIDIA GPU is here: the probe would run")
    run = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120,
    )
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemm_pdl_probe: "), run.stderr
