"""The compiled evaluation path of :class:`lc0py.api.net.Net` and ``lc0py eval``: FEN text to
planes to policies with no python-chess object per position, with python-chess's numbers.

A position given as text (a FEN, ``startpos``, or ``lc0py eval``'s ``FEN | uci ...`` lines) is
parsed, replayed and encoded by ``lc0py.chess.core`` (numba), and its policy is made by
``legal_logits``/``softmax_sorted`` there: the legal moves in python-chess's order, numpy's
``exp`` and numpy's (pairwise) sum, so every probability, its order and ties are those of
:func:`lc0py.api.evaluation.legal_policy` to the last bit, and ``Evaluation.fen`` is
python-chess's ``Board.fen()``.

python-chess is still used where it decides: a ``chess.Board`` or ``PositionHistory`` handed in
by the caller, and any text the compiled parser refuses or might read differently (``text_record``
sends it there): its own error messages, and what it accepts that the compiled reader does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import chess
import numpy as np

from lc0py.api.evaluation import Evaluation, summarise
from lc0py.backends.base import Backend
from lc0py.chess import PositionHistory, encode_batch
from lc0py.chess.core import board as B
from lc0py.chess.core import records as compiled
from lc0py.chess.core.record_batch import encode_records
from lc0py.chess.core.uci import UCI_NAMES
from lc0py.chess.planes import NUM_PLANES, PlanesBatch
from lc0py.errors import Lc0pyError

# What python-chess's ``Board(fen)`` accepts and the compiled parser reads the same way: ASCII,
# 1-6 fields, no two digits in a row in the placement, python-chess's castling pattern, plain
# numbers. Anything else goes to python-chess (its message, its reading).
_PLACEMENT = re.compile(r"[pnbrqkPNBRQK1-8/]+\Z")
_CASTLING = re.compile(r"(?:-|[KQABCDEFGH]{0,4}[kqabcdefgh]{0,4})\Z")
_SQUARE = re.compile(r"(?:-|[a-h][1-8])\Z")
_MOVE = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?\Z")


def text_record(fen: str, moves: Sequence[str] = ()) -> bytes | None:
    """``fen`` (and UCI ``moves``) as a compiled record, or ``None`` when python-chess must read
    it (a shape the compiled parser could read differently from python-chess)."""
    if not fen.isascii() or len(moves) >= compiled.MAX_GAME_PLIES - 1:
        return None
    fields = fen.split()
    if not 1 <= len(fields) <= 6 or not _PLACEMENT.match(fields[0]) or re.search(r"\d\d", fields[0]):
        return None
    if len(fields) >= 2 and fields[1] not in ("w", "b"):
        return None
    if len(fields) >= 3 and not _CASTLING.match(fields[2]):
        return None
    if len(fields) >= 4 and not _SQUARE.match(fields[3]):
        return None
    if any(not f.isdigit() or len(f) > 9 for f in fields[4:]):
        return None
    if any(not m.isascii() or not _MOVE.match(m) for m in moves):
        return None
    text = " ".join(fields)
    return (text + " | " + " ".join(moves)).encode() if moves else text.encode()


_MOVES: dict[int, chess.Move] = {}


def _move(code: int) -> chess.Move:
    """The python-chess move of a display code (``from | to << 6 | promo << 12``), shared."""
    move = _MOVES.get(code)
    if move is None:
        promo = code >> 12
        move = _MOVES[code] = chess.Move(code & 63, (code >> 6) & 63, promo + 1 if promo else None)
    return move


@dataclass
class Item:
    """One position of a batch: a compiled ``record`` or a python-chess ``history``. A record the
    compiled parser refuses is handed to ``fallback`` (python-chess: its error, or its reading)."""

    record: bytes | None = None
    history: PositionHistory | None = None
    fallback: Callable[[], PositionHistory] | None = None


class BatchResult:
    """A batch's outputs, per item: ``uci_policy(i)`` (UCI text, probability; most likely first),
    ``wdl(i)``, ``moves_left(i)`` and the full :class:`Evaluation` (``evaluation(i)``)."""

    def __init__(self, items: Sequence[Item], backend: Backend, temperature: float,
                 input_format: int, history_fill: str = "fen_only") -> None:
        n = len(items)
        self.items = items
        self.temperature = temperature
        masks = np.empty((n, NUM_PLANES), np.uint64)
        values = np.empty((n, NUM_PLANES), np.float32)
        transforms = np.zeros(n, np.int64)
        self._pos = np.zeros((n, B.POS_WORDS), np.uint64)
        self._python: dict[int, PositionHistory] = {
            i: item.history for i, item in enumerate(items) if item.record is None and item.history
        }
        compiled_rows = [i for i, item in enumerate(items) if item.record is not None]
        if compiled_rows:
            records = [items[i].record or b"" for i in compiled_rows]
            lengths = np.array([len(r) for r in records], np.int64)
            ends = np.cumsum(lengths + 1) - 1
            enc = encode_records(b"\n".join(records), ends - lengths, ends, all_plies=False,
                                 capacity=len(records), input_format=input_format,
                                 history_fill=history_fill)
            ok = enc.status == 0
            for k in np.flatnonzero(~ok).tolist():  # python-chess decides: its error, or its reading
                fallback = items[compiled_rows[k]].fallback
                if fallback is None:
                    raise Lc0pyError(f"internal error: position {records[k]!r} was not checked")
                self._python[compiled_rows[k]] = fallback()
            compiled_rows = [i for i, good in zip(compiled_rows, ok.tolist(), strict=True) if good]
            rows = np.asarray(compiled_rows, np.int64)
            masks[rows] = enc.planes.masks
            values[rows] = enc.planes.values
            transforms[rows] = enc.transform
            self._pos[rows] = enc.pos
        encoded = {i: h.encode(input_format, history_fill) for i, h in self._python.items()}
        if encoded:
            rows = np.asarray(list(encoded))
            batch = encode_batch(list(encoded.values()))
            masks[rows], values[rows] = batch.masks, batch.values
            transforms[rows] = [e.transform for e in encoded.values()]
        out = backend.evaluate(PlanesBatch(masks, values))
        for what, array in (("policy", out.policy), ("WDL", out.wdl)):
            finite = np.isfinite(np.asarray(array, dtype=np.float64)).reshape(n, -1).all(axis=1)
            if not finite.all():  # NaN never passes as a result
                bad = int(np.argmin(finite))
                raise Lc0pyError(f"{self._fen(bad)}: backend {getattr(backend, 'name', '?')} returned a "
                                 f"non-finite {what} (NaN or infinity) for this position")
        self._wdl = np.asarray(out.wdl)
        self._mlh = np.asarray(out.moves_left) if backend.info.has_moves_left else None
        self._evaluations = {
            i: summarise(h.board, int(transforms[i]), out.policy[i], out.wdl[i],
                         float(out.moves_left[i]) if self._mlh is not None else None, temperature)
            for i, h in self._python.items()
        }
        self._codes = np.zeros((n, B.MAX_MOVES), np.int32)
        self._probs = np.zeros((n, B.MAX_MOVES), np.float64)
        self._count = np.zeros(n, np.int64)
        if compiled_rows:
            rows = np.asarray(compiled_rows)
            k = len(rows)
            codes = np.zeros((k, B.MAX_MOVES), np.int32)
            z = np.zeros((k, B.MAX_MOVES), np.float64)
            count = np.zeros(k, np.int64)
            compiled.legal_logits(self._pos[rows], transforms[rows], np.asarray(out.policy)[rows],
                                  float(temperature), codes, z, count)
            # numpy's exp, as legal_policy's (elementwise: the same bits in any array)
            e = np.exp(z)
            sorted_codes = np.zeros_like(codes)
            probs = np.zeros_like(z)
            compiled.softmax_sorted(e, count, codes, sorted_codes, probs)
            self._codes[rows], self._probs[rows], self._count[rows] = sorted_codes, probs, count

    def __len__(self) -> int:
        return len(self.items)

    def _fen(self, i: int) -> str:
        history = self._python.get(i)
        if history is not None:
            return str(history.board.fen())
        out = np.zeros(compiled.FEN_BYTES, np.uint8)
        length = compiled.write_fen(self._pos[i], out)
        return out[:length].tobytes().decode()

    def uci_policy(self, i: int) -> list[tuple[str, float]]:
        """``[(uci, probability), ...]``, most likely first (UCI as python-chess writes it)."""
        if i in self._evaluations:
            return [(m.uci(), p) for m, p in self._evaluations[i].policy.items()]
        k = int(self._count[i])
        return list(zip([UCI_NAMES[c] for c in self._codes[i, :k].tolist()], self._probs[i, :k].tolist(),
                        strict=True))

    def wdl(self, i: int) -> tuple[float, float, float]:
        w, d, l = (float(x) for x in self._wdl[i])
        return w, d, l

    def moves_left(self, i: int) -> float | None:
        return None if self._mlh is None else float(self._mlh[i])

    def evaluation(self, i: int) -> Evaluation:
        """The :class:`Evaluation` of item ``i`` (python-chess moves as keys)."""
        if i in self._evaluations:
            return self._evaluations[i]
        k = int(self._count[i])
        policy = {_move(c): p for c, p in zip(self._codes[i, :k].tolist(), self._probs[i, :k].tolist(),
                                              strict=True)}
        return Evaluation(self._fen(i), policy, self.wdl(i), self.moves_left(i), self.temperature)


def check_records(records: Sequence[bytes], input_format: int = 1) -> np.ndarray:
    """The compiled parser's status of every record (0: it reads it; else a ``records.ERRORS``
    code), encoding them a few thousand at a time (memory stays bounded)."""
    status = np.zeros(len(records), np.int64)
    step = 4096
    for start in range(0, len(records), step):
        part = records[start:start + step]
        buf = b"\n".join(part)
        ends = np.cumsum([len(r) + 1 for r in part], dtype=np.int64) - 1
        starts = ends - np.array([len(r) for r in part], np.int64)
        enc = encode_records(buf, starts, ends, all_plies=False, capacity=len(part),
                             input_format=input_format)
        status[start:start + len(part)] = enc.status
    return status
