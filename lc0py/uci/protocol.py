"""Parsing UCI commands into plain values (``src/chess/uciloop.cc`` behaviour and messages).

Every malformed command raises ``UciError`` whose text is what lc0 prints after ``error ``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lc0py.errors import Lc0pyError


class UciError(Lc0pyError):
    """A malformed or unsupported command; the loop prints ``error <message>`` and goes on."""


@dataclass
class GoParams:
    """``go`` arguments (times in ms); ``None`` = not given."""

    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    mate: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = field(default_factory=list)


_INT_KEYS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "mate", "nodes", "movetime")
COMMANDS = (
    "uci",
    "isready",
    "setoption",
    "ucinewgame",
    "position",
    "go",
    "stop",
    "ponderhit",
    "quit",
    "wait",
    "xyzzy",
    "fen",
)


def parse_go(tokens: list[str]) -> GoParams:
    """``tokens`` after ``go``."""
    go = GoParams()
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "infinite":
            go.infinite = True
        elif t == "ponder":
            go.ponder = True
        elif t in _INT_KEYS:
            if i + 1 >= len(tokens):
                raise UciError(f"Expected value for {t}")
            try:
                value = int(tokens[i + 1])
            except ValueError:
                raise UciError(f"Bad value for {t}: {tokens[i + 1]}") from None
            setattr(go, t, value)
            i += 1
        elif t == "searchmoves":
            i += 1
            while i < len(tokens) and tokens[i] not in _INT_KEYS and tokens[i] not in ("infinite", "ponder"):
                go.searchmoves.append(tokens[i])
                i += 1
            continue
        else:
            raise UciError(f"Unexpected token: {t}")
        i += 1
    return go


def parse_position(tokens: list[str]) -> tuple[str | None, list[str]]:
    """``tokens`` after ``position`` → (FEN or None for startpos, moves)."""
    if not tokens or tokens[0] not in ("startpos", "fen"):
        raise UciError("Position requires either fen or startpos")
    if "moves" in tokens:
        k = tokens.index("moves")
        head, moves = tokens[:k], tokens[k + 1 :]
    else:
        head, moves = tokens, []
    if head[0] == "startpos":
        if len(head) > 1:
            raise UciError(f"Unexpected token: {head[1]}")
        return None, moves
    fen = " ".join(head[1:])
    if not fen:
        raise UciError("Position requires either fen or startpos")
    return fen, moves


def parse_setoption(tokens: list[str]) -> tuple[str, str]:
    """``tokens`` after ``setoption`` → (name, value); names may contain spaces."""
    if not tokens or tokens[0] != "name":
        raise UciError("setoption requires name")
    if "value" in tokens:
        k = tokens.index("value")
        name, value = " ".join(tokens[1:k]), " ".join(tokens[k + 1 :])
    else:
        name, value = " ".join(tokens[1:]), ""
    if not name:
        raise UciError("setoption requires name")
    return name, value


INT_MAX = 2**31 - 1  # lc0 reads the FEN's counters into an ``int``


def check_fen_counters(fen: str) -> None:
    """Refuse what lc0 0.32.1 refuses in a FEN's counters: a rule-50 count or a move number
    outside lc0's ``int`` range (2^31 and up, 2^64 included), with lc0's message. Other counter
    checks are python-chess's (it also refuses a negative rule-50 count, which lc0 accepts)."""
    fields = fen.split()
    for index, what in ((4, "bad rule 50 halfmoves"), (5, "bad total moves")):
        if len(fields) <= index:
            continue
        number = re.match(r"-?\d+", fields[index])  # lc0 reads the leading number
        if number is not None and not -INT_MAX - 1 <= int(number.group()) <= INT_MAX:
            raise UciError(f"Bad fen string ({what}): {fen}")
