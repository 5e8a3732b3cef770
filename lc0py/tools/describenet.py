"""``lc0py describenet``: describe a network file in lc0's ``describenet`` format.

Sections (``General``, ``Format``, ``Training Parameters``, ``Weights``, ``ONNX interface``) with a
``~`` underline and ``key: value`` lines whose keys are right-aligned in 28 characters, as lc0
prints them (docs/weights-format.md §9), from the normalised file (lc0 normalises old formats first).
Differences, on purpose: sizes are decoded element counts (lc0 divides byte counts by 2, wrong for
FLOAT32 layers), multi-head nets show the ``vanilla``/``winner`` heads' sizes (lc0 reads the empty
top-level fields), and two extra lines: ``Parameters`` and ``FLOPs per position``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from lc0py.errors import UnsupportedNetError, UsageError
from lc0py.tools.arguments import add_json_arguments, add_weights_argument, json_target
from lc0py.tools.weights_choice import resolve_weights
from lc0py.weights import proto
from lc0py.weights.decode import layer_element_count
from lc0py.weights.loader import load_proto, network_from_proto


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("net", nargs="?", default=None, metavar="NET.pb.gz",
                        help="the network file (the same as --weights NET.pb.gz)")
    add_weights_argument(parser)
    add_json_arguments(parser, "the sections as an object of objects ({section: {key: value}})")


def _key(label: str) -> str:
    """lc0's ``Justify``: right-align in 28 characters, then ``": "``."""
    return label.rjust(28) + ": "


def _section(title: str) -> list[str]:
    return ["", title, "~" * len(title)]


def _enum_name(message: Any, field: str) -> str:
    desc = message.DESCRIPTOR.fields_by_name[field].enum_type
    value = int(getattr(message, field))
    return desc.values_by_number[value].name if value in desc.values_by_number else str(value)


def _count(layer: Any) -> int:
    return layer_element_count(layer)


def _all_layers(message: Any) -> Iterator[Any]:
    """Every ``Weights.Layer`` in ``message`` (recursively)."""
    for fd, value in message.ListFields():
        if fd.message_type is None:
            continue
        items = value if _is_repeated(fd) else [value]
        for item in items:
            if fd.message_type.full_name == "pblczero.Weights.Layer":
                yield item
            else:
                yield from _all_layers(item)


def _is_repeated(fd: Any) -> bool:
    """``FieldDescriptor.is_repeated`` (protobuf >= 5.28; ``label`` was removed later)."""
    flag = getattr(fd, "is_repeated", None)
    return bool(flag) if flag is not None else fd.label == fd.LABEL_REPEATED


def describe(net: Any, source: str) -> list[str]:
    """The description lines of a loaded (normalised) ``pblczero.Net``."""
    lines: list[str] = []
    v = net.min_version
    lines += _section("General")
    lines.append(_key("Minimal Lc0 version") + f"v{v.major}.{v.minor}.{v.patch}")

    fmt, nf = net.format, net.format.network_format
    lines += _section("Format")
    if fmt.HasField("weights_encoding"):
        lines.append(_key("Weights encoding") + _enum_name(fmt, "weights_encoding"))
    for label, field in (("Input", "input"), ("Network", "network"), ("Policy", "policy"), ("Value", "value"),
                         ("MLH", "moves_left"), ("Default activation", "default_activation"),
                         ("Smolgen activation", "smolgen_activation"), ("FFN activation", "ffn_activation"),
                         ("Input embedding", "input_embedding")):
        if nf.HasField(field):
            lines.append(_key(label) + _enum_name(nf, field))

    if net.HasField("training_params"):
        tp = net.training_params
        lines += _section("Training Parameters")
        for label, field in (("Training steps", "training_steps"), ("Learning rate", "learning_rate"),
                             ("MSE loss", "mse_loss"), ("Policy loss", "policy_loss"),
                             ("Accuracy", "accuracy"), ("Lc0 Params", "lc0_params")):
            if tp.HasField(field):
                value = getattr(tp, field)
                lines.append(_key(label) + (f"{value:g}" if isinstance(value, float) else str(value)))

    if net.HasField("weights"):
        lines += _section("Weights")
        lines += _weights_lines(net, source)

    if net.HasField("onnx_model"):
        om = net.onnx_model
        lines += _section("ONNX interface")
        if om.HasField("data_type"):
            lines.append(_key("Data type") + _enum_name(om, "data_type"))
        for label, field in (("Input planes", "input_planes"), ("Output value", "output_value"),
                             ("Output WDL", "output_wdl"), ("Output Policy", "output_policy"),
                             ("Output MLH", "output_mlh")):
            if om.HasField(field):
                lines.append(_key(label) + getattr(om, field))
    return lines


def _weights_lines(net: Any, source: str) -> list[str]:
    w, nf = net.weights, net.format.network_format
    lines: list[str] = []
    if len(w.encoder) > 0:
        lines.append(_key("Encoders") + str(len(w.encoder)))
        lines.append(_key("Encoder heads") + str(w.headcount))
        lines.append(_key("Embedding size") + str(_count(w.ip_emb_b)))
        lines.append(_key("Dmodel") + str(_count(w.encoder[0].mha.q_b)))
        lines.append(_key("Encoder DFF") + str(_count(w.encoder[0].ffn.dense1_b)))
    else:
        lines.append(_key("Blocks") + str(len(w.residual)))
        se = sum(1 for r in w.residual if r.HasField("se"))
        if se:
            lines.append(_key("SE blocks") + str(se))
        lines.append(_key("Filters") + str(_count(w.input.weights) // 112 // 9))

    policy = w.policy_heads.vanilla if w.HasField("policy_heads") else w
    act_name = proto.NetworkFormat.ActivationFunction.Name  # type: ignore[attr-defined]
    if nf.policy == proto.NetworkFormat.POLICY_ATTENTION:
        pol_act, ffn_act = 0, int(nf.ffn_activation)
        if len(w.encoder) == 0:  # conv bodies: hard-coded SELU
            pol_act = ffn_act = 6
        lines.append(_key("Policy") + "Attention")
        lines.append(_key("Policy activation") + act_name(pol_act))
        if len(policy.pol_encoder) > 0:
            lines.append(_key("Policy encoders") + str(len(policy.pol_encoder)))
            lines.append(_key("Policy encoder heads") + str(policy.pol_headcount))
            lines.append(_key("Policy encoder Dmodel") + str(_count(policy.pol_encoder[0].mha.q_b)))
            lines.append(_key("Policy encoder DFF") + str(_count(policy.pol_encoder[0].ffn.dense1_b)))
            lines.append(_key("Policy FFN activation") + act_name(ffn_act))
        lines.append(_key("Policy Dmodel") + str(_count(policy.ip2_pol_b)))
    else:
        lines.append(_key("Policy") + ("Convolution" if policy.HasField("policy1") else "Dense"))
        lines.append(_key("Policy activation") + act_name(0))
        if not policy.HasField("policy1"):
            channels = _count(policy.policy.biases) or _count(policy.policy.bn_means)
            lines.append(_key("Policy channels") + str(channels))

    value = w.value_heads.winner if w.HasField("value_heads") else w
    lines.append(_key("Value") + ("WDL" if _count(value.ip2_val_w) % 3 == 0 else "Classical"))
    lines.append(_key("MLH") + ("Present" if w.HasField("ip2_mov_w") else "Absent"))

    try:
        network = network_from_proto(net, source=source)
    except UnsupportedNetError:
        network = None  # a kind lc0py does not run: count the stored arrays instead
    if network is not None:
        lines.append(_key("Parameters") + _human(network.parameter_count(), ""))
        lines.append(_key("FLOPs per position") + _human(network.flops_per_position(), "FLOP"))
    else:
        lines.append(_key("Parameters") + _human(sum(_count(layer) for layer in _all_layers(w)), ""))
    return lines


def _human(n: int, unit: str) -> str:
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= scale:
            return f"{n} ({n / scale:.2f} {prefix}{unit})"
    return str(n)


def as_sections(lines: list[str]) -> dict[str, dict[str, str]]:
    """``describe``'s lines as ``{section: {key: value}}`` (the ``--json`` document)."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and lines[i + 1] and set(lines[i + 1]) == {"~"}:
            current = sections.setdefault(line, {})
        elif current is not None and ": " in line and not set(line) <= {"~"}:
            key, _, value = line.partition(": ")
            current[key.strip()] = value
    return sections


def run(args: argparse.Namespace) -> int:
    if args.net is not None and args.weights is not None and args.net != args.weights:
        raise UsageError(f"describenet: two networks given ({args.net} and --weights {args.weights}): "
                         "give one")
    target = json_target(args, "describenet")
    weights = resolve_weights(args.net or args.weights, "describenet", speed_tool=False)
    if weights is None:  # pragma: no cover - describenet names no backend: a network is always needed
        raise UsageError("describenet: no network")
    net = load_proto(str(weights))
    lines = describe(net, str(weights))
    if not target.stdout:
        print("\n".join(lines), file=sys.stdout)
    if target.stdout or target.file is not None:
        target.write(json.dumps({"file": str(weights), **as_sections(lines)}, indent=1))
    return 0
