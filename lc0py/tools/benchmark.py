"""``lc0py benchmark``: full search on lc0's benchmark positions, lc0's output shape.

The 34 positions are lc0's list from ``src/tools/benchmark.h`` (docs/uci-and-tools.md §2). Each
position gets a fresh tree; one NN cache (``--nncache``, default 200000) is shared by the whole
run. A search stops at ``--movetime`` ms (no move overhead; ``-1`` = no limit) and/or ``--nodes``
root visits; no smart pruning or time manager. Output goes to stdout::

    Position: k/N <position>
    Benchmark time <ms> ms, <nodes> nodes, <nps> nps, move <pv0>     (one per info update)
    bestmove <move>
    ...
    ===========================
    Total time (ms) : <sum ms>
    Nodes searched  : <sum playouts>
    Nodes/second    : <round(1000 * playouts / (ms + 1))>

lc0's plan (34 positions x 10 s) is for GPUs: on a CPU backend (numpy, onnx-cpu, random) the
limits no flag sets come from a small CPU plan (the first 4 positions, 5 s each: well under a
minute), said on stderr; rates below 100 nodes/second keep three significant digits instead of
rounding to ``1``.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from typing import NoReturn

import chess

from lc0py.chess.policy import king_takes_rook_uci
from lc0py.errors import UsageError
from lc0py.search.core.nncache import NNCache
from lc0py.search.core.tree import NodeTree
from lc0py.search.search import Search, SearchCallbacks, SearchInfo, SearchLimits
from lc0py.search.warmup import start_in_background, warm_up
from lc0py.search.worker import prepare_for_search
from lc0py.tools.bench_stats import format_nps
from lc0py.tools.weights_choice import resolve_weights
from lc0py.uci.options import Options

# lc0's src/tools/benchmark.h (a string may carry "moves ...", applied first).
POSITIONS: tuple[str, ...] = (
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 10",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11",
    "4rrk1/pp1n3p/3q2pQ/2p1pb2/2PP4/2P3N1/P2B2PP/4RRK1 b - - 7 19",
    "rq3rk1/ppp2ppp/1bnpb3/3N2B1/3NP3/7P/PPPQ1PP1/2KR3R w - - 7 14 moves d4e6",
    "r1bq1r1k/1pp1n1pp/1p1p4/4p2Q/4Pp2/1BNP4/PPP2PPP/3R1RK1 w - - 2 14 moves g2g4",
    "r3r1k1/2p2ppp/p1p1bn2/8/1q2P3/2NPQN2/PPP3PP/R4RK1 b - - 2 15",
    "r1bbk1nr/pp3p1p/2n5/1N4p1/2Np1B2/8/PPP2PPP/2KR1B1R w kq - 0 13",
    "r1bq1rk1/ppp1nppp/4n3/3p3Q/3P4/1BP1B3/PP1N2PP/R4RK1 w - - 1 16",
    "4r1k1/r1q2ppp/ppp2n2/4P3/5Rb1/1N1BQ3/PPP3PP/R5K1 w - - 1 17",
    "2rqkb1r/ppp2p2/2npb1p1/1N1Nn2p/2P1PP2/8/PP2B1PP/R1BQK2R b KQ - 0 11",
    "r1bq1r1k/b1p1npp1/p2p3p/1p6/3PP3/1B2NN2/PP3PPP/R2Q1RK1 w - - 1 16",
    "3r1rk1/p5pp/bpp1pp2/8/q1PP1P2/b3P3/P2NQRPP/1R2B1K1 b - - 6 22",
    "r1q2rk1/2p1bppp/2Pp4/p6b/Q1PNp3/4B3/PP1R1PPP/2K4R w - - 2 18",
    "4k2r/1pb2ppp/1p2p3/1R1p4/3P4/2r1PN2/P4PPP/1R4K1 b - - 3 22",
    "3q2k1/pb3p1p/4pbp1/2r5/PpN2N2/1P2P2P/5PP1/Q2R2K1 b - - 4 26",
    "6k1/6p1/6Pp/ppp5/3pn2P/1P3K2/1PP2P2/3N4 b - - 0 1",
    "3b4/5kp1/1p1p1p1p/pP1PpP1P/P1P1P3/3KN3/8/8 w - - 0 1",
    "2K5/p7/7P/5pR1/8/5k2/r7/8 w - - 0 1 moves g5g6 f3e3 g6g5 e3f3",
    "8/6pk/1p6/8/PP3p1p/5P2/4KP1q/3Q4 w - - 0 1",
    "7k/3p2pp/4q3/8/4Q3/5Kp1/P6b/8 w - - 0 1",
    "8/2p5/8/2kPKp1p/2p4P/2P5/3P4/8 w - - 0 1",
    "8/1p3pp1/7p/5P1P/2k3P1/8/2K2P2/8 w - - 0 1",
    "8/pp2r1k1/2p1p3/3pP2p/1P1P1P1P/P5KR/8/8 w - - 0 1",
    "8/3p4/p1bk3p/Pp6/1Kp1PpPp/2P2P1P/2P5/5B2 b - - 0 1",
    "5k2/7R/4P2p/5K2/p1r2P1p/8/8/8 b - - 0 1",
    "6k1/6p1/P6p/r1N5/5p2/7P/1b3PP1/4R1K1 w - - 0 1",
    "1r3k2/4q3/2Pp3b/3Bp3/2Q2p2/1p1P2P1/1P2KP2/3N4 w - - 0 1",
    "6k1/4pp1p/3p2p1/P1pPb3/R7/1r2P1PP/3B1P2/6K1 w - - 0 1",
    "8/3p3B/5p2/5P2/p7/PP5b/k7/6K1 w - - 0 1",
    "5rk1/q6p/2p3bR/1pPp1rP1/1P1Pp3/P3B1Q1/1K3P2/R7 w - - 93 90",
    "4rrk1/1p1nq3/p7/2p1P1pp/3P2bp/3Q1Bn1/PPPB4/1K2R1NR w - - 40 21",
    "r3k2r/3nnpbp/q2pp1p1/p7/Pp1PPPP1/4BNN1/1P5P/R2Q1RK1 w kq - 0 16",
    "3Qb1k1/1r2ppb1/pN1n2q1/Pp1Pp1Pr/4P2p/4BP2/4B1R1/1R5K b - - 11 40",
)


MOVETIME_MS = 10000
CPU_POSITIONS = 4
CPU_MOVETIME_MS = 5000
# lc0's "bench" mode: the same benchmark, shorter (src/main.cc, tools/benchmark.cc)
BENCH_POSITIONS = 10
BENCH_MOVETIME_MS = 500


def apply_plan(args: argparse.Namespace, is_cpu: bool) -> bool:
    """Fill the limits no flag set: lc0's plan, or on a CPU backend the small CPU plan (returns
    whether the CPU plan filled anything). ``--nodes`` alone keeps lc0's "no time limit". lc0's
    ``bench`` mode (``args.short_plan``) has its own short plan, on every backend."""
    if getattr(args, "short_plan", False):
        if args.num_positions is None:
            args.num_positions = BENCH_POSITIONS
        if args.movetime is None:
            args.movetime = -1 if args.nodes is not None else BENCH_MOVETIME_MS
        if args.nodes is None:
            args.nodes = -1
        return False
    cpu = is_cpu and (args.num_positions is None or (args.movetime is None and args.nodes is None))
    if args.num_positions is None:
        args.num_positions = CPU_POSITIONS if is_cpu else len(POSITIONS)
    if args.movetime is None:
        args.movetime = -1 if args.nodes is not None else (CPU_MOVETIME_MS if is_cpu else MOVETIME_MS)
    if args.nodes is None:
        args.nodes = -1
    return cpu


def _keep_first(box: list[chess.Move | None], move: chess.Move | None, ponder: object = None) -> None:
    """Search callback: remember the best move (``box[0]``)."""
    box[0] = move


def _one_line_error(prog: str) -> object:
    def error(message: str) -> NoReturn:
        print(f"{prog}: {message}", file=sys.stderr)
        raise SystemExit(2)

    return error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    Options(groups=("backend", "search")).add_arguments(parser)
    parser.add_argument("--nodes", type=int, default=None, help="root visits per position (-1: no limit)")
    parser.add_argument("--movetime", type=int, default=None,
                        help=f"ms per position (-1: no limit; default {MOVETIME_MS}, "
                             f"CPU backends {CPU_MOVETIME_MS})")
    parser.add_argument("--num-positions", type=int, default=None,
                        help=f"first N of lc0's 34 positions (default 34, CPU backends {CPU_POSITIONS})")
    parser.add_argument("--fen", default="", help="one position (FEN [moves ...]) instead of the list")
    parser.error = _one_line_error("lc0py benchmark")  # type: ignore[method-assign,assignment]


def split_position(text: str) -> tuple[str, list[str]]:
    """``"<fen> moves a b"`` → (fen, [a, b])."""
    if " moves " in f" {text} ":
        fen, _, moves = f" {text} ".partition(" moves ")
        return fen.strip(), moves.split()
    return text.strip(), []


def run(args: argparse.Namespace) -> int:
    if args.num_positions is not None and not 1 <= args.num_positions <= len(POSITIONS):
        raise UsageError(f"--num-positions {args.num_positions} is out of range [1, {len(POSITIONS)}]")
    if (args.nodes is not None and args.nodes < -1) or (args.movetime is not None and args.movetime < -1):
        raise UsageError("--nodes and --movetime must be -1 (no limit) or >= 0")
    options = Options(groups=("backend", "search"))
    options.values["NNCacheSize"] = 200000  # lc0's benchmark default
    options.apply_args(args)
    from lc0py.backends.registry import check_name, create_backend, is_cpu_backend

    check_name(options["Backend"])
    start_in_background()  # the compiled search core loads (or compiles) while the net loads
    weights = resolve_weights(options["WeightsFile"], "benchmark", speed_tool=True,
                              backend=options["Backend"])
    backend = create_backend(options["Backend"], weights, options["BackendOptions"] or None)
    if apply_plan(args, is_cpu_backend(backend)) and not args.fen:
        time_text = f"{args.movetime} ms" if args.movetime >= 0 else "no time limit"
        nodes_text = f", {args.nodes} nodes" if args.nodes >= 0 else ""
        print(f"benchmark: CPU backend '{backend.name}': small CPU plan: the first {args.num_positions} "
              f"positions, {time_text}{nodes_text} each (lc0's plan, 34 positions x {MOVETIME_MS} ms, is "
              f"for GPUs; --num-positions/--movetime/--nodes change it)", file=sys.stderr, flush=True)
    params = options.search_params()
    cache = NNCache(int(options["NNCacheSize"]))
    positions = [args.fen] if args.fen else list(POSITIONS[: args.num_positions])
    trees = []
    for text in positions:  # validate every position before the first search
        fen, moves = split_position(text)
        tree = NodeTree()
        tree.reset_to_position(fen, moves)
        trees.append(tree)

    # the compiled search core, ready before the clock runs (a first compile is said on stderr)
    warm_up(on_wait=lambda text: print(f"benchmark: {text}", file=sys.stderr, flush=True))
    prepare_for_search(backend, params)  # and capture the backend's graphs
    total_ms = 0
    total_playouts = 0
    total_nodes = 0
    total_bytes = 0
    out = sys.stdout
    try:
        for k, (text, tree) in enumerate(zip(positions, trees, strict=True), 1):
            out.write(f"\nPosition: {k}/{len(positions)} {text}\n")
            out.flush()
            board = tree.history.board.copy(stack=False)

            def on_info(info: SearchInfo, board: chess.Board = board) -> None:
                nps = info.nps if info.nps is not None else -1
                line = f"Benchmark time {info.time_ms} ms, {info.nodes} nodes, {nps} nps"
                if info.lines and info.lines[0].moves:
                    line += ", move " + king_takes_rook_uci(board, info.lines[0].moves[0])
                out.write(line + "\n")
                out.flush()

            result: list[chess.Move | None] = [None]
            limits = SearchLimits(
                nodes=None if args.nodes < 0 else args.nodes,
                deadline_ms=None if args.movetime < 0 else args.movetime,
                smart_pruning=False,
            )
            start = time.perf_counter()
            search = Search(
                tree,
                backend,
                params,
                limits,
                cache,
                SearchCallbacks(
                    on_info=on_info,
                    on_bestmove=partial(_keep_first, result),
                    on_message=lambda t: print(t, file=sys.stderr),
                ),
                start_time=start,
            )
            search.run()
            search.join()  # an abandoned batch still in the backend belongs to this position's time
            total_ms += int((time.perf_counter() - start) * 1000)
            total_playouts += search.playouts
            total_nodes += tree.num_nodes
            total_bytes += tree.bytes_used()
            best = result[0]
            out.write(f"bestmove {king_takes_rook_uci(board, best) if best is not None else '(none)'}\n")
            out.flush()
            if search.error is not None:
                raise search.error
    finally:
        backend.close()
    out.write("\n===========================\n")
    out.write(f"Total time (ms) : {total_ms}\n")
    out.write(f"Nodes searched  : {total_playouts}\n")
    out.write(f"Nodes/second    : {format_nps(1000 * total_playouts / (total_ms + 1))}\n")
    out.write(f"Bytes/node      : {total_bytes / max(1, total_nodes):.1f}\n")
    out.flush()
    return 0
