"""The GPU backends' ``--backend-opts``, parsed once into a frozen record.

``GpuOptions.parse(BackendOptions)`` is the one place that reads, converts and validates them (a bad
value is one ``BackendOptionError`` line naming the option and what it accepts; an unknown name is
refused with the known ones). The record then travels, unchanged, from ``GpuBackend`` to
``GpuNetwork`` and to the kernel choices (``kernels.choose_attention``, ``residual_kernels``):
nothing below the backend reads option text or sets option flags on other objects.

=================== ========= ==============================================================
``flash``           ``on``    fused flash-attention kernel; ``off`` = GEMM+softmax fallback; ``v1`` /
                              ``v2`` force the one-shot / the persistent kernel (``on``, ``auto``:
                              v2 on sm_90, v1 elsewhere, or what ``lc0py tune`` saved); the same as
                              ``attn_persistent=0|1``
``graphs``          ``on``    replay one captured CUDA/HIP graph per batch-size bucket
``graph_buckets``   ``fine``  the batch sizes graphs are captured for (``weights.graph_bucket``):
                              ``fine`` exact to 8, then steps of 2 / 4 / 8 / 16 to 16 / 32 / 64 / 256
                              (32 graphs to 256, ~5 % padded rows); ``coarse`` powers of two to 16,
                              then multiples of 16 (20 graphs, up to 47 % padding at 17-64)
``max_batch``       ``256``   buffers are sized for this many positions up front (grow on demand)
``gpu``             ``0``     device ordinal (lc0's name), checked against the devices present
``verify``          ``off``   check the first batch against the numpy float64 reference, log errors
``precision``       (backend) ``fp32`` (``cuda``), ``fp16`` (``cuda-fp16``), or ``fp8``: the big GEMMs of an
                              attention body in FP8 e4m3 (``cuda-fp8``; NVIDIA compute capability 8.9+)
``fp8_scales``      ``outer``   per-channel weight and per-row activation scales both applied
                              inside cuBLASLt (outer-vector scaling, cuBLAS 12.9+; older: ``channel``
                              with a warning); ``channel``: one weight scale per output channel,
                              applied by an epilogue pass, activations per tensor; ``tensor``: one
                              per matrix, so QKV needs no epilogue pass and the output projection /
                              FFN2 add the residual inside cuBLASLt (beta = 1)
``fp8_fuse``        ``on``    with ``outer``: the per-row quantization done by the LayerNorm and
                              FFN1-epilogue kernels that produce the activations (``off``: separate
                              passes, the same codes)
``fp8_gemms``       ``all``   the GEMMs that run in FP8, ``+``-separated: ``qkv``, ``out``, ``ffn1``,
                              ``ffn2``, ``ffn`` (both), ``smolgen`` (``fp8_gemms=qkv+out+smolgen``);
                              the others run in fp16
``fp8_fast_accum``  ``on``    cuBLASLt's FP8 fast accumulation (Hopper: T82 ×1.05-1.08; sums
                              ~5e-4 relative against ~2e-4 exact, far below FP8's own error;
                              ``off``: the exact accumulation)
``tuned``           ``on``    use the flash parameters ``lc0py tune`` saved for this device, arch,
                              heads x depth and dtype (``off``: the built-in defaults)
``winograd``        ``auto``  residual nets: 3x3 convolutions as Winograd F(4x4,3x3) + batched GEMMs
                              (``auto``: on from ``WINOGRAD_MIN_FILTERS`` filters), else im2col + GEMM
``winograd_split``  ``on``    residual nets of <= 256 filters, fused Winograd step: a position's four
                              tiles on four threads; ``off``: one thread per channel
``winograd_staged`` ``auto``  residual nets, with the split step: persistent blocks that copy the next
                              position's rows into shared memory while computing, where the stages
                              fit; ``auto``: batches of 1.5 positions per resident block or more
``se_gates``        ``auto``  residual nets with SE, fused Winograd steps: the SE outside the second
                              convolution's step (se_fold.py); ``auto``: batches of 768 or more
``ln_residual``     ``auto``  attention nets: the residual add of the out-projection and FFN2 in the
                              LayerNorm kernel (``LN(y + alpha*b + x)``, GEMM with beta = 0) instead of
                              the GEMM's epilogue (beta = 1); ``auto``: batches up to ``ln_residual_max``
``ln_residual_max`` ``512``   with ``ln_residual=auto``: larger batches keep the residual in the GEMM
``smolgen_branch``  ``auto``  attention nets with smolgen: the compress GEMM and smolgen's dense/LN
                              steps on the side stream beside the QKV GEMM (which keeps to all but
                              ``side_sms`` multiprocessors), no column copy; ``auto``: batches up to
                              ``smolgen_branch_max``
``smolgen_branch_max`` ``128`` with ``smolgen_branch=auto``: larger batches run smolgen in line
``smolgen_rows``    ``auto``  attention nets with smolgen, batches of a few positions: each of smolgen's
                              two dense layers with its bias, activation and LayerNorm in one kernel
                              (kernels/dense_rows.hip) instead of a GEMM and a LayerNorm; ``auto``:
                              batches up to ``smolgen_rows_max``, ``on``: up to 8 (the kernel's most)
``smolgen_rows_max`` ``1``    with ``smolgen_rows=auto``: larger batches take the GEMMs (1 to 8)
``smolgen_compress`` ``auto`` attention nets with smolgen, batches of a few positions: smolgen's compress
                              and its first dense layer + LN in one kernel split by token
                              (kernels/compress_rows.hip) instead of the compress GEMM and the dense
                              layer's GEMM and LayerNorm (or ``dense_rows``); ``auto``: batches up to
                              ``smolgen_compress_max``, ``on``: up to 64 (the kernel's most)
``smolgen_compress_max`` ``8`` with ``smolgen_compress=auto``: larger batches take the other paths (1 to 64)
``smolgen_early``   ``auto``  attention nets with smolgen, where ``smolgen_compress``, ``smolgen_branch``
                              and ``ln_residual`` all apply: each layer's smolgen chain forks from
                              the previous layer's FFN2 output, its compress kernel forming that
                              layer's closing LayerNorm per token itself (``compress_rows_prenorm``),
                              so the chain runs beside the LayerNorm kernel instead of after it;
                              ``auto``: batches up to ``smolgen_early_max``, ``on``: wherever those apply
``smolgen_early_max`` ``3``   with ``smolgen_early=auto``: larger batches fork after the LayerNorm
``smolgen_chain``   ``off``   attention nets with smolgen, batches of a few positions: smolgen's compress,
                              dense 1 + LN and dense 2 + LN as one kernel with grid barriers
                              (kernels/smolgen_chain.hip; replaces ``smolgen_rows`` where both apply);
                              ``on``: batches up to 4, ``auto``: up to ``smolgen_chain_max``. Off by
                              default: slower than the kernels it replaces (fusions.py's table)
``smolgen_chain_max`` ``1``   with ``smolgen_chain=auto``: larger batches take the other paths (1 to 4)
``row_halves``      ``off``   attention nets: out-projection, LayerNorms and FFN on two halves of the
                              batch, each half's element-wise kernels on the side stream beside the
                              other half's GEMMs
``row_halves_min``  ``2``     with ``row_halves``: smaller batches run unsplit
``pdl``             ``auto``  launch the kernels with programmatic dependent launch (each scheduled while
                              the one before it still runs; NVIDIA compute capability 9.0+, driver
                              12.3+); ``auto``: on where the device has it, ``on`` elsewhere is one line
``side_sms``        ``16``    multiprocessors a GEMM leaves to side-stream work beside it
                              (``smolgen_branch``, ``row_halves``; 0: none)
``gemm_tune``       ``auto``  fp16 GEMMs of at least ``gemm_tune_min`` GFLOP run the fastest of
                              cuBLASLt's algorithms for their shape, timed on the device at their first
                              eager call and kept in the tuned folder (``lc0py/gpu/gemm_algos.py``);
                              ``auto``: on CUDA, ``on`` elsewhere is one line; ``off``: cublasGemmEx
``gemm_tune_min``   ``4``     the smallest GEMM ``gemm_tune`` times, in GFLOP (2·m·n·k)
``attn_<param>``              flash kernel parameters (``attn_warps``, ``attn_kv_tile``,
                              ``attn_stages``, ``attn_q_regs``, ``attn_min_blocks``,
                              ``attn_f32_threads``, ``attn_heads_per_block``, ``attn_persistent``,
                              ``attn_interleave``, ``attn_descend``, ``attn_copy_order``;
                              ``tuning.FlashParams``)
=================== ========= ==============================================================

(The policy behind ``auto``: ``residual_kernels.py`` and ``fusions.py``; measurements:
docs/performance.md, docs/gpu-design.md.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from lc0py.backends.gpu.tuning import OVERRIDABLE, param_problem
from lc0py.backends.gpu.weights import COMPRESS_ROWS_MAX, DENSE_ROWS_MAX, SMOLGEN_CHAIN_MAX
from lc0py.backends.options import BackendOptions, to_bool
from lc0py.errors import BackendOptionError

#: Every option name the GPU backends take, in the order ``--backend-opts`` errors list them.
KNOWN_OPTIONS = (
    "flash",
    "winograd",
    "winograd_staged",
    "winograd_split",
    "se_gates",
    "ln_residual",
    "ln_residual_max",
    "smolgen_branch",
    "smolgen_branch_max",
    "smolgen_rows",
    "smolgen_rows_max",
    "smolgen_compress",
    "smolgen_compress_max",
    "smolgen_early",
    "smolgen_early_max",
    "smolgen_chain",
    "smolgen_chain_max",
    "row_halves",
    "row_halves_min",
    "side_sms",
    "pdl",
    "gemm_tune",
    "gemm_tune_min",
    "graphs",
    "graph_buckets",
    "max_batch",
    "gpu",
    "verify",
    "tuned",
    "precision",
    "fp8_scales",
    "fp8_fuse",
    "fp8_fast_accum",
    "fp8_gemms",
    *(f"attn_{n}" for n in OVERRIDABLE),
)
MAX_BATCH_LIMIT = 65536
PRECISIONS = ("fp32", "fp16", "fp8")
GRAPH_BUCKETS = ("fine", "coarse")
FP8_SCALES = ("channel", "tensor", "outer")
FP8_GEMM_NAMES = ("qkv", "out", "ffn1", "ffn2", "smolgen")  # fp8.FP8_GEMMS
#: ``ln_residual=auto`` / ``smolgen_branch=auto`` take the fusion up to this batch: where it measured
#: faster than the unfused pass (T82 cuda-fp16 on one H100, 2026-11-28, tree 2663f8d: ln_residual
#: x1.061 / x1.022 / x0.984 at batch 64 / 256 / 1024, smolgen_branch x1.037 / x0.999 / x0.968;
#: the table in fusions.py)
LN_RESIDUAL_MAX = 512
SMOLGEN_BRANCH_MAX = 128
#: ``smolgen_rows=auto`` takes the fusion up to this batch (``on``: up to ``weights.DENSE_ROWS_MAX``,
#: the most rows its kernel takes). One position: where it measured faster (T82 cuda-fp16, one H200,
#: 2026-11-28, tree 24b4deb, backendbench, unfused / fused: x1.048 at 1, x0.974 at 2, x0.876 at 4,
#: x0.731 at 8 -- its per-row work is serial; with smolgen_compress, tree 9be3d45, kernels of a pass
#: +0.8 / +12 / +34 % against the GEMMs at 2 / 4 / 8; the table in fusions.py)
SMOLGEN_ROWS_MAX = 1
#: ``smolgen_compress=auto`` takes the fusion up to this batch (``on``: up to
#: ``weights.COMPRESS_ROWS_MAX``). Where it measured faster: T82 cuda-fp16, one H200, tree 1cf4a62,
#: backendbench off / on x1.058 / 1.068 / 1.029 at 2 / 4 / 8, x0.910 at 16 (every block reads all
#: 48 KB of compress weights, so L2 traffic grows with the batch); the table in fusions.py
SMOLGEN_COMPRESS_MAX = 8
#: ``smolgen_early=auto`` takes the fusion up to this batch (``on``: wherever ``smolgen_compress``
#: applies). Measured, T82 cuda-fp16, one H200, tree 65be965, device time of the captured pass
#: (scripts/bench/graph_replay.py, 8 alternated rounds), off / on: x1.059 / 1.030 / 1.014 / 0.990 /
#: 0.920 at 1 / 2 / 3 / 4 / 8 positions: from 4 on the compress kernel's blocks beside the
#: LayerNorm hold the QKV GEMM back (docs/performance.md §1)
SMOLGEN_EARLY_MAX = 3
#: ``smolgen_chain=auto`` takes the fusion up to this batch (``on``: up to ``weights.SMOLGEN_CHAIN_MAX``;
#: the default is ``off``, fusions.py)
SMOLGEN_CHAIN_MAX_AUTO = 1
#: ``gemm_tune_min``'s default (GFLOP), ``gemm_algos.DEFAULT_MIN_GFLOP``
GEMM_TUNE_MIN = 4


def fp8_gemms_value(key: str, value: str) -> tuple[str, ...]:
    """``fp8_gemms=qkv+out+ffn+smolgen`` (``all``; ``ffn`` = ffn1 + ffn2) -> the names, in the
    order of ``FP8_GEMM_NAMES``; an unknown name or an empty list is one line."""
    text = value.strip().lower()
    if text == "all":
        return FP8_GEMM_NAMES
    names: set[str] = set()
    for part in (p.strip() for p in text.split("+")):
        if part == "ffn":
            names |= {"ffn1", "ffn2"}
        elif part in FP8_GEMM_NAMES:
            names.add(part)
        else:
            known = ", ".join((*FP8_GEMM_NAMES, "ffn", "all"))
            raise BackendOptionError(f"--backend-opts: {key}='{value}': '{part}' is not one of {known}")
    return tuple(n for n in FP8_GEMM_NAMES if n in names)


def auto_or_bool(key: str, value: str) -> bool | None:
    """``auto`` -> None, ``on``/``off`` (and lc0's other spellings) -> bool; else one line."""
    text = value.strip().lower()
    if text == "auto":
        return None
    try:
        return to_bool(key, value)
    except BackendOptionError:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not one of on, off, auto") from None


def precision_value(key: str, value: str) -> str:
    """``precision=fp32|fp16|fp8`` (lc0's ``fp16`` spelling ``half`` too); else one line."""
    text = value.strip().lower()
    text = {"half": "fp16", "float": "fp32", "single": "fp32"}.get(text, text)
    if text not in PRECISIONS:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not one of {', '.join(PRECISIONS)}")
    return text


#: ``flash=`` values: name -> (flash on, ``FlashParams.persistent`` forced or None = automatic)
FLASH_VALUES: dict[str, tuple[bool, int | None]] = {
    "auto": (True, None),
    "v1": (True, 0),
    "v2": (True, 1),
}


def flash_value(key: str, value: str) -> tuple[bool, int | None]:
    """``flash=on|off|auto|v1|v2`` (and lc0's other on/off spellings) -> (on, persistent or None)."""
    text = value.strip().lower()
    if text in FLASH_VALUES:
        return FLASH_VALUES[text]
    try:
        return to_bool(key, value), None
    except BackendOptionError:
        raise BackendOptionError(
            f"--backend-opts: {key}='{value}' is not one of on, off, auto, v1 (one-shot kernel), "
            "v2 (persistent kernel)"
        ) from None


def flash_param(key: str, value: str) -> int:
    """``attn_<field>=N``: an integer the flash kernel accepts (``tuning.PARAM_LIMITS``)."""
    try:
        n = int(value.strip())
    except ValueError:
        raise BackendOptionError(f"--backend-opts: {key}='{value}' is not an integer") from None
    problem = param_problem(key.removeprefix("attn_"), n)
    if problem:
        raise BackendOptionError(f"--backend-opts: {key}: {problem}")
    return n


@dataclass(frozen=True)
class GpuOptions:
    """The GPU backends' options (table in the module docstring); ``None`` means ``auto``.

    Frozen and hashable, so the kernel choices can be pure functions of it."""

    flash: bool = True
    graphs: bool = True
    #: ``fine`` or ``coarse`` (``weights.graph_bucket``)
    graph_buckets: str = "fine"
    max_batch: int = 256
    gpu: int = 0
    verify: bool = False
    tuned: bool = True
    #: ``None``: the backend's own (fp32 for cuda/rocm, fp16 for cuda-fp16/rocm-fp16/gpu, fp8 for
    #: cuda-fp8); an explicit ``precision=`` wins
    precision: str | None = None
    fp8_scales: str = "outer"
    fp8_fuse: bool = True
    fp8_fast_accum: bool = True
    fp8_gemms: tuple[str, ...] = FP8_GEMM_NAMES
    winograd: bool | None = None
    winograd_split: bool = True
    winograd_staged: bool | None = None
    se_gates: bool | None = None
    #: attention bodies: the fused paths (``fusions.Fusions``), each A/B-able on its own; ``None``
    #: (``auto``): on for batches up to its ``*_max``
    ln_residual: bool | None = None
    ln_residual_max: int = LN_RESIDUAL_MAX
    smolgen_branch: bool | None = None
    smolgen_branch_max: int = SMOLGEN_BRANCH_MAX
    smolgen_rows: bool | None = None
    smolgen_rows_max: int = SMOLGEN_ROWS_MAX
    smolgen_compress: bool | None = None
    smolgen_compress_max: int = SMOLGEN_COMPRESS_MAX
    #: smolgen's chain forked before the previous layer's closing LayerNorm (``Fusions.smolgen_early``)
    smolgen_early: bool | None = None
    smolgen_early_max: int = SMOLGEN_EARLY_MAX
    smolgen_chain: bool | None = False
    smolgen_chain_max: int = SMOLGEN_CHAIN_MAX_AUTO
    row_halves: bool = False
    row_halves_min: int = 2
    #: multiprocessors a GEMM leaves to side-stream work beside it (``fusions.SIDE_SMS``)
    side_sms: int = 16
    #: programmatic dependent launch (``Platform.dependent_launch``); ``None``: where the device has it
    pdl: bool | None = None
    #: timed cuBLASLt algorithms for the large fp16 GEMMs (``gpu.gemm_algos``); ``None``: where the
    #: platform has them (CUDA)
    gemm_tune: bool | None = None
    #: the smallest GEMM timed, in GFLOP (2·m·n·k)
    gemm_tune_min: int = GEMM_TUNE_MIN
    #: flash kernel parameters (``FlashParams`` fields), sorted ``(name, value)`` pairs: the
    #: explicit ``attn_*`` options, merged over a tuned winner by the backend
    attn: tuple[tuple[str, int], ...] = ()

    @classmethod
    def parse(cls, options: BackendOptions) -> GpuOptions:
        """Take every GPU option from ``options`` and refuse what is left (an unknown name)."""
        take = options.take
        flash, persistent = take("flash", (True, None), flash_value)
        attn = {
            field: value
            for field in OVERRIDABLE
            if (value := take(f"attn_{field}", None, flash_param)) is not None
        }
        if persistent is not None:
            if attn.get("persistent", persistent) != persistent:
                raise BackendOptionError(
                    f"--backend-opts: flash=v{persistent + 1} and attn_persistent={attn['persistent']} "
                    "ask for different kernels"
                )
            attn["persistent"] = persistent
        record = cls(
            flash=flash,
            graphs=take("graphs", True),
            graph_buckets=options.take_choice("graph_buckets", "fine", GRAPH_BUCKETS),
            max_batch=take("max_batch", 256, lo=1, hi=MAX_BATCH_LIMIT),
            gpu=take("gpu", 0, lo=0),
            verify=take("verify", False),
            tuned=take("tuned", True),
            precision=take("precision", None, precision_value),
            fp8_scales=options.take_choice("fp8_scales", "outer", FP8_SCALES),
            fp8_fuse=take("fp8_fuse", True),
            fp8_fast_accum=take("fp8_fast_accum", True),
            fp8_gemms=take("fp8_gemms", FP8_GEMM_NAMES, fp8_gemms_value),
            winograd=take("winograd", None, auto_or_bool),
            winograd_split=take("winograd_split", True),
            winograd_staged=take("winograd_staged", None, auto_or_bool),
            se_gates=take("se_gates", None, auto_or_bool),
            ln_residual=take("ln_residual", None, auto_or_bool),
            ln_residual_max=take("ln_residual_max", LN_RESIDUAL_MAX, lo=1, hi=MAX_BATCH_LIMIT),
            smolgen_branch=take("smolgen_branch", None, auto_or_bool),
            smolgen_branch_max=take("smolgen_branch_max", SMOLGEN_BRANCH_MAX, lo=1, hi=MAX_BATCH_LIMIT),
            smolgen_rows=take("smolgen_rows", None, auto_or_bool),
            smolgen_rows_max=take("smolgen_rows_max", SMOLGEN_ROWS_MAX, lo=1, hi=DENSE_ROWS_MAX),
            smolgen_compress=take("smolgen_compress", None, auto_or_bool),
            smolgen_compress_max=take(
                "smolgen_compress_max", SMOLGEN_COMPRESS_MAX, lo=1, hi=COMPRESS_ROWS_MAX
            ),
            smolgen_early=take("smolgen_early", None, auto_or_bool),
            smolgen_early_max=take("smolgen_early_max", SMOLGEN_EARLY_MAX, lo=1, hi=COMPRESS_ROWS_MAX),
            smolgen_chain=take("smolgen_chain", False, auto_or_bool),
            smolgen_chain_max=take("smolgen_chain_max", SMOLGEN_CHAIN_MAX_AUTO, lo=1, hi=SMOLGEN_CHAIN_MAX),
            row_halves=take("row_halves", False),
            row_halves_min=take("row_halves_min", 2, lo=2, hi=MAX_BATCH_LIMIT),
            side_sms=take("side_sms", 16, lo=0, hi=4096),
            pdl=take("pdl", None, auto_or_bool),
            gemm_tune=take("gemm_tune", None, auto_or_bool),
            gemm_tune_min=take("gemm_tune_min", GEMM_TUNE_MIN, lo=0, hi=1_000_000),
            attn=tuple(sorted(attn.items())),
        )
        options.finish(KNOWN_OPTIONS)
        return record

    @classmethod
    def from_text(cls, text: str | None, backend: str = "") -> GpuOptions:
        """``GpuOptions.parse`` of a ``key=value,...`` string (scripts, tests)."""
        return cls.parse(BackendOptions.parse(text, backend))

    @property
    def fp8(self) -> bool:
        """The FP8 GEMM path (``precision=fp8``)."""
        return self.precision == "fp8"

    @property
    def flash_overrides(self) -> dict[str, int]:
        """The flash parameters as ``FlashParams`` field -> value."""
        return dict(self.attn)

    def with_flash_overrides(self, overrides: Mapping[str, int]) -> GpuOptions:
        """The same options with these flash parameters (a tuned winner, the tuner's candidate)."""
        return replace(self, attn=tuple(sorted(overrides.items())))
