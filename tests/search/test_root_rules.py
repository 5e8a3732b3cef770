"""Root-side rules of lc0's picking and backup (docs/search.md §3, §6): root moves that cannot catch
up with the best one are skipped (``PickNodesToExtendTask`` with the smart-pruning estimate), and
lc0's can't-win / can't-lose bounds (``MaybeSetBounds``) for partly proven nodes."""

from __future__ import annotations

import numpy as np

from lc0py.search.core import arrays as A
from lc0py.search.core.backup import backup, make_terminal
from lc0py.search.core.numeric import prior_code
from lc0py.search.core.pick import pick_nodes, pick_workspace
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.worker import params_array


def _visits_sent(node, remaining: float, best_child: int, visits: int = 30) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """Root edge -> visits that one pick walk of ``visits`` sends below it."""
    t = node.tree.arrays
    node.tree.ensure_capacity(visits + 2, 0)
    t = node.tree.arrays
    before = {c.index: c.nif for c in node.children if c is not None}
    picks = np.zeros((visits + 2, 5), np.int32)
    pick_nodes(
        t,
        node.id,
        visits,
        params_array(SearchParams(), False, False),
        np.zeros(0, np.uint8),
        remaining,
        best_child,
        picks,
        np.zeros(1, np.int64),
        np.zeros(1, np.int64),
        np.zeros((64, 256), np.int32),
        pick_workspace(64),
    )
    out = {}
    for c in node.children:
        if c is not None and c.nif != before.get(c.index, 0):
            out[c.index] = c.nif - before.get(c.index, 0)
    return out


def test_moves_that_cannot_catch_up_are_not_picked(hand_node) -> None:
    # edge 0 has 100 visits; edge 1 (10 visits, high prior and Q) would get visits by PUCT
    priors = [0.2, 0.5, 0.3]
    stats = [(100, 0, -0.2), (10, 0, 0.3)]
    free = _visits_sent(hand_node(priors, stats), float("inf"), -1)
    assert free.get(1, 0) > 0 or free.get(2, 0) > 0
    root = hand_node(priors, stats)
    best = int(A.child_at(root.tree.arrays, root.id, 0))
    # 50 playouts left: edge 1 needs 90 to catch up, edge 2 needs 100: only the best is searched
    pruned = _visits_sent(root, 50.0, best)
    assert set(pruned) == {0} and pruned[0] == 30
    # 95 left: edge 1 can still catch up (90), edge 2 cannot (100)
    root = hand_node(priors, stats)
    best = int(A.child_at(root.tree.arrays, root.id, 0))
    assert set(_visits_sent(root, 95.0, best)) <= {0, 1}


def _two_level_tree(child_count: int) -> tuple[NodeTree, int, list[int]]:
    """root → p (edge 0) → ``child_count`` children, all visited once (regular values)."""
    tree = NodeTree()
    t = tree.arrays
    root = tree.root_id

    def expand(x: int, n: int) -> None:
        e0 = int(A.reserve_edges(t, n))
        t.edge0[x] = e0
        t.nedges[x] = n
        for i in range(n):
            t.emove[e0 + i] = i | (i + 8) << 6
            t.ep[e0 + i] = prior_code(1.0 / n)

    expand(root, 2)
    p = int(A.spawn_child(t, root, 0))
    expand(p, child_count)
    kids = [int(A.spawn_child(t, p, i)) for i in range(child_count)]
    t.n[root], t.n[p] = 2 + child_count, 1 + child_count
    for c in kids:
        t.n[c] = 1
        t.wl[c] = 0.1
    return tree, p, kids


def _terminal_visit(tree: NodeTree, node: int, result: int) -> None:
    t = tree.arrays
    make_terminal(t, node, result, 0.0, A.END_OF_GAME)
    t.n[node] = 0
    x = node
    while x >= 0:
        t.nif[x] += 1
        x = int(t.parent[x])
    backup(t, node, tree.root_id, float(result), 1.0 if result == 0 else 0.0, 0.0, 1, True)


def test_a_drawing_reply_means_the_mover_cannot_win() -> None:
    # p's side to move has a move into a proven draw: whoever moved into p can't win (bounds
    # (-1, 0), lc0's "can't win"); p stays searchable
    tree, p, kids = _two_level_tree(3)
    _terminal_visit(tree, kids[1], 0)
    t = tree.arrays
    assert (int(t.lower[p]), int(t.upper[p])) == (-1, 0)
    assert t.term[p] == A.NOT_TERMINAL


def test_bounds_tighten_until_the_node_is_proven() -> None:
    tree, p, kids = _two_level_tree(3)
    _terminal_visit(tree, kids[0], -1)
    t = tree.arrays
    assert (int(t.lower[p]), int(t.upper[p])) == (-1, 1)  # one losing move alone proves nothing
    _terminal_visit(tree, kids[1], 0)
    assert (int(t.lower[p]), int(t.upper[p])) == (-1, 0)  # p's side can draw: its opponent can't win
    _terminal_visit(tree, kids[2], -1)
    # all proven: the best for p's side is the draw, so p is a proven draw
    assert t.term[p] != A.NOT_TERMINAL and (int(t.lower[p]), int(t.upper[p])) == (0, 0)


def test_no_reply_better_than_a_draw_means_cannot_lose() -> None:
    # p's side to move has two losing moves and one that can't win (bounds (-1, 0) set earlier by
    # its own subtree): whoever moved into p can't lose, lc0's (0, 1)
    tree, p, kids = _two_level_tree(3)
    t = tree.arrays
    t.lower[kids[2]], t.upper[kids[2]] = -1, 0
    _terminal_visit(tree, kids[0], -1)
    _terminal_visit(tree, kids[1], -1)
    assert (int(t.lower[p]), int(t.upper[p])) == (0, 1)
    assert t.term[p] == A.NOT_TERMINAL


def test_a_winning_reply_proves_the_node() -> None:
    tree, p, kids = _two_level_tree(3)
    _terminal_visit(tree, kids[2], 1)
    t = tree.arrays
    assert t.term[p] != A.NOT_TERMINAL and (int(t.lower[p]), int(t.upper[p])) == (-1, -1)
    assert t.wl[p] == -1.0
