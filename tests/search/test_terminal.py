"""Game-over leaves are scored exactly (docs/search.md §2, §6; docs/input-encoding.md §7)."""

from __future__ import annotations

import chess
import pytest

from lc0py.search.node import TERMINAL
from lc0py.search.params import SearchParams
from lc0py.search.search import SearchLimits


def _child(search, uci: str):
    move = chess.Move.from_uci(uci)
    node = search.root.child_for(move)
    assert node is not None, f"{uci} was never visited"
    return node


def _run(make_search, fen, moves=(), nodes=300, params=None):
    s = make_search(fen, moves, params=params, limits=SearchLimits(nodes=nodes, smart_pruning=False))
    s.run()
    assert s.error is None
    return s


def test_mate_is_a_win_for_the_mover(make_search) -> None:
    s = _run(make_search, "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    mate = _child(s, "a1a8")
    assert mate.terminal == TERMINAL and (mate.wl, mate.d, mate.m) == (1.0, 0.0, 0.0)
    best, _ = s.best_move()
    assert best == chess.Move.from_uci("a1a8")
    line = s.info().lines[0]
    assert line.mate == 1


def test_stalemate_is_a_draw(make_search) -> None:
    s = _run(make_search, "k7/8/2Q5/8/8/8/8/K7 w - - 0 1", nodes=400)
    node = _child(s, "c6b6")
    assert node.terminal == TERMINAL and (node.wl, node.d, node.m) == (0.0, 1.0, 0.0)


def test_fifty_move_rule(make_search) -> None:
    s = _run(make_search, "k7/8/8/8/8/8/8/K6R w - - 99 80", nodes=200)
    quiet = [c for c in s._root_children() if c.n > 0]
    assert quiet and all(c.terminal == TERMINAL and c.d == 1.0 and c.wl == 0.0 for c in quiet)


def test_mate_beats_the_fifty_move_rule(make_search) -> None:
    s = _run(make_search, "6k1/5ppp/8/8/8/8/8/R5K1 w - - 99 80")
    assert _child(s, "a1a8").wl == 1.0


def test_threefold_repetition(make_search) -> None:
    moves = ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]
    s = _run(make_search, None, moves, nodes=600)
    node = _child(s, "f6g8")  # third occurrence of the start position
    assert node.terminal == TERMINAL and node.d == 1.0 and node.m == 0.0


def test_insufficient_material(make_search) -> None:
    s = _run(make_search, "k7/8/8/8/8/8/1n6/K7 w - - 0 1", nodes=100)
    node = _child(s, "a1b2")  # K v K after the capture
    assert node.terminal == TERMINAL and node.d == 1.0


@pytest.mark.parametrize("two_fold", [True, False])
def test_two_fold_inside_the_tree(make_search, two_fold: bool) -> None:
    s = make_search(params=SearchParams(two_fold_draws=two_fold, overlap=False))
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        s.history.push(chess.Move.from_uci(uci))
    # 4 plies below the root, the root position again: a draw with M = cycle length (4).
    assert s._draw_by_rule(depth=5) == (4.0 if two_fold else None)
    # Too shallow (the cycle would reach above the root): not a draw.
    assert s._draw_by_rule(depth=3) is None


def test_root_is_never_a_draw_by_rule(make_search) -> None:
    s = _run(make_search, "k7/8/8/8/8/8/8/K6R w - - 100 80", nodes=50)
    assert s.root.terminal != TERMINAL and s.root.n == 50


def test_sticky_endgames_prove_a_mate_in_two(make_search) -> None:
    # No mate in one here (e.g. 1. Kf7 Kh7 2. Rh1#): any proven mate runs through interior nodes.
    s = _run(make_search, "7k/8/5K2/8/8/8/8/R7 w - - 0 1", nodes=4000)
    best = s.ranked_root_children()[0]
    assert best.terminal == TERMINAL and best.wl == 1.0 and best.moves is not None
    assert best.m >= 2 and best.m % 2 == 0  # our mating move is the last ply
    assert s.info().lines[0].mate == int(best.m) // 2 + 1


def test_without_sticky_endgames_no_interior_node_is_proven(make_search) -> None:
    s = _run(
        make_search,
        "7k/8/5K2/8/8/8/8/R7 w - - 0 1",
        nodes=800,
        params=SearchParams(sticky_endgames=False, overlap=False),
    )
    assert all(c.moves is None for c in s._root_children() if c.terminal == TERMINAL)
