"""``lc0py attnbench`` argument handling, the sweep plan, skip rules, table and plot note (no GPU:
the CPU implementation runs for real on tiny shapes)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.tools import attnbench


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    attnbench.add_arguments(p)
    return p.parse_args(list(argv))


def test_plan_is_the_cross_product() -> None:
    shapes, impls = attnbench.plan(
        _args(
            "--seq",
            "64,128",
            "--depths",
            "32,64",
            "--heads",
            "8",
            "--batch",
            "1,4",
            "--causal",
            "both",
            "--group",
            "4",
        )
    )
    assert impls == ["cpu", "naive", "flash"] and len(shapes) == 2 * 2 * 2 * 2
    assert {s.kv_heads for s in shapes} == {2} and {s.causal for s in shapes} == {False, True}


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["--seq", "64,x"], "'x' is not an integer"),
        (["--seq", "0"], "out of range"),
        (["--depths", "40"], "multiple of 16"),
        (["--causal", "maybe"], "off, on or both"),
        (["--impls", "cpu,cudnn"], "cudnn"),
        (["--heads", "6", "--group", "4"], "multiple"),
        (["--iters", "0"], "--iters"),
    ],
)
def test_bad_arguments_are_one_line(argv: list[str], msg: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attnbench", *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_skip_rules() -> None:
    a = _args("--cpu-max-seq", "256", "--naive-max-gb", "1")
    big = attnbench.BenchShape(1, 16, 16, 8192, 64, False)
    assert "cpu-max-seq" in (attnbench.skip_reason("cpu", big, a) or "")
    assert "naive-max-gb" in (attnbench.skip_reason("naive", big, a) or "")  # 2.1 GB of scores
    assert attnbench.skip_reason("flash", big, a) is None


def test_cpu_only_run_table_json_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a.json"
    rc = main(
        [
            "attnbench",
            "--impls",
            "cpu",
            "--seq",
            "16,40",
            "--depths",
            "16",
            "--heads",
            "2",
            "--causal",
            "on",
            "--iters",
            "3",
            "--json",
            str(out),
            "--plot",
            str(tmp_path / "p.png"),
        ]
    )
    assert rc == 0
    text = capsys.readouterr()
    assert "| B1 H2 L40 d16 causal |" in text.out and "cpu mean ms" in text.out
    rows = json.loads(out.read_text())["rows"]
    assert [r["seq"] for r in rows] == [16, 40]
    r = rows[1]["results"]["cpu"]
    assert r["samples"] == 3 and r["p50_ms"] <= r["p99_ms"] and r["peak_bytes"] > 0
    assert (tmp_path / "p.png").is_file() or "matplotlib is not installed" in text.err


def test_percentile_matches_numpy_default() -> None:
    assert attnbench.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert attnbench.percentile([5.0], 99) == 5.0


SMALL = ["--seq", "16,2048", "--depths", "16", "--heads", "2", "--causal", "off", "--iters", "2",
         "--cpu-max-seq", "64"]


def _has_gpu() -> bool:
    from lc0py.backends.registry import unavailable_reason

    return unavailable_reason("gpu") is None


@pytest.mark.skipif(_has_gpu(), reason="checks the behaviour without a GPU")
def test_default_impls_without_gpu_run_the_cpu_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attnbench", *SMALL, "--json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["rows"]  # --json: only JSON on stdout
    assert [r["seq"] for r in rows] == [16] and set(rows[0]["results"]) == {"cpu"}
    assert "running cpu only; skipped naive, flash" in captured.err
    assert "skipped 1 of 2 shapes with L > --cpu-max-seq 64" in captured.err


@pytest.mark.skipif(_has_gpu(), reason="checks the behaviour without a GPU")
def test_explicit_gpu_impl_without_gpu_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attnbench", *SMALL, "--impls", "flash"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lc0py: ")


def test_json_out_and_old_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["attnbench", "--impls", "cpu", "--seq", "16", "--depths", "16", "--heads", "1",
            "--causal", "off", "--iters", "1"]
    assert main([*base, "--json-out", str(tmp_path / "a.json")]) == 0
    captured = capsys.readouterr()
    assert "cpu mean ms" in captured.out  # the table stays on stdout
    assert json.loads((tmp_path / "a.json").read_text())["rows"][0]["seq"] == 16
    assert main([*base, "--json", str(tmp_path / "b.json")]) == 0  # the old spelling
    assert "--json FILE is now --json-out FILE" in capsys.readouterr().err
    assert (tmp_path / "b.json").is_file()
    assert main([*base, "--json-out", str(tmp_path / "missing" / "c.json")]) == 2
