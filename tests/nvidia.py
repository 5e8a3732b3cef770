"""The one skip rule of the NVIDIA GPU tests: without a usable GPU (cuda-python, driver, a device),
skip with ``cuda_platform.probe``'s reason. Fixtures call it when a test runs, so nothing queries
the device at import and the tests are collected on any machine."""

from __future__ import annotations

import pytest


def require_nvidia_gpu() -> None:
    """Skip the calling test or fixture unless an NVIDIA GPU is usable."""
    from lc0py.gpu.cuda_platform import probe

    reason = probe()
    if reason is not None:
        pytest.skip(reason)
