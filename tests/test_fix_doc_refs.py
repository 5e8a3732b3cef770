"""``scripts/fix_doc_refs.py``: old spec references become ``docs/`` references, idempotently."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fix_doc_refs.py"


def _load():  # noqa: ANN202 - the script's module
    spec = importlib.util.spec_from_file_location("fix_doc_refs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fix = _load()


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        ("lc0py/model/x.py", "(attention-body.md §4.4/§12)", "(docs/attention-body.md §4.4/§12)"),
        ("lc0py/weights/x.py", "``shared/docs/weights-format.md`` §6)", "``docs/weights-format.md`` §6)"),
        ("lc0py/chess/x.py", "(chess-encoding.md §2–§4)", "(docs/input-encoding.md §2–§4)"),
        ("lc0py/chess/README.md", "Spec: `docs/chess-encoding.md` (", "Spec: `docs/input-encoding.md` ("),
        ("lc0py/search/x.py", "(tools-and-uci.md §7.11)", "(docs/search.md §11)"),
        ("tests/search/x.py", "(tools-and-uci.md §7.2, §7.11, §7.12)", "(docs/search.md §2, §11, §12)"),
        ("lc0py/search/x.py", "backup (tools-and-uci.md §7).", "backup (docs/search.md)."),
        ("lc0py/search/README.md", "(spec: `shared/docs/tools-and-uci.md` §7)", "(spec: `docs/search.md`)"),
        ("lc0py/uci/README.md", "(`shared/docs/tools-and-uci.md` §3–§6)", "(`docs/uci-and-tools.md` §3–§6)"),
        ("lc0py/search/params.py", "(tools-and-uci.md §4)", "(docs/uci-and-tools.md §4)"),
        ("lc0py/search/x.py", "rule (§7.6, chess-encoding §7)", "rule (§6, docs/input-encoding.md §7)"),
        ("lc0py/search/x.py", "Selection follows §7.3 exactly", "Selection follows §3 exactly"),
        ("lc0py/uci/x.py", "Selection follows §7.3 exactly", "Selection follows §7.3 exactly"),
        ("lc0py/x.py", "see search-vs-lc0.md", "see docs/search.md §13"),
        ("lc0py/x.py", "attention-body nets, chess-encoding", "attention-body nets, chess-encoding"),
    ],
)
def test_rewrite(rel: str, old: str, new: str) -> None:
    assert fix.rewrite(old, rel) == new
    assert fix.rewrite(new, rel) == new  # idempotent


def test_docs_folder_is_left_alone() -> None:
    text = "See [w](weights-format.md) §3."
    assert fix.rewrite(text, "docs/input-encoding.md") == text


def test_main_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "lc0py").mkdir()
    f = tmp_path / "lc0py" / "a.py"
    f.write_text('"""See tools-and-uci.md §5."""\n', encoding="utf-8")
    assert fix.main(["--check", str(tmp_path)]) == 1
    assert f.read_text(encoding="utf-8") == '"""See tools-and-uci.md §5."""\n'
    assert fix.main([str(tmp_path)]) == 0
    assert f.read_text(encoding="utf-8") == '"""See docs/uci-and-tools.md §5."""\n'
    assert fix.main(["--check", str(tmp_path)]) == 0
    assert "lc0py/a.py" in capsys.readouterr().out
