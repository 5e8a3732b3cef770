"""lc0's UCI options against lc0py's, read from both engines' live ``uci`` output.

Each engine is asked twice (plain and with ``--show-hidden``), so an option is known with its
``option`` line and whether ``uci`` lists it by default. For every lc0 option the table says
whether lc0py has it and, if so, whether type, default, min/max and combo values are the same.
A shared option that differs must be listed in ``DELIBERATE`` with the reason; the test
``tests/uci/test_vs_lc0_uci.py`` fails otherwise. ``scripts/dev/uci_options_table.py`` writes
``docs/uci-options.md`` from this.

What a GUI sees is compared, nothing else: lc0 prints floating-point options as ``type string``
with a ``%f`` default and no range, so their ranges are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from devtools.lc0_binary import UciSession, lc0py_command, lc0py_env, option_lines

_KEYWORDS = ("default", "min", "max", "var")

# Shared options whose option line differs on purpose: name -> why.
DELIBERATE: dict[str, str] = {
    "Backend": "lc0py's own backends (auto, numpy, onnx-*, cuda*, rocm*, gpu, random); default "
    "auto picks the best one available, where lc0's default is the first backend built in",
}

# Options whose declared default is the same as lc0's but stands for a value chosen by the
# backend; what that value is, in each engine (written into the table's last column).
EFFECTIVE: dict[str, str] = {
    "Threads": "0 = the backend's choice, in both engines: CPU backends 1 search thread (lc0 blas/eigen; "
    "lc0py numpy, onnx-cpu), GPU backends 2 (lc0 cuda; lc0py GPU and random: 2 minibatches in flight); "
    "lc0py over `roundrobin` / `multiplexing` children + 1 minibatches in flight, over `demux` 2",
    "MinibatchSize": "0 = the backend's recommended size: lc0 eigen/blas 7, cuda 2 x SMs; lc0py numpy 7, "
    "onnx-cpu 32, GPU and random 256",
}


@dataclass(frozen=True)
class UciOption:
    """One ``option name … type …`` line, split into its parts (values as printed)."""

    name: str
    type: str
    default: str | None = None
    min: str | None = None
    max: str | None = None
    vars: tuple[str, ...] = ()
    hidden: bool = False

    def line_parts(self) -> tuple[str, str | None, str | None, str | None, tuple[str, ...]]:
        return (self.type, self.default, self.min, self.max, self.vars)


def parse_option_line(line: str, hidden: bool = False) -> UciOption:
    """``option name N type T [default D] [min a] [max b] [var v]*`` (names may hold spaces; an
    empty default is ``""``)."""
    if not line.startswith("option name "):
        raise ValueError(f"not an option line: {line!r}")
    rest = line[len("option name "):]
    name, sep, tail = rest.partition(" type ")
    if not sep:
        raise ValueError(f"option line without type: {line!r}")
    tokens = tail.split(" ")
    kind = tokens[0]
    values: dict[str, list[str]] = {}
    current: str | None = None
    parts: list[str] = []
    collected: list[tuple[str, str]] = []
    for tok in tokens[1:]:
        if tok in _KEYWORDS:
            if current is not None:
                collected.append((current, " ".join(parts)))
            current, parts = tok, []
        else:
            parts.append(tok)
    if current is not None:
        collected.append((current, " ".join(parts)))
    for key, value in collected:
        values.setdefault(key, []).append(value)
    first = {k: v[0] for k, v in values.items()}
    return UciOption(name, kind, first.get("default"), first.get("min"), first.get("max"),
                     tuple(values.get("var", ())), hidden)


def read_options(command: list[str], env: dict[str, str] | None = None) -> tuple[str, dict[str, UciOption]]:
    """The ``id name`` and all options of the engine started by ``command`` (which must accept
    ``--show-hidden``), each marked hidden when the plain ``uci`` does not list it."""
    with UciSession(command, env=env) as plain:
        visible = {parse_option_line(s).name for s in option_lines(plain)}
    with UciSession([*command, "--show-hidden"], env=env) as every:
        lines = every.run(["uci"], lambda s: s == "uciok")
    ident = next((s[len("id name "):] for s in lines if s.startswith("id name ")), "?")
    out = {}
    for text in lines:
        if text.startswith("option name "):
            opt = parse_option_line(text)
            out[opt.name] = parse_option_line(text, hidden=opt.name not in visible)
    return ident, out


def read_lc0py_options() -> tuple[str, dict[str, UciOption]]:
    # No --weights/--backend: `uci` must not need either (and WeightsFile then shows its default).
    return read_options(lc0py_command(None, None), lc0py_env())


def read_lc0_options(binary: Path | str) -> tuple[str, dict[str, UciOption]]:
    return read_options([str(binary)])


@dataclass
class Comparison:
    name: str
    lc0: UciOption | None
    lc0py: UciOption | None
    differences: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.lc0py is None:
            return "missing"
        if self.lc0 is None:
            return "lc0py only"
        return "differs" if self.differences else "same"


def compare(lc0: dict[str, UciOption], ours: dict[str, UciOption]) -> list[Comparison]:
    """lc0's options in lc0's order, then lc0py's own. Names compare case-insensitively (UCI)."""
    by_lower = {k.lower(): v for k, v in ours.items()}
    rows = []
    for name, theirs in lc0.items():
        mine = by_lower.get(name.lower())
        row = Comparison(name, theirs, mine)
        if mine is not None:
            row.differences = _differences(theirs, mine)
        rows.append(row)
    lc0_lower = {k.lower() for k in lc0}
    rows += [Comparison(n, None, o) for n, o in ours.items() if n.lower() not in lc0_lower]
    return rows


def _differences(a: UciOption, b: UciOption) -> list[str]:
    out = []
    if a.name != b.name:
        out.append(f"name {b.name}")
    for label, x, y in (("type", a.type, b.type), ("default", a.default, b.default),
                        ("min", a.min, b.min), ("max", a.max, b.max)):
        if x != y:
            out.append(f"{label} {_show(x)} vs {_show(y)}")
    if a.vars != b.vars:
        if set(a.vars) == set(b.vars):
            out.append("vars in another order")
        else:
            only_a = [v for v in a.vars if v not in b.vars]
            only_b = [v for v in b.vars if v not in a.vars]
            out.append("vars" + (f" lc0 only: {' '.join(only_a)}" if only_a else "")
                       + (f"; lc0py only: {' '.join(only_b)}" if only_b else ""))
    if a.hidden != b.hidden:
        out.append("hidden in " + ("lc0" if a.hidden else "lc0py"))
    return out


def _show(value: str | None) -> str:
    if value is None:
        return "(none)"
    return f"`{value}`" if value else "(empty)"


def undocumented_differences(rows: list[Comparison]) -> list[str]:
    """Shared options that differ but are not in ``DELIBERATE`` (what the test forbids)."""
    return [f"{r.name}: {'; '.join(r.differences)}" for r in rows
            if r.status == "differs" and r.name not in DELIBERATE]


def render_markdown(rows: list[Comparison], lc0_version: str, command: str) -> str:
    """docs/uci-options.md."""
    counts = {s: sum(r.status == s for r in rows) for s in ("same", "differs", "missing", "lc0py only")}
    out = [
        "# UCI options: lc0 0.32.1 and lc0py",
        "",
        f"Generated by `{command}` from both engines' live `uci` output (plain and `--show-hidden`);",
        f"lc0: `{lc0_version}`. Do not edit by hand. lc0 prints floating-point options as",
        "`type string` with a `%f` default and no range; lc0py does the same.",
        "",
        f"{len([r for r in rows if r.lc0 is not None])} lc0 options: {counts['same']} the same in "
        f"lc0py, {counts['differs']} different (each one deliberate, reason below), "
        f"{counts['missing']} missing in lc0py; {counts['lc0py only']} lc0py-only options.",
        "`tests/uci/test_vs_lc0_uci.py` fails when a shared option differs without a reason in",
        "`DELIBERATE` (`devtools/uci_options_table.py`).",
        "",
        "| option | lc0 type | lc0 default | lc0 min / max, vars | hidden in lc0 | lc0py | difference |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ref = r.lc0 if r.lc0 is not None else r.lc0py
        assert ref is not None
        rng = f"{ref.min} / {ref.max}" if ref.min is not None else ""
        if ref.vars:
            rng = (rng + "; " if rng else "") + " ".join(ref.vars)
        lc0_cells = (
            f"{ref.type} | {_show(ref.default) if ref.type != 'button' else ''} | {rng} | "
            f"{'yes' if ref.hidden else ''}"
            if r.lc0 is not None else "— | — | — | —"
        )
        status = r.status
        diff = "; ".join(r.differences)
        if r.status == "lc0py only":
            diff = f"{ref.type}, default {_show(ref.default)}" + (" (hidden)" if ref.hidden else "")
        if r.name in DELIBERATE and DELIBERATE[r.name]:
            diff += f" — deliberate: {DELIBERATE[r.name]}"
        if r.name in EFFECTIVE:
            diff += ("; " if diff else "") + f"effective: {EFFECTIVE[r.name]}"
        out.append(f"| {r.name} | {lc0_cells} | {status} | {diff} |")
    out.append("")
    return "\n".join(out)
