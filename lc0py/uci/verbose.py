"""``VerboseMoveStats``: one ``info string`` per root move, then the root (docs/uci-and-tools.md §6)."""

from __future__ import annotations

from lc0py.chess.core.board import to_chess_move
from lc0py.chess.policy import king_takes_rook_uci, move_to_index
from lc0py.search.core.tree import NodeView
from lc0py.search.search import Search
from lc0py.search.wdl_rescale import wdl_rescale


def _pct(p: float) -> str:
    return f"{100 * p:5.1f}" if 100 * p >= 99.995 else f"{100 * p:5.2f}"


def _bounds_mark(node: NodeView, flip: bool) -> str:
    lo, up = node.bounds
    if flip:
        lo, up = -up, -lo
    if lo == up:
        return "(T) "
    if lo == 0 and up == 1:
        return "(W) "
    if lo == -1 and up == 0:
        return "(L) "
    return ""


def verbose_stats(search: Search, rescale: tuple[float, float, float, float] | None = None) -> list[str]:
    """The lines (without the ``info string`` prefix), most visited move last. ``rescale``: the
    search's WDL rescaling to undo in the WL/D columns, as ``info`` does (``compute_score``)."""
    ratio, diff, sign, max_s = rescale if rescale is not None else (1.0, 0.0, 1.0, 1.4)

    def wdl_mu(wl: float, d: float) -> tuple[float, float, float]:
        return wdl_rescale(wl, d, ratio, diff, sign, True, max_s)

    root = search.root
    board = search.history.board
    codes = root.moves
    if codes is None:
        return []
    cs, fpu, ds = search.puct_terms(root)
    priors = root.p
    kids = root.children
    rows = []
    for i, code in enumerate(codes):
        move = to_chess_move(code, board)
        child = kids[i]
        prior = priors[i]
        n = child.n if child is not None else 0
        nif = child.nif if child is not None else 0
        u = cs * prior / (1 + n + nif)
        q_sel = child.wl + ds * child.d if child is not None and n > 0 else fpu
        s = q_sel + u + search.m_util(root, child, q_sel)
        try:
            idx = move_to_index(move, board, 0)
        except ValueError:
            idx = -1
        text = f"{king_takes_rook_uci(board, move):<5} ({idx:<4}) N: {n:7d} (+{nif:2d}) (P: {_pct(prior)}%) "
        if child is None:
            text += f"(WL:  -.-----) (D: -.---) (M:  -.-) (Q: {fpu:8.5f}) "
        else:
            _, wl, d = wdl_mu(child.wl, child.d) if n > 0 else (0.0, child.wl, child.d)
            text += f"(WL: {wl:8.5f}) (D: {d:5.3f}) (M: {child.m:4.1f}) (Q: {wl + ds * d:8.5f}) "
        text += f"(U: {u:6.5f}) (S: {s:8.5f}) "
        if child is not None and child.terminal:
            text += f"(V: {child.wl + ds * child.d:7.4f}) "
        elif child is not None and child.v is not None:
            text += f"(V: {child.v:7.4f}) "
        else:
            text += "(V:  -.----) "
        if child is not None:
            text += _bounds_mark(child, False)
        rows.append(((n, q_sel + u), text))
    rows.sort(key=lambda r: r[0])
    lines = [t for _, t in rows]
    visited_p = sum(priors[i] for i, c in enumerate(kids) if c is not None and c.n > 0)
    _, wl, d = wdl_mu(-root.wl, root.d)
    v = f"{root.v * -1:7.4f}" if root.v is not None else " -.----"
    lines.append(
        f"node  ({len(codes):4d}) N: {root.n:7d} (+{root.nif:2d}) (P: {_pct(visited_p)}%) "
        f"(WL: {wl:8.5f}) (D: {d:5.3f}) (M: {root.m:4.1f}) (Q: {wl:8.5f}) (V: {v}) "
        + _bounds_mark(root, True)
    )
    return lines
