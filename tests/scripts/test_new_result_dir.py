"""``scripts/device/new_result_dir``: the dated results folder and its manifest skeleton, and the
one-line refusals (bad device name, unknown commit, a folder that exists)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "device" / "new_result_dir"


def _repo(tmp_path: Path) -> str:
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    return subprocess.run([*git, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_creates_the_folder_and_manifest(tmp_path: Path) -> None:
    commit = _repo(tmp_path)
    run = _run("--root", str(tmp_path), "--device", "h100", "--date", "2026-11-27",
               "--card", "NVIDIA H100 80GB HBM3", "--command", "OUT=/tmp/o scripts/device/gpu_check")
    assert run.returncode == 0, run.stderr
    folder = tmp_path / "bench" / "results" / f"2026-11-27_h100_{commit}"
    assert run.stdout.strip() == str(folder)
    text = (folder / "MANIFEST.md").read_text()
    for field in ("command", "card", "commit", "date", "what it measured", "cited by"):
        assert f"- **{field}**: " in text
    assert "`OUT=/tmp/o scripts/device/gpu_check`" in text and "NVIDIA H100 80GB HBM3" in text


def test_refusals_are_one_line_and_exit_2(tmp_path: Path) -> None:
    _repo(tmp_path)
    base = ("--root", str(tmp_path), "--command", "x", "--date", "2026-11-27")
    bad = [_run(*base, "--device", "H100 card"), _run(*base, "--device", "h100", "--commit", "nope")]
    assert _run(*base, "--device", "h100").returncode == 0
    bad.append(_run(*base, "--device", "h100"))  # the same folder again
    for run in bad:
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert "Traceback" not in run.stderr
