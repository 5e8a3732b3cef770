#!/usr/bin/env python
"""Name the search core's compiled functions in ``perf`` profiles.

numba's machine code lives in anonymous memory, so ``perf report`` shows it as ``[JIT]`` addresses.
This runs a Python script (and its arguments) in this process and, when it exits, writes
``/tmp/perf-<pid>.map`` (the format ``perf`` reads for JIT code): the address and name of every
numba-compiled function the process holds (its native entry and its Python wrapper), and of numba's
reference-count functions ``NRT_incref``/``NRT_decref``. Sizes are the distance to the next known
address, so a sample between two functions is given to the lower one. Functions inlined into others
are counted in their caller.

    perf record -F 4000 -o /tmp/perf.data python scripts/bench/perf_numba_map.py \\
        scripts/bench/search_timeline.py -w maia-1900.pb.gz -b sim-gpu --delay-ms 0.25
    perf report -i /tmp/perf.data --no-children --sort sym

Run it with the core already compiled (a warm cache) so that the profile is the search, not the
compile. It is how docs/performance.md §4 found numba's reference counting beside the gather.
"""

from __future__ import annotations

import atexit
import gc
import os
import runpy
import sys


def _entries() -> list[tuple[int, str]]:
    from numba.core.registry import CPUDispatcher
    from numba.core.runtime import nrt

    found: set[tuple[int, str]] = set()
    for obj in gc.get_objects():
        if not isinstance(obj, CPUDispatcher):
            continue
        for result in obj.overloads.values():
            fndesc = result.fndesc
            for symbol in (fndesc.llvm_func_name, fndesc.llvm_cpython_wrapper_name):
                try:
                    address = result.library.get_pointer_to_function(symbol)
                except Exception:  # noqa: BLE001 - a symbol the library does not export
                    continue
                if address:
                    wrapper = "cpython." if symbol == fndesc.llvm_cpython_wrapper_name else ""
                    found.add((int(address), f"{wrapper}{fndesc.modname}.{fndesc.qualname}"))
    for symbol in ("NRT_incref", "NRT_decref"):
        try:
            address = nrt.rtsys.library.get_pointer_to_function(symbol)
        except Exception:  # noqa: BLE001 - not compiled in this process
            continue
        if address:
            found.add((int(address), symbol))
    return sorted(found)


def write_map(path: str) -> int:
    """Write the map; returns the number of functions named."""
    entries = _entries()
    with open(path, "w") as out:
        for k, (address, name) in enumerate(entries):
            size = entries[k + 1][0] - address if k + 1 < len(entries) else 4096
            out.write(f"{address:x} {min(size, 1 << 20):x} {name}\n")
    return len(entries)


def main() -> None:
    if len(sys.argv) < 2:
        print("usage: perf_numba_map.py SCRIPT [ARGS...]", file=sys.stderr)
        sys.exit(2)
    if not os.path.isfile(sys.argv[1]):
        print(f"perf_numba_map.py: {sys.argv[1]}: no such script", file=sys.stderr)
        sys.exit(2)
    path = f"/tmp/perf-{os.getpid()}.map"
    atexit.register(lambda: print(f"perf_numba_map: {write_map(path)} functions in {path}", file=sys.stderr))
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
