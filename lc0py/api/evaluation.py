"""What the network thinks of one position: :class:`Evaluation`, and how it is made from raw outputs.

The policy is a softmax over the **legal moves only** of the raw policy logits (lc0's search does
the same with its ``PolicyTemperature``); ``temperature`` divides the logits first (1: the network
as it is; below 1 sharper, above 1 flatter). WDL and Q are from the side to move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import chess
import numpy as np

from lc0py.chess import legal_moves_with_indices
from lc0py.errors import ArgumentError


@dataclass(frozen=True)
class Evaluation:
    """One evaluated position.

    ``policy``: legal move -> probability, most likely first (python-chess moves: castling is
    ``e1g1`` in standard chess); empty when there is no legal move. ``wdl``: win, draw, loss
    probabilities for the side to move. ``q``: ``W - L`` in [-1, 1]. ``moves_left``: the
    moves-left head's estimate (plies), ``None`` when the net has none. ``fen``: the position.
    """

    fen: str
    policy: dict[chess.Move, float]
    wdl: tuple[float, float, float]
    moves_left: float | None
    temperature: float = field(default=1.0, compare=False)

    @property
    def q(self) -> float:
        """Expected score for the side to move, ``W - L``."""
        return self.wdl[0] - self.wdl[2]

    @property
    def best_move(self) -> chess.Move | None:
        """The move with the highest policy probability (``None`` without legal moves)."""
        return next(iter(self.policy), None)

    def top(self, n: int) -> list[tuple[chess.Move, float]]:
        """The ``n`` most likely moves with their probabilities."""
        return list(self.policy.items())[:n]

    def __str__(self) -> str:
        w, d, l = self.wdl
        best = ", ".join(f"{m.uci()} {p:.1%}" for m, p in self.top(3)) or "no legal moves"
        return f"W {w:.1%} D {d:.1%} L {l:.1%} (Q {self.q:+.3f}); {best}"


def check_temperature(temperature: float) -> float:
    """``temperature`` as a float; an ``ArgumentError`` (an ``Lc0pyError`` and a ``ValueError``)
    unless it is a finite number > 0."""
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise ArgumentError(f"temperature must be a finite number > 0, got {temperature!r}") from None
    if not np.isfinite(t) or t <= 0:
        raise ArgumentError(f"temperature must be a finite number > 0, got {temperature!r}")
    return t


def legal_policy(
    moves: list[chess.Move], logits: np.ndarray, temperature: float = 1.0
) -> dict[chess.Move, float]:
    """``{move: probability}`` from the legal moves' logits, softmax at ``temperature``, sorted
    by probability (ties keep python-chess's move order)."""
    if not moves:
        return {}
    z = logits.astype(np.float64) / temperature
    e = np.exp(z - z.max())
    probs = e / e.sum()
    order = np.argsort(-probs, kind="stable")
    return {moves[j]: float(probs[j]) for j in order}


def summarise(
    board: chess.Board,
    transform: int,
    policy_logits: np.ndarray,
    wdl: np.ndarray,
    moves_left: float | None,
    temperature: float = 1.0,
) -> Evaluation:
    """An :class:`Evaluation` from one position's raw outputs (1858 logits in lc0's order, read
    with the encoding's ``transform``)."""
    moves, indices = legal_moves_with_indices(board, transform)
    policy = legal_policy(moves, policy_logits[indices], temperature) if moves else {}
    w, d, l = (float(x) for x in wdl)
    return Evaluation(board.fen(), policy, (w, d, l), moves_left, temperature)
