"""``lc0py uci``: the UCI engine (lc0's default mode).

The loop reads stdin in the main thread; a search runs in its own threads (``Search``), so
``stop``/``quit`` are answered at once. The backend is created lazily (first ``isready``,
``position``, ``ucinewgame`` or ``go``), never at ``uci``, so ``uciok`` comes back immediately.
Each command runs inside one exception boundary: a malformed command prints ``error <message>``
and the engine goes on. As lc0: a backend that cannot be created gives its error line at each
command that needs it; a ``go`` then invents no move, and (unlike lc0, which leaves python-chess
waiting for ever) the engine exits with status 1; no network found by ``<autodiscover>`` is lc0's
error, and the built-in random-weight net plays only when asked for with ``WeightsFile=<random>``.
Every ``go`` that was accepted ends with exactly one ``bestmove`` (``(none)`` after a refused
position, for impossible ``searchmoves`` and in mate/stalemate), whatever fails in the search;
one search runs at a time (its threads are joined before the next), and ``quit`` joins it and
closes the backend before the process ends (docs/uci.md "Honest failures").

Pondering follows lc0 (``src/engine.cc``): with ``Ponder`` on, ``go ponder`` searches the position
before the ponder move (the last move of ``position``), reporting from the side after it;
``ponderhit`` starts the clock and searches the full position, keeping the subtree and the time
manager; a ponder miss (``stop``, then the real position) continues the same game, so the time
manager is kept there too.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TextIO

import chess

from lc0py import __version__
from lc0py.backends.base import Backend
from lc0py.chess.encoding import PositionRecord
from lc0py.chess.history import PositionHistory, check_side_not_to_move
from lc0py.errors import BackendUnavailable, Lc0pyError, one_line
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.params import SearchParams
from lc0py.search.search import PvLine, Search, SearchCallbacks, SearchInfo, SearchLimits
from lc0py.search.tablebase import SyzygyTablebase
from lc0py.search.timemgr import LegacyTimeManager
from lc0py.search.warmup import start_in_background, warm_up
from lc0py.search.worker import prepare_for_search
from lc0py.uci.contempt import contempt_side, rescale_params
from lc0py.uci.info import InfoFormat, info_lines, uci_move
from lc0py.uci.log import TrafficLog
from lc0py.uci.options import Options
from lc0py.uci.protocol import (
    GoParams,
    UciError,
    check_fen_counters,
    parse_go,
    parse_position,
    parse_setoption,
)
from lc0py.uci.verbose import verbose_stats
from lc0py.weights.discover import AUTODISCOVER, discover_weights_file

_BACKEND_OPTIONS = ("WeightsFile", "Backend", "BackendOptions")
RANDOM_WEIGHTS = "<random>"  # WeightsFile value: the built-in random-weight net, asked for explicitly


class Output:
    """Line-oriented, thread-safe, flushed writer (GUIs read line by line). Every line goes out
    as one printable line (``one_line``: a control character in a message, e.g. a path with a
    newline, cannot split it) and into the traffic log (``LogFile``)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.log = TrafficLog()

    def send(self, line: str) -> None:
        line = one_line(line)
        with self.lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (BrokenPipeError, ValueError):
                pass
        self.log.record("<<", line)


class UciEngine:
    """State of one engine session: options, backend, tree, NN cache, time manager, search."""

    def __init__(self, options: Options, out: Output, show_hidden: bool = False) -> None:
        self.options = options
        self.out = out
        self.show_hidden = show_hidden
        self.backend: Backend | None = None
        self.cache = NNCache(int(options["NNCacheSize"]))
        self.tree = NodeTree()
        self.tm = LegacyTimeManager(int(options["MoveOverheadMs"]))
        self.search: Search | None = None
        # The last accepted ``position`` (start FEN or None, moves); None after a refused one.
        self.position: tuple[str | None, list[str]] | None = None
        self._position_error: str | None = None
        self.clock_start = time.perf_counter()  # lc0's StartClock: position, go, ponderhit
        self._ponder_go: GoParams | None = None
        self._ponder_enabled = bool(options["Ponder"])
        self.tablebase: SyzygyTablebase | None = None
        self._tb_failed = ""  # a SyzygyPath that could not be opened (reported once)
        # Set when a ``go`` found no backend that can search (no or a refused net): the engine
        # then ends with status 1, so python-chess raises instead of waiting for a bestmove.
        self.exit_code: int | None = None

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
        return self.exit_code is None

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
        if canonical == "LogFile":
            self.out.log.set_file(str(self.options["LogFile"]))
        elif canonical in _BACKEND_OPTIONS:
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
        self._accept_position(None, [])

    def cmd_position(self, args: list[str]) -> None:
        """Stop any search, start the clock, check the position; a refused one leaves no position
        (the next ``go`` answers ``bestmove (none)``, never a search of the previous one)."""
        self.clock_start = time.perf_counter()  # the GUI's clock runs from here
        self._stop_search(wait=True)
        self.position = None
        self._ponder_go = None
        try:
            fen, moves = parse_position(args)
            if fen is not None:
                check_fen_counters(fen)  # lc0 refuses counters past its int range
                check_side_not_to_move(fen)  # else the side to move could capture the king
            PositionHistory.from_fen(fen, moves)  # refuse a bad FEN or move now
        except Lc0pyError as exc:
            self._position_error = str(exc)
            raise
        self._ensure_backend()
        self._accept_position(fen, moves)

    def _accept_position(self, fen: str | None, moves: list[str]) -> None:
        self.position = (fen, list(moves))
        self._position_error = None
        # lc0 reads Ponder here: with it on, the tree is set at go (plain or one move back)
        self._ponder_enabled = bool(self.options["Ponder"])
        if not self._ponder_enabled:
            self._set_search_position(for_ponder=False)

    def _set_search_position(self, for_ponder: bool) -> None:
        """The tree to the last position, or (ponder) to the one before its last move; a new
        time manager only when the game does not continue (lc0's ``ClassicSearch::SetPosition``),
        so a ponder miss keeps it."""
        assert self.position is not None
        fen, moves = self.position
        if for_ponder:
            if not moves:
                raise UciError("Ponder search requires at least one move.")
            moves = moves[:-1]
        if not self.tree.reset_to_position(fen, moves):
            self.tm = LegacyTimeManager(int(self.options["MoveOverheadMs"]))

    def cmd_go(self, args: list[str]) -> None:
        go = parse_go(args)
        if go.ponder and not self._ponder_enabled:
            raise UciError("Ponder is not enabled, but the ponder search is requested.")
        self._stop_search(wait=True)
        if go.wtime is None and go.btime is None:
            self.clock_start = time.perf_counter()
        if self.position is None:
            if self._position_error is not None:
                self.out.send(
                    f"error No position to search: the last position was refused ({self._position_error})"
                )
                self.out.send("bestmove (none)")
                return
            self.cmd_ucinewgame([])
        if self._ensure_backend() is None:
            # lc0 prints the error and sends no bestmove, and python-chess then waits for ever;
            # lc0py ends instead (status 1), which python-chess raises as EngineTerminatedError
            self.out.send("info string no network can search here; the engine exits (status 1)")
            self.exit_code = 1
            return
        if self._ponder_enabled:
            self._set_search_position(for_ponder=go.ponder)
        self._ponder_go = go if go.ponder else None
        self._start_safely(go, self.clock_start, pondering=go.ponder)

    def cmd_ponderhit(self, args: list[str]) -> None:
        """lc0's ``PonderHit``: stop the ponder search, start the clock now, search the full
        position (the ponder move's subtree is kept) with the same ``go`` limits."""
        go = self._ponder_go
        if go is None:
            raise UciError("ponderhit while not pondering")
        self._ponder_go = None
        self._stop_search(wait=True, silently=True)
        self.clock_start = time.perf_counter()
        go.ponder = False
        self._set_search_position(for_ponder=False)
        self._start_safely(go, self.clock_start, pondering=False)

    def cmd_stop(self, args: list[str]) -> None:
        self._ponder_go = None
        if self.search is not None:
            self.search.stop()

    def cmd_wait(self, args: list[str]) -> None:
        if self.search is not None:
            self.search.wait(None)

    def _quit(self) -> None:
        """Answer a running search (lc0 sends its ``bestmove``), then end cleanly (``shutdown``)."""
        if self.search is not None and not self.search.done:
            self.search.stop()

    def shutdown(self, timeout: float = 60.0) -> bool:
        """Wait for the search's threads (each waits for the evaluation it handed to the
        backend) and close the backend, tables and log, so no thread is inside the backend's
        native code (onnxruntime, numba) when the interpreter ends: that aborted the process.
        False when a thread is still busy after ``timeout`` seconds (a backend that hangs)."""
        search, self.search = self.search, None
        clean = True
        if search is not None:
            if not search.wait(timeout):  # a stopped search answers after its first evaluation
                search.stop_silently()
            clean = search.join(timeout)
        if clean and self.backend is not None:
            try:
                self.backend.close()
            except Exception:  # noqa: S110 - closing at exit; nothing to report to
                pass
            self.backend = None
        if self.tablebase is not None:
            self.tablebase.close()
            self.tablebase = None
        self.out.log.close()
        return clean

    # ------------------------------------------------------------------ backend ----
    def _drop_backend(self) -> None:
        self._stop_search(wait=True)
        if self.backend is not None:
            try:
                self.backend.close()
            except Exception:
                pass
        self.backend = None
        self.cache.clear()
        self.tree.clear()
        if self.position is not None and not self._ponder_enabled:
            self._set_search_position(for_ponder=False)

    def _weights(self) -> str | None:
        """The network to load: a path, or None for the built-in random-weight net (asked for
        explicitly with ``<random>``). ``<autodiscover>`` (or empty) looks where lc0 looks; nothing
        found raises lc0's error (unless the backend needs no network)."""
        weights = str(self.options["WeightsFile"]).strip()
        if weights == RANDOM_WEIGHTS:
            return None
        if weights in ("", AUTODISCOVER):
            found = discover_weights_file()
            if found is not None:
                return found
            backend = str(self.options["Backend"])
            if not _needs_weights(backend):
                return None
            raise BackendUnavailable(f"The {backend} backend requires a network file.")
        return weights

    def _ensure_backend(self) -> Backend | None:
        """Create the backend if there is none; on failure print lc0's error line and return None
        (lc0 tries again at the next command that needs it)."""
        if self.backend is not None:
            return self.backend
        from lc0py.backends.registry import create_backend

        try:
            weights = self._weights()
            if weights is not None:
                print(f"Loading weights file from: {one_line(weights)}", file=sys.stderr)
            self.backend = create_backend(
                self.options["Backend"], weights, self.options["BackendOptions"] or None
            )
        except Exception as exc:
            self.out.send(f"error {str(exc) or type(exc).__name__}")
            return None
        if weights is None and _needs_weights(str(self.options["Backend"])):
            self.out.send("info string random weights: the built-in random-weight net plays (<random>)")
        # the compiled search core (started in the background at launch), loaded here rather than
        # in the first timed go; a first compile is said as an info string while the GUI waits
        warm_up(on_wait=lambda text: self.out.send(f"info string {text}"))
        try:  # and the backend's graphs for the minibatch sizes the search will send
            prepare_for_search(self.backend, self.options.search_params())
        except Exception as exc:
            self.out.send(f"error {str(exc) or type(exc).__name__}")
            self.backend.close()
            self.backend = None
        return self.backend

    def _ensure_tablebase(self) -> SyzygyTablebase | None:
        """The tables of ``SyzygyPath`` (opened again when it changed); None without any."""
        paths = str(self.options["SyzygyPath"]).strip()
        if self.tablebase is not None and self.tablebase.paths == paths:
            return self.tablebase
        if self.tablebase is not None:
            self.tablebase.close()
            self.tablebase = None
        if not paths or paths == self._tb_failed:
            return None
        try:
            tb = SyzygyTablebase(paths)
        except (Lc0pyError, OSError) as exc:  # lc0: "Failed to load Syzygy tablebases!", play on
            self._tb_failed = paths
            self.out.send(f"error Failed to load Syzygy tablebases: {exc}")
            return None
        print(
            f"Found {tb.wdl_files} WDL and {tb.dtz_files} DTZ tablebase files "
            f"(up to {tb.max_pieces} pieces).",
            file=sys.stderr,
        )
        self.tablebase = tb
        return tb

    # ------------------------------------------------------------------ search ----
    def _stop_search(self, wait: bool, silently: bool | None = None) -> None:
        """Stop the running search; a ponder search (by default) without its ``bestmove``. With
        ``wait``, also join its threads: the next search starts only when every evaluation of
        this one has ended (lc0 joins its search threads the same way), so evaluations never
        pile up in leftover threads, whatever the clock or a burst of ``stop``/``ucinewgame``."""
        search = self.search
        if search is None:
            return
        if silently is None:
            silently = self._ponder_go is not None
        if not search.done:
            search.stop_silently() if silently else search.stop()
        if wait:
            search.wait(None)
            search.join(None)

    def _root_moves(self, go: GoParams, board: chess.Board) -> list[chess.Move] | None:
        """``searchmoves`` as moves of ``board``, in either castling notation (lc0 drops the
        illegal ones); None without searchmoves. Raises ``UciError`` when none is legal."""
        if not go.searchmoves:
            return None
        moves = []
        for text in go.searchmoves:
            try:
                move = chess.Move.from_uci(text)
            except ValueError:
                raise UciError(f"Invalid move in searchmoves: {text}") from None
            move = board._to_chess960(move)
            move = board._from_chess960(board.chess960, move.from_square, move.to_square, move.promotion)
            if board.is_legal(move) and move not in moves:
                moves.append(move)
        if not moves:
            raise UciError("No legal searchmoves.")
        return moves

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
        return limits

    def _start_safely(self, go: GoParams, start: float, pondering: bool) -> None:
        """``_start``; a failure while setting the search up (anything the checks before did not
        catch) is one ``info string`` line and the search starts again without the tables, the
        contempt and the ``searchmoves``; if that fails too, the ``go`` still gets its
        ``bestmove``: the first legal move, said so (never an exception without one)."""
        try:
            self._start(go, start, pondering)
            return
        except Exception as exc:
            self.out.send(f"info string error while starting the search: {type(exc).__name__}: {exc}")
        try:
            self._start(go, start, pondering, plain=True)
            return
        except Exception as exc:
            self.out.send(f"info string error while starting the search: {type(exc).__name__}: {exc}")
        if pondering:
            return  # a ponder search has no bestmove to give
        moves = list(self.tree.history.board.generate_legal_moves())
        if moves:
            self.out.send("info string WARNING: the search could not run; move not searched")
        self.out.send("bestmove " + (moves[0].uci() if moves else "(none)"))

    def _start(self, go: GoParams, start: float, pondering: bool, plain: bool = False) -> None:
        """Start the search of ``go``; ``plain`` (after a failure): no tables, no contempt, no
        ``searchmoves``, no time manager (a movetime of what the clock allows or 1 node)."""
        board = self.tree.history.board
        try:
            root_moves = self._root_moves(go, board)
        except UciError as exc:  # the go was accepted: it still ends with a bestmove
            self.out.send(f"error {exc}")
            self.out.send("bestmove (none)")
            return
        chess960 = bool(self.options["UCI_Chess960"])
        if not any(board.generate_legal_moves()):
            self._answer_game_over(board)
            return
        if plain:
            limits = SearchLimits(infinite=go.infinite or pondering, nodes=1)
            tablebase = None
            root_moves = None
        else:
            limits = self._limits(go, board, pondering)
            tablebase = self._ensure_tablebase()
        if tablebase is not None:
            tablebase.begin_search()
        if root_moves:
            limits.searchmoves = root_moves
        elif tablebase is not None:  # lc0's MakeRootMoveFilter: searchmoves override the tables
            tablebase.hits = 0
            moves, limits.tablebase_root_dtz = tablebase.root_moves(
                board,
                _repeated_since_zeroing(self.tree.history.records),
                bool(self.options["SyzygyFastPlay"]),
            )
            limits.searchmoves = moves
        backend = self.backend
        assert backend is not None
        params = self.options.search_params()
        rescale = None if plain else self._apply_contempt(params, board.turn, go.infinite, pondering)
        fmt = InfoFormat(
            score_type=self.options["ScoreType"],
            show_wdl=bool(self.options["UCI_ShowWDL"]),
            show_movesleft=bool(self.options["UCI_ShowMovesLeft"]),
            has_wdl=backend.info.has_wdl,
            has_moves_left=backend.info.has_moves_left,
            draw_score=float(self.options["DrawScore"]),
            chess960=chess960,
            rescale=rescale,
            per_pv_counters=bool(self.options["PerPVCounters"]),
        )
        root_board = board.copy(stack=False)
        out = self.out
        ponder_move: chess.Move | None = None
        info_board = root_board
        if pondering:
            ponder_move = self.tree.history.board.parse_uci(self.position[1][-1]) if self.position else None
            info_board = root_board.copy(stack=False)
            if ponder_move is not None:
                info_board.push(ponder_move)

        def on_info(info: SearchInfo) -> None:
            if ponder_move is not None:
                info = ponder_view(info, ponder_move)
            else:
                info = with_pv(info, search)
            for text in info_lines(info, fmt, info_board):
                out.send(text)

        def on_bestmove(best: chess.Move | None, ponder: chess.Move | None) -> None:
            tm_used = search.elapsed_ms()
            if tablebase is not None and tablebase.failure:  # said once a search
                out.send(f"info string {tablebase.failure}")
            if search.root.n == 0 and best is not None:  # only when the backend failed; said
                out.send("info string WARNING: no evaluation finished (see the error above); "
                         "move not searched")
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
            for text in verbose_stats(s, fmt.rescale):
                out.send("info string " + text)

        callbacks = SearchCallbacks(
            on_info=on_info,
            on_bestmove=on_bestmove,
            on_message=lambda text: out.send("info string " + text),
            on_verbose=on_verbose,
        )
        previous = self.search
        search = Search(
            self.tree, backend, params, limits, self.cache, callbacks, start_time=start, tablebase=tablebase,
            eval_estimate_s=previous.eval_s if previous is not None and previous.backend is backend else None,
        )
        self.search = search
        search.start()

    def _apply_contempt(
        self, params: SearchParams, root_turn: chess.Color, infinite: bool, pondering: bool
    ) -> tuple[float, float, float, float] | None:
        """Fill ``params``' WDL rescaling from the contempt options (lc0's params.cc / Search
        constructor) and return what ``info`` needs to report it (see ``compute_score``)."""
        ratio, diff = rescale_params(self.options)
        mode = str(self.options["ContemptMode"])
        side = contempt_side(mode, root_turn, infinite, pondering)
        if side is None:
            if mode == "play" and diff != 0.0:
                self.out.send(
                    "info string WARNING: Contempt mode set to 'disable' as 'play' not supported "
                    "for infinite search."
                )
            diff = 0.0
        params.wdl_rescale_ratio = ratio
        params.wdl_rescale_diff = diff
        params.contempt_root_side = side is None or side == root_turn
        contempt_active = diff != 0.0
        if self.options["ScoreType"] != "WDL_mu" and not contempt_active:
            return None
        sign = 1.0 if params.contempt_root_side else -1.0
        return ratio, diff * float(self.options["WDLEvalObjectivity"]), sign, float(self.options["WDLMaxS"])

    def _answer_game_over(self, board: chess.Board) -> None:
        """A root without legal moves: mated (``score mate 0``, all loss) or stalemated (a draw),
        then ``bestmove (none)``. (lc0 0.32.1 prints no info and ``bestmove a1a1`` there, which
        is not a move; the UCI convention is used instead.)"""
        mated = board.is_check()
        text = "info depth 1 seldepth 0 time 0 nodes 0 score " + ("mate 0" if mated else "cp 0")
        if self.options["UCI_ShowWDL"]:
            text += " wdl 0 0 1000" if mated else " wdl 0 1000 0"
        self.out.send(text + " tbhits 0")
        self.out.send("bestmove (none)")


def with_pv(info: SearchInfo, search: Search) -> SearchInfo:
    """``pv`` always present: a line without moves (e.g. a single legal move, root not expanded
    yet) gets the move the search would play (and its reply)."""
    if info.lines and info.lines[0].moves:
        return info
    best, ponder = search.best_move()
    if best is None:
        return info
    moves = [best] + ([ponder] if ponder is not None else [])
    if not info.lines:  # the root not evaluated yet: the move without a score (info_lines)
        return replace(info, lines=[PvLine(moves, 0.0, 0.0, 0.0, 0)])
    return replace(info, lines=[replace(info.lines[0], moves=moves), *info.lines[1:]])


def ponder_view(info: SearchInfo, ponder_move: chess.Move) -> SearchInfo:
    """lc0's ``UciPonderForwarder``: while pondering on the position before ``ponder_move``,
    report the best line's numbers from the side to move after it (score and WDL negated,
    depth and seldepth one less) with the PV after the ponder move (if a line starts with it)."""
    if not info.lines:
        return info
    best = info.lines[0]
    pv: list[chess.Move] = []
    for line in info.lines:
        if line.moves and line.moves[0] == ponder_move:
            pv = list(line.moves[1:])
            break
    mate = -best.mate if best.mate is not None else None
    line = PvLine(pv, -best.wl, best.d, best.m, best.n, mate)
    return replace(
        info,
        depth=info.depth - 1 if info.depth > 1 else info.depth,
        seldepth=info.seldepth - 1 if info.seldepth > 1 else info.seldepth,
        lines=[line],
    )


def _repeated_since_zeroing(records: Sequence[PositionRecord]) -> bool:
    """lc0's ``DidRepeatSinceLastZeroingMove``."""
    for rec in reversed(records):
        if rec.repetitions > 0:
            return True
        if rec.rule50 == 0:
            return False
    return False


def _needs_weights(backend: str) -> bool:
    from lc0py.backends.registry import needs_weights

    return needs_weights(backend.strip().lower())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option as a flag (``--weights``, ``--backend``, ``--cpuct`` …)."""
    Options().add_arguments(parser)
    parser.add_argument("--show-hidden", action="store_true", help="list hidden options at 'uci'")
    parser.add_argument("--preload", action="store_true", help="create the backend before reading stdin")
    parser.add_argument("--no-preload", dest="preload", action="store_false", help=argparse.SUPPRESS)


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """The UCI loop until ``quit`` or end of input."""
    options = Options()
    options.apply_args(args)
    out = Output(stdout or sys.stdout)
    logfile = str(options["LogFile"])
    if logfile:
        out.log.set_file(logfile)  # a UsageError: one line, exit 2
    engine = UciEngine(options, out, show_hidden=bool(getattr(args, "show_hidden", False)))
    start_in_background()  # compile/load the search core while the GUI sends uci, options...
    if getattr(args, "preload", False):
        engine._ensure_backend()
    stream = stdin or sys.stdin
    while True:
        line = stream.readline()
        if not line:
            engine._quit()
            break
        out.log.record(">>", line)
        if not engine.handle(line):
            break
    if not engine.shutdown():
        # a backend still busy after a minute: leave without running its native destructors
        # under a live thread (that aborts); what was written is flushed first
        with contextlib.suppress(Exception):
            out.stream.flush()
            sys.stderr.flush()
        os._exit(engine.exit_code or 0)
    return engine.exit_code or 0
