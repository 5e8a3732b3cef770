"""The loader's limits: regular files only, capped streaming decompression, sizes checked before
allocating, NaN/inf refused (issue 9 item 2). Memory: the subprocess's own VmHWM (tests/peak_memory.py)."""

from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from lc0py.errors import UnsupportedNetError, WeightsFormatError
from lc0py.weights import load_network, load_proto, network_to_proto
from lc0py.weights.loader import read_weights_bytes
from tests.weights.weights_testutil import mutated_file, small_net, write_proto

ROOT = Path(__file__).resolve().parents[2]


def gzip_bomb(path: Path, gigabytes: float, prefix: bytes = b"") -> int:
    """A gzip member whose deflate stream inflates to ``prefix`` + ``gigabytes`` GB of zeros, built
    from one repeated full-flush block so making it costs milliseconds (the CRC is never reached)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH) if prefix else b""
    block = comp.compress(bytes(1 << 20)) + comp.flush(zlib.Z_FULL_FLUSH)
    tail = comp.flush(zlib.Z_FINISH)
    count = int(gigabytes * 1024)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + head)
        for _ in range(count):
            f.write(block)
        f.write(tail + struct.pack("<II", 0, 0))
    return path.stat().st_size


# the measured command: load in a fresh interpreter, print peak RSS (MB) and the error line
_MEASURE = """
import sys, time
from lc0py.weights import load_network, load_proto
from tests.peak_memory import peak_rss_mb
from lc0py.errors import Lc0pyError
start = time.perf_counter()
try:
    (load_network if sys.argv[2:] == ["network"] else load_proto)(sys.argv[1])
    msg = "accepted"
except Lc0pyError as exc:
    msg = str(exc)
print(peak_rss_mb(), time.perf_counter() - start)
print(msg)
"""


def _measure(path: Path, env: dict[str, str] | None = None, what: str = "proto") -> tuple[float, str]:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), what],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, check=True,
    ).stdout.splitlines()
    return float(out[0].split()[0]), out[1]


def test_gzip_bomb_of_zeros_is_refused_at_its_first_bytes(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.pb.gz"
    gzip_bomb(bomb, 18)  # ~18 GB of zeros, as in the issue
    peak_mb, msg = _measure(bomb)
    assert "not an lc0 network file" in msg and "field number 0" in msg
    assert peak_mb < 400, f"peak RSS {peak_mb:.0f} MB"


def test_bomb_behind_a_valid_prefix_stops_at_the_cap(tmp_path: Path) -> None:
    # a valid unknown length-delimited field declaring 64 MiB: fine under the default cap, refused
    # by a 16 MiB cap as soon as its length is read
    prefix = b"\xa2\x06" + bytes([0x80, 0x80, 0x80, 0x20])  # field 100, wire type 2, 64 MiB
    bomb = tmp_path / "prefixed.pb.gz"
    gzip_bomb(bomb, 0.0625, prefix)
    peak_mb, msg = _measure(bomb, {"LC0PY_MAX_NET_BYTES": "16M"})
    assert "more than the 16777216-byte limit" in msg
    assert peak_mb < 400


def test_cap_refuses_a_stream_longer_than_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = mutated_file(tmp_path, lambda m: None)
    size = len(gzip.decompress(path.read_bytes()))
    monkeypatch.setenv("LC0PY_MAX_NET_BYTES", str(size - 1))
    with pytest.raises(WeightsFormatError, match="LC0PY_MAX_NET_BYTES"):
        load_proto(path)
    monkeypatch.setenv("LC0PY_MAX_NET_BYTES", str(size))
    load_proto(path)
    plain = write_proto(tmp_path / "plain.pb", network_to_proto(small_net()), compress=False)
    monkeypatch.setenv("LC0PY_MAX_NET_BYTES", "1k")
    with pytest.raises(WeightsFormatError, match="larger than the 1024-byte limit"):
        load_proto(plain)
    monkeypatch.setenv("LC0PY_MAX_NET_BYTES", "lots")
    with pytest.raises(WeightsFormatError, match="LC0PY_MAX_NET_BYTES"):
        load_proto(plain)


def test_multi_member_gzip_still_loads(tmp_path: Path) -> None:
    data = network_to_proto(small_net()).SerializeToString()
    path = tmp_path / "two.pb.gz"
    path.write_bytes(gzip.compress(data[:1000]) + gzip.compress(data[1000:]))
    assert load_proto(path).magic == 0x1C0


def test_huge_declared_layer_is_refused_before_decoding(tmp_path: Path) -> None:
    # 64 M values declared where the layer holds 6144: refused on the byte count, never decoded
    def huge(m: object) -> None:
        layer = m.weights.encoder[0].ffn.dense1_w  # type: ignore[attr-defined]
        layer.params = bytes(128 << 20)
        del layer.dims[:]

    path = mutated_file(tmp_path, huge)
    peak_mb, msg = _measure(path, what="network")
    assert "encoder[0].ffn.dense1_w has 67108864 values, expected 6144 (96x64)" in msg
    assert peak_mb < 800  # the 128 MiB field is held twice at most (stream + message), never decoded


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_weights_are_refused_with_the_layer_name(tmp_path: Path, bad: float) -> None:
    def poison(m: object) -> None:
        m.weights.encoder[0].mha.q_b.min_val = bad  # type: ignore[attr-defined]

    with pytest.raises(WeightsFormatError, match=r"encoder\[0\]\.mha\.q_b holds \d+ NaN or infinite"):
        load_network(mutated_file(tmp_path, poison))


def test_nan_in_float32_layer_is_refused(tmp_path: Path) -> None:
    def poison(m: object) -> None:
        layer = m.weights.ip_emb_b  # type: ignore[attr-defined]
        values = np.frombuffer(layer.params, dtype="<f4").copy()
        values[3] = np.nan
        layer.params = values.tobytes()

    with pytest.raises(WeightsFormatError, match=r"ip_emb_b holds 1 NaN"):
        load_network(mutated_file(tmp_path, poison, encoding="float32"))


def test_input_format_unknown_is_one_line(tmp_path: Path) -> None:
    def zero(m: object) -> None:
        m.format.network_format.input = 0  # type: ignore[attr-defined]

    with pytest.raises(UnsupportedNetError, match="input format 0"):
        load_network(mutated_file(tmp_path, zero))


def test_directory_fifo_and_device_are_named(tmp_path: Path) -> None:
    with pytest.raises(WeightsFormatError, match="is a directory"):
        read_weights_bytes(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(WeightsFormatError, match="is a FIFO"):  # no writer: must not block
        read_weights_bytes(fifo)
    if os.path.exists("/dev/zero"):
        with pytest.raises(WeightsFormatError, match="is a character device"):
            read_weights_bytes("/dev/zero")
    with pytest.raises(WeightsFormatError, match="no such weights file"):
        read_weights_bytes(tmp_path / "absent.pb.gz")
    with pytest.raises(WeightsFormatError, match="cannot read weights file"):
        read_weights_bytes(tmp_path / ("x" * 300))


def test_truncated_inside_a_field_is_refused(tmp_path: Path) -> None:
    data = network_to_proto(small_net()).SerializeToString()
    path = tmp_path / "cut.pb.gz"
    path.write_bytes(gzip.compress(data[: len(data) - 7]))
    with pytest.raises(WeightsFormatError, match="not an lc0 network file"):
        load_proto(path)
