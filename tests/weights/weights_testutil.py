"""Helpers shared by the weights tests: small generated nets, raw-proto surgery, file writers."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lc0py.weights import network_to_proto, random_network
from lc0py.weights.network import Network

# Small shapes so every test runs in milliseconds; the tiny preset with one layer.
SMALL: dict[str, Any] = {"layers": 1}


def small_net(seed: int = 0, **overrides: Any) -> Network:
    return random_network("tiny", seed=seed, **{**SMALL, **overrides})


def write_proto(path: Path, net_proto: Any, compress: bool = True) -> Path:
    data = net_proto.SerializeToString()
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return path


def mutated_file(
    tmp_path: Path,
    mutate: Callable[[Any], None],
    name: str = "net.pb.gz",
    encoding: str = "linear16",
    **overrides: Any,
) -> Path:
    """A small generated net whose raw ``pblczero.Net`` was changed by ``mutate`` before writing."""
    net_proto = network_to_proto(small_net(**overrides), encoding)
    mutate(net_proto)
    return write_proto(tmp_path / name, net_proto)


def varint(n: int) -> bytes:
    """``n`` as a protobuf base-128 varint (for hand-made raw proto bytes)."""
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field_header(number: int, length: int) -> bytes:
    """The tag and length of a length-delimited proto field (its payload follows)."""
    return varint(number << 3 | 2) + varint(length)
