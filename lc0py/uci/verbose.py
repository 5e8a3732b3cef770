"""``VerboseMoveStats``: one ``info string`` per root move, then the root (docs/uci-and-tools.md §6)."""

from __future__ import annotations

from lc0py.chess.policy import king_takes_rook_uci, move_to_index
from lc0py.search.movegen import to_move
from lc0py.search.node import TERMINAL, Node
from lc0py.search.search import Search
from lc0py.uci.info import wdl_mu


def _pct(p: float) -> str:
    return f"{100 * p:5.1f}" if 100 * p >= 99.995 else f"{100 * p:5.2f}"


def verbose_stats(search: Search) -> list[str]:
    """The lines (without the ``info string`` prefix), most visited move last."""
    root = search.root
    board = search.history.board
    if root.moves is None:
        return []
    cs = search._cpuct_scaled(root, True)
    fpu = search._fpu(root, True)
    rows = []
    for i, packed in enumerate(root.moves):
        move = to_move(packed)
        child: Node | None = root.children[i] if i < len(root.children) else None
        prior = root.p[i]
        n = child.n if child is not None else 0
        nif = child.nif if child is not None else 0
        u = cs * prior / (1 + n + nif)
        q_sel = child.wl if child is not None and n > 0 else fpu
        s = q_sel + u + (search._mutil(root, child, q_sel) if child is not None else 0.0)
        try:
            idx = move_to_index(move, board, 0)
        except ValueError:
            idx = -1
        text = f"{king_takes_rook_uci(board, move):<5} ({idx:<4}) N: {n:7d} (+{nif:2d}) (P: {_pct(prior)}%) "
        if child is None:
            text += f"(WL:  -.-----) (D: -.---) (M:  -.-) (Q: {fpu:8.5f}) "
        else:
            _, wl, d = wdl_mu(child.wl, child.d) if n > 0 else (0.0, child.wl, child.d)
            text += f"(WL: {wl:8.5f}) (D: {d:5.3f}) (M: {child.m:4.1f}) (Q: {wl:8.5f}) "
        text += f"(U: {u:6.5f}) (S: {s:8.5f}) "
        if child is not None and child.terminal == TERMINAL:
            text += f"(V: {child.wl:7.4f}) (T) "
        elif child is not None and child.v is not None:
            text += f"(V: {child.v:7.4f}) "
        else:
            text += "(V:  -.----) "
        rows.append(((n, q_sel + u), text))
    rows.sort(key=lambda r: r[0])
    lines = [t for _, t in rows]
    visited_p = sum(root.p[i] for i, c in enumerate(root.children) if c is not None and c.n > 0)
    _, wl, d = wdl_mu(-root.wl, root.d)
    v = f"{root.v * -1:7.4f}" if root.v is not None else " -.----"
    lines.append(
        f"node  ({len(root.moves):4d}) N: {root.n:7d} (+{root.nif:2d}) (P: {_pct(visited_p)}%) "
        f"(WL: {wl:8.5f}) (D: {d:5.3f}) (M: {root.m:4.1f}) (Q: {wl:8.5f}) (V: {v}) "
    )
    return lines
