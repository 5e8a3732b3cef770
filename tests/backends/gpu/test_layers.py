"""The GPU forward pass as layers, checked without a GPU on a platform that records pointers.

Every launch and GEMM of a forward pass is recorded with its pointer arguments. Checked: every
uploaded weight array is read by some launch (an upload no layer reads would be dead weight --
the typed records make such a field visible, this test makes it fail), every pointer lies inside
an allocation, and the fallback and flash paths both run, for PE_MAP and PE_DENSE embeddings,
with and without smolgen, gating and the moves-left head; and for residual (SE-ResNet) nets
with every policy head (convolution, classical, attention), with and without SE and moves-left.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from lc0py.backends.base import PlanesBatch
from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.residual_kernels import SE_BRANCH_SMS, SE_GATES_AUTO_MIN, FusedStep, split_staged_grid
from lc0py.backends.gpu.weights import leaves
from lc0py.gpu.platform import DeviceInfo
from lc0py.weights.presets import random_network
from tests.kernels.amd_backend_compiles import RecordingPlatform


class PointerPlatform(RecordingPlatform):
    """An NVIDIA sm_90 that allocates address ranges and records the pointers each op is given."""

    vendor = "nvidia"
    binary_kind = "cubin"

    def __init__(self) -> None:
        super().__init__("sm_90", 32)
        self.info = DeviceInfo("nvidia", 0, "pointers", "sm_90", 132, 32, 48 * 1024, 227 * 1024, 1 << 34)
        self.regions: list[tuple[int, int]] = []
        self._top = 1 << 32
        self.used: list[int] = []
        self.launched: list[int] = []  # kernel handles, in launch order
        self.gemm_sms: list[int] = []  # each GEMM's multiprocessor target (0: all), in order

    def alloc(self, nbytes: int) -> int:
        base = self._top
        self._top += (nbytes + 0xFFFF) & ~0xFFFF
        self.regions.append((base, nbytes))
        return base

    def launch(self, fn: int, grid: Any, block: Any, smem: int, stream: int, args: list[Any]) -> None:
        self.used += [a.value for a in args if isinstance(a, ctypes.c_void_p) and a.value]
        self.launched.append(fn)

    def gemm(self, stream: int, m: int, n: int, k: int, a: int, *args: Any, **kw: Any) -> None:
        lda, b, ldb, c, ldc = args
        self.used += [a, b, c]
        self.gemm_sms.append(int(kw.get("sms", 0)))

    def inside(self, ptr: int) -> bool:
        return any(base <= ptr < base + n for base, n in self.regions)


def _net(preset: str, **kw: Any) -> Any:
    return random_network(preset, 2, **kw)


def _assert_forward_reads_every_weight_in_bounds(
    gpu: Any, plat: PointerPlatform, seed: int, sizes: tuple[int, ...] = (3,)
) -> None:
    """A forward pass of random positions for each batch size on ``plat``: every uploaded weight
    array is handed to some launch or GEMM of one of them, and no pointer falls outside an
    allocation."""
    weights = leaves(gpu.model_weights)
    assert weights and all(isinstance(p, int) for p in weights)
    plat.used.clear()
    for n in sizes:
        masks = np.random.default_rng(seed).integers(1, 2**63, size=(n, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((n, 112), np.float32)))
    used = set(plat.used)
    unread = [p for p in weights if p not in used]
    assert not unread, f"{len(unread)} uploaded weight arrays are never read by the forward pass"
    outside = [p for p in used if not plat.inside(p)]
    assert not outside, f"pointers outside every allocation: {outside[:5]}"


CASES = {
    "tiny": dict(preset="tiny"),
    "tiny-pe_dense": dict(preset="tiny", embedding="pe_dense"),
    "t82-1layer": dict(preset="t82", layers=1),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("fp16", [True, False])
@pytest.mark.parametrize("flash", [True, False])
def test_forward_reads_every_weight_and_stays_in_bounds(case: str, fp16: bool, flash: bool) -> None:
    from lc0py.backends.gpu.network import GpuNetwork

    net = _net(**CASES[case])
    plat = PointerPlatform()
    gpu = GpuNetwork(plat, net, fp16=fp16, options=GpuOptions(flash=flash, graphs=False, max_batch=4))
    try:
        assert gpu.uses_flash == flash, gpu.flash_choice.reason
        _assert_forward_reads_every_weight_in_bounds(gpu, plat, seed=0)
    finally:
        gpu.close()


def test_model_is_a_loop_over_layer_objects() -> None:
    from lc0py.backends.gpu.layers import EncoderLayer, PeDenseEmbedding, PeMapEmbedding
    from lc0py.backends.gpu.network import GpuNetwork

    cases = [(dict(preset="tiny"), PeMapEmbedding)]
    cases.append((dict(preset="tiny", embedding="pe_dense"), PeDenseEmbedding))
    for kw, emb_type in cases:
        net = _net(**kw)
        gpu = GpuNetwork(PointerPlatform(), net, options=GpuOptions(graphs=False, max_batch=1))
        try:
            assert isinstance(gpu.model.embedding, emb_type)
            assert len(gpu.model.encoders) == len(net.encoders)
            assert all(isinstance(layer, EncoderLayer) for layer in gpu.model.encoders)
            # one attention object (one kernel) serves every layer
            assert len({id(layer.attention) for layer in gpu.model.encoders}) == 1
        finally:
            gpu.close()


RESIDUAL_CASES = {
    "res-tiny-conv": dict(preset="res-tiny"),
    "res-tiny-classical-noSE-noMLH": dict(
        preset="res-tiny", policy="classical", policy_channels=8, se=False, moves_left=False, wdl=False
    ),
    "res-tiny-attention": dict(preset="res-tiny", policy="attention", policy_embedding=32, policy_dmodel=32),
    "res-20x256-1block": dict(preset="res-20x256", blocks=1),
    "res-tiny-conv-winograd": dict(preset="res-tiny", winograd=True),
    "res-tiny-classical-winograd": dict(
        preset="res-tiny", policy="classical", policy_channels=8, winograd=True
    ),
    # widths winograd_output_fused takes: 8 positions per block (32 filters), one (256), no SE
    "res-32-conv-winograd-fused": dict(preset="res-tiny", filters=32, se_hidden=8, winograd=True),
    "res-20x256-1block-winograd-fused": dict(preset="res-20x256", blocks=1, winograd=True),
    # the SE outside the fused step: per-tile sums, the folded fc1 GEMM, se_gates, gated step
    "res-32-se-gates-winograd-fused": dict(
        preset="res-tiny", filters=32, se_hidden=8, winograd=True, se_gates=True
    ),
    "res-20x256-1block-se-gates-winograd-fused": dict(
        preset="res-20x256", blocks=1, winograd=True, se_gates=True
    ),
    # se_gates=auto: fc1 and its fold both uploaded, small batches read the one, large the other
    "res-32-se-gates-auto-winograd-fused": dict(
        preset="res-tiny", filters=32, se_hidden=8, winograd=True, se_gates=None
    ),
    "res-64-attention-noSE-winograd-fused": dict(
        preset="res-tiny", filters=64, se=False, policy="attention", policy_embedding=32, policy_dmodel=32,
        winograd=True,
    ),
}


@pytest.mark.parametrize("case", sorted(RESIDUAL_CASES))
@pytest.mark.parametrize("fp16", [True, False])
def test_residual_forward_reads_every_weight_and_stays_in_bounds(case: str, fp16: bool) -> None:
    from lc0py.backends.gpu.layers_residual import GpuResidualModel, ResidualBlock
    from lc0py.backends.gpu.network import GpuNetwork

    kw = dict(RESIDUAL_CASES[case])
    winograd = bool(kw.pop("winograd", False))
    se_gates = kw.pop("se_gates", False)
    net = _net(**kw)
    plat = PointerPlatform()
    sizes = (3,) if se_gates is not None else (3, SE_GATES_AUTO_MIN)
    opts = GpuOptions(graphs=False, max_batch=max(sizes), winograd=winograd, se_gates=se_gates)
    gpu = GpuNetwork(plat, net, fp16=fp16, options=opts)
    try:
        assert isinstance(gpu.model, GpuResidualModel) and not gpu.uses_flash
        if se_gates is not False:
            ses = [b.w.se for b in gpu.model.blocks]
            assert all(se is not None and se.fold_w is not None for se in ses)
            assert all(se is not None and (se.fc1_w is None) is (se_gates is True) for se in ses)
        else:
            assert all(b.w.se is None or b.w.se.fold_w is None for b in gpu.model.blocks)
        assert gpu.model.fused is case.endswith("-fused")  # res-tiny's 16 filters: the unfused kernels
        assert len(gpu.model.blocks) == len(net.blocks)
        assert all(isinstance(b, ResidualBlock) for b in gpu.model.blocks)
        _assert_forward_reads_every_weight_in_bounds(gpu, plat, seed=1, sizes=sizes)
    finally:
        gpu.close()


@pytest.mark.parametrize("se_gates", [True, False, None], ids=["on", "off", "auto"])
def test_se_gates_option_picks_where_the_gates_are_made(se_gates: bool | None) -> None:
    """``se_gates=on`` makes every batch's SE gates outside the fused step (se_gates kernel),
    ``off`` none, ``auto`` batches of ``SE_GATES_AUTO_MIN`` or more. Where the gates are made
    outside, each block's second convolution GEMM leaves ``SE_BRANCH_SMS`` multiprocessors to
    their branch, and no other GEMM keeps to fewer than all."""
    from lc0py.backends.gpu.network import GpuNetwork

    plat = PointerPlatform()
    net = _net("res-tiny", filters=32, se_hidden=8, blocks=2)
    opts = GpuOptions(graphs=False, max_batch=SE_GATES_AUTO_MIN, winograd=True, se_gates=se_gates)
    gpu = GpuNetwork(plat, net, fp16=True, options=opts)
    try:
        for n in (1, SE_GATES_AUTO_MIN - 1, SE_GATES_AUTO_MIN):
            want = se_gates is True or (se_gates is None and n >= SE_GATES_AUTO_MIN)
            assert gpu.residual_kernels is not None and gpu.residual_kernels.se_outside(True, n) is want, n
            plat.launched.clear()
            plat.gemm_sms.clear()
            masks = np.random.default_rng(n).integers(1, 2**63, size=(n, 112), dtype=np.uint64)
            gpu.submit(PlanesBatch(masks, np.ones((n, 112), np.float32)))
            assert plat.launched.count(gpu.ops.k_se_gates) == (len(net.blocks) if want else 0), n
            beside = plat.info.sm_count - SE_BRANCH_SMS
            assert plat.gemm_sms.count(beside) == (len(net.blocks) if want else 0), n
            assert set(plat.gemm_sms) <= {0, beside}, n
    finally:
        gpu.close()


@pytest.mark.parametrize("fp16", [True, False])
@pytest.mark.parametrize("staged", [True, False, None], ids=["on", "off", "auto"])
def test_winograd_staged_option_picks_the_fused_kernel(fp16: bool, staged: bool | None) -> None:
    """``winograd_staged=on`` runs the staged split step where its stages fit (fp16 at 256
    filters: 217 KiB of an H100's 227), else the split kernel (fp32 would need 397 KiB); ``auto``
    only for batches of 1.5 positions or more per resident block (one a multiprocessor here)."""
    from lc0py.backends.gpu.network import GpuNetwork

    plat = PointerPlatform()
    net = _net("res-20x256", blocks=2)
    opts = GpuOptions(graphs=False, max_batch=4, winograd=True, winograd_staged=staged)
    gpu = GpuNetwork(plat, net, fp16=fp16, options=opts)
    try:
        kernels = gpu.residual_kernels
        assert kernels is not None and kernels.options.winograd_staged is staged
        assert kernels.options.winograd_split  # split: the default
        masks = np.random.default_rng(2).integers(1, 2**63, size=(3, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((3, 112), np.float32)))
        n_staged = plat.launched.count(gpu.ops.k_wino_staged)
        n_split = plat.launched.count(gpu.ops.k_wino_split)
        assert plat.launched.count(gpu.ops.k_wino_fused) == 0
        assert n_staged + n_split == 1 + 2 * len(net.blocks) + 1  # input conv, 2 per block, policy conv
        assert (n_staged > 0) is (staged is True and fp16)
        assert n_staged == 0 or n_split == 0
        sms = plat.info.sm_count
        threshold = (3 * sms + 1) // 2  # auto: 1.5 positions per resident block or more
        for bsz in (1, threshold - 1, threshold, 5000):
            want = fp16 and (staged is True or (staged is None and bsz >= threshold))
            assert (kernels.fused_step(256, 32, bsz) is FusedStep.STAGED) is want, bsz
        if fp16:
            assert split_staged_grid(256, 32, 2, plat.info, 3) == 3  # never more blocks than positions
            assert split_staged_grid(256, 32, 2, plat.info, 5000) == sms  # one 1,024-thread block an SM
    finally:
        gpu.close()


@pytest.mark.parametrize(
    ("preset", "split", "expect_split"),
    [("res-20x256", True, True), ("res-20x256", False, False), ("t78", True, False)],
)
def test_winograd_split_option_picks_the_fused_kernel(preset: str, split: bool, expect_split: bool) -> None:
    """``winograd_split=on`` runs every fused step of a body of <= 256 filters on the split kernel
    (4 x c threads a block); 512 filters would need 2,048 threads, so t78 keeps the direct one."""
    from lc0py.backends.gpu.network import GpuNetwork

    plat = PointerPlatform()
    net = _net(preset, blocks=2)
    opts = GpuOptions(graphs=False, max_batch=4, winograd=True, winograd_split=split)
    gpu = GpuNetwork(plat, net, fp16=True, options=opts)
    try:
        masks = np.random.default_rng(4).integers(1, 2**63, size=(3, 112), dtype=np.uint64)
        gpu.submit(PlanesBatch(masks, np.ones((3, 112), np.float32)))
        n_split = plat.launched.count(gpu.ops.k_wino_split)
        n_direct = plat.launched.count(gpu.ops.k_wino_fused)
        assert n_split + n_direct == 2 * len(net.blocks) + (2 if preset == "res-20x256" else 1)
        assert (n_split > 0) is expect_split and (n_direct > 0) is not expect_split
    finally:
        gpu.close()


@pytest.mark.parametrize(("filters", "fused"), [(64, True), (16, False)])
def test_fused_steps_are_built_for_the_body_width(
    filters: int, fused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fused Winograd steps are compiled with ``LC0_STEP_C`` = the body's filters (their row
    strides constants), both builds of them, and launching them for another width is refused; a
    body the fused steps do not take builds them for a run-time width (``LC0_STEP_C=0``)."""
    from lc0py.backends.gpu.network import GpuNetwork

    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")  # every module reaches compile()
    plat = PointerPlatform()
    net = _net("res-tiny", filters=filters, se_hidden=8, blocks=1)
    opts = GpuOptions(graphs=False, max_batch=4, winograd=True, se_gates=None)
    gpu = GpuNetwork(plat, net, fp16=True, options=opts)
    try:
        assert gpu.model.fused is fused and gpu.ops.step_c == (filters if fused else 0)
        widths = {o for _, opts in plat.compiles for o in opts if o.startswith("-DLC0_STEP_C=")}
        assert widths == {f"-DLC0_STEP_C={filters if fused else 0}"}
        se_builds = {o for _, opts in plat.compiles if f"-DLC0_STEP_C={filters}" in opts for o in opts
                     if o.startswith("-DLC0_SE_OUTSIDE=")}
        assert se_builds == ({"-DLC0_SE_OUTSIDE=0", "-DLC0_SE_OUTSIDE=1"} if fused else set())
        if fused:
            with pytest.raises(AssertionError):
                gpu.ops.winograd_fused(FusedStep.SPLIT, 0, 0, 0, 0, 0, None, 2 * filters, 0, 2, 1)
    finally:
        gpu.close()


@pytest.mark.parametrize("se_gates", [True, False], ids=["se_gates", "inside"])
def test_residual_cross_stream_accesses_are_ordered(se_gates: bool) -> None:
    """The residual body's side-stream work (the SE gates beside the second convolution's GEMMs,
    the value/moves-left heads) replayed with its event records and waits: nothing on one stream
    touches, unordered, bytes another stream writes (tests/backends/gpu/stream_order.py)."""
    from lc0py.backends.gpu.network import GpuNetwork
    from tests.backends.gpu.stream_order import StreamPlatform, unordered_conflicts

    plat = StreamPlatform()
    net = _net("res-tiny", filters=32, se_hidden=8, blocks=2)
    opts = GpuOptions(graphs=False, max_batch=4, winograd=True, se_gates=se_gates)
    gpu = GpuNetwork(plat, net, fp16=True, options=opts)
    try:
        masks = np.random.default_rng(4).integers(1, 2**63, size=(3, 112), dtype=np.uint64)
        plat.timeline.clear()
        plat.ops_seen.clear()
        gpu.submit(PlanesBatch(masks, np.ones((3, 112), np.float32)))
        assert {stream for _, stream, _ in plat.ops_seen} == {gpu.ops.main, gpu.ops.side}
        assert not unordered_conflicts(gpu, plat)
    finally:
        gpu.close()
