"""``lc0py bulk-eval``: every position of a FEN/EPD list, a PGN file or a Parquet table, evaluated
into JSONL or Parquet part files, resumably, on every device of the machine or on a Ray cluster.

The job itself is ``lc0py.tools.bulk.job`` (plan, chunks, parts, resume, check; the Python entry
point is ``lc0py.tools.bulk.evaluate_file``); ``--ray`` runs the same chunks as Ray tasks
(``lc0py.tools.bulk.ray_job``). lc0 has no such command; ``eval`` is for a few positions.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import BrokenExecutor
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from lc0py.errors import UsageError
from lc0py.tools.arguments import add_backend_arguments, add_weights_argument

if TYPE_CHECKING:
    from lc0py.tools.bulk.job import JobSummary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "input",
        metavar="INPUT",
        help="positions: FEN/EPD lines ('FEN | uci moves' allowed), .pgn games (every "
        "ply), or .parquet (a 'fen' column, optional 'moves')",
    )
    parser.add_argument(
        "-O",
        "--output",
        required=True,
        metavar="DIR",
        help="output folder: part files, manifest.json, summary.json; a rerun resumes",
    )
    add_weights_argument(parser)
    add_backend_arguments(
        parser,
        note="several GPUs: --backend demux --backend-opts "
        "'(backend=cuda-fp16,gpu=0),(backend=cuda-fp16,gpu=1)'",
    )
    parser.add_argument(
        "--input-format",
        choices=("fen", "pgn", "parquet"),
        default=None,
        help="override the format guessed from the suffix",
    )
    parser.add_argument(
        "--output-format",
        choices=("jsonl", "parquet"),
        default="jsonl",
        help="part files as JSON lines (default) or Parquet (needs pyarrow)",
    )
    parser.add_argument(
        "--top",
        type=int,
        default=10,
        metavar="N",
        help="keep the N most likely legal moves (0: all; default 10)",
    )
    parser.add_argument(
        "--chunk",
        type=int,
        default=0,
        metavar="N",
        help="records per chunk and part file (default: 8192 lines or rows, 256 games)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        metavar="N",
        help="positions per backend call (default: the backend's recommended batch)",
    )
    parser.add_argument(
        "--in-flight",
        type=int,
        default=0,
        metavar="N",
        help="batches in flight per device (default 2); each device is fed by a thread of its own",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="processes reading PGN movetext (python-chess) or Parquet rows (default: PGN CPUs - 1, "
        "at most 24; Parquet none); FEN/EPD take none: the compiled encoder runs on threads",
    )
    parser.add_argument(
        "--writers",
        type=int,
        default=-1,
        metavar="N",
        help="processes formatting and writing the parts (default: none on 2 CPUs, else CPUs/6, at most 8)",
    )
    parser.add_argument(
        "--history-fill",
        default="fen_only",
        choices=("no", "fen_only", "always"),
        help="lc0's HistoryFill for FEN starts (default fen_only)",
    )
    parser.add_argument(
        "--probe-layers",
        default="",
        metavar="L,L",
        help="also record the residual stream after these layers (mean over squares; numpy trace, slow)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: a local cluster (no ADDRESS), 'auto', or ray://host:10001 "
        '(pip install "lc0py[ray]")',
    )
    parser.add_argument(
        "--ray-actors",
        type=int,
        default=0,
        metavar="N",
        help="Ray actors (default: one per GPU of the cluster, else 2 on CPUs)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print where the time went on stderr (read, encode, hand-off, each device, write); "
        "always in summary.json",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def _layers(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--probe-layers '{text}': not a list of layer numbers") from None


def run(args: argparse.Namespace) -> int:
    if args.writers < -1:
        raise UsageError(f"--writers {args.writers}: -1 (automatic), 0 (none) or more")
    for flag in ("top", "chunk", "batch", "in_flight", "workers", "ray_actors"):
        if getattr(args, flag) < 0:
            raise UsageError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: must not be negative")
    common: dict[str, Any] = dict(
        input_format=args.input_format,
        output_format=args.output_format,
        top=args.top,
        chunk_records=args.chunk,
        batch=args.batch,
        history_fill=args.history_fill,
        probe_layers=_layers(args.probe_layers),
    )
    show = False if args.no_progress else None
    try:
        summary = _run(args, common, show)
    except KeyboardInterrupt:
        print(
            f"bulk-eval: interrupted; every finished chunk is kept in {args.output}: run the same "
            "command again to resume",
            file=sys.stderr,
        )
        return 130
    except BrokenExecutor as exc:  # a reader or writer process killed (the OOM killer): resumable
        print(
            f"bulk-eval: a worker process ended ({str(exc).strip() or type(exc).__name__}); every "
            f"finished chunk is kept in {args.output}: run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    if args.profile and summary.profile:
        print_profile(summary.profile, summary.seconds)
    if args.json:
        print(json.dumps(asdict(summary)))
    else:
        state = "complete" if summary.complete else "INCOMPLETE"
        print(
            f"bulk-eval: {summary.positions} positions from {summary.records} records "
            f"({summary.skipped} blank/comment, {summary.bad} bad) in {summary.output}, {state}; "
            f"this run: {summary.chunks_run} of {summary.chunks} chunks, {summary.seconds:.2f} s, "
            f"{summary.positions_per_second:,.0f} positions/s"
        )
    return 0 if summary.complete else 1


def print_profile(profile: dict[str, Any], seconds: float, stream: Any = None) -> None:
    """The run's stage times (``job.StageTimes``) as lines on ``stream`` (stderr)."""
    out = stream or sys.stderr
    warm = profile.get("warmup_s", 0.0)
    print(f"bulk-eval profile ({seconds:.2f} s of job time; warm-up {warm:.2f} s before it):", file=out)
    print(
        f"  readers: read {profile['read_s']:.2f} s + encode {profile['encode_s']:.2f} s "
        "(summed over chunks)",
        file=out,
    )
    if "wait_input_s" in profile:  # the local job's thread (a Ray job has one per actor)
        print(
            f"  job thread: waiting for input {profile['wait_input_s']:.2f} s, for devices "
            f"{profile['wait_devices_s']:.2f} s, blocks {profile['finish_s']:.2f} s, for writers "
            f"{profile['wait_writers_s']:.2f} s",
            file=out,
        )
        print(f"  writers: {profile['write_s']:.2f} s (summed over parts)", file=out)
    for d in profile.get("devices", []):
        print(
            f"  {d['device']}: {d['rows']} rows in {d['batches']} batches "
            f"(<= {d['max_in_flight']} in flight); "
            f"waiting on it {d['wait_s']:.2f} s, starved of input {d['starved_s']:.2f} s, submit "
            f"{d['submit_s']:.2f} s, reduce {d['reduce_s']:.2f} s",
            file=out,
        )
        if d.get("first_batch_at_s", -1) >= 0:  # where the starvation is: start, middle, end
            first, last = d["first_batch_at_s"], d["last_result_at_s"]
            print(
                f"    first batch at {first:.2f} s, last result at {last:.2f} s of {seconds:.2f}; "
                f"starved {first:.2f} s before the first batch, "
                f"{max(0.0, d['starved_s'] - first):.2f} s between batches; "
                f"{d.get('partial_batches', 0)} partial batches",
                file=out,
            )


def _run(args: argparse.Namespace, common: dict[str, Any], show: bool | None) -> JobSummary:
    from lc0py.tools.bulk.job import evaluate_file

    if args.ray is not None:
        from lc0py.tools.bulk.ray_job import evaluate_file_on_ray

        return evaluate_file_on_ray(
            args.input,
            args.output,
            args.weights,
            args.backend,
            args.backend_opts,
            address=None if args.ray == "local" else args.ray,
            actors=args.ray_actors,
            in_flight=args.in_flight,
            **common,
        )
    return evaluate_file(
        args.input,
        args.output,
        args.weights,
        args.backend,
        args.backend_opts,
        in_flight=args.in_flight,
        workers=args.workers,
        writers=args.writers,
        show_progress=show,
        **common,
    )
