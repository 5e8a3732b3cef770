"""Run-time kernel compilation with an on-disk cache.

``KernelCache(platform).function(source, kernel_name, defines)`` compiles ``kernels/<source>``
for the device's arch (NVRTC on NVIDIA, hiprtc on AMD, through the ``Platform``), loads it and
returns the kernel handle. Binaries are cached:

* in memory per process, keyed like the disk cache;
* on disk under ``$LC0PY_KERNEL_CACHE`` (default ``kernels/`` in the lc0py cache root,
  ``lc0py.storage.cache``: ``$LC0PY_CACHE_DIR`` or ``~/.cache/lc0py``);
  ``LC0PY_KERNEL_CACHE=off`` (or ``0``/``none``/empty) disables it.

The key covers everything that changes the binary: the source and *every* header in the kernel
folder (so editing ``mma.h`` invalidates all kernels), the defines and options, the arch (the
device's compile target), the binary kind and the compiler version. Entries are written and read
through ``storage.cache.EntryStore``: atomic writes, a record with the binary's SHA-256 and the
full key, verified before the binary is loaded (a corrupt or swapped binary is logged, dropped and
recompiled). ``LC0PY_KERNEL_ASSERT_CACHED=1`` makes any compile an error (benchmarks that must
not include compile time).

Where the kernels are: ``$LC0PY_KERNEL_DIR`` if set; else ``lc0py/kernels/``, the one folder of
sources in a checkout and in an installed package alike (``pyproject.toml`` ships it as package
data).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lc0py.errors import KernelCompileError
from lc0py.storage import cache as storage_cache

if TYPE_CHECKING:
    from lc0py.gpu.platform import Platform

ENV_CACHE = "LC0PY_KERNEL_CACHE"
ENV_ASSERT = "LC0PY_KERNEL_ASSERT_CACHED"
ENV_DIR = "LC0PY_KERNEL_DIR"
_OFF = {"", "0", "off", "none", "false", "no"}
HEADER_SUFFIXES = (".h",)


def kernel_dir() -> Path:
    """The folder holding ``*.hip`` and ``*.h`` (see the module docstring for the search order)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    candidates = [here.parents[1] / "kernels"]  # lc0py/kernels, checkout and installed alike
    for c in candidates:
        if (c / "flash_attention.hip").is_file():
            return c
    raise KernelCompileError(
        "GPU kernel sources not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + f"; set {ENV_DIR})"
    )


def read_headers(folder: Path | None = None) -> dict[str, str]:
    """Every header of the kernel folder, name → text (passed to the compiler in memory)."""
    folder = folder or kernel_dir()
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.suffix in HEADER_SUFFIXES}


def define_options(defines: Mapping[str, int | float | str]) -> list[str]:
    """``{"LC0_FA_DEPTH": 32}`` → ``["-DLC0_FA_DEPTH=32"]`` in a stable (sorted) order."""
    return [f"-D{k}={v}" for k, v in sorted(defines.items())]


def cache_key(
    source: str,
    headers: Mapping[str, str],
    options: list[str],
    arch: str,
    binary_kind: str,
    compiler: str,
) -> str:
    """SHA-256 over everything that changes the compiled binary."""
    h = hashlib.sha256()
    for part in (source, arch, binary_kind, compiler, "\0".join(options)):
        h.update(part.encode())
        h.update(b"\x00\x01")
    for name in sorted(headers):
        h.update(name.encode())
        h.update(b"\x00")
        h.update(headers[name].encode())
        h.update(b"\x00\x02")
    return h.hexdigest()


def cache_folder() -> Path | None:
    """The on-disk cache folder, or ``None`` when disabled."""
    return storage_cache.cache_folder("kernels", ENV_CACHE)


class KernelCache:
    """Compiles, caches and loads kernels for one ``Platform``."""

    def __init__(self, platform: Platform, folder: Path | None = None) -> None:
        self.platform = platform
        self.kernels = folder or kernel_dir()
        self.headers = read_headers(self.kernels)
        self._modules: dict[str, int] = {}
        self._functions: dict[tuple[str, str], int] = {}
        self.compiled = 0  # compiles this process did (tests, "fail if anything compiles")
        self.disk_hits = 0

    def binary(
        self, source_name: str, defines: Mapping[str, int | float | str], options: tuple[str, ...] = ()
    ) -> tuple[str, bytes]:
        """``(key, binary)`` for ``kernels/<source_name>`` with ``defines``: disk cache or compile."""
        source = (self.kernels / source_name).read_text()
        opts = define_options(defines) + list(options)
        p = self.platform
        key = cache_key(source, self.headers, opts, p.info.arch, p.binary_kind, p.compiler_version())
        folder = cache_folder()
        entries = storage_cache.EntryStore(folder, "kernel") if folder is not None else None
        name = f"{Path(source_name).stem}-{key[:40]}.{p.binary_kind}"
        cached = entries.load(name, key) if entries is not None else None
        if cached is not None:
            self.disk_hits += 1
            return key, cached
        if os.environ.get(ENV_ASSERT, "").strip().lower() not in _OFF:
            raise KernelCompileError(f"{source_name} {opts}: not in the kernel cache and {ENV_ASSERT} is set")
        data = p.compile(source, source_name, opts, self.headers)
        self.compiled += 1
        if entries is not None:
            entries.store(name, data, key)  # a read-only cache folder only costs compile time
        return key, data

    def module(
        self, source_name: str, defines: Mapping[str, int | float | str], options: tuple[str, ...] = ()
    ) -> int:
        """Loaded module handle (memoised per key in this process)."""
        key, data = self.binary(source_name, defines, options)
        if key not in self._modules:
            self._modules[key] = self.platform.load_module(data)
        return self._modules[key]

    def function(
        self,
        source_name: str,
        kernel: str,
        defines: Mapping[str, int | float | str],
        options: tuple[str, ...] = (),
    ) -> int:
        """Kernel handle of ``kernel`` in ``kernels/<source_name>`` compiled with ``defines``."""
        module = self.module(source_name, defines, options)
        fkey = (str(module), kernel)
        if fkey not in self._functions:
            self._functions[fkey] = self.platform.get_function(module, kernel)
        return self._functions[fkey]
