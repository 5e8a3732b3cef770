"""``lc0py make-net``: write a deterministic random-weight network that lc0 itself can load.

Why: tests, benchmarks and backend bring-up need networks of exact shapes (T82 and its 12/8/6-head
variants, tiny nets) without downloading anything. The same preset, settings and seed always give
the same file bytes, so a generated file can be committed and checked by SHA-256.

Example::

    lc0py make-net --preset t82-h12 --layers 2 --seed 3 --encoding float16 -o t82h12-2l.pb.gz
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

from lc0py.errors import UsageError
from lc0py.weights.decode import ENCODING_NAMES
from lc0py.weights.presets import ACTIVATIONS, EMBEDDINGS, PRESETS, preset_config, random_network
from lc0py.weights.writer import serialize_network, write_atomically


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset",
        default="tiny",
        metavar="NAME",
        help=f"network shape: {', '.join(PRESETS)} (default: tiny)",
    )
    parser.add_argument(
        "--encoding",
        default="linear16",
        metavar="ENC",
        help=f"layer encoding: {', '.join(ENCODING_NAMES)} (default: linear16, loads in lc0 "
        ">= 0.30; the others need lc0 >= 0.33)",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default: 0)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="output file (.pb.gz)")
    shape = parser.add_argument_group("shape overrides (default: the preset's)")
    shape.add_argument("--embedding", metavar="KIND", help=f"input embedding: {', '.join(EMBEDDINGS)}")
    shape.add_argument(
        "--heads", type=int, metavar="N", help="attention heads (must divide the embedding size)"
    )
    shape.add_argument("--layers", type=int, metavar="N", help="encoder layers")
    shape.add_argument("--embedding-size", type=int, metavar="N", help="embedding size E (= attention width)")
    shape.add_argument("--ffn-size", type=int, metavar="N", help="encoder FFN hidden size")
    shape.add_argument(
        "--dense-embedding-size",
        type=int,
        metavar="N",
        help="PE_DENSE per-square size dE (ip_emb_preproc outputs 64*dE)",
    )
    shape.add_argument("--embedding-ffn-size", type=int, metavar="N", help="PE_DENSE embedding FFN size Fe")
    shape.add_argument("--no-smolgen", action="store_true", help="no smolgen attention bias")
    shape.add_argument("--no-moves-left", action="store_true", help="no moves-left head")
    shape.add_argument("--no-gating", action="store_true", help="no input gating")
    shape.add_argument(
        "--multihead",
        action="store_true",
        help="network format 7 with policy heads vanilla+optimistic and value heads winner+q",
    )
    shape.add_argument("--classical-value", action="store_true", help="tanh value head instead of WDL")
    shape.add_argument(
        "--input-format",
        type=int,
        metavar="N",
        help="NetworkFormat.input (1, 2, 3, 4, 5, 132, 133; default 4)",
    )
    shape.add_argument("--default-activation", metavar="ACT", help="relu or mish")
    shape.add_argument("--ffn-activation", metavar="ACT", help=f"one of {', '.join(ACTIVATIONS)}")
    shape.add_argument("--smolgen-activation", metavar="ACT", help=f"one of {', '.join(ACTIVATIONS)}")
    parser.add_argument("--no-gzip", action="store_true", help="write the plain protobuf (lc0 loads it too)")


def overrides_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The ``random_network`` overrides the command line asks for (unset flags omitted)."""
    out: dict[str, object] = {
        "embedding": args.embedding,
        "heads": args.heads,
        "layers": args.layers,
        "embedding_size": args.embedding_size,
        "ffn_size": args.ffn_size,
        "dense_embedding_size": args.dense_embedding_size,
        "embedding_ffn_size": args.embedding_ffn_size,
        "input_format": args.input_format,
        "default_activation": args.default_activation,
        "ffn_activation": args.ffn_activation,
        "smolgen_activation": args.smolgen_activation,
    }
    if args.no_smolgen:
        out["smolgen"] = False
    if args.no_moves_left:
        out["moves_left"] = False
    if args.no_gating:
        out["gating"] = False
    if args.multihead:
        out["multihead"] = True
    if args.classical_value:
        out["wdl"] = False
    return {k: v for k, v in out.items() if v is not None}


def _check_output(path: str) -> None:
    """Fail before generating (a T82 takes seconds) when the output cannot be written."""
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise UsageError(f"cannot write {path}: directory {directory} is not writable")


def run(args: argparse.Namespace) -> int:
    if args.encoding.lower() not in ENCODING_NAMES:
        raise UsageError(f"encoding '{args.encoding}': unknown (available: {', '.join(ENCODING_NAMES)})")
    overrides = overrides_from_args(args)
    config = preset_config(args.preset, **overrides)  # validates before any work
    _check_output(args.output)
    network = random_network(args.preset, seed=args.seed, **overrides)
    data = serialize_network(network, args.encoding.lower(), gzip_output=not args.no_gzip)
    write_atomically(args.output, data)
    digest = hashlib.sha256(data).hexdigest()
    print(
        f"wrote {args.output}: preset {args.preset}, seed {args.seed}, {args.encoding.lower()}, "
        f"E={config.embedding_size} L={config.layers} H={config.heads} {config.embedding}, "
        f"{network.parameter_count()} parameters, {len(data)} bytes, sha256 {digest}",
        file=sys.stdout,
    )
    return 0
