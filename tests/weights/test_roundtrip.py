"""Writer -> loader round trips, determinism and atomic writes (docs/weights-format.md §4, §10)."""

from __future__ import annotations

import dataclasses
import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from weights_testutil import small_net

from lc0py.errors import UsageError
from lc0py.weights import load_network, load_proto, network_to_proto, save_network, serialize_network
from lc0py.weights import writer as writer_module
from lc0py.weights.network import Activation, InputEmbedding, Network, NetworkFormat, NetworkKind

ENCODINGS = ["linear16", "float16", "bfloat16", "float32"]


def _atol(x: np.ndarray, encoding: str) -> float:
    if encoding == "float32" or x.size == 0:
        return 0.0
    if encoding == "linear16":
        # half a quantisation step, plus float32 rounding of min*(1-θ) + max*θ
        return float(x.max() - x.min()) / 65535 * 0.5 + float(abs(x.max()) + abs(x.min())) * 2.0**-22
    mantissa = 11 if encoding == "float16" else 8
    return float(np.abs(x).max()) * 2.0**-mantissa


def assert_same(a: Any, b: Any, encoding: str, where: str = "network") -> None:
    """Recursively compare two network descriptions; arrays within the encoding's resolution.

    The writer stores resolved activations (never DEFAULT), so a stored DEFAULT compares equal to
    the resolved value of the other side.
    """
    if isinstance(a, NetworkFormat):
        a = dataclasses.replace(
            a,
            **{
                k: v
                for k, v in (
                    ("ffn_activation", b.ffn_activation),
                    ("smolgen_activation", b.smolgen_activation),
                )
                if getattr(a, k) == Activation.DEFAULT
            },
        )
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), where
        assert b.dtype == np.float32, where
        assert a.shape == b.shape, f"{where}: shape {a.shape} vs {b.shape}"
        err = float(np.abs(a - b).max()) if a.size else 0.0
        assert err <= _atol(a, encoding), f"{where}: max error {err}"
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if f.name in ("min_version", "extra"):
                continue
            assert_same(getattr(a, f.name), getattr(b, f.name), encoding, f"{where}.{f.name}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, encoding, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], encoding, f"{where}[{k}]")
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-12), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


CASES = [
    pytest.param(dict(embedding=emb, multihead=mh), id=f"{emb}-{'mh' if mh else 'single'}")
    for emb in ("pe_map", "pe_dense", "none")
    for mh in (False, True)
] + [
    pytest.param(dict(smolgen=False, moves_left=False), id="no-smolgen-no-mlh"),
    pytest.param(
        dict(gating=False, wdl=False, default_activation="relu", ffn_activation="default"),
        id="relu-classical-value-no-gating",
    ),
]


@pytest.mark.parametrize("overrides", CASES)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_round_trip(tmp_path: Path, encoding: str, overrides: dict[str, Any]) -> None:
    net = small_net(seed=11, **overrides)
    path = tmp_path / "net.pb.gz"
    save_network(net, path, encoding=encoding)
    loaded = load_network(path)
    assert_same(net, loaded, encoding)
    assert_same(net.extra["policy_heads"], loaded.extra["policy_heads"], encoding, "policy_heads")
    assert_same(net.extra["value_heads"], loaded.extra["value_heads"], encoding, "value_heads")
    if encoding == "float32":
        assert np.array_equal(net.encoders[0].q.w, loaded.encoders[0].q.w)
    else:
        assert not np.array_equal(net.encoders[0].q.w, loaded.encoders[0].q.w)  # really quantised


def test_round_trip_of_other_heads(tmp_path: Path) -> None:
    net = small_net(seed=4, multihead=True)
    save_network(net, tmp_path / "mh.pb.gz", encoding="float32")
    loaded = load_network(tmp_path / "mh.pb.gz", policy_head="optimistic", value_head="q")
    assert loaded.policy_head_name == "optimistic" and loaded.value_head_name == "q"
    assert_same(net.extra["policy_heads"]["optimistic"], loaded.policy, "float32")
    assert_same(net.extra["value_heads"]["q"], loaded.value, "float32")
    assert not np.array_equal(loaded.value.fc1.w, net.value.fc1.w)


def test_loaded_multihead_net_saves_again_unchanged(tmp_path: Path) -> None:
    net = small_net(seed=5, multihead=True, embedding="pe_dense")
    first = serialize_network(net, "float32")
    (tmp_path / "a.pb.gz").write_bytes(first)
    assert serialize_network(load_network(tmp_path / "a.pb.gz"), "float32") == first


def test_format_fields_as_lc0_needs_them(tmp_path: Path) -> None:
    net = small_net(seed=1, ffn_activation="default")
    msg = network_to_proto(net, "linear16")
    data = msg.SerializeToString()
    assert data[:5] == bytes([0x0D, 0xC0, 0x01, 0x00, 0x00])
    assert (msg.min_version.major, msg.min_version.minor, msg.min_version.patch) == (0, 30, 0)
    assert msg.format.weights_encoding == 1
    nf = msg.format.network_format
    for field in (
        "input",
        "output",
        "network",
        "policy",
        "value",
        "moves_left",
        "default_activation",
        "smolgen_activation",
        "ffn_activation",
        "input_embedding",
    ):
        assert nf.HasField(field), field
    assert nf.ffn_activation == 1  # DEFAULT resolved to the default activation (MISH)
    assert nf.network == NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT
    assert msg.weights.headcount == 4
    assert list(msg.weights.encoder[0].mha.q_w.dims) == [64, 64]
    assert list(msg.weights.smolgen_w.dims) == [4096, 16]
    assert list(msg.weights.ip_mult_gate.dims) == [64, 64]
    assert not msg.weights.encoder[0].mha.q_w.HasField("encoding")

    f16 = network_to_proto(net, "float16")
    assert (f16.min_version.major, f16.min_version.minor) == (0, 33)
    assert f16.weights.encoder[0].mha.q_w.encoding == 2


def test_multihead_containers(tmp_path: Path) -> None:
    msg = network_to_proto(small_net(multihead=True), "linear16")
    w = msg.weights
    assert msg.format.network_format.network == NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT
    assert w.HasField("policy_heads") and w.HasField("value_heads")
    assert w.policy_heads.HasField("ip_pol_w")  # shared embedding
    assert not w.policy_heads.optimistic_st.HasField("ip_pol_w")  # uses the shared one
    assert w.policy_heads.optimistic_st.HasField("ip2_pol_b")
    assert w.value_heads.q.HasField("ip1_val_b")
    assert not w.HasField("ip2_pol_b") and not w.HasField("ip_val_w")


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = serialize_network(small_net(seed=3))
    assert a == serialize_network(small_net(seed=3))
    assert a != serialize_network(small_net(seed=4))
    assert gzip.decompress(a)[:1] == b"\x0d"
    assert a[4:8] == b"\0\0\0\0"  # gzip mtime 0


def test_plain_protobuf_output(tmp_path: Path) -> None:
    save_network(small_net(), tmp_path / "net.pb", gzip=False)
    raw = (tmp_path / "net.pb").read_bytes()
    assert raw[:1] == b"\x0d"
    assert load_network(tmp_path / "net.pb").num_layers == 1


def test_unknown_encoding(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="encoding 'int8': unknown"):
        save_network(small_net(), tmp_path / "x.pb.gz", encoding="int8")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_module.os, "replace", broken_replace)
    with pytest.raises(UsageError, match="No space left on device"):
        save_network(small_net(), tmp_path / "net.pb.gz")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot write"):
        save_network(small_net(), tmp_path / "missing" / "net.pb.gz")
    assert list(tmp_path.iterdir()) == []


def test_overwrite_is_atomic_and_keeps_permissions_sane(tmp_path: Path) -> None:
    path = tmp_path / "net.pb.gz"
    path.write_bytes(b"old")
    save_network(small_net(), path)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    umask = os.umask(0o022)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0600
    assert load_proto(path).magic == 0x1C0


def test_pe_dense_net_round_trips_as_pe_dense(tmp_path: Path) -> None:
    save_network(small_net(embedding="pe_dense"), tmp_path / "d.pb.gz")
    net: Network = load_network(tmp_path / "d.pb.gz")
    assert net.embedding.kind == InputEmbedding.PE_DENSE
    assert net.encoder_eps == 1e-3
    assert net.embedding.dense.n_in == 112 + 4
    assert net.embedding.preproc is not None and net.embedding.preproc.w.shape == (256, 768)
