"""The tools' shared flags: network flags from the UCI option table, one ``--json`` meaning."""

from __future__ import annotations

import argparse

import pytest

from lc0py.cli.main import build_parser, main
from lc0py.uci.options import build_table


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _option(parser: argparse.ArgumentParser, dest: str) -> argparse.Action | None:
    return next((a for a in parser._actions if a.dest == dest), None)


def test_network_flags_come_from_the_uci_table() -> None:
    table = {s.name: s for s in build_table()}
    expected = {"weights": ("WeightsFile", "-w"), "backend": ("Backend", "-b"),
                "backend_opts": ("BackendOptions", "-o")}
    seen = 0
    for name, sub in _subparsers().items():
        if name in ("uci", "benchmark", "bench", "export-onnx", "leela2onnx"):  # the table itself / ONNX
            continue
        for dest, (uci_name, short) in expected.items():
            action = _option(sub, dest)
            if action is None:
                continue
            seen += 1
            spec = table[uci_name]
            assert action.option_strings == [spec.flag, short], (name, dest)
            assert spec.help in (action.help or ""), (name, dest)
    assert seen >= 12  # backendbench, eval, verify, tune: three each; describenet: --weights


@pytest.mark.parametrize("tool", ["verify", "tune"])
def test_backend_name_checked_before_the_net_is_built(tool: str, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def no_net(*args: object, **kwargs: object) -> None:
        raise AssertionError("the net must not be built for a bad backend name")

    monkeypatch.setattr("lc0py.weights.presets.random_network", no_net)
    assert main([tool, "--preset", "tiny", "--backend", "cudaa"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown backend" in err


def test_json_flags_everywhere() -> None:
    for name in ("backendbench", "eval", "attnbench", "tune"):
        sub = _subparsers()[name]
        assert _option(sub, "json") is not None and _option(sub, "json_out") is not None, name
