"""UCI text of the compiled core's display moves, without importing numba (the bulk evaluator's
writer processes and the API use the table)."""

from __future__ import annotations


def uci_table() -> list[str]:
    """UCI text of every display code ``from | to << 6 | promo << 12`` (``records``' moves)."""
    files = "abcdefgh"
    names = [files[s % 8] + str(s // 8 + 1) for s in range(64)]
    table = []
    for code in range(5 << 12):
        frm, to, promo = code & 63, (code >> 6) & 63, code >> 12
        table.append(names[frm] + names[to] + ("", "n", "b", "r", "q")[promo])
    return table


UCI_NAMES = uci_table()
