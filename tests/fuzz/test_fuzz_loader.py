"""Seeded fuzzing of the weights loader: truncations, bit flips, size fields, structural edits, layers
declaring gigabytes, gzip trailers cut and bytes after the member, on both bodies.

Each case must end in a loaded ``Network`` or one ``Lc0pyError`` (never another exception), with
memory bounded: the decompression cap is lowered to 16 MiB for the run, so no mutation can make the
loader hold more than that (plus the parse), and peak RSS is checked after the run.
"""

from __future__ import annotations

import gzip
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lc0py.errors import Lc0pyError
from lc0py.tools.describenet import describe
from lc0py.weights import load_network, load_proto, network_to_proto, random_network
from tests.fuzz.fuzzutil import SLOW_FACTOR, case_seeds, failure
from tests.peak_memory import peak_rss_mb, reset_peak_rss
from tests.weights.weights_testutil import field_header, varint

DEFAULT_CASES = 800
_BASE = network_to_proto(random_network("tiny", seed=11, layers=1))
_PLAIN = _BASE.SerializeToString()
_RESIDUAL = network_to_proto(random_network("res-tiny", seed=11)).SerializeToString()  # the other body
_LAYERS = [f for f in _BASE.weights.DESCRIPTOR.fields if f.message_type is not None
           and f.message_type.name == "Layer"]


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def _flip_bits(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def _smash_varint(rng: random.Random, data: bytes) -> bytes:
    """Overwrite a few bytes with a long varint (a huge length or tag) or zeros."""
    b = bytearray(data)
    at = rng.randrange(len(b))
    patch = rng.choice([b"\xff" * rng.randint(1, 12) + b"\x0f", b"\x00" * rng.randint(1, 8),
                        bytes([rng.randrange(256) | 0x80]) * 5 + b"\x07"])
    b[at : at + len(patch)] = patch
    return bytes(b)


def _splice(rng: random.Random, data: bytes) -> bytes:
    a, c = sorted(rng.randrange(len(data)) for _ in range(2))
    return data[:a] + data[c:] + data[a:c] if rng.random() < 0.5 else data[:a] + data[a:c] * 2 + data[c:]


def _structural(rng: random.Random, _: bytes) -> bytes:
    """Edit the message: a layer's size, dims, bounds, encoding; headcount; formats."""
    msg = type(_BASE)()
    msg.CopyFrom(_BASE)
    for _ in range(rng.randint(1, 3)):
        choice = rng.randrange(6)
        container: Any = msg.weights
        if choice == 0 and len(msg.weights.encoder):
            layer0 = msg.weights.encoder[0]
            container = rng.choice([layer0.mha, layer0.ffn, layer0])
        fields = [f for f in container.DESCRIPTOR.fields if f.message_type is not None
                  and f.message_type.name == "Layer"] or _LAYERS
        layer = getattr(container if fields is not _LAYERS else msg.weights, rng.choice(fields).name)
        if choice in (0, 1):
            layer.params = layer.params[: rng.randrange(len(layer.params) + 1)] + bytes(rng.randrange(64))
        elif choice == 2:
            del layer.dims[:]
            layer.dims.extend(rng.randrange(1 << 20) for _ in range(rng.randint(1, 3)))
        elif choice == 3:
            layer.min_val = rng.choice([float("nan"), float("inf"), -1e38, 0.0, 1e30])
            layer.max_val = rng.choice([float("-inf"), 1e38, 1.0])
        elif choice == 4:
            layer.encoding = rng.randint(0, 4)
        else:
            msg.weights.headcount = rng.randrange(0, 40)
            msg.format.network_format.input = rng.choice([0, 1, 2, 3, 4, 5, 132, 133])
    return msg.SerializeToString()


def _huge_layer(rng: random.Random, data: bytes) -> bytes:
    """Append a layer (merged into an existing one, or a new encoder/residual block) whose params
    declare far more bytes than follow: the length alone must refuse it (issue 30 item 4)."""
    size = rng.choice([1 << 24, 1 << 28, (1 << 31) - 1, 5 << 30])
    inner = b"\x1a" + varint(size) + bytes(rng.randrange(64))
    # where: input.weights, residual[+1].conv1.weights, encoder[+1].ffn.dense1_w, and the policy
    # ConvBlock, whose field 3 is a Layer message (then the message itself declares the bytes)
    path = rng.choice([[10, 1, 1], [10, 2, 1, 1], [10, 27, 4, 1], [10, 3]])
    body = inner
    for number in reversed(path):  # every enclosing message declares the layer's bytes too
        body = field_header(number, len(body) + size) + body
    return data + body


def _cut_trailer(rng: random.Random, data: bytes) -> bytes:
    """A gzip file losing 1-8 bytes of its trailer (lc0 plays these: docs/weights-format.md §11)."""
    return data[: len(data) - rng.randint(1, 8)]


def _trailing_bytes(rng: random.Random, data: bytes) -> bytes:
    """Bytes after the member: garbage, zeros, a partial header, another (maybe cut) member."""
    extra = rng.choice([bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))),
                        bytes(rng.randint(1, 64)), b"\x1f\x8b\x08"[: rng.randint(1, 3)],
                        gzip.compress(bytes(rng.randrange(32)), mtime=0)])
    if rng.random() < 0.3:
        extra = extra[: rng.randrange(len(extra) + 1)]
    return data + extra


MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [_truncate, _flip_bits, _smash_varint, _splice,
                                                            _structural, _huge_layer]
GZIP_MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [_truncate, _flip_bits, _cut_trailer,
                                                                 _trailing_bytes]


def _case(seed: int, folder: Path) -> str:
    rng = random.Random(seed)
    mutate = rng.choice(MUTATIONS)
    residual = mutate is not _structural and rng.random() < 0.3  # _structural edits the attention net
    data = mutate(rng, _RESIDUAL if residual else _PLAIN)
    compressed = rng.random() < 0.5
    if compressed:
        data = gzip.compress(data, mtime=0)
        if rng.random() < 0.3:  # mutate the gzip container too
            data = rng.choice(GZIP_MUTATIONS)(rng, data)
    path = folder / f"case-{seed}.pb.gz"
    path.write_bytes(data)
    what = f"{mutate.__name__}{' +gzip' if compressed else ''}"
    try:
        describe(load_proto(path), str(path))
        load_network(path)
        outcome = "loaded"
    except Lc0pyError as exc:
        assert "\n" not in str(exc), failure("loader", seed, f"{what}: multi-line message {exc!r}")
        outcome = "refused"
    except Exception as exc:  # the point of the fuzzer: nothing else may escape
        raise AssertionError(failure("loader", seed, f"{what}: {type(exc).__name__}: {exc}")) from exc
    finally:
        path.unlink()
    return outcome


def _run(base: int, count: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    monkeypatch.setenv("LC0PY_MAX_NET_BYTES", "16M")
    reset_peak_rss()  # bound what the fuzz cases cost, not what earlier tests left behind
    outcomes: dict[str, int] = {}
    for seed in case_seeds(base, count):
        outcome = _case(seed, tmp_path)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    peak_mb = peak_rss_mb()
    assert peak_mb < 2048, f"peak RSS {peak_mb:.0f} MB"
    print(f"loader fuzz: {count} cases from base seed {base}: {outcomes}")
    return outcomes


def test_loader_fuzz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = _run(20240901, DEFAULT_CASES, tmp_path, monkeypatch)
    assert sum(outcomes.values()) >= 1


@pytest.mark.slow
def test_loader_fuzz_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(7, DEFAULT_CASES * SLOW_FACTOR, tmp_path, monkeypatch)
