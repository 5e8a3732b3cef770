"""Bare ``lc0py`` (the engine, as bare ``lc0``) says what it is on stderr, as lc0's banner does."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import lc0py
from lc0py.cli.main import banner

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"


def test_banner_text() -> None:
    bare = banner(argparse.Namespace())
    assert bare == f"lc0py v{lc0py.__version__} (lc0-compatible UCI engine, Python)"
    full = banner(argparse.Namespace(opt_WeightsFile="net.pb.gz", opt_Backend="numpy"))
    assert full.endswith("; weights net.pb.gz, backend numpy")


def test_bare_lc0py_prints_the_banner_on_stderr_only() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "lc0py", "-w", str(TINY)], input="uci\nquit\n",
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0].startswith(f"lc0py v{lc0py.__version__} (lc0-compatible UCI engine")
    assert str(TINY) in done.stderr.splitlines()[0]
    assert "lc0py v" not in done.stdout and "uciok" in done.stdout  # the UCI stream stays clean
