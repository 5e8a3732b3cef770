"""NN cache (docs/search.md §12): position hash -> evaluation and softmaxed priors.

Keyed by the position's facts (board, castling, lc0's ep marker, side to move) and its repetition
count — not rule-50 nor history — as an exact, hashable value (§12). Entries hold the legal
moves sorted by prior, so a hit needs no move generation. Capacity in entries; the oldest entry
is evicted first (insertion order of a dict).
"""

from __future__ import annotations

import struct
from array import array

_KEY = struct.Struct("<12QQbbB")


def position_key(facts: tuple, repetitions: int) -> bytes:  # type: ignore[type-arg]
    """Exact, compact cache key from ``PositionRecord.key`` (12 piece masks, castling, ep, turn)
    and the repetition count: 115 bytes, hashed with SipHash (no int-hash collisions)."""
    pieces, castling, ep, turn = facts
    return _KEY.pack(*pieces, castling, ep, bool(turn), min(repetitions, 255))


class CacheEntry(tuple):  # type: ignore[type-arg]
    """Constructors/accessors for cache entries, which are plain tuples
    ``(q, d, m, moves_bytes, priors_bytes)``: q, d, m from the side to move; moves (packed, "H")
    and priors (16-bit-rounded, exact in "f") sorted by descending P, as raw bytes.

    Why tuples of atoms: CPython stops tracking such tuples in the cyclic GC, so a cache of
    millions of entries costs the collector nothing; bytes take 2 + 4 bytes an edge (~600 B an
    entry with the key, instead of ~3 KB for lists of Python ints and floats).
    """

    @staticmethod
    def make(q: float, d: float, m: float, moves: list[int], priors: list[float]) -> tuple:  # type: ignore[type-arg]
        return (q, d, m, array("H", moves).tobytes(), array("f", priors).tobytes())

    @staticmethod
    def moves(entry: tuple) -> list[int]:  # type: ignore[type-arg]
        a = array("H")
        a.frombytes(entry[3])
        return a.tolist()

    @staticmethod
    def priors(entry: tuple) -> list[float]:  # type: ignore[type-arg]
        a = array("f")
        a.frombytes(entry[4])
        return a.tolist()


class NNCache:
    """Bounded dict of ``CacheEntry``; not thread-safe (the search holds its lock)."""

    def __init__(self, capacity: int = 2000000) -> None:
        self.capacity = max(0, int(capacity))
        self._data: dict[bytes, tuple] = {}  # type: ignore[type-arg]
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> tuple | None:  # type: ignore[type-arg]
        entry = self._data.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def put(self, key: bytes, entry: tuple) -> None:  # type: ignore[type-arg]
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
