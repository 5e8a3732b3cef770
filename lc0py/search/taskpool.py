"""Persistent threads for lc0's task workers, handed work through two locks each.

A ``ThreadPoolExecutor`` round trip (a ``Future``, its condition, the work queue) costs tens of
microseconds a task in Python; a parallel pick round is worth ~100 us of extension. Here each
thread waits on its own ``go`` lock and answers on its own ``done`` lock: a hand-off is one
release and one acquire on each side (``scripts/bench/task_handoff.py`` times both).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class TaskPool:
    """``size`` daemon threads; ``start(k, job)`` runs ``job()`` on thread ``k``, ``wait(k)``
    waits for it and raises what it raised. One caller at a time."""

    def __init__(self, size: int, name: str = "lc0py-task") -> None:
        self._jobs: list[Callable[[], object] | None] = [None] * size
        self._errors: list[BaseException | None] = [None] * size
        self._go = [threading.Lock() for _ in range(size)]
        self._done = [threading.Lock() for _ in range(size)]
        for lock in self._go + self._done:
            lock.acquire()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._loop, args=(k,), name=f"{name}-{k}", daemon=True)
            for k in range(size)
        ]
        for t in self._threads:
            t.start()

    def _loop(self, k: int) -> None:
        go, done = self._go[k], self._done[k]
        while True:
            go.acquire()
            job = self._jobs[k]
            if job is None:
                done.release()
                return
            try:
                job()
            except BaseException as exc:  # handed to the caller by wait()
                self._errors[k] = exc
            done.release()

    def start(self, k: int, job: Callable[[], object]) -> None:
        self._jobs[k] = job
        self._go[k].release()

    def wait(self, k: int) -> None:
        self._done[k].acquire()
        self._jobs[k] = None
        error = self._errors[k]
        if error is not None:
            self._errors[k] = None
            raise error

    def close(self) -> None:
        """End the threads (each finishes its job first); a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        for k in range(len(self._threads)):
            self._jobs[k] = None
            self._go[k].release()
        for t in self._threads:
            t.join()
