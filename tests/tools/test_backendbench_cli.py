"""``lc0py backendbench``: CSV/JSON output, CPU defaults, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lc0py.cli.main import main
from lc0py.tools.bench_stats import HEADER
from lc0py.weights import random_network, save_network


@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "tiny.pb.gz"
    save_network(random_network("tiny", seed=51), path)
    return path


def test_csv_rows(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["backendbench", "-w", str(tiny_path), "-b", "numpy", "--batches", "3",
            "--start-batch-size", "1", "--max-batch-size", "5", "--batch-step", "2"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == HEADER
    assert [int(line.split(",")[0]) for line in lines[1:]] == [1, 3, 5]
    for line in lines[1:]:
        values = [float(x) for x in line.split(",")]
        assert all(v >= 0 for v in values) and values[1] > 0


def test_batch_sizes_json(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["backendbench", "-w", str(tiny_path), "-b", "numpy", "--batches", "2",
            "--batch-sizes", "2,4", "--json", "--fen", "8/P1k5/8/8/8/8/5K2/8 w - - 0 1"]
    assert main(argv) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["size"] for r in rows] == [2, 4] and all(r["backend"] == "numpy" for r in rows)
    assert all(r["nps"] > 0 and r["samples"] == 1 for r in rows)


def test_cpu_defaults(tiny_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backendbench", "-w", str(tiny_path), "--header-only-once"]) == 0
    captured = capsys.readouterr()
    assert "small CPU plan: sizes 1,4,16, 3 batches each" in captured.err
    lines = captured.out.splitlines()
    assert lines[0] == HEADER and len(lines) == 4


def test_header_repeats_every_32_sizes(tiny_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.tools import backendbench

    monkeypatch.setattr(backendbench, "run_batch", lambda *args: None)  # only the layout matters here
    argv = ["backendbench", "-w", str(tiny_path), "-b", "numpy", "--batches", "1",
            "--start-batch-size", "1", "--max-batch-size", "33"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines.count(HEADER) == 2 and lines[33] == HEADER


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--fen", "not a fen"], "--fen"),
        (["--batches", "0"], "--batches"),
        (["--batches", "x"], "--batches"),
        (["--max-batch-size", "2000"], "--max-batch-size"),
        (["--batch-step", "0"], "--batch-step"),
        (["--start-batch-size", "9", "--max-batch-size", "3"], "larger than"),
        (["--batch-sizes", "1,x"], "--batch-sizes"),
        (["--batch-sizes", "0"], "--batch-sizes"),
        (["--batch-sizes", "1", "--batch-step", "2"], "cannot be combined"),
        (["-b", "nope"], "unknown backend"),
        (["-b", "numpy", "-o", "precision=fp16"], "precision"),
        (["-b", "numpy", "-o", "bogus"], "key=value"),
    ],
)
def test_bad_arguments(tiny_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                       message: str) -> None:
    assert main(["backendbench", "-w", str(tiny_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lc0py: ") and message in err


def test_missing_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backendbench", "-w", str(tmp_path / "nope.pb.gz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


@pytest.mark.parametrize(
    "flags,sizes,batches",
    [
        ([], [1, 4, 16], 3),
        (["--batches", "2"], [1, 4, 16], 2),  # one batch flag keeps the CPU sizes
        (["--batch-sizes", "2,3"], [2, 3], 3),  # ... and the CPU batch count
        (["--max-batch-size", "2"], [1, 2], 3),
    ],
)
def test_cpu_plan_kept_for_unset_parts(tiny_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch, flags: list[str],
                                       sizes: list[int], batches: int) -> None:
    from lc0py.tools import backendbench

    calls: list[int] = []
    monkeypatch.setattr(backendbench, "run_batch", lambda backend, history, fmt, size: calls.append(size))
    assert main(["backendbench", "-w", str(tiny_path), "-b", "numpy", "--json", *flags]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["size"] for r in rows] == sizes
    warmup = min(4, max(sizes))
    assert calls == [warmup] + [s for s in sizes for _ in range(batches)]


def test_gpu_backends_keep_lc0s_plan() -> None:
    import argparse

    from lc0py.tools.backendbench import make_plan

    args = argparse.Namespace(batches="7", start_batch_size=None, max_batch_size=None, batch_step=None,
                              batch_sizes=None)
    args.batches = 7
    plan, cpu = make_plan(args, is_cpu=False)
    assert plan.sizes == list(range(1, 257)) and plan.batches == 7 and not cpu


def test_json_out_writes_the_rows(tiny_path: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rows.jsonl"
    argv = ["backendbench", "-w", str(tiny_path), "-b", "numpy", "--batches", "1", "--batch-sizes", "1,2",
            "--json-out", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == HEADER  # CSV still on stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["size"] for r in rows] == [1, 2]


def test_several_backends_and_plot(tiny_path: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "nps.png"
    argv = ["backendbench", "-w", str(tiny_path), "-b", "numpy,random", "--batches", "2",
            "--batch-sizes", "1,2,8", "--plot", str(png)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "# backend numpy" and lines[1] == HEADER and "# backend random" in lines
    assert len([line for line in lines if line.split(",")[0].strip().isdigit()]) == 6
    assert "plot written" in captured.err
    import matplotlib.image

    image = matplotlib.image.imread(str(png))  # a real PNG: decodes, has pixels, not blank
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert float(image[..., :3].std()) > 0.01


def test_plot_data_one_line_per_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.tools import backendbench, plotting

    seen: dict[str, object] = {}
    monkeypatch.setattr(plotting, "line_plot", lambda series, path, **kw: seen.update(series=series, **kw))
    rows = [{"backend": b, "size": s, "nps": n} for b, s, n in
            [("cuda", 1, 10.0), ("cuda", 64, 500.0), ("cuda-fp16", 1, 12.0), ("cuda-fp16", 64, 900.0)]]
    backendbench.plot(rows, "x.png")
    assert seen["series"] == {"cuda": [(1, 10.0), (64, 500.0)], "cuda-fp16": [(1, 12.0), (64, 900.0)]}
    assert seen["log_x"] is True and seen["xlabel"] == "batch size"


def test_plot_has_spread_net_and_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Error bars from the per-batch times (mean +- sd), the net and the device in the title."""
    from lc0py.tools import backendbench, plotting

    seen: dict[str, object] = {}
    monkeypatch.setattr(plotting, "line_plot", lambda series, path, **kw: seen.update(series=series, **kw))
    rows = [{"backend": "numpy", "size": 4, "nps": 40.0, "mean_ms": 100.0, "sdev_ms": 20.0, "max_nps": 60.0},
            {"backend": "numpy", "size": 16, "nps": 80.0, "mean_ms": 200.0, "sdev_ms": 0.0, "max_nps": 80.0}]
    backendbench.plot(rows, "x.png", net="maia-1900.pb.gz", device="NVIDIA H100")
    spread = seen["spread"]
    assert isinstance(spread, dict)
    (x0, lo0, hi0), (x1, lo1, hi1) = spread["numpy"]
    assert (x0, x1) == (4, 16)
    assert lo0 == pytest.approx(4000 / 120) and hi0 == pytest.approx(4000 / 80)
    assert lo1 == pytest.approx(80.0) and hi1 == pytest.approx(80.0)
    title = str(seen["title"])
    assert "maia-1900.pb.gz" in title and "NVIDIA H100" in title


def test_plot_without_matplotlib_is_one_line_before_measuring(
    tiny_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".")[0] == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert main(["backendbench", "-w", str(tiny_path), "-b", "numpy", "--plot", str(tmp_path / "x.png")]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "matplotlib is not installed" in captured.err
    assert captured.out == ""  # nothing was measured


def test_several_backends_all_checked_first(tiny_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from lc0py.backends import registry

    monkeypatch.setattr(registry, "unavailable_reason",
                        lambda name: "no GPU here" if name == "cuda" else None)
    assert main(["backendbench", "-w", str(tiny_path), "-b", "numpy,cuda", "--batches", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "lc0py: --backend 'cuda': no GPU here\n"
