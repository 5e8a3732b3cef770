"""The host side of the timed cuBLASLt algorithms (lc0py/gpu/gemm_algos.py), without a GPU: the
choice rule, the problem key, the store of choices in the tuned folder, and the ``gemm_tune``
options. The GPU side (the algorithms run, against ``cublasGemmEx`` and the float64 reference)
is tests/backends/gpu/test_gemm_algos_gpu.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from lc0py.backends.gpu.network import gemm_tuning
from lc0py.backends.gpu.options import GEMM_TUNE_MIN, GpuOptions
from lc0py.errors import BackendOptionError, BackendUnavailable
from lc0py.gpu.gemm_algos import DEFAULT_MIN_GFLOP, MARGIN, AlgoStore, LtProblem, alignment, pick
from lc0py.gpu.vendor_platform import GemmCall


def test_pick_takes_the_fastest_only_past_the_margin() -> None:
    assert pick(10.0, [(0, 9.9), (1, 8.0), (2, 9.0)]) == 1
    assert pick(10.0, [(0, 9.9), (1, MARGIN * 10.0 + 1e-6)]) is None  # within the noise: keep the default
    assert pick(10.0, [(0, MARGIN * 10.0)]) == 0
    assert pick(10.0, []) is None


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, 0.0, -1.0])
def test_pick_skips_failed_and_absurd_timings(bad: float | None) -> None:
    assert pick(10.0, [(0, bad), (1, 5.0)]) == 1
    assert pick(10.0, [(0, bad)]) is None


@pytest.mark.parametrize("bad", [math.nan, math.inf, 0.0])
def test_pick_keeps_the_default_when_its_time_is_absurd(bad: float) -> None:
    assert pick(bad, [(0, 1.0)]) is None


def test_alignment_is_the_largest_power_of_two_to_256() -> None:
    assert alignment(0x7F0000000000) == 256
    assert alignment(0x7F0000000010) == 16
    assert alignment(0x7F0000000602) == 2
    assert alignment(0x7F0000000180) == 128


def _call(c: int = 0x7F0000100000, **kw: int) -> GemmCall:
    # row-major x[4096, 768] @ w[2304, 768]^T as VendorPlatform.gemm hands it over: B first
    fields = dict(trans_first=True, trans_second=False, m=2304, n=4096, k=768, first=0x7F0000000000,
                  ld_first=768, stride_first=0, second=0x7F0000200040, ld_second=768, stride_second=0,
                  c=c, ldc=2304, stride_c=0, batch=1)
    fields.update(kw)
    return GemmCall(**fields)  # type: ignore[arg-type]


def test_problem_from_a_call_keys_every_field_that_picks_an_algorithm() -> None:
    q = LtProblem.from_call(_call(), beta=0.0)
    assert (q.trans_a, q.trans_b, q.m, q.n, q.k) == (True, False, 2304, 4096, 768)
    assert (q.lda, q.ldb, q.ldc) == (768, 768, 2304)
    assert (q.align_a, q.align_b, q.align_c, q.accumulate) == (256, 64, 256, False)
    assert q.flops == 2.0 * 2304 * 4096 * 768
    keys = {
        q.key(),
        LtProblem.from_call(_call(), beta=1.0).key(),  # the residual in the GEMM
        LtProblem.from_call(_call(c=0x7F0000100010), beta=0.0).key(),  # another alignment of C
        LtProblem.from_call(_call(ldc=2336), beta=0.0).key(),
        LtProblem.from_call(_call(trans_second=True), beta=0.0).key(),
        LtProblem.from_call(_call(n=4097), beta=0.0).key(),
    }
    assert len(keys) == 6


def test_batched_problem_counts_and_keys_its_batch() -> None:
    plain = LtProblem.from_call(_call(), beta=0.0)
    batched = LtProblem.from_call(
        _call(batch=36, stride_first=768 * 2304, stride_second=4096 * 768, stride_c=4096 * 2304), beta=0.0
    )
    assert batched.flops == 36 * plain.flops
    assert batched.c_elements == 35 * 4096 * 2304 + 2304 * 4096
    assert plain.c_elements == 2304 * 4096
    assert "batch 36 strides" in batched.key() and "batch" not in plain.key()
    other = LtProblem.from_call(
        _call(batch=36, stride_first=768 * 2304, stride_second=4096 * 768, stride_c=4096 * 2304 + 8), beta=0.0
    )
    assert other.key() != batched.key()


def test_store_keeps_choices_across_instances(tmp_path: Path) -> None:
    a = AlgoStore(tmp_path, "NVIDIA H200|sm_90|cublasLt 130100")
    algo = [1, 2, 3, 4, 5, 6, 7, (1 << 64) - 1]
    a.put("problem one", {"algo": algo, "default_us": 10.0, "best_us": 8.0})
    a.flush()
    b = AlgoStore(tmp_path, "NVIDIA H200|sm_90|cublasLt 130100")
    assert b.get("problem one") == {"algo": algo, "default_us": 10.0, "best_us": 8.0}
    b.put("problem two", {"algo": None, "default_us": 5.0, "best_us": None})
    b.flush()
    a.put("problem three", {"algo": algo})  # a's view lacks "problem two": the write merges it back
    a.flush()
    c = AlgoStore(tmp_path, "NVIDIA H200|sm_90|cublasLt 130100")
    assert set(c.choices) == {"problem one", "problem two", "problem three"}
    assert c.get("problem two") == {"algo": None, "default_us": 5.0, "best_us": None}


def test_store_writes_once_per_flush(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.storage import cache as storage_cache

    writes: list[str] = []
    real_store = storage_cache.EntryStore.store

    def counted(self: storage_cache.EntryStore, name: str, text: object, inputs: str) -> Path | None:
        writes.append(name)
        return real_store(self, name, text, inputs)  # type: ignore[arg-type]

    monkeypatch.setattr(storage_cache.EntryStore, "store", counted)
    store = AlgoStore(tmp_path, "dev")
    for i in range(5):
        store.put(f"problem {i}", {"algo": None})
    assert writes == [] and store.dirty  # put alone writes nothing
    assert AlgoStore(tmp_path, "dev").get("problem 0") is None
    store.flush()
    assert len(writes) == 1 and not store.dirty
    assert set(AlgoStore(tmp_path, "dev").choices) == {f"problem {i}" for i in range(5)}
    store.flush()  # nothing new: no write
    assert len(writes) == 1


def test_store_of_another_device_or_library_is_separate(tmp_path: Path) -> None:
    store = AlgoStore(tmp_path, "NVIDIA H200|sm_90|cublasLt 130100")
    store.put("p", {"algo": None})
    store.flush()
    assert AlgoStore(tmp_path, "NVIDIA H200|sm_90|cublasLt 130100").get("p") == {"algo": None}
    assert AlgoStore(tmp_path, "NVIDIA H100|sm_90|cublasLt 130100").get("p") is None
    assert AlgoStore(tmp_path, "NVIDIA H200|sm_90|cublasLt 130200").get("p") is None


def test_store_ignores_a_tampered_or_malformed_entry(tmp_path: Path) -> None:
    store = AlgoStore(tmp_path, "dev")
    store.put("p", {"algo": [0] * 8})
    store.flush()
    (entry,) = [f for f in tmp_path.iterdir() if f.name.endswith(".json") and ".entry." not in f.name]
    doc = json.loads(entry.read_text())
    doc["choices"]["p"]["algo"] = [9] * 8
    entry.write_text(json.dumps(doc))  # its recorded digest no longer matches
    assert AlgoStore(tmp_path, "dev").get("p") is None
    # a well-formed entry whose algorithm is not 8 integers is dropped, the rest kept
    fresh = AlgoStore(tmp_path / "b", "dev")
    fresh.put("good", {"algo": None})
    fresh.put("bad", {"algo": [1, 2]})
    fresh.flush()
    assert set(AlgoStore(tmp_path / "b", "dev").choices) == {"good"}


def test_store_in_a_folder_it_cannot_make_keeps_choices_in_memory(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = AlgoStore(blocker / "tuned", "dev")  # cannot be created, whoever runs the test
    store.put("p", {"algo": None})
    store.flush()  # logged, not raised: a cache is an optimisation
    assert store.get("p") == {"algo": None}
    assert AlgoStore(blocker / "tuned", "dev").get("p") is None


def test_store_without_a_folder_stays_in_memory() -> None:
    store = AlgoStore(None, "dev")
    store.put("p", {"algo": None})
    store.flush()
    assert store.get("p") == {"algo": None} and not store.dirty


def test_options_parse() -> None:
    assert GEMM_TUNE_MIN == DEFAULT_MIN_GFLOP
    default = GpuOptions.from_text("", "cuda-fp16")
    assert default.gemm_tune is None and default.gemm_tune_min == GEMM_TUNE_MIN
    assert GpuOptions.from_text("gemm_tune=on,gemm_tune_min=0", "cuda-fp16").gemm_tune is True
    assert GpuOptions.from_text("gemm_tune=off", "cuda-fp16").gemm_tune is False
    with pytest.raises(BackendOptionError, match="gemm_tune='maybe'"):
        GpuOptions.from_text("gemm_tune=maybe", "cuda-fp16")
    with pytest.raises(BackendOptionError, match="gemm_tune_min"):
        GpuOptions.from_text("gemm_tune_min=-1", "cuda-fp16")


class _Info:
    name = "Some GPU"


class _NoAlgos:
    info = _Info()


class _Algos:
    info = _Info()

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[float, object]] = []
        self.error = error

    def use_gemm_algos(self, min_gflop: float, folder: object) -> None:
        if self.error is not None:
            raise self.error
        self.calls.append((min_gflop, folder))


def test_gemm_tune_follows_the_platform(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC0PY_TUNED_DIR", str(tmp_path))
    p = _Algos()
    assert gemm_tuning(GpuOptions.from_text("gemm_tune_min=7", "cuda-fp16"), p) is True  # type: ignore[arg-type]
    assert p.calls == [(7, tmp_path)]
    off = _Algos()
    assert gemm_tuning(GpuOptions.from_text("gemm_tune=off", "cuda-fp16"), off) is False  # type: ignore[arg-type]
    assert off.calls == []
    assert gemm_tuning(GpuOptions.from_text("", "rocm-fp16"), _NoAlgos()) is False  # type: ignore[arg-type]
    missing = _Algos(BackendUnavailable("cuBLASLt not found"))
    assert gemm_tuning(GpuOptions.from_text("", "cuda-fp16"), missing) is False  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("platform", "message"),
    [
        (_NoAlgos(), "Some GPU: only the CUDA platform times cuBLASLt algorithms"),
        (_Algos(BackendUnavailable("cuBLASLt not found")), "cuBLASLt not found"),
    ],
)
def test_gemm_tune_on_where_it_cannot_run_is_one_line(platform: object, message: str) -> None:
    with pytest.raises(BackendOptionError, match=f"^--backend-opts: gemm_tune=on: {message}$"):
        gemm_tuning(GpuOptions.from_text("gemm_tune=on", "cuda-fp16"), platform)  # type: ignore[arg-type]
