"""A picture of an evaluation: the board (``chess.svg``), the top moves as arrows whose width and
opacity grow with their probability, and a win/draw/loss bar (``lc0py eval --svg FILE``).

The board is drawn from the side to move's point of view with python-chess's own renderer and
nested unchanged in an outer SVG that adds the arrows, the bar and a legend (wrapped to the
board's width, the picture growing a line at a time), so the file opens in any browser or SVG
viewer. Arrows on one line (a rook's ``a1a4`` and ``a1a8``) are drawn side by side, shifted
across the line, so that none hides another.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

import chess
import chess.svg

from lc0py.api.evaluation import Evaluation

SQUARE = 45  # chess.svg's square size
MARGIN = 15  # chess.svg's border with coordinates
BOARD = 8 * SQUARE + 2 * MARGIN  # 390
BAR_Y = BOARD + 6
BAR_H = 22
HEIGHT = BAR_Y + BAR_H + 24  # with a one-line legend
LEGEND_FONT = 12
LEGEND_LINE = 15  # pixels a legend line takes
LEGEND_CHARS = int(BOARD / (0.6 * LEGEND_FONT))  # a sans-serif character is at most ~0.6 em wide
ARROW_COLOUR = "#15781b"
MAX_ARROWS = 5
MIN_WIDTH, MAX_WIDTH = 3.0, 18.0


def square_centre(square: chess.Square, orientation: chess.Color) -> tuple[float, float]:
    """Centre of ``square`` in chess.svg's coordinates for a board seen from ``orientation``."""
    file, rank = chess.square_file(square), chess.square_rank(square)
    if orientation == chess.BLACK:
        file, rank = 7 - file, 7 - rank
    return MARGIN + (file + 0.5) * SQUARE, MARGIN + (7 - rank + 0.5) * SQUARE


def arrow_width(probability: float) -> float:
    """Stroke width of a move's arrow: ``MIN_WIDTH`` at 0 up to ``MAX_WIDTH`` at probability 1."""
    return MIN_WIDTH + (MAX_WIDTH - MIN_WIDTH) * max(0.0, min(1.0, probability))


def wrap_legend(text: str, width: int = LEGEND_CHARS) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken between words (a word longer
    than a line is cut)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current or not lines:
        lines.append(current)
    return lines


def _line_key(move: chess.Move) -> tuple[int, int, int]:
    """The straight line a move's arrow lies on: its direction (reduced, sign fixed) and where
    it crosses the origin, so arrows on one line share the key."""
    fx, fy = chess.square_file(move.from_square), chess.square_rank(move.from_square)
    dx, dy = chess.square_file(move.to_square) - fx, chess.square_rank(move.to_square) - fy
    g = math.gcd(dx, dy) or 1
    dx, dy = dx // g, dy // g
    if dx < 0 or (dx == 0 and dy < 0):
        dx, dy = -dx, -dy
    return dx, dy, dx * fy - dy * fx


def arrow_offsets(moves: list[tuple[chess.Move, float]]) -> dict[chess.Move, float]:
    """How far (pixels, across its line) each arrow is shifted: 0 alone on its line; arrows
    sharing a line are spread side by side, centred on it, each its own width apart."""
    groups: dict[tuple[int, int, int], list[tuple[chess.Move, float]]] = {}
    for move, p in moves:
        groups.setdefault(_line_key(move), []).append((move, p))
    offsets: dict[chess.Move, float] = {}
    for group in groups.values():
        widths = [arrow_width(p) for _, p in group]
        total = sum(widths) + 2.0 * (len(group) - 1)
        at = -total / 2
        for (move, _), w in zip(group, widths, strict=True):
            offsets[move] = at + w / 2 if len(group) > 1 else 0.0
            at += w + 2.0
    return offsets


def _arrow(move: chess.Move, p: float, orientation: chess.Color, offset: float = 0.0) -> str:
    x1, y1 = square_centre(move.from_square, orientation)
    x2, y2 = square_centre(move.to_square, orientation)
    if offset:
        length = max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1e-9)
        nx, ny = -(y2 - y1) / length, (x2 - x1) / length  # across the arrow
        x1, y1, x2, y2 = x1 + nx * offset, y1 + ny * offset, x2 + nx * offset, y2 + ny * offset
    width = arrow_width(p)
    # stop the shaft short of the centre so that the head (3 widths long) ends on it
    length = max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1e-9)
    back = min(3 * width, length * 0.6)
    x2s, y2s = x2 - (x2 - x1) * back / length, y2 - (y2 - y1) * back / length
    return (
        f'<line class="move-arrow" data-move="{move.uci()}" data-probability="{p:.6f}" '
        f'x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2s:.1f}" y2="{y2s:.1f}" stroke="{ARROW_COLOUR}" '
        f'stroke-width="{width:.2f}" stroke-opacity="{0.35 + 0.6 * p:.3f}" stroke-linecap="round" '
        f'marker-end="url(#lc0py-head)"/>'
    )


def _wdl_bar(wdl: tuple[float, float, float]) -> str:
    parts = []
    x = 0.0
    for name, value, fill, text_fill in (
        ("win", wdl[0], "#f4f4f4", "#000"), ("draw", wdl[1], "#9a9a9a", "#000"),
        ("loss", wdl[2], "#262626", "#fff"),
    ):
        w = BOARD * max(0.0, value)
        parts.append(
            f'<rect class="wdl-{name}" x="{x:.2f}" y="{BAR_Y}" width="{w:.2f}" height="{BAR_H}" '
            f'fill="{fill}" stroke="#444" stroke-width="0.5"/>'
        )
        if w > 40:
            parts.append(
                f'<text x="{x + w / 2:.1f}" y="{BAR_Y + BAR_H - 6}" font-size="13" text-anchor="middle" '
                f'font-family="sans-serif" fill="{text_fill}">{name[0].upper()} {value:.0%}</text>'
            )
        x += w
    return "".join(parts)


def evaluation_svg(board: chess.Board, evaluation: Evaluation, arrows: int = MAX_ARROWS) -> str:
    """The SVG document (text) for ``evaluation`` of ``board``'s current position."""
    orientation = board.turn
    lastmove = board.move_stack[-1] if board.move_stack else None
    inner = chess.svg.board(board, orientation=orientation, size=None, coordinates=True, lastmove=lastmove)
    inner = inner.replace("<svg ", f'<svg x="0" y="0" width="{BOARD}" height="{BOARD}" ', 1)
    top = evaluation.top(arrows)
    legend = "  ".join(f"{board.san(m)} {p:.0%}" for m, p in top[:4]) or "no legal moves"
    side = "White" if board.turn == chess.WHITE else "Black"
    lines = wrap_legend(f"{side} to move, Q {evaluation.q:+.3f}: {legend}")
    height = HEIGHT + LEGEND_LINE * (len(lines) - 1)
    first = BAR_Y + BAR_H + 18
    text = "".join(f'<tspan x="2" y="{first + LEGEND_LINE * k}">{escape(line)}</tspan>'
                   for k, line in enumerate(lines))
    offsets = arrow_offsets(top)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'viewBox="0 0 {BOARD} {height}" width="{BOARD}" height="{height}">'
        f"<title>{escape(evaluation.fen)}</title>"
        f'<rect width="{BOARD}" height="{height}" fill="#ffffff"/>'
        f"{inner}"
        f'<defs><marker id="lc0py-head" viewBox="0 0 3 3" refX="0" refY="1.5" markerWidth="3" '
        f'markerHeight="3" orient="auto"><path d="M0,0 L3,1.5 L0,3 z" fill="{ARROW_COLOUR}"/></marker></defs>'
        f'<g class="arrows">{"".join(_arrow(m, p, orientation, offsets[m]) for m, p in reversed(top))}</g>'
        f'<g class="wdl">{_wdl_bar(evaluation.wdl)}</g>'
        f'<text class="legend" font-size="{LEGEND_FONT}" font-family="sans-serif">{text}</text>'
        f"</svg>"
    )
