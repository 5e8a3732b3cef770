"""The game and its search tree, with tree reuse between moves (docs/search.md §11).

``NodeTree.reset_to_position(fen, moves)`` keeps the subtree of the new position when the game
continues (same start position, move list extending the previous one, or the same position
again) and starts an empty tree otherwise; it reports which, so the engine can re-create its time
manager on a new game as lc0 does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lc0py.chess.history import PositionHistory
from lc0py.search.node import Node


class NodeTree:
    """``history``: the game up to the search root; ``root``: the node of that position."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # held by a search while it changes the tree
        self.start_fen: str | None = None
        self.moves: list[str] = []
        self.history: PositionHistory = PositionHistory.from_fen(None)
        self.root = Node()

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
            node: Node | None = self.root
            played = history.board.move_stack[len(self.moves) :]
            for move in played:
                node = node.child_for(move) if node is not None else None
            if node is None:
                node = Node()
            node.parent = None
            node.index = -1
            self.root = node
        else:
            self.root = Node()
        self.start_fen = fen
        self.moves = moves
        self.history = history
        return same_game

    def clear(self) -> None:
        """Forget the tree (``ucinewgame``); the next position starts a new game."""
        self.start_fen = None
        self.moves = []
        self.root = Node()
