"""Session set-up shared by every test: the compiled search core, loaded (or compiled) once.

The engine tests start ``lc0py`` processes under hang guards. On a fresh checkout the first of
them would compile the numba core (a minute or two on a loaded 2-core CI machine) inside its
guard, and guards expired that way. So, before any test runs:

* every process of the session (this one and the engines the tests start, whatever
  ``LC0PY_CACHE_DIR`` a test gives them) uses one compiled-code cache: ``LC0PY_NUMBA_CACHE``
  is set to the folder lc0py would use here;
* when the collected tests include any that search, the core is compiled into it (and loaded
  here) by ``warm_up()``, with a line saying how long that took.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

#: test folders whose tests run the search (in this process or in an engine they start)
SEARCHING = ("api", "cli", "fuzz", "search", "tools", "uci")


def pytest_configure(config: pytest.Config) -> None:
    from lc0py.storage.compiled import ENV, numba_cache_root

    if ENV not in os.environ:
        root = numba_cache_root()
        os.environ[ENV] = str(root) if root is not None else "off"


def _searches(item: pytest.Item) -> bool:
    try:
        rel = Path(str(item.path)).resolve().relative_to(ROOT)
    except ValueError:
        return False
    return len(rel.parts) > 1 and rel.parts[0] in SEARCHING


def pytest_collection_finish(session: pytest.Session) -> None:
    if os.environ.get("NUMBA_DISABLE_JIT") == "1" or not any(_searches(i) for i in session.items):
        return
    from lc0py.backends.random_backend import RandomBackend
    from lc0py.search.warmup import is_cached, warm_up

    cold = not is_cached()
    start = time.perf_counter()
    warm_up()
    RandomBackend().close()  # its compiled hash too (the engines' --backend random)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and cold:
        reporter.write_line(
            f"conftest: search core compiled (or loaded) in {time.perf_counter() - start:.0f} s "
            f"({os.environ.get('LC0PY_NUMBA_CACHE')}), before the tests and their hang guards"
        )
