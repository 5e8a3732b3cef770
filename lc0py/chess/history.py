"""The game as lc0 sees it: positions with lc0's ep marker, rule-50 count and repetition count.

python-chess keeps the current board and the move stack; lc0 also needs facts about earlier
positions (their pieces for the history planes, their repetition counts), so every position gets a
small immutable :class:`PositionRecord` taken when it is reached (docs/input-encoding.md §2, §3).

Two details differ from python-chess and matter for the encoding:

* **ep marker**: lc0 marks "en passant possible" only when a pawn of the side to move attacks the
  passed-over square (pins ignored); python-chess sets ``ep_square`` after every double push. In
  the game's starting FEN, an ep square named by the FEN is always a marker.
* **repetitions**: counted as lc0's ``PositionHistory::Append`` (§3), including its stop rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess

from lc0py.chess.encoding import EncodedPosition, PositionRecord, encode_history
from lc0py.errors import PositionError


def _pieces(board: chess.Board) -> tuple[int, ...]:
    """The 12 piece masks, absolute squares: white P N B R Q K, then black P N B R Q K."""
    b, w = board.occupied_co  # indexed by colour: [BLACK, WHITE]
    p, n, bi, r, q, k = board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings
    return (p & w, n & w, bi & w, r & w, q & w, k & w, p & b, n & b, bi & b, r & b, q & b, k & b)


def _lc0_ep_after_move(board: chess.Board, ep: int) -> int:
    """lc0's marker after a double push over ``ep``: ``ep`` if a pawn of the side now to move
    attacks it (pins ignored), else -1. python-chess's ``ep_square`` is not used: it is set after
    every double push."""
    attackers = chess.BB_PAWN_ATTACKS[not board.turn][ep] & board.pawns & board.occupied_co[board.turn]
    return ep if attackers else -1


def _repetitions(key: tuple[object, ...], rule50: int, previous: list[PositionRecord]) -> int:
    """lc0's repetition count (PositionHistory::ComputeLastMoveRepetitions): look at the positions
    with the same side to move 4, 6, 8, ... plies back; compare first, then stop at one with
    rule50 < 2. 0 while rule50 < 4 (no earlier position can be identical)."""
    if rule50 < 4:
        return 0
    for idx in range(len(previous) - 4, -1, -2):
        old = previous[idx]
        if old.key == key:
            return 1 + old.repetitions
        if old.rule50 < 2:
            return 0
    return 0


def _record(board: chess.Board, ep: int, previous: list[PositionRecord]) -> PositionRecord:
    pieces = _pieces(board)
    castling = board.castling_rights
    rule50 = board.halfmove_clock
    turn = board.turn
    key = (pieces, castling, ep, turn)
    return PositionRecord(pieces, castling, ep, turn, rule50, _repetitions(key, rule50, previous), key)


def push_record(board: chess.Board, move: chess.Move, previous: list[PositionRecord]) -> PositionRecord:
    """Play ``move`` (assumed legal) on ``board`` and return lc0's record of the new position;
    ``previous``: the game's records up to ``board`` before the move (for repetitions)."""
    frm, to = move.from_square, move.to_square
    double_push = (to - frm == 16 or frm - to == 16) and (board.pawns >> frm) & 1
    board.push(move)
    ep = _lc0_ep_after_move(board, (frm + to) >> 1) if double_push else -1
    return _record(board, ep, previous)


# Standard castling, king's target square -> the rook's move (from, to).
_CASTLING_ROOK = {6: (7, 5), 2: (0, 3), 62: (63, 61), 58: (56, 59)}
_BB_RANK_1 = 0xFF
_BB_RANK_8 = 0xFF << 56


def record_after(prev: PositionRecord, move: int, previous: list[PositionRecord]) -> PositionRecord:
    """lc0's record after the legal ``move`` in ``prev``'s position, computed on the bitboards
    (what :func:`push_record` gives, without a python-chess ``Board``). Standard chess only:
    castling as the king's two-square move (``e1g1``); ``move`` packed ``from | to << 6 |
    promotion << 12``; ``previous``: the game's records up to ``prev`` (for repetitions)."""
    frm = move & 63
    to = (move >> 6) & 63
    promo = move >> 12
    p = list(prev.pieces)
    white = prev.turn
    us = 0 if white else 6
    them = 6 - us
    from_bb = 1 << frm
    to_bb = 1 << to
    k = us
    while not p[k] & from_bb:
        k += 1
    p[k] ^= from_bb
    rule50 = prev.rule50 + 1
    castling = prev.castling & ~(from_bb | to_bb)  # a rook moved or was taken
    captured = False
    for j in range(them, them + 6):
        if p[j] & to_bb:
            p[j] ^= to_bb
            captured = True
            rule50 = 0
            break
    ep = -1
    if k == us:  # pawn
        rule50 = 0
        diff = to - frm
        if diff == 16 or diff == -16:
            square = (frm + to) >> 1
            if chess.BB_PAWN_ATTACKS[white][square] & p[them]:  # lc0's marker: a pawn can take
                ep = square
        elif not captured and diff not in (8, -8):  # diagonal onto an empty square: en passant
            p[them] ^= 1 << (to - 8 if white else to + 8)
        if promo:
            k = us + promo - 1
    elif k == us + 5:  # king
        castling &= ~(_BB_RANK_1 if white else _BB_RANK_8)
        if to - frm == 2 or frm - to == 2:
            rook_from, rook_to = _CASTLING_ROOK[to]
            p[us + 3] ^= (1 << rook_from) | (1 << rook_to)
    p[k] |= to_bb
    pieces = tuple(p)
    turn = not white
    key = (pieces, castling, ep, turn)
    return PositionRecord(pieces, castling, ep, turn, rule50, _repetitions(key, rule50, previous), key)


def load_board(board: chess.Board, record: PositionRecord) -> None:
    """Set ``board`` (a scratch board with the game's variant) to ``record``'s position, its move
    stack emptied: what move generation, ``push`` and the game-over checks read. python-chess's
    ``ep_square`` becomes lc0's marker: they differ only when no pawn can capture en passant,
    where both give the same legal moves. The full-move number is not kept (lc0 ignores it)."""
    p = record.pieces
    white = p[0] | p[1] | p[2] | p[3] | p[4] | p[5]
    black = p[6] | p[7] | p[8] | p[9] | p[10] | p[11]
    board.pawns = p[0] | p[6]
    board.knights = p[1] | p[7]
    board.bishops = p[2] | p[8]
    board.rooks = p[3] | p[9]
    board.queens = p[4] | p[10]
    board.kings = p[5] | p[11]
    occ_co = board.occupied_co
    occ_co[chess.WHITE] = white
    occ_co[chess.BLACK] = black
    board.occupied = white | black
    board.promoted = 0
    board.turn = record.turn
    board.castling_rights = record.castling
    board.ep_square = record.ep if record.ep >= 0 else None
    board.halfmove_clock = record.rule50
    board.move_stack.clear()
    board._stack.clear()


#: Positions the network input reads: the current one and 7 before it (docs/input-encoding.md §3).
HISTORY_WINDOW = 8


def recent_start(board: chess.Board) -> int:
    """The first ply of ``board``'s game that its network input can depend on (0: the root).

    The encoding reads the last ``HISTORY_WINDOW`` positions and their repetition counts, and
    lc0's repetition walk (``_repetitions``) stops at the first position with rule50 < 2, so
    nothing before the last zeroing move at or before the 8th-last position is ever read. The
    window starts one ply before that move, so that the move is played and its position gets
    lc0's ep marker (a root's would come from its FEN).
    """
    plies = len(board.move_stack)
    if plies <= HISTORY_WINDOW:
        return 0
    oldest = plies - (HISTORY_WINDOW - 1)  # ply of the 8th-last position
    clock = position_before(board, oldest).halfmove_clock
    return max(0, oldest - clock - 1)


def position_before(board: chess.Board, ply: int) -> chess.Board:
    """A new board (no move stack) at ``board``'s game position before its move ``ply`` (0: the
    root), as ``board.root()`` makes the root: from python-chess's saved state of that ply, else
    (a python-chess without it) through ``copy(stack=...)``, which copies every later move."""
    states = getattr(board, "_stack", None)
    if isinstance(states, list) and len(states) == len(board.move_stack) and hasattr(states[ply], "restore"):
        out = type(board)(None, chess960=board.chess960)
        states[ply].restore(out)
        return out
    return board.copy(stack=len(board.move_stack) - ply).root()


class PositionHistory:
    """A game from a start position (standard or FEN) plus moves, with lc0's per-position facts.

    ``board`` is the current python-chess board (its ``move_stack`` holds the moves). Use
    :meth:`push`/:meth:`pop` rather than mutating ``board`` directly.
    """

    __slots__ = ("board", "_records")

    def __init__(self, board: chess.Board, records: list[PositionRecord]) -> None:
        self.board = board
        self._records = records

    # --- construction -------------------------------------------------------------------------
    @classmethod
    def from_fen(
        cls, fen: str | None = None, moves: Sequence[str] = (), *, chess960: bool | None = None
    ) -> PositionHistory:
        """Start from ``fen`` (default: standard start position) and play ``moves`` (UCI strings).

        Moves follow lc0's UCI input rules: king-takes-rook (``e1h1``) always castles, ``e1g1``
        castles when the king is on e1, a 4-character pawn move onto the last rank is a knight
        promotion. Castling rights may be given as ``KQkq`` (X-FEN: the outermost rooks) or as
        rook files (Shredder-FEN ``HFhf``): lc0 accepts both in every FEN, whatever UCI_Chess960
        says. ``chess960``: True reads the FEN as Chess960; False as standard chess; None (the
        default) as standard chess unless its castling rights need Chess960 (a castling rook or
        king off its standard square). Raises :class:`PositionError` on a bad FEN or an illegal
        move.
        """
        if fen is None:
            board = chess.Board(chess960=bool(chess960))
        else:
            try:
                board = chess.Board(fen, chess960=bool(chess960))
                if chess960 is None and board.status() & chess.STATUS_BAD_CASTLING_RIGHTS:
                    board = chess.Board(fen, chess960=True)
            except ValueError as exc:
                raise PositionError(f"bad FEN {fen!r}: {exc}") from None
        history = cls._from_root(board, fen or board.fen())
        for text in moves:
            history.push(history._parse_move(text))
        return history

    @classmethod
    def from_board(cls, board: chess.Board, *, recent_only: bool = False) -> PositionHistory:
        """The game of ``board``: its ``root()`` and ``move_stack`` replayed (``board`` is not changed).

        ``recent_only``: replay only from :func:`recent_start`, the moves the network input can
        depend on, so that a position deep in a game costs a few dozen pushes rather than the whole
        game (``Net.evaluate`` of boards). The encoding is identical; ``len()`` and
        ``board.root()`` are the window's. The game's own root is still checked as ``from_board``
        checks it.
        """
        root = board.root()
        start = recent_start(board) if recent_only else 0
        if start == 0:
            history = cls._from_root(root, root.fen())
        else:
            _validate_root(root, root.fen())
            window_root = position_before(board, start)
            ep = window_root.ep_square if window_root.ep_square is not None else -1
            history = cls(window_root, [_record(window_root, ep, [])])
        for move in board.move_stack[start:]:
            history.push(move)
        return history

    @classmethod
    def _from_root(cls, board: chess.Board, fen: str) -> PositionHistory:
        _validate_root(board, fen)
        board = board.copy(stack=False)
        ep = board.ep_square if board.ep_square is not None else -1
        return cls(board, [_record(board, ep, [])])

    def _parse_move(self, text: str) -> chess.Move:
        board = self.board
        try:
            move = chess.Move.from_uci(text)
        except ValueError:
            raise PositionError(f"illegal move {text!r} in position {board.fen()}") from None
        if (
            move.promotion is None
            and board.pawns & board.occupied_co[board.turn] & (1 << move.from_square)
            and chess.square_rank(move.to_square) in (0, 7)
        ):
            move = chess.Move(move.from_square, move.to_square, chess.KNIGHT)
        if move and board.kings & (1 << move.from_square):
            # Castling in either notation, as python-chess stores it on this board (e1g1 on a
            # standard board, king-takes-rook on a Chess960 one), so tree reuse finds the child.
            move = board._to_chess960(move)
            move = board._from_chess960(board.chess960, move.from_square, move.to_square)
        if not board.is_legal(move):
            raise PositionError(f"illegal move {text!r} in position {board.fen()}")
        return move

    def __repr__(self) -> str:
        root = self.board.root()
        fen = None if root == chess.Board() and not root.chess960 else root.fen()
        moves = [m.uci() for m in self.board.move_stack]
        extra = ", chess960=True" if root.chess960 else ""
        return f"PositionHistory.from_fen({fen!r}, {moves!r}{extra})"

    def copy(self) -> PositionHistory:
        """An independent copy (records are immutable and shared)."""
        return PositionHistory(self.board.copy(), list(self._records))

    # --- game ---------------------------------------------------------------------------------
    def push(self, move: chess.Move) -> None:
        """Play ``move`` (assumed legal) and record lc0's facts about the new position."""
        self._records.append(push_record(self.board, move, self._records))

    def pop(self) -> None:
        """Take back the last move."""
        if len(self._records) == 1:
            raise IndexError("pop from a history without moves")
        self.board.pop()
        self._records.pop()

    def __len__(self) -> int:
        """Number of positions (moves + 1)."""
        return len(self._records)

    def repetitions(self) -> int:
        """lc0's repetition count of the current position (2 = third occurrence, a draw)."""
        return self._records[-1].repetitions

    @property
    def rule50(self) -> int:
        """Plies since the last capture or pawn move (as in the FEN for the start position)."""
        return self._records[-1].rule50

    @property
    def records(self) -> Sequence[PositionRecord]:
        """Per-position facts, oldest first (read-only view for encoders and tests)."""
        return tuple(self._records)

    def encode(self, input_format: int, history_fill: str = "fen_only") -> EncodedPosition:
        """The 112 input planes of the current position (docs/input-encoding.md §2–§4)."""
        return encode_history(self._records, int(input_format), history_fill)

    def key(self) -> tuple[object, ...]:
        """NN-cache key: board (incl. castling), lc0 ep marker, side to move, repetitions; not rule-50.

        The exact facts as a tuple, not a hash of them: Python hashes ints modulo 2**61 - 1, so a
        hash of 64-bit bitboards can collide (``hash(1 << 63) == hash(4)``) and a cache keyed by
        it would return another position's evaluation.
        """
        last = self._records[-1]
        return (last.key, last.repetitions)


def check_side_not_to_move(fen: str, chess960: bool = False) -> None:
    """Refuse (``PositionError``) a FEN whose side not to move is in check: its king could be
    captured, and a search from it plays that capture. lc0's ``SetFromFen`` accepts such FENs, so
    ``from_fen`` does too (tests use them); user-facing inputs (UCI ``position fen``, ``eval``)
    call this first. An unparsable FEN is left to ``from_fen``'s own message."""
    try:
        board = chess.Board(fen, chess960=chess960)
    except ValueError:
        return
    if board.was_into_check():
        raise PositionError(f"bad FEN {fen!r}: the side not to move "
                            f"({'white' if board.turn == chess.BLACK else 'black'}) is in check")


def root_problem(board: chess.Board) -> bool:
    """Whether ``from_board`` refuses ``board`` as a game's root (``_validate_root``)."""
    try:
        _validate_root(board, "")
    except PositionError:
        return True
    return False


def _validate_root(board: chess.Board, fen: str) -> None:
    """Refuse what lc0's ``SetFromFen`` refuses (and positions without exactly one king a side)."""
    status = board.status()
    bad = (
        chess.STATUS_NO_WHITE_KING
        | chess.STATUS_NO_BLACK_KING
        | chess.STATUS_TOO_MANY_KINGS
        | chess.STATUS_PAWNS_ON_BACKRANK
        | chess.STATUS_BAD_CASTLING_RIGHTS
    )
    if status & bad:
        what = {
            chess.STATUS_NO_WHITE_KING: "no white king",
            chess.STATUS_NO_BLACK_KING: "no black king",
            chess.STATUS_TOO_MANY_KINGS: "too many kings",
            chess.STATUS_PAWNS_ON_BACKRANK: "pawn on back rank",
            chess.STATUS_BAD_CASTLING_RIGHTS: "castling right without its king or rook",
        }
        reasons = ", ".join(text for flag, text in what.items() if status & flag)
        raise PositionError(f"bad FEN {fen!r}: {reasons}")
    ep = board.ep_square
    if ep is not None:
        # lc0: right rank, empty square, and the pawn that double-pushed past it on the next square.
        pushed_sq = ep - 8 if board.turn == chess.WHITE else ep + 8
        ok_rank = chess.square_rank(ep) == (5 if board.turn == chess.WHITE else 2)
        pusher = board.pawns & board.occupied_co[not board.turn]
        if (
            not ok_rank
            or board.occupied & (1 << ep)
            or not (0 <= pushed_sq < 64 and pusher & (1 << pushed_sq))
        ):
            raise PositionError(f"bad FEN {fen!r}: bad en passant square {chess.square_name(ep)}")
