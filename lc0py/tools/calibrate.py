"""``lc0py calibrate NET``: FP8 calibration of a residual net for ``cuda-fp8``.

Runs the float32 reference over ``--positions`` random legal positions (``verify``'s generator),
computes GPTQ codes for every tower convolution (``backends.gpu.fp8_calibration``) and stores them
in the lc0py cache under the digest of the net's tower weights, where ``cuda-fp8`` finds them for
this net, whatever its path. Without a calibration ``cuda-fp8`` still runs (round-to-nearest
weights, less accurate: docs/fp8.md). CPU only, no device needed; about a minute for a Maia net.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from lc0py.errors import UsageError
from lc0py.tools.arguments import add_json_arguments, add_weights_argument, int_value, json_target
from lc0py.tools.weights_choice import resolve_weights

DEFAULT_POSITIONS = 256
SEED = 1  # the calibration positions' seed (verify and the accuracy scripts use others)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("net", nargs="?", default=None, metavar="NET.pb.gz",
                        help="the network file (the same as --weights NET.pb.gz)")
    add_weights_argument(parser)
    parser.add_argument("--positions", default=DEFAULT_POSITIONS,
                        help=f"random legal positions to calibrate on (default {DEFAULT_POSITIONS})")
    add_json_arguments(parser, "the net, the cache entry written, positions, convolutions, seconds")


def run(args: argparse.Namespace) -> int:
    from lc0py.backends.gpu.fp8_calibration import calibrate, store_calibration
    from lc0py.tools.verify import random_games_batch
    from lc0py.weights import load_network
    from lc0py.weights.residual import ResidualNetwork

    if args.net is not None and args.weights is not None and args.net != args.weights:
        raise UsageError(f"calibrate: two networks given ({args.net} and --weights {args.weights}): "
                         "give one")
    path = resolve_weights(args.net or args.weights, "calibrate", speed_tool=False)
    if path is None:  # pragma: no cover - resolve_weights refuses first
        raise UsageError("calibrate: no network")
    network = load_network(path)
    if not isinstance(network, ResidualNetwork):
        raise UsageError(f"calibrate: {path} has an {network.body} body; FP8 calibration is for "
                         "residual nets")
    target = json_target(args, "calibrate")
    positions = int_value("--positions", args.positions, 16, 100_000)
    assert positions is not None
    t0 = time.perf_counter()
    batch = random_games_batch(positions, int(network.format.input), SEED)
    cal = calibrate(network, batch.dense(np.float32))
    where = store_calibration(cal)
    if where is None:
        raise UsageError("calibrate: the lc0py cache is off or not writable (LC0PY_CACHE_DIR); "
                         "nothing written")
    seconds = time.perf_counter() - t0
    if not target.stdout:
        print(f"calibrate: {path}: {len(cal.weights)} tower convolutions, {cal.positions} positions, "
              f"{seconds:.0f} s -> {where}", file=sys.stdout)
    if target.stdout or target.file is not None:
        target.write(json.dumps({"file": str(path), "entry": str(where), "digest": cal.digest,
                                 "positions": cal.positions, "convolutions": len(cal.weights),
                                 "seconds": round(seconds, 1)}, indent=1))
    return 0
