"""The numpy backend: options, info, conformance with the float64 reference."""

from __future__ import annotations

import numpy as np
import pytest

from lc0py.backends.options import BackendOptions
from lc0py.backends.registry import create_backend
from lc0py.errors import BackendOptionError
from lc0py.weights import random_network, save_network
from tests.backends.conformance import (
    RTOL_FP32,
    check_backend_against_reference,
    random_batch,
    relative_error,
)


@pytest.fixture(scope="module")
def tiny():  # type: ignore[no-untyped-def]
    return random_network("tiny", seed=31)


def test_create_defaults(tiny) -> None:  # type: ignore[no-untyped-def]
    from lc0py.backends.numpy_backend import create

    backend = create(tiny, BackendOptions.parse(""))
    assert backend.name == "numpy" and backend.precision == "fp32"
    assert backend.info.input_format == int(tiny.format.input)
    assert backend.info.has_wdl and backend.info.has_moves_left


@pytest.mark.parametrize("opts", ["precision=fp16", "precision=x", "bogus=1", "precision=fp32,extra=2"])
def test_bad_options(tiny, opts: str) -> None:  # type: ignore[no-untyped-def]
    from lc0py.backends.numpy_backend import create

    with pytest.raises(BackendOptionError):
        create(tiny, BackendOptions.parse(opts, backend="numpy"))


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_conformance(tiny, precision: str) -> None:  # type: ignore[no-untyped-def]
    backend = create_backend("numpy", tiny, f"precision={precision}")
    # fp64 computes in float64; only the float32 output arrays round (~6e-8 relative).
    check_backend_against_reference(backend, tiny, RTOL_FP32 if precision == "fp32" else 1e-6)


def test_conformance_pe_dense_multihead() -> None:
    net = random_network("tiny", seed=32, embedding="pe_dense", multihead=True, input_format=1)
    check_backend_against_reference(create_backend("numpy", net, ""), net, RTOL_FP32, batch_sizes=(3,))


def test_through_weights_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.pb.gz"
    save_network(random_network("tiny", seed=33), path)
    backend = create_backend("numpy", path, "precision=fp64")
    batch = random_batch(4, backend.info.input_format, seed=5)
    out = backend.evaluate(batch)
    assert out.policy.dtype == np.float32 and out.policy.shape == (4, 1858)
    assert np.all(np.isfinite(out.policy)) and np.allclose(out.wdl.sum(axis=1), 1, atol=1e-6)


def test_batch_equals_single(tiny) -> None:  # type: ignore[no-untyped-def]
    backend = create_backend("numpy", tiny, "precision=fp64")
    batch = random_batch(5, backend.info.input_format, seed=7)
    full = backend.evaluate(batch)
    for i in range(5):
        from lc0py.backends.base import PlanesBatch

        one = backend.evaluate(PlanesBatch(batch.masks[i : i + 1], batch.values[i : i + 1]))
        assert relative_error(one.policy[0], full.policy[i]) < 1e-6


def test_empty_batch(tiny) -> None:  # type: ignore[no-untyped-def]
    from lc0py.backends.base import PlanesBatch

    out = create_backend("numpy", tiny).evaluate(PlanesBatch(np.zeros((0, 112)), np.zeros((0, 112))))
    assert len(out) == 0


def test_conformance_detects_errors(tiny) -> None:  # type: ignore[no-untyped-def]
    """The suite fails a backend that is slightly wrong, and one that returns NaN."""
    backend = create_backend("numpy", tiny)

    class Skewed:
        name, info = "skewed", backend.info

        def __init__(self, scale: float, nan: bool = False) -> None:
            self.scale, self.nan = scale, nan

        def evaluate(self, batch):  # type: ignore[no-untyped-def]
            out = backend.evaluate(batch)
            out.policy = out.policy * self.scale
            if self.nan:
                out.wdl[0, 0] = np.nan
            return out

    with pytest.raises(AssertionError, match="policy"):
        check_backend_against_reference(Skewed(1.001), tiny, RTOL_FP32)
    with pytest.raises(AssertionError, match="wdl inf"):
        check_backend_against_reference(Skewed(1.0, nan=True), tiny, 1.0)
