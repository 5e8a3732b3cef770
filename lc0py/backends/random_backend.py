"""``random`` backend: no network, deterministic pseudo-random outputs (lc0's ``random`` backend).

Why: it measures the search alone (no network cost) and lets the engine run without weights.
Like lc0's ``src/neural/network_random.cc`` the outputs are a function of the input planes only
(a hash of the plane masks and values), so the same position always gets the same evaluation
and the NN cache behaves as with a real net:

* value ``q = (h mod 200000 - 100000) / 100000`` (lc0's formula), draw probability from other bits
  of the hash, ``W = (1 + q - d)/2``, ``L = (1 - q - d)/2``;
* policy logits: small pseudo-random values in ``[0, 1)`` (nearly uniform priors after softmax),
  one of ``TABLE_ROWS`` precomputed rows picked by the hash — cheap for large batches;
* moves-left: ``20 + (h >> 40) mod 80`` plies when ``moves_left=on`` (default: as the net, or off).

Options (``--backend-opts``): ``seed=<int>`` (default 0), ``uniform=on`` (all logits 0),
``delay_ms=<float>`` (sleep per batch to imitate a device; work is done in a thread so
``evaluate_async`` really overlaps), ``delay_per_position_us=<float>`` (plus this much per position:
a device whose time grows with the batch, e.g. T82 on an H100 is close to ``delay_ms=1.3,
delay_per_position_us=22``), ``input_format=<int>`` (planes format the search encodes;
default: the network's, else 1 = classical), ``wdl=on|off``, ``moves_left=on|off``.
"""

from __future__ import annotations

import functools
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from lc0py.backends.base import (
    POLICY_SIZE,
    BackendBase,
    BackendInfo,
    NetworkOutput,
    PendingOutput,
    PlanesBatch,
    ReadyOutput,
)
from lc0py.backends.options import BackendOptions
from lc0py.chess.encoding import SUPPORTED_FORMATS
from lc0py.storage.compiled import cached_njit

if TYPE_CHECKING:
    from lc0py.weights.network import Network

_njit = cached_njit("random-backend", nogil=True)  # lc0py's cache folder (storage.compiled)
TABLE_ROWS = 251  # prime, so "h mod rows" uses all the hash bits
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, vectorised (uint64 arithmetic wraps modulo 2^64)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


@functools.lru_cache(maxsize=8)
def _plane_weights(n: int, seed: int) -> np.ndarray:
    """The per-plane multipliers of ``planes_hash`` (computed once per plane count and seed)."""
    weights = _mix(np.arange(1, 2 * n + 1, dtype=np.uint64) + np.uint64(seed & 0xFFFFFFFF))
    weights.flags.writeable = False
    return weights


@_njit
def _mix_one(x: np.uint64) -> np.uint64:
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@_njit
def _hash_rows(masks: np.ndarray, values: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    """``planes_hash`` row by row, compiled (``values``: the float32 bits as uint32)."""
    n = masks.shape[1]
    for b in range(masks.shape[0]):
        h = np.uint64(0)
        for i in range(n):
            h += _mix_one(masks[b, i]) * weights[i]
        for i in range(n):
            h += _mix_one(np.uint64(values[b, i])) * weights[n + i]
        out[b] = _mix_one(h)


def planes_hash(batch: PlanesBatch, seed: int = 0) -> np.ndarray:
    """``[B]`` uint64 hash of each position's 112 masks and values (order-sensitive):
    splitmix64 of ``sum(mix(mask_i)·w_i) + sum(mix(value_bits_i)·w_(n+i))`` modulo 2^64, the
    weights ``w`` splitmix64 of 1..2n plus the seed. Compiled: the hash is most of this
    backend's cost, and the search-only benchmark should measure the search, not it."""
    masks = np.ascontiguousarray(batch.masks, dtype=np.uint64)
    values = np.ascontiguousarray(batch.values, dtype=np.float32).view(np.uint32)
    out = np.empty(len(masks), np.uint64)
    _hash_rows(masks, values, _plane_weights(masks.shape[1], seed), out)
    return out


@_njit
def _outputs_from_hash(
    h: np.ndarray, rows: int, has_wdl: bool, has_moves_left: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(policy table row, wdl, moves_left) of each hash, the formulas of the module docstring
    in float32 (as numpy evaluates them on float32 arrays), compiled: one call per batch
    instead of a dozen numpy operations (the rows are gathered by numpy, which copies them
    faster)."""
    n = len(h)
    f32 = np.float32
    one, two = f32(1.0), f32(2.0)
    row = np.empty(n, np.intp)
    wdl = np.empty((n, 3), np.float32)
    ml = np.zeros(n, np.float32)
    for b in range(n):
        x = h[b]
        q = f32(np.int64(x % np.uint64(200000)) - 100000) / f32(100000.0)
        d = f32(0.0)
        if has_wdl:
            frac = f32((x >> np.uint64(20)) % np.uint64(1000)) / f32(1000.0)
            d = frac * (one - abs(q))
        wdl[b, 0] = (one + q - d) / two
        wdl[b, 1] = d
        wdl[b, 2] = (one - q - d) / two
        row[b] = np.intp(x % np.uint64(rows))
        if has_moves_left:
            ml[b] = f32(np.uint64(20) + (x >> np.uint64(40)) % np.uint64(80))
    return row, wdl, ml


class RandomBackend(BackendBase):
    """Pseudo-random, position-deterministic outputs; costs only a hash and a table lookup."""

    name = "random"

    def __init__(
        self,
        input_format: int = 1,
        has_wdl: bool = True,
        has_moves_left: bool = False,
        seed: int = 0,
        uniform: bool = False,
        delay_ms: float = 0.0,
        delay_per_position_us: float = 0.0,
    ) -> None:
        self.info = BackendInfo(
            input_format=input_format,
            has_wdl=has_wdl,
            has_moves_left=has_moves_left,
            recommended_batch=256,
            asynchronous=delay_ms > 0 or delay_per_position_us > 0,
        )
        self.seed = seed
        self.delay_ms = delay_ms
        self.delay_per_position_us = delay_per_position_us
        self._device: ThreadPoolExecutor | None = None
        rng = np.random.default_rng(seed)
        if uniform:
            self._table = np.zeros((1, POLICY_SIZE), dtype=np.float32)
        else:
            self._table = rng.random((TABLE_ROWS, POLICY_SIZE), dtype=np.float32)
        # its compiled functions, loaded (or compiled, once per installation) now, not in a timed search
        h = planes_hash(PlanesBatch(np.zeros((1, 112), np.uint64), np.zeros((1, 112), np.float32)), seed)
        _outputs_from_hash(h, len(self._table), has_wdl, has_moves_left)

    def evaluate(self, batch: PlanesBatch) -> NetworkOutput:
        delay = self.device_time(len(batch))
        if delay > 0:
            time.sleep(delay)
        h = planes_hash(batch, self.seed)
        row, wdl, ml = _outputs_from_hash(h, len(self._table), self.info.has_wdl, self.info.has_moves_left)
        policy = self._table[row]
        return NetworkOutput(policy=policy, wdl=wdl, moves_left=ml)

    def device_time(self, positions: int) -> float:
        """Seconds the imitated device takes for a batch of ``positions`` (0: no device)."""
        return (self.delay_ms + positions * self.delay_per_position_us / 1000.0) / 1000.0

    def evaluate_async(self, batch: PlanesBatch) -> PendingOutput:
        if not self.info.asynchronous:
            return ReadyOutput(self.evaluate(batch))
        # Imitate a device: one queue, batches computed in order while the caller gathers.
        if self._device is None:
            self._device = ThreadPoolExecutor(1, thread_name_prefix="lc0py-random-device")
        return self._device.submit(self.evaluate, batch)

    def close(self) -> None:
        if self._device is not None:
            self._device.shutdown(wait=True)
            self._device = None


def create(network: Network | None, options: BackendOptions) -> RandomBackend:
    """Registry factory; ``network`` may be ``None`` (no weights needed)."""
    default_format = int(network.format.input) if network is not None else 1
    backend = RandomBackend(
        input_format=options.take("input_format", default_format, choices=SUPPORTED_FORMATS),
        has_wdl=options.take("wdl", network.has_wdl if network is not None else True),
        has_moves_left=options.take("moves_left", network.has_moves_left if network is not None else False),
        seed=options.take("seed", 0, hi=2**32 - 1),
        uniform=options.take("uniform", False),
        delay_ms=options.take("delay_ms", 0.0, hi=60_000.0),  # at most a minute per batch
        delay_per_position_us=options.take("delay_per_position_us", 0.0, hi=60_000.0),
    )
    options.finish(
        ("seed", "uniform", "delay_ms", "delay_per_position_us", "input_format", "wdl", "moves_left")
    )
    return backend
