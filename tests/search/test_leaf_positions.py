"""Leaves get their position by replaying the path from the root with the compiled ``play``
(rows shared between consecutive leaves): every expanded node's edges must be the legal moves
of its position as python-chess computes it from the game, and game-over nodes must be over."""

from __future__ import annotations

import pytest

from lc0py.chess.core import board as B
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits

POSITIONS = [
    (None, []),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", []),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", []),
    # repetitions below the root, a double push with an ep marker, rule-50 near its end
    (None, ["g1f3", "g8f6", "f3g1", "f6g8", "e2e4", "d7d5"]),
    ("4k3/8/8/8/3p4/8/4P3/4K2R w K - 90 80", []),
]


@pytest.mark.parametrize("minibatch", [1, 64])
@pytest.mark.parametrize(("fen", "moves"), POSITIONS)
def test_node_edges_are_the_legal_moves_of_the_replayed_game(make_search, fen, moves, minibatch) -> None:
    limits = SearchLimits(nodes=400, smart_pruning=False)
    s = make_search(fen, moves, params=SearchParams(overlap=False, minibatch_size=minibatch), limits=limits)
    s.run()
    assert s.error is None
    checked = 0
    stack = [(s.root, s.history.board.copy(stack=False))]
    while stack:
        node, board = stack.pop()
        if node.expanded:
            want = sorted(B.from_chess_move(m, board) for m in board.legal_moves)
            assert sorted(node.moves) == want
            checked += 1
        elif node.terminal:
            outcome = board.outcome(claim_draw=True)
            assert outcome is not None or board.halfmove_clock >= 100 or node.terminal_kind == 3
        for child in node.children:
            if child is not None:
                after = board.copy(stack=True)
                after.push(child.move if False else B.to_chess_move(node.moves[child.index], board))
                stack.append((child, after))
    assert checked > 50
