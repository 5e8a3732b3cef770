"""Syzygy tablebases as lc0 uses them (``src/syzygy/syzygy.cc``, classic ``search.cc``), probed
through python-chess's ``chess.syzygy``.

* **Root move filter** (lc0's ``MakeRootMoveFilter``): with no ``searchmoves``, no castling
  rights and no more pieces than the largest table, the root moves are ranked by DTZ
  (``root_probe``: certain wins equal, 50-move-rule aware; with ``SyzygyFastPlay`` or a
  repetition since the last zeroing move, shorter wins first) or, when DTZ tables are missing, by
  WDL (``root_probe_wdl``); only the equal best are searched. One tablebase hit.
* **In-tree WDL probes** (lc0's ``ExtendNode``): a new node right after a zeroing move (rule-50
  count 0), without castling rights and within the tables' piece count, becomes a terminal with
  the table's result (cursed wins and blessed losses are draws); not when the root was ranked by
  DTZ. One hit each.

The search sees only :class:`TablebaseProbe` (``max_pieces``, ``probe_wdl``, ``hits``); the UCI
layer opens the tables (``SyzygyPath``) and computes the root filter.

A missing table is a failed probe (the position is searched as any other). A table that cannot
be read (truncated, corrupt, replaced by something that is not a table: python-chess then raises
``OSError``, ``struct.error`` or anything else) turns the tables off for the rest of the search:
every later probe fails at once, ``failure`` holds one line saying why (the UCI layer sends it as
an ``info string``), and ``begin_search`` tries them again for the next search.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

import chess
import chess.syzygy

from lc0py.errors import UsageError


class TablebaseProbe(Protocol):
    """What the search needs from a tablebase."""

    max_pieces: int

    def probe_wdl(self, board: chess.Board) -> int | None:
        """WDL of ``board`` for its side to move (-2 loss … 2 win), None when the probe fails."""
        ...

    def hit(self) -> None:
        """Count one successful probe (``tbhits``)."""
        ...


def _dtz_before_zeroing(wdl: int) -> int:
    """lc0's ``dtz_before_zeroing``: the DTZ of a zeroing move with result ``wdl``."""
    return {2: 1, 1: 101, 0: 0, -1: -101, -2: -1}[wdl]


class SyzygyTablebase:
    """The tables in ``SyzygyPath``'s folders (``:``-separated, ``;`` on Windows)."""

    def __init__(self, paths: str) -> None:
        self.paths = paths
        self._tb = chess.syzygy.Tablebase()
        self._lock = threading.Lock()  # python-chess tables are not meant for concurrent probes
        self.hits = 0
        self.failure = ""  # why the tables were turned off for this search ("" while they work)
        self.wdl_files = self.dtz_files = 0
        for folder in (p for p in paths.split(os.pathsep) if p.strip()):
            if not os.path.isdir(folder):
                raise UsageError(f"SyzygyPath: {folder} is not a folder")
            self._tb.add_directory(folder)
        self.wdl_files = len(self._tb.wdl)
        self.dtz_files = len(self._tb.dtz)
        self.max_pieces = max((len(name) - 1 for name in self._tb.wdl), default=0)

    def close(self) -> None:
        self._tb.close()

    def hit(self) -> None:
        self.hits += 1

    def begin_search(self) -> None:
        """A new search: the tables are tried again (a failure is reported once a search)."""
        self.failure = ""

    def _probe(self, kind: str, board: chess.Board) -> int | None:
        if self.failure:
            return None
        try:
            with self._lock:
                probe = self._tb.probe_wdl if kind == "wdl" else self._tb.probe_dtz
                return int(probe(board))
        except KeyError:  # no such table (MissingTableError), castling rights, too many pieces
            return None
        except Exception as exc:  # an unreadable table: off for this search, said once
            self.failure = (
                f"Syzygy tablebases turned off for this search: {kind.upper()} probe of "
                f"{board.fen()} failed ({type(exc).__name__}: {exc})"
            )
            return None

    def applies(self, board: chess.Board) -> bool:
        """Within the tables: no castling rights and at most ``max_pieces`` pieces."""
        return (
            self.max_pieces > 0
            and not board.castling_rights
            and chess.popcount(board.occupied) <= self.max_pieces
        )

    def probe_wdl(self, board: chess.Board) -> int | None:
        return self._probe("wdl", board)

    def probe_dtz(self, board: chess.Board) -> int | None:
        return self._probe("dtz", board)

    def root_moves(
        self, board: chess.Board, repeated: bool, fast_play: bool
    ) -> tuple[list[chess.Move], bool]:
        """lc0's root filter: (moves to search, ranked by DTZ). Empty when the tables do not
        apply or a probe failed (then every move is searched)."""
        if not self.applies(board):
            return [], False
        moves = self._root_probe_dtz(board, fast_play or repeated)
        if moves is not None:
            self.hit()
            return moves, True
        moves = self._root_probe_wdl(board)
        if moves is not None:
            self.hit()
            return moves, False
        return [], False

    def _root_probe_dtz(self, board: chess.Board, has_repeated: bool) -> list[chess.Move] | None:
        cnt50 = board.halfmove_clock
        ranked = []
        for move in board.legal_moves:
            after = board.copy(stack=False)
            after.push(move)
            if after.halfmove_clock == 0:
                wdl = self.probe_wdl(after)
                if wdl is None:
                    return None
                dtz = _dtz_before_zeroing(-wdl)
            else:
                raw = self.probe_dtz(after)
                if raw is None:
                    return None
                dtz = -raw
                dtz = dtz + 1 if dtz > 0 else dtz - 1 if dtz < 0 else 0
            if dtz == 2 and after.is_checkmate():
                dtz = 1
            if dtz > 0:
                rank = 1000 if dtz + cnt50 <= 99 and not has_repeated else 1000 - (dtz + cnt50)
            elif dtz < 0:
                rank = -1000 if -dtz * 2 + cnt50 < 100 else -1000 + (-dtz + cnt50)
            else:
                rank = 0
            ranked.append((rank, move))
        best = max(r for r, _ in ranked)
        return [m for r, m in ranked if r == best]

    def _root_probe_wdl(self, board: chess.Board) -> list[chess.Move] | None:
        to_rank = {-2: -1000, -1: -899, 0: 0, 1: 899, 2: 1000}
        ranked = []
        for move in board.legal_moves:
            after = board.copy(stack=False)
            after.push(move)
            wdl = self.probe_wdl(after)
            if wdl is None:
                return None
            ranked.append((to_rank[-wdl], move))
        best = max(r for r, _ in ranked)
        return [m for r, m in ranked if r == best]
