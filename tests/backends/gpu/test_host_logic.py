"""GPU backend logic that needs no GPU: kernel choice, parameters, compile cache, options."""

from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path

import pytest

from lc0py.backends.gpu.kernels import AttentionKernel, choose_attention, flash_grid
from lc0py.backends.gpu.ops import ln_config
from lc0py.backends.gpu.tuning import FlashParams, default_params
from lc0py.errors import KernelCompileError
from lc0py.gpu import compile_cache
from lc0py.gpu.compile_cache import KernelCache, cache_key, kernel_dir
from lc0py.gpu.platform import DeviceInfo
from lc0py.storage.atomic import write_atomically

H100 = dict(vendor="nvidia", arch="sm_90", shared_optin=227 * 1024)
A100 = dict(vendor="nvidia", arch="sm_80", shared_optin=163 * 1024)


@pytest.mark.parametrize("depth", [16, 32, 48, 64, 96, 128, 160, 256])
def test_flash_supports_every_multiple_of_16(depth: int) -> None:
    ch = choose_attention(depth=depth, seq=64, fp16=True, **H100)  # sm_90: the persistent kernel
    assert ch.kernel is AttentionKernel.FLASH_MMA_PERSISTENT, ch.reason
    ch = choose_attention(depth=depth, seq=64, fp16=True, **A100)
    assert ch.kernel is AttentionKernel.FLASH_MMA, ch.reason


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        (dict(depth=40, seq=64, fp16=True, **H100), "multiple of 16"),
        (dict(depth=272, seq=64, fp16=True, **H100), "> 256"),
        (dict(depth=32, seq=64, fp16=True, vendor="nvidia", arch="sm_75", shared_optin=65536), "sm_80"),
        (dict(depth=32, seq=64, fp16=True, flash=False, **H100), "flash=off"),
        (
            dict(depth=256, seq=64, fp16=True, vendor="nvidia", arch="sm_90", shared_optin=48 * 1024),
            "shared memory",
        ),
        (dict(depth=192, seq=64, fp16=False, **H100), "fp32 flash kernel supports depth"),
        (dict(depth=32, seq=64, fp16=True, overrides={"kv_tile": 24}, **H100), "kv_tile"),
        (dict(depth=32, seq=64, fp16=True, overrides={"bogus": 1}, **H100), "unknown flash parameter"),
    ],
)
def test_fallback_reasons(kw: dict, why: str) -> None:
    ch = choose_attention(**kw)
    assert ch.kernel is AttentionKernel.FALLBACK
    assert why in ch.reason


def test_fp32_uses_simt_kernel_and_overrides_apply() -> None:
    ch = choose_attention(depth=96, seq=64, fp16=False, **H100)
    assert ch.kernel is AttentionKernel.FLASH_SIMT
    ch = choose_attention(depth=32, seq=64, fp16=True, overrides={"warps": 2, "min_blocks": 8}, **A100)
    assert ch.params == FlashParams(warps=2, kv_tile=64, stages=1, q_regs=1, min_blocks=8, f32_threads=64)
    grid, block = flash_grid(64, 24, 100, ch.params, fp16=True)
    assert grid == (2, 24, 100) and block == (64, 1, 1)


def test_default_params_cover_seq_and_depth() -> None:
    for depth in (32, 64, 96, 128):
        p, why = default_params(depth, "sm_80")
        assert p.rows == 64 and p.kv_tile == 64 and p.stages == 1 and not p.persistent and why
        assert default_params(depth, "sm_90", persistent=0)[0] == p
    p, _ = default_params(32, "sm_80", seq=200)
    assert p.stages == 2  # several KV tiles: prefetch
    d = p.defines(32, fp16=True, bias_f32=False)
    assert d["LC0_FA_DEPTH"] == 32 and d["LC0_FA_STAGES"] == 2 and d["LC0_FP16"] == 1


def test_shared_memory_estimate_matches_kernel_layout() -> None:
    # d=32, 4 warps, KV 64, fp16 bias: Q 64x40 + K,V 64x40 each + G 64x72, all f16
    assert FlashParams().shared_bytes(32, True, False) == 2 * (64 * 40 * 3 + 64 * 72)


def test_ln_config_keeps_rows_in_registers() -> None:
    assert ln_config(768, 8) == {"LC0_LN_N": 768, "LC0_LN_THREADS": 32, "LC0_LN_ROWS": 4}
    cfg = ln_config(6144, 8, act=7)
    assert cfg["LC0_LN_THREADS"] * 4 * 8 >= 6144 and cfg["LC0_LN_ROWS"] >= 1 and cfg["LC0_LN_ACT"] == 7


# ---- compile cache with a fake platform --------------------------------------------------------
class FakePlatform:
    vendor = "nvidia"
    binary_kind = "cubin"

    def __init__(self) -> None:
        self.info = DeviceInfo("nvidia", 0, "fake", "sm_90", 132, 32, 48 * 1024, 227 * 1024, 1 << 30)
        self.compiles: list[tuple[str, list[str]]] = []
        self.version = "nvrtc-13.5"

    def compiler_version(self) -> str:
        return self.version

    def compile(self, source: str, name: str, options: list[str], headers: dict[str, str]) -> bytes:
        self.compiles.append((name, list(options)))
        if "-DBROKEN=1" in options:
            raise KernelCompileError("boom", "line 1: error")
        return f"binary:{name}:{options}".encode()

    def load_module(self, data: bytes) -> int:
        return hash(data) & 0xFFFF

    def get_function(self, module: int, name: str) -> int:
        return module * 100 + len(name)


def test_cache_key_changes_with_every_input() -> None:
    base = dict(
        source="s",
        headers={"a.h": "x"},
        options=["-DA=1"],
        arch="sm_90",
        binary_kind="cubin",
        compiler="nvrtc-13.5",
    )
    k0 = cache_key(**base)
    for field, value in [
        ("source", "t"),
        ("headers", {"a.h": "y"}),
        ("options", ["-DA=2"]),
        ("arch", "sm_80"),
        ("binary_kind", "ptx"),
        ("compiler", "nvrtc-12.8"),
    ]:
        assert cache_key(**{**base, field: value}) != k0, field
    assert cache_key(**base) == k0


def test_disk_cache_hits_and_env_switches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", str(tmp_path / "kc"))
    fake = FakePlatform()
    c1 = KernelCache(fake)  # type: ignore[arg-type]
    f1 = c1.function("softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": 2})
    files = sorted(p.name for p in (tmp_path / "kc").iterdir())
    assert c1.compiled == 1 and len(files) == 2 and files[1] == files[0] + ".entry.json"  # binary + record
    assert (tmp_path / "kc").stat().st_mode & 0o777 == 0o700
    c2 = KernelCache(fake)  # type: ignore[arg-type]
    assert c2.function("softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": 2}) == f1
    assert c2.compiled == 0 and c2.disk_hits == 1
    c2.function("softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": 3})  # new define -> new compile
    assert c2.compiled == 1
    fake.version = "nvrtc-13.6"  # new compiler -> recompiles
    c3 = KernelCache(fake)  # type: ignore[arg-type]
    c3.function("softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": 2})
    assert c3.compiled == 1
    monkeypatch.setenv("LC0PY_KERNEL_ASSERT_CACHED", "1")
    with pytest.raises(KernelCompileError, match="not in the kernel cache"):
        KernelCache(fake).function("softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": 9})  # type: ignore[arg-type]
    monkeypatch.delenv("LC0PY_KERNEL_ASSERT_CACHED")
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", "off")
    assert compile_cache.cache_folder() is None
    c4 = KernelCache(fake)  # type: ignore[arg-type]
    c4.function("softmax_bias.hip", "softmax_bias", {"LC0_SM_PER": 2})
    assert c4.compiled == 1


def test_corrupt_or_swapped_binary_is_recompiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", str(tmp_path))
    fake = FakePlatform()
    KernelCache(fake).binary("softmax_bias.hip", {"LC0_SM_PER": 2})  # type: ignore[arg-type]
    KernelCache(fake).binary("softmax_bias.hip", {"LC0_SM_PER": 3})  # type: ignore[arg-type]
    a, b = sorted(p for p in tmp_path.iterdir() if p.suffix == ".cubin")
    good_a, good_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(good_b)  # swapped: each file now holds the other kernel
    b.write_bytes(good_a[:-3] + b"xyz")  # and one is corrupt too
    for defines in ({"LC0_SM_PER": 2}, {"LC0_SM_PER": 3}):
        cache = KernelCache(fake)  # type: ignore[arg-type]
        with caplog.at_level("WARNING", logger="lc0py.cache"):
            _, data = cache.binary("softmax_bias.hip", defines)
        assert cache.compiled == 1 and cache.disk_hits == 0
        assert data == fake.compile("", "softmax_bias.hip", [f"-DLC0_SM_PER={defines['LC0_SM_PER']}"], {})
    assert sum("failed verification" in r.getMessage() for r in caplog.records) == 2
    assert (a.read_bytes(), b.read_bytes()) == (good_a, good_b)  # rebuilt, correct


def test_cache_folder_of_another_user_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)  # anyone could plant a binary here
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", str(folder))
    fake = FakePlatform()
    for _ in range(2):
        cache = KernelCache(fake)  # type: ignore[arg-type]
        cache.binary("softmax_bias.hip", {"LC0_SM_PER": 2})
        assert cache.compiled == 1 and cache.disk_hits == 0
    assert not list(folder.iterdir())
    monkeypatch.setattr(os, "getuid", lambda: 12345)  # as seen by someone else: refused too
    os.chmod(folder, 0o700)
    assert KernelCache(fake).binary("softmax_bias.hip", {"LC0_SM_PER": 2})  # type: ignore[arg-type]
    assert not list(folder.iterdir())


def test_compile_errors_propagate_with_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC0PY_KERNEL_CACHE", str(tmp_path))
    with pytest.raises(KernelCompileError) as info:
        KernelCache(FakePlatform()).function("softmax_bias.hip", "softmax_bias", {"BROKEN": 1})  # type: ignore[arg-type]
    assert info.value.log == "line 1: error"
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_atomic_write_never_exposes_partial_files(tmp_path: Path) -> None:
    path = tmp_path / "k.cubin"
    payloads = [bytes([i]) * 200_000 for i in range(8)]
    seen: list[bytes] = []

    def reader() -> None:
        for _ in range(300):
            if path.exists():
                seen.append(path.read_bytes())

    t = threading.Thread(target=reader)
    t.start()
    for p in payloads:
        write_atomically(path, p, private=True)
    t.join()
    assert all(s in payloads for s in seen)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_kernel_dir_found_and_relocatable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert (kernel_dir() / "flash_attention.hip").is_file()
    assert {"mma.h", "prelude_nvrtc.h", "common.h"} <= set(compile_cache.read_headers())
    monkeypatch.setenv("LC0PY_KERNEL_DIR", str(tmp_path))
    assert kernel_dir() == tmp_path


def test_backend_without_gpu_is_unavailable_not_a_crash() -> None:
    from lc0py.backends.gpu.backend import probe_cuda
    from lc0py.backends.registry import backend_names, entry

    names = backend_names()
    assert names.index("gpu") < names.index("cuda-fp16") < names.index("cuda") < names.index("onnx-cpu")
    assert entry("cuda-fp16").probe is not None
    reason = probe_cuda()
    assert reason is None or "NVIDIA" in reason or "cuda-python" in reason


def test_unknown_backend_option_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.backends.gpu import backend as gb
    from lc0py.backends.options import BackendOptions
    from lc0py.errors import BackendOptionError
    from lc0py.weights.presets import random_network

    with pytest.raises(BackendOptionError, match="flsh"):
        gb.GpuBackend(
            random_network("tiny", 0), BackendOptions.parse("flsh=off"), fp16=True, vendor="nvidia", name="x"
        )
    with pytest.raises(BackendOptionError, match="attn_warps"):
        gb.GpuBackend(
            random_network("tiny", 0),
            BackendOptions.parse("attn_warps=two"),
            fp16=True,
            vendor="nvidia",
            name="x",
        )


def test_kernels_ship_inside_the_package() -> None:
    """An installed wheel has no repo root: kernels must also be reachable as lc0py/kernels
    (the one kernels folder, shipped as package data by pyproject.toml)."""
    import lc0py

    pkg = Path(lc0py.__file__).parent / "kernels"
    assert (pkg / "flash_attention.hip").is_file() and (pkg / "mma.h").is_file()
    text = (Path(lc0py.__file__).parents[1] / "pyproject.toml").read_text()
    assert '"kernels/*.hip"' in text and '"kernels/*.h"' in text


def test_ln_config_threads_are_whole_waves() -> None:
    # CDNA waves have 64 lanes: the row reduction needs threads per row to be a multiple of them.
    assert ln_config(768, 8, warp_size=64)["LC0_LN_THREADS"] == 64
    assert ln_config(6144, 8, warp_size=64)["LC0_LN_THREADS"] % 64 == 0
    assert ln_config(768, 8, warp_size=32)["LC0_LN_THREADS"] == 32
    # blocks: 128 threads on 32-lane warps (measured on an H200), 256 on 64-lane waves
    assert ln_config(768, 8, warp_size=32)["LC0_LN_ROWS"] == 4
    assert ln_config(768, 8, warp_size=64)["LC0_LN_ROWS"] == 4


def test_rows_grid_covers_every_chunk_once() -> None:
    from lc0py.backends.gpu.ops import MAX_BLOCKS, ROWS_GRID_UNROLL, THREADS, rows_grid

    # T82's FFN at 1024 positions: a warp reads 32 chunks of one row, each thread 2 rows a step
    assert rows_grid(65536, 1024, 8) == ((1, 65536 // (2 * ROWS_GRID_UNROLL), 1), (128, 2, 1))
    # fewer chunks a row than a warp has lanes: a power of two of them, warps spanning rows
    assert rows_grid(10, 24, 8) == ((1, 1, 1), (4, 64, 1))
    # whole warps a block (64-lane waves: T82's 768-wide rows are 96 chunks)
    assert rows_grid(8, 768, 8, warp_size=64) == ((1, 2, 1), (128, 2, 1))
    assert rows_grid(8, 768, 8) == ((1, 2, 1), (96, 2, 1))
    # a width not in whole chunks: 1-D over the elements
    assert rows_grid(3, 100, 8) == ((2, 1, 1), (THREADS, 1, 1))
    shapes = ((1, 768), (7, 264), (4096, 6144), (10**6, 64), (3, 40))
    for (rows, n), warp in itertools.product(shapes, (32, 64)):
        (gx, gy, _), (tx, ty, _) = rows_grid(rows, n, 8, warp)
        assert tx * ty <= THREADS and (tx * ty) % warp == 0 and tx * gx >= n // 8 and gx * tx - n // 8 < tx
        assert 1 <= gy <= MAX_BLOCKS and (gy == MAX_BLOCKS or gy * ty * ROWS_GRID_UNROLL >= rows)
