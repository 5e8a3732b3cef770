"""Input planes (docs/input-encoding.md §2–§4): anchors, history walk, fill modes, repetitions, V2."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.chess import FLIP, MIRROR, TRANSPOSE, EncodedPosition, PositionHistory, encode_batch
from lc0py.chess.encoding import lc0_v2_loops_forever
from lc0py.errors import PositionError

ALL = (1 << 64) - 1
FORMATS = (1, 2, 3, 4, 5, 132, 133)
CANONICAL = (3, 4, 5, 132, 133)


def masks(e: EncodedPosition) -> list[int]:
    return [int(x) for x in e.masks]


def step(e: EncodedPosition, i: int) -> list[int]:
    """The 13 masks of history step ``i``."""
    return masks(e)[13 * i : 13 * i + 13]


def written_steps(e: EncodedPosition) -> int:
    return sum(any(step(e, i)) for i in range(8))


# --- start position (§4 anchors) -------------------------------------------------------------------
START_PIECES = [0xFF00, 1 << 1 | 1 << 6, 1 << 2 | 1 << 5, 1 << 0 | 1 << 7, 1 << 3, 1 << 4]


def test_start_position_format1() -> None:
    e = PositionHistory.from_fen().encode(1, "no")
    m = masks(e)
    assert m[0:6] == START_PIECES
    assert m[6] == 0x00FF000000000000
    assert m[11] == 1 << 60
    assert m[12:104] == [0] * 92
    assert m[104:108] == [ALL] * 4
    assert m[108] == 0
    assert m[109] == ALL and e.values[109] == 0.0
    assert m[110] == 0
    assert m[111] == ALL and e.values[111] == 1.0
    assert e.transform == 0
    assert e.masks.dtype == np.uint64 and e.values.dtype == np.float32 and e.masks.shape == (112,)


@pytest.mark.parametrize("fmt", FORMATS[1:])
def test_start_position_castling_plane_formats(fmt: int) -> None:
    m = masks(PositionHistory.from_fen().encode(fmt))
    assert m[104] == 1 << 0 | 1 << 56
    assert m[105] == 1 << 7 | 1 << 63
    assert m[106] == m[107] == 0
    assert m[0:6] == START_PIECES


def test_start_position_fill_modes() -> None:
    h = PositionHistory.from_fen()
    assert written_steps(h.encode(1, "no")) == 1
    assert written_steps(h.encode(1, "fen_only")) == 1  # the standard start is never synthesised
    e = h.encode(1, "always")
    assert written_steps(e) == 8
    assert all(step(e, i) == step(e, 0) for i in range(8))
    # Canonical formats stop right after the start (rule50 = 0).
    assert written_steps(h.encode(3, "always")) == 1


# --- transform anchors (lc0 encoder_test) ----------------------------------------------------------
def test_endgame_anchor_transform_7() -> None:
    h = PositionHistory.from_fen("3r4/4k3/8/1K6/8/8/8/8 w - - 0 1")
    e = h.encode(3, "no")
    assert e.transform == FLIP | MIRROR | TRANSPOSE
    assert masks(e)[5] == 1 << 12 and masks(e)[11] == 1 << 38
    e1 = h.encode(1, "no")
    assert e1.transform == 0
    assert masks(e1)[5] == 1 << 33 and masks(e1)[11] == 1 << 52


def test_endgame_anchor_diagonal_tiebreak() -> None:
    e = PositionHistory.from_fen("3r4/4k3/2K5/8/8/8/8/8 w - - 0 1").encode(3, "no")
    assert e.transform == FLIP | MIRROR
    assert masks(e)[5] == 1 << 21 and masks(e)[11] == 1 << 11


def test_early_game_flip() -> None:
    h = PositionHistory.from_fen(None, ["e2e4", "e7e5", "e1e2", "e8e7", "e2d3"])
    e = h.encode(3, "no")
    assert e.transform == 0
    assert masks(e)[5] == 1 << 12 and masks(e)[11] == 1 << 43
    h.push(chess.Move.from_uci("e7e6"))
    e = h.encode(3, "no")
    assert e.transform == FLIP
    assert masks(e)[5] == 1 << 20 and masks(e)[11] == 1 << 43


@pytest.mark.parametrize(
    "fen,transform",
    [
        ("8/8/8/8/8/8/8/K6k w - - 1 1", FLIP),  # king a1 -> h1 (on the diagonal, symmetric)
        ("8/8/8/8/8/8/6K1/k7 w - - 1 1", 0),  # king g2 on the diagonal; a1 below it
        ("8/8/8/8/8/8/6K1/7k w - - 1 1", 0),  # g2 and h1 are both on the diagonal: all ties
        ("7k/8/8/8/8/8/6K1/8 w - - 1 1", TRANSPOSE),  # tie-break: h8 -> a1 makes the value smaller
        ("8/8/8/8/7K/8/8/k7 w - - 1 1", TRANSPOSE),  # h4: above the diagonal
        ("K7/8/8/8/8/8/8/7k w - - 1 1", FLIP | MIRROR),  # a8 -> h1
        ("8/8/8/8/8/8/8/K6k b - - 1 1", MIRROR),  # Black's frame: king h8 -> MIRROR -> h1, tie kept
        ("8/8/8/8/8/8/1P6/K6k w - - 0 1", FLIP),  # pawns: FLIP only
        ("8/8/8/8/8/8/8/R3K2k w Q - 1 1", 0),  # castling rights: never
    ],
)
def test_choose_transform(fen: str, transform: int) -> None:
    assert PositionHistory.from_fen(fen).encode(3).transform == transform


def test_transform_applies_to_history_and_ep_plane() -> None:
    # FLIP with pawns: the ep plane and every history step are flipped.
    h = PositionHistory.from_fen("4k3/8/8/8/8/8/3PP3/2K5 w - - 0 1", ["c1b1", "e8d8", "e2e4"])
    # Black to move, black king d8 -> frame d1: FLIP (file d). Marker? no black pawn: none.
    e = h.encode(3)
    assert e.transform == FLIP
    assert e.masks[108] == 0
    e1 = h.encode(1)
    flipped = [int.from_bytes(bytes(int(f"{b:08b}"[::-1], 2) for b in v.to_bytes(8, "little")), "little")
               for v in step(e1, 0)]  # fmt: skip
    assert step(e, 0) == flipped


# --- en passant ------------------------------------------------------------------------------------
def test_ep_anchor() -> None:
    h = PositionHistory.from_fen(None, ["e2e4", "g7g6", "e4e5", "f7f5"])
    e = h.encode(3, "no")
    assert masks(e)[108] == 1 << 61
    assert all(x == 0 for x in masks(e)[13:104])
    h.push(chess.Move.from_uci("g1f3"))  # no more ep; the previous position had the marker: stop
    e = h.encode(3, "no")
    assert masks(e)[108] == 0
    assert all(x == 0 for x in masks(e)[13:104])
    h.push(chess.Move.from_uci("g8f6"))
    e = h.encode(3, "no")
    assert written_steps(e) == 2


def test_ep_marker_only_when_capturable() -> None:
    h = PositionHistory.from_fen(None, ["e2e4"])  # no black pawn on d4/f4: no marker
    assert h.records[-1].ep == -1
    assert h.encode(3).masks[108] == 0
    # python-chess sets ep_square after every double push; lc0 does not.
    assert h.board.ep_square == chess.E3


def test_ep_marker_pseudo_legal_pinned() -> None:
    # d4xe3 would expose the black king on a4 to Qh4: illegal, but lc0's marker ignores pins.
    h = PositionHistory.from_fen("8/8/8/8/k2p3Q/8/4P3/4K3 w - - 0 1", ["e2e4"])
    assert not h.board.has_legal_en_passant()
    assert h.records[-1].ep == chess.E3
    e = h.encode(3)
    assert masks(h.encode(1))[5] & 0x0F0F0F0F0F0F0F0F  # our king on files a-d: FLIP
    assert e.transform == FLIP
    assert masks(e)[108] == 1 << (56 + 3)  # e-file on rank 8 of Black's frame, flipped to d


def test_fen_ep_square_always_marker() -> None:
    fen = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"  # nobody can capture
    h = PositionHistory.from_fen(fen)
    assert h.records[0].ep == chess.E3
    assert masks(h.encode(3))[108] == 1 << 60
    # Non-canonical, fill "no": one synthesised step with the double push undone.
    e = h.encode(1, "no")
    assert written_steps(e) == 2
    s0, s1 = step(e, 0), step(e, 1)
    # Black to move: frame mirrored, "theirs" = White. White pawn e4 (frame e5) back to e2 (frame e7).
    assert s0[6] == 0x00FF000000000000 ^ (1 << 52) | (1 << 36)
    assert s1[6] == 0x00FF000000000000
    assert s1[:6] == s0[:6]


def test_ep_undo_our_pawn() -> None:
    # White to move after Black's double push d7d5 in the FEN; the undo moves Black's pawn back.
    fen = "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 2"
    e = PositionHistory.from_fen(fen).encode(2, "fen_only")
    assert written_steps(e) == 8
    s0, s1 = step(e, 0), step(e, 1)
    assert s0[6] & (1 << chess.D5) and not s0[6] & (1 << chess.D7)
    assert s1[6] & (1 << chess.D7) and not s1[6] & (1 << chess.D5)
    assert all(step(e, i) == s1 for i in range(2, 8))


@pytest.mark.parametrize(
    "fen",
    [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq e3 0 1",  # wrong rank for White to move
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq e3 0 1",  # no pawn that pushed
        "not a fen",
        "8/8/8/8/8/8/8/8 w - - 0 1",  # no kings
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN1 w KQkq - 0 1",  # castling right without rook
        "P3k3/8/8/8/8/8/8/4K3 w - - 0 1",  # pawn on the back rank
    ],
)
def test_bad_fen(fen: str) -> None:
    with pytest.raises(PositionError, match="bad FEN"):
        PositionHistory.from_fen(fen)


def test_illegal_move() -> None:
    with pytest.raises(PositionError, match=r"illegal move 'e2e5' in position rnbqkbnr/"):
        PositionHistory.from_fen(None, ["e2e5"])
    with pytest.raises(PositionError, match="illegal move 'xx'"):
        PositionHistory.from_fen(None, ["xx"])


def test_uci_move_conventions() -> None:
    # 4-character pawn move to the last rank = knight promotion; e1h1 and e1g1 both castle.
    h = PositionHistory.from_fen("1n5k/P7/8/8/8/8/8/K7 w - - 0 1", ["a7a8"])
    assert h.board.move_stack[-1].promotion == chess.KNIGHT
    for text in ("e1g1", "e1h1"):
        h = PositionHistory.from_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1", [text])
        assert h.board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)


# --- rule 50 ---------------------------------------------------------------------------------------
def test_rule50_anchors() -> None:
    h = PositionHistory.from_fen(None, ["g1f3"])
    e = h.encode(1, "no")
    assert masks(e)[108] == ALL and e.values[109] == 1.0 and masks(e)[109] == ALL
    e3 = h.encode(3, "no")
    assert masks(e3)[108] == 0 and e3.values[109] == 1.0
    h.push(chess.Move.from_uci("g8f6"))
    e = h.encode(1, "no")
    assert masks(e)[108] == 0 and e.values[109] == 2.0


@pytest.mark.parametrize("fmt,value", [(1, 37.0), (2, 37.0), (3, 37.0), (4, 0.37), (5, 0.37), (132, 0.37)])
def test_rule50_scaling(fmt: int, value: float) -> None:
    e = PositionHistory.from_fen("8/8/8/8/3K4/8/8/7k w - - 37 80").encode(fmt)
    assert e.values[109] == np.float32(value)


def test_armageddon_plane() -> None:
    white = PositionHistory.from_fen()
    black = PositionHistory.from_fen(None, ["e2e4"])
    for fmt in (132, 133):
        assert white.encode(fmt).masks[110] == 0
        assert int(black.encode(fmt).masks[110]) == ALL
    for fmt in (1, 2, 3, 4, 5):
        assert black.encode(fmt).masks[110] == 0
    assert int(black.encode(2).masks[108]) == ALL  # side-to-move plane, non-canonical only
    assert black.encode(4).masks[108] == 0


# --- history: short games, fill modes, frames --------------------------------------------------------
def test_history_frames_alternate_correctly() -> None:
    h = PositionHistory.from_fen(None, ["e2e4", "e7e5", "g1f3"])  # Black to move
    e = h.encode(1)
    assert written_steps(e) == 4
    # Step 0: Black to move, our (black) pawns mirrored: e5 -> e4 in the frame.
    assert step(e, 0)[0] == (0xFF00 ^ (1 << 12)) | (1 << 28)
    # Step 3 = start position seen from Black: ours = black pieces mirrored = White's start layout.
    assert step(e, 3)[:6] == START_PIECES
    assert step(e, 3)[6] == 0x00FF000000000000


def test_fen_only_copies_fen_position() -> None:
    fen = "8/8/8/4k3/8/8/8/4K2N w - - 9 55"
    h = PositionHistory.from_fen(fen, ["e1e2"])
    e = h.encode(1, "fen_only")
    assert written_steps(e) == 8
    assert all(step(e, i) == step(e, 1) for i in range(2, 8))
    assert written_steps(h.encode(1, "no")) == 2
    # Canonical: the FEN position has rule50 9 > 0 and no ep marker, so it is copied too.
    assert written_steps(h.encode(3, "fen_only")) == 8


def test_fen_only_rule50_zero_stops_canonical() -> None:
    h = PositionHistory.from_fen("8/8/8/4k3/8/8/8/4K2N w - - 0 55", ["e1e2"])
    assert written_steps(h.encode(3, "fen_only")) == 2
    assert written_steps(h.encode(1, "fen_only")) == 8


def test_canonical_stops_at_castling_change() -> None:
    h = PositionHistory.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 3 20", ["a1b1", "a8b8", "b1a1"])
    e = h.encode(3, "always")
    assert written_steps(e) == 2  # a8b8 kept the rights of the current position; a1b1 did not
    assert written_steps(h.encode(1, "always")) == 8


def test_invalid_arguments() -> None:
    h = PositionHistory.from_fen()
    with pytest.raises(ValueError, match="input format 7"):
        h.encode(7)
    with pytest.raises(ValueError, match="history fill"):
        h.encode(1, "sometimes")


# --- repetitions (lc0 PositionHistory::Append) -------------------------------------------------------
SHUFFLE = ["g1f3", "g8f6", "f3g1", "f6g8"]


def test_repetition_counts() -> None:
    h = PositionHistory.from_fen()
    counts = []
    for move in SHUFFLE * 3:
        h.push(chess.Move.from_uci(move))
        counts.append(h.repetitions())
    assert counts == [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]
    h.pop()
    assert h.repetitions() == 2 and len(h) == 12


def test_repetition_plane_written() -> None:
    h = PositionHistory.from_fen(None, SHUFFLE)
    e = h.encode(1)
    assert step(e, 0)[12] == ALL  # current = start position again
    assert step(e, 4)[12] == 0  # the start itself: count 0
    assert all(step(e, i)[12] == 0 for i in (1, 2, 3))


def test_repetition_rule50_stop_compares_first() -> None:
    # The position right after e2e4 (rule50 0) is repeated 4 plies later: it is compared before the
    # rule50 < 2 stop, so it counts.
    h = PositionHistory.from_fen(None, ["e2e4", "g8f6", "g1f3", "f6g8", "f3g1"])
    assert h.repetitions() == 1
    # ...but nothing before a rule50 < 2 position is searched: e2e4 e7e5 breaks the chain.
    h = PositionHistory.from_fen("4k3/8/8/8/8/8/4P3/4K3 w - - 6 40", ["e1d1", "e8d8", "d1e1", "d8e8"])
    assert h.repetitions() == 1
    h = PositionHistory.from_fen("4k3/8/8/8/8/8/4P3/4K3 w - - 0 40", ["e1d1", "e8d8", "d1e1", "d8e8"])
    assert h.repetitions() == 1  # p[0] (rule50 0) is compared first
    h = PositionHistory.from_fen("4k3/8/8/8/8/8/4P3/4K3 w - - 0 40", ["e2e3", "e8d8", "e1d1", "d8e8", "d1e1"])
    assert h.repetitions() == 1  # the position right after e2e3 (rule50 0) repeats
    h.push(chess.Move.from_uci("e8d8"))
    assert h.repetitions() == 1 and h.records[-1].rule50 == 5
    assert [r.repetitions for r in h.records] == [0, 0, 0, 0, 0, 1, 1]


def test_repetition_needs_same_castling_and_ep() -> None:
    h = PositionHistory.from_fen(None, ["e2e4", "e7e5", "e1e2", "e8e7", "e2e1", "e7e8", "e1e2", "e8e7"])
    assert h.repetitions() == 1  # after e1e2 e8e7 with no castling both times
    h = PositionHistory.from_fen(None, ["e2e4", "e7e5", "e1e2", "e8e7", "e2e1", "e7e8"])
    assert h.repetitions() == 0  # castling rights differ from the earlier position


def test_key() -> None:
    a = PositionHistory.from_fen(None, SHUFFLE)
    b = PositionHistory.from_fen()
    assert a.board.fen().split()[:4] == b.board.fen().split()[:4]
    assert a.key() != b.key()  # repetition count differs
    c = PositionHistory.from_fen(None, SHUFFLE[:2])
    d = PositionHistory.from_fen("rnbqkb1r/pppppppp/5n2/8/8/5N2/PPPPPPPP/RNBQKB1R w KQkq - 7 30")
    assert c.key() == d.key()  # rule 50 is not part of the key
    e = PositionHistory.from_fen(None, ["e2e4"])  # python-chess ep square, but no lc0 marker
    f = PositionHistory.from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    assert e.key() == f.key()


# --- V2 (formats 5, 133) ---------------------------------------------------------------------------
def test_v2_only_repeated_positions() -> None:
    h = PositionHistory.from_fen(None, ["e2e4", "e7e5", *SHUFFLE, *SHUFFLE])
    e = h.encode(5)
    # Current (rep 2), then repeated positions only: plies 5, 4, 3, 2, 1 back are repeats (1 each)...
    reps = [r.repetitions for r in h.records]
    expected = [r for r in reversed(h.records[1:-1]) if r.repetitions > 0]
    assert written_steps(e) == 1 + len(expected)
    assert written_steps(e) == 5
    assert all(step(e, i)[12] == ALL for i in range(written_steps(e)))
    assert reps[-1] == 2
    # Step 1 is the position one ply back (a repeat), in the current frame.
    assert step(e, 1) == step(h.encode(3, "no"), 1)


def test_v2_non_termination_case_returns() -> None:
    h = PositionHistory.from_fen("8/8/4k3/8/8/3K4/8/8 w - - 97 120")
    assert lc0_v2_loops_forever(h.records)
    for fmt in (5, 133):
        e = h.encode(fmt)
        assert written_steps(e) == 1
        assert e.values[109] == np.float32(0.97)
    h.push(chess.Move.from_uci("d3d4"))
    assert written_steps(h.encode(5)) == 1


def test_v2_terminates_like_lc0_when_start_has_rule50_zero() -> None:
    h = PositionHistory.from_fen("8/8/4k3/8/8/3K4/8/8 w - - 0 120", ["d3d4", "e6f6"])
    assert not lc0_v2_loops_forever(h.records)
    assert written_steps(h.encode(5)) == 1


# --- batches and speed -----------------------------------------------------------------------------
def test_encode_batch() -> None:
    a = PositionHistory.from_fen().encode(3)
    b = PositionHistory.from_fen(None, ["e2e4"]).encode(3)
    batch = encode_batch([a, b])
    assert isinstance(batch, PlanesBatch) and len(batch) == 2
    assert (batch.masks[1] == b.masks).all() and (batch.values[0] == a.values).all()
    dense = a.dense()
    assert dense.shape == (112, 8, 8) and dense[0, 1].sum() == 8  # 8 pawns on rank 2
    assert len(encode_batch([])) == 0


def test_from_board_equals_from_fen() -> None:
    board = chess.Board()
    for m in ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4"]:
        board.push_uci(m)
    a = PositionHistory.from_board(board)
    b = PositionHistory.from_fen(None, [m.uci() for m in board.move_stack])
    for fmt in FORMATS:
        assert masks(a.encode(fmt)) == masks(b.encode(fmt))
    assert len(a) == 7 and len(board.move_stack) == 6  # the board is not changed


def test_repr_reads_as_constructor() -> None:
    h = PositionHistory.from_fen(None, ["e2e4", "e7e5"])
    assert repr(h) == "PositionHistory.from_fen(None, ['e2e4', 'e7e5'])"
    fen = "8/8/4k3/8/8/3K4/8/8 w - - 97 120"
    assert repr(PositionHistory.from_fen(fen)) == f"PositionHistory.from_fen({fen!r}, [])"


def test_copy_is_independent() -> None:
    a = PositionHistory.from_fen(None, ["e2e4"])
    b = a.copy()
    b.push(chess.Move.from_uci("e7e5"))
    assert len(a) == 2 and len(b) == 3


def test_key_is_exact_not_a_hash() -> None:
    # Two positions whose 64-bit bitboards hash alike in CPython (2**63 and 4 collide mod 2**61-1)
    # must still get different keys.
    a = PositionHistory.from_fen("7k/8/8/8/8/8/8/K7 w - - 0 1")  # black king h8: bit 63
    b = PositionHistory.from_fen("8/8/8/8/8/8/8/K1k5 w - - 0 1")  # black king c1: bit 2
    assert a.key() != b.key()
    assert hash(1 << 63) == hash(4)  # the reason the key is a tuple
