"""``SyzygyPath`` in the engine (issue 12 item 6): root moves filtered, in-tree probes, ``tbhits``."""

from __future__ import annotations

import re
from pathlib import Path

import chess
import pytest

from tests.shared_files import syzygy_tables
from tests.uci.test_uci_honest import TINY, Session


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return syzygy_tables(tmp_path_factory.mktemp("syzygy"))


def _tbhits(lines: list[str]) -> int:
    hits = [int(m.group(1)) for x in lines if (m := re.search(r" tbhits (\d+)", x))]
    assert hits, lines
    return hits[-1]


def test_root_moves_come_from_the_tables(tables: Path) -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("SyzygyPath", str(tables)))
    s.send("position fen k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    out = s.send("go nodes 40")
    search = s.engine.search
    assert search is not None and search.limits.tablebase_root_dtz
    assert chess.Move.from_uci("c1c7") not in search.limits.searchmoves  # the stalemate
    assert out[-1].split()[1] != "c1c7" and _tbhits(out) >= 1


def test_in_tree_probes_after_a_capture(tables: Path) -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("SyzygyPath", str(tables)))
    s.send("position fen 3rk3/8/8/8/8/8/4P3/3QK3 w - - 0 1")  # 5 pieces: Qxd8 enters the tables
    out = s.send("go nodes 200")
    search = s.engine.search
    assert search is not None and not search.limits.searchmoves  # the root is outside the tables
    assert _tbhits(out) > 0
    qxd8 = next(c for c in search.root.children if c is not None and c.move == chess.Move.from_uci("d1d8"))
    assert qxd8.terminal  # a tablebase terminal


def test_without_tables_no_hits() -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"))
    s.send("position fen k7/8/1K6/8/8/8/8/2Q5 w - - 0 1")
    assert _tbhits(s.send("go nodes 20")) == 0


def test_a_bad_syzygy_path_is_reported_and_play_goes_on(tmp_path: Path) -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("SyzygyPath", str(tmp_path / "nope")))
    s.send("position startpos")
    out = s.send("go nodes 5")
    assert out[0].startswith("error Failed to load Syzygy tablebases") and "nope" in out[0]
    assert out[-1].startswith("bestmove ")
    assert not any(x.startswith("error") for x in s.send("go nodes 5"))  # said once


def test_a_capture_into_a_won_table_is_played_and_shown_as_lc0_does(tables: Path) -> None:
    s = Session(("WeightsFile", str(TINY)), ("Backend", "numpy"), ("SyzygyPath", str(tables)))
    s.send("position fen 7k/8/8/3n4/8/8/8/R2QK3 w - - 0 1")  # Qxd5 leaves KQR v K: a table win
    s.send("setoption name SmartPruningFactor value 0")  # the tiny random net barely looks at Qxd5
    out = s.send("go nodes 200 searchmoves a1a6 d1d5")
    assert out[-1].split()[1] == "d1d5"
    last = [x for x in out if x.startswith("info depth")][-1]
    mate = int(last.split(" score mate ")[1].split()[0])
    assert 101 <= mate < 120  # lc0 shows a tablebase win as mate + 100
