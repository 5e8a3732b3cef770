"""Which fused paths an attention body's forward pass takes, decided once per network.

Each fusion is one ``--backend-opts`` switch (``GpuOptions``), so a device run can A/B it alone
(``scripts/device/gpu_fusion_ab``) and a fusion that does not pay is turned off, not deleted:

* ``ln_residual``: the residual add after the out-projection and FFN2 GEMMs moves from the GEMM's
  epilogue (``beta = 1``: C read and rewritten by cuBLAS) into the LayerNorm kernel
  (``kernels/layernorm.hip`` reads the skip row beside the GEMM output: ``LN(y + alpha*b + x)``),
  the GEMM then runs with ``beta = 0``. The same bytes move (the GEMM no longer reads C, the
  LayerNorm reads it instead); what it changes is which cuBLAS kernel runs (at batch 256 the
  ``beta = 1`` FFN2 GEMM took 50 us against 44 us for FFN1's, the same FLOPs with ``beta = 0``:
  bench/results/2026-11-27_h100_eae3b5b/gpu_bench.log).
* ``smolgen_branch``: the smolgen compress columns come from their own GEMM (the compress rows of
  the fused QKV weight, written contiguous: no ``copy_columns``), and smolgen's dense1 -> LN ->
  dense2 -> LN run on the side stream beside the QKV GEMM, which keeps to all but ``smolgen_sms``
  multiprocessors (default ``SMOLGEN_BRANCH_SMS``). Those five latency-bound steps (~40 us a layer
  at batch 256 on an H100, 8 % of the pass) leave the critical path; the generator GEMM (it needs
  all multiprocessors) stays after the join.

The decision is a pure function of the options, the net's shape and the device, like
``kernels.choose_attention`` and ``residual_kernels``; ``layers.GpuModel`` only follows it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lc0py.backends.gpu.options import GpuOptions
from lc0py.backends.gpu.residual_kernels import SE_BRANCH_SMS
from lc0py.gpu.platform import DeviceInfo

#: Multiprocessors the QKV GEMM leaves to the smolgen branch by default (``smolgen_sms``; cuBLAS's
#: Hopper GEMMs are persistent, one block a multiprocessor: on all of them the branch would wait
#: for the GEMM's end). The residual body's SE branch count, measured there (residual_kernels.py);
#: ``scripts/device/gpu_fusion_ab`` measures this branch's.
SMOLGEN_BRANCH_SMS = SE_BRANCH_SMS


@dataclass(frozen=True)
class Fusions:
    """The fused paths one attention network runs (module docstring); all off is the unfused pass."""

    ln_residual: bool = False
    smolgen_branch: bool = False
    #: the QKV GEMM's multiprocessor target while the smolgen branch runs (0: all)
    qkv_sms: int = 0

    def describe(self) -> str:
        """One line for ``-v`` logs and the device scripts."""
        on = [name for name in ("ln_residual", "smolgen_branch") if getattr(self, name)]
        text = ", ".join(on) if on else "none"
        if self.smolgen_branch and self.qkv_sms:
            text += f" (QKV GEMM on {self.qkv_sms} multiprocessors)"
        return f"fusions: {text}"


def choose_fusions(options: GpuOptions, smolgen: bool, device: DeviceInfo, can_fork: bool) -> Fusions:
    """The fusions of ``options`` that apply to a net (``smolgen``: it has smolgen) on ``device``;
    ``can_fork``: the platform has a side stream (without one the branch runs inline, in order,
    and the QKV GEMM keeps every multiprocessor)."""
    branch = options.smolgen_branch and smolgen
    beside = branch and can_fork and options.smolgen_sms > 0
    sms = max(1, device.sm_count - options.smolgen_sms) if beside else 0
    return Fusions(ln_residual=options.ln_residual, smolgen_branch=branch, qkv_sms=sms)


#: every fusion off: the unfused pass (the default of the layers' constructors)
NO_FUSIONS = Fusions()
