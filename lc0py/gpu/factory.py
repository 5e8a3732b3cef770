"""Vendor selection: the one module that knows both GPU platforms.

``create_platform(vendor, device)`` imports the vendor module asked for only now (so importing
lc0py imports no vendor package) and returns its ``Platform`` on device ordinal ``device``
(the backends' ``gpu=N`` option). ``probe(vendor)`` is the registry's cheap "can this run here"
check. Vendor modules import ``platform`` and ``vendor_platform``, never this module.
"""

from __future__ import annotations

from lc0py.errors import BackendUnavailable
from lc0py.gpu.platform import Platform

VENDORS = ("nvidia", "amd", "auto")


def create_platform(vendor: str = "auto", device: int = 0) -> Platform:
    """The platform of ``vendor`` ("nvidia", "amd", or "auto": whichever is present) on ``device``.

    Raises ``BackendUnavailable`` with the reason when none can be used, and
    ``BackendOptionError`` (``gpu=3: this machine has 1 CUDA device (0)``) when the vendor is
    present but has no device ``device``.
    """
    if vendor not in VENDORS:
        raise BackendUnavailable(f"unknown GPU vendor '{vendor}' ({', '.join(VENDORS)})")
    reasons: list[str] = []
    if vendor in ("nvidia", "auto"):
        try:
            from lc0py.gpu.cuda_platform import CudaPlatform

            return CudaPlatform(device)
        except BackendUnavailable as exc:
            if vendor == "nvidia":
                raise
            reasons.append(f"cuda: {exc}")
    try:
        from lc0py.gpu.hip_platform import HipPlatform

        return HipPlatform(device)
    except ImportError as exc:
        if vendor == "amd":
            raise BackendUnavailable(f"HIP platform not available: {exc}") from None
        reasons.append(f"rocm: {exc}")
    except BackendUnavailable as exc:
        if vendor == "amd":
            raise
        reasons.append(f"rocm: {exc}")
    raise BackendUnavailable("no GPU platform: " + "; ".join(reasons))


def probe(vendor: str) -> str | None:
    """``None`` when ``vendor``'s GPU is usable here ("auto": either), else the reason (cheap,
    cached by the vendor modules)."""
    if vendor == "nvidia":
        from lc0py.gpu.cuda_platform import probe as probe_cuda

        return probe_cuda()
    if vendor == "amd":
        try:
            from lc0py.gpu.hip_platform import probe as probe_hip
        except ImportError:
            return "HIP platform not available in this build"
        return probe_hip()
    reason_cuda = probe("nvidia")
    if reason_cuda is None:
        return None
    reason_rocm = probe("amd")
    return None if reason_rocm is None else f"{reason_cuda}; {reason_rocm}"
