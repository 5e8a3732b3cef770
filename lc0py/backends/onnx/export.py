"""Export an lc0 network, either body, to an ONNX model (``onnx.helper`` only, no torch).

* input ``/input/planes`` ``[B, 112, 8, 8]``;
* outputs ``/output/policy`` ``[B, 1858]`` (raw logits), ``/output/wdl`` ``[B, 3]`` (softmaxed;
  ``/output/value`` ``[B, 1]`` tanh for classical value heads) and, with a moves-left head,
  ``/output/mlh`` ``[B, 1]``.

``B`` is the dynamic dimension ``batch`` unless ``batch_size`` fixes it. ``fp16=True`` stores
weights and computes in float16 with float16 inputs and outputs, as lc0's converter does for
``f16`` (so lc0's ONNX backends can load the file); LayerNorm statistics are kept in float32
(``stash_type=1``), as lc0's CUDA kernel does.

The graph itself comes from the body's exporter, chosen in one table by ``network.body``:
``export_attention.py`` (attention bodies: the exact rewrites made while exporting, plain or
contrib attention) and ``export_residual.py`` (residual bodies, lc0's ``leela2onnx`` names), both on
the shared building blocks of ``graph_ops.py``.

Attention is either plain ONNX (``MatMul``/``Softmax``; runs on every runtime) or ONNX Runtime's
contrib ``com.microsoft.Attention`` with the smolgen bias as ``attention_bias`` (ONNX Runtime
only). On ONNX Runtime's CPU provider the two are equally fast (paired runs: time ratio
plain/contrib 0.95-1.07, median ~1.01, for tiny and T82 at batch 1/8/32; docs/performance.md),
so the default (``DEFAULT_ATTENTION``) is the portable ``plain``; GPU providers may differ.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from lc0py.backends.onnx.names import INPUT_PLANES, OUTPUT_MLH, OUTPUT_POLICY, OUTPUT_VALUE, OUTPUT_WDL
from lc0py.errors import BackendUnavailable
from lc0py.weights.network import BodyKind, Network
from lc0py.weights.residual import ResidualNetwork

try:  # the graph helpers need onnx; say how to get it instead of a bare ImportError
    import onnx
    from onnx import helper

    from lc0py.backends.onnx.export_attention import AttentionExporter
    from lc0py.backends.onnx.export_residual import ResidualExporter
    from lc0py.backends.onnx.graph_ops import GraphOps
except ModuleNotFoundError as _exc:  # pragma: no cover - exercised only without onnx
    if _exc.name != "onnx" and not (_exc.name or "").startswith("onnx."):
        raise
    raise BackendUnavailable("the onnx package is not installed (pip install 'lc0py[onnx]')") from None

AttentionKind = Literal["plain", "contrib"]
ATTENTION_KINDS: tuple[str, ...] = ("plain", "contrib")
DEFAULT_ATTENTION: AttentionKind = "plain"
DEFAULT_OPSET = 17
MIN_OPSET = 17  # LayerNormalization

#: Each body's exporter: the one place the ONNX export dispatches on the body.
_EXPORTERS: dict[BodyKind, type[GraphOps[Any]]] = {
    "attention": AttentionExporter,
    "residual": ResidualExporter,
}


def network_to_onnx(
    network: Network | ResidualNetwork,
    *,
    fp16: bool = False,
    batch_size: int | None = None,
    opset: int = DEFAULT_OPSET,
    attention: AttentionKind | None = None,
    wdl_softmax: bool = True,
) -> onnx.ModelProto:
    """Build the ONNX model of ``network`` (see the module docstring for names and dtypes).

    ``batch_size=None`` gives a dynamic batch dimension; ``attention`` is ``"plain"`` or
    ``"contrib"`` (``None``: ``DEFAULT_ATTENTION``). ``wdl_softmax=False`` leaves ``/output/wdl``
    as logits, for a caller that takes the softmax in float32 itself (lc0's ONNX backends do the
    same with their in-memory models). Raises ``UnsupportedNetError`` for a net the
    graph cannot express and ``ValueError`` for bad arguments.
    """
    attention = attention or DEFAULT_ATTENTION
    if attention not in ATTENTION_KINDS:
        raise ValueError(f"attention={attention!r} is not one of {', '.join(ATTENTION_KINDS)}")
    if opset < MIN_OPSET:
        raise ValueError(f"opset {opset} is too old: LayerNormalization needs opset >= {MIN_OPSET}")
    if opset > onnx.defs.onnx_opset_version():
        raise ValueError(
            f"opset {opset} is newer than this onnx package knows ({onnx.defs.onnx_opset_version()})"
        )
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be positive (or None for dynamic)")
    float_type = np.float16 if fp16 else np.float32
    body = _EXPORTERS[network.body]
    body.check_supported(network)
    exporter = body(network, float_type, opset, attention, wdl_softmax)
    policy, value, mlh = exporter.build()

    g = exporter.g
    batch: int | str = "batch" if batch_size is None else batch_size
    inputs = [helper.make_tensor_value_info(INPUT_PLANES, g.onnx_float, [batch, 112, 8, 8])]
    outputs = [helper.make_tensor_value_info(OUTPUT_POLICY, g.onnx_float, [batch, 1858])]
    outputs.append(helper.make_tensor_value_info(value, g.onnx_float, [batch, 3 if network.value.wdl else 1]))
    if mlh is not None:
        outputs.append(helper.make_tensor_value_info(mlh, g.onnx_float, [batch, 1]))
    model = g.model(
        inputs,
        outputs,
        opset=opset,
        graph_name=exporter.graph_name,
        producer="lc0py",
        doc=exporter.describe(fp16, attention),
    )
    props = {"lc0py.attention": attention, "lc0py.fp16": str(fp16).lower()}
    props.update(exporter.model_props())
    props.update(format_metadata(network))
    helper.set_model_props(model, props)
    return model


def format_metadata(network: Network | ResidualNetwork) -> dict[str, str]:
    """What a consumer of the ONNX model must know to feed it and read it, as ``metadata_props``
    (lczerolens, for one, must be told the input encoding): the net's formats by lc0's own enum
    names (``pblczero.NetworkFormat``), the body and the exporter's version (docs/onnx-export.md).

    ``lc0.input_format`` (e.g. ``INPUT_112_WITH_CANONICALIZATION_HECTOPLIES``: how the 112 planes
    are encoded), ``lc0.policy_format`` (the 1858 outputs are lc0's move index either way),
    ``lc0.value_format`` (``VALUE_WDL``: output ``/output/wdl``, else ``/output/value``),
    ``lc0.moves_left`` (``MOVES_LEFT_V1``: output ``/output/mlh``), ``lc0py.body``
    (``attention 15x768, 24 heads`` / ``residual 20x256``), ``lc0py.version``.
    """
    import lc0py
    from lc0py.weights.proto import ENUMS

    def name(enum: str, value: int) -> str:
        return next((n for n, v in ENUMS[f"NetworkFormat.{enum}"] if v == int(value)), str(int(value)))

    fmt = network.format
    body = network.summary()
    return {
        "lc0.input_format": name("InputFormat", fmt.input),
        "lc0.policy_format": name("PolicyFormat", fmt.policy),
        "lc0.value_format": name("ValueFormat", fmt.value),
        "lc0.moves_left": name("MovesLeftFormat", fmt.moves_left if network.has_moves_left else 0),
        "lc0py.body": body,
        "lc0py.version": lc0py.__version__,
    }


def body_label(network: Network | ResidualNetwork, attention: str) -> str:
    """What ``export-onnx`` says about the body it exported (``attention plain``, ``residual body``)."""
    return _EXPORTERS[network.body].label(attention)


def output_names(model: onnx.ModelProto) -> list[str]:
    """Names of the model's graph outputs (policy first)."""
    return [o.name for o in model.graph.output]


__all__ = [
    "ATTENTION_KINDS",
    "DEFAULT_ATTENTION",
    "DEFAULT_OPSET",
    "INPUT_PLANES",
    "OUTPUT_MLH",
    "OUTPUT_POLICY",
    "OUTPUT_VALUE",
    "OUTPUT_WDL",
    "network_to_onnx",
    "output_names",
]
