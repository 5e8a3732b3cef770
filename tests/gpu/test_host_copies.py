"""The host side of a device copy is checked before the driver sees it (vendor_platform): a copy
longer than its host buffer, or into a freed pinned buffer, is refused, since the device would
otherwise write memory Python may have handed to any other object."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest

from lc0py.gpu.cuda_platform import CudaPlatform
from lc0py.gpu.hip_platform import HipPlatform
from lc0py.gpu.platform import HostBuffer
from lc0py.gpu.vendor_platform import VendorPlatform


def test_a_copy_that_fits_gets_the_arrays_address() -> None:
    rng = np.random.default_rng()
    host = rng.standard_normal(int(rng.integers(4, 64))).astype(np.float32)
    assert VendorPlatform._host_ptr(host, host.nbytes) == host.ctypes.data
    assert VendorPlatform._host_ptr(host, host.nbytes - 4) == host.ctypes.data


def test_a_copy_past_the_end_of_an_array_is_refused() -> None:
    host = np.ones(8, np.float16)
    with pytest.raises(ValueError, match="17 bytes does not fit its host buffer of 16 bytes"):
        VendorPlatform._host_ptr(host, 17)


def test_a_non_contiguous_array_is_refused() -> None:
    with pytest.raises(ValueError, match="C-contiguous"):
        VendorPlatform._host_ptr(np.ones((4, 4), np.float32)[:, 1], 4)


def test_a_pinned_buffer_is_checked_by_its_size_and_refused_once_freed() -> None:
    backing = np.ones(32, np.uint8)  # stands in for pinned memory
    buf = HostBuffer(int(backing.ctypes.data), 32)
    assert VendorPlatform._host_ptr(buf, 32) == backing.ctypes.data
    with pytest.raises(ValueError, match="33 bytes does not fit"):
        VendorPlatform._host_ptr(buf, 33)
    buf.ptr = 0  # what free_host leaves
    with pytest.raises(ValueError, match="already freed"):
        VendorPlatform._host_ptr(buf, 1)



def test_a_download_into_a_read_only_array_is_refused() -> None:
    """An array over ``bytes`` is read-only: its memory may be an object other code shares (a
    one-byte ``bytes`` is one object for the whole process), so the device must never write it.
    Uploading from it is fine."""
    data = np.random.default_rng().integers(1, 255, 16, dtype=np.uint8).tobytes()
    host = np.frombuffer(data, np.uint8)
    assert VendorPlatform._host_ptr(host, 16) == host.ctypes.data
    with pytest.raises(ValueError, match="read-only"):
        VendorPlatform._host_ptr(host, 16, writes=True)
    writable = np.frombuffer(bytearray(data), np.uint8)
    assert VendorPlatform._host_ptr(writable, 16, writes=True) == writable.ctypes.data


def _recording_platform(vendor: str) -> tuple[VendorPlatform, list[str]]:
    """A CUDA or HIP platform (not initialised: no driver here) whose driver records its copies."""
    calls: list[str] = []

    def record(name: str) -> Callable[..., tuple[int]]:
        return lambda *args: calls.append(name) or (0,)

    names = ("MemcpyHtoDAsync", "MemcpyDtoHAsync")
    if vendor == "nvidia":
        plat: VendorPlatform = object.__new__(CudaPlatform)
        plat._drv = SimpleNamespace(**{f"cu{n}": record(f"cu{n}") for n in names})  # type: ignore[attr-defined]
    else:
        plat = object.__new__(HipPlatform)
        plat._hip = SimpleNamespace(**{f"hip{n}": record(f"hip{n}") for n in names})  # type: ignore[attr-defined]
    plat._objs = {}
    return plat, calls


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_every_copy_of_both_platforms_is_checked_before_the_driver_sees_it(vendor: str) -> None:
    """The vendor copies go through ``_host_ptr``: a download into read-only or too small host
    memory, or into a freed pinned buffer, never reaches the driver."""
    plat, calls = _recording_platform(vendor)
    rng = np.random.default_rng()
    host = rng.standard_normal(8).astype(np.float32)
    plat.copy_h2d(0x1000, host, host.nbytes, 0)
    plat.copy_d2h(host, 0x1000, host.nbytes, 0)
    assert len(calls) == 2
    with pytest.raises(ValueError, match="read-only"):
        plat.copy_d2h(np.frombuffer(host.tobytes(), np.float32), 0x1000, host.nbytes, 0)
    with pytest.raises(ValueError, match="does not fit"):
        plat.copy_d2h(host, 0x1000, host.nbytes + 1, 0)
    with pytest.raises(ValueError, match="does not fit"):
        plat.copy_h2d(0x1000, host, host.nbytes + 1, 0)
    backing = np.ones(32, np.uint8)
    buf = HostBuffer(int(backing.ctypes.data), 32)
    buf.ptr = 0  # freed
    with pytest.raises(ValueError, match="already freed"):
        plat.copy_d2h(buf, 0x1000, 4, 0)
    assert len(calls) == 2
