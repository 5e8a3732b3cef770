"""The built-in default network: a T82-shaped random net generated once into the user cache.

lc0py downloads nothing at run time, so commands that measure or check *a* network when none is
given (``backendbench``, ``verify``…) use a deterministic random net with T82's shape (preset
``t82``: 15 layers, 768 embedding, 24 heads, smolgen, PE_MAP) stored LINEAR16 as lc0 would store
it, and say "random weights" on stderr whenever it is loaded. The UCI engine plays with it only
when asked for with ``--weights=<random>`` (otherwise it looks for a net as lc0 does). It is
generated on first use into the lc0py cache root (``lc0py.storage.cache.cache_root``:
``$LC0PY_CACHE_DIR``, else the platform's user cache folder, ``~/.cache/lc0py`` on Linux).

It is a verified cache entry (``storage.cache.EntryStore``, kind ``default-net``): written
atomically with a record of its SHA-256 and of what it was generated from (preset, seed,
encoding); a missing file, a missing record or a digest mismatch (truncated/corrupt/replaced
file) regenerates it. A one-line notice goes to stderr when generating, and a
progress indication (elapsed seconds, on a terminal) while it takes longer than a second.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from lc0py.errors import Lc0pyError
from lc0py.storage import cache as storage_cache
from lc0py.weights.presets import random_network
from lc0py.weights.writer import serialize_network

PRESET = "t82"
SEED = 20240601
ENCODING = "linear16"
FILE_NAME = f"default-{PRESET}-seed{SEED}-{ENCODING}.pb.gz"
#: Its size on disk, rounded up (189 MB): checked as free space before generating it.
EXPECTED_BYTES = 200_000_000

_verified: set[Path] = set()


def cache_dir() -> Path:
    """The lc0py cache root (see ``lc0py.storage.cache``), where the default net lives."""
    return storage_cache.cache_root()


def _entries() -> storage_cache.EntryStore:
    return storage_cache.EntryStore(cache_dir(), "default-net")


def _inputs(preset: str, seed: int) -> str:
    return storage_cache.sha256_bytes(f"preset={preset};seed={seed};encoding={ENCODING}".encode())


def is_valid(path: Path) -> bool:
    """True if ``path`` is the default net's cache entry and matches its recorded digest."""
    entries = storage_cache.EntryStore(path.parent, "default-net")
    return entries.verified_path(path.name, _inputs(PRESET, SEED)) is not None


class _Progress:
    """Prints elapsed seconds on stderr (terminals only) while a slow step runs past 1 s."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = time.monotonic()
        self._stop = threading.Event()
        self._tty = sys.stderr.isatty()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        if self._stop.wait(1.0) or not self._tty:
            return
        while not self._stop.wait(0.5):
            sys.stderr.write(f"\rlc0py: {self.what}... {time.monotonic() - self.start:.0f} s")
            sys.stderr.flush()

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._tty and time.monotonic() - self.start > 1.0:
            sys.stderr.write("\r")


def generate(path: Path, preset: str = PRESET, seed: int = SEED) -> Path:
    """Generate the default net into ``path`` (a verified cache entry, written atomically)."""
    entries = storage_cache.EntryStore(path.parent, "default-net")
    problem = entries.check_writable(EXPECTED_BYTES)  # before the ~1 minute of generating it
    if problem is not None:
        raise Lc0pyError(f"cannot write the default network to {path}: {problem} "
                         f"(set {storage_cache.ENV_ROOT} or pass --weights)")
    print(f"lc0py: generating the default network ({preset}, seed {seed}) into {path} (once)",
          file=sys.stderr, flush=True)
    start = time.monotonic()
    with _Progress("generating the default network"):
        data = serialize_network(random_network(preset=preset, seed=seed), ENCODING)
        written = entries.store(path.name, data, _inputs(preset, seed))
    if written is None:
        raise Lc0pyError(f"cannot write the default network to {path}: {entries.last_error}")
    print(f"lc0py: default network ready ({len(data) / 1e6:.0f} MB, {time.monotonic() - start:.1f} s)",
          file=sys.stderr, flush=True)
    return path


def default_weights_path() -> Path:
    """Path of the default network, generating (or regenerating a corrupt copy of) it first."""
    path = cache_dir() / FILE_NAME
    if path in _verified and path.is_file():
        return path
    if _entries().verified_path(FILE_NAME, _inputs(PRESET, SEED)) is None:
        generate(path, PRESET, SEED)
    _verified.add(path)
    return path
