"""``lc0py export-onnx``: write a network as an ONNX model with lc0's tensor names.

    lc0py export-onnx --weights net.pb.gz -o net.onnx [--fp16] [--batch-size N|dynamic]
                      [--opset N] [--attention plain|contrib] [--policy-head H] [--value-head H]

The file is written atomically (a temporary file in the target directory, then ``os.replace``),
so a failure at any point - unreadable weights, an unsupported net, a full disk, an unwritable
directory - leaves no partial model behind. Errors are one line on stderr with exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from lc0py.errors import UsageError

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
    parser.add_argument("--weights", "-w", required=True, metavar="FILE", help="lc0 network file (.pb.gz)")
    parser.add_argument("--output", "-o", required=True, metavar="FILE", help="ONNX model to write")
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


def write_atomically(data: bytes, path: Path) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory.

    Raises ``UsageError`` (one line) when the directory is missing or not writable; the
    temporary file is removed on every failure.
    """
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"-o '{path}': is a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UsageError(f"-o '{path}': cannot write there ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"-o '{path}': writing failed ({exc.strerror or exc})") from None
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def run(args: argparse.Namespace) -> int:
    from lc0py.weights import load_network

    output = Path(args.output)
    if output.is_dir():
        raise UsageError(f"-o '{output}': is a directory")
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():  # say so before the (slow) load and export
        raise UsageError(f"-o '{output}': cannot write there (no directory '{parent}')")
    if args.opset < 17:
        raise UsageError(f"--opset {args.opset}: LayerNormalization needs opset 17 or later")
    # Import before the (slow) load so a missing onnx package is reported first.
    from lc0py.backends.onnx.export import DEFAULT_ATTENTION, network_to_onnx, output_names
    from lc0py.weights.residual import ResidualNetwork

    network = load_network(args.weights, policy_head=args.policy_head, value_head=args.value_head)
    attention = args.attention or DEFAULT_ATTENTION
    try:
        model = network_to_onnx(
            network, fp16=args.fp16, batch_size=args.batch_size, opset=args.opset, attention=attention
        )
    except ValueError as exc:
        raise UsageError(f"export-onnx: {exc}") from None
    data = model.SerializeToString()
    write_atomically(data, output)
    batch = "dynamic batch" if args.batch_size is None else f"batch {args.batch_size}"
    body = "residual body" if isinstance(network, ResidualNetwork) else f"attention {attention}"
    print(
        f"wrote {output} ({len(data) / 1e6:.1f} MB; {'float16' if args.fp16 else 'float32'}, {batch}, "
        f"opset {args.opset}, {body}; input /input/planes, outputs "
        f"{', '.join(output_names(model))})",
        file=sys.stdout,
    )
    return 0
