"""demux, roundrobin and multiplexing over CPU children: same outputs as one backend, in order,
concurrent, errors as one ``Lc0pyError``, bad groups named."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from lc0py.backends.base import NetworkOutput, PlanesBatch
from lc0py.backends.registry import create_backend
from lc0py.errors import Lc0pyError
from tests.one_line import one_line_error

ROOT = Path(__file__).resolve().parents[3]
TINY = str(ROOT / "weights" / "tiny-seed1.pb.gz")
KINDS = ("demux", "roundrobin", "multiplexing")


def _batch(n: int, seed: int) -> PlanesBatch:
    rng = np.random.default_rng(seed)
    return PlanesBatch(
        rng.integers(0, 2**63, (n, 112), dtype=np.uint64), rng.random((n, 112), dtype=np.float32)
    )


def _pieces(batch: PlanesBatch, sizes: list[int]) -> list[PlanesBatch]:
    out, start = [], 0
    for size in sizes:
        out.append(PlanesBatch(batch.masks[start : start + size], batch.values[start : start + size]))
        start += size
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_random_children_match_one_backend_in_order(kind: str) -> None:
    batch = _batch(301, 1)
    reference = create_backend("random", TINY, "seed=7").evaluate(batch)
    # children with different delays finish out of order; the outputs must not
    opts = "backend=random,seed=7,(delay_ms=3),(delay_ms=0.5),(threads=2,delay_per_position_us=5)"
    with create_backend(kind, TINY, opts) as multi:
        assert len(multi.children) == 3 and multi.info.asynchronous
        sizes = [1, 64, 17, 100, 3, 116]
        handles = [multi.evaluate_async(p) for p in _pieces(batch, sizes)]
        outputs = [h.result() for h in handles]
    for name in ("policy", "wdl", "moves_left"):
        joined = np.concatenate([getattr(o, name) for o in outputs])
        assert np.array_equal(joined, getattr(reference, name)), name


@pytest.mark.parametrize("kind", KINDS)
def test_numpy_children_match_the_numpy_backend(kind: str) -> None:
    batch = _batch(20, 2)
    reference = create_backend("numpy", TINY).evaluate(batch)
    with create_backend(kind, TINY, "(backend=numpy),numpy") as multi:
        out = multi.evaluate(batch)
    np.testing.assert_allclose(
        out.policy, reference.policy, rtol=1e-4, atol=1e-4
    )  # fp32 BLAS sums differ by batch size
    np.testing.assert_allclose(
        out.wdl, reference.wdl, rtol=1e-4, atol=1e-4
    )  # fp32 BLAS sums differ by batch size
    assert not np.isnan(out.policy).any()


def test_demux_splits_each_batch_across_every_child() -> None:
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()
    with create_backend("demux", TINY, "backend=random,(seed=1),(seed=1),(seed=1)") as demux:
        for child in demux.children:
            original = child.backend.evaluate

            def spy(b: PlanesBatch, _orig=original, _label=child.label) -> NetworkOutput:
                with lock:
                    seen.append((_label, len(b)))
                return _orig(b)

            child.backend.evaluate = spy  # type: ignore[method-assign]
        demux.evaluate(_batch(10, 3))
        assert sorted(n for _, n in seen) == [2, 4, 4]  # ceil(10/3) = 4 per part
        assert len({label for label, _ in seen}) == 3
    with create_backend("demux", TINY, "backend=random,minimum-split-size=8,(),()") as demux:
        assert demux.part_size(10) == 8 and demux.part_size(4) == 4 and demux.part_size(100) == 50


def test_roundrobin_alternates_whole_batches() -> None:
    with create_backend("roundrobin", TINY, "backend=random,(),()") as rr:
        calls: list[int] = []
        for k, child in enumerate(rr.children):
            original = child.backend.evaluate
            child.backend.evaluate = (  # type: ignore[method-assign]
                lambda b, _o=original, _k=k: (calls.append(_k), _o(b))[1]
            )
        for n in (5, 6, 7, 8):
            rr.evaluate(_batch(n, n))
        assert calls == [0, 1, 0, 1]


def test_multiplexing_joins_queued_requests_up_to_max_batch() -> None:
    sizes: list[int] = []
    gate = threading.Event()
    with create_backend("multiplexing", TINY, "(backend=random,max_batch=10)") as mux:
        child = mux.children[0]
        original = child.backend.evaluate

        def slow(b: PlanesBatch) -> NetworkOutput:
            gate.wait(10)
            sizes.append(len(b))
            return original(b)

        child.backend.evaluate = slow  # type: ignore[method-assign]
        pieces = _pieces(_batch(20, 4), [4, 4, 4, 4, 4])
        handles = [mux.evaluate_async(p) for p in pieces]
        gate.set()
        outs = [h.result() for h in handles]
        assert [len(o) for o in outs] == [4] * 5 and sum(sizes) == 20 and max(sizes) <= 10
        assert len(sizes) < 5  # some requests travelled together


@pytest.mark.parametrize("kind", KINDS)
def test_a_failing_child_is_one_lc0py_error(kind: str) -> None:
    with create_backend(kind, TINY, "backend=random,(),()") as multi:

        def broken(b: PlanesBatch) -> NetworkOutput:
            raise RuntimeError("device lost\nsecond line")

        multi.children[1].backend.evaluate = broken  # type: ignore[method-assign]
        with pytest.raises(Lc0pyError) as info:
            for n in (4, 5, 6):
                multi.evaluate(_batch(n, n))
        assert "group [1]" in str(info.value) and "device lost" in str(info.value)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "opts, fragment",
    [
        ("(backend=random),(backend=nope)", "group [1] '(backend=nope)': --backend 'nope': unknown backend"),
        ("(backend=random,zz=1)", "group [0] '(backend=random,zz=1)': --backend-opts: unknown option(s) zz"),
        ("(backend=random,threads=0)", "threads=0 is out of range"),
        ("backend=random,(seed=1),(wdl=off)", "differ from"),
        ("(backend=random", "not closed"),
    ],
)
def test_bad_groups_are_named_in_one_line(opts: str, fragment: str) -> None:
    assert fragment in one_line_error(Lc0pyError, lambda: create_backend("demux", TINY, opts))


def test_children_get_inherited_and_shared_keys_as_lc0() -> None:
    from lc0py.backends.multi.children import child_specs
    from lc0py.backends.options import BackendOptions

    opts = BackendOptions.parse("backend=cuda-fp16,max_batch=512,threads=2,(gpu=0),(gpu=1,backend=onnx-cpu)")
    a, b = child_specs("demux", opts)
    assert (a.backend, a.options.values, a.threads, a.max_batch) == (
        "cuda-fp16",
        {"gpu": "0", "max_batch": "512"},
        2,
        512,
    )
    assert (b.backend, b.options.values) == ("onnx-cpu", {"gpu": "1", "threads": "2"})
    (only,) = child_specs("demux", BackendOptions.parse("backend=random,seed=3"))
    assert (only.backend, only.options.values, only.label) == ("random", {"seed": "3"}, "demux child 0")


@pytest.mark.parametrize("kind", ["demux", "roundrobin", "multiplexing"])
def test_children_compute_at_the_same_time(kind: str) -> None:
    """Each child waits at a barrier for the other: only concurrent children get through (the
    timeout is a hang guard, not a measurement)."""
    barrier = threading.Barrier(2, timeout=60)
    # multiplexing: max_batch 4, so the two requests cannot travel together
    with create_backend(kind, TINY, "backend=random,max_batch=4,(),()") as multi:
        for child in multi.children:
            original = child.backend.evaluate

            def meet(b: PlanesBatch, _orig=original) -> NetworkOutput:
                barrier.wait()
                return _orig(b)

            child.backend.evaluate = meet  # type: ignore[method-assign]
        if kind == "demux":
            out = multi.evaluate(_batch(8, 1))  # one batch, both halves at once
            assert len(out) == 8
        else:
            handles = [multi.evaluate_async(_batch(4, k)) for k in range(2)]
            assert [len(h.result()) for h in handles] == [4, 4]
