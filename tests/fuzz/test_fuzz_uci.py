"""Seeded fuzzing of the UCI loop: ``python -m lc0py uci --backend random`` gets random sequences of
valid, half-valid and garbage commands. The engine must answer every ``isready`` with ``readyok``
(no hang), stop on ``quit`` with status 0, never print a traceback or an unexpected-exception
``error`` line, and stay within a memory bound (peak RSS of the child).

The kinds of issue 30: clocks at 0, negative, tiny and huge; FEN counters past lc0's range;
``SyzygyPath`` at truncated, corrupt, empty and non-regular table files (with endgame positions
that probe them); bursts of ``go``/``stop``/``ucinewgame``. Every ``go`` that was answered at all
has exactly one ``bestmove`` and the engine's thread count stays within a bound of where it
started (a count, never a time). ``quit`` at any point, on every CPU backend, exits with 0
(issue 29: python-chess's ``Threads``/``ucinewgame``/two searches/``quit`` aborted onnx-cpu)."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import chess
import pytest

from devtools.lc0_binary import HANG_GUARD_S, EngineHung, UciSession, lc0py_session
from lc0py.chess.testing import random_moves
from lc0py.search.warmup import warm_up
from tests.fuzz.fuzzutil import SLOW_FACTOR, case_seeds, failure
from tests.fuzz.test_fuzz_inputs import JUNK, NUMBERS, SEED_FENS, _mutate_text
from tests.peak_memory import peak_rss_mb
from tests.shared_files import SYZYGY

SESSIONS = 4
COMMANDS = 100
OPTIONS = ["CPuct", "FpuValue", "PolicyTemperature", "DrawScore", "MultiPV", "MinibatchSize", "NNCacheSize",
           "ScoreType", "UCI_ShowWDL", "VerboseMoveStats", "MoveOverheadMs", "SmartPruningFactor",
           "HistoryFill", "BackendOptions", "WeightsFile", "LogFile", "Threads", "Bogus Option"]
# an exception lc0py did not turn into its own message: "error ValueError: ..."
UNEXPECTED = re.compile(r"^error [A-Z]\w*(Error|Exception)\b")
CLOCKS = ["0", "-1", "-1000", "1", "3", "10", "50", "1000000000000", "9223372036854775807",
          "-9223372036854775808"]
ENDGAME_FENS = ["8/8/8/4k3/8/8/8/3QK3 w - - 0 1", "8/8/8/4k3/8/8/8/3RK3 b - - 0 1",
                "8/8/3r4/4k3/8/8/8/3QK3 w - - 0 1", "8/8/8/4k3/8/8/3q4/3RK3 w - - 3 60"]
COUNTERS = ["0 1", "0 2147483647", "2147483647 1", "0 2147483648", "0 18446744073709551616",
            "99999999999999999999 1", "-2147483649 1", "150 4000000000", "0 -1", "0 0"]
THREAD_SLACK = 8  # threads one search may hold (worker, watchdog, evaluation) with room to spare


def _syzygy_folders(folder: Path) -> list[str]:
    """Folders of real tables with one broken file each: truncated, corrupt after the header,
    garbage, empty, and a FIFO named as a table (skipped by python-chess: not a regular file)."""
    source = SYZYGY
    names = ["KQvK", "KRvK", "KQvKR"]
    if not all((source / f"{n}.rtbw").exists() for n in names):
        return []
    out = []
    for kind in ("truncated", "corrupt", "garbage", "empty", "fifo"):
        d = folder / f"tb-{kind}"
        if not d.exists():
            d.mkdir()
            for n in names:
                for ext in ("rtbw", "rtbz"):
                    shutil.copy(source / f"{n}.{ext}", d / f"{n}.{ext}")
            broken = d / "KQvK.rtbw"
            size = broken.stat().st_size
            if kind == "truncated":
                os.truncate(broken, size // 2)
            elif kind == "corrupt":
                with open(broken, "r+b") as f:
                    f.seek(16)
                    f.write(b"\xff" * (size - 16))
            elif kind == "garbage":
                broken.write_bytes(random.Random(size).randbytes(size))
            elif kind == "empty":
                broken.write_bytes(b"")
            else:
                broken.unlink()
                os.mkfifo(broken)
        out.append(str(d))
    return out


def _moves_from(rng: random.Random, board: chess.Board) -> list[str]:
    moves = random_moves(board, rng.randint(0, 10), rng)
    if rng.random() < 0.1:
        moves.append(rng.choice(["e2e5", "a1a1", "zz", "e7e8q", "0000"]))
    return moves


def _clock_go(rng: random.Random) -> str:
    """A ``go`` with a clock at 0, negative, tiny or huge (issue 30)."""
    clock = rng.choice(CLOCKS)
    if rng.random() < 0.3:
        return f"go movetime {clock}"
    return (f"go wtime {clock} btime {rng.choice(CLOCKS)} winc {rng.choice(CLOCKS)} binc {rng.choice(CLOCKS)}"
            + (f" movestogo {rng.choice(['1', '0', '-3', '1000000'])}" if rng.random() < 0.3 else ""))


def _command(rng: random.Random, folder: Path) -> str:
    kind = rng.randrange(16)
    if kind == 12:
        return _clock_go(rng)
    if kind == 13:  # FEN counters past lc0's range, and endgames for the tables
        fen = " ".join(rng.choice(ENDGAME_FENS + SEED_FENS).split()[:4])
        return f"position fen {fen} {rng.choice(COUNTERS)}"
    if kind == 14:  # a storm: searches stopped, restarted and reset in a burst
        choices = ["go infinite", "go movetime 1", "go nodes 2", _clock_go(rng), "stop", "stop", "ucinewgame",
                   "position startpos", "isready"]
        burst = [rng.choice(choices) for _ in range(rng.randint(3, 12))]
        return "\n".join(burst)
    if kind == 15:
        folders = _syzygy_folders(folder)
        value = rng.choice(folders) if folders and rng.random() < 0.9 else ""
        return f"setoption name SyzygyPath value {value}"
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
    """``count`` commands to one engine; when a ``go`` finds no usable backend (a fuzzed
    ``BackendOptions`` or ``WeightsFile``) the engine ends with status 1 as documented, and the
    session goes on with a fresh one."""
    rng = random.Random(seed)
    fifo = folder / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    sent: list[str] = []
    totals = {"commands": 0, "bestmoves": 0, "errors": 0, "restarts": 0, "peak_mb": 0}
    left = count
    while True:
        engine = lc0py_session("--backend", "random", cwd=folder,
                               env={"LC0PY_CACHE_DIR": str(folder / "cache")})
        rc: int | None = None
        try:
            engine.send("isready")
            engine.expect(lambda line: line == "readyok")
            baseline = _threads(engine.proc.pid)  # the backend and BLAS pools are there by now
            most = baseline
            while left > 0:
                left -= 1
                line = _command(rng, folder)
                sent.append(line)
                engine.send(line)
                if rng.random() < 0.15:
                    engine.send("isready")
                    engine.expect(lambda line: line == "readyok")
                    most = max(most, _threads(engine.proc.pid))
            engine.send("stop")
            engine.send("isready")
            engine.expect(lambda line: line == "readyok")
            most = max(most, _threads(engine.proc.pid))
            assert most <= baseline + THREAD_SLACK, f"threads grew from {baseline} to {most}"
            totals["peak_mb"] = max(totals["peak_mb"], int(peak_rss_mb(engine.proc.pid)))
            engine.send("quit")
            rc = engine.wait(HANG_GUARD_S)
            if rc == 1:  # it ended at a go before the quit came
                raise EngineHung("exited")
        except EngineHung as exc:
            exited = engine.proc.poll() is not None or "exited" in str(exc)  # its output ended
            if not exited:  # no readyok in time: a hang
                engine.proc.kill()
                raise AssertionError(failure("uci", seed, f"{exc}; last commands {sent[-5:]}")) from exc
            # the documented exit: a go with no backend that can search ends the engine (status 1)
            rc = engine.wait(HANG_GUARD_S)
            _check_output(engine, seed, sent)
            said = any(line.startswith("info string no network can search here") for line in engine.received)
            assert rc == 1 and said, failure("uci", seed, f"{exc}; status {rc}; last commands {sent[-5:]}")
            totals["restarts"] += 1
            _count(totals, engine)
            continue
        except (AssertionError, subprocess.TimeoutExpired) as exc:
            engine.proc.kill()
            raise AssertionError(failure("uci", seed, f"{exc}; last commands {sent[-5:]}")) from exc
        finally:
            if engine.proc.poll() is None:
                engine.proc.kill()
        stderr = _check_output(engine, seed, sent)
        assert rc == 0, failure("uci", seed, f"exit status {rc}; stderr {stderr[-500:]}")
        _count(totals, engine)
        totals["commands"] = len(sent)
        return totals


def _check_output(engine: UciSession, seed: int, sent: list[str]) -> str:
    """No traceback, no unexpected-exception ``error`` line, no raw escape code; the stderr."""
    stderr = "\n".join(engine.stderr)
    assert "Traceback" not in stderr, failure("uci", seed, stderr[-2000:])
    unexpected = [line for line in engine.received if UNEXPECTED.match(line)]
    assert not unexpected, failure("uci", seed, f"{unexpected[:3]}")
    raw = [line for line in engine.received if "\x1b" in line]
    assert not raw, failure("uci", seed, f"raw escape codes in {raw[:2]}")
    return stderr


def _count(totals: dict[str, int], engine: UciSession) -> None:
    totals["bestmoves"] += sum(line.startswith("bestmove") for line in engine.received)
    totals["errors"] += sum(line.startswith("error") for line in engine.received)


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


def _threads(pid: int) -> int:
    """The thread count of a running process (Linux /proc; 0 elsewhere: no check)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def test_uci_fuzz(tmp_path: Path) -> None:
    _run(4, SESSIONS, COMMANDS, tmp_path)


def _backends() -> list[str]:
    names = ["random", "numpy"]
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return names
    return [*names, "onnx-cpu"]


PYTHON_CHESS_SEQUENCE = ["uci", "setoption name Threads value 1", "isready", "ucinewgame", "isready",
                         "position startpos", "go wtime 2000 btime 2000 winc 100 binc 100", "<bestmove>",
                         "position startpos moves e2e4 e7e5", "go wtime 1900 btime 1900 winc 100 binc 100",
                         "<bestmove>", "quit"]


@pytest.mark.parametrize("backend", _backends())
def test_quit_is_clean_in_any_order(backend: str, tmp_path: Path) -> None:
    """python-chess's sequence as it sends it, then the same commands cut at a random point by
    ``quit`` (during a search, right after ``ucinewgame``, before any ``isready``...): status 0
    and nothing on stderr about an abort, on each CPU backend."""
    warm_up()  # the compiled core, loaded before the guarded part
    weights = Path(__file__).resolve().parents[2] / "weights" / "tiny-seed1.pb.gz"
    for seed in case_seeds(29, 4):
        rng = random.Random(seed)
        commands = list(PYTHON_CHESS_SEQUENCE)
        if seed % 4:  # the first run: the sequence whole; then cut and stirred
            cut = rng.randrange(1, len(commands))
            kept: list[str] = []
            for c in commands[:cut]:  # a <bestmove> is awaited only after its go was sent
                if (c == "<bestmove>" and kept and kept[-1].startswith("go")) or (
                        c != "<bestmove>" and rng.random() < 0.8):
                    kept.append(c)
            commands = [*kept, "quit"]
        engine = lc0py_session("-w", str(weights), "--backend", backend, cwd=tmp_path,
                               env={"LC0PY_CACHE_DIR": str(tmp_path / "cache")})
        try:
            for command in commands:
                if command == "<bestmove>":
                    engine.expect(lambda line: line.startswith("bestmove"))
                else:
                    engine.send(command)
            rc = engine.wait(HANG_GUARD_S)
        except (EngineHung, subprocess.TimeoutExpired) as exc:
            engine.proc.kill()
            raise AssertionError(failure("uci quit", seed, f"{backend}: {exc}; commands {commands}")) from exc
        finally:
            engine.close()
        stderr = "\n".join(engine.stderr)
        assert rc == 0, failure("uci quit", seed, f"{backend}: exit status {rc}; {commands}; {stderr[-300:]}")
        aborted = "terminate called" in stderr or "Traceback" in stderr
        assert not aborted, failure("uci quit", seed, stderr)


@pytest.mark.slow
def test_uci_fuzz_long(tmp_path: Path) -> None:
    _run(14, SESSIONS * SLOW_FACTOR // 2, COMMANDS * 4, tmp_path)
