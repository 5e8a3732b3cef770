"""Launching like lc0 (issue 12 item 4): no command runs the UCI engine, lc0's flags and config file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lc0py import __version__
from lc0py.cli.main import build_parser, main, with_default_command
from lc0py.uci.config import parse_config_text
from lc0py.uci.options import Options

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


@pytest.fixture(autouse=True)
def no_default_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lc0's config folders pointing into an empty temporary folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "system"))
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "bin" / "lc0py")])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["uci"]),
        (["--weights=x.pb.gz"], ["uci", "--weights=x.pb.gz"]),
        (["-w", "x.pb.gz", "-b", "numpy"], ["uci", "-w", "x.pb.gz", "-b", "numpy"]),
        (["-v"], ["-v", "uci"]),
        (["benchmark", "--nodes", "5"], ["benchmark", "--nodes", "5"]),
        (["-v", "eval"], ["-v", "eval"]),
        (["--help"], ["--help"]),
    ],
)
def test_no_command_means_uci(argv: list[str], expected: list[str]) -> None:
    assert with_default_command(argv) == expected


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"lc0py v{__version__}"


def _uci_options(argv: list[str]) -> Options:
    args = build_parser().parse_args(with_default_command(argv))
    options = Options()
    options.apply_args(args)
    return options


def test_lc0_short_flags_and_negated_booleans() -> None:
    o = _uci_options(["-w", "n.pb.gz", "-b", "numpy", "-o", "flash=off", "-t", "1", "--no-two-fold-draws"])
    assert (o["WeightsFile"], o["Backend"], o["BackendOptions"], o["Threads"]) == (
        "n.pb.gz",
        "numpy",
        "flash=off",
        1,
    )
    assert o["TwoFoldDraws"] is False and o.search_params().overlap is False  # Threads=1: no overlap
    o = _uci_options(["--show-wdl", "--chess960=true", "--no-ponder", "--syzygy-paths=/tb"])
    assert o["UCI_ShowWDL"] is True and o["UCI_Chess960"] is True and o["Ponder"] is False
    assert o["SyzygyPath"] == "/tb"


def test_config_file_format() -> None:
    text = "# a comment\n\n  weights=/nets/a.pb.gz  \n--backend=numpy\n--no-two-fold-draws\n"
    assert parse_config_text(text, "lc0.config") == [
        "--weights=/nets/a.pb.gz",
        "--backend=numpy",
        "--no-two-fold-draws",
    ]
    with pytest.raises(Exception, match="only '--' arguments"):
        parse_config_text("-w x\n", "lc0.config")


def test_config_file_flags_come_first(tmp_path: Path) -> None:
    config = tmp_path / "my.config"
    config.write_text("weights=/from/config.pb.gz\nbackend=numpy\n")
    o = _uci_options(["-c", str(config), "--weights=/from/cmdline.pb.gz"])
    assert o["WeightsFile"] == "/from/cmdline.pb.gz" and o["Backend"] == "numpy"
    o = _uci_options([f"--config={config}"])
    assert o["WeightsFile"] == "/from/config.pb.gz"


def test_default_config_in_lc0s_user_folder(tmp_path: Path) -> None:
    (tmp_path / "lc0").mkdir()
    (tmp_path / "lc0" / "lc0.config").write_text("multipv=3\n")
    assert _uci_options([])["MultiPV"] == 3
    assert _uci_options(["--config="])["MultiPV"] == 1  # an empty name reads no file


def test_missing_config_file_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.config")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.config" in err[0]


def test_flags_only_start_the_uci_engine() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CONFIG_DIRS="/nonexistent")
    proc = subprocess.run(
        [sys.executable, "-m", "lc0py", f"--weights={TINY}", "-b", "numpy"],
        input="uci\nisready\nposition startpos\ngo nodes 3\nwait\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "uciok" in lines and "readyok" in lines
    assert lines[-1].startswith("bestmove ")
