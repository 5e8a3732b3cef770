"""Files the tests take from beside the clone, never download: real nets (``../shared/nets``, or
``.nets/`` in the clone, ignored by git and carried to a GPU machine) and Syzygy tables
(``../shared/syzygy``). Each is copied into the test's temporary folder; the test is skipped
when the files are absent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NET_DIRS = (ROOT / ".." / "shared" / "nets", ROOT / ".nets")
SYZYGY = ROOT / ".." / "shared" / "syzygy"


def real_net(tmp_path: Path, name: str) -> Path:
    """Copy ``<name>.pb.gz`` from the first of ``NET_DIRS`` that has it into ``tmp_path``."""
    found = [d / f"{name}.pb.gz" for d in NET_DIRS if (d / f"{name}.pb.gz").is_file()]
    if not found:
        pytest.skip(f"{name}.pb.gz is in none of {[str(d) for d in NET_DIRS]}")
    dst = tmp_path / found[0].name
    shutil.copyfile(found[0], dst)
    return dst


def syzygy_tables(folder: Path) -> Path:
    """Copy the Syzygy tables (``*.rtbw`` and ``*.rtbz``) into ``folder``; returns ``folder``."""
    if not SYZYGY.is_dir() or not any(SYZYGY.glob("*.rtbw")):
        pytest.skip("no Syzygy tables in ../shared/syzygy")
    for f in SYZYGY.glob("*.rtb?"):
        shutil.copy(f, folder / f.name)
    return folder
