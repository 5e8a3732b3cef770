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
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from lc0py.errors import UsageError
from lc0py.search.params import SearchParams

# lc0's one-letter flags (``-w net.pb.gz``)
SHORT_FLAGS = {
    "WeightsFile": "-w",
    "Backend": "-b",
    "BackendOptions": "-o",
    "Threads": "-t",
    "ConfigFile": "-c",
    "LogFile": "-l",
    "SyzygyPath": "-s",
}
MAX_THREADS = 128  # lc0's maximum

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
    check: Callable[[str, Any], None] | None = None  # extra validation: raises UsageError

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
        """Parse and validate ``text``; raises ``UsageError`` with lc0-like wording.

        The one place option values are checked (command line and ``setoption`` alike): type,
        range, finiteness (NaN/infinity are refused: NaN passes every range comparison), choices,
        and the option's own ``check``. The caller keeps the previous value on error.
        """
        value = self._parse(text)
        if self.check is not None:
            self.check(self.name, value)
        return value

    def _parse(self, text: str) -> Any:
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
            if not math.isfinite(num):
                raise UsageError(f"Option {self.name}: '{value}' is not a finite number")
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


def _writable_log(name: str, value: str) -> None:
    """A log file must be appendable: its folder exists and it is not a directory."""
    if not value:
        return
    folder = os.path.dirname(os.path.abspath(value))
    if os.path.isdir(value):
        raise UsageError(f"Option {name}: '{value}' is a directory")
    if not os.path.isdir(folder):
        raise UsageError(f"Option {name}: cannot write '{value}' (no directory '{folder}')")


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
    """All options, in the order ``uci`` prints them. Those that set a ``SearchParams`` field
    take their default from it (lc0's defaults are written once, in ``lc0py.search.params``)."""
    B, U = "backend", "uci"
    D = SearchParams()
    return [
        OptionSpec(
            "WeightsFile",
            "string",
            "<autodiscover>",
            "--weights",
            group=B,
            help="network file (.pb.gz); <autodiscover>: search lc0's folders; <random>: built-in random net",
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
            D.threads,
            "--threads",
            0,
            MAX_THREADS,
            group=B,
            param="threads",
            help="minibatches in flight at once, as lc0's search threads (0: the backend's choice "
            "as lc0: 1 on CPU backends, 2 on GPU backends): one thread gathers them, and those "
            "gathered while the device is busy go to it as one batch",
        ),
        OptionSpec(
            "NNCacheSize",
            "spin",
            D.nncache_size,
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
            D.minibatch_size,
            "--minibatch-size",
            0,
            1024,
            param="minibatch_size",
            help="leaves per network call (0: the backend's recommendation: numpy 7 as lc0's eigen, "
            "onnx-cpu 32, GPU 256)",
        ),
        OptionSpec("MaxPrefetch", "spin", D.max_prefetch, "--max-prefetch", 0, 1024, param="max_prefetch"),
        OptionSpec(
            "TaskWorkers",
            "spin",
            D.task_workers,
            "--task-workers",
            -1,
            128,
            param="task_workers",
            help="threads that extend a large pick round's leaves with the search thread (-1: lc0's rule, "
            "0 on a CPU backend, else min(cores / max(Threads - 1, 1) - 1, 4); 0: none)",
        ),
        _f("CPuct", D.cpuct, 0, 100, "--cpuct", "cpuct"),
        _f("CPuctAtRoot", D.cpuct_at_root, 0, 100, "--cpuct-at-root", "cpuct_at_root", hidden=True),
        _f("CPuctBase", D.cpuct_base, 1, 1e9, "--cpuct-base", "cpuct_base"),
        _f(
            "CPuctBaseAtRoot",
            D.cpuct_base_at_root,
            1,
            1e9,
            "--cpuct-base-at-root",
            "cpuct_base_at_root",
            hidden=True,
        ),
        _f("CPuctFactor", D.cpuct_factor, 0, 1000, "--cpuct-factor", "cpuct_factor"),
        _f(
            "CPuctFactorAtRoot",
            D.cpuct_factor_at_root,
            0,
            1000,
            "--cpuct-factor-at-root",
            "cpuct_factor_at_root",
            hidden=True,
        ),
        OptionSpec(
            "RootHasOwnCpuctParams",
            "check",
            D.root_has_own_cpuct_params,
            "--root-has-own-cpuct-params",
            hidden=True,
            param="root_has_own_cpuct_params",
        ),
        OptionSpec(
            "FpuStrategy",
            "combo",
            "absolute" if D.fpu_absolute else "reduction",
            "--fpu-strategy",
            choices=("reduction", "absolute"),
        ),
        _f("FpuValue", D.fpu_value, -100, 100, "--fpu-value", "fpu_value"),
        OptionSpec(
            "FpuStrategyAtRoot",
            "combo",
            D.fpu_strategy_at_root,
            "--fpu-strategy-at-root",
            choices=("reduction", "absolute", "same"),
            hidden=True,
            param="fpu_strategy_at_root",
        ),
        _f(
            "FpuValueAtRoot",
            D.fpu_value_at_root,
            -100,
            100,
            "--fpu-value-at-root",
            "fpu_value_at_root",
            hidden=True,
        ),
        _f(
            "PolicyTemperature",
            D.policy_softmax_temp,
            0.1,
            10,
            "--policy-softmax-temp",
            "policy_softmax_temp",
        ),
        OptionSpec("MultiPV", "spin", D.multipv, "--multipv", 1, 500, param="multipv"),
        OptionSpec("PerPVCounters", "check", False, "--per-pv-counters", group=U),
        OptionSpec(
            "VerboseMoveStats",
            "check",
            D.verbose_move_stats,
            "--verbose-move-stats",
            param="verbose_move_stats",
        ),
        OptionSpec("ScoreType", "combo", "WDL_mu", "--score-type", choices=SCORE_TYPES, group=U),
        OptionSpec("UCI_ShowWDL", "check", False, "--show-wdl", group=U),
        OptionSpec("UCI_ShowMovesLeft", "check", False, "--show-movesleft", group=U),
        OptionSpec("UCI_Chess960", "check", False, "--chess960", group=U),
        OptionSpec(
            "HistoryFill",
            "combo",
            D.history_fill,
            "--history-fill",
            choices=("no", "fen_only", "always"),
            param="history_fill",
        ),
        OptionSpec("TwoFoldDraws", "check", D.two_fold_draws, "--two-fold-draws", param="two_fold_draws"),
        # Move choice with temperature and root noise (lc0's hidden self-play options;
        # lc0py/search/temperature.py, core/noise.py)
        _f(
            "Temperature",
            D.temperature,
            0,
            100,
            "--temperature",
            "temperature",
            hidden=True,
            help="draw the move to play with visit counts ^ (1/T) (0: the best move)",
        ),
        OptionSpec(
            "TempDecayMoves",
            "spin",
            D.temp_decay_moves,
            "--tempdecay-moves",
            0,
            640,
            hidden=True,
            param="temp_decay_moves",
            help="lower the temperature linearly to 0 over this many moves",
        ),
        OptionSpec(
            "TempDecayDelayMoves",
            "spin",
            D.temp_decay_delay_moves,
            "--tempdecay-delay-moves",
            0,
            100,
            hidden=True,
            param="temp_decay_delay_moves",
            help="moves before the temperature decay starts",
        ),
        OptionSpec(
            "TempCutoffMove",
            "spin",
            D.temp_cutoff_move,
            "--temp-cutoff-move",
            0,
            1000,
            hidden=True,
            param="temp_cutoff_move",
            help="from this move on, TempEndgame is used (0: never)",
        ),
        _f(
            "TempEndgame",
            D.temp_endgame,
            0,
            100,
            "--temp-endgame",
            "temp_endgame",
            hidden=True,
            help="temperature from TempCutoffMove on, and the floor of the decay",
        ),
        _f(
            "TempValueCutoff",
            D.temp_value_cutoff,
            0,
            100,
            "--temp-value-cutoff",
            "temp_value_cutoff",
            hidden=True,
            help="moves more than this many win percent below the most visited are not drawn",
        ),
        _f(
            "TempVisitOffset",
            D.temp_visit_offset,
            -1000,
            1000,
            "--temp-visit-offset",
            "temp_visit_offset",
            hidden=True,
            help="added to every move's visits before the temperature weights",
        ),
        _f(
            "DirichletNoiseEpsilon",
            D.noise_epsilon,
            0,
            1,
            "--noise-epsilon",
            "noise_epsilon",
            hidden=True,
            help="share of Dirichlet noise mixed into the root's priors when it is evaluated",
        ),
        _f(
            "DirichletNoiseAlpha",
            D.noise_alpha,
            0,
            10000000,
            "--noise-alpha",
            "noise_alpha",
            hidden=True,
            help="alpha of the Dirichlet noise (larger: flatter)",
        ),
        OptionSpec(
            "StickyEndgames", "check", D.sticky_endgames, "--sticky-endgames", param="sticky_endgames"
        ),
        OptionSpec(
            "OutOfOrderEval", "check", D.out_of_order_eval, "--out-of-order-eval", param="out_of_order_eval"
        ),
        _f(
            "MaxOutOfOrderEvalsFactor",
            D.max_out_of_order_evals_factor,
            0,
            100,
            "--max-out-of-order-evals-factor",
            "max_out_of_order_evals_factor",
        ),
        OptionSpec(
            "MaxCollisionVisits",
            "spin",
            D.max_collision_visits,
            "--max-collision-visits",
            1,
            100000000,
            param="max_collision_visits",
        ),
        OptionSpec(
            "MaxCollisionVisitsScalingStart",
            "spin",
            D.max_collision_visits_scaling_start,
            "--max-collision-visits-scaling-start",
            1,
            100000,
            param="max_collision_visits_scaling_start",
        ),
        OptionSpec(
            "MaxCollisionVisitsScalingEnd",
            "spin",
            D.max_collision_visits_scaling_end,
            "--max-collision-visits-scaling-end",
            0,
            100000000,
            param="max_collision_visits_scaling_end",
        ),
        _f(
            "MaxCollisionVisitsScalingPower",
            D.max_collision_visits_scaling_power,
            0.01,
            100,
            "--max-collision-visits-scaling-power",
            "max_collision_visits_scaling_power",
        ),
        _f(
            "MovesLeftMaxEffect",
            D.moves_left_max_effect,
            0,
            1,
            "--moves-left-max-effect",
            "moves_left_max_effect",
        ),
        _f(
            "MovesLeftThreshold",
            D.moves_left_threshold,
            0,
            1,
            "--moves-left-threshold",
            "moves_left_threshold",
        ),
        _f("MovesLeftSlope", D.moves_left_slope, 0, 1, "--moves-left-slope", "moves_left_slope"),
        _f(
            "MovesLeftConstantFactor",
            D.moves_left_constant_factor,
            -1,
            1,
            "--moves-left-constant-factor",
            "moves_left_constant_factor",
        ),
        _f(
            "MovesLeftScaledFactor",
            D.moves_left_scaled_factor,
            -2,
            2,
            "--moves-left-scaled-factor",
            "moves_left_scaled_factor",
        ),
        _f(
            "MovesLeftQuadraticFactor",
            D.moves_left_quadratic_factor,
            -2,
            2,
            "--moves-left-quadratic-factor",
            "moves_left_quadratic_factor",
        ),
        _f("DrawScore", D.draw_score, -1, 1, "--draw-score", "draw_score"),
        # Opponent-aware play (lc0 0.32's contempt; lc0py/uci/contempt.py), same order as lc0.
        OptionSpec(
            "ContemptMode",
            "combo",
            "play",
            "--contempt-mode",
            choices=("play", "white_side_analysis", "black_side_analysis", "disable"),
            help="which side the contempt favours: play (the engine's), white/black (analysis), disable",
        ),
        OptionSpec(
            "Contempt",
            "string",
            "",
            "--contempt",
            help="simulated Elo advantage: 'N' and/or 'name=N' entries matched against UCI_Opponent",
        ),
        _f("ContemptMaxValue", 420.0, 0, 10000, "--contempt-max-value", hidden=True),
        _f("WDLCalibrationElo", 0.0, 0, 10000, "--wdl-calibration-elo"),
        _f("WDLContemptAttenuation", 1.0, -10, 10, "--wdl-contempt-attenuation", hidden=True),
        _f("WDLMaxS", D.wdl_max_s, 0, 10, "--wdl-max-s", "wdl_max_s", hidden=True),
        _f("WDLEvalObjectivity", 1.0, 0, 1, "--wdl-eval-objectivity"),
        _f("WDLDrawRateTarget", 0.0, 0, 0.999, "--wdl-draw-rate-target", hidden=True),
        _f("WDLDrawRateReference", 0.5, 0.001, 0.999, "--wdl-draw-rate-reference"),
        _f("WDLBookExitBias", 0.65, -2, 2, "--wdl-book-exit-bias", hidden=True),
        OptionSpec(
            "UCI_Opponent", "string", "", None, help="the GUI's 'title elo type name' of the opponent"
        ),
        _f("UCI_RatingAdv", 0.0, -10000, 10000, None),
        _f(
            "SmartPruningFactor",
            D.smart_pruning_factor,
            0,
            10,
            "--smart-pruning-factor",
            "smart_pruning_factor",
            group=U,
        ),
        OptionSpec("MoveOverheadMs", "spin", 200, "--move-overhead", 0, 100000000, group=U),
        OptionSpec("TimeManager", "string", "legacy", "--time-manager", group=U),
        OptionSpec("Ponder", "check", False, "--ponder", group=U),
        OptionSpec(
            "SyzygyPath",
            "string",
            "",
            "--syzygy-paths",
            group=B,
            help="Syzygy tablebase folders, separated by ':' (';' on Windows)",
        ),
        OptionSpec(
            "SyzygyFastPlay",
            "check",
            False,
            "--syzygy-fast-play",
            help="with DTZ tables, only the winning moves with the shortest DTZ",
        ),
        OptionSpec("LogFile", "string", "", "--logfile", group=U, check=_writable_log),
        OptionSpec(
            "ConfigFile", "string", "lc0.config", "--config", group=U, help="flags file read at start-up"
        ),
        OptionSpec(
            "SearchOverlap",
            "check",
            D.overlap,
            "--search-overlap",
            param="overlap",
            help="lc0py: gather the next minibatch while the backend evaluates",
        ),
        OptionSpec(
            "RamLimitMb",
            "spin",
            0,
            "--ramlimit-mb",
            0,
            100000000,
            group=U,
            help="stop the search before the tree and NN cache take more than this many MB (0: no limit)",
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
        value = s.convert(text)
        if s.name == "TimeManager" and not str(value).strip().lower().startswith("legacy"):
            # lc0 has more managers; lc0py has lc0's default only, so say so rather than ignore it
            raise UsageError(f"Option TimeManager: '{text}' is not available (lc0py implements 'legacy')")
        self.values[s.name] = value
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
        if self.values.get("Threads") == 1:  # one search thread: no gathering while evaluating
            params.overlap = False
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
            if s.name in SHORT_FLAGS:
                flags.insert(0, SHORT_FLAGS[s.name])
            parser.add_argument(*flags, **kwargs)
            if s.kind == "check":  # lc0's --[no-]flag
                parser.add_argument(
                    "--no-" + s.flag[2:],
                    dest="opt_" + s.name,
                    action="store_const",
                    const="false",
                    help=argparse.SUPPRESS,
                )

    def apply_args(self, args: argparse.Namespace) -> None:
        """Take the values given on the command line (``UsageError`` on a bad one)."""
        for s in self.specs:
            value = getattr(args, "opt_" + s.name, None)
            if value is not None:
                self.set(s.name, str(value))
