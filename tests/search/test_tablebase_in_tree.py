"""In-tree tablebase probes in the compiled core (lc0's ExtendNode): which leaves are probed, what
a probe's WDL makes of them, what a failed probe leaves, and tbhits."""

from __future__ import annotations

import chess
import pytest

from lc0py.search.core import arrays as A
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits

FEN = "3rk3/8/8/8/8/8/4P3/3QK3 w - - 0 1"  # Qxd8 leaves 4 pieces with a zeroing move


class _Tables:
    """A stand-in for the Syzygy tables: ``answer`` for every probe (None = the probe fails)."""

    def __init__(self, answer: int | None, max_pieces: int = 4) -> None:
        self.answer, self.max_pieces, self.hits = answer, max_pieces, 0
        self.probed: list[str] = []

    def probe_wdl(self, board: chess.Board) -> int | None:
        assert not board.has_castling_rights(chess.WHITE) and not board.has_castling_rights(chess.BLACK)
        assert board.halfmove_clock == 0 and chess.popcount(board.occupied) <= self.max_pieces
        self.probed.append(board.fen())
        return self.answer

    def hit(self) -> None:
        self.hits += 1


def _qxd8(s):  # type: ignore[no-untyped-def]
    return next(c for c in s.root.children if c is not None and c.move == chess.Move.from_uci("d1d8"))


@pytest.mark.parametrize("answer, wl, kind", [(2, -1.0, A.TABLEBASE), (-2, 1.0, A.TABLEBASE),
                                              (1, 0.0, A.TABLEBASE), (-1, 0.0, A.TABLEBASE)])
def test_a_probe_makes_a_tablebase_terminal(make_search, answer: int, wl: float, kind: int) -> None:
    """WDL for the side to move after Qxd8 (Black): a win is a loss for the mover; cursed wins
    and blessed losses are draws."""
    tables = _Tables(answer)
    params = SearchParams(overlap=False, minibatch_size=8)
    s = make_search(FEN, params=params, limits=SearchLimits(nodes=150, smart_pruning=False), tablebase=tables)
    s.run()
    node = _qxd8(s)
    assert node.n > 0 and node.terminal_kind == kind and node.wl == wl
    assert tables.hits == len(tables.probed) >= 1 and s.info().tb_hits == tables.hits


def test_a_failed_probe_is_extended_as_any_leaf(make_search) -> None:
    tables = _Tables(None)
    s = make_search(FEN, params=SearchParams(overlap=False, minibatch_size=8),
                    limits=SearchLimits(nodes=150, smart_pruning=False), tablebase=tables)
    s.run()
    node = _qxd8(s)
    assert tables.probed and tables.hits == 0
    assert node.n > 0 and node.terminal_kind == 0 and node.v is not None  # the network's value


def test_a_root_ranked_by_dtz_makes_no_probes(make_search) -> None:
    tables = _Tables(2)
    limits = SearchLimits(nodes=150, smart_pruning=False, tablebase_root_dtz=True)
    s = make_search(FEN, params=SearchParams(overlap=False), limits=limits, tablebase=tables)
    s.run()
    assert not tables.probed and _qxd8(s).terminal_kind == 0


def test_no_tables_no_probes(make_search) -> None:
    limits = SearchLimits(nodes=150, smart_pruning=False)
    s = make_search(FEN, params=SearchParams(overlap=False), limits=limits)
    s.run()
    assert _qxd8(s).terminal_kind == 0 and s.info().tb_hits == 0
