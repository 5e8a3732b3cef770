"""One option table for the UCI engine and the benchmark: CLI flag + UCI name + type + default.

Names, defaults and ranges are lc0's (docs/uci-and-tools.md §4). Each option prints its ``option``
line the way lc0 does (floats are ``type string`` with a C ``%f`` default), can be set from the
command line (``--cpuct 2.5``, ``--show-wdl``, ``--show-wdl=false``) and by ``setoption``
(names case-insensitive). ``Options.search_params()`` turns the values into ``SearchParams``.

Groups: ``backend`` (weights/backend/cache), ``search`` (MCTS), ``uci`` (time management, output,
pondering — not registered by ``benchmark``, as in lc0).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lc0py.errors import UsageError
from lc0py.search.params import SearchParams

_TRUE = {"true", "1", "on", "yes"}
_FALSE = {"false", "0", "off", "no"}

SCORE_TYPES = (
    "centipawn",
    "centipawn_with_drawscore",
    "centipawn_2019",
    "centipawn_2018",
    "win_percentage",
    "Q",
    "W-L",
    "WDL_mu",
)


@dataclass(frozen=True)
class OptionSpec:
    """One option. ``kind``: check / spin / float / combo / string."""

    name: str
    kind: str
    default: Any
    flag: str | None = None
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    hidden: bool = False
    group: str = "search"
    param: str | None = None  # SearchParams field
    help: str = ""

    def uci_line(self) -> str:
        """The ``option name ...`` line as lc0 prints it."""
        head = f"option name {self.name} type "
        if self.kind == "check":
            return head + f"check default {'true' if self.default else 'false'}"
        if self.kind == "spin":
            return head + f"spin default {self.default} min {int(self.lo or 0)} max {int(self.hi or 0)}"
        if self.kind == "combo":
            return head + f"combo default {self.default}" + "".join(f" var {c}" for c in self.choices)
        if self.kind == "float":
            return head + "string default %f" % self.default  # noqa: UP031 - C's %f, as lc0
        return head + f"string default {self.default}"

    def convert(self, text: str) -> Any:
        """Parse and validate ``text``; raises ``UsageError`` with lc0-like wording."""
        value = text.strip()
        if self.kind == "check":
            v = value.lower()
            if v in _TRUE:
                return True
            if v in _FALSE:
                return False
            raise UsageError(f"Option {self.name}: '{text}' is not true or false")
        if self.kind in ("spin", "float"):
            try:
                num: float = int(value) if self.kind == "spin" else float(value)
            except ValueError:
                what = "an integer" if self.kind == "spin" else "a number"
                raise UsageError(f"Option {self.name}: '{text}' is not {what}") from None
            if (self.lo is not None and num < self.lo) or (self.hi is not None and num > self.hi):
                lo, hi = _fmt(self.lo), _fmt(self.hi)
                raise UsageError(f"Option {self.name}: {value} is out of range [{lo}, {hi}]")
            return num
        if self.kind == "combo":
            for c in self.choices:
                if c.lower() == value.lower():
                    return c
            raise UsageError(f"Option {self.name}: '{text}' is not one of {', '.join(self.choices)}")
        return text if text != "<empty>" else ""


def _fmt(x: float | None) -> str:
    if x is None:
        return "-inf"
    return str(int(x)) if float(x).is_integer() else str(x)


def _f(
    name: str,
    default: float,
    lo: float,
    hi: float,
    flag: str | None = None,
    param: str | None = None,
    hidden: bool = False,
    group: str = "search",
    help: str = "",
) -> OptionSpec:
    return OptionSpec(
        name, "float", default, flag, lo, hi, hidden=hidden, group=group, param=param, help=help
    )


def _backend_choices() -> tuple[str, ...]:
    try:
        from lc0py.backends.registry import AUTO, backend_names

        return (AUTO, *backend_names())
    except Exception:  # registry import problems must not break `uci`
        return ("auto", "numpy", "random")


def build_table() -> list[OptionSpec]:
    """All options, in the order ``uci`` prints them."""
    B, U = "backend", "uci"
    return [
        OptionSpec(
            "WeightsFile", "string", "<autodiscover>", "--weights", group=B, help="network file (.pb.gz)"
        ),
        OptionSpec(
            "Backend",
            "combo",
            "auto",
            "--backend",
            choices=_backend_choices(),
            group=B,
            help="backend name (auto: the best one available)",
        ),
        OptionSpec("BackendOptions", "string", "", "--backend-opts", group=B, help="key=value,key=value"),
        OptionSpec(
            "Threads",
            "spin",
            0,
            "--threads",
            0,
            128,
            group=B,
            help="accepted for compatibility; lc0py searches with one worker + overlap",
        ),
        OptionSpec(
            "NNCacheSize",
            "spin",
            2000000,
            "--nncache",
            0,
            999999999,
            group=B,
            param="nncache_size",
            help="NN cache entries",
        ),
        OptionSpec(
            "MinibatchSize",
            "spin",
            0,
            "--minibatch-size",
            0,
            1024,
            param="minibatch_size",
            help="leaves per network call (0: backend's recommendation)",
        ),
        OptionSpec("MaxPrefetch", "spin", 32, "--max-prefetch", 0, 1024, param="max_prefetch"),
        _f("CPuct", 1.745, 0, 100, "--cpuct", "cpuct"),
        _f("CPuctAtRoot", 1.745, 0, 100, "--cpuct-at-root", "cpuct_at_root", hidden=True),
        _f("CPuctBase", 38739.0, 1, 1e9, "--cpuct-base", "cpuct_base"),
        _f("CPuctBaseAtRoot", 38739.0, 1, 1e9, "--cpuct-base-at-root", "cpuct_base_at_root", hidden=True),
        _f("CPuctFactor", 3.894, 0, 1000, "--cpuct-factor", "cpuct_factor"),
        _f(
            "CPuctFactorAtRoot", 3.894, 0, 1000, "--cpuct-factor-at-root", "cpuct_factor_at_root", hidden=True
        ),
        OptionSpec(
            "RootHasOwnCpuctParams",
            "check",
            False,
            "--root-has-own-cpuct-params",
            hidden=True,
            param="root_has_own_cpuct_params",
        ),
        OptionSpec("FpuStrategy", "combo", "reduction", "--fpu-strategy", choices=("reduction", "absolute")),
        _f("FpuValue", 0.330, -100, 100, "--fpu-value", "fpu_value"),
        OptionSpec(
            "FpuStrategyAtRoot",
            "combo",
            "same",
            "--fpu-strategy-at-root",
            choices=("reduction", "absolute", "same"),
            hidden=True,
            param="fpu_strategy_at_root",
        ),
        _f("FpuValueAtRoot", 1.0, -100, 100, "--fpu-value-at-root", "fpu_value_at_root", hidden=True),
        _f("PolicyTemperature", 1.359, 0.1, 10, "--policy-softmax-temp", "policy_softmax_temp"),
        OptionSpec("MultiPV", "spin", 1, "--multipv", 1, 500, param="multipv"),
        OptionSpec("PerPVCounters", "check", False, "--per-pv-counters", group=U),
        OptionSpec("VerboseMoveStats", "check", False, "--verbose-move-stats", param="verbose_move_stats"),
        OptionSpec("ScoreType", "combo", "WDL_mu", "--score-type", choices=SCORE_TYPES, group=U),
        OptionSpec("UCI_ShowWDL", "check", False, "--show-wdl", group=U),
        OptionSpec("UCI_ShowMovesLeft", "check", False, "--show-movesleft", group=U),
        OptionSpec("UCI_Chess960", "check", False, "--chess960", group=U),
        OptionSpec(
            "HistoryFill",
            "combo",
            "fen_only",
            "--history-fill",
            choices=("no", "fen_only", "always"),
            param="history_fill",
        ),
        OptionSpec("TwoFoldDraws", "check", True, "--two-fold-draws", param="two_fold_draws"),
        OptionSpec("StickyEndgames", "check", True, "--sticky-endgames", param="sticky_endgames"),
        OptionSpec("OutOfOrderEval", "check", True, "--out-of-order-eval", param="out_of_order_eval"),
        _f(
            "MaxOutOfOrderEvalsFactor",
            2.4,
            0,
            100,
            "--max-out-of-order-evals-factor",
            "max_out_of_order_evals_factor",
        ),
        OptionSpec(
            "MaxCollisionVisits",
            "spin",
            80000,
            "--max-collision-visits",
            1,
            100000000,
            param="max_collision_visits",
        ),
        OptionSpec(
            "MaxCollisionVisitsScalingStart",
            "spin",
            28,
            "--max-collision-visits-scaling-start",
            1,
            100000,
            param="max_collision_visits_scaling_start",
        ),
        OptionSpec(
            "MaxCollisionVisitsScalingEnd",
            "spin",
            145000,
            "--max-collision-visits-scaling-end",
            0,
            100000000,
            param="max_collision_visits_scaling_end",
        ),
        _f(
            "MaxCollisionVisitsScalingPower",
            1.25,
            0.01,
            100,
            "--max-collision-visits-scaling-power",
            "max_collision_visits_scaling_power",
        ),
        _f("MovesLeftMaxEffect", 0.0345, 0, 1, "--moves-left-max-effect", "moves_left_max_effect"),
        _f("MovesLeftThreshold", 0.8, 0, 1, "--moves-left-threshold", "moves_left_threshold"),
        _f("MovesLeftSlope", 0.0027, 0, 1, "--moves-left-slope", "moves_left_slope"),
        _f(
            "MovesLeftConstantFactor",
            0.0,
            -1,
            1,
            "--moves-left-constant-factor",
            "moves_left_constant_factor",
        ),
        _f("MovesLeftScaledFactor", 1.6521, -2, 2, "--moves-left-scaled-factor", "moves_left_scaled_factor"),
        _f(
            "MovesLeftQuadraticFactor",
            -0.6521,
            -2,
            2,
            "--moves-left-quadratic-factor",
            "moves_left_quadratic_factor",
        ),
        _f("DrawScore", 0.0, -1, 1, "--draw-score", "draw_score"),
        _f("SmartPruningFactor", 1.33, 0, 10, "--smart-pruning-factor", "smart_pruning_factor", group=U),
        OptionSpec("MoveOverheadMs", "spin", 200, "--move-overhead", 0, 100000000, group=U),
        OptionSpec("TimeManager", "string", "legacy", "--time-manager", group=U),
        OptionSpec("Ponder", "check", False, "--ponder", group=U),
        OptionSpec("SyzygyPath", "string", "", "--syzygy-paths", group=B, help="accepted; not used yet"),
        OptionSpec("LogFile", "string", "", "--logfile", group=U),
        OptionSpec(
            "SearchOverlap",
            "check",
            True,
            "--search-overlap",
            param="overlap",
            help="lc0py: gather the next minibatch while the backend evaluates",
        ),
        OptionSpec(
            "FastMath",
            "check",
            False,
            "--fast-math",
            hidden=True,
            param="fast_math",
            help="lc0py: lc0's FastExp in the policy softmax (bit-exact priors)",
        ),
    ]


class Options:
    """Current option values, keyed by canonical name; look-ups are case-insensitive."""

    def __init__(self, groups: Iterable[str] = ("backend", "search", "uci")) -> None:
        self.specs = [s for s in build_table() if s.group in set(groups)]
        self._by_lower = {s.name.lower(): s for s in self.specs}
        self.values: dict[str, Any] = {s.name: s.default for s in self.specs}
        self.changed: set[str] = set()

    def spec(self, name: str) -> OptionSpec:
        s = self._by_lower.get(name.strip().lower())
        if s is None:
            raise UsageError(f"Unknown option: {name.strip()}")
        return s

    def set(self, name: str, text: str) -> str:
        """``setoption``: validate and store; returns the canonical name."""
        s = self.spec(name)
        self.values[s.name] = s.convert(text)
        self.changed.add(s.name)
        return s.name

    def __getitem__(self, name: str) -> Any:
        return self.values[self.spec(name).name]

    def uci_lines(self, show_hidden: bool = False) -> list[str]:
        return [s.uci_line() for s in self.specs if show_hidden or not s.hidden]

    def search_params(self) -> SearchParams:
        params = SearchParams()
        for s in self.specs:
            if s.param:
                setattr(params, s.param, self.values[s.name])
        params.fpu_absolute = self.values.get("FpuStrategy", "reduction") == "absolute"
        return params

    # --- command line ---------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """One flag per option with a flag (``dest`` = the option name)."""
        for s in self.specs:
            if not s.flag:
                continue
            text = s.help or f"UCI option {s.name}"
            default_text = "%f" % s.default if s.kind == "float" else s.default  # noqa: UP031
            kwargs: dict[str, Any] = {
                "dest": "opt_" + s.name,
                "default": None,
                "metavar": "VALUE",
                "help": f"{text} (UCI {s.name}, default {default_text})",
            }
            if s.kind == "check":
                kwargs.update(nargs="?", const="true")
            flags = [s.flag]
            if s.name == "WeightsFile":
                flags.append("-w")
            elif s.name == "Backend":
                flags.append("-b")
            elif s.name == "BackendOptions":
                flags.append("-o")
            parser.add_argument(*flags, **kwargs)

    def apply_args(self, args: argparse.Namespace) -> None:
        """Take the values given on the command line (``UsageError`` on a bad one)."""
        for s in self.specs:
            value = getattr(args, "opt_" + s.name, None)
            if value is not None:
                self.set(s.name, str(value))
