"""The NN cache, compiled (lc0's ``MemCache``): position hash → (q, d, m, priors).

Keyed like lc0 (``ComputeEvalPositionHash``: the position's hash with its repetition count;
a hit also needs the same number of legal moves, lc0's guard against hash collisions). Values:
q, d, m from the side to move and the 16-bit prior codes in move-generation order (what
``Edge::SetP`` would store; 2 bytes a move).

Storage: entries in a ring of ``capacity`` slots (the oldest is evicted first), their priors in
a ring of ``capacity · 32`` codes (an entry whose codes were overwritten counts as gone), and an
open-addressing index (linear probing, backward-shift deletion) of twice the capacity.

Capacity is a limit, not an allocation (as lc0's cache, whose entries are allocated as they are
inserted): the arrays start at ``INITIAL_SLOTS`` and double (``NNCache.reserve``, before each
batch of inserts) until they reach the capacity. They always grow before either ring would
wrap, so every entry keeps the slot and code positions it would have in a cache allocated whole,
and hits and evictions are the same; ``NNCacheSize 999999999`` costs nothing until it is used.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lc0py.search.core.jit import njit

CODES_PER_ENTRY = 32
U64 = np.uint64
INITIAL_SLOTS = 1 << 12
#: Codes one insert may consume: a position's legal moves (at most 218) plus the gap left when an
#: entry's codes are kept contiguous in the ring (bounded by the same number).
MAX_CODES_PER_INSERT = 2 * 256

# meta slots
C_INSERTS = 0  # entries ever inserted (next slot = inserts % capacity)
C_CODES = 1  # codes ever written (next code = codes % ring size)
C_HITS = 2
C_MISSES = 3
C_SIZE = 4  # live entries


class CacheArrays(NamedTuple):
    key: np.ndarray  # uint64 [capacity]
    qdm: np.ndarray  # float32 [capacity, 3]
    start: np.ndarray  # int64 [capacity]: absolute position of the first code
    # int16 [capacity]: number of codes (-1: empty slot). ``count`` and ``index`` shadow the tuple
    # methods (a checker reports an override); the compiled code reads the fields by these names.
    count: np.ndarray  # type: ignore[assignment]
    codes: np.ndarray  # uint16 [capacity * CODES_PER_ENTRY]
    index: np.ndarray  # type: ignore[assignment]  # int32 [power of two >= 2 capacity]: slot or -1
    meta: np.ndarray  # int64 [8]


def allocate(capacity: int) -> CacheArrays:
    cap = max(1, int(capacity))
    size = 1
    while size < 2 * cap:
        size *= 2
    return CacheArrays(
        np.zeros(cap, np.uint64),
        np.zeros((cap, 3), np.float32),
        np.zeros(cap, np.int64),
        np.full(cap, -1, np.int16),
        np.zeros(cap * CODES_PER_ENTRY, np.uint16),
        np.full(size, -1, np.int32),
        np.zeros(8, np.int64),
    )


def nbytes(c: CacheArrays) -> int:
    return sum(a.nbytes for a in c)


def nbytes_for(capacity: int) -> int:
    """What ``allocate(capacity)`` takes, without allocating it."""
    cap = max(1, int(capacity))
    size = 1
    while size < 2 * cap:
        size *= 2
    return cap * (8 + 12 + 8 + 2 + 2 * CODES_PER_ENTRY) + 4 * size + 8 * 8


def grown(c: CacheArrays, capacity: int) -> CacheArrays:
    """A copy of ``c`` with ``capacity`` slots. Only valid while neither ring of ``c`` has wrapped
    (``NNCache.reserve`` grows before that): slots and code positions are kept as they are."""
    new = allocate(capacity)
    cap = len(c.key)
    new.key[:cap] = c.key
    new.qdm[:cap] = c.qdm
    new.start[:cap] = c.start
    new.count[:cap] = c.count
    new.codes[: len(c.codes)] = c.codes
    new.meta[:] = c.meta
    _reindex(new.index, new.key, new.count, cap)
    return new


@njit
def _reindex(index: np.ndarray, keys: np.ndarray, count: np.ndarray, used: int) -> None:
    """Put the live slots among the first ``used`` into an empty index."""
    for s in range(used):
        if count[s] >= 0:
            index[_probe(index, keys, keys[s])] = s


@njit
def mix(x: np.uint64) -> np.uint64:
    """splitmix64 finaliser (index position of a key)."""
    x = (x ^ (x >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> U64(27))) * U64(0x94D049BB133111EB)
    return x ^ (x >> U64(31))


@njit
def position_hash(zobrist: np.uint64, repetitions: int) -> np.uint64:
    """lc0's ``Position::Hash``: the board hash combined with the repetition count."""
    return mix(zobrist ^ (U64(repetitions) * U64(0x9E3779B97F4A7C15)))


@njit
def _probe(index: np.ndarray, keys: np.ndarray, key: np.uint64) -> int:
    """The index position of ``key``, or of the empty one where it would go. (The helpers take
    the cache's arrays one by one: a compiled call that passes the whole ``CacheArrays`` tuple
    costs ~0.1 µs of reference counting, and these run several times per leaf.)"""
    mask = len(index) - 1
    h = np.int64(mix(key) & U64(mask))
    while True:
        s = index[h]
        if s < 0 or keys[s] == key:
            return h
        h = (h + 1) & mask


@njit
def _delete_at(index: np.ndarray, keys: np.ndarray, i: int) -> None:
    mask = len(index) - 1
    j = i
    while True:
        j = (j + 1) & mask
        s = index[j]
        if s < 0:
            break
        k = np.int64(mix(keys[s]) & U64(mask))
        if i <= j:
            stays = i < k <= j
        else:
            stays = k > i or k <= j
        if stays:
            continue
        index[i] = s
        i = j
    index[i] = -1


@njit
def _valid(count: np.ndarray, start: np.ndarray, meta: np.ndarray, ring: int, s: int) -> bool:
    return count[s] >= 0 and start[s] >= meta[C_CODES] - ring


@njit
def lookup(c: CacheArrays, key: np.uint64, num_moves: int) -> int:
    """The slot of ``key`` with ``num_moves`` codes, or −1 (counts hits and misses)."""
    h = _probe(c.index, c.key, key)
    s = c.index[h]
    if s >= 0 and _valid(c.count, c.start, c.meta, len(c.codes), s) and c.count[s] == num_moves:
        c.meta[C_HITS] += 1
        return s
    c.meta[C_MISSES] += 1
    return -1


@njit
def find(c: CacheArrays, key: np.uint64, num_moves: int) -> int:
    """``lookup``'s slot without counting (a task worker's scan; its commit counts)."""
    s = c.index[_probe(c.index, c.key, key)]
    if s >= 0 and _valid(c.count, c.start, c.meta, len(c.codes), s) and c.count[s] == num_moves:
        return s
    return -1


@njit
def probe_only(c: CacheArrays, key: np.uint64, num_moves: int) -> bool:
    """Whether ``key`` is cached (no hit/miss counting: prefetch's ``GetCachedEvaluation``)."""
    s = c.index[_probe(c.index, c.key, key)]
    return s >= 0 and _valid(c.count, c.start, c.meta, len(c.codes), s) and c.count[s] == num_moves


@njit
def read_codes(c: CacheArrays, s: int, out: np.ndarray) -> None:
    ring = len(c.codes)
    p = c.start[s]
    for i in range(c.count[s]):
        out[i] = c.codes[(p + i) % ring]


@njit
def insert(c: CacheArrays, key: np.uint64, q: float, d: float, m: float, codes: np.ndarray, n: int) -> None:
    """Store an evaluation (replacing an entry of the same key); evicts the oldest entry."""
    cap = len(c.key)
    ring = len(c.codes)
    if n > ring:
        return
    h = _probe(c.index, c.key, key)
    old = c.index[h]
    if old >= 0:  # same key already there: drop the old entry
        _delete_at(c.index, c.key, h)
        c.count[old] = -1
        c.meta[C_SIZE] -= 1
    s = c.meta[C_INSERTS] % cap
    c.meta[C_INSERTS] += 1
    if c.count[s] >= 0:  # evict the slot's entry
        hs = _probe(c.index, c.key, c.key[s])
        if c.index[hs] == s:
            _delete_at(c.index, c.key, hs)
        c.count[s] = -1
        c.meta[C_SIZE] -= 1
    start = c.meta[C_CODES]
    if start % ring + n > ring:  # keep an entry's codes contiguous in the ring
        start += ring - start % ring
    for i in range(n):
        c.codes[(start + i) % ring] = codes[i]
    c.meta[C_CODES] = start + n
    c.key[s] = key
    c.qdm[s, 0] = q
    c.qdm[s, 1] = d
    c.qdm[s, 2] = m
    c.start[s] = start
    c.count[s] = n
    c.meta[C_SIZE] += 1
    h = _probe(c.index, c.key, key)
    c.index[h] = s


@njit
def live_entries(c: CacheArrays) -> int:
    n = 0
    for s in range(len(c.key)):
        if c.count[s] >= 0 and _valid(c.count, c.start, c.meta, len(c.codes), s):
            n += 1
    return n


class NNCache:
    """Bounded NN cache (capacity in positions) shared by the searches of one engine; the
    compiled search reads and fills ``arrays`` directly. Not thread-safe (the tree lock)."""

    def __init__(self, capacity: int = 2000000) -> None:
        self.capacity = max(0, int(capacity))
        self.arrays = allocate(min(self.capacity, INITIAL_SLOTS))

    @property
    def hits(self) -> int:
        return int(self.arrays.meta[C_HITS])

    @property
    def misses(self) -> int:
        return int(self.arrays.meta[C_MISSES])

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def resize(self, capacity: int) -> None:
        """New capacity; the cache is emptied (lc0 also rebuilds it)."""
        self.capacity = max(0, int(capacity))
        self.clear()

    def clear(self) -> None:
        self.arrays = allocate(min(self.capacity, INITIAL_SLOTS))

    def reserve(self, inserts: int) -> None:
        """Make room for ``inserts`` more entries before the compiled code inserts them: the arrays
        double (up to the capacity) before either ring would wrap. Call it, under the tree lock,
        before every batch of inserts (``SearchWorker.apply``)."""
        c = self.arrays
        slots = len(c.key)
        if slots >= self.capacity or inserts <= 0:
            return
        need_slots = int(c.meta[C_INSERTS]) + inserts
        need_codes = int(c.meta[C_CODES]) + inserts * MAX_CODES_PER_INSERT
        if need_slots <= slots and need_codes <= len(c.codes):
            return
        new = slots
        while new < self.capacity and (new < need_slots or new * CODES_PER_ENTRY < need_codes):
            new *= 2
        self.arrays = grown(c, min(new, self.capacity))

    def __len__(self) -> int:
        return 0 if self.capacity == 0 else int(live_entries(self.arrays))

    def fill_permille(self) -> int:
        if self.capacity == 0:
            return 0
        return min(1000, int(self.arrays.meta[C_SIZE]) * 1000 // self.capacity)

    def nbytes(self) -> int:
        """The most memory the cache takes once full (what the RAM limit reserves for it)."""
        return nbytes_for(self.capacity)

    def allocated_nbytes(self) -> int:
        """What its arrays take now (they grow on demand up to ``nbytes()``)."""
        return nbytes(self.arrays)
