"""``TaskPool``: the task workers' threads run each job once, hand back its exception, and end."""

from __future__ import annotations

import threading

import pytest

from lc0py.search.taskpool import TaskPool


def test_jobs_run_on_their_threads_and_errors_come_back() -> None:
    pool = TaskPool(3)
    seen: list[tuple[int, str]] = []
    lock = threading.Lock()

    def job(k: int) -> None:
        with lock:
            seen.append((k, threading.current_thread().name))

    for _ in range(50):
        for k in range(3):
            pool.start(k, lambda k=k: job(k))
        for k in range(3):
            pool.wait(k)
    assert len(seen) == 150
    assert {name for k, name in seen if k == 1} == {"lc0py-task-1"}

    def fail() -> None:
        raise ValueError("task failed")

    pool.start(2, fail)
    with pytest.raises(ValueError, match="task failed"):
        pool.wait(2)
    pool.start(2, lambda: job(2))  # the thread lives on after a failed job
    pool.wait(2)
    assert seen[-1][0] == 2
    pool.close()
    pool.close()
    assert not any(t.is_alive() for t in pool._threads)
