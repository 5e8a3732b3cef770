"""The cache folder under real-world conditions (issue 30 item 5): any umask, FIFOs and other
non-files in place of entries, temporaries left by killed writes, read-only or full folders, and
odd ``LC0PY_CACHE_DIR`` values. Each is a log line or one error line, never a hang or traceback."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lc0py.errors import Lc0pyError, UsageError
from lc0py.storage import atomic
from lc0py.storage.cache import EntryStore, cache_folder, cache_root

ROOT = Path(__file__).resolve().parents[2]
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on this tree (storage only, no compile): a hang shows
    as a timeout of this subprocess, never as a stuck suite."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_umask_002_folders_are_created_0700_and_the_root_stays_usable(tmp_path: Path) -> None:
    # the ONNX cache creates root/onnx first (and the root with it), then the default net uses the root
    root = tmp_path / "parent" / "lc0py"
    run = _python(
        "import os; os.umask(0o002)\n"
        "from lc0py.backends.onnx import cache as onnx_cache\n"
        "from lc0py.storage.cache import EntryStore, cache_root\n"
        "assert onnx_cache.store(onnx_cache.cache_folder()).usable()\n"
        "store = EntryStore(cache_root(), 'default-net')\n"
        "print(store.usable(), store.last_error)\n",
        env={"LC0PY_CACHE_DIR": str(root)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "None"]
    for folder in (root.parent, root, root / "onnx"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


def test_default_umask_root_is_0700_not_0755(tmp_path: Path) -> None:
    store = EntryStore(tmp_path / "new" / "root", "default-net")
    assert store.usable()
    assert (tmp_path / "new" / "root").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700


_FIFO_CHECK = """
import json, logging, os, sys
from pathlib import Path
from lc0py.storage.cache import EntryStore
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="LOG %(message)s")
folder = Path(sys.argv[1])
store = EntryStore(folder, "kernel")
store.store("a.bin", b"alpha", "in")
store.store("b.bin", b"beta", "in")
os.unlink(folder / "a.bin"); os.mkfifo(folder / "a.bin")  # a FIFO in place of an entry
os.unlink(folder / "b.bin.entry.json"); os.mkfifo(folder / "b.bin.entry.json")  # ... of a record
print("a", store.load("a.bin", "in"))
print("b", store.load("b.bin", "in"))
print("entries", sorted(store.entries()))
print("rebuilt", store.store("a.bin", b"alpha", "in") is not None, store.load("a.bin", "in"))
print("rebuilt", store.store("b.bin", b"beta", "in") is not None, store.load("b.bin", "in"))
"""


def test_a_fifo_in_place_of_an_entry_or_record_is_logged_not_waited_on(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    run = _python(_FIFO_CHECK, str(folder))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "a None" in lines and "b None" in lines
    assert any("a.bin failed verification (it is a FIFO (named pipe), not a file)" in line for line in lines)
    assert any("the record of b.bin is a FIFO (named pipe), not a file" in line for line in lines)
    assert "rebuilt True b'alpha'" in lines and "rebuilt True b'beta'" in lines


@pytest.mark.parametrize("kind", ["directory", "symlink", "truncated", "swapped"])
def test_other_entry_kinds_are_never_used(tmp_path: Path, kind: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    store = EntryStore(tmp_path / "c", "onnx")
    path = store.store("m.onnx", b"model bytes", "key")
    assert path is not None
    other = store.store("n.onnx", b"other bytes", "key2")
    assert other is not None
    if kind == "directory":
        path.unlink()
        path.mkdir()
    elif kind == "symlink":
        target = tmp_path / "elsewhere"
        target.write_bytes(b"model bytes")  # the right bytes, but not a file of the cache
        path.unlink()
        path.symlink_to(target)
    elif kind == "truncated":
        path.write_bytes(b"model")
    else:
        os.replace(other, path)
    with caplog.at_level(logging.WARNING, logger="lc0py.cache"):
        assert store.verified_path("m.onnx", "key") is None
        assert store.load("m.onnx", "key") is None
    assert any("failed verification" in r.getMessage() for r in caplog.records)
    rebuilt = store.store("m.onnx", b"model bytes", "key")
    if kind == "directory":  # never removed (it may hold anything); the write fails, logged
        assert rebuilt is None and store.last_error and "directory" in store.last_error
    elif kind == "symlink":  # the link (under a record of ours) is removed, never followed
        assert rebuilt is not None and not rebuilt.is_symlink()
        assert (tmp_path / "elsewhere").read_bytes() == b"model bytes"
    if kind != "directory":
        assert rebuilt is not None and store.load("m.onnx", "key") == b"model bytes"


def _backdate(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_temporaries_are_removed_on_the_next_write(tmp_path: Path) -> None:
    store = EntryStore(tmp_path / "c", "onnx")
    assert store.usable()
    folder = store.folder
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        files = {
            f".m.onnx.p{dead}.abcd1234.tmp": (60, False),  # killed writer, a minute ago: removed
            f".m.onnx.p{dead}.abcd5678.tmp": (1, True),  # killed a second ago: kept (PID namespaces)
            f".m.onnx.p{sleeper.pid}.abcd9999.tmp": (60, True),  # writer still running: kept
            ".m.onnx.k2j4h5g6.tmp": (700, False),  # an earlier version's, 12 minutes old: removed
            ".m.onnx.zzzzzzzz.tmp": (60, True),  # ... a minute old: kept
            ".notes.tmp": (7000, True),  # not a name lc0py makes: kept
        }
        for name, (age, _) in files.items():
            (folder / name).write_bytes(b"x" * 1000)
            _backdate(folder / name, age)
        assert store.store("m.onnx", b"model", "key") is not None
        for name, (_, kept) in files.items():
            assert (folder / name).exists() == kept, name
    finally:
        sleeper.kill()
        sleeper.wait()


def test_write_temporaries_carry_the_writer_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", spy)
    atomic.write_atomically(tmp_path / "out.bin", b"data")
    assert len(seen) == 1 and seen[0].startswith(f".out.bin.p{os.getpid()}.") and seen[0].endswith(".tmp")


def test_default_net_refuses_an_unwritable_cache_before_generating(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.weights import default_net

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("generated before checking the folder")

    monkeypatch.setattr(default_net, "random_network", never)
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(blocker / "lc0py"))
    with pytest.raises(Lc0pyError) as info:
        default_net.default_weights_path()
    assert "Not a directory" in str(info.value) and "\n" not in str(info.value)


def test_a_full_disk_is_said_before_generating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.weights import default_net

    class Full:
        f_bavail, f_frsize = 10, 4096

    monkeypatch.setattr(default_net, "random_network", lambda *a, **k: pytest.fail("generated first"))
    monkeypatch.setattr(os, "statvfs", lambda path: Full())
    monkeypatch.setenv("LC0PY_CACHE_DIR", str(tmp_path / "c"))
    with pytest.raises(Lc0pyError, match=os.strerror(errno.ENOSPC)) as info:
        default_net.default_weights_path()
    assert "0 MB free, 200 MB needed" in str(info.value)


@pytest.mark.skipif(IS_ROOT, reason="root writes in a 0500 folder; the file-in-place test covers root")
def test_a_read_only_cache_folder_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o700)
    store = EntryStore(folder, "default-net")
    os.chmod(folder, 0o500)
    try:
        assert "Permission denied" in (store.check_writable() or "")
        assert store.store("x", b"data", "in") is None and "Permission denied" in (store.last_error or "")
    finally:
        os.chmod(folder, 0o700)


def test_a_failed_write_keeps_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = EntryStore(tmp_path / "c", "default-net")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    assert store.store("x", b"data", "in") is None
    assert os.strerror(errno.ENOSPC) in (store.last_error or "")
    assert not [p for p in store.folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("value, words", [
    ("~nosuchuser-lc0py/x", "cannot expand '~' (no home folder known for nosuchuser-lc0py)"),
    ("relative/cache", "not an absolute path"),
    ("/tmp/a\nb", "control characters"),
])
def test_odd_cache_dir_values_are_one_line(monkeypatch: pytest.MonkeyPatch, value: str, words: str) -> None:
    monkeypatch.setenv("LC0PY_CACHE_DIR", value)
    with pytest.raises(UsageError, match="LC0PY_CACHE_DIR=") as info:
        cache_root()
    assert words in str(info.value) and "\n" not in str(info.value)
    monkeypatch.delenv("LC0PY_CACHE_DIR")
    monkeypatch.setenv("LC0PY_ONNX_CACHE", value)
    with pytest.raises(UsageError, match="LC0PY_ONNX_CACHE="):
        cache_folder("onnx", "LC0PY_ONNX_CACHE")


def test_tilde_expands_as_a_shell_would(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LC0PY_CACHE_DIR", "~/cache")
    assert cache_root() == tmp_path / "cache"
    import pwd

    me = pwd.getpwuid(os.getuid())
    monkeypatch.setenv("LC0PY_CACHE_DIR", f"~{me.pw_name}/cache")
    assert cache_root() == Path(me.pw_dir) / "cache"


def test_cli_refuses_tilde_user_in_one_line_exit_2(tmp_path: Path) -> None:
    # backendbench on numpy without --weights resolves the default net, which lives in the cache root
    run = subprocess.run([sys.executable, "-m", "lc0py", "backendbench", "--backend", "numpy"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT),
                              "LC0PY_CACHE_DIR": "~nosuchuser-lc0py/x"})
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "LC0PY_CACHE_DIR='~nosuchuser-lc0py/x'" in lines[0], run.stderr


def test_record_json_is_still_read(tmp_path: Path) -> None:
    store = EntryStore(tmp_path, "tuned")
    store.store("t.json", "{}", "in")
    doc = json.loads((tmp_path / "t.json.entry.json").read_text())
    assert doc["file"] == "t.json" and store.load("t.json", "in") == b"{}"
