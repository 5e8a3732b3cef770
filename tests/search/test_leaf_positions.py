"""Leaves get their position from the parent's record (``Node.rec``) on a scratch board instead
of replaying the path on the game history: every node's record, input planes and legal moves
must equal those of ``PositionHistory`` with the path played out."""

from __future__ import annotations

import pytest

from lc0py.chess.encoding import encode_history
from lc0py.chess.history import PositionHistory, load_board
from lc0py.search.movegen import legal_moves_indexed
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


@pytest.mark.parametrize("input_format", [1, 3, 5])
@pytest.mark.parametrize(("fen", "moves"), POSITIONS)
def test_node_records_match_the_replayed_history(make_search, fen, moves, input_format) -> None:
    limits = SearchLimits(nodes=400, smart_pruning=False)
    s = make_search(fen, moves, params=SearchParams(overlap=False), limits=limits)
    s.input_format = input_format
    s.run()
    checked = 0
    stack = [(s.root, [])]
    scratch = s.history.board.copy(stack=False)
    while stack:
        node, path = stack.pop()
        if node.rec is not None:
            history = PositionHistory.from_fen(fen, [*moves, *(m.uci() for m in path)])
            want = history.records[-1]
            got = node.rec
            assert (got.key, got.repetitions, got.rule50) == (want.key, want.repetitions, want.rule50)
            rebuilt = [*history.records[:-1], got]
            a = encode_history(rebuilt, input_format, "fen_only")
            b = history.encode(input_format, "fen_only")
            assert (a.masks == b.masks).all() and (a.values == b.values).all() and a.transform == b.transform
            load_board(scratch, got)
            t = b.transform
            assert legal_moves_indexed(scratch, t) == legal_moves_indexed(history.board, t)
            checked += 1
        for child in node.children:
            if child is not None:
                stack.append((child, [*path, child.move]))
    assert checked > 50
