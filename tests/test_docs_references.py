"""Every reference to ``docs/…`` in the tree points at something that exists (issue 13 item 3).

Code comments, docstrings, READMEs and the documents themselves cite the design documents as
``docs/<file>.md``, optionally with a section, ``docs/search.md §11.2`` (a ``## 11.`` /
``### 11.2`` heading of that file; ranges such as ``§2–§4`` check both ends). Markdown links
inside ``.md`` files (``[x](attention-body.md) §4.6``) are resolved relative to the file. A
reference to a missing file or section fails the test, listing every one.

The first spec lived outside the repository under other names (``attention-body.md``,
``tools-and-uci.md``, ``chess-encoding.md``, ``weights-format.md``, ``search-vs-lc0.md``, in
``shared/docs``); those names may appear only as ``docs/<name>`` paths that exist.

Measurements live in ``bench/results/<date>_<device>_<commit>/`` (bench/README.md): every
``bench/results/…`` path cited anywhere exists, every such folder has a complete ``MANIFEST.md``,
and every folder is cited by the README or a document under ``docs/`` (only cited runs are kept).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCANNED_DIRS = ("lc0py", "tests", "scripts", "bench", "docs", "weights", ".ci")
TEXT_SUFFIXES = {
    ".py", ".md", ".h", ".hip", ".cu", ".cc", ".toml", ".txt", ".sh", ".cfg", ".yml", ".yaml", ".rst"
}
# Files whose references are examples, not references: this check's own tests (fabricated trees).
NOT_SCANNED = {"tests/test_docs_references.py"}
OLD_SPEC_NAMES = (
    "attention-body.md", "tools-and-uci.md", "chess-encoding.md", "weights-format.md", "search-vs-lc0.md"
)

OLD_NAME_HINT = "the outside spec's name; cite docs/<file>.md"

_SECTION = r"(?P<sec>`{0,2}\s*§\s*\d+(?:\.\d+)*(?:\s*(?:[–/,-]|and)\s*§?\s*\d+(?:\.\d+)*)*)?"
_PATH_CHARS = r"[\w.-]+(?:/[\w.-]+)*/?"
# ``docs/…`` not preceded by a path or word character (so ``shared/docs/x`` is not a docs ref).
DOCS_REF = re.compile(r"(?<![\w./-])(?P<path>docs/" + _PATH_CHARS + r"(?:\{[\w.,-]+\}[\w./-]*)?)" + _SECTION)
# Markdown links ``[text](target)`` with a relative target (no scheme, not a pure anchor).
MD_LINK = re.compile(r"\]\((?P<path>(?![a-z][\w+.-]*:|#)[^)\s#]+)(?:#[^)\s]*)?\)" + _SECTION)
# ``bench/results/…`` not preceded by a path or word character.
BENCH_REF = re.compile(r"(?<![\w./-])(?P<path>bench/results/" + _PATH_CHARS + ")")
MANIFEST_FIELDS = ("command", "card", "commit", "date", "what it measured", "cited by")
HEADING_NUMBER = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)*")


@dataclass(frozen=True)
class Problem:
    where: str  # file:line
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def scanned_files(root: Path) -> list[Path]:
    """Text sources and documents under the scanned folders, plus top-level files."""
    files = [p for p in root.iterdir() if p.is_file() and (p.suffix in TEXT_SUFFIXES)]
    for name in SCANNED_DIRS:
        base = root / name
        if not base.is_dir():
            continue
        for p in base.rglob("*"):
            if not p.is_file() or "__pycache__" in p.parts:
                continue
            if _raw_output(p.relative_to(root)):
                continue
            extensionless_script = p.suffix == "" and "scripts" in p.relative_to(root).parts
            if p.suffix in TEXT_SUFFIXES or extensionless_script:
                files.append(p)
    return sorted(files)


def _raw_output(rel: Path) -> bool:
    """A run's raw output under bench/results/ (its manifest is read, its logs are not)."""
    return rel.parts[:2] == ("bench", "results") and rel.name != "MANIFEST.md"


def scanned_texts(root: Path) -> Iterator[tuple[Path, str, str]]:
    """(file, its path relative to ``root``, its text) for every scanned UTF-8 file."""
    for f in scanned_files(root):
        rel = f.relative_to(root).as_posix()
        if rel in NOT_SCANNED:
            continue
        try:
            yield f, rel, f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def _expand_braces(path: str) -> list[str]:
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [path[: m.start()] + alt + path[m.end() :] for alt in m.group(1).split(",")]


def _section_numbers(doc: Path, cache: dict[Path, set[str]]) -> set[str]:
    if doc not in cache:
        cache[doc] = set(HEADING_NUMBER.findall(doc.read_text(encoding="utf-8")))
    return cache[doc]


def _check_target(
    target: Path, shown: str, sections: str | None, where: str, cache: dict[Path, set[str]]
) -> list[Problem]:
    if not target.exists():
        return [Problem(where, f"{shown} does not exist")]
    if not sections or target.suffix != ".md" or not target.is_file():
        return []
    have = _section_numbers(target, cache)
    return [
        Problem(where, f"{shown} has no section §{n}")
        for n in SECTION_NUMBER.findall(sections)
        if n not in have
    ]


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def dangling_references(root: Path) -> list[Problem]:
    """Every ``docs/…`` reference (and relative Markdown link) whose file or section is missing."""
    problems: list[Problem] = []
    cache: dict[Path, set[str]] = {}
    for f, rel, text in scanned_texts(root):
        for m in DOCS_REF.finditer(text):
            where = f"{rel}:{_line_of(text, m.start())}"
            for path in _expand_braces(m.group("path").rstrip(".")):
                problems += _check_target(root / path, path, m.group("sec"), where, cache)
        for m in BENCH_REF.finditer(text):
            path = m.group("path").rstrip(".")
            if not (root / path).exists():
                problems.append(Problem(f"{rel}:{_line_of(text, m.start())}", f"{path} does not exist"))
        if f.suffix != ".md":
            continue
        for m in MD_LINK.finditer(text):
            where = f"{rel}:{_line_of(text, m.start())}"
            path = m.group("path")
            target = (f.parent / path).resolve()
            problems += _check_target(target, path, m.group("sec"), where, cache)
    return problems


def outside_spec_names(root: Path) -> list[Problem]:
    """Mentions of the old spec's names that are not ``docs/<name>`` paths to existing files."""
    problems: list[Problem] = []
    names = "|".join(re.escape(n) for n in OLD_SPEC_NAMES)
    mention = re.compile(r"(?P<prefix>[\w./-]*?)(?P<name>" + names + r")|shared/docs(?!/(?:" + names + r"))")
    for f, rel, text in scanned_texts(root):
        in_docs = f.parent == root / "docs"
        for m in mention.finditer(text):
            where = f"{rel}:{_line_of(text, m.start())}"
            if m.group("name") is None:
                problems.append(Problem(where, "refers to shared/docs (outside the repository)"))
                continue
            prefix, name = m.group("prefix"), m.group("name")
            ok_path = prefix == "docs/" or (in_docs and prefix == "")
            if not (ok_path and (root / "docs" / name).is_file()):
                problems.append(Problem(where, f"{prefix}{name}: {OLD_NAME_HINT}"))
    return problems


def results_problems(root: Path) -> list[Problem]:
    """Results folders without a complete manifest, or that neither the README nor docs/ cites."""
    results = root / "bench" / "results"
    if not results.is_dir():
        return []
    citing = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    cited = "\n".join(p.read_text(encoding="utf-8") for p in citing if p.is_file())
    problems: list[Problem] = []
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        rel = folder.relative_to(root).as_posix()
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}_[a-z0-9-]+_[0-9a-f]{7,40}", folder.name):
            problems.append(Problem(rel, "not named <YYYY-MM-DD>_<device>_<commit>"))
        manifest = folder / "MANIFEST.md"
        text = manifest.read_text(encoding="utf-8") if manifest.is_file() else ""
        for name in MANIFEST_FIELDS:
            line = re.search(r"^- \*\*" + re.escape(name) + r"\*\*: *(.*)$", text, re.MULTILINE)
            if line is None or not line.group(1).strip() or line.group(1).startswith("TODO"):
                problems.append(Problem(f"{rel}/MANIFEST.md", f"no '{name}'"))
        if folder.name not in cited:
            problems.append(Problem(rel, "cited by no document (README.md, docs/): delete it, git keeps it"))
    return problems


def _report(problems: list[Problem]) -> str:
    return f"{len(problems)} problem(s):\n" + "\n".join(str(p) for p in problems)


def test_no_dangling_docs_references() -> None:
    problems = dangling_references(ROOT)
    assert not problems, _report(problems)


def test_no_references_to_the_outside_spec() -> None:
    problems = outside_spec_names(ROOT)
    assert not problems, _report(problems)


def test_every_results_folder_is_complete_and_cited() -> None:
    problems = results_problems(ROOT)
    assert not problems, _report(problems)


def test_docs_index_lists_every_document() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    docs = sorted((ROOT / "docs").glob("*.md"))
    missing = [p.name for p in docs if p.name != "README.md" and f"({p.name})" not in index]
    assert not missing, f"docs/README.md does not link: {', '.join(missing)}"


def _found(check: Callable[[Path], list[Problem]], tmp_path: Path, files: dict[str, str]) -> list[str]:
    """What ``check`` reports on a fabricated tree of ``files`` (sorted, as text)."""
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return sorted(str(problem) for problem in check(tmp_path))


def test_scanner_finds_missing_files_and_sections(tmp_path: Path) -> None:
    """The checks above can fail: a fabricated tree with one good and several bad references."""
    doc = "# T\n\n## 1. One\n\n### 1.2 Sub\n\n## 3. Three\n"
    found = _found(
        dangling_references,
        tmp_path,
        {
            "docs/a.md": doc + "See [b](b.md) and [a](a.md) §3 and [a](a.md) §9.\n",
            "lc0py/m.py": '"""docs/a.md §1.2, docs/a.md §2–§3, docs/gone.md, docs/a.md."""\n',
            "lc0py/kernels/k.h": "// docs/a.md §1\n",
            "scripts/s.py": "# bench/results/2026-01-01_cpu_abcdef0/ and bench/results/gone/\n",
            "bench/results/2026-01-01_cpu_abcdef0/log.md": "docs/not-checked.md\n",
        },
    )
    assert found == [
        "docs/a.md:8: a.md has no section §9",
        "docs/a.md:8: b.md does not exist",
        "lc0py/m.py:1: docs/a.md has no section §2",
        "lc0py/m.py:1: docs/gone.md does not exist",
        "scripts/s.py:1: bench/results/gone/ does not exist",
    ]


def test_results_check_finds_incomplete_and_uncited_folders(tmp_path: Path) -> None:
    fields = "".join(f"- **{name}**: x\n" for name in MANIFEST_FIELDS)
    found = _found(
        results_problems,
        tmp_path,
        {
            "README.md": "bench/results/2026-01-01_cpu_abcdef0/ bench/results/2026-01-02_h100_abcdef0/\n",
            "bench/results/2026-01-01_cpu_abcdef0/MANIFEST.md": fields,
            "bench/results/2026-01-02_h100_abcdef0/MANIFEST.md": fields.replace("card**: x", "card**: TODO"),
            "bench/results/2026-01-03_h100_abcdef0/MANIFEST.md": fields,
            "bench/results/old_run/MANIFEST.md": fields,
        },
    )
    uncited = "cited by no document (README.md, docs/): delete it, git keeps it"
    assert found == [
        "bench/results/2026-01-02_h100_abcdef0/MANIFEST.md: no 'card'",
        f"bench/results/2026-01-03_h100_abcdef0: {uncited}",
        f"bench/results/old_run: {uncited}",
        "bench/results/old_run: not named <YYYY-MM-DD>_<device>_<commit>",
    ]


def test_scanner_flags_outside_spec_names(tmp_path: Path) -> None:
    found = _found(
        outside_spec_names,
        tmp_path,
        {
            "docs/weights-format.md": "## 1. x\n[w](weights-format.md)\n",
            "lc0py/a.py": (
                "# weights-format.md §4\n# docs/weights-format.md §1\n"
                "# shared/docs/search-vs-lc0.md\n# ../shared/docs\n"
            ),
            "tests/t.py": "# docs/tools-and-uci.md §7\n",
        },
    )
    assert found == [
        "lc0py/a.py:1: weights-format.md: the outside spec's name; cite docs/<file>.md",
        "lc0py/a.py:3: shared/docs/search-vs-lc0.md: the outside spec's name; cite docs/<file>.md",
        "lc0py/a.py:4: refers to shared/docs (outside the repository)",
        "tests/t.py:1: docs/tools-and-uci.md: the outside spec's name; cite docs/<file>.md",
    ]
