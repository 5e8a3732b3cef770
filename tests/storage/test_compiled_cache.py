"""Where numba's machine code for lc0py goes (issue 26 item 3, issue 30 item 3): lc0py's cache
folder, else a private temporary folder, else nowhere, with one line saying so; numba's
process-wide setting never touched; any user, with or without a usable home, can run lc0py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lc0py.storage import compiled

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "weights" / "tiny-seed1.pb.gz"
AS_NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")

# A compiled function of lc0py's own (the search core's NN-cache hash), run in a fresh process:
# it prints where the core's cache is and whether numba's process-wide folder was left alone.
PROBE = """
import numba.core.config as config
before = config.CACHE_DIR
import lc0py.search.search, lc0py.backends.random_backend
from lc0py.search.core import nncache
from lc0py.search.core.jit import cache_folder
assert int(nncache.mix(5)) == 4715485292027179420
print(cache_folder())
print(config.CACHE_DIR == before)
"""


def _env(**changes: str | None) -> dict[str, str]:
    dropped = ("LC0PY_CACHE_DIR", "XDG_CACHE_HOME", compiled.ENV)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _probe(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_cache_lives_under_lc0py_cache_folder(tmp_path: Path) -> None:
    run = _probe(_env(LC0PY_CACHE_DIR=str(tmp_path / "root")), tmp_path)
    assert run.returncode == 0, run.stderr
    folder, untouched = run.stdout.split()
    assert Path(folder).parent == tmp_path / "root" / "numba"
    assert untouched == "True"  # numba.config.CACHE_DIR is not rewritten on import
    assert list(Path(folder).glob("nncache.mix-*.nbi")), "the compiled function was not cached there"
    assert (Path(folder).stat().st_mode & 0o777) == 0o700
    assert run.stderr == ""


def test_unusable_home_falls_back_to_a_private_temp_folder(tmp_path: Path) -> None:
    """HOME somewhere nothing can be created (as for a service account): the temp folder, said
    in one line; every command still runs."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = _env(HOME=str(blocker / "home"), TMPDIR=str(temp))
    run = _probe(env, tmp_path)
    assert run.returncode == 0, run.stderr
    assert Path(run.stdout.split()[0]).parent == temp / f"lc0py-{os.getuid()}" / "numba"
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "compiled-code cache" in lines[0] and str(temp) in lines[0]
    described = subprocess.run(
        [sys.executable, "-m", "lc0py", "describenet", "-w", str(TINY)], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=600,
    )
    assert described.returncode == 0, described.stderr
    assert "Traceback" not in described.stderr


def test_home_unset(tmp_path: Path) -> None:
    run = _probe(_env(HOME=None, TMPDIR=str(tmp_path)), tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr


def test_nothing_writable_means_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(compiled.ENV, str(blocker / "numba"))
    monkeypatch.setattr(compiled, "_temp_folder", lambda: blocker / "tmp")
    compiled.numba_cache_root.cache_clear()
    try:
        assert compiled.numba_cache_root() is None
    finally:
        compiled.numba_cache_root.cache_clear()
    messages = [r.getMessage() for r in caplog.records if r.name == "lc0py.cache"]
    assert len(messages) == 1 and "cache off" in messages[0]


def test_off_disables_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiled.ENV, "off")
    compiled.numba_cache_root.cache_clear()
    try:
        assert compiled.numba_cache_root() is None
    finally:
        compiled.numba_cache_root.cache_clear()


def test_other_users_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group/other-writable folder (someone else could plant machine code there) is refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(compiled.ENV, str(shared))
    monkeypatch.setattr(compiled, "_temp_folder", lambda: tmp_path / "private" / "numba")
    compiled.numba_cache_root.cache_clear()
    try:
        assert compiled.numba_cache_root() == tmp_path / "private" / "numba"
    finally:
        compiled.numba_cache_root.cache_clear()


def _nobody_can_run_python() -> str | None:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root to switch to the nobody user (CI runs as root)"
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    try:
        probe = subprocess.run(
            [*AS_NOBODY, sys.executable, "-c", "import lc0py"],
            capture_output=True, text=True, timeout=120, env=_env(), cwd="/",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"setpriv failed: {exc}"
    if probe.returncode != 0:
        return f"the nobody user cannot run this interpreter or read lc0py ({probe.stderr.strip()[-120:]})"
    return None


def test_nobody_without_home_runs_lc0py(tmp_path: Path) -> None:
    """Issue 30 item 3: a non-root user whose HOME is not writable imported lc0py into a 46-line
    numba traceback (``cannot cache function 'mix'``)."""
    reason = _nobody_can_run_python()
    if reason:
        pytest.skip(reason)
    tmp_path.chmod(0o777)
    env = _env(HOME="/nonexistent", TMPDIR=str(tmp_path))
    run = subprocess.run(
        [*AS_NOBODY, sys.executable, "-c", PROBE],
        env=env, cwd="/", capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) <= 1
