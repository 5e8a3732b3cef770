"""A small ONNX graph builder: named nodes and initializers, one dtype for the float data.

Why not build ``NodeProto``s inline: the exporter emits a few hundred nodes per network, and every
float constant must be cast to the model's float type (float32 or float16) in exactly one place.
Names follow lc0's converter style (``/encoder0/mha/Q/w``), so a model reads like lc0's own
export in Netron, and every node's output tensor carries the node's name.

Only ``onnx`` and ``numpy`` are used; ``onnx`` is imported by whoever imports this module, never
by ``import lc0py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

MS_DOMAIN = "com.microsoft"


class GraphBuilder:
    """Collects nodes and initializers; ``float_type`` is ``np.float32`` or ``np.float16``."""

    def __init__(self, float_type: type = np.float32) -> None:
        self.float_type = np.dtype(float_type)
        self.onnx_float = TensorProto.FLOAT16 if self.float_type == np.float16 else TensorProto.FLOAT
        # Initializers go straight into the model being built: a T82-sized net holds ~380 MB of
        # weights, and helper.make_graph/make_model would copy them twice more.
        self.proto = onnx.ModelProto()
        self.nodes: list[onnx.NodeProto] = []
        self.domains: set[str] = set()
        self._names: set[str] = set()

    # --- constants ---
    def _unique(self, name: str) -> str:
        if name in self._names:
            raise ValueError(f"duplicate ONNX tensor name {name!r}")
        self._names.add(name)
        return name

    def _add(self, name: str, data: np.ndarray, data_type: int) -> str:
        tensor = self.proto.graph.initializer.add()
        tensor.name = self._unique(name)
        tensor.data_type = data_type
        tensor.dims.extend(data.shape)
        tensor.raw_data = data.tobytes()  # little-endian on every platform ONNX Runtime runs on
        return name

    def weight(self, name: str, array: np.ndarray) -> str:
        """A float initializer in the model's float type (float64 inputs are rounded once)."""
        return self._add(name, np.ascontiguousarray(array, dtype=self.float_type), self.onnx_float)

    def float32(self, name: str, array: np.ndarray) -> str:
        """A float32 initializer regardless of the model's float type."""
        return self._add(name, np.ascontiguousarray(array, dtype=np.float32), TensorProto.FLOAT)

    def int64(self, name: str, values: Sequence[int] | np.ndarray) -> str:
        return self._add(name, np.ascontiguousarray(values, dtype=np.int64), TensorProto.INT64)

    # --- nodes ---
    def op(self, op_type: str, inputs: Sequence[str], name: str, domain: str = "", **attrs: Any) -> str:
        """Append node ``op_type`` named ``name``; its single output tensor is also ``name``."""
        self.nodes.append(
            helper.make_node(
                op_type, list(inputs), [self._unique(name)], name=name, domain=domain or None, **attrs
            )
        )
        if domain:
            self.domains.add(domain)
        return name

    def reshape(self, x: str, shape: Sequence[int], name: str) -> str:
        return self.op("Reshape", [x, self.int64(name + "/shape", shape)], name)

    def transpose(self, x: str, perm: Sequence[int], name: str) -> str:
        return self.op("Transpose", [x], name, perm=list(perm))

    def slice(
        self, x: str, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int], name: str
    ) -> str:
        return self.op(
            "Slice",
            [
                x,
                self.int64(name + "/starts", starts),
                self.int64(name + "/ends", ends),
                self.int64(name + "/axes", axes),
            ],
            name,
        )

    def cast(self, x: str, to: int, name: str) -> str:
        return self.op("Cast", [x], name, to=to)

    # --- model ---
    def model(
        self,
        inputs: Sequence[onnx.ValueInfoProto],
        outputs: Sequence[onnx.ValueInfoProto],
        *,
        opset: int,
        graph_name: str,
        producer: str,
        doc: str = "",
    ) -> onnx.ModelProto:
        """The finished model (the builder must not be used afterwards)."""
        model, graph = self.proto, self.proto.graph
        graph.name = graph_name
        graph.doc_string = doc
        graph.node.extend(self.nodes)
        graph.input.extend(inputs)
        graph.output.extend(outputs)
        opsets = [helper.make_opsetid("", opset)]
        opsets += [helper.make_opsetid(d, 1) for d in sorted(self.domains)]
        model.opset_import.extend(opsets)
        model.producer_name = producer
        # The lowest IR version that holds this opset: onnx's default is its newest IR, which
        # ONNX Runtime releases older than that onnx refuse ("Unsupported model IR version").
        model.ir_version = helper.find_min_ir_version_for(opsets[:1], ignore_unknown=True)
        return model
