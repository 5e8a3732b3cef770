"""A platform whose host copies happen when the device reaches them, not when they are enqueued.

On a GPU ``copy_h2d`` / ``copy_d2h`` only enqueue: the device reads (or writes) the host memory
later, when its stream gets there. Host memory that is freed, collected or rewritten before that
is a silent bug: the device uploads garbage, or writes memory Python has given to another object.
``AsyncCopyPlatform`` (a ``PointerPlatform``: no GPU) keeps every copy pending until a
``synchronize`` / ``event_synchronize``, and then checks that its host side is still there:

* pinned memory (``alloc_host``) not freed: ``free_host`` of a buffer a pending copy uses is a
  problem, and a freed buffer is poisoned (0xFF: NaN in fp16 and fp32) so a later read shows;
* pageable memory (a numpy array) still alive: the array owning the memory has not been collected;
* an upload's source unchanged since it was enqueued.

Then a download fills its destination with ``FILL`` bytes (the "device's" output). Everything
found goes to ``problems``, which a test asserts is empty.
"""

from __future__ import annotations

import ctypes
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from lc0py.gpu.platform import HostBuffer
from lc0py.gpu.vendor_platform import VendorPlatform
from tests.backends.gpu.test_layers import PointerPlatform

#: The byte every download writes: fp16 0x3C3C is ~1.06, fp32 0x3C3C3C3C ~0.0115.
FILL = 0x3C
POISON = 0xFF


@dataclass
class _Copy:
    kind: str  # "h2d" | "d2h"
    ptr: int
    nbytes: int
    pinned: int | None  # base of the pinned buffer holding ptr; None: pageable
    owner: weakref.ReferenceType[Any] | None  # the numpy array owning pageable memory
    snapshot: bytes  # an upload's source as enqueued


def memory_owner(x: np.ndarray) -> np.ndarray:
    """The array at the bottom of ``x``'s chain of views (the one owning or wrapping the memory)."""
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


class AsyncCopyPlatform(PointerPlatform):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.pinned: dict[int, tuple[int, bool]] = {}  # base -> (nbytes, freed)
        self.pending: list[_Copy] = []
        self.problems: list[str] = []

    # ---- pinned memory -------------------------------------------------------------------
    def alloc_host(self, nbytes: int) -> HostBuffer:
        buf = super().alloc_host(nbytes)
        self.pinned[buf.ptr] = (max(nbytes, 1), False)
        return buf

    def free_host(self, buf: HostBuffer) -> None:
        if not buf.ptr:
            return
        base = buf.ptr
        size, _ = self.pinned[base]
        for c in self.pending:
            if c.pinned == base:
                self.problems.append(f"pinned buffer {base:#x} freed while a {c.kind} copy of it was pending")
        ctypes.memset(base, POISON, size)  # the allocator's memory now: whatever reads it sees NaN
        self.pinned[base] = (size, True)
        buf.ptr = 0

    def is_freed(self, ptr: int) -> bool:
        """Whether the pinned buffer holding ``ptr`` has been freed (``KeyError``: not pinned)."""
        base = self._pinned_base(ptr)
        if base is None:
            raise KeyError(hex(ptr))
        return self.pinned[base][1]

    def _pinned_base(self, ptr: int) -> int | None:
        for base, (size, _) in self.pinned.items():
            if base <= ptr < base + size:
                return base
        return None

    # ---- copies ----------------------------------------------------------------------------
    def _enqueue(self, kind: str, host: np.ndarray | HostBuffer, nbytes: int) -> None:
        ptr = VendorPlatform._host_ptr(host, nbytes, writes=kind == "d2h")
        base = self._pinned_base(ptr)
        owner = None
        if base is None:
            if not isinstance(host, np.ndarray):
                raise TypeError(f"{kind} copy of {type(host).__name__}: not pinned and not numpy")
            owner = weakref.ref(memory_owner(host))
        elif self.pinned[base][1]:
            self.problems.append(f"{kind} copy enqueued on freed pinned buffer {base:#x}")
        snapshot = ctypes.string_at(ptr, nbytes) if kind == "h2d" else b""
        self.pending.append(_Copy(kind, ptr, nbytes, base, owner, snapshot))

    def copy_h2d(self, dst: int, src: Any, nbytes: int, stream: int) -> None:
        if nbytes:
            self._enqueue("h2d", src, nbytes)

    def copy_d2h(self, dst: Any, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            self._enqueue("d2h", dst, nbytes)

    def _run_pending(self) -> None:
        """The device reaches every pending copy (one device, all streams at once)."""
        for c in self.pending:
            if c.pinned is not None:
                if self.pinned[c.pinned][1]:
                    self.problems.append(f"{c.kind} copy ran on freed pinned buffer {c.pinned:#x}")
                    continue
            elif c.owner is not None and c.owner() is None:
                self.problems.append(f"{c.kind} copy ran on a collected host array ({c.nbytes} bytes)")
                continue
            if c.kind == "h2d":
                if ctypes.string_at(c.ptr, c.nbytes) != c.snapshot:
                    self.problems.append(f"h2d source of {c.nbytes} bytes changed before the device read it")
            else:
                ctypes.memset(c.ptr, FILL, c.nbytes)
        self.pending.clear()

    def synchronize(self, stream: int | None = None) -> None:
        self._run_pending()

    def event_synchronize(self, event: int) -> None:
        self._run_pending()
