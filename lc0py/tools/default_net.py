"""The built-in default network: a T82-shaped random net generated once into the user cache.

lc0py downloads nothing at run time, so commands that measure or check *a* network when none is
given (``backendbench``, ``verify``…) use a deterministic random net with T82's shape (preset
``t82``: 15 layers, 768 embedding, 24 heads, smolgen, PE_MAP) stored LINEAR16 as lc0 would store
it, and say "random weights" on stderr whenever it is loaded. The UCI engine plays with it only
when asked for with ``--weights=<random>`` (otherwise it looks for a net as lc0 does). It is
generated on first use into the cache directory, chosen in this order:

1. ``$LC0PY_CACHE_DIR`` if set;
2. ``$XDG_CACHE_HOME/lc0py`` if ``XDG_CACHE_HOME`` is set;
3. ``~/.cache/lc0py``.

The file is written atomically (temporary file + ``os.replace``) with a ``.sha256`` sidecar holding
the digest computed at generation; a missing file, a missing sidecar or a digest mismatch
(truncated/corrupt file) regenerates it. A one-line notice goes to stderr when generating, and a
progress indication (elapsed seconds, on a terminal) while it takes longer than a second.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from pathlib import Path

from lc0py.errors import Lc0pyError

PRESET = "t82"
SEED = 20240601
ENCODING = "linear16"
FILE_NAME = f"default-{PRESET}-seed{SEED}-{ENCODING}.pb.gz"

_verified: set[Path] = set()


def cache_dir() -> Path:
    """The lc0py cache directory (see the module docstring for the order of precedence)."""
    explicit = os.environ.get("LC0PY_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "lc0py"
    return Path.home() / ".cache" / "lc0py"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def is_valid(path: Path) -> bool:
    """True if ``path`` exists and its SHA-256 equals the one recorded when it was generated."""
    sidecar = _sidecar(path)
    if not path.is_file() or not sidecar.is_file():
        return False
    try:
        expected = sidecar.read_text().split()[0]
    except (OSError, IndexError):
        return False
    return file_sha256(path) == expected


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
    """Generate the default net into ``path`` atomically and record its SHA-256 next to it."""
    from lc0py.weights import save_network
    from lc0py.weights.presets import random_network

    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"lc0py: generating the default network ({preset}, seed {seed}) into {path} (once)",
          file=sys.stderr, flush=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.pb.gz")
    start = time.monotonic()
    try:
        with _Progress("generating the default network"):
            network = random_network(preset=preset, seed=seed)
            save_network(network, tmp, encoding=ENCODING)
            digest = file_sha256(tmp)
        sidecar_tmp = tmp.with_name(tmp.name + ".sha256")
        sidecar_tmp.write_text(f"{digest}  {path.name}\n")
        os.replace(tmp, path)
        os.replace(sidecar_tmp, _sidecar(path))
    except OSError as exc:
        raise Lc0pyError(f"cannot write the default network to {path}: {exc}") from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".sha256")):
            leftover.unlink(missing_ok=True)
    size_mb = path.stat().st_size / 1e6
    print(f"lc0py: default network ready ({size_mb:.0f} MB, {time.monotonic() - start:.1f} s)",
          file=sys.stderr, flush=True)
    return path


def default_weights_path() -> Path:
    """Path of the default network, generating (or regenerating a corrupt copy of) it first."""
    path = cache_dir() / FILE_NAME
    if path in _verified and path.is_file():
        return path
    if not is_valid(path):
        generate(path, PRESET, SEED)
    _verified.add(path)
    return path
