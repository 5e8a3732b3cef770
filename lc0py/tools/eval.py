"""``lc0py eval``: the network's opinion of positions (policy over legal moves, WDL, Q, moves-left).

For every position the raw policy logits of the legal moves only are turned into probabilities
with a softmax at temperature 1 (lc0's search uses ``PolicyTemperature`` instead; this shows the
network itself). All positions go to the backend in one batch.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.errors import UsageError
from lc0py.tools.positions import PositionSpec, normalise_fen, read_positions_file

DEFAULT_TOP = 10


@dataclass
class Evaluation:
    """One evaluated position: legal-move policy (probability, descending), WDL, Q, moves-left."""

    fen: str
    moves: list[str]
    policy: list[tuple[str, float]]
    wdl: tuple[float, float, float]
    mlh: float | None

    @property
    def q(self) -> float:
        return self.wdl[0] - self.wdl[2]

    def to_json(self, top: int | None = None) -> dict[str, Any]:
        items = self.policy if top is None else self.policy[:top]
        return {
            "fen": self.fen,
            "moves": self.moves,
            "policy": {m: _round(p) for m, p in items},
            "wdl": [_round(x) for x in self.wdl],
            "q": _round(self.q),
            "mlh": None if self.mlh is None else _round(self.mlh),
        }


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", required=True, metavar="FILE", help="network file (.pb.gz)")
    parser.add_argument("--fen", metavar="FEN", help="position (default: the start position; 'startpos' ok)")
    parser.add_argument("--moves", nargs="*", default=[], metavar="UCI", help="moves played from --fen")
    parser.add_argument(
        "--positions", metavar="FILE", help="one position per line: 'FEN | move move ...' (moves optional)"
    )
    parser.add_argument("--backend", "-b", default="auto", help="backend name (default: auto)")
    parser.add_argument("--backend-opts", "-o", default="", metavar="OPTS", help="e.g. precision=fp64")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--top",
        default=None,
        metavar="N",
        help=f"show the N most likely moves (default: {DEFAULT_TOP}; --json: all)",
    )


def collect_positions(args: argparse.Namespace) -> list[PositionSpec]:
    """Positions from ``--fen``/``--moves`` or ``--positions`` (not both)."""
    if args.positions is not None:
        if args.fen is not None or args.moves:
            raise UsageError("--positions cannot be combined with --fen/--moves")
        return read_positions_file(args.positions)
    fen = normalise_fen(args.fen) if args.fen is not None else normalise_fen("startpos")
    return [PositionSpec(fen, list(args.moves), "--fen/--moves")]


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits.astype(np.float64) - logits.max())
    return z / z.sum()


def evaluate_positions(backend: Any, specs: list[PositionSpec]) -> list[Evaluation]:
    """Encode ``specs`` for ``backend``'s input format, evaluate them in one batch, summarise."""
    from lc0py.chess import encode_batch, legal_moves_with_indices

    histories = [spec.history() for spec in specs]
    encoded = [h.encode(backend.info.input_format) for h in histories]
    out = backend.evaluate(encode_batch(encoded))
    results = []
    for i, (spec, hist, enc) in enumerate(zip(specs, histories, encoded, strict=True)):
        moves, indices = legal_moves_with_indices(hist.board, enc.transform)
        policy: list[tuple[str, float]] = []
        if moves:
            probs = _softmax(out.policy[i, indices])
            order = np.argsort(-probs, kind="stable")
            policy = [(moves[j].uci(), float(probs[j])) for j in order]
        wdl = tuple(float(x) for x in out.wdl[i])
        mlh = float(out.moves_left[i]) if backend.info.has_moves_left else None
        results.append(Evaluation(spec.fen, list(spec.moves), policy, wdl, mlh))  # type: ignore[arg-type]
    return results


def format_table(ev: Evaluation, number: int, top: int) -> str:
    """Human-readable block for one position."""
    lines = [f"Position {number}: {ev.fen}" + (f"  moves: {' '.join(ev.moves)}" if ev.moves else "")]
    w, d, l = ev.wdl
    mlh = f"{ev.mlh:.1f}" if ev.mlh is not None else "-"
    lines.append(f"  W {w:6.2%}  D {d:6.2%}  L {l:6.2%}   Q {ev.q:+.4f}   MLH {mlh}")
    if not ev.policy:
        lines.append("  no legal moves")
    else:
        lines.append("  move     policy")
        for move, p in ev.policy[:top]:
            lines.append(f"  {move:<7} {p:7.2%}")
        rest = len(ev.policy) - min(top, len(ev.policy))
        lines.append(f"  ({len(ev.policy)} legal moves" + (f", {rest} not shown)" if rest else ")"))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from lc0py.backends.registry import create_backend

    if args.top is not None:
        try:
            args.top = int(args.top)
        except ValueError:
            raise UsageError(f"--top '{args.top}' is not an integer") from None
        if args.top < 1:
            raise UsageError(f"--top {args.top}: must be at least 1")
    specs = collect_positions(args)
    for spec in specs:  # validate every position before loading the network
        spec.history()
    weights = Path(args.weights)
    if not weights.is_file():
        raise UsageError(f"--weights {weights}: no such file")
    backend = create_backend(args.backend, weights, args.backend_opts)
    try:
        results = evaluate_positions(backend, specs)
    finally:
        backend.close()
    out = sys.stdout
    for n, ev in enumerate(results, start=1):
        if args.json:
            out.write(json.dumps(ev.to_json(args.top)) + "\n")
        else:
            out.write(format_table(ev, n, args.top or DEFAULT_TOP) + ("\n\n" if n < len(results) else "\n"))
    out.flush()
    return 0
