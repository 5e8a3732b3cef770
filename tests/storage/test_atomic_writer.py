"""The one atomic writer (issue 9 item 4): what it refuses, what it keeps, what it leaves behind,
and the CLI writers (make-net -o, export-onnx -o) going through it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.errors import UsageError
from lc0py.storage.atomic import write_atomically
from lc0py.weights import random_network, save_network


def _only_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_new_file_gets_umask_mode_and_no_temporary_is_left(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    assert write_atomically(target, b"abc") == target
    assert target.read_bytes() == b"abc"
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert _only_files(tmp_path) == ["out.bin"]
    write_atomically(tmp_path / "private.bin", "text", private=True)
    assert stat.S_IMODE((tmp_path / "private.bin").stat().st_mode) == 0o600


def test_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "secret.pb.gz"
    target.write_bytes(b"old")
    os.chmod(target, 0o600)
    write_atomically(target, b"new")
    assert target.read_bytes() == b"new" and stat.S_IMODE(target.stat().st_mode) == 0o600


def test_non_regular_targets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a directory"):
        write_atomically(tmp_path, b"x")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a FIFO"):
        write_atomically(fifo, b"x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if os.path.exists("/dev/null"):
        with pytest.raises(UsageError, match="is a character device"):
            write_atomically("/dev/null", b"x")
    with pytest.raises(UsageError, match="no directory"):
        write_atomically(tmp_path / "absent" / "x", b"x")


def test_symlink_is_refused_unless_forced(tmp_path: Path) -> None:
    real = tmp_path / "real.bin"
    real.write_bytes(b"keep")
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    with pytest.raises(UsageError, match="symbolic link"):
        write_atomically(link, b"x")
    assert real.read_bytes() == b"keep" and link.is_symlink()
    assert write_atomically(link, b"new", force=True) == real.resolve()
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_output_same_as_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "in.pb.gz"
    src.write_bytes(b"net")
    hard = tmp_path / "hard.pb.gz"
    os.link(src, hard)
    for target in (src, hard):
        with pytest.raises(UsageError, match="same file as the input"):
            write_atomically(target, b"x", inputs=[src])
    assert src.read_bytes() == b"net"


def _one_line(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    captured = capsys.readouterr()
    assert rc == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_make_net_refuses_devices_and_symlinks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real.pb.gz"
    real.write_bytes(b"keep")
    link = tmp_path / "link.pb.gz"
    link.symlink_to(real)
    assert "symbolic link" in _one_line(capsys, main(["make-net", "-o", str(link)]))
    assert real.read_bytes() == b"keep"
    assert main(["make-net", "-o", str(link), "--force"]) == 0
    assert real.stat().st_size > 1000 and link.is_symlink()
    if os.path.exists("/dev/null"):
        assert "character device" in _one_line(capsys, main(["make-net", "-o", "/dev/null"]))


def test_export_onnx_refuses_its_own_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx")
    net = tmp_path / "net.pb.gz"
    save_network(random_network("tiny", seed=1, layers=1), net)
    before = net.read_bytes()
    line = _one_line(capsys, main(["export-onnx", "-w", str(net), "-o", str(net)]))
    assert "same file as the input" in line
    assert net.read_bytes() == before
