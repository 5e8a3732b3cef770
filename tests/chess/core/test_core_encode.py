"""lc0py.chess.core.encode against lc0py's Python encoder and policy map (the oracles)."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from lc0py.chess.core import board as B
from lc0py.chess.core import encode as E
from lc0py.chess.encoding import HISTORY_FILLS, SUPPORTED_FORMATS, encode_history
from lc0py.chess.policy import legal_moves_with_indices
from lc0py.chess.testing import oracle_positions

CASES = oracle_positions(seed=1, count=160)


def _game(case):
    history = case.history()
    records = history.records
    hist = np.stack([B.pos_from_record(r, chess960=case.chess960) for r in records])
    reps = np.array([r.repetitions for r in records], dtype=np.int32)
    return history, records, hist, reps


@pytest.mark.parametrize("input_format", SUPPORTED_FORMATS)
@pytest.mark.parametrize("fill", HISTORY_FILLS)
def test_planes_identical_to_python_encoder(input_format: int, fill: str) -> None:
    masks = np.zeros(112, np.uint64)
    values = np.zeros(112, np.float32)
    transforms = set()
    seen = dict.fromkeys(("castling change", "ep", "repetition", "promotion", "chess960"), 0)
    for case in CASES:
        _, records, hist, reps = _game(case)
        # every position of the game, not only the last: castling changes, ep, repetitions on the way
        for end in range(max(1, len(records) - 6), len(records) + 1):
            window = records[max(0, end - 8) : end]
            seen["castling change"] += any(r.castling != window[-1].castling for r in window)
            seen["ep"] += any(r.ep >= 0 for r in window)
            seen["repetition"] += any(r.repetitions for r in window)
            seen["promotion"] += sum(
                bin(p).count("1") for p in window[-1].pieces[1:5] + window[-1].pieces[7:11]
            ) > (sum(bin(p).count("1") for p in window[0].pieces[1:5] + window[0].pieces[7:11]))
            seen["chess960"] += case.chess960
            expected = encode_history(records[:end], input_format, fill)
            masks[:] = 12345
            values[:] = -7.0
            transform = E.encode(hist, reps, end, input_format, E.fill_code(fill), masks, values)
            assert transform == expected.transform, case.id
            np.testing.assert_array_equal(masks, expected.masks, err_msg=case.id)
            np.testing.assert_array_equal(values, expected.values, err_msg=case.id)
            transforms.add(transform)
    if input_format >= 3:
        assert len(transforms) >= 4  # the suite reaches flips, mirrors and transposes
    assert all(seen.values()), seen  # the suite exercises every feature of the walk


def test_encode_writes_into_batch_rows() -> None:
    """One row of a (masks, values) batch, the other rows untouched."""
    _, records, hist, reps = _game(CASES[3])
    masks = np.full((3, 112), 99, np.uint64)
    values = np.full((3, 112), 5.0, np.float32)
    E.encode(hist, reps, len(records), 3, E.FILL_FEN_ONLY, masks[1], values[1])
    expected = encode_history(records, 3)
    np.testing.assert_array_equal(masks[1], expected.masks)
    np.testing.assert_array_equal(values[1], expected.values)
    assert (masks[0] == 99).all() and (masks[2] == 99).all() and (values[2] == 5.0).all()


def _python_indices(board: chess.Board, transform: int) -> dict[chess.Move, int]:
    moves, idx = legal_moves_with_indices(board, transform)
    return dict(zip(moves, idx.tolist(), strict=True))


def test_policy_indices_identical_to_python_map() -> None:
    buf = np.zeros(B.MAX_MOVES, np.uint16)
    out = np.zeros(B.MAX_MOVES, np.int16)
    masks = np.zeros(112, np.uint64)
    values = np.zeros(112, np.float32)
    checked = 0
    for case in CASES:
        history, records, hist, reps = _game(case)
        board = history.board
        pos = hist[-1]
        n = B.gen_legal(pos, buf)
        chosen = E.encode(hist, reps, len(records), 3, E.FILL_FEN_ONLY, masks, values)
        transforms = {0, chosen}
        if not (board.pawns or board.castling_rights):
            transforms = set(range(8))  # pawnless: every transform has an entry for every move
        for transform in transforms:
            expected = _python_indices(board, transform)
            E.policy_indices(pos, buf, n, transform, out)
            got = {
                B.to_chess_move(m, board): i for m, i in zip(buf[:n].tolist(), out[:n].tolist(), strict=True)
            }
            assert got == expected, (case.id, transform)
            checked += n
    assert checked > 2000


def test_policy_anchor_indices() -> None:
    """docs/input-encoding.md §5.2 anchors, through the core: O-O = e1h1 = 103, Black's e7e5 = 322."""
    buf = np.zeros(B.MAX_MOVES, np.uint16)
    out = np.zeros(B.MAX_MOVES, np.int16)
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    pos = B.pos_from_board(board)
    moves = np.array([4 | 7 << 6, 4 | 0 << 6, 4 | 5 << 6], np.uint16)
    E.policy_indices(pos, moves, 3, 0, out)
    assert out[:3].tolist() == [103, 97, 101]  # e1h1, e1a1, e1f1
    black = chess.Board()
    black.push_uci("g1f3")
    pos = B.pos_from_board(black)
    n = B.gen_legal(pos, buf)
    E.policy_indices(pos, buf, n, 0, out)
    by_uci = {B.to_uci(m, False, pos): i for m, i in zip(buf[:n].tolist(), out[:n].tolist(), strict=True)}
    assert by_uci["e7e5"] == 322 and by_uci["g8f6"] == 159
