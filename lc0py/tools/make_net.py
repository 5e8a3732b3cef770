"""``lc0py make-net``: write a deterministic random-weight network that lc0 itself can load.

Why: tests, benchmarks and backend bring-up need networks of exact shapes (T82 and its 12/8/6-head
variants, tiny nets) without downloading anything. The same preset, settings and seed always give
the same file bytes, so a generated file can be committed and checked by SHA-256.

Example::

    lc0py make-net --preset t82-h12 --layers 2 --seed 3 --encoding float16 -o t82h12-2l.pb.gz
    lc0py make-net --preset res-20x256 --blocks 10 --policy classical -o res10.pb.gz
"""

from __future__ import annotations

import argparse
import hashlib
import sys

from lc0py.errors import UsageError
from lc0py.storage.atomic import check_target, write_atomically
from lc0py.tools.arguments import int_value
from lc0py.weights.decode import ENCODING_NAMES
from lc0py.weights.loader import ENV_MAX_NET_BYTES, max_net_bytes
from lc0py.weights.presets import (
    ACTIVATIONS,
    EMBEDDINGS,
    PRESETS,
    RESIDUAL_POLICIES,
    Preset,
    ResidualPreset,
    preset_config,
    random_network,
)
from lc0py.weights.writer import serialize_network


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", default="tiny", metavar="NAME",
                        help=f"network shape: {', '.join(PRESETS)} (default: tiny)")
    parser.add_argument("--encoding", default="linear16", metavar="ENC",
                        help=f"layer encoding: {', '.join(ENCODING_NAMES)} (default: linear16, loads in lc0 "
                             ">= 0.30; the others need lc0 >= 0.33)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default: 0)")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="output file (.pb.gz)")
    parser.add_argument("--force", action="store_true",
                        help="write through a symbolic link at --output (refused by default)")
    shape = parser.add_argument_group("shape overrides (default: the preset's)")
    shape.add_argument("--embedding", metavar="KIND", help=f"input embedding: {', '.join(EMBEDDINGS)}")
    shape.add_argument("--heads", type=int, metavar="N",
                       help="attention heads (must divide the embedding size)")
    shape.add_argument("--layers", type=int, metavar="N", help="encoder layers")
    shape.add_argument("--embedding-size", type=int, metavar="N", help="embedding size E (= attention width)")
    shape.add_argument("--ffn-size", type=int, metavar="N", help="encoder FFN hidden size")
    shape.add_argument("--dense-embedding-size", type=int, metavar="N",
                       help="PE_DENSE per-square size dE (ip_emb_preproc outputs 64*dE)")
    shape.add_argument("--embedding-ffn-size", type=int, metavar="N", help="PE_DENSE embedding FFN size Fe")
    shape.add_argument("--no-smolgen", action="store_true", help="no smolgen attention bias")
    shape.add_argument("--no-moves-left", action="store_true", help="no moves-left head")
    shape.add_argument("--no-gating", action="store_true", help="no input gating")
    shape.add_argument("--multihead", action="store_true",
                       help="network format 7 with policy heads vanilla+optimistic and value heads winner+q")
    shape.add_argument("--classical-value", action="store_true", help="tanh value head instead of WDL")
    shape.add_argument("--input-format", type=int, metavar="N",
                       help="NetworkFormat.input (1, 2, 3, 4, 5, 132, 133; default 4)")
    shape.add_argument("--default-activation", metavar="ACT", help="relu or mish")
    shape.add_argument("--ffn-activation", metavar="ACT", help=f"one of {', '.join(ACTIVATIONS)}")
    shape.add_argument("--smolgen-activation", metavar="ACT", help=f"one of {', '.join(ACTIVATIONS)}")
    res = parser.add_argument_group("residual presets (res-tiny, res-20x256, t78)")
    res.add_argument("--blocks", type=int, metavar="N", help="residual blocks")
    res.add_argument("--filters", type=int, metavar="N", help="residual tower width C")
    res.add_argument("--no-se", action="store_true", help="no squeeze-and-excitation units")
    res.add_argument("--policy", metavar="KIND", help=f"policy head: {', '.join(RESIDUAL_POLICIES)}")
    parser.add_argument("--no-gzip", action="store_true", help="write the plain protobuf (lc0 loads it too)")


#: Bounds of make-net's integer flags (one table, checked by ``overrides_from_args``): generous
#: for any real shape (T82: E 768, Fd 1024, 15 layers, 24 heads), small enough that a typo fails
#: here with one line instead of asking numpy for terabytes. The total size is bounded too:
#: ``check_size`` refuses a net the loader would refuse (``LC0PY_MAX_NET_BYTES``).
FLAG_LIMITS: dict[str, tuple[str, int, int]] = {
    "seed": ("--seed", 0, 2**63 - 1),
    "heads": ("--heads", 1, 1024),
    "layers": ("--layers", 1, 1024),
    "embedding_size": ("--embedding-size", 1, 16384),
    "ffn_size": ("--ffn-size", 1, 65536),
    "dense_embedding_size": ("--dense-embedding-size", 1, 16384),
    "embedding_ffn_size": ("--embedding-ffn-size", 1, 65536),
    "input_format": ("--input-format", 0, 255),
    "blocks": ("--blocks", 1, 1024),
    "filters": ("--filters", 1, 4096),
}


def check_size(config: Preset | ResidualPreset, encoding: str) -> None:
    """Refuse (one line) a net larger than the loader accepts, before spending memory on it."""
    per_value = 4 if encoding == "float32" else 2
    size = config.estimated_parameters() * per_value
    limit = max_net_bytes()
    if size > limit:
        raise UsageError(f"this net would be at least {size / 2**30:.1f} GiB ({encoding}), more than the "
                         f"{limit / 2**30:.1f} GiB a network may have (set {ENV_MAX_NET_BYTES} to raise it)")


def overrides_from_args(args: argparse.Namespace) -> dict[str, object]:
    """The ``random_network`` overrides the command line asks for (unset flags omitted); integer
    flags are checked against ``FLAG_LIMITS``."""
    for name, (flag, lo, hi) in FLAG_LIMITS.items():
        int_value(flag, getattr(args, name, None), lo, hi)
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
        "blocks": args.blocks,
        "filters": args.filters,
        "policy": args.policy,
    }
    if args.no_se:
        out["se"] = False
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


def run(args: argparse.Namespace) -> int:
    if args.encoding.lower() not in ENCODING_NAMES:
        raise UsageError(f"encoding '{args.encoding}': unknown (available: {', '.join(ENCODING_NAMES)})")
    overrides = overrides_from_args(args)
    config = preset_config(args.preset, **overrides)  # validates before any work
    check_size(config, args.encoding.lower())
    check_target(args.output, what=f"-o {args.output}", force=args.force)  # before generating
    network = random_network(args.preset, seed=args.seed, **overrides)
    data = serialize_network(network, args.encoding.lower(), gzip_output=not args.no_gzip)
    write_atomically(args.output, data, what=f"-o {args.output}", force=args.force)
    digest = hashlib.sha256(data).hexdigest()
    shape = config.summary()
    print(
        f"wrote {args.output}: preset {args.preset}, seed {args.seed}, {args.encoding.lower()}, {shape}, "
        f"{network.parameter_count()} parameters, {len(data)} bytes, sha256 {digest}",
        file=sys.stdout,
    )
    return 0
