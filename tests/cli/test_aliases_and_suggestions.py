"""lc0's mode names as aliases, and "did you mean" for misspelt commands, backends and options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.tools.benchmark import BENCH_MOVETIME_MS, BENCH_POSITIONS, apply_plan
from lc0py.weights import random_network, save_network


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_misspelt_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evl"]) == 2
    assert "unknown command 'evl'; did you mean 'eval'?" in _one_line(capsys)
    assert main(["describnet"]) == 2
    assert "did you mean 'describenet'" in _one_line(capsys)


def test_misspelt_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-w", "weights/tiny-seed1.pb.gz", "--backend", "cuda16"]) == 2
    assert "did you mean 'cuda-fp16'?" in _one_line(capsys)


def test_misspelt_option_under_auto_says_the_cause_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "-w", "weights/tiny-seed1.pb.gz", "-o", "precison=fp64"]) == 2
    line = _one_line(capsys)
    assert line.startswith("lc0py: --backend-opts: unknown option(s) precison")
    assert "did you mean precision?" in line[:150]


def test_bench_is_lc0s_short_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "benchmark" in capsys.readouterr().out
    args = argparse.Namespace(num_positions=None, movetime=None, nodes=None, short_plan=True)
    assert apply_plan(args, is_cpu=True) is False
    assert (args.num_positions, args.movetime, args.nodes) == (BENCH_POSITIONS, BENCH_MOVETIME_MS, -1)
    assert (BENCH_POSITIONS, BENCH_MOVETIME_MS) == (10, 500)  # lc0 0.32.1's bench


def test_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "-b", "random", "--num-positions", "1", "--nodes", "50"]) == 0
    assert "Nodes searched" in capsys.readouterr().out


def test_leela2onnx_is_export_onnx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx")
    net = tmp_path / "tiny.pb.gz"
    save_network(random_network("tiny", seed=46), net)
    out = tmp_path / "tiny.onnx"
    assert main(["leela2onnx", "--input", str(net), "--output", str(out)]) == 0
    assert out.stat().st_size > 1000
