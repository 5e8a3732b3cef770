"""Evaluating files of positions and games at scale: ``lc0py bulk-eval`` and :func:`evaluate_file`.

``job`` (plan, evaluate, write, check, resume), ``sources`` (inputs cut into chunks),
``lc0py.chess.core.records``/``record_batch`` (text to planes, outputs to policies), ``writers``
(JSONL/Parquet parts),
``ray_job`` (the same chunks as Ray tasks on actors, one per device). Imported lazily: the writer
processes import ``writers`` alone.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JobSummary", "evaluate_file"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from lc0py.tools.bulk import job

        return getattr(job, name)
    raise AttributeError(name)
