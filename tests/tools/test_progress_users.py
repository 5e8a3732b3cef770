"""Every long command reports progress through ``lc0py.tools.progress`` (and nothing else)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.tools import progress as progress_module
from lc0py.weights import random_network, save_network

TOOLS = Path(progress_module.__file__).parent


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=43), path)
    return path


@pytest.mark.parametrize("module", ["eval", "tune", "backendbench", "attnbench"])
def test_long_commands_use_the_one_reporter(module: str) -> None:
    source = (TOOLS / f"{module}.py").read_text()
    assert "from lc0py.tools.progress import" in source
    assert "\\r\\033[K" not in source and "isatty" not in source  # no hand-written bar left


def test_eval_positions_shows_progress_when_forced(
    tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    positions = tmp_path / "positions.txt"
    positions.write_text("startpos\nstartpos | e2e4\nstartpos | d2d4 d7d5\n")
    monkeypatch.setenv(progress_module.ENV_PROGRESS, "1")
    assert main(["eval", "-w", str(tiny_path), "-b", "numpy", "--positions", str(positions), "--json"]) == 0
    captured = capsys.readouterr()
    assert "eval" in captured.err and "3/3" in captured.err
    assert len(captured.out.splitlines()) == 3  # stdout is the JSON lines only


def test_eval_is_silent_in_logs(tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    positions = tmp_path / "positions.txt"
    positions.write_text("startpos\nstartpos | e2e4\n")
    monkeypatch.delenv(progress_module.ENV_PROGRESS, raising=False)
    assert main(["eval", "-w", str(tiny_path), "-b", "numpy", "--positions", str(positions), "--json"]) == 0
    assert "2/2" not in capsys.readouterr().err  # stderr is not a terminal here


def test_backendbench_shows_progress_when_forced(tiny_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress_module.ENV_PROGRESS, "1")
    assert main(["backendbench", "-w", str(tiny_path), "-b", "numpy", "--batches", "2",
                 "--batch-sizes", "1,3"]) == 0
    captured = capsys.readouterr()
    # warm-up: 1 batch of 3; then 2 x 1 + 2 x 3
    assert "backendbench numpy" in captured.err and "11/11" in captured.err
    assert "|" not in captured.out  # the bar never lands on stdout
