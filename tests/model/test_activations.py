"""Activation anchor values (docs/attention-body.md §7) and lc0's numerically safe forms."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.model.activations import activation
from lc0py.weights.network import Activation

ANCHORS = [
    (Activation.MISH, -1.0, -0.303401461),
    (Activation.MISH, 1.0, 0.865098388),
    (Activation.MISH, 2.0, 1.943958960),
    (Activation.SWISH, 1.0, 0.731058579),
    (Activation.SELU, -1.0, -1.111330738),
    (Activation.SELU, 2.0, 2.101401975),
    (Activation.RELU, -0.5, 0.0),
    (Activation.RELU, 0.5, 0.5),
    (Activation.RELU_2, 3.0, 9.0),
    (Activation.RELU_2, -3.0, 0.0),
    (Activation.TANH, 0.5, 0.462117157),
    (Activation.SIGMOID, 0.0, 0.5),
    (Activation.NONE, -2.5, -2.5),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("act,x,y", ANCHORS, ids=[f"{a.name}({x})" for a, x, _ in ANCHORS])
def test_anchor(act: Activation, x: float, y: float, dtype: type) -> None:
    out = activation(act, np.array([x], dtype))
    assert out.dtype == dtype
    assert abs(float(out[0]) - y) < (1e-6 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mish_matches_definition_and_is_finite(dtype: type) -> None:
    x = np.linspace(-30, 30, 2001).astype(dtype)
    exact = x.astype(np.float64) * np.tanh(np.log1p(np.exp(x.astype(np.float64))))
    got = activation(Activation.MISH, x)
    np.testing.assert_allclose(got, exact, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-7)
    big = activation(Activation.MISH, np.array([100.0, 1000.0, -1000.0], dtype))
    np.testing.assert_array_equal(big, np.array([100.0, 1000.0, -0.0], dtype))


def test_names_and_numbers() -> None:
    x = np.array([-1.0, 1.0])
    np.testing.assert_array_equal(activation("mish", x), activation(Activation.MISH, x))
    np.testing.assert_array_equal(activation("sqrrelu", x), activation(8, x))


@pytest.mark.parametrize("bad", [Activation.SOFTMAX, Activation.DEFAULT, "nope"])
def test_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        activation(bad, np.ones(2))  # type: ignore[arg-type]
