"""Device check of ``gpu=N`` (issue 27's first step): backends on two GPUs in one process.

On a machine with two or more GPUs (nvidia-h100-x2): for an attention net and a residual net,
``cuda-fp16`` backends on ``gpu=0`` and ``gpu=1`` are fed alternately from one thread, then from
two threads at once, and every result is checked against the numpy float64 reference (fp16 rule,
1e-2). Also: each backend's platform reports its ordinal, a result kept past its backend's close
frees its pinned buffer without error, and ``gpu=<count>`` is refused in one line. On one GPU
only the refusal and ``gpu=0`` are checked. Writes ``two_devices.json`` under ``--out``; exit 1
on any failure.

    PYTHONPATH=$PWD python3 scripts/device/gpu_two_devices.py --out /tmp/out
"""

from __future__ import annotations

import argparse
import gc
import json
import threading
from pathlib import Path
from typing import Any

import numpy as np

from lc0py.backends.accuracy import RTOL_FP16, output_errors
from lc0py.backends.base import PlanesBatch
from lc0py.backends.registry import create_backend
from lc0py.errors import BackendOptionError
from lc0py.model import cast_network, forward
from lc0py.weights.presets import random_network


def batch(rng: np.random.Generator, n: int) -> PlanesBatch:
    masks = rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64)
    masks &= rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64)
    return PlanesBatch(masks, rng.uniform(0.5, 1.5, (n, 112)).astype(np.float32))


def worst_error(net: Any, b: PlanesBatch, out: Any) -> float:
    ref = forward(cast_network(net, np.float64), b.dense(np.float64), np.float64)
    return max(output_errors(out, ref, net.moves_left is not None).values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for two_devices.json")
    args = ap.parse_args()
    from lc0py.gpu.cuda_platform import device_count, probe

    count = device_count()
    if count == 0:
        raise SystemExit(f"no usable NVIDIA GPU: {probe() or '0 devices'}")
    report: dict[str, Any] = {"devices": count, "checks": {}}
    checks = report["checks"]
    rng = np.random.default_rng(27)
    nets = {"t82-2layers": random_network("t82", 5, layers=2),
            "res-20x256-2blocks": random_network("res-20x256", 5, blocks=2)}
    try:
        create_backend("cuda-fp16", nets["t82-2layers"], f"gpu={count}")
        checks["refusal"] = "not refused"
    except BackendOptionError as exc:
        checks["refusal"] = str(exc)
    ok = checks["refusal"].startswith(f"gpu={count}: this machine has {count} CUDA device")
    ordinals = list(range(min(count, 2)))
    for name, net in nets.items():
        backends = [create_backend("cuda-fp16", net, f"gpu={g}") for g in ordinals]
        errs: list[float] = []
        try:
            indices = [b.platform.info.index for b in backends]  # type: ignore[attr-defined]
            for n in (7, 64, 300, 7):  # one thread, alternating devices
                for b in backends:
                    x = batch(rng, n)
                    errs.append(worst_error(net, x, b.evaluate(x)))
            failures: list[str] = []

            def feed(
                b: Any, seed: int, results: list[float], net: Any = net, failures: list[str] = failures
            ) -> None:
                r = np.random.default_rng(seed)
                try:
                    for n in (33, 256, 33):
                        x = batch(r, n)
                        results.append(worst_error(net, x, b.evaluate(x)))
                except Exception as exc:  # noqa: BLE001 - reported in the JSON
                    failures.append(f"{type(exc).__name__}: {exc}")

            threads = [threading.Thread(target=feed, args=(b, i, errs)) for i, b in enumerate(backends)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(600)
            x = batch(rng, 5)
            kept = backends[0].evaluate(x).policy  # outlives its backend
        finally:
            for b in backends:
                b.close()
        del kept
        gc.collect()
        good = not failures and indices == ordinals and max(errs) <= RTOL_FP16
        checks[name] = {"ordinals": indices, "worst_error": max(errs), "evaluations": len(errs),
                        "thread_failures": failures, "passed": good}
        ok = ok and good
    report["passed"] = ok
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "two_devices.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
