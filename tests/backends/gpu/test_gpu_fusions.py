"""On a GPU: the fusion switches (``fusions.py``) against the numpy float64 reference.

Each switch alone and all together, fp16 and fp32, on a 2-layer T82 (smolgen, 24 heads: the
branch's events are re-recorded per layer, inside a captured graph too) and the tiny PE_DENSE net
(whose embedding FFN takes ``ln_residual`` as well): the traced flash and fallback paths, then the
production path (graphs, asynchronous results) at an odd batch and a larger one, whose outputs
must also agree with the unfused network's (every fusion forced off: ``OFF``); the defaults, which
choose per batch size, at sizes on both sides of their limits, and bit for bit the unfused pass
above them. Marked ``gpu``: skipped without an NVIDIA GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.weights.presets import random_network
from tests.backends.conformance import RTOL_FP16, RTOL_FP32, random_batch, relative_error, traced_reference

pytestmark = pytest.mark.gpu

#: every fusion forced off for every batch size: the unfused pass
OFF = (
    "ln_residual=off,smolgen_branch=off,row_halves=off,smolgen_rows=off,smolgen_compress=off,"
    "smolgen_chain=off"
)
SWITCHES = [
    "",  # the defaults: ln_residual to 512 positions, smolgen_branch to 128, smolgen_rows to 1
    "ln_residual=on",
    "smolgen_branch=on",
    "smolgen_rows=on",
    "smolgen_compress=on",  # compress and dense 1 + LN in one kernel, dense 2 by its GEMM
    "smolgen_rows=on,smolgen_compress=on",
    # smolgen_early: each layer's chain forked from the previous layer's FFN output, beside its LN
    "ln_residual=on,smolgen_branch=on,smolgen_compress=on,smolgen_early=on",
    "ln_residual=on,smolgen_branch=on,smolgen_rows=on,smolgen_compress=on,smolgen_early=on",
    "smolgen_chain=on",
    "smolgen_chain=on,smolgen_branch=on",
    "row_halves=on",
    "ln_residual=on,smolgen_branch=on,row_halves=on,side_sms=8",
]
NETS = {"t82-2layers": ("t82", dict(layers=2)), "tiny-pe_dense": ("tiny", dict(embedding="pe_dense"))}


@pytest.mark.parametrize("case", sorted(NETS))
@pytest.mark.parametrize("text", SWITCHES)
@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_fused_paths_match_the_reference(cuda_platform, case: str, text: str, fp16: bool) -> None:  # type: ignore[no-untyped-def]
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    preset, kw = NETS[case]
    net = random_network(preset, 5, **kw)
    # an explicit switch alone: the others forced off; "": the defaults
    options = f"max_batch=64,{OFF},{text}" if text else "max_batch=64"
    fused = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text(options))
    plain = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text(f"max_batch=64,{OFF}"))
    try:
        if text:
            assert fused.fusions.ln_residual is ("ln_residual=on" in text)
            assert fused.fusions.smolgen_branch is ("smolgen_branch=on" in text and net.has_smolgen)
            assert fused.fusions.row_halves is ("row_halves=on" in text)
            assert fused.fusions.smolgen_rows is ("smolgen_rows=on" in text and net.has_smolgen)
            assert fused.fusions.smolgen_chain is ("smolgen_chain=on" in text and net.has_smolgen)
        else:
            f = fused.fusions
            assert (f.ln_residual, f.ln_residual_max, f.row_halves) == (True, 512, False)
            assert f.smolgen_branch is net.has_smolgen and f.smolgen_rows is net.has_smolgen
            assert not f.smolgen_chain  # off unless asked for
        limit = RTOL_FP16 if fp16 else RTOL_FP32
        batch, ref, _ = traced_reference(net)
        for flash in (True, False):
            out, _ = fused.evaluate_traced(batch, flash=flash)
            errs = {
                k: relative_error(getattr(out, k), getattr(ref, k)) for k in ("policy", "wdl", "moves_left")
            }
            assert all(e <= limit for e in errs.values()), f"{text} flash={flash}: {errs}"
        # graph buckets, padding rows; one position runs unsplit; the defaults: both sides of 128
        for n in (1, 7, 40) if text else (1, 40, 200):
            b = random_batch(n, int(net.format.input), seed=n)
            got, want = fused.submit(b).result(), plain.submit(b).result()
            for k in ("policy", "wdl", "moves_left"):
                err = relative_error(getattr(got, k), getattr(want, k))
                assert err <= 2 * limit, f"{text} batch {n}: {k} {err:.2e} from the unfused network"
    finally:
        fused.close()
        plain.close()


@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_defaults_above_their_limits_match_the_unfused_pass_bit_for_bit(cuda_platform, fp16: bool) -> None:  # type: ignore[no-untyped-def]
    """At 520 positions (above ``ln_residual_max`` 512 and ``smolgen_branch_max`` 128, graph
    bucket 576) the defaults run the unfused pass: the same outputs, bit for bit."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    net = random_network("t82", 5, layers=2)
    default = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text("max_batch=64"))
    plain = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text(f"max_batch=64,{OFF}"))
    try:
        b = random_batch(520, int(net.format.input), seed=520)
        got, want = default.submit(b).result(), plain.submit(b).result()
        for k in ("policy", "wdl", "moves_left"):
            a, w = getattr(got, k), getattr(want, k)
            assert np.isfinite(a).all() and np.array_equal(a, w), k
    finally:
        default.close()
        plain.close()


def _replays_agree(fused, plain, net, sizes, replays: int, seed: int, limit: float) -> None:  # type: ignore[no-untyped-def]
    """For each batch size: ``replays`` submits to ``fused`` (each a replay of the size's graph)
    finite and within ``limit`` of one submit to ``plain`` (the unfused network)."""
    for n in sizes:
        b = random_batch(n, int(net.format.input), seed=seed + n)
        want = plain.submit(b).result()
        for replay in range(replays):
            got = fused.submit(b).result()
            for k in ("policy", "wdl", "moves_left"):
                a = getattr(got, k)
                assert np.isfinite(a).all(), f"batch {n} replay {replay}: {k} not finite"
                err = relative_error(a, getattr(want, k))
                assert err <= limit, f"batch {n} replay {replay}: {k} {err:.2e} from the unfused pass"


@pytest.mark.parametrize("variant", ["compress-inline", "compress-branch", "rows-only"])
@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_smolgen_rows_at_every_row_count_and_replay(cuda_platform, fp16: bool, variant: str) -> None:  # type: ignore[no-untyped-def]
    """``smolgen_rows``: batches of 1 to 8 positions (each its graph bucket, padding rows included)
    agree with the unfused network, and again on a second replay of each graph (the kernels'
    ticket counters must be back to 0 after every launch, or the second pass never normalises):
    with ``smolgen_compress`` (compress and dense 1 in one kernel, a ticket a position) in line and
    on the side stream beside the QKV GEMM, and without it (two ``dense_rows`` kernels)."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    net = random_network("t82", 7, layers=2)
    extra = {
        "compress-inline": ",smolgen_compress=on",
        "compress-branch": ",smolgen_compress=on,smolgen_branch=on",
        "rows-only": "",
    }[variant]
    on = GpuOptions.from_text(f"max_batch=8,{OFF},smolgen_rows=on{extra}")
    fused = GpuNetwork(cuda_platform, net, fp16=fp16, options=on)
    plain = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text(f"max_batch=8,{OFF}"))
    limit = RTOL_FP16 if fp16 else RTOL_FP32
    try:
        assert fused.fusions.at(8).smolgen_compress is (variant != "rows-only")
        _replays_agree(fused, plain, net, range(1, 9), replays=2, seed=100, limit=2 * limit)
    finally:
        fused.close()
        plain.close()


@pytest.mark.parametrize("branch", ["off", "on"])
@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_smolgen_compress_up_to_its_most_rows_and_replay(cuda_platform, fp16: bool, branch: str) -> None:  # type: ignore[no-untyped-def]
    """``smolgen_compress`` without ``smolgen_rows`` (dense 2 by its GEMM and LayerNorm): batches
    from 1 to the kernel's 64 positions (graph buckets, padding rows included) agree with the
    unfused network over two replays of each graph (a ticket a position, each back to 0), in
    line and on the side stream."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions
    from lc0py.backends.gpu.weights import COMPRESS_ROWS_MAX

    net = random_network("t82", 11, layers=2)
    on = GpuOptions.from_text(f"max_batch=64,{OFF},smolgen_compress=on,smolgen_branch={branch}")
    fused = GpuNetwork(cuda_platform, net, fp16=fp16, options=on)
    plain = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text(f"max_batch=64,{OFF}"))
    limit = RTOL_FP16 if fp16 else RTOL_FP32
    try:
        assert fused.fusions.at(COMPRESS_ROWS_MAX).smolgen_compress
        assert not fused.fusions.at(COMPRESS_ROWS_MAX + 1).smolgen_compress
        _replays_agree(fused, plain, net, (1, 2, 3, 5, 9, 16, 31, 64), replays=2, seed=300, limit=2 * limit)
    finally:
        fused.close()
        plain.close()


@pytest.mark.parametrize("rows", ["off", "on"])
@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_smolgen_early_at_every_row_count_and_replay(cuda_platform, fp16: bool, rows: str) -> None:  # type: ignore[no-untyped-def]
    """``smolgen_early`` on a 3-layer T82 (layers 1 and 2 forked from the FFN output before it),
    batches of 1 to 8 positions and 9 (above ``smolgen_compress_max``: the plain branch), with
    dense 2 as ``dense_rows`` and as its GEMM: within the precision of the same network with
    the fork after the LayerNorm (``smolgen_early=off``), over two replays of each graph."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    net = random_network("t82", 13, layers=3)
    common = f"max_batch=16,{OFF},ln_residual=on,smolgen_branch=on,smolgen_compress=auto"
    common += f",smolgen_rows={rows}"
    on, off = (GpuOptions.from_text(f"{common},smolgen_early={v}") for v in ("on", "off"))
    fused = GpuNetwork(cuda_platform, net, fp16=fp16, options=on)
    late = GpuNetwork(cuda_platform, net, fp16=fp16, options=off)
    limit = RTOL_FP16 if fp16 else RTOL_FP32
    try:
        assert fused.fusions.at(8).smolgen_early and not fused.fusions.at(9).smolgen_early
        assert not late.fusions.at(1).smolgen_early
        _replays_agree(fused, late, net, (*range(1, 9), 9), replays=2, seed=500, limit=2 * limit)
    finally:
        fused.close()
        late.close()


@pytest.mark.parametrize("branch", ["off", "on"])
@pytest.mark.parametrize("fp16", [True, False], ids=["fp16", "fp32"])
def test_smolgen_chain_at_every_row_count_and_replay(cuda_platform, fp16: bool, branch: str) -> None:  # type: ignore[no-untyped-def]
    """``smolgen_chain``: batches of 1 to 4 positions (each its graph bucket) agree with the
    unfused network, on the main stream and on the side stream beside the QKV GEMM, and again on
    further replays of each graph (the grid barrier's counters must be back to 0 after every
    launch, or the next pass's blocks would pass its barriers early or wait forever). Two
    networks on the device at once run their chains from one thread in turn; the traced pass at 4
    positions is checked against the float64 reference."""
    from lc0py.backends.gpu.network import GpuNetwork
    from lc0py.backends.gpu.options import GpuOptions

    net = random_network("t82", 9, layers=2)
    on = GpuOptions.from_text(f"max_batch=4,{OFF},smolgen_chain=on,smolgen_branch={branch}")
    fused = GpuNetwork(cuda_platform, net, fp16=fp16, options=on)
    plain = GpuNetwork(cuda_platform, net, fp16=fp16, options=GpuOptions.from_text(f"max_batch=4,{OFF}"))
    limit = RTOL_FP16 if fp16 else RTOL_FP32
    try:
        assert fused.fusions.at(4).smolgen_chain and not fused.fusions.at(5).smolgen_chain
        batch, ref, _ = traced_reference(net, 4)  # the float64 reference, 4 positions: the chain's most
        for flash in (True, False):
            out, _ = fused.evaluate_traced(batch, flash=flash)
            errs = {
                k: relative_error(getattr(out, k), getattr(ref, k)) for k in ("policy", "wdl", "moves_left")
            }
            assert all(e <= limit for e in errs.values()), f"flash={flash}: {errs}"
        _replays_agree(fused, plain, net, (1, 2, 3, 4), replays=3, seed=200, limit=2 * limit)
    finally:
        fused.close()
        plain.close()
