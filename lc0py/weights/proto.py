"""lc0's ``pblczero.Net`` protobuf schema, built at run time from one Python table.

Why a table and not ``net_pb2.py``: lc0py must install without ``protoc``, and generated ``_pb2``
modules are tied to the protobuf runtime that generated them (protobuf 4, 5, 6 and 7 each refuse
or warn about code from other majors). Describing the messages here and building the descriptors
with ``descriptor_pb2.FileDescriptorProto`` + ``message_factory.GetMessageClass`` works on every
protobuf >= 4.21 and keeps the schema readable next to ``docs/weights-format.md`` §1-§5.

Field numbers, types and enum values are lc0's (``proto/net.proto``, proto2). Repeated scalars
(``Layer.dims``) are declared unpacked as in lc0; protobuf parsers accept packed and unpacked
encodings of a repeated scalar either way. ``PolicyHeadMap``/``ValueHeadMap`` declare ``key`` and
``value`` as ``required`` in lc0; they are ``optional`` here because lc0 ignores those maps and
its own parser does not enforce ``required``, so a file lacking them must still load.

Public names: ``Net`` (the top-level message class), ``Weights``, ``Layer``, ``NetworkFormat``,
``Format``, ``EngineVersion``, ``TrainingParams``, ``OnnxModel`` and ``parse_net``.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

PACKAGE = "pblczero"

_T = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "float": _T.TYPE_FLOAT,
    "bytes": _T.TYPE_BYTES,
    "string": _T.TYPE_STRING,
    "uint32": _T.TYPE_UINT32,
    "int32": _T.TYPE_INT32,
    "fixed32": _T.TYPE_FIXED32,
}

# Enums: full name (relative to the package) -> [(value name, number)].
ENUMS: dict[str, list[tuple[str, int]]] = {
    "Weights.Layer.Encoding": [
        ("UNKNOWN_ENCODING", 0), ("LINEAR16", 1), ("FLOAT16", 2), ("BFLOAT16", 3), ("FLOAT32", 4),
    ],
    "NetworkFormat.InputFormat": [
        ("INPUT_UNKNOWN", 0), ("INPUT_CLASSICAL_112_PLANE", 1), ("INPUT_112_WITH_CASTLING_PLANE", 2),
        ("INPUT_112_WITH_CANONICALIZATION", 3), ("INPUT_112_WITH_CANONICALIZATION_HECTOPLIES", 4),
        ("INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON", 132),
        ("INPUT_112_WITH_CANONICALIZATION_V2", 5), ("INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON", 133),
    ],
    "NetworkFormat.OutputFormat": [("OUTPUT_UNKNOWN", 0), ("OUTPUT_CLASSICAL", 1), ("OUTPUT_WDL", 2)],
    "NetworkFormat.NetworkStructure": [
        ("NETWORK_UNKNOWN", 0), ("NETWORK_CLASSICAL", 1), ("NETWORK_SE", 2),
        ("NETWORK_CLASSICAL_WITH_HEADFORMAT", 3), ("NETWORK_SE_WITH_HEADFORMAT", 4), ("NETWORK_ONNX", 5),
        ("NETWORK_ATTENTIONBODY_WITH_HEADFORMAT", 6), ("NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT", 7),
        ("NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT", 134),
    ],
    "NetworkFormat.PolicyFormat": [
        ("POLICY_UNKNOWN", 0), ("POLICY_CLASSICAL", 1), ("POLICY_CONVOLUTION", 2), ("POLICY_ATTENTION", 3),
    ],
    "NetworkFormat.ValueFormat": [
        ("VALUE_UNKNOWN", 0), ("VALUE_CLASSICAL", 1), ("VALUE_WDL", 2), ("VALUE_PARAM", 3),
    ],
    "NetworkFormat.MovesLeftFormat": [("MOVES_LEFT_NONE", 0), ("MOVES_LEFT_V1", 1)],
    "NetworkFormat.ActivationFunction": [
        ("ACTIVATION_DEFAULT", 0), ("ACTIVATION_MISH", 1), ("ACTIVATION_RELU", 2), ("ACTIVATION_NONE", 3),
        ("ACTIVATION_TANH", 4), ("ACTIVATION_SIGMOID", 5), ("ACTIVATION_SELU", 6), ("ACTIVATION_SWISH", 7),
        ("ACTIVATION_RELU_2", 8), ("ACTIVATION_SOFTMAX", 9),
    ],
    "NetworkFormat.DefaultActivation": [("DEFAULT_ACTIVATION_RELU", 0), ("DEFAULT_ACTIVATION_MISH", 1)],
    "NetworkFormat.InputEmbeddingFormat": [
        ("INPUT_EMBEDDING_NONE", 0), ("INPUT_EMBEDDING_PE_MAP", 1), ("INPUT_EMBEDDING_PE_DENSE", 2),
    ],
    "Format.Encoding": [("UNKNOWN", 0), ("LINEAR16", 1)],
    "OnnxModel.DataType": [("UNKNOWN_DATATYPE", 0), ("FLOAT", 1), ("FLOAT16", 10), ("BFLOAT16", 16)],
}

# Messages: full name -> [(field name, number, type, repeated?)]. ``type`` is a scalar name from
# _SCALARS, ``enum:<Name>`` or a message name (both relative to the package). Nested messages are
# written with dots ("Weights.Layer") and are emitted nested, as in lc0's .proto.
_L = "Weights.Layer"
_CB = "Weights.ConvBlock"
MESSAGES: dict[str, list[tuple[str, int, str, bool]]] = {
    "EngineVersion": [
        ("major", 1, "uint32", False), ("minor", 2, "uint32", False), ("patch", 3, "uint32", False),
    ],
    "Weights": [
        ("input", 1, _CB, False),
        ("residual", 2, "Weights.Residual", True),
        ("ip_emb_preproc_w", 37, _L, False),
        ("ip_emb_preproc_b", 38, _L, False),
        ("ip_emb_w", 25, _L, False),
        ("ip_emb_b", 26, _L, False),
        ("ip_emb_ln_gammas", 39, _L, False),
        ("ip_emb_ln_betas", 40, _L, False),
        ("ip_mult_gate", 33, _L, False),
        ("ip_add_gate", 34, _L, False),
        ("ip_emb_ffn", 41, "Weights.FFN", False),
        ("ip_emb_ffn_ln_gammas", 42, _L, False),
        ("ip_emb_ffn_ln_betas", 43, _L, False),
        ("encoder", 27, "Weights.EncoderLayer", True),
        ("headcount", 28, "uint32", False),
        ("pol_encoder", 21, "Weights.EncoderLayer", True),
        ("pol_headcount", 24, "uint32", False),
        ("policy1", 11, _CB, False),
        ("policy", 3, _CB, False),
        ("ip_pol_w", 4, _L, False),
        ("ip_pol_b", 5, _L, False),
        ("ip2_pol_w", 17, _L, False),
        ("ip2_pol_b", 18, _L, False),
        ("ip3_pol_w", 19, _L, False),
        ("ip3_pol_b", 20, _L, False),
        ("ip4_pol_w", 22, _L, False),
        ("value", 6, _CB, False),
        ("ip_val_w", 29, _L, False),
        ("ip_val_b", 30, _L, False),
        ("ip1_val_w", 7, _L, False),
        ("ip1_val_b", 8, _L, False),
        ("ip2_val_w", 9, _L, False),
        ("ip2_val_b", 10, _L, False),
        ("value_heads", 44, "Weights.ValueHeads", False),
        ("policy_heads", 45, "Weights.PolicyHeads", False),
        ("moves_left", 12, _CB, False),
        ("ip_mov_w", 31, _L, False),
        ("ip_mov_b", 32, _L, False),
        ("ip1_mov_w", 13, _L, False),
        ("ip1_mov_b", 14, _L, False),
        ("ip2_mov_w", 15, _L, False),
        ("ip2_mov_b", 16, _L, False),
        ("smolgen_w", 35, _L, False),
        ("smolgen_b", 36, _L, False),
    ],
    "Weights.Layer": [
        ("min_val", 1, "float", False),
        ("max_val", 2, "float", False),
        ("params", 3, "bytes", False),
        ("encoding", 4, "enum:Weights.Layer.Encoding", False),
        ("dims", 5, "uint32", True),
    ],
    "Weights.ConvBlock": [
        ("weights", 1, _L, False), ("biases", 2, _L, False), ("bn_means", 3, _L, False),
        ("bn_stddivs", 4, _L, False), ("bn_gammas", 5, _L, False), ("bn_betas", 6, _L, False),
    ],
    "Weights.SEunit": [
        ("w1", 1, _L, False), ("b1", 2, _L, False), ("w2", 3, _L, False), ("b2", 4, _L, False),
    ],
    "Weights.Residual": [
        ("conv1", 1, _CB, False), ("conv2", 2, _CB, False), ("se", 3, "Weights.SEunit", False),
    ],
    "Weights.Smolgen": [
        ("compress", 1, _L, False), ("dense1_w", 2, _L, False), ("dense1_b", 3, _L, False),
        ("ln1_gammas", 4, _L, False), ("ln1_betas", 5, _L, False), ("dense2_w", 6, _L, False),
        ("dense2_b", 7, _L, False), ("ln2_gammas", 8, _L, False), ("ln2_betas", 9, _L, False),
    ],
    "Weights.MHA": [
        ("q_w", 1, _L, False), ("q_b", 2, _L, False), ("k_w", 3, _L, False), ("k_b", 4, _L, False),
        ("v_w", 5, _L, False), ("v_b", 6, _L, False), ("dense_w", 7, _L, False), ("dense_b", 8, _L, False),
        ("smolgen", 9, "Weights.Smolgen", False),
        ("rpe_q", 10, _L, False), ("rpe_k", 11, _L, False), ("rpe_v", 12, _L, False),
    ],
    "Weights.FFN": [
        ("dense1_w", 1, _L, False), ("dense1_b", 2, _L, False), ("dense2_w", 3, _L, False),
        ("dense2_b", 4, _L, False),
    ],
    "Weights.EncoderLayer": [
        ("mha", 1, "Weights.MHA", False), ("ln1_gammas", 2, _L, False), ("ln1_betas", 3, _L, False),
        ("ffn", 4, "Weights.FFN", False), ("ln2_gammas", 5, _L, False), ("ln2_betas", 6, _L, False),
    ],
    "Weights.PolicyHead": [
        ("ip_pol_w", 1, _L, False), ("ip_pol_b", 2, _L, False), ("ip2_pol_w", 3, _L, False),
        ("ip2_pol_b", 4, _L, False), ("ip3_pol_w", 5, _L, False), ("ip3_pol_b", 6, _L, False),
        ("ip4_pol_w", 7, _L, False), ("pol_encoder", 8, "Weights.EncoderLayer", True),
        ("pol_headcount", 9, "uint32", False), ("policy1", 10, _CB, False), ("policy", 11, _CB, False),
    ],
    "Weights.ValueHead": [
        ("ip_val_w", 1, _L, False), ("ip_val_b", 2, _L, False), ("ip1_val_w", 3, _L, False),
        ("ip1_val_b", 4, _L, False), ("ip2_val_w", 5, _L, False), ("ip2_val_b", 6, _L, False),
        ("ip_val_err_w", 7, _L, False), ("ip_val_err_b", 8, _L, False), ("ip_val_cat_w", 9, _L, False),
        ("ip_val_cat_b", 10, _L, False), ("value", 11, _CB, False),
    ],
    "Weights.PolicyHeadMap": [("key", 1, "string", False), ("value", 2, "Weights.PolicyHead", False)],
    "Weights.PolicyHeads": [
        ("ip_pol_w", 1, _L, False), ("ip_pol_b", 2, _L, False),
        ("vanilla", 3, "Weights.PolicyHead", False), ("optimistic_st", 4, "Weights.PolicyHead", False),
        ("soft", 5, "Weights.PolicyHead", False), ("opponent", 6, "Weights.PolicyHead", False),
        ("policy_head_map", 7, "Weights.PolicyHeadMap", True),
    ],
    "Weights.ValueHeadMap": [("key", 1, "string", False), ("value", 2, "Weights.ValueHead", False)],
    "Weights.ValueHeads": [
        ("winner", 1, "Weights.ValueHead", False), ("q", 2, "Weights.ValueHead", False),
        ("st", 3, "Weights.ValueHead", False), ("value_head_map", 4, "Weights.ValueHeadMap", True),
    ],
    "TrainingParams": [
        ("training_steps", 1, "uint32", False), ("learning_rate", 2, "float", False),
        ("mse_loss", 3, "float", False), ("policy_loss", 4, "float", False),
        ("accuracy", 5, "float", False), ("lc0_params", 6, "string", False),
    ],
    "NetworkFormat": [
        ("input", 1, "enum:NetworkFormat.InputFormat", False),
        ("output", 2, "enum:NetworkFormat.OutputFormat", False),
        ("network", 3, "enum:NetworkFormat.NetworkStructure", False),
        ("policy", 4, "enum:NetworkFormat.PolicyFormat", False),
        ("value", 5, "enum:NetworkFormat.ValueFormat", False),
        ("moves_left", 6, "enum:NetworkFormat.MovesLeftFormat", False),
        ("default_activation", 7, "enum:NetworkFormat.DefaultActivation", False),
        ("smolgen_activation", 8, "enum:NetworkFormat.ActivationFunction", False),
        ("ffn_activation", 9, "enum:NetworkFormat.ActivationFunction", False),
        ("input_embedding", 10, "enum:NetworkFormat.InputEmbeddingFormat", False),
    ],
    "Format": [
        ("weights_encoding", 1, "enum:Format.Encoding", False),
        ("network_format", 2, "NetworkFormat", False),
    ],
    "OnnxModel": [
        ("model", 1, "bytes", False), ("data_type", 2, "enum:OnnxModel.DataType", False),
        ("input_planes", 3, "string", False), ("output_value", 4, "string", False),
        ("output_wdl", 5, "string", False), ("output_policy", 6, "string", False),
        ("output_mlh", 7, "string", False),
    ],
    "BackendCache": [
        ("id", 1, "string", False), ("x", 2, "int32", False), ("y", 3, "int32", False),
        ("z", 4, "int32", False), ("val", 5, "bytes", False),
    ],
    "Net": [
        ("magic", 1, "fixed32", False),
        ("license", 2, "string", False),
        ("min_version", 3, "EngineVersion", False),
        ("format", 4, "Format", False),
        ("training_params", 5, "TrainingParams", False),
        ("weights", 10, "Weights", False),
        ("onnx_model", 11, "OnnxModel", False),
        ("backend_cache", 12, "BackendCache", True),
    ],
}


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """Translate ENUMS and MESSAGES into one FileDescriptorProto (``lc0py/net.proto``)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="lc0py/net.proto", package=PACKAGE, syntax="proto2")
    protos: dict[str, Any] = {}

    def container(full: str) -> Any:
        """The (possibly nested) DescriptorProto that holds ``full``'s children."""
        return protos[full]

    for full in MESSAGES:  # parents are listed before their nested messages
        parent, _, short = full.rpartition(".")
        owner = fdp.message_type if not parent else container(parent).nested_type
        protos[full] = owner.add(name=short)
    for full, values in ENUMS.items():
        parent, _, short = full.rpartition(".")
        enum = (fdp.enum_type if not parent else container(parent).enum_type).add(name=short)
        for name, number in values:
            enum.value.add(name=name, number=number)
    for full, fields in MESSAGES.items():
        msg = protos[full]
        for name, number, ftype, repeated in fields:
            f = msg.field.add(name=name, number=number)
            f.label = _T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL
            if ftype in _SCALARS:
                f.type = _SCALARS[ftype]
            elif ftype.startswith("enum:"):
                f.type = _T.TYPE_ENUM
                f.type_name = f".{PACKAGE}.{ftype[5:]}"
            else:
                f.type = _T.TYPE_MESSAGE
                f.type_name = f".{PACKAGE}.{ftype}"
    return fdp


def _message_classes() -> dict[str, type[Message]]:
    # A private pool: never clashes with another ``pblczero`` registered in the default pool.
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(_file_descriptor().SerializeToString())  # in every protobuf 4-7 runtime
    get_class = getattr(message_factory, "GetMessageClass", None)
    classes: dict[str, type[Message]] = {}
    for full in MESSAGES:
        desc = pool.FindMessageTypeByName(f"{PACKAGE}.{full}")
        if get_class is not None:
            classes[full] = get_class(desc)
        else:  # protobuf < 4.22
            classes[full] = message_factory.MessageFactory(pool).GetPrototype(desc)  # type: ignore[attr-defined]
    return classes


CLASSES = _message_classes()
Net: Any = CLASSES["Net"]
Weights: Any = CLASSES["Weights"]
Layer: Any = CLASSES["Weights.Layer"]
EngineVersion: Any = CLASSES["EngineVersion"]
Format: Any = CLASSES["Format"]
NetworkFormat: Any = CLASSES["NetworkFormat"]
TrainingParams: Any = CLASSES["TrainingParams"]
OnnxModel: Any = CLASSES["OnnxModel"]

#: lc0's ``kWeightMagic``.
WEIGHT_MAGIC = 0x1C0


def unknown_varint(message: Message, number: int) -> int | None:
    """The last value of field ``number`` kept among ``message``'s unknown fields, if any.

    proto2 enums are closed: a value the schema does not list (e.g. a layer encoding from a newer
    lc0) is parsed into the unknown-field set and the field reads as unset. lc0's own parser keeps
    the raw number and then refuses it; this lets the loader do the same.
    """
    try:
        from google.protobuf import unknown_fields

        entries = [(f.field_number, f.wire_type, f.data) for f in unknown_fields.UnknownFieldSet(message)]
    except (ImportError, AttributeError):  # protobuf < 4.24
        entries = [(f.field_number, f.wire_type, f.data) for f in message.UnknownFields()]  # type: ignore[attr-defined]
    found = None
    for field_number, wire_type, data in entries:
        if field_number == number and wire_type == 0:
            found = int(data)
    return found


def parse_net(data: bytes | bytearray) -> Any:
    """Parse serialized ``pblczero.Net`` bytes; raises ``google.protobuf.message.DecodeError``."""
    net = Net()
    net.ParseFromString(data)
    return net


__all__ = [
    "DecodeError", "ENUMS", "MESSAGES", "Net", "Weights", "Layer", "EngineVersion", "Format",
    "NetworkFormat", "TrainingParams", "OnnxModel", "WEIGHT_MAGIC", "parse_net", "unknown_varint",
]
