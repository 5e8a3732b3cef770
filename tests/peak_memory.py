"""Peak resident memory of one process, measured so that a test can bound it.

``ru_maxrss`` is the wrong tool inside a test suite: a child created by fork + exec inherits its
parent's high-water mark (Linux keeps the larger of the two across exec), and RUSAGE_SELF of the
pytest process holds the peak of every test that ran before. ``VmHWM`` in ``/proc/PID/status`` is
the high-water mark of the process's own address space (reset by exec), and writing ``5`` to
``/proc/self/clear_refs`` resets it, so a bound applies to the code under test only.
"""

from __future__ import annotations

import resource
from pathlib import Path


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident set of process ``pid`` (its own address space) in MB; ``ru_maxrss`` where
    there is no /proc (only for ``self``)."""
    status = Path(f"/proc/{pid}/status")
    try:
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    if pid != "self":
        raise OSError(f"no peak RSS for process {pid}")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss() -> bool:
    """Start a new high-water mark for this process; False where the kernel offers no reset."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False
