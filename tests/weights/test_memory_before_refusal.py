"""Memory before refusal (issue 30 item 4): a net declaring one absurd layer, on either body, and
a large plain file of zeros are refused in one line with peak memory far below what they declare.

The files are built here in milliseconds: the huge layer is a run of zeros compressed as one
repeated deflate block, appended to a real small net as a second ``weights`` field (protobuf
merges repeated message fields, so the layer lands in ``weights.input.weights`` or in
``weights.encoder[0]...``). Peak memory is the measuring subprocess's own VmHWM
(``tests/peak_memory.py``), never a time.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from lc0py.errors import Lc0pyError, WeightsFormatError
from lc0py.weights import load_network, network_to_proto, random_network
from tests.weights.weights_testutil import field_header

ROOT = Path(__file__).resolve().parents[2]
MB = 1 << 20


def layer_bomb(path: Path, base: bytes, levels: list[tuple[int, bytes]], megabytes: int,
               crc: bool = False) -> Path:
    """``base`` (a serialised Net) plus one layer below ``levels`` (field number and the bytes that
    message holds before the next level) whose ``params`` are ``megabytes`` MiB of zeros,
    gzip-compressed as a stream. ``crc``: write the real CRC (seconds for a GB; only for a loader
    that reads to the end)."""
    size = megabytes * MB // 2016 * 2016  # a whole number of 112x3x3 LINEAR16 filters
    inner = field_header(3, size)  # Layer.params
    length = len(inner) + size
    prefix = inner
    for number, before in reversed(levels):
        head = field_header(number, len(before) + length)
        prefix = head + before + prefix
        length += len(head) + len(before)
    prefix = base + prefix
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(bytes(MB)) + comp.flush(zlib.Z_FULL_FLUSH)
    checksum = zlib.crc32(prefix)
    with open(path, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + head)
        zeros = bytes(MB)
        for _ in range(size // MB):
            f.write(block)
            if crc:
                checksum = zlib.crc32(zeros, checksum)
        rest = bytes(size % MB)
        checksum = zlib.crc32(rest, checksum)
        f.write(comp.compress(rest) + comp.flush(zlib.Z_FINISH)
                + struct.pack("<II", checksum if crc else 0, (len(prefix) + size) & 0xFFFFFFFF))
    return path


def residual_base() -> bytes:
    return network_to_proto(random_network("res-tiny", seed=3)).SerializeToString()


#: Net.weights.input.weights (merged into the base's input layer: the bomb's params replace its own)
RESIDUAL_INPUT = [(10, b""), (1, b""), (1, b"")]


def attention_parts() -> tuple[bytes, list[tuple[int, bytes]]]:
    """A net without encoders, and the levels that put its one encoder back with a huge
    ``ffn.dense1_w`` (Net.weights.encoder[0].ffn.dense1_w)."""
    net = network_to_proto(random_network("tiny", seed=3, layers=1))
    encoder = type(net.weights.encoder[0])()
    encoder.CopyFrom(net.weights.encoder[0])
    encoder.ffn.ClearField("dense1_w")
    del net.weights.encoder[:]
    return net.SerializeToString(), [(10, b""), (27, encoder.SerializeToString()), (4, b""), (1, b"")]


_MEASURE = """
import sys
from lc0py.errors import Lc0pyError
from tests.peak_memory import peak_rss_mb
try:
    from lc0py.weights import load_network
    load_network(sys.argv[1])
    msg = "accepted"
except Lc0pyError as exc:
    msg = str(exc)
except MemoryError:
    msg = "MemoryError"
print(round(peak_rss_mb()))
print(msg)
"""


def measure(path: Path, root: Path = ROOT) -> tuple[float, str]:
    """Peak RSS (MB) and the one line of loading ``path`` in a fresh interpreter on ``root``'s tree."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, cwd=root, timeout=600,
        env={**os.environ, "PYTHONPATH": str(root)}, check=True,
    ).stdout.splitlines()
    return float(out[0]), out[1]


@pytest.mark.parametrize("megabytes", [1229, 1946])  # 1.2 and 1.9 GB, as in the issue
def test_residual_input_layer_of_gigabytes_is_refused_while_streaming(tmp_path: Path, megabytes: int) -> None:
    bomb = layer_bomb(tmp_path / "bomb.pb.gz", residual_base(), RESIDUAL_INPUT, megabytes)
    assert bomb.stat().st_size < 4 * MB
    peak_mb, msg = measure(bomb)
    assert "bytes, more than the 268435456-byte limit for one layer" in msg and "\n" not in msg
    assert peak_mb < 1024, f"peak RSS {peak_mb:.0f} MB"


@pytest.mark.parametrize("body", ["residual", "attention"])
def test_layer_under_the_stream_limit_is_refused_before_decoding(tmp_path: Path, body: str) -> None:
    # 200 MiB (100 M LINEAR16 values): under the per-layer limit, so it is parsed, then refused on
    # its byte count; decoding it would cost 400 MB more (float32), 800 MB as float64
    if body == "residual":
        base, levels, name = residual_base(), RESIDUAL_INPUT, "input has 16 output channels, expected 104025"
    else:
        (base, levels), name = attention_parts(), "encoder[0].ffn.dense1_w"
    bomb = layer_bomb(tmp_path / "big.pb.gz", base, levels, 200, crc=True)
    peak_mb, msg = measure(bomb)
    assert name in msg and "expected" in msg, msg
    assert peak_mb < 700, f"peak RSS {peak_mb:.0f} MB"


def test_a_width_of_100_million_values_is_refused_before_decoding(tmp_path: Path) -> None:
    net = network_to_proto(random_network("tiny", seed=3, layers=1))
    net.weights.ClearField("ip_emb_b")  # the bomb's bias replaces it: the embedding width E
    bomb = layer_bomb(tmp_path / "wide.pb.gz", net.SerializeToString(), [(10, b""), (26, b"")], 200, crc=True)
    peak_mb, msg = measure(bomb)
    assert "ip_emb_b has 104857200 values; lc0py refuses widths above 1048576" in msg, msg
    assert peak_mb < 700, f"peak RSS {peak_mb:.0f} MB"


def test_plain_file_of_zeros_is_refused_at_its_first_bytes(tmp_path: Path) -> None:
    zeros = tmp_path / "zeros.pb"
    with open(zeros, "wb") as f:
        f.truncate(1536 * MB)  # 1.5 GB, sparse: costs no disk
    peak_mb, msg = measure(zeros)
    assert "not an lc0 network file" in msg and "field number 0 at byte 0" in msg
    assert peak_mb < 300, f"peak RSS {peak_mb:.0f} MB"


def test_refusals_are_lc0py_errors_and_one_cli_line(tmp_path: Path) -> None:
    bomb = layer_bomb(tmp_path / "bomb.pb.gz", residual_base(), RESIDUAL_INPUT, 1229)
    with pytest.raises(WeightsFormatError):
        load_network(bomb)
    import lc0py
    with pytest.raises(Lc0pyError):
        lc0py.load(str(bomb), backend="numpy")
    run = subprocess.run([sys.executable, "-m", "lc0py", "describenet", "--weights", str(bomb)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "limit for one layer" in run.stderr


def test_a_real_small_residual_net_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.pb"
    path.write_bytes(residual_base())  # plain protobuf, read chunk by chunk
    assert load_network(path).filters > 0
