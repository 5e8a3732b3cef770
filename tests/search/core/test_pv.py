"""The compiled info lines (``core/pv.py``) against the Python walk they replaced: the same root
children in the same order, the same principal variations as python-chess moves (castling
spelt ``e1g1`` outside Chess960, king-takes-rook in it; promotions; en passant replayed)."""

from __future__ import annotations

import chess
import pytest

from lc0py.chess.core import board as B
from lc0py.search.core import arrays as A
from lc0py.search.core.ranking import best_edge, ranked_edges
from lc0py.search.params import SearchParams
from lc0py.search.search import Search, SearchLimits
from tests.search.conftest import make_search


def _walked_children(search: Search) -> list[int]:
    t = search.tree.arrays
    root = search.root_id
    if t.edge0[root] < 0:
        return []
    order = ranked_edges(t, root, search.draw_score(0), search._allowed)
    return [c for c in (int(A.child_at(t, root, int(e))) for e in order) if c >= 0]


def _walked_pv(search: Search, first: int) -> list[chess.Move]:
    """``Search._pv`` as it was: best_edge and child_at a ply, python-chess pushes."""
    t = search.tree.arrays
    board = search.history.board.copy(stack=False)
    pv: list[chess.Move] = []

    def push(node: int, e: int) -> None:
        move = B.to_chess_move(int(t.emove[int(t.edge0[node]) + e]), board)
        pv.append(move)
        board.push(move)

    push(int(t.parent[first]), int(t.index[first]))
    node, depth = first, 1
    while t.n[node] > 0 and t.edge0[node] >= 0 and len(pv) < 256:
        e = int(best_edge(t, node, search.draw_score(depth), search._allowed[:0]))
        if e < 0:
            if t.nedges[node] > 0 and t.term[node] == 0:
                push(node, 0)
            break
        push(node, e)
        c = int(A.child_at(t, node, e))
        if c < 0 or t.n[c] == 0:
            break
        node, depth = c, depth + 1
    return pv


POSITIONS = [
    (None, ()),
    # castling both ways for both sides soon
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1", ()),
    # promotions (and under-promotions) in the lines
    ("8/1P4k1/8/8/8/8/5Kp1/8 w - - 0 1", ()),
    # en passant right at the root, then a line after it
    (None, ("e2e4", "a7a6", "e4e5", "d7d5")),
]


@pytest.mark.parametrize(("fen", "moves"), POSITIONS)
def test_lines_match_the_python_walk(fen: str | None, moves: tuple[str, ...]) -> None:
    limits = SearchLimits(nodes=600, smart_pruning=False)
    search = make_search(fen, moves, SearchParams(overlap=False), limits)
    search.run()
    children = _walked_children(search)
    assert children and search._ranked_child_ids() == children
    assert [c.id for c in search.ranked_root_children()] == children
    for c in children:
        got, want = search._pv(c), _walked_pv(search, c)
        assert got == want
        board = search.history.board.copy(stack=False)
        for move in got:  # every move legal where it is played
            assert board.is_legal(move)
            board.push(move)


def test_castling_spelt_as_python_chess_in_chess960() -> None:
    fen = "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1"
    search = make_search(fen, (), SearchParams(overlap=False), SearchLimits(nodes=300, smart_pruning=False))
    search.run()
    assert search.history.board.chess960
    for c in _walked_children(search):
        assert search._pv(c) == _walked_pv(search, c)


def test_a_line_of_a_long_forced_sequence_stops_at_unvisited_replies() -> None:
    search = make_search(None, (), SearchParams(overlap=False), SearchLimits(nodes=50, smart_pruning=False))
    search.run()
    t = search.tree.arrays
    for c in _walked_children(search):
        line = search._pv(c)
        assert 1 <= len(line) <= 1 + int(t.n[c])  # a move a visited ply, plus one by prior
