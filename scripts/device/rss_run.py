"""Run a command and sample the resident memory of its whole process tree (scripts/device/scaling).

    python3 scripts/device/rss_run.py RSS_FILE -- CMD ARG...

Prints the command's last stdout line (its --json summary) on stdout; writes the peak RSS of the
tree (the command, its worker/writer processes, a local Ray cluster's raylet and actors), summed
over its processes at each 0.5 s sample, to RSS_FILE. Exits with the command's status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def tree_rss(root: int) -> tuple[int, int]:
    """Bytes resident in ``root`` and every process below it, and how many processes."""
    parents, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
            parents[int(pid)] = int(stat[1])
            rss[int(pid)] = int(stat[21]) * page
        except (OSError, IndexError, ValueError):
            pass

    def under(p: int) -> bool:
        while p > 1:
            if p == root:
                return True
            p = parents.get(p, 0)
        return False

    members = [p for p in rss if under(p)]
    return sum(rss[p] for p in members), len(members)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: rss_run.py RSS_FILE -- CMD ARG...", file=sys.stderr)
        return 2
    rss_file, cmd = argv[0], argv[2:]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peak = procs = 0
    while proc.poll() is None:
        total, count = tree_rss(proc.pid)
        peak, procs = max(peak, total), max(procs, count)
        time.sleep(0.5)
    out = proc.stdout.read() if proc.stdout else ""
    with open(rss_file, "w") as f:
        f.write(f"{peak / 2**30:.2f} GiB peak RSS of the job's {procs} processes together\n")
    print(out.strip().splitlines()[-1] if out.strip() else "{}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
