"""``demux`` over two real GPUs (skips with fewer): batches below and above
``backends.CALLER_ROWS``, in flight together, so that both child feeding paths of the default
("auto": the search's small batches joined on the caller's thread, large ones on the children's
resolver threads) run on real devices, each output checked against the numpy float64 reference
(fp16 rule) at the ends of every part."""

from __future__ import annotations

import numpy as np
import pytest

from tests.nvidia import require_nvidia_gpu


def test_demux_over_two_gpus_gives_the_reference_on_both_feeding_paths() -> None:
    require_nvidia_gpu()
    from lc0py.gpu.cuda_platform import device_count

    if device_count() < 2:
        pytest.skip("needs two NVIDIA GPUs")
    from lc0py.backends.accuracy import RTOL_FP16, output_errors
    from lc0py.backends.base import NetworkOutput, PlanesBatch
    from lc0py.backends.multi import backends
    from lc0py.backends.registry import create_backend
    from lc0py.model import cast_network, forward
    from lc0py.weights.presets import random_network

    assert backends.CHILD_FEEDING == "auto"
    net = random_network("t82", 3, layers=2)
    ref_net = cast_network(net, np.float64)
    rng = np.random.default_rng(11)
    sizes = [1, 7, 37, 75, backends.CALLER_ROWS, backends.CALLER_ROWS + 1, 600, 45, 300, 12]
    batches = []
    for n in sizes:
        sparse = rng.integers(0, 2**63, (2, n, 112), dtype=np.uint64)
        masks = sparse[0] & sparse[1]
        values = 1 + rng.random((n, 112), dtype=np.float32) * (rng.random((n, 112)) < 0.3)
        batches.append(PlanesBatch(masks, values.astype(np.float32)))
    with create_backend("demux", net, "backend=cuda-fp16,max_batch=1024,(gpu=0),(gpu=1)") as demux:
        handles = [demux.evaluate_async(b) for b in batches]  # all in flight at once
        outs = [h.result() for h in handles]
    assert [backends.feeding_path(n, splits=True) for n in sizes].count("caller") == 7
    for n, batch, out in zip(sizes, batches, outs, strict=True):
        assert len(out) == n
        assert not (np.isnan(out.policy).any() or np.isnan(out.wdl).any())
        half = -(-n // 2)  # each GPU's part: check both ends of both
        rows = np.unique(np.r_[0 : min(n, 4), max(0, half - 4) : min(n, half + 4), max(0, n - 4) : n])
        ref = forward(ref_net, batch.dense(np.float64)[rows], np.float64)
        got = NetworkOutput(out.policy[rows], out.wdl[rows], out.moves_left[rows])
        errors = output_errors(got, ref, net.moves_left is not None)
        assert max(errors.values()) <= RTOL_FP16, (n, errors)
