"""A UCI engine subprocess driven line by line, with timeouts (python-chess ``test.py`` spirit):
the UCI tests (``engine_factory``) and the UCI fuzzer drive the engine through it."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# How long a test waits for an engine line before it calls the engine hung. A hang guard only,
# generous for a loaded 2-core CI machine: no test asserts how fast an answer comes.
HANG_GUARD_S = 120.0


class UciProcess:
    """``python -m lc0py uci ARGS`` from this checkout, read on a thread. ``cwd`` is where it runs
    (the checkout by default); ``env`` adds variables to the inherited environment."""

    def __init__(self, *args: str, cwd: Path = ROOT, env: Mapping[str, str] | None = None) -> None:
        pythonpath = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
        environ = {**os.environ, "PYTHONPATH": pythonpath, **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lc0py", "uci", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            cwd=cwd,
            env=environ,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, pred: Callable[[str], bool], timeout: float = HANG_GUARD_S) -> list[str]:
        """Lines up to and including the first that satisfies ``pred``."""
        got: list[str] = []
        end = time.perf_counter() + timeout
        while True:
            left = end - time.perf_counter()
            if left <= 0:
                raise AssertionError(f"timeout; got {got[-5:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            got.append(line)
            self.seen.append(line)
            if pred(line):
                return got

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(HANG_GUARD_S)
            except Exception:
                self.proc.kill()
