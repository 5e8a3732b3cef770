"""On a GPU: the persistent flash kernel (``flash=v2``) against the float64 reference, the one-shot
kernel (``flash=v1``) and the scalar ``mma.h`` branch (the oracle), on fresh random inputs for the
four T82 head configurations and batches 1 / 7 / 64 / 256; and a whole net with each kernel forced.

Marked ``gpu``; the ``cuda_platform`` fixture skips without an NVIDIA GPU. The fp16 rule: within
1e-2 relative of float64, and (flash-attention's rule, ``accuracy.flash_tolerance``) within twice
the error of the same computation in the other kernel plus fp16's eps.
"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.accuracy import RTOL_FP16, flash_tolerance, relative_error
from lc0py.backends.gpu.flash_probe import FlashInputs, FlashRunner, attention_reference

pytestmark = pytest.mark.gpu

HEADS = [(24, 32), (12, 64), (8, 96), (6, 128)]  # t82, t82-h12, t82-h8, t82-h6
V1, V2 = {"persistent": 0}, {"persistent": 1}


@pytest.mark.parametrize("batch", [1, 7, 64, 256])
@pytest.mark.parametrize(("heads", "depth"), HEADS, ids=[f"h{h}-d{d}" for h, d in HEADS])
def test_v2_matches_reference_v1_and_scalar(cuda_platform, heads: int, depth: int, batch: int) -> None:  # type: ignore[no-untyped-def]
    x = FlashInputs.random(batch, heads, depth, seed=1000 * heads + batch)
    ref = attention_reference(x)
    run = FlashRunner(cuda_platform, x)
    try:
        assert run.choose(V2).params.persistent == 1  # type: ignore[union-attr]
        o2, o1 = run.run(V2), run.run(V1)
        # the oracle: the same persistent kernel on mma.h's scalar fp32 branch, then the one-shot
        # grid on it (the walk over pairs must not depend on the tile branch)
        s2 = run.run(V2, scalar=True)
    finally:
        run.close()
    for name, o in (("v2", o2), ("v1", o1), ("v2-scalar", s2)):
        assert not np.isnan(o).any(), f"{name}: rows left unwritten (NaN)"
    e2, e1, es = (relative_error(o, ref) for o in (o2, o1, s2))
    print(f"h{heads} d{depth} b{batch}: v2 {e2:.2e}, v1 {e1:.2e}, scalar {es:.2e}, "
          f"v2-v1 {relative_error(o2, o1):.2e}, identical {np.array_equal(o2, o1)}")
    assert e2 <= RTOL_FP16 and e1 <= RTOL_FP16 and es <= RTOL_FP16
    assert e2 <= flash_tolerance(e1, True), f"v2 {e2:.2e} vs v1 {e1:.2e}"
    assert e2 <= flash_tolerance(es, True), f"v2 {e2:.2e} vs the scalar oracle {es:.2e}"
    # same arithmetic per (position, head) as v1: any difference is scheduling, never a wrong pair
    assert relative_error(o2, o1) <= 1e-3


@pytest.mark.parametrize("overrides", [
    {"persistent": 1, "stages": 3, "min_blocks": 3},
    {"persistent": 1, "stages": 1},
    {"persistent": 1, "kv_tile": 32, "stages": 2},
    {"persistent": 1, "warps": 2},
    {"persistent": 1, "min_blocks": 1},
    {"persistent": 1, "interleave": 0},
    {"persistent": 1, "descend": 1},
    {"persistent": 1, "interleave": 0, "descend": 1},
], ids=["s3-mb3", "s1", "kv32-s2", "w2", "mb1", "contiguous", "descend", "contiguous-descend"])
def test_v2_tuner_neighbours(cuda_platform, overrides: dict[str, int]) -> None:  # type: ignore[no-untyped-def]
    """The persistent kernel's tuner candidates compute the same attention (7 positions: uneven
    ranges of pairs; 2 KV tiles per pair; 2 row blocks per pair; a single block per SM)."""
    x = FlashInputs.random(7, 24, 32, seed=77)
    run = FlashRunner(cuda_platform, x)
    try:
        o = run.run(overrides)
        base = run.run(V1)
    finally:
        run.close()
    ref = attention_reference(x)
    assert not np.isnan(o).any()
    assert relative_error(o, ref) <= flash_tolerance(relative_error(base, ref), True)


@pytest.mark.parametrize("preset", ["t82", "t82-h6"])
def test_whole_net_with_each_kernel(cuda_platform, preset: str) -> None:  # type: ignore[no-untyped-def]
    """GpuNetwork with flash=v1 and flash=v2: both within the fp16 rule of the float64 reference,
    v2 within twice v1's error; graphs and the async path on an odd batch."""
    from lc0py.backends.gpu.kernels import AttentionKernel
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.weights.presets import random_network
    from tests.backends.conformance import traced_reference

    net = random_network(preset, 21, layers=2)
    batch, ref, trace = traced_reference(net)
    errors = {}
    for value, kernel in (("v1", AttentionKernel.FLASH_MMA), ("v2", AttentionKernel.FLASH_MMA_PERSISTENT)):
        opts = GpuOptions.from_text(f"flash={value},max_batch=16")
        gpu = GpuNetwork(cuda_platform, net, fp16=True, options=opts)
        try:
            assert gpu.flash_choice.kernel is kernel, gpu.flash_choice.reason
            out, taps = gpu.evaluate_traced(batch, flash=True)
            errors[value] = {
                "policy": relative_error(out.policy, ref.policy),
                "attention": relative_error(taps["encoder1.attention"], trace["encoder1.attention"]),
            }
            got = gpu.submit(batch).result()
            assert relative_error(got.policy, ref.policy) <= RTOL_FP16
        finally:
            gpu.close()
    print(preset, errors)
    for what in ("policy", "attention"):
        assert errors["v2"][what] <= RTOL_FP16
        assert errors["v2"][what] <= flash_tolerance(errors["v1"][what], True), (what, errors)
