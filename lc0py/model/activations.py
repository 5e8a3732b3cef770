"""Activation functions exactly as lc0 computes them (docs/attention-body.md §7).

Every function works elementwise on a numpy array and keeps its dtype (float32 or float64), so
the same code is the float32 model and the float64 reference. Formulas follow lc0's CPU code
(``src/neural/backends/shared/activation.cc``): in particular Mish uses lc0's overflow-free
rewrite instead of ``x * tanh(softplus(x))``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from lc0py.weights.network import Activation

# SELU constants (Klambauer et al.); lc0 rounds them to float32, which float32 inputs match.
SELU_ALPHA = 1.6732632423543772
SELU_LAMBDA = 1.0507009873554805


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, x.dtype.type(0))


def relu2(x: np.ndarray) -> np.ndarray:
    """Squared ReLU ``max(0, x)**2`` ("sqrrelu")."""
    r = np.maximum(x, x.dtype.type(0))
    return r * r


def mish(x: np.ndarray) -> np.ndarray:
    """``x * tanh(ln(1 + e^x))`` in lc0's form: ``e = e^x, n = e^2 + 2e``.

    ``x * n / (n + 2)`` for ``x <= -0.125``, else ``x - 2x / (n + 2)``; the second branch stays
    finite when ``e^x`` overflows (``n = inf`` gives ``x``), the first avoids cancellation near 0-.
    """
    one = x.dtype.type
    with np.errstate(over="ignore"):
        e = np.exp(x)
        n = e * e + one(2) * e
    d = x / (n + one(2))
    with np.errstate(invalid="ignore"):  # inf * 0 in the branch np.where discards
        return np.where(x <= one(-0.125), n * d, x - one(2) * d)


def swish(x: np.ndarray) -> np.ndarray:
    """``x * sigmoid(x)`` with beta = 1, written ``x / (1 + e^-x)`` as lc0 does."""
    with np.errstate(over="ignore"):
        return x / (x.dtype.type(1) + np.exp(-x))


def selu(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    with np.errstate(over="ignore"):
        neg = t(SELU_LAMBDA * SELU_ALPHA) * (np.exp(np.minimum(x, t(0))) - t(1))
    return np.where(x > t(0), t(SELU_LAMBDA) * x, neg)


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x.dtype.type(1) / (x.dtype.type(1) + np.exp(-x))


def identity(x: np.ndarray) -> np.ndarray:
    return x


ACTIVATIONS: dict[Activation, Callable[[np.ndarray], np.ndarray]] = {
    Activation.RELU: relu,
    Activation.RELU_2: relu2,
    Activation.MISH: mish,
    Activation.SWISH: swish,
    Activation.SELU: selu,
    Activation.TANH: np.tanh,
    Activation.SIGMOID: sigmoid,
    Activation.NONE: identity,
}


def activation(name: Activation | str | int, x: np.ndarray) -> np.ndarray:
    """Apply activation ``name`` (an ``Activation``, its number, or its name, e.g. ``"mish"``).

    ``DEFAULT`` must have been resolved by the loader; ``SOFTMAX`` is not an elementwise
    activation and is refused, as lc0's blas backend refuses it for FFN/smolgen.
    """
    act = _as_activation(name)
    fn = ACTIVATIONS.get(act)
    if fn is None:
        raise ValueError(f"unsupported activation {act.name} (supported: "
                         f"{', '.join(a.name for a in ACTIVATIONS)})")
    return fn(x)


def _as_activation(name: Activation | str | int) -> Activation:
    if isinstance(name, Activation):
        return name
    if isinstance(name, str):
        key = name.strip().upper().replace("SQRRELU", "RELU_2")
        try:
            return Activation[key]
        except KeyError:
            raise ValueError(f"unknown activation '{name}'") from None
    return Activation(int(name))
