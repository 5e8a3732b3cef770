"""NN cache (tools-and-uci.md §7.12): position hash -> evaluation and softmaxed priors.

Keyed by the position's facts (board, castling, lc0's ep marker, side to move) and its repetition
count — not rule-50 nor history — as an exact, hashable value (§7.12). Entries hold the legal moves sorted by prior, so a hit needs no move
generation. Capacity in entries; the oldest entry is evicted first (insertion order of a dict).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class CacheEntry:
    """``q``, ``d``, ``m`` from the side to move; ``moves``/``priors`` sorted by descending P."""

    q: float
    d: float
    m: float
    moves: list[int]  # packed (lc0py.search.movegen)
    priors: list[float]


class NNCache:
    """Bounded dict of ``CacheEntry``; not thread-safe (the search holds its lock)."""

    def __init__(self, capacity: int = 2000000) -> None:
        self.capacity = max(0, int(capacity))
        self._data: dict[object, CacheEntry] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: object) -> CacheEntry | None:
        entry = self._data.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def put(self, key: object, entry: CacheEntry) -> None:
        if self.capacity <= 0:
            return
        data = self._data
        if key not in data and len(data) >= self.capacity:
            del data[next(iter(data))]
        data[key] = entry

    def resize(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        while len(self._data) > self.capacity:
            del self._data[next(iter(self._data))]

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def fill_permille(self) -> int:
        return 0 if self.capacity == 0 else len(self._data) * 1000 // self.capacity
