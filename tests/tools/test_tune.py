"""``lc0py tune`` host logic with a fake measurement (no GPU): candidate enumeration and depth
filtering, the stddev rule for the winner, skipped configurations, the tuned-parameter file per
(device, arch, heads x depth, dtype), the GPU backend reading it, and the ``tuned=off`` opt-out."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lc0py.backends.gpu import tuning
from lc0py.backends.gpu.kernels import AttentionKernel, choose_attention
from lc0py.backends.gpu.tuning import FlashParams, TuneKey, default_params, load_tuned, save_tuned
from lc0py.tools import tune
from lc0py.tools.tune import (
    Measurement,
    SizeStats,
    SkipConfig,
    enumerate_configs,
    pick_winner,
    sweep,
    why_filtered,
)

H100 = dict(vendor="nvidia", arch="sm_90", shared_optin=227 * 1024)


@pytest.fixture
def tuned_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(tuning.ENV_TUNED, str(tmp_path / "tuned"))
    return tmp_path / "tuned"


@pytest.mark.parametrize("depth", [32, 64, 96, 128])
@pytest.mark.parametrize("quick", [True, False])
def test_candidates_are_valid_distinct_and_sized(depth: int, quick: bool) -> None:
    default, _ = default_params(depth, "sm_90")
    cands, filtered = enumerate_configs(default, depth, fp16=True, quick=quick)
    assert cands[0] == default and len(set(cands)) == len(cands)
    assert (4 <= len(cands) <= 5) if quick else len(cands) >= 15
    for p in cands:  # every candidate is a kernel the backend accepts on an H100 (v1 or v2, as asked)
        ch = choose_attention(depth=depth, seq=64, fp16=True, overrides=tune.overrides_of(p, True), **H100)
        want = AttentionKernel.FLASH_MMA_PERSISTENT if p.persistent else AttentionKernel.FLASH_MMA
        assert ch.kernel is want, (p, ch.reason)
        assert why_filtered(p, depth, True) is None or p == default
    if not quick:  # the sweep covers every value of every axis the depth allows
        assert {p.warps for p in cands} == {2, 4, 8}
        assert {p.min_blocks for p in cands} >= {1, 2, 4, 8}
        assert {p.kv_tile for p in cands} == {16, 32, 64}
        assert {p.stages for p in cands} >= {1, 2, 4}
        assert {p.q_regs for p in cands} == {0, 1}
        assert all(why for _, why in filtered)


@pytest.mark.parametrize("depth", [32, 64, 96, 128])
@pytest.mark.parametrize("quick", [True, False])
def test_both_kernels_are_candidates(depth: int, quick: bool) -> None:
    """The tuner measures flash=v1 against flash=v2 (each with its own defaults) in every mode, so
    a saved winner can pick either kernel; the persistent kernel gets its own neighbourhood."""
    v2, _ = default_params(depth, "sm_90")
    v1, _ = default_params(depth, "sm_90", persistent=0)
    assert v2.persistent == 1 and v1.persistent == 0
    cands, _ = enumerate_configs(v2, depth, fp16=True, quick=quick, other=v1)
    assert cands[:2] == [v2, v1]
    assert tune.overrides_of(v1, True)["persistent"] == 0 and tune.overrides_of(v2, True)["persistent"] == 1
    for p in cands:
        ch = choose_attention(depth=depth, seq=64, fp16=True, overrides=tune.overrides_of(p, True), **H100)
        assert ch.is_flash and (ch.kernel is AttentionKernel.FLASH_MMA_PERSISTENT) == bool(p.persistent), p
    if not quick:
        persistent = [p for p in cands if p.persistent]
        assert {p.min_blocks for p in persistent} >= {1, 2, 3, 4, 8}
        assert {p.stages for p in persistent} >= {2, 3}
    assert {p.interleave for p in cands if p.persistent} == {0, 1}  # both pair orders, in every mode
    assert "no effect" in (why_filtered(replace(v1, interleave=0), depth, True) or "")
    assert "no effect" in (why_filtered(replace(v1, descend=1), depth, True) or "")
    if not quick:
        assert {p.descend for p in cands if p.persistent} == {0, 1}
    assert "heads_per_block" in (why_filtered(replace(v2, heads_per_block=2), depth, True) or "")
    assert why_filtered(replace(v2, stages=3), depth, True) is None  # many pairs per block: no item limit


def test_filter_by_depth() -> None:
    base = FlashParams(warps=4, kv_tile=64, stages=1, q_regs=1)
    assert why_filtered(base, 128, True) is None
    assert "spill" in (why_filtered(base, 160, True) or "")  # Q in registers past depth 128
    assert "registers" in (why_filtered(replace(base, q_regs=0), 256, True) or "")  # 64 x 256 tile
    assert why_filtered(replace(base, q_regs=0, kv_tile=32, stages=2), 256, True) is None
    assert "prefetch" in (why_filtered(replace(base, stages=2), 64, True) or "")  # one tile, 1 head
    assert why_filtered(replace(base, kv_tile=16, stages=4), 64, True) is None  # 4 tiles
    assert "stages" in (why_filtered(replace(base, kv_tile=32, stages=4), 64, True) or "")  # 2 items
    assert "sequence" in (why_filtered(replace(base, kv_tile=128), 64, True) or "")


def test_fp32_candidates() -> None:
    default, _ = default_params(64, "sm_90")
    cands, _ = enumerate_configs(default, 64, fp16=False, quick=False)
    assert len(cands) >= 10 and {p.f32_threads for p in cands} == {32, 64, 128, 256}
    assert tune.overrides_of(cands[0], False).keys() == {"f32_threads", "min_blocks", "kv_tile"}


def _fake(table: dict[FlashParams, tuple[float, float] | str]):  # type: ignore[no-untyped-def]
    """measure(): mean nps and relative spread per candidate, or a skip reason."""

    def measure(p: FlashParams) -> Measurement:
        what = table[p]
        if isinstance(what, str):
            raise SkipConfig(what)
        mean, spread = what
        runs = [mean * (1 + spread * k) for k in (-1, 0, 1)]
        return Measurement({256: runs, 1024: [r * 1.1 for r in runs]}, kernel_ms=0.07)

    return measure


def test_winner_needs_stddev_under_5_percent() -> None:
    a, b, c, d = (FlashParams(min_blocks=m) for m in (1, 2, 4, 8))
    results = sweep(
        [a, b, c, d],
        _fake({a: (40000, 0.01), b: (45000, 0.08), c: (41000, 0.02), d: "launch failed: too many resources"}),
    )
    assert [r.skipped for r in results] == [None, None, None, "launch failed: too many resources"]
    assert not results[1].stable  # fastest but noisy (stddev 8 % of the mean)
    assert pick_winner(results) is results[2]
    s = results[2].sizes[0]
    assert s.size == 256 and s.median == pytest.approx(41000) and s.max == pytest.approx(41820)
    assert s.stddev == pytest.approx(820) and s.cv < 0.05
    assert results[2].score == pytest.approx((41000 * 41000 * 1.1) ** 0.5)
    assert pick_winner([results[1], results[3]]) is None  # nothing stable: keep the default


def test_progress_and_table() -> None:
    a, b = FlashParams(), FlashParams(warps=2)
    seen: list[tuple[int, int]] = []
    results = sweep(
        [a, b], _fake({a: (1000, 0.01), b: "nvrtc: error"}), lambda i, n, p, r: seen.append((i, n))
    )
    assert seen == [(0, 2), (1, 2), (1, 2), (2, 2)]
    text = tune.table(results, a, pick_winner(results))
    assert "winner default" in text and "skipped" in text and "nvrtc: error" in text
    assert SizeStats.of(8, [5.0]).stddev == 0.0


def test_tuned_file_per_key_roundtrip(tuned_dir: Path) -> None:
    key = TuneKey("NVIDIA H100 80GB HBM3", "sm_90", 24, 32, "fp16")
    assert load_tuned(key) is None
    win = FlashParams(warps=2, min_blocks=8)
    path = save_tuned(key, win, {"score_nps": 1.0})
    assert path.parent == tuned_dir and path.name == "nvidia-h100-80gb-hbm3_sm_90_h24xd32_fp16.json"
    over, where = load_tuned(key) or ({}, None)
    assert where == path and over["warps"] == 2 and over["min_blocks"] == 8
    for other in (
        replace(key, device="NVIDIA H200"),
        replace(key, arch="sm_80"),
        replace(key, heads=12, depth=64),
        replace(key, dtype="fp32"),
    ):
        assert load_tuned(other) is None, other
    doc = json.loads(path.read_text())
    doc["version"] = 999  # a stale file is ignored, never an error
    path.write_text(json.dumps(doc))
    assert load_tuned(key) is None
    path.write_text("{not json")
    assert load_tuned(key) is None


@pytest.mark.parametrize("bad", [{"kv_tile": 0}, {"kv_tile": 24}, {"stages": 9}, {"warps": "4"},
                                 {"f32_threads": 48}, {"q_regs": True}])
def test_tuned_file_with_parameters_the_kernel_refuses_is_ignored(
        tuned_dir: Path, bad: dict[str, object], caplog: pytest.LogCaptureFixture) -> None:
    from lc0py.storage.cache import EntryStore

    key = TuneKey("NVIDIA H100 80GB HBM3", "sm_90", 24, 32, "fp16")
    doc = {"version": tuning.TUNED_VERSION, "key": asdict(key), "params": {**asdict(FlashParams()), **bad},
           "info": {}}
    # a well-formed, correctly recorded entry (as if written by an older lc0py): only the values are bad
    EntryStore(tuned_dir, "tuned").store(key.filename(), json.dumps(doc), tuning._inputs(key))
    with caplog.at_level("WARNING"):
        assert load_tuned(key) is None
    assert any("ignored" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError):
        save_tuned(key, FlashParams(**{**asdict(FlashParams()), **bad}))  # type: ignore[arg-type]


def test_tuned_file_edited_by_hand_is_not_trusted(tuned_dir: Path) -> None:
    key = TuneKey("NVIDIA H100 80GB HBM3", "sm_90", 24, 32, "fp16")
    path = save_tuned(key, FlashParams(warps=2))
    doc = json.loads(path.read_text())
    doc["params"]["warps"] = 8  # a valid value, but not what was measured and recorded
    path.write_text(json.dumps(doc))
    assert load_tuned(key) is None
    assert not path.exists()  # dropped: the next tune run writes a fresh one


def test_tuned_folder_can_be_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tuning.ENV_TUNED, "off")
    key = TuneKey("X", "sm_90", 24, 32, "fp16")
    assert tuning.tuned_folder() is None and load_tuned(key) is None
    with pytest.raises(OSError):
        save_tuned(key, FlashParams())


def _fake_backend(monkeypatch: pytest.MonkeyPatch, options: str) -> tuple[Any, dict[str, Any]]:
    """Build GpuBackend on a fake platform and network: returns it and the GpuNetwork kwargs."""
    from lc0py.backends.gpu import backend as gb
    from lc0py.backends.gpu import network as gn
    from lc0py.backends.options import BackendOptions
    from lc0py.gpu import factory as gp

    seen: dict[str, Any] = {}
    info = SimpleNamespace(name="NVIDIA H100 80GB HBM3", arch="sm_90")
    monkeypatch.setattr(
        gp, "create_platform", lambda vendor, dev: SimpleNamespace(info=info, close=lambda: None)
    )

    class FakeNet:
        check_supported = staticmethod(lambda network: None)  # GpuNetwork's pre-check: nothing to refuse

        def __init__(self, platform: Any, network: Any, **kw: Any) -> None:
            seen.update(kw)
            self.flash_choice = SimpleNamespace(kernel=AttentionKernel.FLASH_MMA, reason="fake")
            self.fusions = SimpleNamespace(describe=lambda: "fusions: none")  # the backend logs them

    monkeypatch.setattr(gn, "GpuNetwork", FakeNet)
    net = SimpleNamespace(
        body="attention", heads=24, depth=32, format=SimpleNamespace(input=1), has_wdl=True,
        has_moves_left=True,
    )
    b = gb.GpuBackend(net, BackendOptions.parse(options), fp16=True, vendor="nvidia", name="cuda-fp16")  # type: ignore[arg-type]
    return b, seen


def test_backend_uses_tuned_winner_unless_off(tuned_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = TuneKey("NVIDIA H100 80GB HBM3", "sm_90", 24, 32, "fp16")
    save_tuned(key, FlashParams(warps=2, min_blocks=8, kv_tile=64, stages=1, q_regs=0))
    b, kw = _fake_backend(monkeypatch, "")
    assert kw["options"].flash_overrides["warps"] == 2 and kw["options"].flash_overrides["q_regs"] == 0
    assert b.tuned_from and b.tuned_from.endswith("_h24xd32_fp16.json")
    b, kw = _fake_backend(monkeypatch, "tuned=off")
    assert kw["options"].flash_overrides == {} and b.tuned_from is None
    b, kw = _fake_backend(monkeypatch, "attn_warps=4")  # explicit options win over the file
    assert kw["options"].flash_overrides["warps"] == 4 and kw["options"].flash_overrides["min_blocks"] == 8


def test_tune_rejects_bad_flags() -> None:
    from lc0py.cli.main import main

    assert main(["tune", "--batch-sizes", "0"]) == 2
    assert main(["tune", "--repeats", "1"]) == 2
    assert main(["tune", "--weights", "/nonexistent.pb.gz", "--batches", "1"]) == 2


def test_every_flash_parameter_has_kernel_limits() -> None:
    # a new FlashParams field must say what the kernel accepts, or every override of it is refused
    assert set(tuning.PARAM_LIMITS) == set(tuning.OVERRIDABLE)
    for name, value in asdict(FlashParams()).items():
        assert tuning.param_problem(name, value) is None, name


def test_tune_refuses_a_residual_net_before_any_device_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A residual body has no attention kernels: one clear line, exit 2, and no backend is made
    (the type check found the run reaching for the attention depth of a residual shape)."""
    from lc0py.backends import registry
    from lc0py.cli.main import main

    net = tmp_path / "res.pb.gz"
    assert main(["make-net", "--preset", "res-tiny", "--seed", "4", "-o", str(net)]) == 0
    capsys.readouterr()

    def no_backend(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a backend was created for a residual net")

    monkeypatch.setattr(registry, "create_backend", no_backend)
    assert main(["tune", "--weights", str(net), "--backend", "cuda", "--batches", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "residual" in err[0] and str(net) in err[0], err


def test_tuned_winner_of_the_other_kernel_is_not_mixed_in(
    tuned_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flash=v1 / v2 force a kernel: a saved winner measured on the other one is not merged (its
    stages and blocks per SM were chosen for that kernel); with flash=on the tuner's choice stands."""
    key = TuneKey("NVIDIA H100 80GB HBM3", "sm_90", 24, 32, "fp16")
    save_tuned(key, FlashParams(stages=3, min_blocks=3, persistent=1))
    b, kw = _fake_backend(monkeypatch, "")
    assert kw["options"].flash_overrides["persistent"] == 1 and kw["options"].flash_overrides["stages"] == 3
    b, kw = _fake_backend(monkeypatch, "flash=v2")
    assert kw["options"].flash_overrides["stages"] == 3 and b.tuned_from
    b, kw = _fake_backend(monkeypatch, "flash=v1")
    assert kw["options"].flash_overrides == {"persistent": 0} and b.tuned_from is None
    save_tuned(key, FlashParams(warps=2, persistent=0))  # the tuner picked the one-shot kernel
    b, kw = _fake_backend(monkeypatch, "")
    assert kw["options"].flash_overrides["persistent"] == 0 and kw["options"].flash_overrides["warps"] == 2
    b, kw = _fake_backend(monkeypatch, "attn_persistent=1")
    assert kw["options"].flash_overrides == {"persistent": 1} and b.tuned_from is None
