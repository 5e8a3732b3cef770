"""``lc0py uci``: the UCI engine (lc0's default mode).

The loop reads stdin in the main thread; a search runs in its own threads (``Search``), so
``stop``/``quit`` are answered at once. The backend is created lazily (first ``isready``,
``position``, ``ucinewgame`` or ``go``), never at ``uci``, so ``uciok`` comes back immediately.
Each command runs inside one exception boundary: a malformed command prints ``error <message>``
and the engine goes on; a backend failure is reported and a legal ``bestmove`` is still sent.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TextIO

import chess

from lc0py import __version__
from lc0py.backends.base import Backend
from lc0py.chess.history import check_side_not_to_move
from lc0py.errors import Lc0pyError, UsageError
from lc0py.search.nncache import NNCache
from lc0py.search.search import Search, SearchCallbacks, SearchInfo, SearchLimits
from lc0py.search.timemgr import LegacyTimeManager
from lc0py.search.tree import NodeTree
from lc0py.search.warmup import warm_up
from lc0py.uci.info import InfoFormat, info_lines, uci_move
from lc0py.uci.options import Options
from lc0py.uci.protocol import GoParams, UciError, parse_go, parse_position, parse_setoption
from lc0py.uci.verbose import verbose_stats

_BACKEND_OPTIONS = ("WeightsFile", "Backend", "BackendOptions")


class Output:
    """Line-oriented, thread-safe, flushed writer (GUIs read line by line)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.log: TextIO | None = None

    def send(self, line: str) -> None:
        with self.lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (BrokenPipeError, ValueError):
                pass
            if self.log is not None:
                self.log.write(f"<< {line}\n")
                self.log.flush()


class UciEngine:
    """State of one engine session: options, backend, tree, NN cache, time manager, search."""

    def __init__(self, options: Options, out: Output, show_hidden: bool = False) -> None:
        self.options = options
        self.out = out
        self.show_hidden = show_hidden
        self.backend: Backend | None = None
        self._backend_error: str | None = None
        self.cache = NNCache(int(options["NNCacheSize"]))
        self.tree = NodeTree()
        self.tm = LegacyTimeManager(int(options["MoveOverheadMs"]))
        self.search: Search | None = None
        self._position_set = False
        self._position_time = time.perf_counter()
        self._ponder_go: GoParams | None = None

    # ------------------------------------------------------------------ loop ----
    def handle(self, line: str) -> bool:
        """Run one command line; False after ``quit``."""
        tokens = line.strip().split()
        if not tokens:
            return True
        cmd, args = tokens[0], tokens[1:]
        try:
            if cmd == "quit":
                self._quit()
                return False
            handler = getattr(self, "cmd_" + cmd, None) if cmd not in ("fen",) else None
            if handler is None:
                raise UciError(f"Unknown command: {cmd}")
            handler(args)
        except Lc0pyError as exc:
            self.out.send(f"error {exc}")
        except Exception as exc:  # never die on one command
            self.out.send(f"error {type(exc).__name__}: {exc}")
        return True

    # ------------------------------------------------------------------ commands ----
    def cmd_uci(self, args: list[str]) -> None:
        self.out.send(f"id name Lc0py v{__version__}")
        self.out.send("id author The lc0py authors (after The LCZero Authors.)")
        for text in self.options.uci_lines(self.show_hidden):
            self.out.send(text)
        self.out.send("uciok")

    def cmd_isready(self, args: list[str]) -> None:
        self._ensure_backend()
        self.out.send("readyok")

    def cmd_xyzzy(self, args: list[str]) -> None:
        self.out.send("Nothing happens.")

    def cmd_setoption(self, args: list[str]) -> None:
        name, value = parse_setoption(args)
        canonical = self.options.set(name, value)
        if canonical in _BACKEND_OPTIONS:
            self._drop_backend()
        elif canonical == "NNCacheSize":
            self.cache.resize(int(self.options["NNCacheSize"]))
        elif canonical == "MoveOverheadMs":
            self.tm.move_overhead_ms = int(self.options["MoveOverheadMs"])

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self._stop_search(wait=True)
        self._ensure_backend()
        self.cache.clear()
        self.tree.clear()
        self.tm = LegacyTimeManager(int(self.options["MoveOverheadMs"]))
        self.tree.reset_to_position(None, [])
        self._position_set = True

    def cmd_position(self, args: list[str]) -> None:
        fen, moves = parse_position(args)
        if fen is not None:
            check_side_not_to_move(fen)
        self._position_time = time.perf_counter()
        self._stop_search(wait=True)
        self._ensure_backend()
        continued = self.tree.reset_to_position(fen, moves)
        if not continued:
            self.tm = LegacyTimeManager(int(self.options["MoveOverheadMs"]))
        self._position_set = True

    def cmd_go(self, args: list[str]) -> None:
        go = parse_go(args)
        go_time = time.perf_counter()
        if go.ponder and not self.options["Ponder"]:
            raise UciError("Ponder is not enabled, but the ponder search is requested.")
        self._stop_search(wait=True)
        if not self._position_set:
            self.cmd_ucinewgame([])
        self._ensure_backend()
        if go.ponder:
            self._ponder_go = go
            self._start(go, go_time, pondering=True)
        else:
            self._ponder_go = None
            self._start(go, go_time, pondering=False)

    def cmd_ponderhit(self, args: list[str]) -> None:
        go = self._ponder_go
        search = self.search
        if go is None or search is None:
            return
        self._ponder_go = None
        search.stop_silently()
        search.wait(None)
        go.ponder = False
        self._start(go, time.perf_counter(), pondering=False)

    def cmd_stop(self, args: list[str]) -> None:
        self._ponder_go = None
        if self.search is not None:
            self.search.stop()

    def cmd_wait(self, args: list[str]) -> None:
        if self.search is not None:
            self.search.wait(None)

    def _quit(self) -> None:
        if self.search is not None and not self.search.done:
            self.search.stop()

    # ------------------------------------------------------------------ backend ----
    def _drop_backend(self) -> None:
        self._stop_search(wait=True)
        if self.backend is not None:
            try:
                self.backend.close()
            except Exception:
                pass
        self.backend = None
        self._backend_error = None
        self.cache.clear()
        self.tree.clear()
        self._position_set = False

    def _ensure_backend(self) -> Backend | None:
        """Create the backend once; on failure report it (one line) and keep going."""
        if self.backend is not None or self._backend_error is not None:
            return self.backend
        from lc0py.backends.registry import create_backend

        weights = self.options["WeightsFile"]
        weights = None if weights in ("", "<autodiscover>") else weights
        try:
            self.backend = create_backend(
                self.options["Backend"], weights, self.options["BackendOptions"] or None
            )
        except Exception as exc:
            self._backend_error = str(exc) or type(exc).__name__
            self.out.send(f"error {self._backend_error}")
        warm_up()  # the compiled search core, loaded here rather than in the first timed go
        return self.backend

    # ------------------------------------------------------------------ search ----
    def _stop_search(self, wait: bool) -> None:
        search = self.search
        if search is None:
            return
        if not search.done:
            search.stop_silently() if self._ponder_go is not None else search.stop()
        if wait:
            search.wait(None)

    def _limits(self, go: GoParams, board: chess.Board, pondering: bool) -> SearchLimits:
        overhead = int(self.options["MoveOverheadMs"])
        limits = SearchLimits(
            nodes=go.nodes,
            depth=go.depth,
            mate=go.mate,
            infinite=go.infinite or pondering,
            ram_limit_mb=int(self.options["RamLimitMb"]),
        )
        deadlines = []
        if go.movetime is not None and not limits.infinite and go.mate is None:
            deadlines.append(max(0, go.movetime - overhead))
        our_time = go.wtime if board.turn == chess.WHITE else go.btime
        our_inc = go.winc if board.turn == chess.WHITE else go.binc
        if our_time is not None and not limits.infinite and go.mate is None:
            ply = board.ply()
            deadlines.append(self.tm.deadline_ms(ply, our_time, our_inc or 0, go.movestogo))
        limits.deadline_ms = min(deadlines) if deadlines else None
        limits.smart_pruning = not limits.infinite and go.mate is None
        if go.searchmoves:
            moves = []
            for text in go.searchmoves:
                try:
                    mv = board.parse_uci(text)
                except ValueError:
                    raise UciError(f"Invalid move in searchmoves: {text}") from None
                moves.append(mv)
            limits.searchmoves = moves
        return limits

    def _start(self, go: GoParams, go_time: float, pondering: bool) -> None:
        board = self.tree.history.board
        limits = self._limits(go, board, pondering)
        has_clock = (go.wtime if board.turn == chess.WHITE else go.btime) is not None
        start = self._position_time if has_clock and not pondering else go_time
        if self.backend is None:
            self._answer_without_backend(board)
            return
        fmt = InfoFormat(
            score_type=self.options["ScoreType"],
            show_wdl=bool(self.options["UCI_ShowWDL"]),
            show_movesleft=bool(self.options["UCI_ShowMovesLeft"]),
            has_wdl=self.backend.info.has_wdl,
            has_moves_left=self.backend.info.has_moves_left,
            draw_score=float(self.options["DrawScore"]),
            chess960=bool(self.options["UCI_Chess960"]),
        )
        root_board = board.copy(stack=False)
        out = self.out

        def on_info(info: SearchInfo) -> None:
            for text in info_lines(info, fmt, root_board):
                out.send(text)

        def on_bestmove(best: chess.Move | None, ponder: chess.Move | None) -> None:
            tm_used = search.elapsed_ms()
            if limits.deadline_ms is not None:
                self.tm.search_finished(tm_used)
            if best is None:
                out.send("bestmove (none)")
                return
            text = "bestmove " + uci_move(best, root_board, fmt.chess960)
            if ponder is not None:
                after = root_board.copy(stack=False)
                after.push(best)
                text += " ponder " + uci_move(ponder, after, fmt.chess960)
            out.send(text)

        def on_verbose(s: Search) -> None:
            for text in verbose_stats(s):
                out.send("info string " + text)

        callbacks = SearchCallbacks(
            on_info=on_info,
            on_bestmove=on_bestmove,
            on_message=lambda text: out.send("info string " + text),
            on_verbose=on_verbose,
        )
        params = self.options.search_params()
        search = Search(self.tree, self.backend, params, limits, self.cache, callbacks, start_time=start)
        self.search = search
        search.start()

    def _answer_without_backend(self, board: chess.Board) -> None:
        """No network: still answer with a score line and a legal move."""
        self.out.send(f"info string no backend: {self._backend_error}")
        moves = list(board.legal_moves)
        self.out.send("info depth 1 seldepth 1 time 0 nodes 0 score cp 0 tbhits 0")
        self.out.send("bestmove " + (moves[0].uci() if moves else "(none)"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option as a flag (``--weights``, ``--backend``, ``--cpuct`` …)."""
    Options().add_arguments(parser)
    parser.add_argument("--show-hidden", action="store_true", help="list hidden options at 'uci'")
    parser.add_argument("--preload", action="store_true", help="create the backend before reading stdin")


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """The UCI loop until ``quit`` or end of input."""
    options = Options()
    options.apply_args(args)
    out = Output(stdout or sys.stdout)
    logfile = options["LogFile"]
    if logfile:
        try:
            out.log = open(logfile, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the loop
        except OSError as exc:
            raise UsageError(f"--logfile {logfile}: cannot open it ({exc.strerror or exc})") from None
    engine = UciEngine(options, out, show_hidden=bool(getattr(args, "show_hidden", False)))
    if getattr(args, "preload", False):
        engine._ensure_backend()
    stream = stdin or sys.stdin
    while True:
        line = stream.readline()
        if not line:
            engine._quit()
            break
        if out.log is not None:
            out.log.write(f">> {line.rstrip()}\n")
        if not engine.handle(line):
            break
    search = engine.search
    if search is not None:
        search.wait(0.1)
    return 0
