"""lc0's search stoppers (``src/search/classic/stoppers/stoppers.cc``), checked after every
batch: visits (the node limit is checked after the batch, so a search may end a little past it,
as lc0's), time, depth, mate, RAM limit and smart pruning."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from lc0py.search.core.arrays import EDGE_BYTES, NODE_BYTES
from lc0py.search.core.gather import EDGES_PER_VISIT
from lc0py.search.params import SearchParams

SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
NODE_LIMIT = 4000000000  # lc0 always limits visits to this


@dataclass
class IterationStats:
    """lc0's ``IterationStats`` (root edges over all moves, searchmoves or not)."""

    time_since_movestart: int
    total_nodes: int
    nodes_since_movestart: int
    batches_since_movestart: int
    average_depth: int
    edges: int
    largest_n: int
    second_n: int
    win_found: bool
    losing_edges: int
    may_resign: bool
    mate_depth: int | None
    memory_bytes: int = 0  # tree storage allocated + NN cache
    tree_nodes: int = 0
    node_bytes: float = 0.0  # tree storage in use per node
    batch_visits: int = 0  # most visits one batch adds


@dataclass
class Hints:
    """lc0's ``StoppersHints``: what the stoppers estimate is left (the gather reads it)."""

    remaining_playouts: float = math.inf
    remaining_time_ms: float = math.inf


def should_stop(
    limits,  # type: ignore[no-untyped-def]
    params: SearchParams,
    stats: IterationStats,
    hints: Hints,
    first_eval_ms: int | None,
    first_eval_now: bool,
) -> str:
    """The reason to stop now ("" to go on); fills ``hints`` as lc0's chained stopper does."""
    smart = limits.smart_pruning and not limits.infinite and params.smart_pruning_factor > 0
    # RAM limit (lc0's MemoryWatchingStopper): tree + NN cache; stops while one more batch still
    # fits (NodeTree.ensure_capacity keeps the arrays' growth under the limit).
    if limits.ram_limit_mb > 0:
        limit_bytes = limits.ram_limit_mb * 1_000_000
        per_node = max(stats.node_bytes, 1.0)
        # the next batch reserves room for a node and 218 edges per visit
        reserve = 2 * stats.batch_visits * (NODE_BYTES + EDGES_PER_VISIT * EDGE_BYTES)
        if stats.memory_bytes + reserve >= limit_bytes:
            return "ram limit"
        if smart:
            left = (limit_bytes - stats.memory_bytes - reserve) / per_node
            hints.remaining_playouts = min(hints.remaining_playouts, left)
    node_limit = limits.nodes if limits.nodes is not None else NODE_LIMIT
    if smart:
        hints.remaining_playouts = min(hints.remaining_playouts, node_limit - stats.total_nodes)
    if limits.deadline_ms is not None and not limits.infinite:
        hints.remaining_time_ms = min(
            hints.remaining_time_ms, limits.deadline_ms - stats.time_since_movestart
        )
    reason = counter_limit(limits, stats.total_nodes, stats.time_since_movestart, stats.average_depth)
    if reason:
        return reason
    if limits.mate is not None and stats.mate_depth is not None and stats.mate_depth <= limits.mate:
        return "mate"
    if smart:
        return _smart_pruning(params, stats, hints, first_eval_ms, first_eval_now)
    return ""


def reads_root_stats(limits, params: SearchParams) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``should_stop`` needs more than ``counter_limit``'s counters and clock for
    ``limits`` (smart pruning, the RAM limit and ``go mate`` read the root's statistics and the
    tree's size); otherwise the search checks ``counter_limit`` alone after each batch."""
    smart = limits.smart_pruning and not limits.infinite and params.smart_pruning_factor > 0
    return bool(smart or limits.ram_limit_mb > 0 or limits.mate is not None)


def counter_limit(limits, total_nodes: int, time_ms: int, average_depth: int) -> str:  # type: ignore[no-untyped-def]
    """The node, time and depth stoppers, in ``should_stop``'s order ("" to go on)."""
    node_limit = limits.nodes if limits.nodes is not None else NODE_LIMIT
    if total_nodes >= node_limit:
        return "nodes"
    if limits.deadline_ms is not None and not limits.infinite and time_ms >= limits.deadline_ms:
        return "time"
    if limits.depth is not None and average_depth >= limits.depth:
        return "depth"
    return ""


def _smart_pruning(
    params: SearchParams, stats: IterationStats, hints: Hints, first_eval_ms: int | None, first_now: bool
) -> str:
    factor = params.smart_pruning_factor
    if stats.edges == 1:
        return "only move"
    if stats.edges <= stats.losing_edges + (0 if stats.may_resign else 1):
        return "at most one non-losing move"
    if stats.win_found:
        return "proven win"
    if first_now or first_eval_ms is None or stats.edges == 0:
        return ""
    if stats.time_since_movestart < first_eval_ms + SMART_PRUNING_TOLERANCE_MS:
        return ""
    nodes = stats.nodes_since_movestart + SMART_PRUNING_TOLERANCE_NODES
    elapsed = stats.time_since_movestart - first_eval_ms
    nps = 1000 * nodes // elapsed + 1
    remaining_s = hints.remaining_time_ms / 1000.0
    remaining = min(remaining_s * nps / factor, hints.remaining_playouts / factor)
    hints.remaining_playouts = remaining
    if stats.batches_since_movestart < 0:  # SmartPruningMinimumBatches (0)
        return ""
    if remaining < stats.largest_n - stats.second_n:
        return "smart pruning"
    return ""


def now_ms(start: float) -> int:
    return int((time.perf_counter() - start) * 1000)
