#!/usr/bin/env python3
"""Rewrite references to the first, outside-the-repository spec into ``docs/`` references.

The spec lc0py was first written against lived outside the repository (``shared/docs/``) as
``attention-body.md``, ``weights-format.md``, ``chess-encoding.md``, ``tools-and-uci.md`` and
``search-vs-lc0.md``. Its content now lives, rewritten, in ``docs/`` (issue 13 item 3). This script
turns every old reference in the tree into the new one — mechanically, touching nothing but the
reference strings — so it can be re-run after merging branches that still use the old names.
It is idempotent: a second run changes nothing. ``tests/test_docs_references.py`` checks the result.

Mapping (section numbers ``§N`` are kept unless said otherwise):

======================================  =====================================================
old                                     new
======================================  =====================================================
``attention-body.md §N``                ``docs/attention-body.md §N`` (same numbering)
``weights-format.md §N``                ``docs/weights-format.md §N`` (same numbering)
``chess-encoding.md §N``                ``docs/input-encoding.md §N`` (same numbering)
``tools-and-uci.md §N``, N = 1…6        ``docs/uci-and-tools.md §N`` (same numbering)
``tools-and-uci.md §7.N``               ``docs/search.md §N``
``tools-and-uci.md §7`` / ``§8``        ``docs/search.md``
``tools-and-uci.md`` (no section)       ``docs/search.md`` in search code, else ``docs/uci-and-tools.md``
``search-vs-lc0.md``                    ``docs/search.md §13``
bare ``§7.N`` in search code            ``§N`` (meant tools-and-uci.md §7.N; the file cites docs/search.md)
======================================  =====================================================

Any prefix (``shared/docs/``, ``../shared/docs/``, ``docs/``) is replaced by ``docs/``. "Search
code" is ``lc0py/search/`` and ``tests/search/``.

Usage: ``python scripts/fix_doc_refs.py [--check] [ROOT]`` (``--check``: list the files that would
change and exit 1 if any, without writing).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SCANNED_DIRS = ("lc0py", "tests", "scripts", "kernels", "docs", "weights", ".ci")
TEXT_SUFFIXES = {".py", ".md", ".h", ".hip", ".cu", ".cc", ".toml", ".txt", ".sh", ".cfg", ".yml", ".yaml"}
SKIP = {"scripts/fix_doc_refs.py", "tests/test_docs_references.py", "tests/test_fix_doc_refs.py"}
SEARCH_CODE = ("lc0py/search/", "tests/search/")

OLD = r"attention-body\.md|weights-format\.md|chess-encoding(?:\.md)?|tools-and-uci\.md|search-vs-lc0\.md"
NUM = r"\d+(?:\.\d+)*"
SECTION = r"(?P<sec>\s*§\s*" + NUM + r"(?:\s*(?:[–/,-]|and)\s*§?\s*" + NUM + r")*)?"
# An old name, with any folder prefix, optional closing backticks, then optional sections.
# ``chess-encoding`` without ``.md`` counts only when a section follows (``chess-encoding §7``).
NAMED = re.compile(
    r"(?<![\w/.-])(?P<prefix>/?(?:\.\./)*(?:[\w.-]+/)*?(?:shared/)?(?:docs/)?)"
    r"(?P<name>" + OLD + r")(?P<ticks>`{0,2})" + SECTION
)
# A bare ``§7.N`` in search code (its file once cited tools-and-uci.md §7 as "the spec"); it
# becomes ``§N`` (not ``docs/search.md §N``, which would push lines past the length limit).
BARE_SEVEN = re.compile(r"(?<![\w.])§\s*7\.(?P<n>\d+)")
# Two bare sections in lc0py/search/search.py that meant tools-and-uci.md §5 (pv) and §3 (ponder
# move); docs/search.md §9 now holds both rules.
SEARCH_CODE_UCI_REFS = (
    ("the highest-prior move (§5 pv)", "the highest-prior move (§9, PV)"),
    ("``bestmove`` and ``ponder`` (§3)", "``bestmove`` and ``ponder`` (§9)"),
)
DOC_BEFORE = re.compile(r"\.md`{0,2}\s*(?:§\s*" + NUM + r"\s*(?:[–/,-]|and)\s*)*$")


def _map_sections(sec: str, fn) -> str:  # noqa: ANN001 - small local helper
    return re.sub(NUM, lambda m: fn(m.group(0)), sec)


def _tools_and_uci(sec: str | None, rel: str) -> tuple[str, str]:
    if not sec:
        return ("docs/search.md" if rel.startswith(SEARCH_CODE) else "docs/uci-and-tools.md"), ""
    numbers = re.findall(NUM, sec)
    top = {n.split(".")[0] for n in numbers}
    if top <= {"7", "8"}:
        if all("." in n for n in numbers) and top == {"7"}:
            return "docs/search.md", _map_sections(sec, lambda n: n.split(".", 1)[1])
        return "docs/search.md", ""
    return "docs/uci-and-tools.md", sec


def _replace_named(m: re.Match[str], rel: str) -> str:
    name, ticks, sec = m.group("name"), m.group("ticks"), m.group("sec")
    if name == "chess-encoding" and not sec:
        return m.group(0)  # the words "chess-encoding" in prose, not a reference
    if name.startswith("tools-and-uci"):
        path, sec_out = _tools_and_uci(sec, rel)
    elif name.startswith("chess-encoding"):
        path, sec_out = "docs/input-encoding.md", sec or ""
    elif name.startswith("search-vs-lc0"):
        path, sec_out = "docs/search.md", " §13"
    else:
        path, sec_out = "docs/" + name, sec or ""
    return path + ticks + sec_out


def rewrite(text: str, rel: str) -> str:
    """``text`` with every old reference replaced (``rel``: the file's path from the root)."""
    in_docs = rel.startswith("docs/") and rel.count("/") == 1
    if in_docs:
        return text  # docs/ documents link each other relatively and never used the old spec
    out = NAMED.sub(lambda m: _replace_named(m, rel), text)
    if rel.startswith(SEARCH_CODE):

        def bare(m: re.Match[str]) -> str:
            if DOC_BEFORE.search(out[max(0, m.start() - 80) : m.start()]):
                return m.group(0)  # part of a named reference's section list
            return "§" + m.group("n")

        out = BARE_SEVEN.sub(bare, out)
        for old, new in SEARCH_CODE_UCI_REFS:
            out = out.replace(old, new)
    return out


def candidate_files(root: Path) -> list[Path]:
    files = [p for p in root.iterdir() if p.is_file() and p.suffix in TEXT_SUFFIXES]
    for name in SCANNED_DIRS:
        base = root / name
        if base.is_dir():
            files += [
                p
                for p in base.rglob("*")
                if p.is_file()
                and "__pycache__" not in p.parts
                and (p.suffix in TEXT_SUFFIXES or (p.suffix == "" and p.parent.name == "scripts"))
            ]
    return sorted(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--check", action="store_true", help="only list files that would change")
    args = parser.parse_args(argv)
    root = Path(args.root)
    changed = []
    for f in candidate_files(root):
        rel = f.relative_to(root).as_posix()
        if rel in SKIP:
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite(text, rel)
        if new != text:
            changed.append(rel)
            if not args.check:
                f.write_text(new, encoding="utf-8")
    for rel in changed:
        print(rel)
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
