"""``lc0py verify``: a backend against the numpy float64 reference, on fresh random positions.

For the GPU backends both attention paths are run on the same positions -- the fused flash
kernel and the GEMM+softmax fallback -- and each layer's attention output ``O`` is compared too,
so a wrong kernel is located, not just detected. Residual (SE-ResNet) nets have no attention:
the GPU path runs once ("gpu") and the input convolution's and every residual block's output are
compared instead. Other backends (numpy, onnx-cpu, ...) are
compared on their outputs only ("backend vs reference").

Errors per output: max and mean absolute error, and the relative norm error
``||out - ref|| / ||ref||`` (``lc0py.backends.accuracy``). PASS when every relative error is
<= 1e-4 (fp32 backends) or <= 1e-2 (fp16 backends) and, for the GPU backends, every flash row is
within twice the same-dtype fallback's error plus the dtype's eps (flash-attention's rule);
exit status 1 on FAIL. NaN/inf anywhere is a FAIL. The FP8 path (``cuda-fp8``, ``precision=fp8``) is
held to its own arithmetic instead: the numpy emulation of FP8 (``fp8_emulation.py``) runs on the
same positions ("fp8-emu" rows) and each output must be within twice its error + 1e-2, every
other row within 1 (``accuracy.fp8_tolerance``, ``RTOL_FP8``: only garbage or NaN fails it).

Examples::

    lc0py verify --weights t82.pb.gz --backend cuda-fp16 --batch 16
    lc0py verify --preset t82-h6 --layers 2 --backend cuda        # generated net, no file
    lc0py verify --preset res-20x256 --layers 4 --backend cuda    # residual: --layers = blocks
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.backends.accuracy import RTOL_FP8, error_stats, flash_tolerance, fp8_tolerance, tolerance
from lc0py.backends.base import PlanesBatch
from lc0py.tools.arguments import add_backend_arguments, add_weights_argument, int_value
from lc0py.weights.network import BodyKind, Network
from lc0py.weights.residual import ResidualNetwork

FP16_BACKENDS = {"cuda-fp16", "rocm-fp16", "gpu"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    add_weights_argument(src)
    src.add_argument(
        "--preset", metavar="NAME", help="generate a random net of this preset instead (t82, tiny, ...)"
    )
    parser.add_argument(
        "--layers", type=int, default=None, metavar="N",
        help="with --preset: encoder layers (residual presets: residual blocks)",
    )
    add_backend_arguments(parser, note="the backend to check")
    parser.add_argument("--batch", type=int, default=8, metavar="N", help="positions (default 8)")
    parser.add_argument("--seed", type=int, default=None, metavar="S", help="random seed (default: fresh)")
    parser.add_argument(
        "--planes",
        choices=("games", "random"),
        default="games",
        help="random legal positions from playouts (default) or random planes",
    )


@dataclass
class ErrorRow:
    path: str
    what: str
    max_abs: float
    mean_abs: float
    rel: float

    def line(self) -> str:
        return (
            f"{self.path:<10} {self.what:<22} {self.max_abs:>11.3e} {self.mean_abs:>11.3e} {self.rel:>11.3e}"
        )


def errors(path: str, what: str, out: np.ndarray, ref: np.ndarray) -> ErrorRow:
    try:
        stats = error_stats(out, ref)
    except ValueError as exc:
        raise AssertionError(f"{path} {what}: {exc}") from None
    return ErrorRow(path, what, stats.max_abs, stats.mean_abs, stats.rel)


def flash_failures(rows: list[ErrorRow], fp16: bool) -> list[str]:
    """The flash rows worse than ``flash_tolerance`` of the fallback row for the same output."""
    fallback = {r.what: r.rel for r in rows if r.path == "fallback"}
    bad = []
    for r in rows:
        if r.path == "flash" and r.what in fallback:
            bound = flash_tolerance(fallback[r.what], fp16)
            if not r.rel <= bound:
                bad.append(f"flash {r.what}: {r.rel:.3e} > 2 x fallback {fallback[r.what]:.3e} + eps "
                           f"= {bound:.3e}")
    return bad


def fp8_failures(rows: list[ErrorRow]) -> list[str]:
    """The rows of an FP8 run outside their bound: outputs against ``fp8_tolerance`` of the
    emulation's row for the same output, everything else against ``RTOL_FP8``."""
    emulated = {r.what: r.rel for r in rows if r.path == "fp8-emu"}
    bad = []
    for r in rows:
        if r.path == "fp8-emu":
            continue
        if r.what in emulated:
            bound, why = fp8_tolerance(emulated[r.what]), f"2 x fp8 emulation {emulated[r.what]:.3e} + 1e-2"
        else:
            bound, why = RTOL_FP8, "the FP8 sanity bound"
        if not r.rel <= bound:
            bad.append(f"{r.path} {r.what}: {r.rel:.3e} > {why} = {bound:.3e}")
    return bad


def random_planes_batch(n: int, seed: int) -> PlanesBatch:
    """Random masks (about 1 bit in 8 set) and values in [0, 1]: off the chess manifold."""
    rng = np.random.default_rng(seed)
    bits = rng.random((n, 112, 64)) < 0.125
    masks = (bits.astype(np.uint64) << np.arange(64, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    values = rng.random((n, 112)).astype(np.float32)
    return PlanesBatch(masks, values)


def random_games_batch(n: int, input_format: int, seed: int) -> PlanesBatch:
    """``n`` positions reached by random legal playouts (``lc0py.chess.testing.random_games``)."""
    from lc0py.chess import encode_batch
    from lc0py.chess.testing import random_games

    return encode_batch([h.encode(input_format) for h in random_games(n, seed, max_plies=100)])


def _load(args: argparse.Namespace) -> Any:
    if args.weights:
        from lc0py.tools.weights_choice import resolve_weights
        from lc0py.weights import load_network

        path = resolve_weights(args.weights, "verify", speed_tool=False)  # <random>, <autodiscover>
        assert path is not None  # no backend that runs without a net is named here
        return load_network(path)  # names a missing file, directory or FIFO as such
    from lc0py.weights.presets import PRESETS, random_network

    preset = PRESETS.get(args.preset)  # an unknown name: refused by random_network
    depth_key = preset.depth_field if preset is not None else "layers"
    overrides = {depth_key: args.layers} if args.layers else {}
    return random_network(args.preset, args.seed or 0, **overrides)


def run(args: argparse.Namespace) -> int:
    from lc0py.backends.registry import create_backend
    from lc0py.model import cast_network, forward

    int_value("--batch", args.batch, 1, 4096)  # lc0's backends stop at 1024 positions per call
    int_value("--seed", args.seed, 0, 2**63 - 1)
    int_value("--layers", args.layers, 1, 1024)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    from lc0py.backends.registry import check_name

    check_name(args.backend)  # a typo costs nothing: checked before the net is built
    network = _load(args)
    backend = create_backend(args.backend, network, args.backend_opts)
    try:
        fmt = int(network.format.input)
        if args.planes == "random":
            batch = random_planes_batch(args.batch, seed)
        else:
            batch = random_games_batch(args.batch, fmt, seed)
        trace: dict[str, np.ndarray] = {}
        ref = forward(cast_network(network, np.float64), batch.dense(np.float64), np.float64, trace=trace)
        gpu = getattr(backend, "gpu", None)
        fp16 = bool(getattr(gpu, "fp16", backend.name in FP16_BACKENDS))
        fp8 = bool(getattr(gpu, "fp8", False))
        limit = tolerance(fp16, fp8)
        rows: list[ErrorRow] = []
        if fp8:
            from lc0py.backends.gpu.fp8_emulation import fp8_forward
            from lc0py.backends.gpu.fp8_residual_emulation import fp8_residual_forward

            assert gpu is not None
            o = gpu.options
            if isinstance(network, ResidualNetwork):
                emulated = fp8_residual_forward(network, batch.dense(np.float32), o.fp8_scales != "tensor",
                                                bool(gpu.shape.winograd),
                                                calibration=getattr(gpu, "fp8_calibration", None))
            else:
                emulated = fp8_forward(network, batch.dense(np.float32), per_channel=o.fp8_scales != "tensor",
                                       per_row=o.fp8_scales == "outer", gemms=frozenset(o.fp8_gemms))
            rows += _output_rows("fp8-emu", emulated, ref, network.has_moves_left)
        if gpu is not None:
            rows += _GPU_ROWS[network.body](gpu, network, batch, ref, trace)
            # and the production path (graphs, async) once more
            rows += _output_rows("backend", backend.evaluate(batch), ref, network.has_moves_left)
        else:
            rows += _output_rows("backend", backend.evaluate(batch), ref, network.has_moves_left)
        limit_text = "fp8: 2 x the numpy fp8 emulation's error + 1e-2" if fp8 else f"limit {limit:g} relative"
        what = f"{args.batch} positions ({args.planes}), seed {seed}"
        print(f"verify: backend {backend.name}, {what}, {limit_text}")
        if gpu is not None:
            ch = gpu.flash_choice
            print(
                f"device: {gpu.p.info.name} ({gpu.p.info.arch}); "
                f"attention kernel: {ch.kernel.value} ({ch.reason})"
                + ("; precision fp8 (e4m3 GEMMs, fp16 elsewhere)" if fp8 else "")
            )
        print(f"{'path':<10} {'output':<22} {'max abs':>11} {'mean abs':>11} {'rel':>11}")
        for r in rows:
            print(r.line())
        worst = max(r.rel for r in rows if r.path != "fp8-emu")
        flash_bad = flash_failures(rows, fp16)
        fp8_bad = fp8_failures(rows) if fp8 else []
        for line in flash_bad + fp8_bad:
            print(line)
        rule = " and flash within 2 x fallback + eps" if any(r.path == "flash" for r in rows) else ""
        if fp8:
            ok = not fp8_bad and not flash_bad
            rule = f"fp8: outputs within 2 x the fp8 emulation's error + 1e-2, others {RTOL_FP8:g}{rule}"
            print(f"{'PASS' if ok else 'FAIL'}: worst relative error {worst:.3e} ({rule})")
        else:
            ok = worst <= limit and not flash_bad
            print(f"{'PASS' if ok else 'FAIL'}: worst relative error {worst:.3e} (limit {limit:g}{rule})")
        sys.stdout.flush()
        return 0 if ok else 1
    finally:
        backend.close()


def _residual_gpu_rows(gpu: Any, network: ResidualNetwork, batch: PlanesBatch, ref: Any,
                       trace: dict[str, np.ndarray]) -> list[ErrorRow]:
    """The GPU forward pass of a residual net against the reference: outputs, the input
    convolution and every block's output."""
    out, taps = gpu.evaluate_traced(batch, flash=False)
    rows = _output_rows("gpu", out, ref, network.has_moves_left)
    keys = ["input"] + [f"block{i}.output" for i in range(network.num_blocks)]
    for key in keys:  # reference [B, C, 8, 8] -> the GPU's NHWC [B, 64, C]
        want = trace[key].reshape(len(batch), network.filters, 64).transpose(0, 2, 1)
        rows.append(errors("gpu", key, taps[key], want))
    return rows


def _attention_gpu_rows(gpu: Any, network: Network, batch: PlanesBatch, ref: Any,
                        trace: dict[str, np.ndarray]) -> list[ErrorRow]:
    """The flash and fallback paths of an attention net against the reference: outputs and every
    layer's attention output."""
    rows: list[ErrorRow] = []
    paths = [("flash", True), ("fallback", False)] if gpu.uses_flash else [("fallback", False)]
    for label, flash in paths:
        out, taps = gpu.evaluate_traced(batch, flash=flash)
        rows += _output_rows(label, out, ref, network.has_moves_left)
        for l in range(network.num_layers):
            key = f"encoder{l}.attention"
            if key in taps:
                rows.append(errors(label, f"L{l} attention", taps[key], trace[key]))
    return rows


#: What the GPU backend is checked on, per body: the one place verify looks at the body.
_GPU_ROWS: dict[BodyKind, Callable[[Any, Any, PlanesBatch, Any, dict[str, np.ndarray]], list[ErrorRow]]] = {
    "attention": _attention_gpu_rows,
    "residual": _residual_gpu_rows,
}


def _output_rows(path: str, out: Any, ref: Any, has_mlh: bool) -> list[ErrorRow]:
    rows = [errors(path, "policy logits", out.policy, ref.policy), errors(path, "wdl", out.wdl, ref.wdl)]
    if has_mlh:
        rows.append(errors(path, "moves-left", out.moves_left, ref.moves_left))
    return rows
