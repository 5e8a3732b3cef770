"""CPU users are told which backend ran and why, pointed to the faster extra, and numpy's BLAS
threads are bounded (lc0's CPU backends use one BLAS thread)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lc0py.backends import numpy_backend, registry
from lc0py.backends.blas_threads import ENV_BLAS_THREADS, blas_threads, current_blas_threads
from lc0py.backends.registry import cpu_choice_line, create_backend
from lc0py.chess import PositionHistory, encode_batch
from lc0py.errors import BackendOptionError

TINY = Path(__file__).resolve().parents[2] / "weights" / "tiny-seed1.pb.gz"


def test_auto_on_a_cpu_says_which_and_why_and_the_faster_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = registry.unavailable_reason

    def no_onnx(name: str) -> str | None:
        if name.startswith("onnx"):
            return "onnxruntime is not installed (pip install 'lc0py[onnx]')"
        return real(name)

    monkeypatch.setattr(registry, "unavailable_reason", no_onnx)
    backend = create_backend("auto", TINY)
    if not registry.is_cpu_backend(backend):
        pytest.skip("a GPU backend runs here")
    err = capsys.readouterr().err
    assert "--backend auto: using numpy (CPU)" in err
    assert 'pip install "lc0py[onnx]"' in err and "1.5x" in err


def test_choice_line() -> None:
    line = cpu_choice_line("onnx-cpu", [("cuda", "cuda-bindings is not installed")])
    assert line.startswith("--backend auto: using onnx-cpu (CPU):") and "pip install" not in line


def test_blas_threads_default_env_and_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_BLAS_THREADS, raising=False)
    assert blas_threads() == 1 and blas_threads(3) == 3 and blas_threads(0) == 0
    monkeypatch.setenv(ENV_BLAS_THREADS, "2")
    assert blas_threads() == 2 and blas_threads(1) == 1  # the option wins
    monkeypatch.setenv(ENV_BLAS_THREADS, "many")
    with pytest.raises(BackendOptionError, match=ENV_BLAS_THREADS):
        blas_threads()


def test_numpy_evaluates_under_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_BLAS_THREADS, raising=False)
    seen: list[list[int]] = []
    real_forward = numpy_backend.forward

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(current_blas_threads())
        return real_forward(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(numpy_backend, "forward", spy)
    default = create_backend("numpy", TINY)
    batch = encode_batch([PositionHistory.from_fen(None).encode(default.info.input_format)])
    out = default.evaluate(batch)
    assert np.isfinite(out.policy).all()
    assert seen[-1] and all(n == 1 for n in seen[-1])  # bounded by default
    unbounded = create_backend("numpy", TINY, "threads=0")
    unbounded.evaluate(batch)
    assert seen[-1] == current_blas_threads()  # threads=0: the library's own count, untouched
    with pytest.raises(BackendOptionError, match="threads"):
        create_backend("numpy", TINY, "threads=-1")
