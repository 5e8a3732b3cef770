"""The lc0 driver's parts that need no engine: finding the binary, parsing VerboseMoveStats and
option lines, comparing visit distributions (the engine runs are tests/search/test_vs_lc0.py and
tests/uci/test_vs_lc0_uci.py)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import chess
import pytest

from devtools.lc0_binary import (
    LC0_ENV,
    UciSession,
    find_lc0_binary,
    normalise_move,
    parse_verbose_block,
    position_command,
)
from devtools.search_fidelity import l1_distance
from devtools.uci_options_table import DELIBERATE, UciOption, compare, parse_option_line


# lc0 0.32.1's format (unvisited moves print zeros) and lc0py's (unvisited print -.-----), from
# real runs, shortened to three moves; castling as lc0 prints it (king takes rook).
def _engine_lines(text: str) -> list[str]:
    """Both engines end each VerboseMoveStats line with a space."""
    return [s + " " if s.startswith("info") else s for s in text.splitlines()]


LC0_BLOCK = """\
info string b1a3  (34  ) N:       0 (+ 0) (P:  0.31%) (WL:  0.00000) (D: 0.000) (M:  0.0) (Q:  0.00000) (U: 0.05456) (S: -0.25176) (V: -0.1024)
info string e1h1  (1   ) N:      17 (+ 0) (P: 14.12%) (WL:  0.00871) (D: 0.594) (M:  4.0) (Q:  0.00871) (U: 0.13760) (S:  0.14728) (V: -0.0870)
info string c2c3  (259 ) N:      17 (+ 2) (P: 17.30%) (WL: -0.01177) (D: 0.596) (M:  3.9) (Q: -0.01177) (U: 0.16866) (S:  0.15562) (V: -0.0906) (T)
info string node  (   3) N:      35 (+ 0) (P: 88.80%) (WL:  0.00423) (D: 0.591) (M:  4.7) (Q:  0.00423) (V:  0.0874)
bestmove e1h1 ponder b8a6"""  # noqa: E501 - real engine lines
LC0PY_BLOCK = """\
info string b1a3  (34  ) N:       0 (+ 0) (P:  0.31%) (WL:  -.-----) (D: -.---) (M:  -.-) (Q: -0.30617) (U: 0.05449) (S: -0.25168) (V:  -.----)
info string e1h1  (1   ) N:      16 (+ 0) (P: 14.09%) (WL:  0.00814) (D: 0.592) (M:  4.0) (Q:  0.00814) (U: 0.14476) (S:  0.15378) (V: -0.0870)
info string c2c3  (259 ) N:      18 (+ 0) (P: 17.32%) (WL: -0.01020) (D: 0.593) (M:  3.9) (Q: -0.01020) (U: 0.16799) (S:  0.15670) (V: -0.0906)
info string node  (   3) N:      35 (+ 0) (P: 87.17%) (WL:  0.00437) (D: 0.590) (M:  5.4) (Q:  0.00437) (V:  0.0874)
bestmove c2c3 ponder b8a6"""  # noqa: E501

LC0_BLOCK, LC0PY_BLOCK = _engine_lines(LC0_BLOCK), _engine_lines(LC0PY_BLOCK)
CASTLE_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/RN2K2R w KQkq - 0 1"


def test_parse_lc0_block() -> None:
    board = chess.Board(CASTLE_FEN)
    stats = parse_verbose_block(["info depth 1 …", *LC0_BLOCK], board)
    assert list(stats.moves) == ["b1a3", "e1g1", "c2c3"]  # king-takes-rook normalised
    assert stats.visits == {"b1a3": 0, "e1g1": 17, "c2c3": 17}
    assert stats.moves["c2c3"].in_flight == 2
    assert stats.moves["c2c3"].p == pytest.approx(0.1730)
    assert stats.moves["e1g1"].fields["WL"] == pytest.approx(0.00871)
    assert stats.root_n == 35 and stats.bestmove == "e1g1" and stats.ponder == "b8a6"
    assert stats.shares() == {"b1a3": 0.0, "e1g1": 0.5, "c2c3": 0.5}


def test_parse_lc0py_block_and_l1() -> None:
    board = chess.Board(CASTLE_FEN)
    ours = parse_verbose_block(LC0PY_BLOCK, board)
    assert ours.moves["b1a3"].fields["WL"] is None  # "-.-----": not visited
    theirs = parse_verbose_block(LC0_BLOCK, board)
    assert l1_distance(theirs.shares(), ours.shares()) == pytest.approx(2 / 34)
    assert l1_distance({"a": 1.0}, {"b": 1.0}) == 2.0  # a move missing on one side counts as 0


def test_only_the_last_block_counts() -> None:
    stats = parse_verbose_block([*LC0PY_BLOCK[:-1], "info depth 2", *LC0_BLOCK])
    assert stats.visits["c2c3"] == 17
    with pytest.raises(ValueError, match="no VerboseMoveStats"):
        parse_verbose_block(["info depth 1", "bestmove e2e4"])


def test_normalise_move_and_position_command() -> None:
    board = chess.Board(CASTLE_FEN)
    assert normalise_move("e1a1", board) == "e1a1"  # b1 knight in the way: not castling, left as is
    assert normalise_move("e1h1", board) == "e1g1"
    assert normalise_move("e1h1", None) == "e1h1"
    assert position_command(None, ["e2e4"]) == "position startpos moves e2e4"
    assert position_command("8/8/8/8/8/8/8/K6k w - - 0 1") == "position fen 8/8/8/8/8/8/8/K6k w - - 0 1"


def test_find_lc0_binary_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "lc0"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(LC0_ENV, str(fake))
    assert find_lc0_binary() == fake
    monkeypatch.setenv(LC0_ENV, "")
    assert find_lc0_binary() is None  # empty: "no lc0", the tests skip
    monkeypatch.setenv(LC0_ENV, str(tmp_path / "missing"))
    assert find_lc0_binary() is None


def test_session_reports_an_engine_that_exits() -> None:
    from devtools.lc0_binary import EngineHung

    with UciSession([sys.executable, "-c", "print('id name x')"], name="fake") as s:
        assert s.expect(lambda line: line.startswith("id name")) == ["id name x"]
        with pytest.raises(EngineHung, match="fake: exited"):
            s.expect(lambda line: line == "uciok", timeout=60)


def test_parse_option_lines() -> None:
    opt = parse_option_line("option name MinibatchSize type spin default 0 min 0 max 1024")
    assert (opt.name, opt.type, opt.default, opt.min, opt.max) == ("MinibatchSize", "spin", "0", "0", "1024")
    assert parse_option_line("option name LogFile type string default ").default == ""
    assert parse_option_line("option name ClearTree type button").default is None
    combo = parse_option_line(
        "option name FpuStrategy type combo default reduction var reduction var absolute"
    )
    assert combo.vars == ("reduction", "absolute")
    spaced = parse_option_line("option name Some Name type check default true")
    assert spaced.name == "Some Name"
    with pytest.raises(ValueError):
        parse_option_line("id name Lc0")


def test_compare_options() -> None:
    lc0 = {
        "A": UciOption("A", "spin", "1", "0", "9"),
        "B": UciOption("B", "check", "true"),
        "C": UciOption("C", "string", ""),
        "Backend": UciOption("Backend", "combo", "eigen", vars=("eigen",)),
    }
    ours = {
        "a": UciOption("a", "spin", "2", "0", "9"),
        "B": UciOption("B", "check", "true"),
        "Backend": UciOption("Backend", "combo", "auto", vars=("auto",)),
        "Own": UciOption("Own", "check", "false"),
    }
    rows = {r.name: r for r in compare(lc0, ours)}
    assert rows["A"].status == "differs" and "default `1` vs `2`" in rows["A"].differences
    assert rows["B"].status == "same" and rows["C"].status == "missing" and rows["Own"].status == "lc0py only"
    assert rows["Backend"].status == "differs" and "Backend" in DELIBERATE


def test_bestmove_that_is_not_a_move_is_kept_as_sent() -> None:
    # lc0 0.32.1 answers a position without legal moves with "bestmove a1a1".
    block = [*LC0_BLOCK[:-1], "bestmove a1a1 ponder h8h7"]
    stats = parse_verbose_block(block, chess.Board(CASTLE_FEN))
    assert (stats.bestmove, stats.ponder) == ("a1a1", "h8h7")
