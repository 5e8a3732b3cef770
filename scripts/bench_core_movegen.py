#!/usr/bin/env python
"""The compiled search core (``lc0py.search.core``) vs the Python search's path, per position.

On lc0's 34 benchmark positions (``lc0py benchmark``), each with a short game history:

* **movegen + indices**: all legal moves and their policy indices.
  Python: ``lc0py.search.movegen.legal_moves_indexed``; core: ``gen_legal`` + ``policy_indices``.
* **play all**: the child position of every legal move.
  Python: ``lc0py.chess.history.record_after`` (standard chess, what the search calls per new
  leaf); core: ``play``.
* **leaf**: what the search pays for one new leaf (the position after one move: play, its
  repetition count, its 112 planes, its legal moves with indices), input format 3.
  Python: ``record_after`` + ``encode_history_parts`` + ``load_board`` + ``legal_moves_indexed``;
  core: ``play`` + ``repetitions`` + ``encode`` + ``gen_legal`` + ``policy_indices``.
* **encode**: the planes of a position whose ancestors are already known, formats 1, 3, 5.
  Python: ``encode_history_parts`` on a new record (ancestors' frames cached, as in the search);
  core: ``encode``.

Core timings are given twice: inside one compiled loop over the positions (what the compiled
search sees) and as one Python → numba call per position (the dispatch overhead included).
Microseconds of process CPU time per position (per move for "play"), median of ``--repeat`` runs
(CPU time, not wall time: the machine is shared).

    python scripts/bench_core_movegen.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import chess
import numpy as np

from lc0py.chess.encoding import encode_history_parts
from lc0py.chess.history import PositionHistory, load_board, record_after
from lc0py.search.core import board as B
from lc0py.search.core import encode as E
from lc0py.search.core.jit import njit
from lc0py.search.movegen import legal_moves_indexed, pack
from lc0py.tools.benchmark import POSITIONS, split_position

PY_LOOPS = 20  # passes over the positions per run of the Python paths


@njit
def _core_movegen(positions, moves, idx, reps):
    total = 0
    for _ in range(reps):
        for p in range(positions.shape[0]):
            n = B.gen_legal(positions[p], moves)
            E.policy_indices(positions[p], moves, n, 0, idx)
            total += n
    return total


@njit
def _core_play_all(positions, moves, child, reps):
    total = 0
    for _ in range(reps):
        for p in range(positions.shape[0]):
            n = B.gen_legal(positions[p], moves)
            for i in range(n):
                B.play(positions[p], moves[i], child)
            total += n
    return total


@njit
def _core_gen_only(positions, moves, reps):
    total = 0
    for _ in range(reps):
        for p in range(positions.shape[0]):
            total += B.gen_legal(positions[p], moves)
    return total


@njit
def _core_encode(hists, lengths, reps_arr, fmt, masks, values, reps):
    t = 0
    for _ in range(reps):
        for p in range(hists.shape[0]):
            t += E.encode(hists[p], reps_arr[p], lengths[p], fmt, 1, masks, values)
    return t


@njit
def _core_leaf(hists, lengths, first_moves, keys, r50s, moves, idx, masks, values, reps_arr, reps):
    total = 0
    for _ in range(reps):
        for p in range(hists.shape[0]):
            n = lengths[p]
            B.play(hists[p, n - 1], first_moves[p], hists[p, n])
            keys[p, n] = B.key(hists[p, n])
            r50s[p, n] = B.rule50(hists[p, n])
            count, _ = B.repetitions(keys[p], r50s[p], n + 1)
            reps_arr[p, n] = count
            t = E.encode(hists[p], reps_arr[p], n + 1, 3, 1, masks, values)
            m = B.gen_legal(hists[p, n], moves)
            E.policy_indices(hists[p, n], moves, m, t, idx)
            total += m
    return total


def _median_us(fn, per: int, repeat: int, loops: int = 1) -> float:
    """Median CPU µs per item of ``fn`` (which handles ``per`` items), called ``loops`` times a run."""
    runs = []
    for _ in range(repeat):
        t0 = time.process_time()
        for _ in range(loops):
            fn()
        runs.append(time.process_time() - t0)
    return statistics.median(runs) / (per * loops) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    histories = []
    for text in POSITIONS:
        fen, moves = split_position(text)
        histories.append(PositionHistory.from_fen(fen, moves))
    # Give every position a few plies of history (a knight out and back), so encoding walks some.
    for h in histories:
        for _ in range(2):
            legal = sorted(h.board.legal_moves, key=lambda m: m.uci())
            quiet = [
                m for m in legal if not h.board.is_capture(m) and h.board.piece_type_at(m.from_square) != 1
            ]
            h.push((quiet or legal)[0])
    histories = [h for h in histories if any(True for _ in h.board.legal_moves)]
    npos = len(histories)
    longest = max(len(h) for h in histories) + 1
    hists = np.zeros((npos, longest, B.POS_WORDS), np.uint64)
    keys = np.zeros((npos, longest), np.uint64)
    r50s = np.zeros((npos, longest), np.int32)
    reps_arr = np.zeros((npos, longest), np.int32)
    lengths = np.zeros(npos, np.int64)
    first_moves = np.zeros(npos, np.int64)
    for p, h in enumerate(histories):
        for i, rec in enumerate(h.records):
            hists[p, i] = B.pos_from_record(rec)
            keys[p, i] = B.key(hists[p, i])
            r50s[p, i] = rec.rule50
            reps_arr[p, i] = rec.repetitions
        lengths[p] = len(h)
        first_moves[p] = B.from_chess_move(next(iter(h.board.legal_moves)), h.board)
    current = np.ascontiguousarray(hists[np.arange(npos), lengths - 1])
    moves = np.zeros(B.MAX_MOVES, np.uint16)
    idx = np.zeros(B.MAX_MOVES, np.int16)
    child = np.zeros(B.POS_WORDS, np.uint64)
    masks = np.zeros(112, np.uint64)
    values = np.zeros(112, np.float32)
    boards = [h.board for h in histories]
    nmoves = sum(b.legal_moves.count() for b in boards)
    print(f"{npos} positions (lc0 benchmark + 2 plies), {nmoves / npos:.1f} legal moves on average")

    t0 = time.perf_counter()
    _core_movegen(current, moves, idx, 1)
    _core_play_all(current, moves, child, 1)
    _core_gen_only(current, moves, 1)
    _core_encode(hists, lengths, reps_arr, 3, masks, values, 1)
    _core_leaf(hists.copy(), lengths, first_moves, keys.copy(), r50s.copy(), moves, idx, masks, values,
               reps_arr.copy(), 1)  # fmt: skip
    print(f"(compile or cache load of the benchmark loops: {time.perf_counter() - t0:.1f} s)")

    inner = 2000  # compiled loops: passes over the positions per run
    rows = []

    # movegen + indices
    py = _median_us(lambda: [legal_moves_indexed(b, 0) for b in boards], npos, args.repeat, PY_LOOPS)
    core = _median_us(lambda: _core_movegen(current, moves, idx, inner), npos * inner, args.repeat)

    def per_call():
        for p in range(npos):
            n = B.gen_legal(current[p], moves)
            E.policy_indices(current[p], moves, n, 0, idx)

    call = _median_us(per_call, npos, args.repeat, PY_LOOPS)
    rows.append(("movegen + policy indices", py, core, call))
    gen_only = _median_us(lambda: _core_gen_only(current, moves, inner), npos * inner, args.repeat)

    # play all children (per move)
    packed = [[pack(m) for m in b.legal_moves] for b in boards]
    recs = [h.records for h in histories]

    def py_play():
        for p in range(npos):
            parent = recs[p][-1]
            prev = list(recs[p])
            for m in packed[p]:
                record_after(parent, m, prev)

    py = _median_us(py_play, nmoves, args.repeat, PY_LOOPS)
    core_play = _median_us(lambda: _core_play_all(current, moves, child, inner), nmoves * inner, args.repeat)
    core = core_play - gen_only * npos / nmoves
    rows.append(("play, per move", py, core, float("nan")))

    # one new leaf
    scratch = chess.Board()
    std_first = [pack(B.to_chess_move(int(first_moves[p]), boards[p])) for p in range(npos)]

    def py_leaf():
        for p in range(npos):
            prev = list(recs[p])
            rec = record_after(prev[-1], std_first[p], prev)
            _, _, _, t = encode_history_parts([*prev, rec], 3)
            load_board(scratch, rec)
            legal_moves_indexed(scratch, t)

    py = _median_us(py_leaf, npos, args.repeat, PY_LOOPS)
    leaf_args = (hists.copy(), lengths, first_moves, keys.copy(), r50s.copy(), moves, idx, masks, values,
                 reps_arr.copy())  # fmt: skip
    core = _median_us(lambda: _core_leaf(*leaf_args, inner), npos * inner, args.repeat)
    rows.append(("new leaf (play+reps+encode+movegen), fmt 3", py, core, float("nan")))

    # encode
    new_recs = []
    for p in range(npos):
        prev = list(recs[p])
        new_recs.append([*prev, record_after(prev[-1], std_first[p], prev)])
    for fmt in (1, 3, 5):

        def py_enc(fmt: int = fmt) -> None:
            for p in range(npos):
                r = new_recs[p]
                r[-1]._frames.clear()  # the leaf's own frames are new in the search
                encode_history_parts(r, fmt)

        py = _median_us(py_enc, npos, args.repeat, PY_LOOPS)
        core = _median_us(
            lambda fmt=fmt: _core_encode(hists, lengths, reps_arr, fmt, masks, values, inner),
            npos * inner,
            args.repeat,
        )

        def enc_call(fmt: int = fmt) -> None:
            for p in range(npos):
                E.encode(hists[p], reps_arr[p], lengths[p], fmt, 1, masks, values)

        call = _median_us(enc_call, npos, args.repeat, PY_LOOPS)
        rows.append((f"encode, input format {fmt}", py, core, call))

    print(f"{'operation':45s} {'Python µs':>10s} {'core µs':>9s} {'ratio':>7s} {'core from Python µs':>20s}")
    for name, py, core, call in rows:
        print(f"{name:45s} {py:10.2f} {core:9.3f} {py / core:6.0f}x {call:20.2f}")
    print(f"(gen_legal alone, compiled loop: {gen_only:.3f} µs a position)")


if __name__ == "__main__":
    main()
