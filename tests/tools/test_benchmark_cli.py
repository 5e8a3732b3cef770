"""``lc0py benchmark``: lc0's output shape, position list and option errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lc0py.tools.bench_stats import format_nps
from lc0py.tools.benchmark import POSITIONS, split_position

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lc0py", "benchmark", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_positions_are_lc0s_list() -> None:
    assert len(POSITIONS) == 34
    assert POSITIONS[0] == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    assert split_position(POSITIONS[18]) == (
        "2K5/p7/7P/5pR1/8/5k2/r7/8 w - - 0 1",
        ["g5g6", "f3e3", "g6g5", "e3f3"],
    )


def test_output_shape_random_backend() -> None:
    r = _run("--backend", "random", "--nodes", "200", "--num-positions", "3")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "" and out[1] == f"Position: 1/3 {POSITIONS[0]}"
    bench = [s for s in out if s.startswith("Benchmark time ")]
    assert all(
        re.fullmatch(r"Benchmark time \d+ ms, \d+ nodes, -?\d+ nps(, move [a-h][1-8][a-h][1-8][qrbn]?)?", s)
        for s in bench
    )
    assert sum(s.startswith("bestmove ") for s in out) == 3
    assert out[-5:-4] == ["==========================="]
    # lc0 checks the node limit after each batch: each search may end a little past 200
    searched = int(out[-3].split(":")[1])
    assert out[-3].startswith("Nodes searched  : ") and 600 <= searched < 600 + 3 * 256
    total = int(out[-4].split(":")[1])
    assert out[-2] == f"Nodes/second    : {format_nps(1000 * searched / (total + 1))}"
    assert re.fullmatch(r"Bytes/node      : \d+\.\d", out[-1]) and 40 < float(out[-1].split(":")[1]) < 1000


def test_tiny_net_and_fen(tmp_path) -> None:
    tiny = ROOT / "weights" / "tiny-seed1.pb.gz"
    r = _run(
        "--weights",
        str(tiny),
        "--backend",
        "numpy",
        "--nodes",
        "8",
        "--fen",
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
        "--minibatch-size",
        "4",
    )
    assert r.returncode == 0, r.stderr
    assert "Position: 1/1 r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1" in r.stdout
    best = [s for s in r.stdout.splitlines() if s.startswith("bestmove ")][0]
    assert best.split()[1] not in ("e1g1", "e1c1")  # castling printed king-takes-rook


def test_bad_options_one_line_exit_2() -> None:
    for args in (
        ["--num-positions", "0"],
        ["--nodes", "-5"],
        ["--minibatch-size", "5000", "--backend", "random"],
        ["--backend", "nosuch", "--nodes", "1"],
    ):
        r = _run(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cpu_plan_on_cpu_backends() -> None:
    """A CPU backend without limits gets the small CPU plan (first 4 positions), said on stderr."""
    r = _run("--backend", "random", "--movetime", "50")
    assert r.returncode == 0, r.stderr
    assert "small CPU plan: the first 4 positions, 50 ms each" in r.stderr
    assert sum(s.startswith("bestmove ") for s in r.stdout.splitlines()) == 4


@pytest.mark.parametrize(
    "given,is_cpu,expected",
    [
        ({}, False, (34, 10000, -1, False)),
        ({}, True, (4, 5000, -1, True)),
        ({"nodes": 100}, True, (4, -1, 100, True)),
        ({"num_positions": 34, "movetime": 10000}, True, (34, 10000, -1, False)),
        ({"num_positions": 2}, True, (2, 5000, -1, True)),
    ],
)
def test_apply_plan(given: dict[str, int], is_cpu: bool, expected: tuple[int, int, int, bool]) -> None:
    import argparse

    from lc0py.tools.benchmark import apply_plan

    args = argparse.Namespace(**{"num_positions": None, "movetime": None, "nodes": None, **given})
    cpu = apply_plan(args, is_cpu)
    assert (args.num_positions, args.movetime, args.nodes, cpu) == expected
