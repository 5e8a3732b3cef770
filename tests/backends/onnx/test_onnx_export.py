"""The exported ONNX graph against the numpy float64 reference, plus model validity.

Head configurations use T82 shapes with one encoder layer (the per-layer math is what differs
between them); structural switches and activations use the ``tiny`` preset. Positions are fresh
random plane masks. Tolerances: ``onnx_testutil.TOL`` (1e-4 fp32, 1e-2 fp16, relative norm).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx not installed (pip install 'lc0py[onnx]')")
pytest.importorskip("onnxruntime", reason="onnxruntime not installed (pip install 'lc0py[onnx]')")

import onnx  # noqa: E402

from lc0py.backends.onnx.export import network_to_onnx  # noqa: E402
from lc0py.errors import UnsupportedNetError  # noqa: E402
from lc0py.weights.network import Activation, Network  # noqa: E402
from lc0py.weights.presets import random_network  # noqa: E402
from tests.backends.onnx.onnx_testutil import assert_close, errors, random_batch, reference, run_onnx  # noqa: E402

HEAD_PRESETS = ("t82", "t82-h12", "t82-h8", "t82-h6")
HEAD_IDS = ("h24-d32", "h12-d64", "h8-d96", "h6-d128")  # heads and depth at d_model 768


@functools.cache
def _t82_case(preset: str) -> tuple[Network, object, dict[str, np.ndarray]]:
    """Network, batch and float64 reference, shared by the fp32/fp16 and plain/contrib cases."""
    network = random_network(preset, seed=11, layers=1)
    batch = random_batch(seed=100 + HEAD_PRESETS.index(preset))
    return network, batch, reference(network, batch)


@pytest.mark.parametrize("attention", ["plain", "contrib"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("preset", HEAD_PRESETS, ids=HEAD_IDS)
def test_head_configurations(preset: str, precision: str, attention: str) -> None:
    network, batch, ref = _t82_case(preset)
    fp16 = precision == "fp16"
    model = network_to_onnx(network, fp16=fp16, attention=attention)  # type: ignore[arg-type]
    assert_close(errors(run_onnx(model, batch, fp16), ref), precision)


STRUCTURES = [
    pytest.param(
        dict(embedding=e, smolgen=s, moves_left=m),
        id=f"{e}-{'sg' if s else 'nosg'}-{'mlh' if m else 'nomlh'}",
    )
    for e in ("pe_map", "pe_dense", "none")
    for s in (True, False)
    for m in (True, False)
] + [
    pytest.param(dict(wdl=False), id="classical-value"),
    pytest.param(dict(gating=False), id="no-gating"),
    pytest.param(dict(embedding="pe_dense", wdl=False, smolgen=False), id="pe_dense-classical"),
]


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("overrides", STRUCTURES)
def test_structures(overrides: dict[str, object], precision: str) -> None:
    network = random_network("tiny", seed=5, **overrides)
    batch = random_batch(seed=21, size=5)
    fp16 = precision == "fp16"
    out = run_onnx(network_to_onnx(network, fp16=fp16), batch, fp16)
    assert ("mlh" in out) == network.has_moves_left
    assert_close(errors(out, reference(network, batch)), precision)


ACTIVATIONS = [
    ("mish", "relu_2", "swish"),
    ("relu", "mish", "relu"),
    ("mish", "swish", "selu"),
    ("relu", "selu", "tanh"),
    ("mish", "tanh", "sigmoid"),
    ("relu", "sigmoid", "none"),
    ("mish", "none", "relu_2"),
    ("relu", "default", "default"),
]


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("acts", ACTIVATIONS, ids=lambda a: "-".join(a))
def test_activations(acts: tuple[str, str, str], opset: int) -> None:
    """Every activation in every place (default / FFN / smolgen), at two opsets."""
    default, ffn, smolgen = acts
    network = random_network(
        "tiny", seed=7, default_activation=default, ffn_activation=ffn, smolgen_activation=smolgen
    )
    batch = random_batch(seed=3)
    model = network_to_onnx(network, opset=opset)
    assert_close(errors(run_onnx(model, batch, False), reference(network, batch)), "fp32")


def test_absent_biases_follow_blas() -> None:
    """No bias => no bias and no activation (docs/attention-body.md §4.6): K/V/out zero, MLH without ReLU."""
    network = random_network("tiny", seed=9)
    layer = network.encoders[0]
    layer.k.b = layer.v.b = layer.out.b = None
    network.value.fc2.b = None
    assert network.moves_left is not None
    network.moves_left.fc2.b = None
    network.moves_left.fc2.w = network.moves_left.fc2.w - 0.5  # some outputs negative: no ReLU
    batch = random_batch(seed=4, size=6)
    ref = reference(network, batch)
    assert (ref["mlh"] < 0).any(), "the test needs negative moves-left outputs"
    out = run_onnx(network_to_onnx(network), batch, False)
    assert_close(errors(out, ref), "fp32")


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"fp16": True}, {"attention": "contrib"}, {"batch_size": 3}, {"opset": 18}],
    ids=["fp32", "fp16", "contrib", "batch3", "opset18"],
)
def test_model_is_valid_with_lc0_names(kwargs: dict[str, object]) -> None:
    network = random_network("tiny", seed=1)
    model = network_to_onnx(network, **kwargs)  # type: ignore[arg-type]
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    elem = onnx.TensorProto.FLOAT16 if kwargs.get("fp16") else onnx.TensorProto.FLOAT
    batch: int | str = kwargs.get("batch_size", "batch")  # type: ignore[assignment]

    def signature(values: object) -> list[tuple[str, int, list[int | str]]]:
        return [
            (v.name, v.type.tensor_type.elem_type,
             [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim])
            for v in values  # type: ignore[attr-defined]
        ]  # fmt: skip

    assert signature(inferred.graph.input) == [("/input/planes", elem, [batch, 112, 8, 8])]
    assert signature(inferred.graph.output) == [
        ("/output/policy", elem, [batch, 1858]),
        ("/output/wdl", elem, [batch, 3]),
        ("/output/mlh", elem, [batch, 1]),
    ]
    assert any(i.name == "/const/pos_encoding" for i in model.graph.initializer)
    gather = next(i for i in model.graph.initializer if i.name == "/const/mapping_table")
    assert list(gather.dims) == [1858]


def test_classical_value_output_name() -> None:
    model = network_to_onnx(random_network("tiny", seed=1, wdl=False, moves_left=False))
    assert [o.name for o in model.graph.output] == ["/output/policy", "/output/value"]


def test_fixed_batch_runs_at_that_size() -> None:
    network = random_network("tiny", seed=2)
    batch = random_batch(seed=8, size=3)
    out = run_onnx(network_to_onnx(network, batch_size=3), batch, False)
    assert_close(errors(out, reference(network, batch)), "fp32")


def test_bad_arguments() -> None:
    network = random_network("tiny", seed=1)
    with pytest.raises(ValueError, match="attention"):
        network_to_onnx(network, attention="flash")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="opset"):
        network_to_onnx(network, opset=16)
    with pytest.raises(ValueError, match="newer"):
        network_to_onnx(network, opset=onnx.defs.onnx_opset_version() + 1)
    with pytest.raises(ValueError, match="batch_size"):
        network_to_onnx(network, batch_size=0)


def test_refuses_softmax_activation() -> None:
    network = dataclasses.replace(random_network("tiny", seed=1), ffn_act=Activation.SOFTMAX)
    with pytest.raises(UnsupportedNetError, match="ffn activation SOFTMAX"):
        network_to_onnx(network)
