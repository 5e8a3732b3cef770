"""``lc0py`` command line: one sub-command per tool, lc0's names and flags.

Each sub-command lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; this file only wires them up and turns ``Lc0pyError`` into one line on
stderr with exit status 2 (argparse's own usage errors also exit 2).

Launched as lc0 is: no command, or only flags (``lc0py --weights=x.pb.gz``), runs the UCI engine,
with the flags of an ``lc0.config`` file (``-c``/``--config``, lc0's folders) in front of the
command line's; ``--version`` prints the version.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import NoReturn

from lc0py import __version__
from lc0py.errors import Lc0pyError

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "backendbench": ("lc0py.tools.backendbench", "network throughput (nodes per second) per batch size"),
    "benchmark": ("lc0py.tools.benchmark", "search speed on lc0's benchmark positions"),
    "uci": ("lc0py.uci.engine", "run as a UCI engine (chess GUIs, python-chess, lichess-bot)"),
    "verify": ("lc0py.tools.verify", "flash path vs fallback vs numpy float64 reference, with errors"),
    "eval": ("lc0py.tools.eval", "evaluate positions: policy over legal moves, WDL, Q, moves-left"),
    "bulk-eval": ("lc0py.tools.bulk_eval", "evaluate files of positions or games (FEN, EPD, PGN, Parquet) "
                  "at scale, resumably, on every GPU or on Ray"),
    "describenet": ("lc0py.tools.describenet", "describe a network file as lc0's describenet does"),
    "make-net": ("lc0py.tools.make_net", "write a random-weight network lc0 can load (deterministic)"),
    "export-onnx": ("lc0py.backends.onnx.export_cli", "export a network to an ONNX model"),
    "calibrate": ("lc0py.tools.calibrate", "FP8 calibration of a residual net for cuda-fp8 (GPTQ, cached)"),
    "tune": ("lc0py.tools.tune", "tune the flash-attention kernel's run-time parameters"),
    "attnbench": ("lc0py.tools.attnbench", "benchmark the general attention operator"),
}


# lc0's mode names -> (lc0py command, the extra defaults that mode sets); lc0's "bench" is its
# benchmark with a shorter plan (10 positions, 500 ms each: lc0's src/main.cc, tools/benchmark.cc)
ALIASES: dict[str, tuple[str, dict[str, object]]] = {
    "leela2onnx": ("export-onnx", {}),
    "bench": ("benchmark", {"short_plan": True}),
}

WEIGHTS_RULE = (
    "Networks, the same rule for every command: --weights FILE; --weights '<random>' is the built-in "
    "T82-shaped net with random weights; without --weights (lc0's '<autodiscover>') the net lc0 finds "
    "in its folders, else: backendbench and benchmark go on with '<random>' (said on stderr), every "
    "other command stops with one line. lc0's mode names work too: bench, leela2onnx."
)


def _load(module: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("lc0py"):
            return None  # command not built (yet) in this tree
        raise


class OneLineParser(argparse.ArgumentParser):
    """argparse with usage errors on one line (``lc0py uci: unrecognized arguments: --x``),
    exit status 2, like every other bad input; ``--help`` still prints the full usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="lc0py", description="Python inference engine for lc0 networks (attention-body and residual).",
        epilog=WEIGHTS_RULE,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log backend decisions")
    parser.add_argument("--version", action="version", version=f"lc0py v{__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        module = _load(module_name)
        if module is None:
            continue
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=WEIGHTS_RULE)
        module.add_arguments(p)
        p.set_defaults(_module=module)
    for alias, (target, defaults) in ALIASES.items():
        module_name, help_text = COMMANDS[target]
        module = _load(module_name)
        if module is None:
            continue
        text = f"lc0's name for {target}" + (" with lc0's short plan (10 positions x 500 ms)"
                                             if defaults.get("short_plan") else "")
        p = sub.add_parser(alias, help=text, description=f"{help_text} ({text})", epilog=WEIGHTS_RULE)
        module.add_arguments(p)
        p.set_defaults(_module=module, **defaults)
    return parser


def _unknown_command(word: str) -> Lc0pyError:
    """``lc0py evl``: one line with the nearest command names."""
    import difflib

    from lc0py.errors import UsageError

    names = [*COMMANDS, *ALIASES]
    guess = difflib.get_close_matches(word, names, 2)
    hint = f"; did you mean {' or '.join(repr(g) for g in guess)}?" if guess else ""
    return UsageError(f"unknown command '{word}'{hint} (commands: {', '.join(COMMANDS)}; "
                      f"lc0py with no command, or only flags, is the UCI engine)")


_TOP_FLAGS = ("-v", "--verbose")


def with_default_command(argv: list[str]) -> list[str]:
    """lc0's launch rule: without a command (nothing, or only flags) the UCI engine runs; the
    flags of the configuration file go in front of the UCI engine's own (the command line wins)."""
    i = 0
    while i < len(argv) and argv[i] in _TOP_FLAGS:
        i += 1
    if i < len(argv) and argv[i] in ("-h", "--help", "--version"):
        return argv
    if i < len(argv) and not argv[i].startswith("-") and argv[i] not in COMMANDS and argv[i] not in ALIASES:
        raise _unknown_command(argv[i])
    if i == len(argv) or (argv[i] not in COMMANDS and argv[i] not in ALIASES):
        argv = [*argv[:i], "uci", *argv[i:]]
    if argv[i] == "uci":
        from lc0py.uci.config import config_arguments

        argv = [*argv[: i + 1], *config_arguments(argv[i + 1 :]), *argv[i + 1 :]]
    return argv


def banner(args: argparse.Namespace) -> str:
    """What lc0 prints on stderr when it starts as an engine (its name and version line), for
    lc0py: name, version, what it is, and the net and backend when the command line names them."""
    line = f"lc0py v{__version__} (lc0-compatible UCI engine, Python)"
    weights = getattr(args, "opt_WeightsFile", None)
    backend = getattr(args, "opt_Backend", None)
    known = [f"{what} {value}" for what, value in (("weights", weights), ("backend", backend)) if value]
    return line + (f"; {', '.join(known)}" if known else "")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = with_default_command(given)
    except Lc0pyError as exc:
        print(f"lc0py: {exc}", file=sys.stderr)
        return exc.exit_code
    args = parser.parse_args(argv)
    if getattr(args, "command", None) == "uci" and "uci" not in given:  # bare lc0py: lc0's banner
        print(banner(args), file=sys.stderr, flush=True)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="lc0py: %(message)s",
        stream=sys.stderr,
    )
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args._module.run(args) or 0)
    except Lc0pyError as exc:
        print(f"lc0py: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
