"""Every bad weights file gives one ``lc0py: ...`` line and exit status 2 on the command line.

Container problems are checked with ``describenet`` (lc0's describenet fails on them too);
problems of the network itself with ``eval --backend numpy``, which loads the full network
(describenet, like lc0's, still describes nets lc0py cannot run).
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lc0py.cli.main import main
from lc0py.weights import network_to_proto, random_network, save_network


def _good(tmp_path: Path) -> bytes:
    path = tmp_path / "good.pb.gz"
    save_network(random_network("tiny", seed=1, layers=1), path)
    return path.read_bytes()


def _corrupt(data: bytes) -> bytes:
    mid = len(data) // 2
    return data[:mid] + bytes(64) + data[mid + 64 :]


def _mutated(mutate: Callable[[Any], None]) -> Callable[[bytes], bytes]:
    def make(_: bytes) -> bytes:
        msg = network_to_proto(random_network("tiny", seed=1, layers=1))
        mutate(msg)
        return gzip.compress(msg.SerializeToString(), mtime=0)

    return make


def _residual_without_input(m: Any) -> None:
    """A residual (NETWORK_SE) file whose input convolution is missing."""
    m.format.network_format.network = 2  # NETWORK_SE, normalised to SE_WITH_HEADFORMAT
    del m.weights.encoder[:]
    m.weights.residual.add().conv1.weights.params = b"\0\0" * 9


def _wrong_size(m: Any) -> None:
    m.weights.encoder[0].ffn.dense1_w.params = b"\0\0" * 100
    del m.weights.encoder[0].ffn.dense1_w.dims[:]


CONTAINER = [
    ("truncated-gzip", lambda d: d[: len(d) // 3], "truncated gzip data"),
    # 64 zero bytes inside the deflate stream: refused either by inflate or, when they still inflate,
    # by the wire check on the garbage they make (before the member's CRC is reached)
    ("corrupt-gzip", _corrupt, ("corrupt gzip data", "not an lc0 network file")),
    ("not-protobuf", lambda d: gzip.compress(b"\xff" * 40), "not an lc0 network file"),
    ("wrong-magic", _mutated(lambda m: setattr(m, "magic", 7)), "bad header"),
    ("too-new", _mutated(lambda m: setattr(m.min_version, "minor", 99)), "lc0 version >= v0.99.0 required"),
]
NETWORK = [
    (
        "residual-without-input-conv",
        _mutated(_residual_without_input),
        "input.weights has 0 values, expected a non-zero multiple of 1008 (C x 112 x 3 x 3)",
    ),
    (
        "wrong-layer-size",
        _mutated(_wrong_size),
        "encoder[0].ffn.dense1_w has 100 values, expected 6144 (96x64)",
    ),
    ("onnx", _mutated(lambda m: setattr(m.onnx_model, "model", b"\x08\x07")), "ONNX networks"),
]


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    rc = main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2, captured.err
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert lines[0].startswith("lc0py: ")
    return lines[0]


@pytest.mark.parametrize("make, message", [pytest.param(m, msg, id=i) for i, m, msg in CONTAINER])
def test_container_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[bytes], bytes],
    message: str | tuple[str, ...],
) -> None:
    path = tmp_path / "bad.pb.gz"
    path.write_bytes(make(_good(tmp_path)))
    before = sorted(tmp_path.iterdir())
    line = _run(capsys, ["describenet", "--weights", str(path)])
    messages = (message,) if isinstance(message, str) else message
    assert f"{path}: " in line and any(m in line for m in messages)
    assert sorted(tmp_path.iterdir()) == before


def test_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no such weights file" in _run(capsys, ["describenet", "--weights", str(tmp_path / "x.pb.gz")])
    assert "is a directory" in _run(capsys, ["describenet", "--weights", str(tmp_path)])


@pytest.mark.parametrize("make, message", [pytest.param(m, msg, id=i) for i, m, msg in NETWORK])
def test_network_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[bytes], bytes], message: str
) -> None:
    pytest.importorskip("lc0py.tools.eval")
    path = tmp_path / "bad.pb.gz"
    path.write_bytes(make(b""))
    line = _run(capsys, ["eval", "--weights", str(path), "--backend", "numpy"])
    assert message in line, line
