"""The runner's host-side logic without a GPU."""

from __future__ import annotations

import threading

from lc0py.backends.gpu.runner import wait_without_gil


class _DeviceEvent:
    """An event completed by another thread; ``synchronize`` must only be reached once it is."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.polls = 0

    def query(self) -> bool:
        self.polls += 1
        return self.done.is_set()

    def synchronize(self) -> None:
        assert self.done.is_set(), "blocked in synchronize (a binding may hold the GIL there)"


def test_wait_polls_until_done_and_lets_other_threads_run() -> None:
    ev = _DeviceEvent()
    progress: list[int] = []

    def other_thread() -> None:  # Python work that must go on while the waiter waits
        for i in range(200):
            progress.append(i)
        ev.done.set()

    t = threading.Thread(target=other_thread)
    t.start()
    wait_without_gil(ev)  # type: ignore[arg-type]
    t.join(120)
    assert len(progress) == 200 and ev.done.is_set() and ev.polls >= 1
