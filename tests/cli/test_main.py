"""The CLI's contract for bad input: one line on stderr, exit status 2, no traceback."""

from __future__ import annotations

import pytest

from lc0py.cli.main import COMMANDS, build_parser, main


@pytest.mark.parametrize(
    "argv",
    [
        ["nosuch"],
        ["uci", "--bogus-flag"],
        ["eval", "--weights"],  # flag without its value
        ["make-net", "--preset", "t82", "--encoding", "float8", "-o", "x.pb.gz"],
    ],
    ids=["unknown-command", "unknown-flag", "missing-value", "bad-choice"],
)
def test_usage_errors_are_one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("lc0py") and "Traceback" not in err[0]


def test_help_prints_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "COMMAND" in capsys.readouterr().out


def test_library_errors_become_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describenet", "--weights", "/nonexistent/net.pb.gz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/nonexistent/net.pb.gz" in err[0]


def test_every_listed_command_is_built() -> None:
    # A command whose module fails to import would silently vanish from the CLI.
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    built = set(sub.choices)  # type: ignore[attr-defined]
    missing = [c for c in COMMANDS if c not in built and c not in ("attnbench", "tune")]
    assert not missing, f"commands not built: {missing}"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import lc0py

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"lc0py v{lc0py.__version__}"
