"""Fixtures of the GPU backend tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.nvidia import require_nvidia_gpu


@pytest.fixture(scope="module")
def cuda_platform() -> Iterator[Any]:
    """A ``CudaPlatform`` on device 0 for the module's tests (skips without an NVIDIA GPU)."""
    require_nvidia_gpu()
    from lc0py.gpu.cuda_platform import CudaPlatform

    p = CudaPlatform(0)
    yield p
    p.close()
