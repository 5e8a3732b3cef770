"""Search parameters with lc0's defaults (``src/search/classic/params.cc``, docs/uci-and-tools.md §4).

One frozen-ish dataclass that the UCI option table and the benchmark fill in; the search reads
it once per search, so changing an option between moves takes effect at the next ``go``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lc0py.backends.base import BackendInfo


@dataclass
class SearchParams:
    """Knobs of the classic MCTS. Names follow lc0's options in snake case."""

    cpuct: float = 1.745
    cpuct_base: float = 38739.0
    cpuct_factor: float = 3.894
    root_has_own_cpuct_params: bool = False
    cpuct_at_root: float = 1.745
    cpuct_base_at_root: float = 38739.0
    cpuct_factor_at_root: float = 3.894
    fpu_absolute: bool = False  # FpuStrategy: reduction (False) / absolute (True)
    fpu_value: float = 0.330
    fpu_strategy_at_root: str = "same"  # same / reduction / absolute
    fpu_value_at_root: float = 1.0
    policy_softmax_temp: float = 1.359
    minibatch_size: int = 0  # 0: the backend's recommended batch
    max_prefetch: int = 32  # lc0's MaxPrefetch: short batches are topped up into the NN cache
    max_collision_visits: int = 80000
    max_collision_visits_scaling_start: int = 28
    max_collision_visits_scaling_end: int = 145000
    max_collision_visits_scaling_power: float = 1.25
    max_out_of_order_evals_factor: float = 2.4
    out_of_order_eval: bool = True
    two_fold_draws: bool = True
    sticky_endgames: bool = True
    draw_score: float = 0.0  # white's point of view
    multipv: int = 1
    smart_pruning_factor: float = 1.33
    moves_left_max_effect: float = 0.0345
    moves_left_threshold: float = 0.8
    moves_left_slope: float = 0.0027
    moves_left_constant_factor: float = 0.0
    moves_left_scaled_factor: float = 1.6521
    moves_left_quadratic_factor: float = -0.6521
    history_fill: str = "fen_only"
    nncache_size: int = 2000000
    overlap: bool = True  # gather the next minibatch while the backend evaluates (lc0py only)
    # lc0's Threads: minibatches whose visits may be in flight at once (0: auto, as 2; see
    # worker.batches_in_flight). One thread gathers them; those gathered while the device is
    # busy go to it as one batch, as lc0's multiplexing backend joins its threads' batches.
    threads: int = 0
    # lc0's task workers of a search thread (``TaskWorkers``; -1: lc0's rule, see
    # ``worker.task_workers``): a pick round with at least ``minimum_processing_work`` leaves
    # (``MinimumProcessingWork``) is extended in parallel, at least ``minimum_per_task_processing``
    # (``MinimumPerTaskProcessing``) per task; 0 workers: the serial path
    task_workers: int = -1
    minimum_processing_work: int = 20
    minimum_per_task_processing: int = 8
    verbose_move_stats: bool = False
    # lc0's WDL rescaling of every NN evaluation (contempt, draw-rate sharpening; issue 12): the
    # search applies lc0py.search.wdl_rescale with these; the UCI layer computes them.
    wdl_rescale_ratio: float = 1.0
    wdl_rescale_diff: float = 0.0  # 0 when the contempt is disabled
    wdl_max_s: float = 1.4
    contempt_root_side: bool = True  # the contempt favours the root's side to move (else the other)
    # Move choice with temperature (lc0's EnsureBestMoveKnown / GetBestRootChildWithTemperature)
    temperature: float = 0.0
    temp_decay_moves: int = 0
    temp_decay_delay_moves: int = 0
    temp_cutoff_move: int = 0
    temp_endgame: float = 0.0
    temp_value_cutoff: float = 100.0  # in win percent below the most visited move
    temp_visit_offset: float = 0.0
    # Dirichlet noise on the root's priors when the root is evaluated (lc0's ApplyDirichletNoise)
    noise_epsilon: float = 0.0
    noise_alpha: float = 0.3
    # lc0py only: seed of the temperature and noise draws (None: fresh entropy each search, as
    # lc0's Random); tests and reproducible self-play set it
    random_seed: int | None = None


def effective_params(params: SearchParams, info: BackendInfo) -> SearchParams:
    """``params`` with lc0's backend-dependent defaults filled in where the user left 0, as lc0
    0.32.1 does (``Threads`` 0: the backend's suggestion; ``MinibatchSize`` 0: its recommended
    size): on a CPU backend one search thread (no second minibatch gathered while the backend
    computes) and its search minibatch (numpy: 7, lc0 eigen's); elsewhere unchanged (two
    minibatches in flight of the backend's recommended batch). Values the user set are kept."""
    if not getattr(info, "runs_on_cpu", False):  # test doubles may carry older infos
        return params
    changes: dict[str, object] = {}
    if params.threads == 0:
        changes.update(threads=1, overlap=False)
    minibatch = int(getattr(info, "search_minibatch", 0))
    if params.minibatch_size == 0 and minibatch:
        changes["minibatch_size"] = minibatch
    return replace(params, **changes) if changes else params  # type: ignore[arg-type]
