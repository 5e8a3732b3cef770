"""``NodeTree``: the game (``PositionHistory``) and its search tree as flat arrays, reused when
the game continues (docs/search.md §11), plus ``NodeView``, a read-only handle on one node
for the controller, the verbose stats and tests (the compiled code never sees views)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import chess
import numpy as np

from lc0py.chess.core import board as B
from lc0py.chess.history import PositionHistory
from lc0py.search.core import arrays as A
from lc0py.search.core.numeric import prior_value

TERMINAL = 1  # ``NodeView.terminal`` of a game-over or proven node

_INITIAL_NODES = 1 << 12
_EDGES_PER_NODE = 40


class NodeTree:
    """``history``: the game up to the search root; the tree's root is node ``root_id``."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # held by a search while it changes the tree
        self.start_fen: str | None = None
        self.moves: list[str] = []
        self.history: PositionHistory = PositionHistory.from_fen(None)
        self.arrays = A.allocate(_INITIAL_NODES, _INITIAL_NODES * _EDGES_PER_NODE)
        self.root_id = 0
        self.max_bytes = 0  # tree storage the arrays should not outgrow (0: no limit; RamLimitMb)
        self._new_root()

    # ------------------------------------------------------------------ storage ----
    def _new_root(self) -> None:
        self.arrays.meta[:] = 0
        self.root_id = int(A.new_node(self.arrays, -1, 0))

    def ensure_capacity(self, nodes: int, edges: int) -> None:
        """Room for ``nodes`` more nodes and ``edges`` more edges (arrays grow by doubling)."""
        t = self.arrays
        need_n = int(t.meta[A.META_NODES]) + nodes
        need_e = int(t.meta[A.META_EDGES]) + edges
        cap_n, cap_e = len(t.n), len(t.emove)
        if need_n <= cap_n and need_e <= cap_e:
            return
        while cap_n < need_n:
            cap_n *= 2
        while cap_e < need_e:
            cap_e *= 2
        if self.max_bytes and cap_n * A.NODE_BYTES + cap_e * A.EDGE_BYTES > self.max_bytes:
            # near RamLimitMb: grow to what is needed plus at most an eighth, within the limit
            cap_n, cap_e = max(len(t.n), need_n), max(len(t.emove), need_e)
            spare = self.max_bytes - cap_n * A.NODE_BYTES - cap_e * A.EDGE_BYTES
            if spare > 0:
                cap_n += min(need_n // 8, spare // (2 * A.NODE_BYTES))
                cap_e += min(need_e // 8, spare // (2 * A.EDGE_BYTES))
        self.arrays = A.grow(t, cap_n, cap_e)

    @property
    def num_nodes(self) -> int:
        return int(self.arrays.meta[A.META_NODES])

    def bytes_used(self) -> int:
        """Bytes of node and edge storage in use (``capacity_bytes`` adds the growth slack)."""
        return A.used_bytes(self.arrays)

    def capacity_bytes(self) -> int:
        return A.capacity_bytes(self.arrays)

    # ------------------------------------------------------------------ game ----
    @property
    def root(self) -> NodeView:
        return NodeView(self, self.root_id)

    def reset_to_position(self, fen: str | None, moves: Sequence[str]) -> bool:
        """Set the position; returns True if it continues the previous game (tree reused).

        Raises ``PositionError`` for a bad FEN or illegal move (the tree is then unchanged).
        """
        history = PositionHistory.from_fen(fen, moves)
        with self.lock:
            return self._reset(fen, list(moves), history)

    def _reset(self, fen: str | None, moves: list[str], history: PositionHistory) -> bool:
        same_game = (
            self.start_fen == fen and len(moves) >= len(self.moves) and moves[: len(self.moves)] == self.moves
        )
        if same_game:
            node = self.root_id
            board = self.history.board.copy(stack=False)
            for move in history.board.move_stack[len(self.moves) :]:
                node = self.child_for(node, move, board) if node >= 0 else -1
                board.push(move)
            if node < 0:
                self._new_root()
            elif node != self.root_id or self.num_nodes > 1:
                self._keep_subtree(node)
                if self.arrays.term[self.root_id] != A.NOT_TERMINAL:
                    # lc0's NodeTree::MakeMove: a proven, tablebase or two-fold node that becomes
                    # the root is searched again as an ordinary position (Node::MakeNotTerminal)
                    A.make_not_terminal(self.arrays, self.root_id)
        else:
            self._new_root()
        self.start_fen = fen
        self.moves = moves
        self.history = history
        return same_game

    def _keep_subtree(self, node: int) -> None:
        """Make ``node`` the root, dropping the rest of the tree (compacted into new arrays)."""
        src = self.arrays
        nodes, edges = A.subtree_size(src, node)
        dst = A.allocate(
            max(_INITIAL_NODES, 2 * int(nodes)), max(_INITIAL_NODES * _EDGES_PER_NODE, 2 * int(edges))
        )
        A.copy_subtree(src, node, dst)
        self.arrays = dst
        self.root_id = 0

    def clear(self) -> None:
        """Forget the tree (``ucinewgame``); the next position starts a new game. The history goes
        back to the start position with the moves, or the next position would be played on top of
        the old game's last one."""
        with self.lock:
            self.start_fen = None
            self.moves = []
            self.history = PositionHistory.from_fen(None)
            self._new_root()

    # ------------------------------------------------------------------ lookups ----
    def edge_index(self, node: int, move: chess.Move, board: chess.Board) -> int:
        """Edge of ``move`` at ``node`` whose position is ``board`` (−1 if none)."""
        t = self.arrays
        e0 = int(t.edge0[node])
        if e0 < 0:
            return -1
        code = B.from_chess_move(move, board)
        moves = t.emove[e0 : e0 + int(t.nedges[node])]
        hits = np.flatnonzero(moves == code)
        return int(hits[0]) if len(hits) else -1

    def child_for(self, node: int, move: chess.Move, board: chess.Board) -> int:
        i = self.edge_index(node, move, board)
        return int(A.child_at(self.arrays, node, i)) if i >= 0 else -1


class NodeView:
    """One node of a ``NodeTree`` (valid until the tree is reset)."""

    __slots__ = ("tree", "id")

    def __init__(self, tree: NodeTree, node_id: int) -> None:
        self.tree = tree
        self.id = int(node_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NodeView) and other.tree is self.tree and other.id == self.id

    def __hash__(self) -> int:
        return hash((id(self.tree), self.id))

    @property
    def _t(self) -> A.TreeArrays:
        return self.tree.arrays

    @property
    def n(self) -> int:
        return int(self._t.n[self.id])

    @property
    def nif(self) -> int:
        return int(self._t.nif[self.id])

    @property
    def wl(self) -> float:
        return float(self._t.wl[self.id])

    @property
    def d(self) -> float:
        return float(self._t.d[self.id])

    @property
    def m(self) -> float:
        return float(self._t.m[self.id])

    @property
    def v(self) -> float | None:
        v = float(self._t.v[self.id])
        return None if v != v else v

    @property
    def terminal(self) -> int:
        return TERMINAL if self._t.term[self.id] else 0

    @property
    def terminal_kind(self) -> int:
        return int(self._t.term[self.id])

    @property
    def bounds(self) -> tuple[int, int]:
        return int(self._t.lower[self.id]), int(self._t.upper[self.id])

    @property
    def index(self) -> int:
        return int(self._t.index[self.id]) if self._t.parent[self.id] >= 0 else -1

    @property
    def parent(self) -> NodeView | None:
        p = int(self._t.parent[self.id])
        return NodeView(self.tree, p) if p >= 0 else None

    @property
    def expanded(self) -> bool:
        return bool(self._t.edge0[self.id] >= 0)

    @property
    def moves(self) -> list[int] | None:
        t = self._t
        e0 = int(t.edge0[self.id])
        if e0 < 0:
            return None
        return t.emove[e0 : e0 + int(t.nedges[self.id])].tolist()

    @property
    def codes(self) -> np.ndarray:
        t = self._t
        e0 = int(t.edge0[self.id])
        if e0 < 0:
            return np.zeros(0, np.uint16)
        return t.ep[e0 : e0 + int(t.nedges[self.id])].copy()

    @property
    def p(self) -> list[float]:
        return [float(prior_value(c)) for c in self.codes.tolist()]

    def path_codes(self) -> list[int]:
        """Packed moves from the tree's root to this node."""
        t = self._t
        codes = []
        x = self.id
        while x != self.tree.root_id and t.parent[x] >= 0:
            p = int(t.parent[x])
            codes.append(int(t.emove[int(t.edge0[p]) + int(t.index[x])]))
            x = p
        return codes[::-1]

    def board(self) -> chess.Board:
        """This node's position (python-chess, replayed from the root)."""
        board = self.tree.history.board.copy(stack=False)
        for code in self.path_codes():
            board.push(B.to_chess_move(code, board))
        return board

    @property
    def move(self) -> chess.Move | None:
        """The move into this node (None for the root)."""
        codes = self.path_codes()
        if not codes:
            return None
        board = self.tree.history.board.copy(stack=False)
        for code in codes[:-1]:
            board.push(B.to_chess_move(code, board))
        return B.to_chess_move(codes[-1], board)

    @property
    def children(self) -> list[NodeView | None]:
        t = self._t
        out: list[NodeView | None] = [None] * int(t.nedges[self.id]) if t.edge0[self.id] >= 0 else []
        c = int(t.child[self.id])
        while c >= 0:
            out[int(t.index[c])] = NodeView(self.tree, c)
            c = int(t.sibling[c])
        return out

    def child_for(self, move: chess.Move) -> NodeView | None:
        c = self.tree.child_for(self.id, move, self.board())
        return NodeView(self.tree, c) if c >= 0 else None

    def edge_index(self, move: chess.Move) -> int:
        return self.tree.edge_index(self.id, move, self.board())

    def __repr__(self) -> str:
        mv = self.move.uci() if self.move else "root"
        return f"Node({mv}, n={self.n}, nif={self.nif}, wl={self.wl:.4f}, d={self.d:.3f})"
