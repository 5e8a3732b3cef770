"""New leaves with lc0py.chess (python-chess bitboards): position, game-over rules, NN-cache
lookup, input planes and legal moves with their policy indices (lc0's ``ExtendNode`` and
``AddInput``). Interim: replaced by the compiled move generator of ``core/board.py`` once merged.

A leaf's position is its parent's ``PositionRecord`` plus one move (``record_after``); records
are kept per expanded node in ``NodeTree.records``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import chess
import numpy as np

from lc0py.chess.encoding import PositionRecord, choose_transform, encode_history_parts, parts_batch
from lc0py.chess.history import load_board, push_record, record_after
from lc0py.search.core import arrays as A
from lc0py.search.core.backup import make_terminal
from lc0py.search.core.numeric import softmax_codes
from lc0py.search.core.tree import NodeTree
from lc0py.search.movegen import legal_moves_indexed, to_move
from lc0py.search.nncache import NNCache, position_key

KIND_TERMINAL = 0
KIND_CACHE_HIT = 1
KIND_NN = 2


@dataclass
class NNRequests:
    """Leaves waiting for the network: their planes (in parts) and policy indices."""

    nodes: list[int] = field(default_factory=list)
    keys: list[bytes] = field(default_factory=list)
    idx: list[list[int]] = field(default_factory=list)
    blocks: list[np.ndarray] = field(default_factory=list)
    aux: list[list[int]] = field(default_factory=list)
    rule50: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.nodes)

    def planes(self):  # type: ignore[no-untyped-def]
        return parts_batch(self.blocks, self.aux, self.rule50)


class PyLeaves:
    """``extend(node, depth)`` → KIND_TERMINAL (node made terminal), KIND_CACHE_HIT (edges and
    priors set, value in ``self.hit``) or KIND_NN (edges set in generation order, request queued)."""

    def __init__(
        self, tree: NodeTree, cache: NNCache, input_format: int, history_fill: str, two_fold: bool
    ) -> None:
        self.tree = tree
        self.cache = cache
        self.input_format = input_format
        self.fill = history_fill
        self.two_fold = two_fold
        self.base: list[PositionRecord] = list(tree.history._records)
        tree.records[tree.root_id] = self.base[-1]
        self.scratch = tree.history.board.copy(stack=False)
        self.chess960 = self.scratch.chess960
        self.hit: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def _path_records(self, node: int) -> list[PositionRecord]:
        """Records of the positions from the root (exclusive) down to ``node``'s parent."""
        t = self.tree.arrays
        recs = self.tree.records
        root = self.tree.root_id
        path = []
        x = int(t.parent[node])
        while x != root and x >= 0:
            path.append(recs[x])
            x = int(t.parent[x])
        path.reverse()
        return path

    def extend(self, node: int, depth: int, requests: NNRequests) -> int:
        tree = self.tree
        t = tree.arrays
        root = tree.root_id
        board = self.scratch
        if node == root:
            recs = self.base
            rec = recs[-1]
            load_board(board, rec)
        else:
            recs = self.base + self._path_records(node)
            parent = int(t.parent[node])
            move = int(t.emove[int(t.edge0[parent]) + int(t.index[node])])
            prec = tree.records[parent]
            if self.chess960:
                load_board(board, prec)
                rec = push_record(board, to_move(move), recs)
            else:
                rec = record_after(prec, move, recs)
            load_board(board, rec)
            recs.append(rec)
        tree.records[node] = rec
        transform = choose_transform(rec) if self.input_format >= 3 else 0
        moves, idx = legal_moves_indexed(board, transform)
        if not moves:
            in_check = board.is_check()
            make_terminal(t, node, 1 if in_check else 0, 0.0, A.END_OF_GAME)
            return KIND_TERMINAL
        if node != root:
            if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
                make_terminal(t, node, 0, 0.0, A.END_OF_GAME)
                return KIND_TERMINAL
            if rec.rule50 >= 100:
                make_terminal(t, node, 0, 0.0, A.END_OF_GAME)
                return KIND_TERMINAL
            reps = rec.repetitions
            if reps >= 2:
                make_terminal(t, node, 0, 0.0, A.END_OF_GAME)
                return KIND_TERMINAL
            if reps == 1 and depth - 1 >= 4 and self.two_fold:
                since = _plies_since_repetition(recs)
                if depth - 1 >= since:
                    make_terminal(t, node, 0, float(since), A.TWO_FOLD)
                    return KIND_TERMINAL
        key = position_key(rec.key, rec.repetitions)
        entry = self.cache.get(key)
        tree.ensure_capacity(0, len(moves))
        t = tree.arrays
        e0 = int(A.reserve_edges(t, len(moves)))
        t.edge0[node] = e0
        t.nedges[node] = len(moves)
        if entry is not None:
            q, d, m, mb, pb = entry
            t.emove[e0 : e0 + len(moves)] = np.frombuffer(mb, np.uint16)
            t.ep[e0 : e0 + len(moves)] = np.frombuffer(pb, np.uint16)
            self.hit = (q, d, m)
            return KIND_CACHE_HIT
        t.emove[e0 : e0 + len(moves)] = moves
        t.ep[e0 : e0 + len(moves)] = 0
        blocks, aux, rule50, _ = encode_history_parts(recs, self.input_format, self.fill)
        requests.nodes.append(node)
        requests.keys.append(key)
        requests.idx.append(idx)
        requests.blocks += blocks
        requests.aux.append(aux)
        requests.rule50.append(rule50)
        return KIND_NN

    def apply(self, requests: NNRequests, out, inv_temperature: float, abandoned: bool = False):  # type: ignore[no-untyped-def]
        """Priors (lc0's softmax, 16-bit, sorted) into the edges and the cache; returns
        (q, d, m) arrays of the side to move at each leaf."""
        t = self.tree.arrays
        q = out.q.astype(np.float32)
        d = out.wdl[:, 1].astype(np.float32)
        m = out.moves_left.astype(np.float32)
        policy = out.policy
        for b, node in enumerate(requests.nodes):
            idx = np.asarray(requests.idx[b], dtype=np.intp)
            logits = np.ascontiguousarray(policy[b, idx], dtype=np.float32)
            codes = np.empty(len(idx), np.uint16)
            softmax_codes(logits, len(idx), inv_temperature, codes)
            e0 = int(t.edge0[node])
            ne = len(idx)
            order = np.argsort(-codes.astype(np.int32), kind="stable")
            moves = t.emove[e0 : e0 + ne][order]
            codes = codes[order]
            self.cache.put(
                requests.keys[b], (float(q[b]), float(d[b]), float(m[b]), moves.tobytes(), codes.tobytes())
            )
            if not abandoned:
                t.emove[e0 : e0 + ne] = moves
                t.ep[e0 : e0 + ne] = codes
                t.v[node] = -q[b]
        return q, d, m


def _plies_since_repetition(recs: list[PositionRecord]) -> int:
    key = recs[-1].key
    for back in range(4, len(recs), 2):
        if recs[-1 - back].key == key:
            return back
    return 0


def board_of(tree: NodeTree) -> chess.Board:
    return tree.history.board
