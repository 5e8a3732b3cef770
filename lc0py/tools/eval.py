"""``lc0py eval``: the network's opinion of positions (policy over legal moves, WDL, Q, moves-left).

For every position the raw policy logits of the legal moves only are turned into probabilities
with a softmax at temperature 1 (lc0's search uses ``PolicyTemperature`` instead; this shows the
network itself). The work is done by the public API (``lc0py.load(...).iter_evaluate``), which
sends the positions to the backend in batches of its recommended size; each result is printed as
soon as its batch is back (bounded memory for long ``--positions`` files). Positions are read,
replayed and encoded by the compiled reader (``lc0py.api.records``, python-chess's numbers bit
for bit); python-chess reads only what that reader leaves to it (and gives every error message).
``--svg FILE`` also draws each position (``lc0py.tools.board_svg``).

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
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from lc0py.api.records import Item

DEFAULT_TOP = 10
#: Positions per backend call: lc0's own batches are at most a few hundred, and the encoded
#: planes of 256 positions are a few MB, so a 5,000-line file no longer becomes one 2 GB batch.
CHUNK = 256


def to_json(spec: PositionSpec, ev: Evaluation, top: int | None = None) -> dict[str, Any]:
    """The ``--json`` object of one position (``policy`` as UCI strings, most likely first)."""
    policy = [(m.uci(), p) for m, p in ev.policy.items()]
    return json_object(spec, policy, ev.wdl, ev.moves_left, top)


def json_object(
    spec: PositionSpec,
    policy: list[tuple[str, float]],
    wdl: tuple[float, float, float],
    moves_left: float | None,
    top: int | None = None,
) -> dict[str, Any]:
    """:func:`to_json` from a policy already as ``(uci, probability)``, most likely first."""
    items = policy[:top] if top is not None else policy
    w, d, l = wdl
    return {
        "fen": spec.fen,
        "moves": list(spec.moves),
        "policy": {m: _round(p) for m, p in items},
        "wdl": [_round(w), _round(d), _round(l)],
        "q": _round(w - l),
        "mlh": None if moves_left is None else _round(moves_left),
    }


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def json_line(
    spec: PositionSpec,
    policy: list[tuple[str, float]],
    wdl: tuple[float, float, float],
    moves_left: float | None,
    top: int | None = None,
) -> str:
    """``json.dumps(json_object(...))``, the same text, written directly (the line of every
    position of a long ``--positions`` file: ``json.dumps`` of a dict built for it was most
    of ``eval``'s time)."""
    items = policy[:top] if top is not None else policy
    if items and 0.0 < items[-1][1] and items[0][1] < 0.9999995:
        # probabilities in (0, 1) rounded short of 1: ``g`` writes them as ``repr`` would
        moves = ", ".join([f'"{m}": {p:.6g}' for m, p in items])
    else:  # 0 or 1 (a single legal move): "0.0", "1.0"
        moves = ", ".join([f'"{m}": {json_number(p)}' for m, p in items])
    w, d, l = wdl
    mlh = "null" if moves_left is None else json_number(moves_left)
    return (f'{{"fen": {json.dumps(spec.fen)}, "moves": {json.dumps(list(spec.moves))}, '
            f'"policy": {{{moves}}}, "wdl": [{json_number(w)}, {json_number(d)}, {json_number(l)}], '
            f'"q": {json_number(w - l)}, "mlh": {mlh}}}')


def json_number(x: float) -> str:
    """``json.dumps(_round(x))`` without the round trip: Python's ``repr`` of a float read from
    6 significant digits is those digits (``g`` and ``repr`` switch to exponents below 1e-4
    alike), with ``.0`` after an integer; from 1e16 up (exponents differ) the round trip."""
    text = f"{x:.6g}"
    if "e+" in text or not text[-1].isdigit():  # large, nan, inf
        return json.dumps(_round(x))
    return text if "." in text or "e" in text else text + ".0"


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


def checked_items(specs: list[PositionSpec]) -> list[Item]:
    """Every position as a compiled record (``lc0py.api.records``), or, where the compiled reader
    refuses it or leaves it to python-chess, as python-chess's history: a bad position raises
    python-chess's ``PositionError`` naming its line, the first bad one in file order."""
    from lc0py.api.records import Item, check_records, text_record

    records = [text_record(spec.fen, spec.moves) for spec in specs]
    # lc0's classical format: the parser's verdict does not depend on the format
    status = check_records([r for r in records if r is not None], input_format=1)
    verdict = iter(status.tolist())
    items = []
    for spec, record in zip(specs, records, strict=True):
        if record is not None and next(verdict) == 0:
            items.append(Item(record=record))
        else:
            items.append(Item(history=spec.history()))
    return items


def run(args: argparse.Namespace) -> int:
    from lc0py.api.net import open_net
    from lc0py.api.records import BatchResult

    if args.top is not None:
        try:
            args.top = int(args.top)
        except ValueError:
            raise UsageError(f"--top '{args.top}' is not an integer") from None
        if args.top < 1:
            raise UsageError(f"--top {args.top}: must be at least 1")
    specs = collect_positions(args)
    items = checked_items(specs)  # every position validated before the net loads
    svg_paths = svg_targets(args.svg, len(specs)) if args.svg else []
    target = json_target(args, "eval")
    out = sys.stdout
    lines: list[str] = []
    weights = resolve_weights(args.weights, "eval", speed_tool=False, backend=args.backend)
    with open_net(weights, args.backend, args.backend_opts) as net, \
            progress(len(specs), "eval", unit="pos", enabled=None if len(specs) > 1 else False) as bar:
        # printed as each batch comes back (memory stays bounded); the bar on stderr counts them
        size = int(net.backend.info.recommended_batch or 256)  # Net.iter_evaluate's batches
        fmt = net.backend.info.input_format
        for start in range(0, len(items), size):
            result = BatchResult(items[start:start + size], net.backend, 1.0, fmt)
            texts = []
            for i in range(len(result)):
                n = start + i + 1
                spec = specs[n - 1]
                if target.stdout or target.file is not None:
                    line = json_line(spec, result.uci_policy(i), result.wdl(i), result.moves_left(i),
                                     args.top)
                    if target.file is not None:
                        lines.append(line)
                if target.stdout:
                    texts.append(line + "\n")
                else:
                    block = format_table(spec, result.evaluation(i), n, args.top or DEFAULT_TOP)
                    texts.append(block + ("\n\n" if n < len(specs) else "\n"))
            with bar.suspended():  # a batch at a time, as it comes back
                out.write("".join(texts))
                out.flush()
            bar.update(len(result))
            for i in range(len(result)):
                n = start + i + 1
                if n <= len(svg_paths):
                    svg = svg_paths[n - 1]
                    board = specs[n - 1].history().board
                    write_atomically(svg, evaluation_svg(board, result.evaluation(i)), what=f"--svg {svg}")
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


