"""The compiled evaluation path (``lc0py.api.records``) gives python-chess's path's numbers bit
for bit: ``Net.evaluate_many`` on FEN strings against the python-chess histories of the same
positions (policy values and their order, WDL, moves-left, FEN), on fresh random positions with
castling, en passant, Chess960 and move histories; text python-chess reads differently or refuses
goes to python-chess."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

import lc0py
from lc0py.api.evaluation import summarise
from lc0py.api.records import BatchResult, Item, text_record
from lc0py.chess import PositionHistory, encode_batch
from lc0py.chess.testing import special_move_games as random_games
from lc0py.errors import PositionError

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


@pytest.fixture(scope="module")
def net() -> lc0py.Net:
    return lc0py.load(TINY, backend="numpy")


def reference(net: lc0py.Net, histories: list[PositionHistory]) -> list[lc0py.Evaluation]:
    """The python-chess path as it was: histories encoded in Python, ``summarise`` per board."""
    fmt = net.backend.info.input_format
    encoded = [h.encode(fmt) for h in histories]
    out = net.backend.evaluate(encode_batch(encoded))
    return [
        summarise(h.board, e.transform, out.policy[i], out.wdl[i],
                  float(out.moves_left[i]) if net.backend.info.has_moves_left else None)
        for i, (h, e) in enumerate(zip(histories, encoded, strict=True))
    ]


def assert_same(new: lc0py.Evaluation, old: lc0py.Evaluation) -> None:
    assert new.fen == old.fen
    assert list(new.policy.items()) == list(old.policy.items())  # same order, same bits
    assert new.wdl == old.wdl and new.moves_left == old.moves_left


@pytest.mark.parametrize("chess960", [False, True])
def test_fen_strings_equal_python_chess(net: lc0py.Net, chess960: bool) -> None:
    games = random_games(11 + chess960, 160, chess960)
    boards = []
    for start, moves in games:
        board = chess.Board(start, chess960=chess960)
        for m in moves:
            board.push_uci(m)
        boards.append(board)
    fens = [b.fen() for b in boards]
    assert any(b.has_legal_en_passant() for b in boards)
    assert any(b.has_castling_rights(chess.WHITE) for b in boards)
    new = net.evaluate_many(fens, batch_size=len(fens))  # one batch, as the reference
    old = reference(net, [PositionHistory.from_fen(f) for f in fens])
    for a, b in zip(new, old, strict=True):
        assert_same(a, b)


def test_records_with_history_equal_python_chess(net: lc0py.Net) -> None:
    """``FEN | moves`` records (eval's lines): the history planes and repetitions as python-chess's."""
    games = random_games(5, 80) + random_games(6, 40, chess960=True)
    fmt = net.backend.info.input_format
    records = [text_record(start, moves) for start, moves in games]
    assert all(r is not None for r in records)
    result = BatchResult([Item(record=r) for r in records], net.backend, 1.0, fmt)
    old = reference(net, [PositionHistory.from_fen(start, moves) for start, moves in games])
    for i, ev in enumerate(old):
        assert_same(result.evaluation(i), ev)
        assert result.uci_policy(i) == [(m.uci(), p) for m, p in ev.policy.items()]


def test_ties_keep_python_chess_order(net: lc0py.Net) -> None:
    """Equal logits (a policy of zeros) keep python-chess's move order, in and out of check."""

    class Flat:
        info = net.backend.info
        name = "flat"

        def evaluate(self, batch):  # type: ignore[no-untyped-def]
            out = net.backend.evaluate(batch)
            out.policy[:] = 0.0
            return out

    fens = [b.fen() for b in _some_boards()]
    result = BatchResult([Item(record=text_record(f)) for f in fens], Flat(), 1.0,  # type: ignore[arg-type]
                         net.backend.info.input_format)
    for i, fen in enumerate(fens):
        assert [m for m, _ in result.uci_policy(i)] == [m.uci() for m in chess.Board(fen).legal_moves]


def _some_boards() -> list[chess.Board]:
    boards = []
    games = [(g, False) for g in random_games(21, 60)] + [(g, True) for g in random_games(22, 30, True)]
    for (start, moves), chess960 in games:
        board = chess.Board(start, chess960=chess960)
        for m in moves:
            board.push_uci(m)
        boards.append(board)
    boards.append(chess.Board("4k3/8/8/8/8/8/4q3/4K2R w K - 0 1"))  # in check, castling right
    boards.append(chess.Board("8/8/8/2k5/3pP3/8/8/4K3 b - e3 0 1"))  # en passant
    boards.append(chess.Board("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1"))  # promotions
    assert any(b.is_check() for b in boards)
    return boards


@pytest.mark.parametrize("fen", [
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 extra",  # too many fields
    "rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",  # two digits in a row
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w kqKQ - 0 1",  # castling out of order
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - hmvc 1",  # EPD opcode
])
def test_text_python_chess_refuses_is_refused(net: lc0py.Net, fen: str) -> None:
    assert text_record(fen) is None
    with pytest.raises(PositionError):
        net.evaluate(fen)


def test_compiled_refusal_falls_back_to_python_chess(net: lc0py.Net) -> None:
    """The side not to move in check: the compiled reader refuses it, python-chess (the API's
    rule) evaluates it; a bad FEN gets python-chess's message."""
    fen = "4k3/8/8/8/8/8/4R3/4K3 b - - 0 1"
    fen_in_check = "4k3/8/8/8/8/8/4R3/4K3 w - - 0 1"
    [ev] = net.evaluate_many([fen_in_check])
    assert_same(ev, reference(net, [PositionHistory.from_fen(fen_in_check)])[0])
    assert net.evaluate(fen).fen == fen
    with pytest.raises(PositionError, match="no black king"):
        net.evaluate("8/8/8/8/8/8/8/4K3 w - - 0 1")


def test_mixed_inputs_keep_their_order(net: lc0py.Net) -> None:
    board = chess.Board()
    board.push_san("e4")
    fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
    out = net.evaluate_many([fen, board, "startpos", PositionHistory.from_fen(fen)], batch_size=4)
    assert out[0].fen == out[3].fen == fen and list(out[0].policy) == list(out[3].policy)
    assert np.allclose(list(out[0].policy.values()), list(out[3].policy.values()), rtol=1e-4)  # BLAS rows
    assert out[1].fen == board.fen() and out[2].fen == chess.STARTING_FEN
    assert list(out[1].policy) == list(net.evaluate(board).policy)
    assert np.isclose(sum(out[1].policy.values()), 1.0)


def _long_games(seed: int) -> list[chess.Board]:
    """Every position of a few long random games with knight shuffles (repetitions, long quiet
    stretches: windows that start mid-game), from the start, from FENs with a rule-50 count and
    from a FEN naming an ep square no pawn can take."""
    import random

    rng = random.Random(seed)
    starts = [None, "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8",
              "rnbqkbnr/ppp1pppp/8/3p4/8/8/PPPPPPPP/RNBQKBNR w KQkq d6 0 2"]
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    boards = []
    for fen in starts:
        board = chess.Board() if fen is None else chess.Board(fen)
        for _ in range(90):
            if rng.random() < 0.3 and all(board.is_legal(chess.Move.from_uci(u)) for u in shuffle[:1]):
                for u in shuffle:
                    if board.is_game_over() or not board.is_legal(chess.Move.from_uci(u)):
                        break
                    board.push_uci(u)
                    boards.append(board.copy())
            legal = list(board.legal_moves)
            if not legal or board.is_game_over():
                break
            board.push(rng.choice(legal))
            boards.append(board.copy())
    return boards


@pytest.mark.parametrize("seed", [1, 2])
def test_boards_take_the_compiled_path_with_python_chess_numbers(net: lc0py.Net, seed: int) -> None:
    """A standard-chess board is evaluated from the FEN and moves of its recent window
    (``recent_start``) by the compiled reader: the same numbers as its whole game replayed through
    python-chess, every position of long games with repetitions, castling and en passant."""
    from lc0py.api.net import _item

    boards = _long_games(seed)
    for start, moves in random_games(seed, 20, False):
        board = chess.Board(start)
        for m in moves:
            board.push_uci(m)
        boards.append(board)
    assert max(len(b.move_stack) for b in boards) > 60
    items = [_item(b) for b in boards]
    assert all(item.record is not None for item in items)  # none fell back to python-chess
    # some windows start mid-game: records shorter than their whole games' moves
    pairs = zip(items, boards, strict=True)
    assert any(len(item.record or b"") < 20 + 5 * len(b.move_stack) for item, b in pairs)
    new = net.evaluate_many(boards, batch_size=len(boards))
    old = reference(net, [PositionHistory.from_board(b) for b in boards])
    for a, b in zip(new, old, strict=True):
        assert_same(a, b)
    # every input format's planes (ep markers cut the canonical formats' history), fed to the same
    # backend: different planes give different outputs
    histories = [PositionHistory.from_board(b) for b in boards]
    for fmt in (1, 2, 3, 4, 5, 132, 133):
        result = BatchResult(items, net.backend, 1.0, fmt)
        encoded = [h.encode(fmt) for h in histories]
        out = net.backend.evaluate(encode_batch(encoded))
        for i, (h, e) in enumerate(zip(histories, encoded, strict=True)):
            want = summarise(h.board, e.transform, out.policy[i], out.wdl[i],
                             float(out.moves_left[i]) if net.backend.info.has_moves_left else None)
            assert_same(result.evaluation(i), want)


def test_a_board_with_a_refused_root_goes_to_python_chess(net: lc0py.Net) -> None:
    from lc0py.api.net import _board_record

    board = chess.Board("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNP w Qkq - 0 1")  # pawn on h1
    for uci in ("g2g3", "g7g6") + ("b1c3", "b8c6", "c3b1", "c6b8") * 3:
        board.push_uci(uci)
    assert _board_record(board) is None  # its window alone would read fine
    with pytest.raises(PositionError, match="pawn on back rank"):
        net.evaluate(board)
    short = board.root()  # a short game: the compiled reader sees the root itself and refuses it
    short.push_uci("g2g3")
    with pytest.raises(PositionError, match="pawn on back rank"):
        net.evaluate(short)
