"""Seeded fuzzing of the cache folder (issue 30 items 5 and 4 of the deliverables): entries and
records replaced by directories, FIFOs, symbolic links, truncated, extended or swapped files, and
writes killed with SIGKILL at random points. Invariant: ``load``/``verified_path`` return exactly
the bytes stored for that name and those inputs, or ``None``; never other bytes, never a hang; the
next write after a kill removes the killed writer's temporary file.

The in-folder fuzz runs in a subprocess, so a regression that blocks on a FIFO shows as that
subprocess's timeout (a hang guard, not a timing: nothing here compiles), never as a stuck suite.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lc0py.storage.cache import EntryStore
from tests.fuzz.fuzzutil import SLOW_FACTOR, case_seeds, failure

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CASES = 150
KILLS = 3

_ENTRY_FUZZ = r"""
import os, random, sys
from pathlib import Path
from lc0py.storage.cache import EntryStore

def content(name, version):
    return (f"{name}:{version}:".encode() * 50)[: 100 + 37 * version]

def case(seed, folder):
    rng = random.Random(seed)
    store = EntryStore(folder, rng.choice(["kernel", "onnx", "tuned"]), max_entries=rng.choice([None, 3]))
    names = [f"e{i}.bin" for i in range(4)]
    truth = {}
    for name in names:
        version = rng.randrange(5)
        if store.store(name, content(name, version), f"in-{version}") is not None:
            truth[name] = version
    for _ in range(rng.randint(1, 4)):
        name = rng.choice(names)
        target = folder / (name + (".entry.json" if rng.random() < 0.35 else ""))
        other = folder / rng.choice(names)
        kind = rng.choice(["dir", "fifo", "symlink", "truncate", "extend", "swap", "delete", "garbage"])
        try:
            if kind in ("dir", "fifo", "symlink", "delete") and target.exists() or target.is_symlink():
                if target.is_dir() and not target.is_symlink():
                    os.rmdir(target)
                else:
                    target.unlink()
            if kind == "dir":
                target.mkdir()
            elif kind == "fifo":
                os.mkfifo(target)
            elif kind == "symlink":
                target.symlink_to(other if rng.random() < 0.5 else folder / "outside")
            elif kind == "truncate" and target.is_file():
                data = target.read_bytes()
                target.write_bytes(data[: rng.randrange(len(data) + 1)])
            elif kind == "extend" and target.is_file():
                with open(target, "ab") as f:
                    f.write(os.urandom(rng.randint(1, 20)))
            elif kind == "swap" and target.is_file() and other.is_file():
                os.replace(other, target)
            elif kind == "garbage":
                if target.is_dir() and not target.is_symlink():
                    os.rmdir(target)
                elif target.exists() or target.is_symlink():
                    target.unlink()
                target.write_bytes(os.urandom(rng.randint(0, 80)))
        except OSError:
            pass
    (folder / "outside").write_bytes(b"not ours")
    for name in names:
        for version in range(5):
            for getter in (store.load, store.verified_path):
                got = getter(name, f"in-{version}")
                if got is None:
                    continue
                data = got if isinstance(got, bytes) else Path(got).read_bytes()
                if data != content(name, version):
                    print(f"FAIL {seed} {name} v{version}: used other bytes", flush=True)
                    return
    for name in names:  # the cache always recovers: a rebuild then a verified load
        if store.store(name, content(name, 1), "in-1") is not None:
            assert store.load(name, "in-1") == content(name, 1), (seed, name)
    print("ok", seed, flush=True)

for seed in map(int, sys.argv[2:]):
    folder = Path(sys.argv[1]) / f"c{seed}"
    case(seed, folder)
"""


def _entry_fuzz(base: int, count: int, tmp_path: Path) -> None:
    seeds = [str(s) for s in case_seeds(base, count)]
    run = subprocess.run([sys.executable, "-c", _ENTRY_FUZZ, str(tmp_path), *seeds], capture_output=True,
                         text=True, cwd=ROOT, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, failure("cache", int(seeds[0]), run.stderr[-2000:])
    lines = run.stdout.splitlines()
    bad = [line for line in lines if line.startswith("FAIL")]
    assert not bad, failure("cache", int(bad[0].split()[1]), bad[0])
    assert len([line for line in lines if line.startswith("ok")]) == len(seeds)


def test_cache_entry_fuzz(tmp_path: Path) -> None:
    _entry_fuzz(20261127, DEFAULT_CASES, tmp_path)


@pytest.mark.slow
def test_cache_entry_fuzz_long(tmp_path: Path) -> None:
    _entry_fuzz(11, DEFAULT_CASES * SLOW_FACTOR, tmp_path)


_WRITER = r"""
import sys
from pathlib import Path
from lc0py.storage.cache import EntryStore
store = EntryStore(Path(sys.argv[1]), "onnx")
size = int(sys.argv[2])
version = 0
while True:  # rewrite the entry forever: killed at a random point of some write
    version += 1
    store.store("model.onnx", bytes([version % 251]) * size, f"v{version}")
    print(version, flush=True)
"""


def _expected(inputs: str, size: int) -> bytes:
    return bytes([int(inputs[1:]) % 251]) * size


def _kill_during_write(seed: int, folder: Path, size: int) -> None:
    rng = random.Random(seed)
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(folder), str(size)], stdout=subprocess.PIPE,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert writer.stdout is not None
        for _ in range(rng.randint(1, 3)):  # a few whole writes first (blocks until each is done)
            writer.stdout.readline()
        deadline = time.monotonic() + 300  # hang guard only: a temporary appears within one write
        while not any(p.name.endswith(".tmp") for p in folder.iterdir()):
            assert time.monotonic() < deadline, failure("cache-kill", seed, "no temporary file ever seen")
            time.sleep(0.001)
        time.sleep(rng.uniform(0, 0.02))
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    store = EntryStore(folder, "onnx")
    record = store._record("model.onnx") or {}
    inputs = str(record.get("inputs", "v0"))
    got = store.load("model.onnx", inputs)  # whatever the kill left: the recorded bytes or nothing
    assert got is None or got == _expected(inputs, size), failure("cache-kill", seed, "used a torn entry")
    leftovers = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    then = time.time() - 60  # the killed writer's file, aged past the dead-writer margin
    for p in leftovers:
        os.utime(p, (then, then))
    assert store.store("other.bin", b"next write", "x") is not None
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == [], failure(
        "cache-kill", seed, f"stale temporaries left: {leftovers}")


def test_writes_killed_with_sigkill_leave_nothing_used_or_kept(tmp_path: Path) -> None:
    for i, seed in enumerate(case_seeds(30, KILLS)):
        _kill_during_write(seed, tmp_path / f"k{i}", 16 << 20)


@pytest.mark.slow
def test_writes_killed_with_sigkill_long(tmp_path: Path) -> None:
    for i, seed in enumerate(case_seeds(31, KILLS * SLOW_FACTOR)):
        _kill_during_write(seed, tmp_path / f"k{i}", 64 << 20)
