"""Every option value is validated in one place (``OptionSpec.convert``): type, range, finiteness,
choices, its own check. ``setoption`` answers one ``error`` line and keeps the previous value;
the command line gives one ``lc0py:`` line and exit status 2 (issue 9 item 3)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from lc0py.cli.main import build_parser, main
from lc0py.errors import UsageError
from lc0py.uci.engine import run
from lc0py.uci.options import Options


def _uci(lines: list[str], *flags: str) -> list[str]:
    args = build_parser().parse_args(["uci", "--backend", "random", *flags])
    out = io.StringIO()
    assert run(args, stdin=io.StringIO("".join(line + "\n" for line in lines)), stdout=out) == 0
    return out.getvalue().splitlines()


FLOATS = ["CPuct", "FpuValue", "PolicyTemperature", "DrawScore", "CPuctBase", "SmartPruningFactor",
          "MovesLeftMaxEffect", "MaxOutOfOrderEvalsFactor"]


@pytest.mark.parametrize("name", FLOATS)
@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-inf", "1e999", "", "abc", "0x10"])
def test_non_finite_or_non_numeric_floats_are_refused(name: str, bad: str) -> None:
    options = Options()
    before = options[name]
    with pytest.raises(UsageError, match=f"Option {name}"):
        options.set(name, bad)
    assert options[name] == before and math.isfinite(options.search_params().cpuct)


def test_setoption_answers_error_and_keeps_the_previous_value() -> None:
    lines = _uci(["setoption name CPuct value 2.5", "setoption name CPuct value nan",
                  "setoption name MultiPV value 0", "setoption name MultiPV value 3",
                  "setoption name ScoreType value bogus", "setoption name Nope value 1",
                  "setoption name UCI_ShowWDL value maybe", "setoption name LogFile value /nonexistent/x.log",
                  "position startpos", "go nodes 30", "isready", "quit"])
    errors = [line for line in lines if line.startswith("error")]
    assert len(errors) == 6, lines
    assert "not a finite number" in errors[0] and "CPuct" in errors[0]
    assert "MultiPV" in errors[1] and "out of range" in errors[1]
    assert "LogFile" in errors[5] and "no directory" in errors[5]
    assert any(line.startswith("bestmove") for line in lines) and "readyok" in lines


def test_values_kept_after_refusal_reach_the_search() -> None:
    options = Options()
    options.set("CPuct", "2.5")
    with pytest.raises(UsageError):
        options.set("CPuct", "nan")
    assert options.search_params().cpuct == 2.5


@pytest.mark.parametrize("argv, words", [
    (["uci", "--cpuct", "nan"], "not a finite number"),
    (["uci", "--multipv", "-1"], "out of range"),
    (["uci", "--logfile", "/nonexistent/x.log"], "no directory"),
    (["uci", "--nncache", "1e9"], "not an integer"),
    (["make-net", "-o", "x.pb.gz", "--embedding-size", "1000000"], "--embedding-size"),
    (["make-net", "-o", "x.pb.gz", "--ffn-size", "1000000000"], "--ffn-size"),
    (["make-net", "-o", "x.pb.gz", "--seed", "-1"], "--seed"),
    (["make-net", "-o", "x.pb.gz", "--layers", "600", "--embedding-size", "4096"], "LC0PY_MAX_NET_BYTES"),
    (["benchmark", "--backend", "random", "--backend-opts", "seed=-1"], "seed=-1"),
    (["benchmark", "--backend", "random", "--backend-opts", "delay_ms=inf"], "delay_ms=inf"),
    (["benchmark", "--backend", "random", "--backend-opts", "delay_ms=nan"], "delay_ms=nan"),
    (["benchmark", "--backend", "random", "--backend-opts", "input_format=0"], "input_format"),
    (["verify", "--backend", "numpy", "--preset", "tiny", "--batch", "1000000000"], "--batch"),
])
def test_command_line_refusals_are_one_line(argv: list[str], words: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and words in lines[0], captured.err
    assert "Traceback" not in captured.err and not list(tmp_path.iterdir())


@pytest.mark.parametrize("key, value", [("attn_kv_tile", "0"), ("attn_kv_tile", "24"), ("attn_stages", "9"),
                                        ("attn_warps", "-1"), ("attn_f32_threads", "x")])
def test_flash_parameters_are_checked_against_the_kernel(key: str, value: str) -> None:
    from lc0py.backends.gpu.options import flash_param as _flash_param
    from lc0py.errors import BackendOptionError

    with pytest.raises(BackendOptionError, match=key):
        _flash_param(key, value)
    assert _flash_param("attn_kv_tile", "32") == 32


def test_onnx_batch_is_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime")
    root = Path(__file__).resolve().parents[2]
    rc = main(["backendbench", "--backend", "onnx-cpu", "-w", str(root / "weights" / "tiny-seed1.pb.gz"),
               "--backend-opts", "batch=1000000000"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "batch=1000000000 is out of range" in err[0]


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "directory"])
def test_weights_file_that_is_not_a_file_does_not_hang_the_loop(target: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    if target == "fifo":
        target = str(tmp_path / "pipe")
        os.mkfifo(target)
    elif target == "directory":
        target = str(tmp_path)
    elif not os.path.exists(target):
        pytest.skip("no /dev/zero")
    root = Path(__file__).resolve().parents[2]
    script = f"setoption name WeightsFile value {target}\nisready\nuci\nposition startpos\ngo nodes 5\nquit\n"
    proc = subprocess.run([sys.executable, "-m", "lc0py", "uci", "--backend", "numpy"], input=script,
                          capture_output=True, text=True, timeout=120, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)})  # timeout: a hang guard only
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr  # 1: go found no net (docs/uci.md)
    assert any(line.startswith("error") and target in line for line in lines), lines
    # The loop goes on after isready (uciok); with no net, no move is invented (lc0's behaviour
    # when no backend can be created, issue 12) and the go ends the engine (status 1).
    assert "uciok" in lines and not any(line.startswith("bestmove") for line in lines), lines
