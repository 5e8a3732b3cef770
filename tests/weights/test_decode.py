"""Layer decoding and encoding (docs/weights-format.md §4)."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.errors import UsageError, WeightsFormatError
from lc0py.weights import proto
from lc0py.weights.decode import ENV_LINEAR16, decode_layer, encode_layer, layer_element_count, linear16
from lc0py.weights.network import WeightsEncoding


def _linear16(words: list[int], lo: float = -1.0, hi: float = 1.0, explicit: bool = False) -> object:
    layer = proto.Layer(min_val=lo, max_val=hi, params=np.array(words, "<u2").tobytes())
    if explicit:
        layer.encoding = proto.Layer.LINEAR16
    return layer


@pytest.mark.parametrize("explicit", [False, True], ids=["absent", "explicit"])
def test_linear16_anchors(explicit: bool) -> None:
    values = decode_layer(_linear16([0, 1, 32768, 65535], explicit=explicit))
    assert values.dtype == np.float32
    assert values.tolist() == [-1.0, -0.999969482421875, 1.52587890625e-05, 1.0]


def _words_and_bounds() -> tuple[np.ndarray, np.float32, np.float32]:
    rng = np.random.default_rng(7)
    return rng.integers(0, 65536, 5000), np.float32(-0.37), np.float32(2.91)


def test_linear16_default_is_lc0_032_formula_in_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_LINEAR16, raising=False)
    words, lo, hi = _words_and_bounds()
    expected = words.astype(np.float32) / np.float32(65535) * (hi - lo) + lo
    got = decode_layer(_linear16(words.tolist(), float(lo), float(hi)))
    assert np.array_equal(got, expected)


def test_linear16_lc0_033_formula_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    words, lo, hi = _words_and_bounds()
    theta = words.astype(np.float32) / np.float32(65535)
    expected = lo * (np.float32(1) - theta) + hi * theta
    layer = _linear16(words.tolist(), float(lo), float(hi))
    with linear16("lc0-0.33"):
        assert np.array_equal(decode_layer(layer), expected)
    monkeypatch.setenv(ENV_LINEAR16, "lc0-0.33")
    assert np.array_equal(decode_layer(layer), expected)
    with linear16("lc0-0.32"):  # a block wins over the environment
        assert not np.array_equal(decode_layer(layer), expected)
    monkeypatch.setenv(ENV_LINEAR16, "lc0-0.99")
    with pytest.raises(UsageError, match="LC0PY_LINEAR16"):
        decode_layer(layer)


def test_float16_bfloat16_float32() -> None:
    x = np.array([1.5, -2.0, 65504.0, 6.1e-5, np.inf, -0.0], dtype=np.float32)
    f16 = proto.Layer(params=x.astype("<f2").tobytes(), encoding=proto.Layer.FLOAT16)
    assert np.array_equal(decode_layer(f16), x.astype(np.float16).astype(np.float32))
    bf = np.array([0x3FC0, 0xC000, 0x7F80, 0x0001], "<u2")  # 1.5, -2, inf, smallest subnormal
    got = decode_layer(proto.Layer(params=bf.tobytes(), encoding=proto.Layer.BFLOAT16))
    assert got[:3].tolist() == [1.5, -2.0, np.inf]
    assert got[3] == np.float32(2.0**-133)
    f32 = np.array([np.pi, -1e-30, 3e38], np.float32)
    assert np.array_equal(decode_layer(proto.Layer(params=f32.tobytes(), encoding=proto.Layer.FLOAT32)), f32)


def test_absent_layer_is_empty() -> None:
    assert decode_layer(proto.Layer()).size == 0


@pytest.mark.parametrize("code", [0, 7])
def test_unknown_encoding_refused(code: int) -> None:
    layer = proto.Layer(params=b"\0\0")
    if code == 0:
        layer.encoding = 0
    else:  # a value from a newer schema: stored as an unknown field, reads back as 0 (set)
        raw = proto.Layer(params=b"\0\0").SerializeToString() + bytes([0x20, code])
        layer = proto.Layer()
        layer.ParseFromString(raw)
    with pytest.raises(WeightsFormatError, match="encoder.q_w: unknown layer encoding"):
        decode_layer(layer, "encoder.q_w")


@pytest.mark.parametrize("encoding, nbytes", [(None, 3), (proto.Layer.FLOAT16, 5), (proto.Layer.FLOAT32, 6)])
def test_byte_count_must_be_a_multiple_of_the_element_size(encoding: int | None, nbytes: int) -> None:
    layer = proto.Layer(params=b"\1" * nbytes)
    if encoding is not None:
        layer.encoding = encoding
    with pytest.raises(WeightsFormatError, match="not a multiple"):
        decode_layer(layer, "x")


def test_dims_parsed_packed_or_not_and_never_checked() -> None:
    layer = proto.Layer(params=np.zeros(6, "<u2").tobytes(), min_val=0, max_val=1)
    layer.dims.extend([2, 3])
    assert decode_layer(layer).size == 6
    unpacked = layer.SerializeToString()
    assert bytes([0x28, 2, 0x28, 3]) in unpacked  # proto2 default: one tag per element
    packed = proto.Layer(params=layer.params, min_val=0, max_val=1).SerializeToString() + bytes(
        [0x2A, 2, 2, 3]
    )
    again = proto.Layer()
    again.ParseFromString(packed)
    assert list(again.dims) == [2, 3]
    assert decode_layer(again).size == 6
    del layer.dims[:]
    layer.dims.extend([4, 2])  # lc0 never reads dims and plays such files (issue 30 item 7)
    assert decode_layer(layer, "x").size == 6


@pytest.mark.parametrize("encoding", list(WeightsEncoding)[1:], ids=lambda e: e.name)
def test_encode_then_decode(encoding: WeightsEncoding) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((17, 5)).astype(np.float32)
    layer = proto.Layer()
    encode_layer(layer, x, encoding)
    assert list(layer.dims) == [17, 5]
    assert layer.HasField("encoding") == (encoding != WeightsEncoding.LINEAR16)
    assert layer_element_count(layer) == 85
    got = decode_layer(layer).reshape(17, 5)
    step = {
        WeightsEncoding.LINEAR16: (x.max() - x.min()) / 65535 / 2 * 1.001,
        WeightsEncoding.FLOAT16: np.abs(x).max() * 2.0**-11,
        WeightsEncoding.BFLOAT16: np.abs(x).max() * 2.0**-8,
        WeightsEncoding.FLOAT32: 0.0,
    }[encoding]
    assert np.abs(got - x).max() <= step
    if encoding != WeightsEncoding.FLOAT32:
        assert np.abs(got - x).max() > 0  # really quantised


def test_linear16_writer_recipe_edge_cases() -> None:
    one = proto.Layer()
    encode_layer(one, np.array([-3.25], np.float32))
    assert (one.min_val, one.max_val) == (0.0, -3.25)
    assert decode_layer(one).tolist() == [-3.25]
    zero = proto.Layer()
    encode_layer(zero, np.array([0.0], np.float32))
    assert (zero.min_val, zero.max_val) == (0.0, 1.0)
    assert decode_layer(zero).tolist() == [0.0]
    const = proto.Layer()
    encode_layer(const, np.full(4, 0.5, np.float32))
    assert decode_layer(const).tolist() == [0.5] * 4
