"""Search-tree nodes (docs/search.md §1).

One small ``__slots__`` object per node; a node's edges are parallel Python lists (moves, priors
sorted by descending P, child nodes). Lists beat numpy arrays here: the selection loop touches a
few scalars per child and numpy's per-call overhead (~1 µs) exceeds the work
(``scripts/bench_puct.py`` measures both).

Invariant used by selection: children are created in edge order. All untouched edges have the
same Q (the FPU) and no visits, so the best of them is the first (highest P); when chosen it gets
a node. Hence the edges with nodes always form a prefix ``children[:touched]`` of the P-sorted
edge list, and the PUCT scan only needs that prefix plus edge ``touched``.
"""

from __future__ import annotations

import weakref

import chess

from lc0py.chess.encoding import PositionRecord
from lc0py.search.movegen import pack, to_move

# Terminal kinds.
NOT_TERMINAL = 0
TERMINAL = 1  # game over (mate, stalemate, draw by rule) or proven by StickyEndgames


class Node:
    """A position in the tree. ``wl`` is W−L from the view of the player who moved *into* it."""

    __slots__ = (
        "__weakref__",
        "_parent",
        "index",
        "move",
        "n",
        "nif",
        "wl",
        "d",
        "m",
        "terminal",
        "moves",
        "p",
        "children",
        "touched",
        "visited_p",
        "v",
        "rec",
        "sel",
    )

    def __init__(self, parent: Node | None = None, index: int = -1, move: chess.Move | None = None) -> None:
        self._parent = weakref.ref(parent) if parent is not None else None
        self.index = index  # edge index in the parent
        self.move = move  # move from the parent into this node
        self.n = 0  # completed visits
        self.nif = 0  # visits in flight
        self.wl = 0.0
        self.d = 0.0
        self.m = 0.0
        self.terminal = NOT_TERMINAL
        self.moves: list[int] | None = None  # packed moves (``movegen``); None until expanded
        self.p: list[float] = []  # priors, descending
        self.children: list[Node | None] = []
        self.touched = 0  # children[:touched] are nodes (see module doc)
        self.visited_p = 0.0  # sum of P of children with n > 0 (FPU reduction)
        self.v: float | None = None  # NN value from this node's ``wl`` view (None: not evaluated)
        self.rec: PositionRecord | None = None  # lc0's facts of the position, set when first reached
        # Last PUCT choice here (search tag, child, its P, runner-up score, runner-up node, third
        # score, cpuct·sqrt, FPU); reset by every backup/cancel through this node (``Search._descend``).
        self.sel: tuple | None = None  # type: ignore[type-arg]

    @property
    def parent(self) -> Node | None:
        """The parent node (held weakly: a tree has no reference cycles, so a dropped subtree is
        freed at once by reference counting instead of by slow full GC passes)."""
        ref = self._parent
        return ref() if ref is not None else None

    @parent.setter
    def parent(self, node: Node | None) -> None:
        self._parent = weakref.ref(node) if node is not None else None

    @property
    def expanded(self) -> bool:
        return self.moves is not None

    def expand(self, moves: list[int], priors: list[float]) -> None:
        """Give the node its edges (``priors`` sorted descending, same order as ``moves``)."""
        assert self.moves is None and not self.terminal, f"{self!r} expanded twice"
        self.moves = moves
        self.p = priors
        self.children = [None] * len(moves)
        self.touched = 0

    def make_terminal(self, wl: float, d: float, m: float) -> None:
        """A game-over position: fixed values, no edges (``wl`` from the mover's view)."""
        self.terminal = TERMINAL
        self.wl, self.d, self.m = wl, d, m
        self.moves = None
        # lc0 zeroes the edge prior of a node that is a loss for the player who moved into it.
        parent = self.parent
        if wl < 0 and parent is not None and parent.p:
            parent.p[self.index] = 4.656612873077393e-10  # code 0 decodes to 2^-31

    def make_proven(self, wl: float, d: float, m: float) -> None:
        """An interior node whose result is known from its children (StickyEndgames): it keeps
        its edges but is treated as a terminal from now on."""
        self.terminal = TERMINAL
        self.wl, self.d, self.m = wl, d, m
        parent = self.parent
        if wl < 0 and parent is not None and parent.p:
            parent.p[self.index] = 4.656612873077393e-10

    def child_for(self, move: chess.Move) -> Node | None:
        """The child node reached by ``move`` (None if that edge has no node)."""
        i = self.edge_index(move)
        return self.children[i] if i >= 0 else None

    def edge_index(self, move: chess.Move) -> int:
        if self.moves is None:
            return -1
        packed = pack(move)
        for i, mv in enumerate(self.moves):
            if mv == packed:
                return i
        return -1

    def ensure_child(self, i: int) -> Node:
        """The node of edge ``i``, creating it (and any earlier ones, keeping the prefix)."""
        children = self.children
        assert self.moves is not None
        while self.touched <= i:
            t = self.touched
            if children[t] is None:
                children[t] = Node(self, t, to_move(self.moves[t]))
            self.touched = t + 1
        node = children[i]
        assert node is not None
        return node

    def q(self, draw_score: float = 0.0) -> float:
        return self.wl + draw_score * self.d

    def __repr__(self) -> str:
        mv = self.move.uci() if self.move else "root"
        return f"Node({mv}, n={self.n}, nif={self.nif}, wl={self.wl:.4f}, d={self.d:.3f})"
