"""FP8 accuracy table: ``cuda-fp8`` against ``cuda-fp16`` (and both against the float64 reference on
a subset) over many varied legal positions, in issue 28's decision terms.

Positions come from random legal playouts of the search's compiled board (``lc0py.search.core``:
no python-chess, which the device image lacks), each game stopped at a random ply (0-160), the
whole game given as history; planes and the legal moves' policy indices by the core's encoder.
Per net (a generated preset, or ``--weights`` files: attention-body nets, or residual ones such as
the Maia / Mean Girl nets, whose emulation is ``fp8_residual_emulation.py``):

* top-1 move (argmax of the legal moves' logits) equal to cuda-fp16's, fraction of positions
  (target >= 0.98);
* mean and max |Q_fp8 - Q_fp16|, Q = W - L (target: mean <= 0.02);
* max legal-move probability error (softmax over the legal moves), mean policy KL(fp16 || fp8);
* on the first ``--ref`` positions, the same for cuda-fp8 and cuda-fp16 against numpy float64, and
  cuda-fp8 (run on that subset as one batch) against the numpy emulation of FP8 arithmetic
  (``fp8_emulation.py``): relative errors of the outputs, which a wrong scale or layout makes
  large while FP8's own error does not.

    PYTHONPATH=$PWD python3 scripts/device/fp8_accuracy.py --preset t82 --positions 1024 \
        --json /tmp/out/accuracy.json --md /tmp/out/accuracy.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import Any

import numpy as np

sys.path.insert(0, ".")


def positions(n: int, seed: int, input_format: int) -> tuple[Any, list[np.ndarray]]:
    """``n`` positions of random legal games: the ``PlanesBatch`` and each one's legal-move policy
    indices."""
    from lc0py.backends.base import PlanesBatch
    from lc0py.chess.core import board as B
    from lc0py.chess.core import encode as E

    start = _start()
    rng = np.random.default_rng(seed)
    masks = np.zeros((n, 112), np.uint64)
    values = np.zeros((n, 112), np.float32)
    legal_idx: list[np.ndarray] = []
    buf = np.zeros(B.MAX_MOVES, np.uint16)
    idx = np.zeros(B.MAX_MOVES, np.int64)
    made = 0
    while made < n:
        plies = int(rng.integers(0, 161))
        hist = [start]
        pos = start
        for _ in range(plies):
            k = B.gen_legal(pos, buf)
            if k == 0 or int(pos[B.W_RULE50]) >= 100:
                break
            nxt = np.zeros_like(pos)
            B.play(pos, int(buf[int(rng.integers(0, k))]), nxt)
            pos = nxt
            hist.append(pos)
        k = B.gen_legal(pos, buf)
        if k == 0:
            continue  # mate or stalemate: no move to compare
        h = np.stack(hist)
        reps = np.zeros(len(hist), np.int64)
        transform = E.encode(h, reps, len(hist), input_format, E.FILL_FEN_ONLY, masks[made], values[made])
        E.policy_indices(pos, buf, k, transform, idx)
        legal_idx.append(idx[:k].copy())
        made += 1
    return PlanesBatch(masks, values), legal_idx


def _start() -> np.ndarray:
    from lc0py.chess.core import board as B

    pos = np.zeros(B.POS_WORDS, np.uint64)
    pos[0], pos[1] = 0xFFFF, 0xFFFF << 48
    for t, m in enumerate([0xFF << 8 | 0xFF << 48, 0x42 | 0x42 << 56, 0x24 | 0x24 << 56, 0x81 | 0x81 << 56,
                           0x08 | 0x08 << 56, 0x10 | 0x10 << 56]):
        pos[2 + t] = m
    pos[8] = 1 | 1 << 7 | 1 << 56 | 1 << 63
    pos[9] = 64
    pos[B.W_KEY] = B.compute_key(pos)
    return pos


def evaluate(backend: Any, batch: Any, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Policy logits and Q of every position, in batches of ``chunk``."""
    from lc0py.backends.base import PlanesBatch

    pols, qs = [], []
    for i in range(0, len(batch), chunk):
        part = PlanesBatch(batch.masks[i : i + chunk], batch.values[i : i + chunk])
        out = backend.evaluate(part)
        pols.append(np.asarray(out.policy, np.float64))
        qs.append(np.asarray(out.wdl[:, 0] - out.wdl[:, 2], np.float64))
    return np.concatenate(pols), np.concatenate(qs)


def compare(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], legal: list[np.ndarray]
            ) -> dict[str, Any]:
    """Decision metrics of ``a`` (policy logits, Q) against the baseline ``b``."""
    top1, prob_err, kl = [], [], []
    for i, idx in enumerate(legal):
        la, lb = a[0][i, idx], b[0][i, idx]
        pa = np.exp(la - la.max())
        pa /= pa.sum()
        pb = np.exp(lb - lb.max())
        pb /= pb.sum()
        top1.append(int(np.argmax(la)) == int(np.argmax(lb)))
        prob_err.append(float(np.abs(pa - pb).max()))
        kl.append(float(np.sum(pb * (np.log(np.maximum(pb, 1e-300)) - np.log(np.maximum(pa, 1e-300))))))
    dq = np.abs(a[1] - b[1])
    finite = bool(np.all(np.isfinite(a[0])) and np.all(np.isfinite(a[1])))
    return {
        "positions": len(legal),
        "finite": finite,
        "top1_agreement": float(np.mean(top1)),
        "mean_abs_dq": float(dq.mean()),
        "max_abs_dq": float(dq.max()),
        "max_legal_prob_err": float(np.max(prob_err)),
        "mean_policy_kl": float(np.mean(kl)),
    }


def one_net(label: str, net: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One row per variant of the backend under test (``--variant`` option strings) on one net:
    the positions, the baseline and the float64 reference computed once."""
    from lc0py.backends.accuracy import FP8_MEAN_ABS_DQ, FP8_TOP1_AGREEMENT
    from lc0py.backends.registry import create_backend

    t0 = time.time()
    batch, legal = positions(args.positions, args.seed, int(net.format.input))
    made = round(time.time() - t0, 1)
    test, base = args.pair.split(",")

    from lc0py.backends.base import PlanesBatch

    n = min(args.ref, len(legal))
    sub = PlanesBatch(batch.masks[:n], batch.values[:n])

    winograd = {}  # the backend under test's Winograd choice (residual nets), for the emulation
    calibration = {}  # the backend under test's FP8 calibration (residual nets), for the emulation

    def run(name: str, opts: str) -> tuple[tuple[np.ndarray, np.ndarray], Any]:
        """The backend's (policy, Q) over every position, and its raw outputs of the subset as one batch."""
        text = ",".join(x for x in ("max_batch=256" if name.startswith("cuda") else "", opts) if x)
        backend = create_backend(name, net, text or None)
        try:
            shape = getattr(getattr(backend, "gpu", None), "shape", None)
            winograd[opts] = bool(getattr(shape, "winograd", False))
            calibration[opts] = getattr(getattr(backend, "gpu", None), "fp8_calibration", None)
            return evaluate(backend, batch), (backend.evaluate(sub) if n > 0 else None)
        finally:
            backend.close()

    base_out, _ = run(base, "")
    ref_out = None
    ref_seconds = 0.0
    if n > 0:
        from lc0py.model import cast_network, forward


        t1 = time.time()
        ref = forward(cast_network(net, np.float64), sub.dense(np.float64), np.float64)
        ref_out = (np.asarray(ref.policy, np.float64), np.asarray(ref.wdl[:, 0] - ref.wdl[:, 2], np.float64))
        ref_seconds = round(time.time() - t1, 1)
    rows = []
    for opts in args.variant or [""]:
        row: dict[str, Any] = {"net": label + (f" [{opts}]" if opts else ""), "pair": f"{test} vs {base}",
                               "positions_seconds": made, "ref_seconds": ref_seconds}
        try:
            out, sub_out = run(test, opts)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
            continue
        if calibration.get(opts) is not None:  # a residual net's cached FP8 calibration was used
            row["net"] += " [calibrated]"
        if sub_out is not None and args.emulate:
            from lc0py.backends.accuracy import relative_error
            from lc0py.backends.gpu.fp8_emulation import fp8_forward
            from lc0py.backends.gpu.options import GpuOptions

            o = GpuOptions.from_text(opts or None)
            if net.body == "residual":
                from lc0py.backends.gpu.fp8_residual_emulation import fp8_residual_forward

                emu = fp8_residual_forward(net, sub.dense(np.float32), o.fp8_scales != "tensor",
                                           winograd.get(opts, False), calibration=calibration.get(opts))
            else:
                emu = fp8_forward(net, sub.dense(np.float32), per_channel=o.fp8_scales != "tensor",
                                  per_row=o.fp8_scales == "outer", gemms=frozenset(o.fp8_gemms))
            ref_policy = ref_out[0] if ref_out else None
            row["vs_emulation"] = {
                "positions": n,
                "policy_rel": relative_error(sub_out.policy, emu.policy),
                "wdl_rel": relative_error(sub_out.wdl, emu.wdl),
                "emulation_policy_rel_vs_float64": (
                    relative_error(emu.policy, ref_policy) if ref_policy is not None else None
                ),
                "device_policy_rel_vs_float64": (
                    relative_error(sub_out.policy, ref_policy) if ref_policy is not None else None
                ),
            }
        m = compare(out, base_out, legal)
        row["fp8_vs_fp16"] = m
        row["meets_targets"] = bool(m["finite"] and m["top1_agreement"] >= FP8_TOP1_AGREEMENT
                                    and m["mean_abs_dq"] <= FP8_MEAN_ABS_DQ)
        if ref_out is not None:
            row["cuda-fp8_vs_float64"] = compare((out[0][:n], out[1][:n]), ref_out, legal[:n])
            row["cuda-fp16_vs_float64"] = compare((base_out[0][:n], base_out[1][:n]), ref_out, legal[:n])
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| net | positions | top-1 = fp16 | mean \\|dQ\\| | max \\|dQ\\| | max legal-prob err | mean KL | "
        "fp8 vs f64 top-1 / mean \\|dQ\\| | fp16 vs f64 top-1 / mean \\|dQ\\| | fp8 vs numpy fp8 emulation "
        "(policy / wdl rel; emulation vs f64) | targets |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['net']} | error: {r['error']} |||||||||")
            continue
        m = r["fp8_vs_fp16"]
        f8 = r.get("cuda-fp8_vs_float64", {})
        f16 = r.get("cuda-fp16_vs_float64", {})

        def pair(d: dict[str, Any]) -> str:
            return f"{d['top1_agreement']:.3f} / {d['mean_abs_dq']:.4f} (n={d['positions']})" if d else "-"

        e = r.get("vs_emulation")
        emu = "-"
        if e:
            vs64 = e.get("emulation_policy_rel_vs_float64")
            emu = f"{e['policy_rel']:.3e} / {e['wdl_rel']:.3e}"
            emu += f"; {vs64:.3e}" if vs64 is not None else ""
        lines.append(
            f"| {r['net']} | {m['positions']} | {m['top1_agreement']:.4f} | {m['mean_abs_dq']:.4f} | "
            f"{m['max_abs_dq']:.4f} | {m['max_legal_prob_err']:.4f} | {m['mean_policy_kl']:.2e} | "
            f"{pair(f8)} | {pair(f16)} | {emu} | {'met' if r['meets_targets'] else 'NOT met'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", action="append", default=None, help="generated net(s) (default: t82)")
    ap.add_argument("--weights", action="append", default=[],
                    help=".pb.gz file(s): attention-body or residual (Maia, Mean Girl) nets")
    ap.add_argument("--out", default=None, help="folder: writes accuracy.json and accuracy.md there")
    ap.add_argument("--net-seed", type=int, default=1)
    ap.add_argument("--positions", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=7, help="positions' seed")
    ap.add_argument("--ref", type=int, default=32, help="positions also checked against float64 (0: none)")
    ap.add_argument("--variant", action="append", default=None,
                    help="--backend-opts of the backend under test, one row each (default: none)")
    ap.add_argument("--pair", default="cuda-fp8,cuda-fp16",
                    help="backend under test, baseline (a CPU smoke test: numpy,onnx-cpu)")
    ap.add_argument("--emulate", type=int, default=1,
                    help="1: compare the --ref subset with the numpy FP8 emulation (0: skip)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args()
    from lc0py.weights import load_network
    from lc0py.weights.presets import random_network

    nets: list[tuple[str, Any]] = []
    for preset in args.preset or ([] if args.weights else ["t82"]):
        label = f"{preset} (generated, seed {args.net_seed})"
        nets.append((label, lambda p=preset: random_network(p, args.net_seed)))
    for path in args.weights:
        nets.append((path, lambda f=path: load_network(f)))
    rows: list[dict[str, Any]] = []
    for label, make in nets:
        try:
            got = one_net(label, make(), args)
        except Exception as exc:
            got = [{"net": label, "error": f"{type(exc).__name__}: {exc}",
                    "traceback": traceback.format_exc(limit=8)}]
            print(got[0]["traceback"], flush=True)
        rows += got
        for row in got:
            print(json.dumps(row, default=str), flush=True)
    if args.out:
        import os

        os.makedirs(args.out, exist_ok=True)
        args.json = args.json or os.path.join(args.out, "accuracy.json")
        args.md = args.md or os.path.join(args.out, "accuracy.md")
    md = table(rows)
    print(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    return 0 if rows and all(r.get("meets_targets") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
