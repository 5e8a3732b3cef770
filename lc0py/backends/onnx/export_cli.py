"""``lc0py export-onnx``: write a network as an ONNX model with lc0's tensor names.

    lc0py export-onnx --weights net.pb.gz -o net.onnx [--fp16] [--batch-size N|dynamic]
                      [--opset N] [--attention plain|contrib] [--policy-head H] [--value-head H]

The file is written by ``lc0py.storage.atomic.write_atomically`` (a ``mkstemp`` file in the target
directory, then ``os.replace``), so a failure at any point - unreadable weights, an unsupported
net, a full disk, an unwritable directory - leaves no partial model behind; a directory, device,
symlink (without ``--force``) or the input file itself is refused as the output.
Errors are one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lc0py.errors import UsageError
from lc0py.storage.atomic import check_target, write_atomically

ATTENTION_CHOICES = ("plain", "contrib")


def _batch_size(text: str) -> int | None:
    if text.strip().lower() == "dynamic":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer or 'dynamic'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer or 'dynamic'")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", "--input", required=True, metavar="FILE",
                        help="lc0 network file (.pb.gz); <random>: the built-in random-weight T82; "
                             "<autodiscover>: the net lc0 finds in its folders; --input is lc0 "
                             "leela2onnx's name")
    parser.add_argument("--output", "-o", required=True, metavar="FILE", help="ONNX model to write")
    parser.add_argument("--force", action="store_true",
                        help="write through a symbolic link at --output (refused by default)")
    parser.add_argument(
        "--fp16",
        action="store_true",
        help="float16 weights, activations, input and outputs (as lc0's converter's f16)",
    )
    parser.add_argument(
        "--batch-size",
        type=_batch_size,
        default=None,
        metavar="N|dynamic",
        help="fixed batch dimension (default: dynamic, named 'batch')",
    )
    parser.add_argument("--opset", type=int, default=17, metavar="N", help="ONNX opset (>= 17; default 17)")
    parser.add_argument(
        "--attention",
        choices=ATTENTION_CHOICES,
        default=None,
        help="plain ONNX ops (any runtime) or ONNX Runtime's com.microsoft.Attention (default: plain)",
    )
    parser.add_argument("--policy-head", default="vanilla", help="policy head of a multi-head net")
    parser.add_argument("--value-head", default="winner", help="value head of a multi-head net")


def _weights(value: str) -> str:
    """``--weights`` under lc0py's one rule (``lc0py --help``): a file, ``<random>`` or
    ``<autodiscover>`` (exporting needs a net: nothing found is an error)."""
    text = value.strip()
    if text == "<random>":
        from lc0py.backends.registry import default_weights

        return str(default_weights())  # announced on stderr: random weights
    if text == "<autodiscover>":
        from lc0py.weights.discover import discover_weights_file, search_directories

        found = discover_weights_file()
        if found is None:
            raise UsageError(f"export-onnx: no network found in lc0's folders "
                             f"({', '.join(search_directories())}); give --weights FILE")
        return found
    return value


def run(args: argparse.Namespace) -> int:
    from lc0py.weights import load_network

    args.weights = _weights(args.weights)
    output = Path(args.output)
    label = f"-o '{output}'"
    # before the (slow) load and export: a directory, device, symlink or the input itself is refused
    check_target(output, what=label, force=args.force, inputs=[args.weights])
    if args.opset < 17:
        raise UsageError(f"--opset {args.opset}: LayerNormalization needs opset 17 or later")
    # Import before the (slow) load so a missing onnx package is reported first.
    from lc0py.backends.onnx.export import DEFAULT_ATTENTION, body_label, network_to_onnx, output_names

    network = load_network(args.weights, policy_head=args.policy_head, value_head=args.value_head)
    attention = args.attention or DEFAULT_ATTENTION
    try:
        model = network_to_onnx(
            network, fp16=args.fp16, batch_size=args.batch_size, opset=args.opset, attention=attention
        )
    except ValueError as exc:
        raise UsageError(f"export-onnx: {exc}") from None
    data = model.SerializeToString()
    write_atomically(output, data, what=label, force=args.force, inputs=[args.weights])
    batch = "dynamic batch" if args.batch_size is None else f"batch {args.batch_size}"
    body = body_label(network, attention)
    print(
        f"wrote {output} ({len(data) / 1e6:.1f} MB; {'float16' if args.fp16 else 'float32'}, {batch}, "
        f"opset {args.opset}, {body}; input /input/planes, outputs "
        f"{', '.join(output_names(model))})",
        file=sys.stdout,
    )
    return 0
