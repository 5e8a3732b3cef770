"""The host side of a device copy is checked before the driver sees it (vendor_platform): a copy
longer than its host buffer, or into a freed pinned buffer, is refused, since the device would
otherwise write memory Python may have handed to any other object."""

from __future__ import annotations

import numpy as np
import pytest

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
