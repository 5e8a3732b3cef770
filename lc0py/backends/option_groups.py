"""lc0's nested backend-option syntax: ``key=value`` lists with ``name(...)`` and ``(...)`` groups.

lc0 (``src/utils/optionsdict.cc``, 0.32.1) reads ``--backend-opts`` as a comma-separated list of

* ``key=value``: the value is a number (``-?[0-9.]…``), a quoted string (``'…'`` or ``"…"``, no
  escapes) or a bare word (letters, digits and ``_-./``; ``true``/``false`` are booleans);
* ``name(list)``: a named group (a sub-dictionary); ``name`` alone is an empty group;
* ``(list)``: an anonymous group, named ``[0]``, ``[1]``, … (the first free index).

Whitespace between tokens is ignored. A group is a child of the list it appears in: a key the
group does not set is looked up in its parents (lc0's ``GetOrDefault`` walks up), which is how
``backend=cuda-fp16,(gpu=0),(gpu=1)`` gives both groups the backend. Two groups of one name are an
error (lc0: "Subdictionary already exists"); a repeated key keeps its last value.

Differences from lc0, on purpose: values are kept as text (``BackendOptions.take`` converts and
validates them, as for flat options); keys are lower-cased as the flat parser does; groups keep
the order they were written in (lc0 iterates them in name order, so its ``[10]`` comes before
``[2]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lc0py.errors import BackendOptionError

_SINGLE = {",": "comma", "(": "(", ")": ")", "=": "="}
_NUMBER_START = "0123456789-."
_NUMBER_CHARS = set("+-1234567890.eExX")
_WORD_PUNCTUATION = set("_-./")


@dataclass
class OptionGroup:
    """One level of the option tree: its own ``values``, its ``groups`` in written order, and
    ``text``, the source of the group (for error messages)."""

    name: str = ""
    values: dict[str, str] = field(default_factory=dict)
    groups: list[OptionGroup] = field(default_factory=list)
    text: str = ""
    parent: OptionGroup | None = field(default=None, repr=False, compare=False)

    @property
    def anonymous(self) -> bool:
        return self.name.startswith("[")

    def lookup(self, key: str) -> str | None:
        """``key``'s value here or in the nearest parent that sets it (lc0's ``GetOrDefault``)."""
        node: OptionGroup | None = self
        while node is not None:
            if key in node.values:
                return node.values[key]
            node = node.parent
        return None

    def inherited(self) -> dict[str, str]:
        """Every key visible from this group: parents' values overridden by nearer ones."""
        chain = []
        node: OptionGroup | None = self
        while node is not None:
            chain.append(node)
            node = node.parent
        merged: dict[str, str] = {}
        for node in reversed(chain):
            merged.update(node.values)
        return merged

    def label(self) -> str:
        """How a message names this group: ``group [1] '(backend=cuda,gpu=1)'``."""
        return f"group {self.name} '{self.text}'"


@dataclass
class _Token:
    kind: str  # "comma", "(", ")", "=", "number", "string", "word", "eof"
    text: str
    offset: int


def _error(source: str, offset: int, message: str) -> BackendOptionError:
    return BackendOptionError(f"--backend-opts: cannot parse '{source}' at offset {offset}: {message}")


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(source)
    while True:
        while i < n and source[i].isspace():
            i += 1
        if i == n:
            out.append(_Token("eof", "", i))
            return out
        c = source[i]
        if c in _SINGLE:
            out.append(_Token(_SINGLE[c], c, i))
            i += 1
        elif c in _NUMBER_START:
            j = i
            while j < n and source[j] in _NUMBER_CHARS:
                j += 1
            text = source[i:j]
            try:
                float(text) if any(ch in text for ch in ".eE") else int(
                    text, 0 if "x" in text.lower() else 10
                )
            except ValueError:
                raise _error(source, i, f"'{text}' is not a number") from None
            out.append(_Token("number", text, i))
            i = j
        elif c in "'\"":
            j = source.find(c, i + 1)
            if j < 0:
                raise _error(source, i, "string is not closed")
            out.append(_Token("string", source[i + 1 : j], i))
            i = j + 1
        elif c.isalnum() or c == "/":
            j = i
            while j < n and (source[j].isalnum() or source[j] in _WORD_PUNCTUATION):
                j += 1
            out.append(_Token("word", source[i:j], i))
            i = j
        else:
            raise _error(source, i, f"unexpected '{c}'")


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokens(source)
        self.pos = 0

    @property
    def tok(self) -> _Token:
        return self.tokens[self.pos]

    def parse(self) -> OptionGroup:
        root = OptionGroup(text=self.source)
        self._list(root)
        if self.tok.kind != "eof":
            raise _error(self.source, self.tok.offset, f"unexpected '{self.tok.text}'")
        return root

    def _list(self, group: OptionGroup) -> None:
        while True:
            start = self.tok.offset
            if self.tok.kind == "(":
                taken = {g.name for g in group.groups}
                name = next(f"[{k}]" for k in range(len(taken) + 1) if f"[{k}]" not in taken)
            elif self.tok.kind in ("word", "string"):
                name = self.tok.text
                self.pos += 1
            else:
                return
            if self.tok.kind == "=":
                self.pos += 1
                if self.tok.kind not in ("number", "string", "word"):
                    raise _error(self.source, self.tok.offset, f"expected a value for '{name}'")
                key = name.strip().lower()
                if not key:
                    raise _error(self.source, start, "empty key")
                group.values[key] = self.tok.text
                self.pos += 1
            else:
                self._group(group, name, start)
            if self.tok.kind != "comma":
                return
            self.pos += 1

    def _group(self, parent: OptionGroup, name: str, start: int) -> None:
        if any(g.name == name for g in parent.groups):
            raise _error(self.source, start, f"group '{name}' appears twice")
        child = OptionGroup(name=name, parent=parent)
        if self.tok.kind == "(":
            self.pos += 1
            self._list(child)
            if self.tok.kind != ")":
                raise _error(self.source, self.tok.offset, f"group {name} is not closed with ')'")
            child.text = self.source[start : self.tok.offset + 1].strip()
            self.pos += 1
        else:
            child.text = name
        parent.groups.append(child)


def parse_option_groups(text: str) -> OptionGroup:
    """The option tree of ``text`` in lc0's syntax; one ``BackendOptionError`` line if malformed."""
    return _Parser(text).parse()


def has_group_syntax(text: str) -> bool:
    """Whether ``text`` needs lc0's full parser (groups or quotes) rather than the flat one."""
    return any(c in text for c in "()'\"")
