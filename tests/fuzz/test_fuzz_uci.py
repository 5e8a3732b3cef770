"""Seeded fuzzing of the UCI loop: ``python -m lc0py uci --backend random`` gets random sequences of
valid, half-valid and garbage commands. The engine must answer every ``isready`` with ``readyok``
(no hang), stop on ``quit`` with status 0, never print a traceback or an unexpected-exception
``error`` line, and stay within a memory bound (peak RSS of the child)."""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import chess
import pytest

from devtools.lc0_binary import HANG_GUARD_S, EngineHung, lc0py_session
from lc0py.chess.testing import random_moves
from tests.fuzz.fuzzutil import SLOW_FACTOR, case_seeds, failure
from tests.fuzz.test_fuzz_inputs import JUNK, NUMBERS, SEED_FENS, _mutate_text
from tests.peak_memory import peak_rss_mb

SESSIONS = 4
COMMANDS = 100
OPTIONS = ["CPuct", "FpuValue", "PolicyTemperature", "DrawScore", "MultiPV", "MinibatchSize", "NNCacheSize",
           "ScoreType", "UCI_ShowWDL", "VerboseMoveStats", "MoveOverheadMs", "SmartPruningFactor",
           "HistoryFill", "BackendOptions", "WeightsFile", "LogFile", "Threads", "Bogus Option"]
# an exception lc0py did not turn into its own message: "error ValueError: ..."
UNEXPECTED = re.compile(r"^error [A-Z]\w*(Error|Exception)\b")


def _moves_from(rng: random.Random, board: chess.Board) -> list[str]:
    moves = random_moves(board, rng.randint(0, 10), rng)
    if rng.random() < 0.1:
        moves.append(rng.choice(["e2e5", "a1a1", "zz", "e7e8q", "0000"]))
    return moves


def _command(rng: random.Random, folder: Path) -> str:
    kind = rng.randrange(12)
    if kind == 0:
        return rng.choice(["uci", "isready", "ucinewgame", "stop", "ponderhit", "xyzzy"])
    if kind in (1, 2):
        return "position startpos moves " + " ".join(_moves_from(rng, chess.Board()))
    if kind == 3:
        fen = rng.choice(SEED_FENS)
        if rng.random() < 0.5:
            fen = _mutate_text(rng, fen, "pnbrqkPNBRQK12345678/ wb-")
        try:
            board = chess.Board(fen)
        except ValueError:
            board = chess.Board()
        return f"position fen {fen} moves " + " ".join(_moves_from(rng, board))
    if kind in (4, 5):
        return rng.choice([f"go nodes {rng.randint(1, 200)}", f"go movetime {rng.randint(1, 40)}",
                           "go depth 2",
                           f"go wtime {rng.choice(NUMBERS)} btime {rng.randint(-5, 5000)} movestogo 3",
                           f"go nodes {rng.choice(NUMBERS)}", "go infinite", "go ponder", "go mate 2",
                           f"go searchmoves e2e4 d2d4 nodes {rng.randint(1, 50)}"])
    if kind in (6, 7):
        name = rng.choice(OPTIONS)
        value = rng.choice(NUMBERS + JUNK)
        if name == "WeightsFile":
            value = rng.choice(["/dev/zero", str(folder / "fifo"), str(folder), "/nonexistent/x.pb.gz",
                                "<autodiscover>"])
        elif name == "LogFile":
            value = rng.choice(["/nonexistent/x.log", str(folder), ""])
        elif name == "BackendOptions":
            value = rng.choice(["seed=-1", "delay_ms=nan", "seed=3", "uniform=on", "input_format=0", "x", ""])
        return f"setoption name {name} value {value}"
    if kind == 8:
        seeds = ["position startpos", "go nodes 5", "setoption name CPuct value 2"]
        return _mutate_text(rng, rng.choice(seeds), "abcdefgh12345678 ")
    if kind == 9:
        return "".join(rng.choice("abcxyz 0123456789\t|#-") for _ in range(rng.randint(0, 30)))
    if kind == 10:
        return rng.choice(JUNK)
    return "isready"


def _session(seed: int, count: int, folder: Path) -> dict[str, int]:
    rng = random.Random(seed)
    fifo = folder / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    engine = lc0py_session("--backend", "random", cwd=folder, env={"LC0PY_CACHE_DIR": str(folder / "cache")})
    sent: list[str] = []
    try:
        for _ in range(count):
            line = _command(rng, folder)
            sent.append(line)
            engine.send(line)
            if rng.random() < 0.15:
                engine.send("isready")
                engine.expect(lambda line: line == "readyok")
        engine.send("stop")
        engine.send("isready")
        engine.expect(lambda line: line == "readyok")
        peak_mb = peak_rss_mb(engine.proc.pid)  # the engine's own address space, before it exits
        engine.send("quit")
        rc = engine.wait(HANG_GUARD_S)
    except (EngineHung, subprocess.TimeoutExpired) as exc:  # EngineHung: no readyok in time
        engine.proc.kill()
        raise AssertionError(failure("uci", seed, f"{exc}; last commands {sent[-5:]}")) from exc
    finally:
        if engine.proc.poll() is None:
            engine.proc.kill()
    stderr = "\n".join(engine.stderr)
    assert rc == 0, failure("uci", seed, f"exit status {rc}; stderr {stderr[-500:]}")
    assert "Traceback" not in stderr, failure("uci", seed, stderr[-2000:])
    unexpected = [line for line in engine.received if UNEXPECTED.match(line)]
    assert not unexpected, failure("uci", seed, f"{unexpected[:3]}")
    return {"commands": len(sent), "bestmoves": sum(line.startswith("bestmove") for line in engine.received),
            "errors": sum(line.startswith("error") for line in engine.received), "peak_mb": int(peak_mb)}


def _run(base: int, sessions: int, commands: int, tmp_path: Path) -> None:
    totals: dict[str, int] = {}
    peak_mb = 0
    for seed in case_seeds(base, sessions):
        got = _session(seed, commands, tmp_path)
        peak_mb = max(peak_mb, got.pop("peak_mb"))
        for key, value in got.items():
            totals[key] = totals.get(key, 0) + value
    assert peak_mb < 2048, f"peak RSS of an engine {peak_mb:.0f} MB"
    print(f"uci fuzz: {sessions} sessions from base seed {base}: {totals}, child peak RSS {peak_mb:.0f} MB")


def test_uci_fuzz(tmp_path: Path) -> None:
    _run(4, SESSIONS, COMMANDS, tmp_path)


@pytest.mark.slow
def test_uci_fuzz_long(tmp_path: Path) -> None:
    _run(14, SESSIONS * SLOW_FACTOR // 2, COMMANDS * 4, tmp_path)
