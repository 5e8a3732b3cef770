"""Every command that takes a path answers a bad one (too long, a directory, a FIFO, a device) with
one ``lc0py:`` line and exit status 2, never a traceback or a hang (issue 9)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.errors import one_line

ROOT = Path(__file__).resolve().parents[2]
TINY = str(ROOT / "weights" / "tiny-seed1.pb.gz")


def _commands(bad: str) -> list[list[str]]:
    return [
        ["describenet", "-w", bad],
        ["eval", "-w", bad, "--backend", "numpy"],
        ["eval", "-w", TINY, "--backend", "numpy", "--positions", bad],
        ["verify", "-w", bad, "--backend", "numpy"],
        ["backendbench", "-w", bad, "--backend", "numpy", "--batches", "1"],
        ["benchmark", "-w", bad, "--backend", "numpy", "--nodes", "1", "--num-positions", "1"],
    ]


@pytest.mark.parametrize("kind", ["long-name", "directory", "fifo", "device"])
def test_bad_input_paths(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if kind == "long-name":
        bad = str(tmp_path / ("x" * 300))
    elif kind == "directory":
        bad = str(tmp_path)
    elif kind == "fifo":
        bad = str(tmp_path / "pipe")
        os.mkfifo(bad)
    else:
        bad = "/dev/zero"
        if not os.path.exists(bad):
            pytest.skip("no /dev/zero")
    for argv in _commands(bad):
        rc = main(argv)
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert rc == 2 and len(lines) == 1, (argv, captured.err)
        assert "Traceback" not in captured.err
        if kind != "long-name":  # named as what it is, not "no such file"
            assert "no such" not in lines[0] and ("directory" in lines[0] or "FIFO" in lines[0]
                                                  or "character device" in lines[0]), lines


@pytest.mark.parametrize("argv", [["make-net", "-o", "{long}"], ["uci", "--logfile", "{long}/x.log"]])
def test_bad_output_paths(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long = str(tmp_path / ("x" * 300))
    rc = main([a.replace("{long}", long) for a in argv])
    captured = capsys.readouterr()
    assert rc == 2 and len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err


@pytest.mark.parametrize("name", ["new\nline.pb.gz", "esc\x1b[31mape.pb.gz", "bell\x07.pb.gz"])
def test_control_characters_in_a_path_are_escaped_on_one_line(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path with a newline or a terminal escape: one line, the characters escaped (issue 30)."""
    bad = str(tmp_path / name)
    for argv in _commands(bad):
        rc = main(argv)
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert rc == 2 and len(lines) == 1, (argv, err)
        assert "\x1b" not in err and "\x07" not in err, (argv, err)
        assert one_line(name) in lines[0], (argv, lines)  # named, escaped
