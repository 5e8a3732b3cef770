"""Reading positions given on the command line or in a file, shared by ``eval`` and friends.

A positions file has one position per line: ``FEN | move move ...`` (UCI moves, optional; the
``|`` may be omitted when there are no moves). ``startpos`` stands for the standard start position.
Blank lines and lines starting with ``#`` are skipped. Errors name the file and line number.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import chess

from lc0py.chess import PositionHistory
from lc0py.chess.history import check_side_not_to_move
from lc0py.errors import PositionError, UsageError
from lc0py.storage.reading import open_regular_file

STARTPOS = "startpos"


@dataclass
class PositionSpec:
    """A start FEN plus UCI moves, and where it came from (for error messages)."""

    fen: str
    moves: list[str] = field(default_factory=list)
    origin: str = "--fen"

    def history(self) -> PositionHistory:
        """Build the game; a bad FEN or illegal move raises ``PositionError`` naming ``origin``."""
        try:
            check_side_not_to_move(self.fen)
            return PositionHistory.from_fen(self.fen, self.moves)
        except PositionError as exc:
            raise PositionError(f"{self.origin}: {exc}") from None


def normalise_fen(text: str) -> str:
    """``startpos`` (any case) -> the standard FEN; otherwise the text with spaces normalised."""
    text = " ".join(text.split())
    return chess.STARTING_FEN if text.lower() == STARTPOS else text


def parse_position_line(line: str, origin: str) -> PositionSpec | None:
    """One ``FEN | moves`` line -> ``PositionSpec``; ``None`` for blank/comment lines."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    parts = stripped.split("|")
    if len(parts) > 2:
        raise PositionError(f"{origin}: expected 'FEN | moves', found {len(parts) - 1} '|' separators")
    fen = parts[0].strip()
    if not fen:
        raise PositionError(f"{origin}: missing FEN before '|'")
    moves = parts[1].split() if len(parts) == 2 else []
    return PositionSpec(normalise_fen(fen), moves, origin)


def read_positions_file(path: str | Path) -> list[PositionSpec]:
    """All positions of ``path``; ``UsageError`` if it cannot be read (missing, a directory, a
    FIFO, not UTF-8), ``PositionError`` on bad lines. A UTF-8 byte-order mark is skipped."""
    p = Path(path)
    with open_regular_file(str(p), "file", UsageError, label=f"--positions {p}") as raw:
        reader = io.TextIOWrapper(raw, encoding="utf-8-sig")  # -sig: drops a leading BOM
        specs = []
        try:
            for number, line in enumerate(reader, start=1):
                spec = parse_position_line(line, f"{p}:{number}")
                if spec is not None:
                    specs.append(spec)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--positions {p}: cannot read: {exc}") from None
    if not specs:
        raise UsageError(f"--positions {p}: no positions in the file")
    return specs
