"""On a GPU: flash vs fallback vs the numpy float64 reference, and the shared conformance suite.

Marked ``gpu``; the ``cuda_platform`` fixture skips cleanly when no NVIDIA GPU/driver/cuda-python
is there (the device is only queried when a test runs, never at import). Nets are the four T82
head configurations with 1 layer (all shapes of the real thing, fast to build).
"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.weights.presets import random_network
from tests.backends.conformance import (
    RTOL_FP16,
    RTOL_FP32,
    check_named_backend,
    random_batch,
    relative_error,
    traced_reference,
)

pytestmark = pytest.mark.gpu

HEADS = ["t82", "t82-h12", "t82-h8", "t82-h6"]  # depth 32, 64, 96, 128


@pytest.fixture(scope="module", params=HEADS)
def net(request):  # type: ignore[no-untyped-def]
    return random_network(request.param, 11, layers=1)


@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_flash_fallback_reference(cuda_platform, net, fp16: bool) -> None:  # type: ignore[no-untyped-def]
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    gpu = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions(max_batch=16))
    try:
        assert gpu.uses_flash, gpu.flash_choice.reason
        batch, ref, trace = traced_reference(net)
        limit = RTOL_FP16 if fp16 else RTOL_FP32
        for flash in (True, False):
            out, taps = gpu.evaluate_traced(batch, flash=flash)
            errs = {
                "policy": relative_error(out.policy, ref.policy),
                "wdl": relative_error(out.wdl, ref.wdl),
                "moves_left": relative_error(out.moves_left, ref.moves_left),
                "attention": relative_error(taps["encoder0.attention"], trace["encoder0.attention"]),
            }
            assert all(e <= limit for e in errs.values()), f"flash={flash} heads={net.heads}: {errs}"
        # graphs + async path, odd batch size (padding rows inside a graph bucket)
        got = gpu.submit(batch).result()
        assert relative_error(got.policy, ref.policy) <= limit
    finally:
        gpu.close()


def test_forced_fallback_backend_matches(cuda_platform) -> None:  # type: ignore[no-untyped-def]
    from lc0py.backends.registry import create_backend

    net = random_network("t82-h12", 4, layers=1)
    a = create_backend("cuda-fp16", net, "flash=off,graphs=off")
    b = create_backend("cuda-fp16", net, "flash=on")
    try:
        assert not a.gpu.uses_flash and b.gpu.uses_flash
        batch = random_batch(5, int(net.format.input), seed=3)
        oa, ob = a.evaluate(batch), b.evaluate(batch)
        assert relative_error(oa.policy, ob.policy) < 1e-2
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(("name", "rtol"), [("cuda", RTOL_FP32), ("cuda-fp16", RTOL_FP16)])
@pytest.mark.parametrize(
    ("seed", "embedding"), [(2, "pe_map"), (3, "pe_dense")], ids=["tiny", "tiny-pe_dense"]
)
def test_conformance(cuda_platform, name: str, rtol: float, seed: int, embedding: str) -> None:  # type: ignore[no-untyped-def]
    net = random_network("tiny", seed, embedding=embedding)
    check_named_backend(name, net, rtol, "max_batch=8", batch_sizes=(1, 7, 33))


def test_results_stay_valid_after_later_batches(cuda_platform) -> None:  # type: ignore[no-untyped-def]
    """Policy arrays are zero-copy views of pinned buffers: later batches must never reuse a
    buffer something still views (a kept row, an NN cache entry)."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    net = random_network("tiny", 6)
    gpu = GpuNetwork(cuda_platform, net, fp16=True, options=GpuOptions(max_batch=8))
    try:
        b1, b2 = (
            random_batch(5, int(net.format.input), seed=1),
            random_batch(5, int(net.format.input), seed=2),
        )
        first = gpu.evaluate(b1)
        row = first.policy[2]
        kept = row.copy()
        del first
        pending = [gpu.submit(b2) for _ in range(6)]  # more in flight than there are slots
        outs = [p.result() for p in pending]
        assert np.array_equal(row, kept)
        assert all(np.array_equal(o.policy, outs[0].policy) for o in outs)
    finally:
        gpu.close()


def test_verify_option_and_gpu_alias(cuda_platform, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    """``verify=on`` checks the first batch against the float64 reference and logs the verdict;
    ``gpu`` is the vendor-neutral fp16 name."""
    from lc0py.backends.registry import create_backend

    net = random_network("tiny", 8)
    backend = create_backend("gpu", net, "verify=on,graphs=off")
    try:
        assert backend.name == "gpu" and backend.gpu.fp16
        with caplog.at_level("WARNING", logger="lc0py.backends.gpu"):
            backend.evaluate(random_batch(3, int(net.format.input), seed=5))
        assert any("verify=on" in r.message and "PASS" in r.message for r in caplog.records), caplog.text
    finally:
        backend.close()


@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
@pytest.mark.parametrize("preset", ["tiny", "t82"])
def test_pe_dense_reference(cuda_platform, preset: str, fp16: bool) -> None:  # type: ignore[no-untyped-def]
    """PE_DENSE embedding (preproc, LN, gating, embedding FFN) vs the float64 reference."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    net = random_network(preset, 12, embedding="pe_dense", **({"layers": 2} if preset != "tiny" else {}))
    gpu = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions(max_batch=16))
    try:
        assert gpu.shape.pe_dense
        batch, ref, trace = traced_reference(net)
        limit = RTOL_FP16 if fp16 else RTOL_FP32
        out, taps = gpu.evaluate_traced(batch, flash=True)
        errs = {
            "embedding": relative_error(taps["embedding"], trace["embedding"]),
            "policy": relative_error(out.policy, ref.policy),
            "wdl": relative_error(out.wdl, ref.wdl),
            "moves_left": relative_error(out.moves_left, ref.moves_left),
        }
        assert all(e <= limit for e in errs.values()), f"{preset} fp16={fp16}: {errs}"
        got = gpu.submit(batch).result()  # graphs + async path
        assert relative_error(got.policy, ref.policy) <= limit
    finally:
        gpu.close()
