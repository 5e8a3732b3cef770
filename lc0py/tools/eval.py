"""``lc0py eval``: the network's opinion of positions (policy over legal moves, WDL, Q, moves-left).

For every position the raw policy logits of the legal moves only are turned into probabilities
with a softmax at temperature 1 (lc0's search uses ``PolicyTemperature`` instead; this shows the
network itself). The work is done by the public API (``lc0py.load(...).iter_evaluate``), which
sends the positions to the backend in batches of its recommended size; each result is printed as
soon as its batch is back (bounded memory for long ``--positions`` files). ``--svg FILE`` also draws
each position (``lc0py.tools.board_svg``).

Output: a table per position, or with ``--json`` one object per line::

    {"fen": ..., "moves": [...], "policy": {"e2e4": 0.0312, ...}, "wdl": [w, d, l], "q": q, "mlh": m}

``policy`` is sorted by probability (all legal moves, or the ``--top`` best); moves are UCI as
python-chess writes them (castling ``e1g1`` in standard chess); ``mlh`` is ``null`` when the net
has no moves-left head.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lc0py.api.evaluation import Evaluation
from lc0py.errors import UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.tools.arguments import (
    JsonTarget,
    add_backend_arguments,
    add_json_arguments,
    add_weights_argument,
    json_target,
)
from lc0py.tools.board_svg import evaluation_svg
from lc0py.tools.positions import PositionSpec, normalise_fen, read_positions_file
from lc0py.tools.progress import progress
from lc0py.tools.weights_choice import resolve_weights

DEFAULT_TOP = 10
#: Positions per backend call: lc0's own batches are at most a few hundred, and the encoded
#: planes of 256 positions are a few MB, so a 5,000-line file no longer becomes one 2 GB batch.
CHUNK = 256


def to_json(spec: PositionSpec, ev: Evaluation, top: int | None = None) -> dict[str, Any]:
    """The ``--json`` object of one position (``policy`` as UCI strings, most likely first)."""
    items = ev.top(top) if top is not None else list(ev.policy.items())
    return {
        "fen": spec.fen,
        "moves": list(spec.moves),
        "policy": {m.uci(): _round(p) for m, p in items},
        "wdl": [_round(x) for x in ev.wdl],
        "q": _round(ev.q),
        "mlh": None if ev.moves_left is None else _round(ev.moves_left),
    }


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_weights_argument(parser, note="default <autodiscover>: the net lc0 would find, else an error")
    parser.add_argument("--fen", metavar="FEN", help="position (default: the start position; 'startpos' ok)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="UCI", help="moves played from --fen")
    parser.add_argument("--positions", metavar="FILE",
                        help="one position per line: 'FEN | move move ...' (moves optional)")
    add_backend_arguments(parser)
    add_json_arguments(parser, "one object per position (JSON lines)")
    parser.add_argument("--svg", metavar="FILE",
                        help="also draw the board with the top moves as arrows and a WDL bar "
                             "(several positions: FILE-1.svg, FILE-2.svg, ...)")
    parser.add_argument("--top", default=None, metavar="N",
                        help=f"show the N most likely moves (default: {DEFAULT_TOP}; --json: all)")


def collect_positions(args: argparse.Namespace) -> list[PositionSpec]:
    """Positions from ``--fen``/``--moves`` or ``--positions`` (not both)."""
    if args.positions is not None:
        if args.fen is not None or args.moves:
            raise UsageError("--positions cannot be combined with --fen/--moves")
        return read_positions_file(args.positions)
    fen = normalise_fen(args.fen) if args.fen is not None else normalise_fen("startpos")
    return [PositionSpec(fen, list(args.moves), "--fen/--moves")]


def format_table(spec: PositionSpec, ev: Evaluation, number: int, top: int) -> str:
    """Human-readable block for one position."""
    lines = [f"Position {number}: {spec.fen}" + (f"  moves: {' '.join(spec.moves)}" if spec.moves else "")]
    w, d, l = ev.wdl
    mlh = f"{ev.moves_left:.1f}" if ev.moves_left is not None else "-"
    lines.append(f"  W {w:6.2%}  D {d:6.2%}  L {l:6.2%}   Q {ev.q:+.4f}   MLH {mlh}")
    if not ev.policy:
        lines.append("  no legal moves")
    else:
        lines.append("  move     policy")
        for move, p in ev.top(top):
            lines.append(f"  {move.uci():<7} {p:7.2%}")
        rest = len(ev.policy) - min(top, len(ev.policy))
        lines.append(f"  ({len(ev.policy)} legal moves" + (f", {rest} not shown)" if rest else ")"))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from lc0py.api.net import open_net

    if args.top is not None:
        try:
            args.top = int(args.top)
        except ValueError:
            raise UsageError(f"--top '{args.top}' is not an integer") from None
        if args.top < 1:
            raise UsageError(f"--top {args.top}: must be at least 1")
    specs = collect_positions(args)
    histories = [spec.history() for spec in specs]  # every position validated before the net loads
    svg_paths = svg_targets(args.svg, len(specs)) if args.svg else []
    target = json_target(args, "eval")
    out = sys.stdout
    lines: list[str] = []
    weights = resolve_weights(args.weights, "eval", speed_tool=False, backend=args.backend)
    with open_net(weights, args.backend, args.backend_opts) as net, \
            progress(len(specs), "eval", unit="pos", enabled=None if len(specs) > 1 else False) as bar:
        # printed as each batch comes back (memory stays bounded); the bar on stderr counts them
        for n, (spec, history, ev) in enumerate(zip(specs, histories, net.iter_evaluate(histories),
                                                    strict=True), start=1):
            line = json.dumps(to_json(spec, ev, args.top))
            if target.file is not None:
                lines.append(line)
            with bar.suspended():
                if target.stdout:
                    out.write(line + "\n")
                else:
                    block = format_table(spec, ev, n, args.top or DEFAULT_TOP)
                    out.write(block + ("\n\n" if n < len(specs) else "\n"))
                out.flush()
            bar.update(1)
            if n <= len(svg_paths):
                svg = svg_paths[n - 1]
                write_atomically(svg, evaluation_svg(history.board, ev), what=f"--svg {svg}")
                print(f"eval: picture written to {svg_paths[n - 1]}", file=sys.stderr)
    if target.file is not None:
        JsonTarget(False, target.file).write("\n".join(lines))
    return 0


def svg_targets(name: str, count: int) -> list[Path]:
    """``--svg FILE``: FILE for one position; ``FILE-1.svg``, ``FILE-2.svg``, ... for several."""
    path = Path(name)
    if not path.parent.is_dir():
        raise UsageError(f"--svg {name}: directory {path.parent} does not exist")
    if count == 1:
        return [path]
    stem = path.name[:-4] if path.name.lower().endswith(".svg") else path.name
    return [path.with_name(f"{stem}-{k}.svg") for k in range(1, count + 1)]


