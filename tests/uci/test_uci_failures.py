"""Every ``go`` gets exactly one ``bestmove`` whatever fails inside (issue 30 items 2 and 6):
unreadable Syzygy tables (one ``info string``, tables off for that search, play goes on), FEN
counters lc0 refuses (refused by ``position`` with lc0's message) or accepts (searched),
``LogFile`` (lc0's traffic log), and messages with control characters (one printable line)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import chess
import pytest

from lc0py.search.warmup import warm_up
from tests.shared_files import SYZYGY

KQK = "8/8/8/4k3/8/8/8/3QK3 w - - 0 1"
KQKR = "8/8/3r4/4k3/8/8/8/3QK3 w - - 0 1"  # Qxd6 enters KQvK: an in-tree probe


@pytest.fixture(scope="module", autouse=True)
def _warm_core() -> None:
    warm_up()  # the compiled core, before any hang guard


def _broken_tables(folder: Path, how: str) -> Path:
    names = ["KQvK", "KRvK"]
    if not all((SYZYGY / f"{n}.rtbw").exists() for n in names):
        pytest.skip("no Syzygy tables in ../shared/syzygy")
    for n in names:
        for ext in ("rtbw", "rtbz"):
            shutil.copy(SYZYGY / f"{n}.{ext}", folder / f"{n}.{ext}")
    for ext in ("rtbw", "rtbz"):
        table = folder / f"KQvK.{ext}"
        size = table.stat().st_size
        if how == "truncated":
            os.truncate(table, size // 2)
        elif how == "corrupt":  # the header kept: the probe itself fails (python-chess's struct/mmap)
            with open(table, "r+b") as f:
                f.seek(16)
                f.write(b"\xff" * (size - 16))
        else:
            table.write_bytes(b"")
    return folder


@pytest.mark.parametrize("how", ["truncated", "corrupt", "empty"])
@pytest.mark.parametrize("fen", [KQK, KQKR])
def test_unreadable_tables_are_one_line_and_the_search_goes_on(
    how: str, fen: str, tmp_path: Path, engine_factory, tiny_weights: Path  # type: ignore[no-untyped-def]
) -> None:
    tables = _broken_tables(tmp_path, how)
    e = engine_factory("-w", str(tiny_weights), "--backend", "numpy", f"--syzygy-paths={tables}")
    for _ in range(2):  # each search: the tables tried again, said again, a bestmove each time
        e.send("ucinewgame")  # a fresh tree: the in-tree probe happens again
        e.send(f"position fen {fen}")
        e.send("go nodes 40")
        got = e.expect(lambda line: line.startswith("bestmove"))
        said = [line for line in got if line.startswith("info string Syzygy tablebases turned off")]
        assert len(said) == 1, got
        assert not [line for line in got if line.startswith("error")], got
        move = chess.Move.from_uci(got[-1].split()[1])
        assert move in chess.Board(fen).legal_moves
        assert any(" score " in line for line in got)  # searched, not a fallback


@pytest.mark.parametrize("counters", ["0 2147483648", "0 18446744073709551616", "2147483648 1"])
def test_fen_counters_lc0_refuses_are_refused(counters: str, engine_factory, tiny_weights: Path) -> None:  # type: ignore[no-untyped-def]
    e = engine_factory("-w", str(tiny_weights), "--backend", "numpy")
    e.send(f"position fen {KQK[:-4]} {counters}")
    e.send("go nodes 5")
    got = e.expect(lambda line: line.startswith("bestmove"))
    assert got[0].startswith("error Bad fen string (bad "), got  # lc0 0.32.1's message
    assert got[-1] == "bestmove (none)"


@pytest.mark.parametrize("counters", ["0 2147483647", "2147483647 1", "99 2147483647", "0 0"])
def test_fen_counters_lc0_accepts_are_searched(counters: str, engine_factory, tiny_weights: Path) -> None:  # type: ignore[no-untyped-def]
    fen = f"r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - {counters}"
    e = engine_factory("-w", str(tiny_weights), "--backend", "numpy")
    e.send(f"position fen {fen}")
    e.send("go nodes 30")
    got = e.expect(lambda line: line.startswith("bestmove"))
    assert not [line for line in got if line.startswith("error")], got
    assert chess.Move.from_uci(got[-1].split()[1]) in chess.Board(fen).legal_moves


def test_logfile_records_the_session_both_ways(tmp_path: Path, engine_factory, tiny_weights: Path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "engine.log"
    log.write_text("earlier\n")
    e = engine_factory("-w", str(tiny_weights), "--backend", "numpy")
    e.send("uci")
    e.expect(lambda line: line == "uciok")
    e.send(f"setoption name LogFile value {log}")
    e.send("isready")
    e.expect(lambda line: line == "readyok")
    e.send("setoption name LogFile value ")  # stops logging
    e.send("isready")
    e.expect(lambda line: line == "readyok")
    text = log.read_text()
    assert text.startswith("earlier\n")  # appended, as lc0
    assert "Log started." in text
    assert text.count(">> uci") == 1 and "<< uciok" in text  # the session before the option too
    assert ">> isready" in text and "<< readyok" in text
    assert text.count("<< readyok") == 1  # nothing after logging stopped


def test_logfile_refuses_a_fifo_without_hanging(tmp_path: Path, engine_factory) -> None:  # type: ignore[no-untyped-def]
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    e = engine_factory("--backend", "random")
    e.send(f"setoption name LogFile value {fifo}")
    e.send("isready")
    got = e.expect(lambda line: line == "readyok")
    assert any(line.startswith("error") and "LogFile" in line for line in got), got


def test_control_characters_in_a_message_stay_on_one_line(tmp_path: Path, engine_factory) -> None:  # type: ignore[no-untyped-def]
    e = engine_factory("--backend", "numpy")
    e.send(f"setoption name WeightsFile value {tmp_path}/a\x1b[31mb.pb.gz")
    e.send("isready")
    got = e.expect(lambda line: line == "readyok")
    errors = [line for line in got if line.startswith("error")]
    assert errors and "\\x1b[31m" in errors[0], got
    assert not any("\x1b" in line for line in got)
