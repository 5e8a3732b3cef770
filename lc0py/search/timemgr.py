"""lc0's ``legacy`` time manager (docs/search.md §11, ``stoppers/legacy.cc``), simplified.

Budget per move = (time + inc·(g−1) − overhead)/g with ``g`` the expected moves to go, a larger
share on the first search after the manager was created, and a piggy bank that carries unused
time of earlier moves forward. The deadline never exceeds ``time − MoveOverheadMs``, so the
engine does not lose on time as long as the overhead covers the GUI/Python latency.
"""

from __future__ import annotations


class LegacyTimeManager:
    """One per game (re-created by ``ucinewgame`` or a position not continuing the game)."""

    def __init__(self, move_overhead_ms: int = 200) -> None:
        self.move_overhead_ms = move_overhead_ms
        self.piggy_bank_ms = 0.0
        self.first_search = True
        self._deadline_ms: int | None = None

    @staticmethod
    def expected_moves_to_go(ply: int) -> float:
        move = ply / 2.0
        return 51.5 * (1.0 + 2.0 * (move / 51.5) ** 7) ** (1.0 / 7.0) - move

    def deadline_ms(self, ply: int, time_ms: int, inc_ms: int = 0, movestogo: int | None = None) -> int:
        """Milliseconds (from the search clock start) after which to stop; may be 0."""
        g = self.expected_moves_to_go(ply)
        if movestogo is not None and 0 < movestogo < g:
            g = float(movestogo)
        g = max(g, 1.0)
        total = max(0.0, time_ms + max(0, inc_ms) * (g - 1) - self.move_overhead_ms)
        bonus = 0.0
        if self.piggy_bank_ms > 0:
            total = max(0.0, total - self.piggy_bank_ms)
            bonus = self.piggy_bank_ms
            self.piggy_bank_ms = 0.0
        budget = total / g
        if self.first_search:
            budget *= 1.0 + 1.8 + 0.25 * min(12, ply)
            self.first_search = False
        budget += bonus
        deadline = int(min(budget, time_ms - self.move_overhead_ms))
        self._deadline_ms = max(0, deadline)
        return self._deadline_ms

    def search_finished(self, used_ms: int) -> None:
        """Put the unused part of the last deadline into the piggy bank."""
        if self._deadline_ms is not None:
            self.piggy_bank_ms += self._deadline_ms - used_ms
            self._deadline_ms = None
