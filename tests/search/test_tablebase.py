"""Syzygy tablebases as lc0 uses them (issue 12 item 6): root filter by DTZ/WDL, in-tree WDL probes.

Tables: ``../shared/syzygy`` beside the repository (3-4 pieces), copied into the test's folder;
skipped without them. Expected results come from python-chess's own probes of the same tables.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import chess
import chess.syzygy
import pytest

from lc0py.search.tablebase import SyzygyTablebase
from tests.shared_files import syzygy_tables


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return syzygy_tables(tmp_path_factory.mktemp("syzygy"))


def _wdl_after(tb: chess.syzygy.Tablebase, board: chess.Board, move: chess.Move) -> int:
    after = board.copy(stack=False)
    after.push(move)
    return -tb.probe_wdl(after)


def test_opens_the_folder(tables: Path) -> None:
    tb = SyzygyTablebase(str(tables))
    assert tb.max_pieces == 4 and tb.wdl_files > 10 and tb.dtz_files > 10
    assert tb.applies(chess.Board("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1"))
    assert not tb.applies(chess.Board())  # castling rights, 32 pieces


def test_root_filter_keeps_only_the_wins(tables: Path) -> None:
    board = chess.Board("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")  # Qc7 stalemates, Qc8 mates
    tb = SyzygyTablebase(str(tables))
    moves, by_dtz = tb.root_moves(board, repeated=False, fast_play=False)
    assert by_dtz and tb.hits == 1
    with chess.syzygy.open_tablebase(str(tables)) as ref:
        wins = [m for m in board.legal_moves if _wdl_after(ref, board, m) == 2]
    assert 0 < len(wins) < board.legal_moves.count()
    assert sorted(moves, key=str) == sorted(wins, key=str)  # certain wins are all equal


def test_fast_play_and_the_fifty_move_rule_prefer_short_wins(tables: Path) -> None:
    tb = SyzygyTablebase(str(tables))
    for fen, repeated, fast in (
        ("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1", False, True),
        ("8/8/8/3k4/8/8/8/2Q1K3 w - - 90 80", False, False),  # a win beyond ply 99 is ranked lower
    ):
        board = chess.Board(fen)
        moves, _ = tb.root_moves(board, repeated, fast)
        with chess.syzygy.open_tablebase(str(tables)) as ref:
            dtz = {}
            for m in board.legal_moves:
                after = board.copy(stack=False)
                after.push(m)
                if -ref.probe_wdl(after) == 2:
                    dtz[m] = 1 if after.is_checkmate() else -ref.probe_dtz(after) + 1
        shortest = min(dtz.values())
        assert moves and all(dtz[m] == shortest for m in moves), fen


def test_wdl_fallback_without_dtz_tables(tables: Path, tmp_path: Path) -> None:
    for f in tables.glob("*.rtbw"):
        shutil.copy(f, tmp_path / f.name)
    tb = SyzygyTablebase(str(tmp_path))
    assert tb.dtz_files == 0
    board = chess.Board("k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    moves, by_dtz = tb.root_moves(board, repeated=False, fast_play=False)
    assert not by_dtz and moves and tb.hits == 1
    with chess.syzygy.open_tablebase(str(tables)) as ref:
        assert all(_wdl_after(ref, board, m) == 2 for m in moves)


def test_outside_the_tables_nothing_is_filtered(tables: Path) -> None:
    tb = SyzygyTablebase(str(tables))
    assert tb.root_moves(chess.Board("3rk3/8/8/8/8/8/4P3/3QK3 w - - 0 1"), False, False) == ([], False)
    assert tb.hits == 0


def test_bad_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="SyzygyPath"):
        SyzygyTablebase(str(tmp_path / "nope"))


def test_a_draw_is_preferred_to_losses(tables: Path) -> None:
    board = chess.Board("8/8/8/8/8/2k5/3Q4/7K b - - 0 1")  # Kxd2 draws, every other move loses
    moves, _ = SyzygyTablebase(str(tables)).root_moves(board, repeated=False, fast_play=False)
    assert moves == [chess.Move.from_uci("c3d2")]
