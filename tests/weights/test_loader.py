"""Loader rules: container checks, normalisation, refusals, head selection, size validation."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from weights_testutil import mutated_file, small_net, write_proto

from lc0py.errors import BackendOptionError, UnsupportedNetError, WeightsFormatError
from lc0py.weights import load_network, load_proto, network_to_proto, random_network, save_network
from lc0py.weights.network import Activation, InputEmbedding, NetworkKind

# --------------------------------------------------------------------------- container (§1)


@pytest.fixture()
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.pb.gz"
    save_network(small_net(seed=2), path)
    return path


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(WeightsFormatError, match="nope.pb.gz: no such weights file"):
        load_network(tmp_path / "nope.pb.gz")
    with pytest.raises(WeightsFormatError, match="is a directory"):
        load_network(tmp_path)


def test_truncated_gzip(tmp_path: Path, good: Path) -> None:
    bad = tmp_path / "trunc.pb.gz"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(WeightsFormatError, match="trunc.pb.gz: truncated gzip data"):
        load_network(bad)


def test_corrupt_gzip(tmp_path: Path, good: Path) -> None:
    data = bytearray(good.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    bad = tmp_path / "corrupt.pb.gz"
    bad.write_bytes(bytes(data))
    # the inflater or the wire check, whichever meets the damage first
    with pytest.raises(WeightsFormatError, match="corrupt.pb.gz: (corrupt gzip|not an lc0 network)"):
        load_network(bad)


def test_not_a_protobuf(tmp_path: Path) -> None:
    bad = tmp_path / "text.pb.gz"
    bad.write_bytes(gzip.compress(b"\xff\xff\xff\xff this is not a network"))
    with pytest.raises(WeightsFormatError, match="text.pb.gz: not an lc0 network file"):
        load_network(bad)


def test_plain_protobuf_loads(tmp_path: Path, good: Path) -> None:
    plain = tmp_path / "plain.pb"
    plain.write_bytes(gzip.decompress(good.read_bytes()))
    assert load_network(plain).embedding_size == 64


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "too small"),
        (b"x", "too small"),
        (b"1\nabc", "version 1"),
        (b"2\n0.1 0.2", "text format"),
    ],
)
def test_old_formats(tmp_path: Path, content: bytes, message: str) -> None:
    bad = tmp_path / "old.txt"
    bad.write_bytes(content)
    with pytest.raises(WeightsFormatError, match=message):
        load_network(bad)


def test_wrong_magic(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.magic = 0x1C1

    with pytest.raises(WeightsFormatError, match="bad header"):
        load_network(mutated_file(tmp_path, mutate))


@pytest.mark.parametrize(
    "version, ok", [((0, 33, 0), True), ((0, 33, 1), False), ((1, 0, 0), False), ((97, 98, 99), True)]
)
def test_min_version_gate(tmp_path: Path, version: tuple[int, int, int], ok: bool) -> None:
    def mutate(m: Any) -> None:
        m.min_version.major, m.min_version.minor, m.min_version.patch = version

    path = mutated_file(tmp_path, mutate)
    if ok:
        assert load_network(path).min_version == version
    else:
        with pytest.raises(WeightsFormatError, match=r"lc0 version >= v{}\.{}\.{} required".format(*version)):
            load_network(path)


def test_encoding_gate(tmp_path: Path) -> None:
    def drop_encoding(m: Any) -> None:
        m.format.ClearField("weights_encoding")

    with pytest.raises(WeightsFormatError, match="unsupported encoding"):
        load_network(mutated_file(tmp_path, drop_encoding))

    def new_enough(m: Any) -> None:
        m.format.ClearField("weights_encoding")
        m.min_version.minor = 33

    assert load_network(mutated_file(tmp_path, new_enough, name="ok.pb.gz")).num_layers == 1


# --------------------------------------------------------------------------- what lc0py refuses (§8)


REFUSALS = [
    ("hybrid", lambda m: m.weights.residual.add().conv1.weights.__setattr__("params", b"\0\0"), "hybrid"),
    ("onnx", lambda m: m.onnx_model.__setattr__("model", b"\x08\x07"), "ONNX"),
    ("rpe", lambda m: m.weights.encoder[0].mha.rpe_q.__setattr__("params", b"\0\0"), "RPE"),
    ("value-param", lambda m: m.format.network_format.__setattr__("value", 3), "VALUE_PARAM"),
    (
        "conv-policy",
        lambda m: m.format.network_format.__setattr__("policy", 2),
        "convolution policy is not supported with an attention body",
    ),
    ("classical-policy", lambda m: m.format.network_format.__setattr__("policy", 1), "classical policy"),
    ("softmax-ffn", lambda m: m.format.network_format.__setattr__("ffn_activation", 9), "SOFTMAX"),
    ("softmax-smolgen", lambda m: m.format.network_format.__setattr__("smolgen_activation", 9), "SOFTMAX"),
    (
        "pol-encoder",
        lambda m: m.weights.pol_encoder.add().mha.q_b.__setattr__("params", b"\0\0"),
        "pol_encoder",
    ),
]


@pytest.mark.parametrize("mutate, message", [pytest.param(m, msg, id=i) for i, m, msg in REFUSALS])
def test_refused_kinds(tmp_path: Path, mutate: Any, message: str) -> None:
    with pytest.raises(UnsupportedNetError, match=message):
        load_network(mutated_file(tmp_path, mutate))


def test_unknown_enum_value_refused(tmp_path: Path) -> None:
    msg = network_to_proto(small_net())
    raw = bytearray(msg.SerializeToString())
    # append NetworkFormat.input_embedding = 5 inside Format.network_format: re-encode Format by hand
    fmt = msg.format
    nf_bytes = fmt.network_format.SerializeToString() + bytes([0x50, 5])
    fmt_bytes = bytes([0x08, fmt.weights_encoding, 0x12, len(nf_bytes)]) + nf_bytes
    msg.ClearField("format")
    raw = msg.SerializeToString() + bytes([0x22, len(fmt_bytes)]) + fmt_bytes
    path = tmp_path / "enum.pb"
    path.write_bytes(raw)
    with pytest.raises(UnsupportedNetError, match="input_embedding = 5"):
        load_network(path)


def test_missing_weights(tmp_path: Path) -> None:
    with pytest.raises(WeightsFormatError, match="no weights"):
        load_network(mutated_file(tmp_path, lambda m: m.ClearField("weights")))


# --------------------------------------------------------------------------- sizes (§6.1)


def test_wrong_layer_size_names_file_and_layer(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.weights.encoder[0].mha.q_w.params = b"\0\0" * 1000
        del m.weights.encoder[0].mha.q_w.dims[:]

    with pytest.raises(WeightsFormatError) as info:
        load_network(mutated_file(tmp_path, mutate, name="weights.pb.gz"))
    assert str(info.value).endswith(
        "weights.pb.gz: encoder[0].mha.q_w has 1000 values, expected 4096 (64x64)"
    )


@pytest.mark.parametrize(
    "mutate, message",
    [
        pytest.param(lambda w: w.ClearField("ip_emb_b"), "ip_emb_b is missing", id="ip_emb_b"),
        pytest.param(
            lambda w: w.encoder[0].mha.ClearField("q_b"), r"encoder\[0\].mha.q_b is missing", id="q_b"
        ),
        pytest.param(
            lambda w: w.encoder[0].ffn.ClearField("dense1_b"), "ffn.dense1_b is missing", id="ffn1_b"
        ),
        pytest.param(
            lambda w: w.encoder[0].ffn.ClearField("dense2_b"), "ffn.dense2_b is missing", id="ffn2_b"
        ),
        pytest.param(lambda w: w.ClearField("ip_pol_b"), "ip_pol_b is missing", id="ip_pol_b"),
        pytest.param(lambda w: w.ClearField("ip1_mov_b"), "ip1_mov_b is missing", id="ip1_mov_b"),
        pytest.param(
            lambda w: w.encoder[0].ClearField("ln2_betas"), r"encoder\[0\].ln2_betas is missing", id="ln"
        ),
        pytest.param(lambda w: w.__setattr__("headcount", 3), "headcount 3 does not divide", id="headcount"),
        pytest.param(lambda w: w.ClearField("headcount"), "headcount is missing", id="no-headcount"),
        pytest.param(lambda w: w.ClearField("smolgen_w"), "smolgen_w is missing", id="smolgen_w"),
        pytest.param(
            lambda w: (
                w.encoder[0].mha.smolgen.dense2_b.__setattr__("params", b"\0\0" * 10),
                w.encoder[0].mha.smolgen.dense2_b.ClearField("dims"),
            ),
            "smolgen.dense2_b has 10 values, expected 64",
            id="smolgen-gs",
        ),
        pytest.param(
            lambda w: w.ip4_pol_w.__setattr__("params", b"\0\0" * 3) or w.ip4_pol_w.ClearField("dims"),
            r"ip4_pol_w has 3 values, expected 128 \(4x32\)",
            id="ip4",
        ),
        pytest.param(
            lambda w: (w.ip2_val_w.__setattr__("params", b"\0\0" * 32), w.ip2_val_w.ClearField("dims")),
            r"ip2_val_w has 32 values, expected 96 \(3x32\)",
            id="wdl-as-classical",
        ),
        pytest.param(
            lambda w: w.ClearField("ip_val_w"), "could not find valid value head weights", id="no-value"
        ),
        pytest.param(
            lambda w: (w.ClearField("ip_pol_w"), w.ClearField("ip_pol_b")),
            "could not find valid policy head weights",
            id="no-policy",
        ),
    ],
)
def test_inconsistent_files(tmp_path: Path, mutate: Any, message: str) -> None:
    with pytest.raises(WeightsFormatError, match=message):
        load_network(mutated_file(tmp_path, lambda m: mutate(m.weights)))


def test_absent_optional_biases_are_none(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        w = m.weights
        for f in ("k_b", "v_b", "dense_b"):
            w.encoder[0].mha.ClearField(f)
        for f in ("ip3_pol_b", "ip2_val_b", "ip2_mov_b"):
            w.ClearField(f)

    net = load_network(mutated_file(tmp_path, mutate))
    enc = net.encoders[0]
    assert enc.k.b is None and enc.v.b is None and enc.out.b is None
    assert enc.q.b is not None
    assert net.policy.wk.b is None and net.value.fc2.b is None
    assert net.moves_left is not None and net.moves_left.fc2.b is None


def test_classical_value_needs_its_bias(tmp_path: Path) -> None:
    with pytest.raises(WeightsFormatError, match="ip2_val_b is missing"):
        load_network(mutated_file(tmp_path, lambda m: m.weights.ClearField("ip2_val_b"), wdl=False))


def test_gating_only_with_both_gates(tmp_path: Path) -> None:
    both = load_network(mutated_file(tmp_path, lambda m: None))
    assert both.embedding.mult_gate is not None and both.embedding.mult_gate.shape == (64, 64)
    one = load_network(
        mutated_file(tmp_path, lambda m: m.weights.ClearField("ip_add_gate"), name="one.pb.gz")
    )
    assert one.embedding.mult_gate is None and one.embedding.add_gate is None


# --------------------------------------------------------------------------- normalisation (§3)


def test_rule4_old_schema_attention_body_gets_legacy_activations(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        nf = m.format.network_format
        nf.network = NetworkKind.SE_WITH_HEADFORMAT
        nf.ffn_activation = Activation.MISH
        nf.smolgen_activation = Activation.RELU
        nf.ClearField("input_embedding")

    proto_net = load_proto(mutated_file(tmp_path, mutate))
    assert proto_net.format.network_format.network == NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT
    net = load_network(mutated_file(tmp_path, mutate, name="b.pb.gz"))
    assert net.format.network == NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT
    assert (net.ffn_act, net.smolgen_act) == (Activation.RELU_2, Activation.SWISH)
    assert net.format.input_embedding == InputEmbedding.PE_MAP


def test_rule4_without_smolgen_keeps_activations(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.format.network_format.network = NetworkKind.SE_WITH_HEADFORMAT
        m.format.network_format.ffn_activation = Activation.SELU

    net = load_network(mutated_file(tmp_path, mutate, smolgen=False))
    assert net.ffn_act == Activation.SELU


def test_rule5_legacy_multihead(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.format.network_format.network = NetworkKind.AB_LEGACY_WITH_MULTIHEADFORMAT

    net = load_network(mutated_file(tmp_path, mutate, multihead=True))
    assert net.format.network == NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT


def test_rule6_format6_with_heads_becomes_multihead_pe_dense(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.format.network_format.network = NetworkKind.ATTENTIONBODY_WITH_HEADFORMAT
        m.format.network_format.input_embedding = InputEmbedding.PE_MAP  # overridden by rule 6

    net = load_network(mutated_file(tmp_path, mutate, multihead=True, embedding="pe_dense"))
    assert net.format.network == NetworkKind.ATTENTIONBODY_WITH_MULTIHEADFORMAT
    assert net.embedding.kind == InputEmbedding.PE_DENSE and net.encoder_eps == 1e-3


def test_rule6_format6_default_embedding_is_pe_map(tmp_path: Path) -> None:
    net = load_network(
        mutated_file(tmp_path, lambda m: m.format.network_format.ClearField("input_embedding"))
    )
    assert net.format.input_embedding == InputEmbedding.PE_MAP
    assert net.embedding.kind == InputEmbedding.PE_MAP and net.encoder_eps == 1e-6


def test_format7_without_embedding_runs_as_pe_map(tmp_path: Path) -> None:
    net = load_network(
        mutated_file(
            tmp_path, lambda m: m.format.network_format.ClearField("input_embedding"), multihead=True
        )
    )
    assert net.format.input_embedding == InputEmbedding.NONE
    assert net.embedding.kind == InputEmbedding.PE_MAP
    assert net.encoder_eps == 1e-6 and net.embedding.dense.n_in == 176


def test_resolved_values(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.format.network_format.ffn_activation = Activation.DEFAULT
        m.format.network_format.smolgen_activation = Activation.DEFAULT
        m.format.network_format.default_activation = 0  # RELU

    net = load_network(mutated_file(tmp_path, mutate, layers=3))
    assert net.ffn_act == net.smolgen_act == net.default_act == Activation.RELU
    assert net.alpha == pytest.approx(6**-0.25)
    assert all(
        e.ln1.eps == 1e-6 and e.smolgen is not None and e.smolgen.ln1.eps == 1e-3 for e in net.encoders
    )


# --------------------------------------------------------------------------- heads (§5.3)


@pytest.fixture()
def multihead(tmp_path: Path) -> Path:
    path = tmp_path / "mh.pb.gz"
    save_network(small_net(seed=9, multihead=True), path, encoding="float32")
    return path


def test_head_selection(multihead: Path) -> None:
    vanilla = load_network(multihead)
    assert vanilla.available_policy_heads == ("vanilla", "optimistic")
    assert vanilla.available_value_heads == ("winner", "q")
    other = load_network(multihead, policy_head="optimistic", value_head="q")
    assert not np.array_equal(vanilla.policy.wq.w, other.policy.wq.w)
    assert not np.array_equal(vanilla.value.fc1.w, other.value.fc1.w)
    assert np.array_equal(vanilla.policy.embedding.w, other.policy.embedding.w)  # shared ip_pol


def test_unknown_head(multihead: Path, tmp_path: Path) -> None:
    with pytest.raises(
        BackendOptionError, match="The policy head you specified 'soft' does not exist in this net"
    ):
        load_network(multihead, policy_head="soft")
    with pytest.raises(BackendOptionError, match="The value head you specified 'st' does not exist"):
        load_network(multihead, value_head="st")
    single = tmp_path / "single.pb.gz"
    save_network(small_net(), single)
    with pytest.raises(BackendOptionError, match="'optimistic' does not exist"):
        load_network(single, policy_head="optimistic")


def test_empty_selected_head_refused_unselected_ignored(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        m.weights.policy_heads.optimistic_st.ClearField("ip2_pol_b")

    path = mutated_file(tmp_path, mutate, multihead=True)
    net = load_network(path)  # vanilla is fine; the broken optimistic head is never looked at
    assert "optimistic" not in net.extra["policy_heads"]
    with pytest.raises(WeightsFormatError, match="the policy head selected 'optimistic' is empty"):
        load_network(path, policy_head="optimistic")


def test_head_own_embedding_overrides_shared(tmp_path: Path) -> None:
    def mutate(m: Any) -> None:
        ph = m.weights.policy_heads
        own = ph.optimistic_st
        own.ip_pol_w.CopyFrom(ph.ip_pol_w)
        own.ip_pol_b.CopyFrom(ph.ip_pol_b)
        own.ip_pol_b.min_val = 5.0
        own.ip_pol_b.max_val = 6.0

    path = mutated_file(tmp_path, mutate, multihead=True)
    shared = load_network(path).policy.embedding.b
    own = load_network(path, policy_head="optimistic").policy.embedding.b
    assert shared is not None and own is not None
    assert shared.max() < 1.0 and own.min() >= 5.0


def test_value_heads_container_without_winner_is_empty(tmp_path: Path) -> None:
    path = mutated_file(tmp_path, lambda m: m.weights.value_heads.ClearField("winner"), multihead=True)
    with pytest.raises(WeightsFormatError, match="value head selected 'winner' is empty"):
        load_network(path)
    assert load_network(path, value_head="q").value_head_name == "q"


# --------------------------------------------------------------------------- 768-wide shapes


@pytest.mark.parametrize("preset, heads", [("t82", 24), ("t82-h12", 12), ("t82-h8", 8), ("t82-h6", 6)])
def test_t82_head_configs_load(tmp_path: Path, preset: str, heads: int) -> None:
    path = tmp_path / f"{preset}.pb"
    save_network(random_network(preset, seed=1, layers=1), path, gzip=False)
    net = load_network(path)
    assert (net.embedding_size, net.heads, net.depth, net.num_layers) == (768, heads, 768 // heads, 1)
    assert net.smolgen_w is not None and net.smolgen_w.shape == (4096, 256)
    sg = net.encoders[0].smolgen
    assert sg is not None and sg.dense2.w.shape == (heads * 256, 256) and sg.compress.shape == (32, 768)
    assert net.policy.wq.w.shape == (768, 768) and net.value.fc1.w.shape == (128, 64 * 32)


@pytest.mark.slow
def test_full_t82_loads(tmp_path: Path) -> None:
    path = tmp_path / "t82.pb.gz"
    save_network(random_network("t82", seed=1), path)
    net = load_network(path)
    assert net.num_layers == 15 and net.heads == 24 and net.ffn_size == 1024
    assert 94_000_000 < net.parameter_count() < 95_000_000
    assert net.flops_per_position() == pytest.approx(8.86e9, rel=0.01)


def test_write_proto_helper_roundtrip(tmp_path: Path) -> None:
    # guards the helper the other tests rely on: an unmodified net loads and equals the generated one
    msg = network_to_proto(small_net(seed=6), "float32")
    net = load_network(write_proto(tmp_path / "x.pb.gz", msg))
    assert np.array_equal(net.encoders[0].ffn1.w, small_net(seed=6).encoders[0].ffn1.w)


def test_head_embedding_weight_and_bias_are_chosen_separately(tmp_path: Path) -> None:
    """lc0 picks the shared/own ``ip_pol_w`` and ``ip_pol_b`` independently (MultiHeadWeights)."""

    def mutate(m: Any) -> None:
        ph = m.weights.policy_heads
        ph.optimistic_st.ip_pol_b.CopyFrom(ph.ip_pol_b)  # own bias only
        ph.optimistic_st.ip_pol_b.min_val, ph.optimistic_st.ip_pol_b.max_val = 7.0, 8.0
        m.weights.ip_pol_w.CopyFrom(ph.ip_pol_w)  # shared weight moved to the top level
        ph.ClearField("ip_pol_w")

    path = mutated_file(tmp_path, mutate, multihead=True)
    vanilla = load_network(path)
    optimistic = load_network(path, policy_head="optimistic")
    assert np.array_equal(vanilla.policy.embedding.w, optimistic.policy.embedding.w)
    assert optimistic.policy.embedding.b is not None and optimistic.policy.embedding.b.min() >= 7.0
    assert vanilla.policy.embedding.b is not None and vanilla.policy.embedding.b.max() < 1.0


@pytest.mark.parametrize("preset", ["tiny", "res-tiny"])
def test_one_interface_for_both_bodies(tmp_path: Path, preset: str) -> None:
    """A file's body is read by its reader (``body_of``), written by its writer, and the loaded
    network answers the shared interface (``BaseNetwork``) whatever the body."""
    from lc0py.weights.loader import body_of
    from lc0py.weights.network import BaseNetwork

    net = random_network(preset, seed=7)
    path = tmp_path / "net.pb.gz"
    save_network(net, path)
    loaded = load_network(path)
    assert body_of(load_proto(path)) == net.body == loaded.body
    assert {"tiny": "attention", "res-tiny": "residual"}[preset] == loaded.body
    assert isinstance(loaded, BaseNetwork) and type(loaded) is type(net)
    assert loaded.input_format == net.format.input and loaded.has_moves_left
    assert loaded.flops_per_position() == net.flops_per_position() > 0
    layers, heads = loaded.attention_layers()
    assert (len(layers), heads) == ((2, 4) if loaded.body == "attention" else (0, 0))
