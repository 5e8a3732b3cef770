"""Game-over leaves are scored exactly (docs/search.md §2, §6; docs/input-encoding.md §7)."""

from __future__ import annotations

import chess
import pytest

from lc0py.search.core import arrays as A
from lc0py.search.core.tree import TERMINAL
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


def _extend_path(make_search, moves_before, path, two_fold):
    """Extend the nodes along ``path`` below the root (compiled ExtendNode) and return the last."""
    import numpy as np

    from lc0py.search.core import gather as G
    from lc0py.search.core import leaves as L

    params = SearchParams(two_fold_draws=two_fold, overlap=False)
    s = make_search(None, moves_before, params=params)
    tree = s.tree
    node = tree.root_id
    board = tree.history.board.copy(stack=False)
    for k, uci in enumerate([None, *path]):
        if uci is not None:
            move = chess.Move.from_uci(uci)
            e = tree.edge_index(node, move, board)
            node = int(A.spawn_child(tree.arrays, node, e))
            board.push(move)
        picks = np.array([[node, k + 1, 1, 0, 0]], np.int32)
        kinds = np.zeros(1, np.int8)
        vals = np.zeros((1, 3), np.float32)
        tree.ensure_capacity(4, 512)
        L.extend_picks(
            tree.arrays,
            tree.root_id,
            picks,
            0,
            1,
            s.worker._positions,
            s.cache.arrays,
            False,
            two_fold,
            s.input_format,
            s.worker._fill,
            kinds,
            vals,
            L.make_requests(2),
            s.prm,
            False,
            L.extend_workspace(),
        )
        assert G is not None
    return tree, node


@pytest.mark.parametrize("two_fold", [True, False])
def test_two_fold_inside_the_tree(make_search, two_fold: bool) -> None:
    # 4 plies below the root, the root position again: a draw with M = cycle length (4).
    tree, node = _extend_path(make_search, [], ["g1f3", "g8f6", "f3g1", "f6g8"], two_fold)
    t = tree.arrays
    if two_fold:
        assert t.term[node] == A.TWO_FOLD and t.m[node] == 4.0 and t.d[node] == 1.0
    else:
        assert t.term[node] == 0
    # Too shallow (the cycle would reach above the root): not a draw.
    tree, node = _extend_path(make_search, ["g1f3", "g8f6"], ["f3g1", "f6g8"], two_fold)
    assert tree.arrays.term[node] == 0


def test_root_is_never_a_draw_by_rule(make_search) -> None:
    s = _run(make_search, "k7/8/8/8/8/8/8/K6R w - - 100 80", nodes=50)
    assert s.root.terminal != TERMINAL and s.root.n >= 50


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


def test_reused_two_fold_above_the_new_root_is_reverted(make_search) -> None:
    from lc0py.search.core.backup import backup
    from lc0py.search.core.pick import revert_two_fold

    tree, node = _extend_path(make_search, [], ["g1f3", "g8f6", "f3g1", "f6g8"], True)
    t = tree.arrays
    assert t.term[node] == A.TWO_FOLD and t.m[node] == 4.0
    # three visits of the draw, backed up to the root (as the search does)
    path = []
    x = node
    while x >= 0:
        path.append(x)
        x = int(t.parent[x])
    for _ in range(3):
        for y in path:
            t.nif[y] += 1
        backup(t, node, tree.root_id, 0.0, 1.0, 4.0, 1, True)
    assert t.n[node] == 3 and t.n[tree.root_id] == 3
    assert revert_two_fold(t, node, 4) == 0  # 4 plies below the root: the cycle fits, a draw
    # After two moves of the game the node is 2 plies below the new root (path[2]): the cycle
    # reaches above it, so it is not a draw: its visits go from it and its ancestors up to the
    # new root, the nodes above are left alone (lc0's EnsureNodeTwoFoldCorrectForDepth).
    assert revert_two_fold(t, node, 2) == 3
    assert t.term[node] == 0 and t.n[node] == 0
    assert [int(t.n[y]) for y in path] == [0, 0, 0, 3, 3]


def test_two_fold_reverted_when_the_game_moves_past_its_first_occurrence(make_search) -> None:
    # lc0's EnsureNodeTwoFoldCorrectForDepth end to end: a search from the start position scores
    # 1. Nf3 Nf6 2. Ng1 Ng8 as a two-fold draw (the root repeated 4 plies down); the game then
    # plays 1. Nf3 Nf6, the tree is reused, and the next search finds the draw's cycle reaching
    # above its root: the draw's visits leave the tree (and the reused visits count), the node is
    # searched as an ordinary position.
    from lc0py.search.core import gather as G
    from lc0py.search.core.backup import backup

    tree, node = _extend_path(make_search, [], ["g1f3", "g8f6", "f3g1", "f6g8"], True)
    t = tree.arrays
    path = []
    x = node
    while x >= 0:
        path.append(x)
        x = int(t.parent[x])
    path.reverse()  # root first

    def visit(y: int, v: float, d: float, m: float) -> None:
        x = y
        while x >= 0:
            t.nif[x] += 1
            x = int(t.parent[x])
        backup(t, y, tree.root_id, v, d, m, 1, True)

    for k, y in enumerate(path[:-1]):  # each node's own first evaluation, as a search does
        visit(y, 0.1 if k % 2 else -0.1, 0.3, 20.0)
    for _ in range(3):
        visit(node, 0.0, 1.0, 4.0)
    assert t.term[node] == A.TWO_FOLD and t.n[path[2]] == 5
    assert tree.reset_to_position(None, ["g1f3", "g8f6"])  # reused: 2 plies above the draw now
    assert tree.root.n == 5
    limits = SearchLimits(nodes=200, smart_pruning=False, searchmoves=[chess.Move.from_uci("f3g1")])
    s = make_search(tree=tree, params=SearchParams(overlap=False), limits=limits)
    s.run()
    assert s.worker.stats[G.S_REVERTED] == 3 and s.initial_visits == 2
    draw = s.root.child_for(chess.Move.from_uci("f3g1")).child_for(chess.Move.from_uci("f6g8"))
    assert draw is not None and draw.terminal_kind != A.TWO_FOLD and draw.expanded
    # every visit of the tree is accounted for after the reverted ones left it
    root = s.root
    assert root.n == 1 + sum(c.n for c in root.children if c is not None)
    assert s.info().nodes == root.n >= 200


def test_proven_node_that_becomes_the_root_is_searched_again(make_search) -> None:
    # lc0's NodeTree::MakeMove makes the new root non-terminal (Node::MakeNotTerminal): its visits
    # are its own plus its children's, and the next search goes on below it
    fen = "7k/8/5K2/8/8/8/8/R7 w - - 0 1"
    s = _run(make_search, fen, nodes=4000)
    best = s.ranked_root_children()[0]
    assert best.terminal == TERMINAL and best.wl == 1.0 and best.moves is not None
    kids = sum(c.n for c in best.children if c is not None)
    tree = s.tree
    assert tree.reset_to_position(fen, [best.move.uci()])
    root = tree.root
    assert root.terminal_kind == 0 and root.n == 1 + kids
    assert root.bounds == (-1, -1) or root.bounds == (1, 1)  # kept, as lc0 keeps them
    again = make_search(tree=tree, limits=SearchLimits(nodes=root.n + 300, smart_pruning=False))
    again.run()
    assert again.playouts >= 300
    assert again.root.n == 1 + sum(c.n for c in again.root.children if c is not None)
