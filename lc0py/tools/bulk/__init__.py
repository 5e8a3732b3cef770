"""Evaluating files of positions and games at scale: ``lc0py bulk-eval`` and :func:`evaluate_file`.

``job`` (plan, evaluate, write, check, resume), ``sources`` (inputs cut into chunks),
``compiled``/``encoder`` (text to planes, outputs to policies), ``writers`` (JSONL/Parquet parts),
``ray_job`` (the same chunks as Ray tasks on actors, one per device).
"""

from lc0py.tools.bulk.job import JobSummary, evaluate_file

__all__ = ["JobSummary", "evaluate_file"]
